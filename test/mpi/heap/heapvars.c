/* The shared heap's CVARs and MPI_T performance variables: bytes in use move with malloc
 * and free, and allocations made while the heap is off are counted. */
#include <stdlib.h>
#include "../include/smheap_test.h"

int main(int argc, char **argv)
{
    const char *pvars[] = { "smheap_heap_bytes_in_use", "smheap_heap_shared",
        "smheap_glibc_full", "smheap_glibc_off" };
    const char *cvars[] = { "MPIR_CVAR_CH3_SMHEAP_ENABLE", "MPIR_CVAR_CH3_SMHEAP_SIZE" };
    int rank, prov, errs = 0, idx, enabled;
    unsigned long long before, during, after;
    void *volatile p;

    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    for (int i = 0; i < 2; i++)
        if (MPI_T_cvar_get_index(cvars[i], &idx) != MPI_SUCCESS) {
            printf("CVAR %s not found\n", cvars[i]);
            errs++;
        }
    for (int i = 0; i < 4; i++)
        if (pvar_index(pvars[i]) < 0) {
            printf("pvar %s not found\n", pvars[i]);
            errs++;
        }
    enabled = heap_enabled();

    if (enabled) {
        before = pvar_value("smheap_heap_bytes_in_use");
        p = malloc(8 << 20);
        during = pvar_value("smheap_heap_bytes_in_use");
        free(p);
        after = pvar_value("smheap_heap_bytes_in_use");
        if (during < before + (8 << 20) || after > during - (8 << 20)) {
            printf("bytes in use %llu -> %llu -> %llu around an 8 MiB block\n", before,
                   during, after);
            errs++;
        }
    } else {
        before = pvar_value("smheap_glibc_off");
        p = malloc(1000);
        free(p);
        after = pvar_value("smheap_glibc_off");
        if (after <= before) {
            printf("smheap_glibc_off did not count a malloc with the heap off\n");
            errs++;
        }
    }

    smheap_test_report(errs);
    MPI_Finalize();
    MPI_T_finalize();
    return 0;
}

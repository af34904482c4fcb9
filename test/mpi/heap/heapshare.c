/* A buffer malloc'd in one rank is read, by raw pointer, in every other rank of its node:
 * each rank fills a block and publishes its address; every rank checks every other block
 * of its node (a job may span nodes: one heap per node).
 * With MPIR_CVAR_CH3_SMHEAP_ENABLE=0 there is no shared heap, and the test checks that the
 * channel says so instead. */
#include <stdint.h>
#include <stdlib.h>
#include "../include/smheap_test.h"

#define BYTES (8 << 20)

int main(int argc, char **argv)
{
    int rank, size, prov, errs = 0, enabled;
    unsigned long long shared;
    unsigned char *mine;
    uintptr_t *addrs;

    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Init(&argc, &argv);
    MPI_Comm node = comm_of_my_host(MPI_COMM_WORLD);
    MPI_Comm_rank(node, &rank);
    MPI_Comm_size(node, &size);
    enabled = heap_enabled();
    shared = pvar_value("smheap_heap_shared");

    if (enabled != 0 && shared != 1) {
        printf("rank %d: heap enabled (%d) but smheap_heap_shared = %llu\n", rank, enabled,
               shared);
        errs++;
    } else if (enabled == 0 && shared != 0) {
        printf("rank %d: heap disabled but smheap_heap_shared = %llu\n", rank, shared);
        errs++;
    } else if (shared == 1) {
        mine = malloc(BYTES);
        for (size_t i = 0; i < BYTES; i++)
            mine[i] = (unsigned char) (rank * 31 + i % 253);
        addrs = malloc(size * sizeof(*addrs));
        addrs[rank] = (uintptr_t) mine;
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, addrs, sizeof(*addrs), MPI_BYTE,
                      node);
        for (int r = 0; r < size; r++) {
            const unsigned char *theirs = (const unsigned char *) addrs[r];

            for (size_t i = 0; i < BYTES; i++)
                if (theirs[i] != (unsigned char) (r * 31 + i % 253)) {
                    printf("rank %d: byte %zu of rank %d's block differs\n", rank, i, r);
                    errs++;
                    break;
                }
        }
        MPI_Barrier(node);      /* nobody frees a block still being read */
        free(mine);
        free(addrs);
    }

    MPI_Comm_free(&node);
    smheap_test_report(errs);
    MPI_Finalize();
    MPI_T_finalize();
    return 0;
}

/* Allocates and touches 1 MiB blocks until it holds MIB of them, on a /dev/shm that runs
 * out first: every block must come back (from glibc once tmpfs is full), never SIGBUS. */
#include <stdlib.h>
#include <string.h>
#include "../mpi/include/smheap_test.h"

int main(int argc, char **argv)
{
    int prov, mib = argc > 1 ? atoi(argv[1]) : 64, errs = 0;
    char **blocks = calloc((size_t) mib, sizeof(char *));

    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Init(&argc, &argv);
    for (int i = 0; i < mib; i++) {
        blocks[i] = malloc(1 << 20);
        if (blocks[i] == NULL)
            errs++;
        else
            memset(blocks[i], i, 1 << 20);
    }
    printf("glibc_full %llu\n", pvar_value("smheap_glibc_full"));
    for (int i = 0; i < mib; i++)
        free(blocks[i]);
    free(blocks);
    printf(errs ? "Found %d errors\n" : " No Errors\n", errs);
    MPI_Finalize();
    MPI_T_finalize();
    return 0;
}

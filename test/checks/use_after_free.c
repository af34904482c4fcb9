/* Reads a block after freeing it and leaks another: memcheck must report both, as it does
 * with glibc's malloc.  Prints whether the blocks came from the shared heap, so the check
 * knows which allocator it tested. */
#include <stdlib.h>
#include "../mpi/include/smheap_test.h"

int main(int argc, char **argv)
{
    int prov;

    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Init(&argc, &argv);
    printf("shared heap: %s\n", pvar_value("smheap_heap_shared") == 1 ? "on" : "off");
    int *volatile p = malloc(64 * sizeof(int));
    p[3] = 7;
    free(p);
    printf("%d\n", p[3]);       /* invalid read */
    void *volatile leak = malloc(1000);
    leak = NULL;
    (void) leak;
    MPI_Finalize();
    MPI_T_finalize();
    return 0;
}

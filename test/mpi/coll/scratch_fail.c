/* A collective that fails on one rank fails on every rank, and the communicator works
 * afterwards.  The last rank fills its slice of the shared heap (the job runs with a small
 * MPIR_CVAR_CH3_SMHEAP_SIZE) and then broadcasts, and gathers, data that lies outside the
 * heap, which it must stage in the heap: it cannot, and every rank must get an error (with
 * MPI_ERRORS_RETURN) instead of waiting forever for it.  Once it frees its blocks, the same
 * calls work.  With the heap off there is nothing to stage, and the calls just work.  The
 * calls run on the node's communicator (the whole job on one node), whose collectives are
 * the shared-heap ones. */
#include <stdlib.h>
#include <string.h>
#include "../include/smheap_test.h"

#define BYTES (8 << 20)
#define BLOCK (1 << 20)         /* per rank in the Allgather: more than its staging holds */
#define MAX_BLOCKS 4096

static char outside[BYTES];     /* in .bss: never in the shared heap */
static MPI_Comm comm;

/* Allocate until the slice cannot serve a block of 2 MiB, then of 1 MiB, ... down to 64 KiB
 * (whatever the allocator's layout left between the bigger ones): no staging buffer of the
 * sizes below fits afterwards. */
static int fill_slice(void **blocks)
{
    int n = 0;

    for (size_t sz = 2 << 20; sz >= 64 << 10; sz /= 2) {
        unsigned long long full = pvar_value("smheap_glibc_full");

        while (n < MAX_BLOCKS && pvar_value("smheap_glibc_full") == full) {
            blocks[n] = malloc(sz);     /* big blocks: freed, they serve big ones again */
            if (blocks[n] == NULL)
                break;
            n++;
        }
    }
    return n;
}

/* One round of the two calls, from the victim; 1 if each call's outcome on this rank is
 * `fail` (an error) or not. */
static int round_ok(int victim, int rank, int size, int fail, const char *when)
{
    int errs = 0, err;
    char *gathered = malloc((size_t) size * BLOCK);

    memset(outside, rank == victim ? 7 : 0, BYTES);
    err = MPI_Bcast(outside, BYTES, MPI_CHAR, victim, comm);
    if ((err != MPI_SUCCESS) != fail) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(err, msg, &len);
        printf("rank %d, %s: Bcast returned %s\n", rank, when, err ? msg : "success");
        if (!fail)      /* what held the slice */
            printf("rank %d: slice pages in use %llu, committed %llu; served by glibc: %llu\n",
                   rank, pvar_value("smheap_heap_bytes_in_use"),
                   pvar_value("smheap_heap_bytes_committed"), pvar_value("smheap_glibc_full"));
        errs++;
    } else if (!fail && (outside[0] != 7 || outside[BYTES - 1] != 7)) {
        printf("rank %d, %s: Bcast delivered %d...%d\n", rank, when, outside[0],
               outside[BYTES - 1]);
        errs++;
    }
    err = MPI_Allgather(outside, BLOCK, MPI_CHAR, gathered, BLOCK, MPI_CHAR, comm);
    if ((err != MPI_SUCCESS) != fail) {
        printf("rank %d, %s: Allgather returned %d\n", rank, when, err);
        errs++;
    }
    free(gathered);
    return errs;
}

int main(int argc, char **argv)
{
    int rank, size, prov, errs = 0, n = 0, victim, shared;
    void **blocks = calloc(MAX_BLOCKS, sizeof(void *));

    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Init(&argc, &argv);
    comm = comm_of_my_host(MPI_COMM_WORLD);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    victim = size - 1;
    shared = pvar_value("smheap_heap_shared") == 1 &&
        pvar_value("smheap_coll_shared") != ~0ULL && size > 1;   /* MPICH answers 1 rank */

    MPI_Barrier(comm);  /* the communicator's control block exists */
    if (shared && rank == victim)
        n = fill_slice(blocks);
    MPI_Barrier(comm);
    errs += round_ok(victim, rank, size, shared, "heap full on the root");
    errs += round_ok(victim, rank, size, shared, "again");
    for (int i = 0; i < n; i++)
        free(blocks[i]);
    errs += round_ok(victim, rank, size, 0, "after freeing");
    MPI_Barrier(comm);
    MPI_Comm_free(&comm);

    free(blocks);
    smheap_test_report(errs);
    MPI_Finalize();
    MPI_T_finalize();
    return 0;
}

/* MPI_Win_flush and MPI_Win_flush_local complete gets whose data comes as packets from a
 * target on the origin's node: a window of MPI_Win_create whose memory lies outside the
 * shared heap on odd ranks (a mapping of their own), so that the origins of the node reach
 * those ranks through ch3's packets while the heap targets are reached in place.  Each
 * origin gets large blocks (many packets' worth of data) from every target under
 * MPI_Win_lock_all and checks them right after the flush, round after round, the targets
 * changing their data between rounds.  A flush that returned once the reply's header had
 * come, before its data, leaves stale bytes in the block.  Where all ranks share one
 * node's heap, rank 0's MPI_T counters must show gets sent as packets (to rank 1). */
#include <sys/mman.h>
#include "../include/smheap_test.h"

#define BLOCK_LONGS (512 * 1024)        /* 4 MiB */
#define ROUNDS 6

static long pattern(int target, int round, long i)
{
    return ((long) target << 40) + ((long) round << 32) + i;
}

static int check(const long *got, int target, int round, int rank, const char *how)
{
    for (long i = 0; i < BLOCK_LONGS; i++)
        if (got[i] != pattern(target, round, i)) {
            printf("rank %d: round %d, %s of rank %d: long %ld is %lx, want %lx\n", rank,
                   round, how, target, i, (unsigned long) got[i],
                   (unsigned long) pattern(target, round, i));
            return 1;
        }
    return 0;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, t, round, provided, counted;
    size_t bytes = BLOCK_LONGS * sizeof(long);
    long *mem, *got;
    unsigned long long queued0;
    MPI_Win win;

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    counted = !spans_nodes(MPI_COMM_WORLD) && rank == 0 && size > 1 &&
        pvar_value("smheap_heap_shared") == 1 && cvar_int("MPIR_CVAR_CH3_SMHEAP_RMA") == 1;
    queued0 = pvar_value("smheap_rma_ops_queued");
    if (rank % 2) {
        mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) {
            perror("mmap");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    } else {
        mem = malloc(bytes);
    }
    got = malloc(bytes);
    MPI_Win_create(mem, bytes, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);

    for (round = 0; round < ROUNDS; round++) {
        for (long i = 0; i < BLOCK_LONGS; i++)
            mem[i] = pattern(rank, round, i);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock_all(0, win);
        for (t = 0; t < size; t++) {
            memset(got, 0, bytes);
            MPI_Get(got, BLOCK_LONGS, MPI_LONG, t, 0, BLOCK_LONGS, MPI_LONG, win);
            if (round % 2) {
                MPI_Win_flush_local(t, win);
                errs += check(got, t, round, rank, "MPI_Win_flush_local");
            } else {
                MPI_Win_flush(t, win);
                errs += check(got, t, round, rank, "MPI_Win_flush");
            }
        }
        MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);    /* everyone read this round's data */
    }

    if (counted && pvar_value("smheap_rma_ops_queued") == queued0) {
        printf("rank 0: no get went as packets to rank 1, whose memory is outside the heap\n");
        errs++;
    }
    MPI_Win_free(&win);
    free(got);
    if (rank % 2)
        munmap(mem, bytes);
    else
        free(mem);
    smheap_test_report(errs);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}

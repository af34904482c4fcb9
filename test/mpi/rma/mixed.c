/* A window of MPI_Win_create whose memory lies in the shared heap on some ranks and outside
 * it on others (odd ranks give a static array, even ranks malloc'd memory): origins reach
 * the heap targets in place and the others through ch3's packets, in one window, under
 * every synchronization: lock/unlock (put, get, accumulate), fence (put) and lock_all with
 * flush (fetch-and-op, compare-and-swap).  Every result is checked, and where all ranks
 * share one node's heap the MPI_T counters say how each operation went: in place for the
 * origin itself and the heap targets, as packets for the others. */
#include "../include/smheap_test.h"

#define MAXRANKS 16
#define SLOTS 4                 /* per origin: put under lock, accumulate, put under fence */
#define WIN_LONGS (SLOTS * MAXRANKS + 2)        /* then a counter and a CAS word */
#define OPS_PER_TARGET 6

static long static_win[WIN_LONGS];

enum { SLOT_PUT, SLOT_ACC, SLOT_FENCE };

static long value(int origin, int target, int what)
{
    return 1000000L * what + 1000L * origin + target;
}

static int check(long got, long want, const char *what, int rank, int from)
{
    if (got == want)
        return 0;
    printf("rank %d: %s from rank %d: %ld, want %ld\n", rank, what, from, got, want);
    return 1;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, provided, t, r, counted;
    long *mem, got[MAXRANKS], fetched, old, one = 1;
    unsigned long long in_place0, queued0, in_place, queued;
    MPI_Win win;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > MAXRANKS) {
        printf("at most %d ranks\n", MAXRANKS);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    mem = rank % 2 ? static_win : calloc(WIN_LONGS, sizeof(long));
    mem[WIN_LONGS - 1] = -1;    /* rank 0's compare-and-swap expects it */
    counted = !spans_nodes(MPI_COMM_WORLD) && pvar_value("smheap_heap_shared") == 1 &&
        cvar_int("MPIR_CVAR_CH3_SMHEAP_RMA") == 1;
    if (counted && (rank % 2 == 0) != in_shared_heap(mem, WIN_LONGS * sizeof(long))) {
        printf("rank %d: window memory %s the heap\n", rank, rank % 2 ? "in" : "outside");
        errs++;
    }
    in_place0 = pvar_value("smheap_rma_ops_in_place");
    queued0 = pvar_value("smheap_rma_ops_queued");
    MPI_Win_create(mem, WIN_LONGS * sizeof(long), sizeof(long), MPI_INFO_NULL,
                   MPI_COMM_WORLD, &win);

    /* lock/unlock: a put and an accumulate into the origin's slots, the put read back */
    for (t = 0; t < size; t++) {
        long v = value(rank, t, SLOT_PUT), a = value(rank, t, SLOT_ACC);

        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win);
        MPI_Put(&v, 1, MPI_LONG, t, SLOT_PUT * MAXRANKS + rank, 1, MPI_LONG, win);
        MPI_Accumulate(&a, 1, MPI_LONG, t, SLOT_ACC * MAXRANKS + rank, 1, MPI_LONG, MPI_SUM,
                       win);
        MPI_Win_flush(t, win);
        MPI_Get(&got[t], 1, MPI_LONG, t, SLOT_PUT * MAXRANKS + rank, 1, MPI_LONG, win);
        MPI_Win_unlock(t, win);
        errs += check(got[t], v, "put read back under a lock", rank, t);
    }

    /* fence: a put into the origin's third slot of every target */
    MPI_Win_fence(0, win);
    for (t = 0; t < size; t++) {
        got[t] = value(rank, t, SLOT_FENCE);
        MPI_Put(&got[t], 1, MPI_LONG, t, SLOT_FENCE * MAXRANKS + rank, 1, MPI_LONG, win);
    }
    MPI_Win_fence(0, win);

    /* lock_all: every origin counts itself into every target, and swaps the CAS word of
     * every target from its left neighbour's rank to its own, in rank order */
    MPI_Win_lock_all(0, win);
    for (t = 0; t < size; t++)
        MPI_Fetch_and_op(&one, &fetched, MPI_LONG, t, SLOT_FENCE * MAXRANKS + MAXRANKS,
                         MPI_SUM, win);
    MPI_Win_flush_all(win);
    for (r = 0; r < size; r++) {
        if (r == rank)
            for (t = 0; t < size; t++) {
                long want = rank, expect = rank - 1;

                MPI_Compare_and_swap(&want, &expect, &old, MPI_LONG, t, WIN_LONGS - 1, win);
                MPI_Win_flush(t, win);
                errs += check(old, rank - 1, "compare-and-swap's old value", rank, t);
            }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_unlock_all(win);
    in_place = pvar_value("smheap_rma_ops_in_place") - in_place0;
    queued = pvar_value("smheap_rma_ops_queued") - queued0;

    /* what arrived here */
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    for (r = 0; r < size; r++) {
        errs += check(mem[SLOT_PUT * MAXRANKS + r], value(r, rank, SLOT_PUT), "put", rank, r);
        errs += check(mem[SLOT_ACC * MAXRANKS + r], value(r, rank, SLOT_ACC), "accumulate",
                      rank, r);
        errs += check(mem[SLOT_FENCE * MAXRANKS + r], value(r, rank, SLOT_FENCE),
                      "put in a fence epoch", rank, r);
    }
    errs += check(mem[SLOT_FENCE * MAXRANKS + MAXRANKS], size, "fetch-and-op count", rank, -1);
    errs += check(mem[WIN_LONGS - 1], size - 1, "compare-and-swap word", rank, -1);
    MPI_Win_unlock(rank, win);

    if (counted) {
        unsigned long long heap_targets = 0;

        for (t = 0; t < size; t++)
            heap_targets += t == rank || t % 2 == 0;
        if (in_place != OPS_PER_TARGET * heap_targets ||
            queued != OPS_PER_TARGET * (size - heap_targets)) {
            printf("rank %d: %llu operations in place and %llu as packets, want %llu and "
                   "%llu\n", rank, in_place, queued, OPS_PER_TARGET * heap_targets,
                   OPS_PER_TARGET * (size - heap_targets));
            errs++;
        }
    }
    MPI_Win_free(&win);
    if (rank % 2 == 0)
        free(mem);
    MPI_T_finalize();
    smheap_test_report(errs);
    MPI_Finalize();
    return 0;
}

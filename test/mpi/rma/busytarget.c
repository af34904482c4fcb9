/* Passive-target epochs while the target computes without calling MPI.  Rank 0 spins for
 * BUSY seconds (no MPI call); every other rank meanwhile locks rank 0's window, puts 8
 * bytes and 1 MiB, gets, accumulates, fetch-and-adds and unlocks, then does the same
 * under MPI_Win_lock_all, for windows from MPI_Win_create (over malloc'd memory),
 * MPI_Win_allocate and MPI_Win_create_dynamic.  The values are checked once rank 0 is back.
 * Where every rank shares the heap (one node, heap and MPIR_CVAR_CH3_SMHEAP_RMA on), the
 * locks must be taken in the heap (MPI_T) and every window's epochs must end long before
 * the target's computation: ch3's lock messages would wait for it (400 ms).  Where the
 * ranks span nodes, the same holds for the origins on the target's node, for windows from
 * MPI_Win_create and MPI_Win_allocate (dynamic ones keep ch3's locks there), while the
 * origins of other nodes, which start once those are done, wait for the target: it must
 * have granted each of them exactly its three locks under its lock word (MPI_T
 * smheap_rma_locks_for_packets) where it has a node's origins beside it. */
#include "../include/smheap_test.h"
#include <time.h>

#define BUSY 0.4                /* seconds the target computes */
#define BIG (1 << 20)
#define SMALL 8

enum { CREATE, ALLOCATE, DYNAMIC, NFLAVORS };
static const char *flavor_name[] = { "MPI_Win_create", "MPI_Win_allocate", "dynamic" };

struct layout {                 /* the target's window, in units of bytes */
    MPI_Aint small, big, counter, fetched, size;
};

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void compute(double seconds)
{
    volatile double x = 1.0;
    double end = now() + seconds;

    while (now() < end)
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 1e-9;
}

static struct layout layout_for(int size)
{
    struct layout l;

    l.small = 0;                                /* SMALL bytes per origin */
    l.big = SMALL * size;                       /* BIG bytes per origin */
    l.counter = l.big + (MPI_Aint) BIG * size;  /* one long, accumulated */
    l.fetched = l.counter + sizeof(long);       /* one long, fetch-and-added */
    l.size = l.fetched + sizeof(long);
    return l;
}

/* One origin's epochs on the target; returns the seconds they took. */
static double epochs(MPI_Win win, MPI_Aint base, struct layout l, int rank, char *big,
                     int *errs)
{
    char small[SMALL], back[SMALL];
    long one = 1, old;
    double t0 = MPI_Wtime();

    fill_pattern(small, SMALL, rank);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    MPI_Put(small, SMALL, MPI_CHAR, 0, base + l.small + SMALL * rank, SMALL, MPI_CHAR, win);
    MPI_Put(big, BIG, MPI_CHAR, 0, base + l.big + (MPI_Aint) BIG * rank, BIG, MPI_CHAR, win);
    MPI_Win_flush(0, win);
    MPI_Get(back, SMALL, MPI_CHAR, 0, base + l.small + SMALL * rank, SMALL, MPI_CHAR, win);
    MPI_Win_unlock(0, win);
    *errs += check_pattern(back, SMALL, rank, "get after put under an exclusive lock");

    MPI_Win_lock_all(0, win);
    MPI_Accumulate(&one, 1, MPI_LONG, 0, base + l.counter, 1, MPI_LONG, MPI_SUM, win);
    MPI_Fetch_and_op(&one, &old, MPI_LONG, 0, base + l.fetched, MPI_SUM, win);
    MPI_Win_unlock_all(win);

    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Accumulate(&one, 1, MPI_LONG, 0, base + l.counter, 1, MPI_LONG, MPI_SUM, win);
    MPI_Win_unlock(0, win);
    return MPI_Wtime() - t0;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, heap_rma, spans, near, far, provided;
    MPI_Comm origins;
    char *big;

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    heap_rma = heap_enabled() == 1 && cvar_int("MPIR_CVAR_CH3_SMHEAP_RMA") != 0 &&
        pvar_value("smheap_heap_shared") == 1;
    spans = spans_nodes(MPI_COMM_WORLD);
    near = same_node(MPI_COMM_WORLD, 0, rank);  /* on the target's node */
    MPI_Allreduce(&near, &far, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    far = size - far;           /* origins on other nodes */
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 0, rank, &origins);
    struct layout l = layout_for(size);
    big = malloc(BIG);
    fill_pattern(big, BIG, rank + 100);

    for (int f = 0; f < NFLAVORS; f++) {
        MPI_Win win;
        char *mem = NULL;
        MPI_Aint base = 0;
        double took = 0, slowest;
        unsigned long long locks0 = pvar_value("smheap_rma_locks_in_place");
        unsigned long long granted0 = pvar_value("smheap_rma_locks_for_packets");
        int expect_in_place = heap_rma && near && !(spans && f == DYNAMIC);

        if (f == CREATE) {
            mem = rank == 0 ? calloc(1, l.size) : NULL;
            MPI_Win_create(mem, rank == 0 ? l.size : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                           &win);
        } else if (f == ALLOCATE) {
            MPI_Win_allocate(rank == 0 ? l.size : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                             &win);
            if (rank == 0)
                memset(mem, 0, l.size);
        } else {
            MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
            if (rank == 0) {
                mem = calloc(1, l.size);
                MPI_Win_attach(win, mem, l.size);
                MPI_Get_address(mem, &base);
            }
            MPI_Bcast(&base, 1, MPI_AINT, 0, MPI_COMM_WORLD);
        }
        MPI_Barrier(MPI_COMM_WORLD);

        if (rank == 0) {
            compute(BUSY);
        } else {
            /* the origins of other nodes after those of the target's node: one of them
             * holding the target's lock would keep those waiting for the target too */
            if (!near)
                MPI_Barrier(origins);
            took = epochs(win, base, l, rank, big, &errs);
            if (near)
                MPI_Barrier(origins);
        }
        if (!expect_in_place)
            took = 0;   /* those that wait for the target are not timed */
        MPI_Reduce(&took, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

        if (rank == 0) {
            long counter, fetched;

            for (int o = 1; o < size; o++) {
                errs += check_pattern(mem + l.small + SMALL * o, SMALL, o, "8 bytes put");
                errs += check_pattern(mem + l.big + (MPI_Aint) BIG * o, BIG, o + 100,
                                      "1 MiB put");
            }
            memcpy(&counter, mem + l.counter, sizeof(long));
            memcpy(&fetched, mem + l.fetched, sizeof(long));
            if (counter != 2L * (size - 1) || fetched != size - 1) {
                printf("%s: accumulated %ld (want %d), fetched-and-added %ld (want %d)\n",
                       flavor_name[f], counter, 2 * (size - 1), fetched, size - 1);
                errs++;
            }
            if (heap_rma && slowest > BUSY / 2) {
                printf("%s: the slowest origin%s's epochs took %.1f ms while the target "
                       "computed for %.0f ms: they waited for it\n", flavor_name[f],
                       spans ? " of the target's node" : "", slowest * 1e3, BUSY * 1e3);
                errs++;
            }
            if (heap_rma && spans && f != DYNAMIC && size - far > 1 &&
                pvar_value("smheap_rma_locks_for_packets") - granted0 != 3ULL * far) {
                printf("%s: the target granted %llu locks to packets under its lock word, "
                       "not %d (3 for each of the %d origins of other nodes)\n",
                       flavor_name[f], pvar_value("smheap_rma_locks_for_packets") - granted0,
                       3 * far, far);
                errs++;
            }
        }
        if (expect_in_place && rank != 0 &&
            pvar_value("smheap_rma_locks_in_place") - locks0 < 3) {
            printf("rank %d, %s: %llu locks taken in the heap, not 3 or more\n", rank,
                   flavor_name[f], pvar_value("smheap_rma_locks_in_place") - locks0);
            errs++;
        }

        if (f == DYNAMIC && rank == 0)
            MPI_Win_detach(win, mem);
        MPI_Win_free(&win);
        if (f != ALLOCATE)
            free(mem);
    }
    free(big);
    if (origins != MPI_COMM_NULL)
        MPI_Comm_free(&origins);
    smheap_test_report(errs);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}

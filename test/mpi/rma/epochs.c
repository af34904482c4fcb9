/* Active-target epochs, many in a row, on windows from MPI_Win_allocate, from
 * MPI_Win_create over malloc'd memory and from MPI_Win_create_dynamic with malloc'd memory
 * attached:
 * - fence: every rank puts its round's value into its right neighbour's window and adds
 *   one to a counter of rank 0's, between fences; each value checked after the fence; on
 *   the dynamic window every third round also puts into static memory attached beside
 *   (outside the heap: ch3's packets and its own fence for that epoch);
 * - post/start/complete/wait in a ring (each rank exposes its window to its left
 *   neighbour and accesses its right one), in all-to-all groups, with MPI_Win_test polled
 *   instead of MPI_Win_wait, and with MPI_MODE_NOCHECK after a barrier;
 * each value checked after the epoch, so that an epoch that ended early or late shows.
 * Where every rank shares the heap (one node, heap and MPIR_CVAR_CH3_SMHEAP_RMA on), the
 * epochs must have gone through it (MPI_T smheap_rma_epochs_in_place).  Elsewhere (nodes,
 * or MPIR_CVAR_CH3_SMHEAP_RMA=0) ch3's messages do it: its MPI_Win_start after a fence
 * hung there at 3 ranks and more until maint/patches/0012. */
#include "../include/smheap_test.h"

#define ROUNDS 200

enum { RING, ALL, TEST, NOCHECK, NMODES };
static const char *mode_name[] = { "ring", "all-to-all", "MPI_Win_test", "MPI_MODE_NOCHECK" };

static int rank, size;
static MPI_Aint *base;          /* by rank: the displacement of its slot 0 (bytes) */
static MPI_Aint *spare_base;    /* by rank: where its static memory is (dynamic window) */
static long spare[2];
#define SPARE_EVERY 3

static MPI_Aint slot(int target, int i)
{
    return base[target] + i * (MPI_Aint) sizeof(long);
}

static long value(int from, int round)
{
    return (long) round * 1000 + from + 1;
}

static int fences(MPI_Win win, long *mine, int dynamic)
{
    int errs = 0, right = (rank + 1) % size, left = (rank + size - 1) % size;
    long one = 1;

    MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
    for (int round = 0; round < ROUNDS; round++) {
        long v = value(rank, round);

        MPI_Put(&v, 1, MPI_LONG, right, slot(right, 1), 1, MPI_LONG, win);
        MPI_Accumulate(&one, 1, MPI_LONG, 0, slot(0, 0), 1, MPI_LONG, MPI_SUM, win);
        if (dynamic && round % SPARE_EVERY == SPARE_EVERY - 1)
            MPI_Put(&v, 1, MPI_LONG, right, spare_base[right] + sizeof(long), 1, MPI_LONG, win);
        MPI_Win_fence(0, win);
        if (dynamic && round % SPARE_EVERY == SPARE_EVERY - 1 && spare[1] != value(left, round)) {
            if (errs++ < 5)
                printf("rank %d: fence round %d: %ld in static memory from rank %d, expected "
                       "%ld\n", rank, round, spare[1], left, value(left, round));
        }
        if (mine[1] != value(left, round)) {
            if (errs++ < 5)
                printf("rank %d: fence round %d: %ld from rank %d, expected %ld\n", rank,
                       round, mine[1], left, value(left, round));
        }
        if (rank == 0 && mine[0] != (long) size * (round + 1)) {
            if (errs++ < 5)
                printf("fence round %d: counter %ld, expected %ld\n", round, mine[0],
                       (long) size * (round + 1));
        }
        MPI_Win_fence(0, win);  /* the checks read before the next round writes */
    }
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    return errs;
}

/* Slots 1 + r of every window: what rank r put there. */
static int pscw(MPI_Win win, long *mine, int mode)
{
    int errs = 0, right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Group world, origins, targets;

    MPI_Comm_group(MPI_COMM_WORLD, &world);
    if (mode == ALL) {
        origins = targets = world;
    } else {
        MPI_Group_incl(world, 1, &left, &origins);
        MPI_Group_incl(world, 1, &right, &targets);
    }
    for (int round = 0; round < ROUNDS; round++) {
        long v = value(rank, round);
        int nocheck = mode == NOCHECK ? MPI_MODE_NOCHECK : 0;

        MPI_Win_post(origins, nocheck, win);
        if (nocheck)
            MPI_Barrier(MPI_COMM_WORLD);        /* every post is done before any start */
        MPI_Win_start(targets, nocheck, win);
        if (mode == ALL)
            for (int t = 0; t < size; t++)
                MPI_Put(&v, 1, MPI_LONG, t, slot(t, 1 + rank), 1, MPI_LONG, win);
        else
            MPI_Put(&v, 1, MPI_LONG, right, slot(right, 1 + rank), 1, MPI_LONG, win);
        MPI_Win_complete(win);
        if (mode == TEST) {
            int flag = 0;

            while (!flag)
                MPI_Win_test(win, &flag);
        } else {
            MPI_Win_wait(win);
        }
        for (int r = 0; r < size; r++) {
            if (mode != ALL && r != left)
                continue;
            if (mine[1 + r] != value(r, round) && errs++ < 5)
                printf("rank %d: %s round %d: %ld from rank %d, expected %ld\n", rank,
                       mode_name[mode], round, mine[1 + r], r, value(r, round));
        }
        /* the next round's puts come after every check of this one: a rank posts only
         * once it has checked, and its origins wait for that post */
    }
    if (mode != ALL) {
        MPI_Group_free(&origins);
        MPI_Group_free(&targets);
    }
    MPI_Group_free(&world);
    return errs;
}

int main(int argc, char **argv)
{
    int errs = 0, provided, served;
    unsigned long long before = 0;

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    served = pvar_index("smheap_rma_epochs_in_place") >= 0 && !spans_nodes(MPI_COMM_WORLD) &&
        cvar_int("MPIR_CVAR_CH3_SMHEAP_RMA") != 0 && pvar_value("smheap_heap_shared") == 1;
    if (served)
        before = pvar_value("smheap_rma_epochs_in_place");

    base = calloc(size, sizeof(MPI_Aint));
    spare_base = calloc(size, sizeof(MPI_Aint));
    for (int flavor = 0; flavor < 3; flavor++) {
        MPI_Aint bytes = (1 + size) * sizeof(long);
        long *mine;
        MPI_Win win;

        if (flavor == 0) {
            MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mine, &win);
        } else if (flavor == 1) {
            mine = malloc(bytes);
            MPI_Win_create(mine, bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        } else {
            mine = malloc(bytes);
            MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
            MPI_Win_attach(win, mine, bytes);
            MPI_Win_attach(win, spare, sizeof(spare));
            MPI_Get_address(mine, &base[rank]);
            MPI_Allgather(MPI_IN_PLACE, 1, MPI_AINT, base, 1, MPI_AINT, MPI_COMM_WORLD);
            MPI_Get_address(spare, &spare_base[rank]);
            MPI_Allgather(MPI_IN_PLACE, 1, MPI_AINT, spare_base, 1, MPI_AINT, MPI_COMM_WORLD);
        }
        memset(mine, 0, bytes);
        MPI_Barrier(MPI_COMM_WORLD);
        errs += fences(win, mine, flavor == 2);
        for (int mode = 0; mode < NMODES; mode++)
            errs += pscw(win, mine, mode);
        if (flavor == 2) {
            MPI_Win_detach(win, spare);
            MPI_Win_detach(win, mine);
        }
        MPI_Win_free(&win);
        if (flavor != 0)
            free(mine);
    }

    if (served) {
        /* per window: the fences (ROUNDS rounds of two, the first and the last), and per
         * round of each mode post, start, complete, and wait or a successful test; the
         * dynamic window's fences only, less those that end an epoch with a put into
         * static memory (ch3's), PSCW by ch3 */
        unsigned long long done = pvar_value("smheap_rma_epochs_in_place") - before;
        unsigned long long want = 2ULL * (2 * ROUNDS + 2 + 4ULL * ROUNDS * NMODES) +
            (2 * ROUNDS + 2) - ROUNDS / SPARE_EVERY;

        if (done != want) {
            printf("rank %d: %llu synchronization calls went through the heap, expected "
                   "%llu\n", rank, done, want);
            errs++;
        }
    }
    free(base);
    free(spare_base);
    MPI_T_finalize();
    smheap_test_report(errs);
    MPI_Finalize();
    return 0;
}

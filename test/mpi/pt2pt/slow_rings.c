/* While copies into the rings run slow, mid-sized contiguous messages outside the shared
 * heap go through the kernel instead, a message is let through the rings now and then to
 * measure them again, and every message arrives intact.  Rank 0 sends 32 KiB messages of
 * static memory (below MPIR_CVAR_CH3_SMHEAP_CMA_MIN, so through the rings by default) to
 * rank 1; the counters of rank 0 say which path each took (smheap_cma_slow_ring_msgs).
 * The testlist sets MPIR_CVAR_CH3_SMHEAP_SLOW_RING_RATE:
 *   a rate no copy reaches   16 MiB messages sent both ways at once are staged through
 *                            the rings untimed (larger than a core's cache, their copies
 *                            say nothing of the rings): the rings are not found slow;
 *                            then the first 32 KiB messages find them slow (smheap_rings_slow,
 *                            smheap_ring_slow_spells); then all but the probes go through
 *                            the kernel, 8 KiB ones (below ..._CMA_SLOW_RING_MIN) do not,
 *                            and one sent after the probe interval goes through the rings
 *   1 MB/s                   every copy is faster: nothing goes through the kernel
 *   0 (the default)          whatever the host does: counted consistently
 * With the kernel path off (MPIR_CVAR_CH3_SMHEAP_CMA_MIN=-1, or refused: smheap_cma 0)
 * nothing goes through the kernel whatever the rings do. */
#include <time.h>
#include "../include/smheap_test.h"

#define MID (32 * 1024)
#define SMALL (8 * 1024)
#define BATCH 16
#define HUGE (16 * 1024 * 1024)

static char buf[MID], huge_out[HUGE], huge_in[HUGE];
static int rank, checked;

/* Rank 0 sends n messages of len bytes to rank 1, which checks them; returns the errors
 * and, on every rank, how far rank 0's pvar `name` moved. */
static int send_some(int n, int len, int seed, const char *name, unsigned long long *moved)
{
    unsigned long long before = pvar_value(name);
    int errs = 0;

    for (int i = 0; i < n; i++) {
        if (rank == 0) {
            fill_pattern(buf, len, seed + i);
            MPI_Send(buf, len, MPI_CHAR, 1, i, MPI_COMM_WORLD);
        } else if (rank == 1) {
            memset(buf, 0, len);
            MPI_Recv(buf, len, MPI_CHAR, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            errs += check_pattern(buf, len, seed + i, "message");
        }
    }
    *moved = pvar_value(name) - before;
    MPI_Bcast(moved, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    return errs;
}

/* Ranks 0 and 1 send each other n messages of HUGE bytes at once; returns the errors and,
 * on every rank, how many of them the two had staged through the rings. */
static int both_ways(int n, unsigned long long *staged)
{
    unsigned long long before = pvar_value("smheap_both_ways_staged_msgs"), mine;
    int errs = 0, peer = 1 - rank;

    for (int i = 0; i < n && rank < 2; i++)
        errs += exchange_both_ways(huge_out, huge_in, HUGE, rank, peer, i, 500 + 2 * i);
    mine = rank < 2 ? pvar_value("smheap_both_ways_staged_msgs") - before : 0;
    MPI_Allreduce(&mine, staged, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return errs;
}

static int expect(int ok, const char *what, unsigned long long got)
{
    checked++;
    if (ok)
        return 0;
    if (rank == 0)
        printf("%s: counted %llu\n", what, got);
    return 1;
}

static unsigned long long on_rank0(const char *name)
{
    unsigned long long v = pvar_value(name);

    MPI_Bcast(&v, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    return v;
}

int main(int argc, char **argv)
{
    int prov, errs = 0, rate, kernel;
    unsigned long long moved, slow_before;
    struct timespec pause = { 0, 30 * 1000 * 1000 };    /* beyond the 10 ms probe interval */

    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    rate = cvar_int("MPIR_CVAR_CH3_SMHEAP_SLOW_RING_RATE");
    kernel = same_node(MPI_COMM_WORLD, 0, 1) && on_rank0("smheap_cma") == 1 &&
        cvar_int("MPIR_CVAR_CH3_SMHEAP_CMA_MIN") >= 0;

    if (kernel && rate > 1000000) {
        errs += both_ways(3, &moved);
        errs += expect(moved >= 1, "16 MiB both ways, staged", moved);
        errs += expect(on_rank0("smheap_ring_slow_spells") == 0, "slow spells after 16 MiB",
                       on_rank0("smheap_ring_slow_spells"));
    }

    /* enough copies into the rings for a decision, whatever the host does */
    slow_before = on_rank0("smheap_cma_slow_ring_msgs");
    errs += send_some(BATCH, MID, 1, "smheap_cma_slow_ring_msgs", &moved);
    errs += send_some(BATCH, MID, 100, "smheap_cma_slow_ring_msgs", &moved);
    if (!kernel || rate == 1) {
        errs += expect(on_rank0("smheap_cma_slow_ring_msgs") == slow_before,
                       "through the kernel", on_rank0("smheap_cma_slow_ring_msgs"));
        errs += expect(!kernel || on_rank0("smheap_rings_slow") == 0, "rings slow",
                       on_rank0("smheap_rings_slow"));
    } else if (rate > 1000000) {
        errs += expect(on_rank0("smheap_rings_slow") == 1, "rings slow",
                       on_rank0("smheap_rings_slow"));
        errs += expect(on_rank0("smheap_ring_slow_spells") >= 1, "slow spells",
                       on_rank0("smheap_ring_slow_spells"));
        /* the second batch found them slow (at most a probe or two went through them) */
        errs += expect(moved + 2 >= BATCH, "second batch through the kernel", moved);

        errs += send_some(BATCH, SMALL, 200, "smheap_cma_slow_ring_msgs", &moved);
        errs += expect(moved == 0, "8 KiB through the kernel", moved);

        nanosleep(&pause, NULL);
        errs += send_some(1, MID, 300, "smheap_cma_slow_ring_msgs", &moved);
        errs += expect(moved == 0, "probe through the kernel", moved);
        errs += send_some(1, MID, 400, "smheap_cma_slow_ring_msgs", &moved);
        errs += expect(moved == 1, "after the probe, through the kernel", moved);
    } else {
        errs += expect(on_rank0("smheap_cma_slow_ring_msgs") - slow_before <= 2 * BATCH &&
                       on_rank0("smheap_cma_slow_ring_msgs") <= on_rank0("smheap_cma_msgs"),
                       "through the kernel", on_rank0("smheap_cma_slow_ring_msgs"));
    }
    if (rank == 0 && getenv("SMHEAP_TEST_VERBOSE"))
        printf("rate %d, kernel path %d: %d counter checks\n", rate, kernel, checked);

    smheap_test_report(errs);
    MPI_Finalize();
    MPI_T_finalize();
    return 0;
}

/* Many origins, exclusive and shared locks on the same targets.  Each rank, ITERS times,
 * picks a target and either takes an exclusive lock and increments the target's first
 * counter by a get, a local add and a put (which only mutual exclusion keeps right), or
 * takes a shared lock and adds 1 to the second counter with MPI_Accumulate (atomic by
 * MPI's rules); every LOCK_ALL_EVERY iterations it adds 1 to every target's third counter
 * under MPI_Win_lock_all.  The counters must sum to what was done, for windows from
 * MPI_Win_create and MPI_Win_allocate.  Where every rank shares the heap, the locks must
 * have been taken there (MPI_T).  Where the ranks span nodes and some node has two or more,
 * the node's origins take the node's locks in the heap and the targets grant the other
 * nodes' lock packets under the same words: both must have happened (MPI_T), and the sums
 * show that they kept each other out. */
#include "../include/smheap_test.h"

#define ITERS 1500
#define LOCK_ALL_EVERY 100

static unsigned next_random(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return *state >> 16;
}

static int stress(MPI_Win win, int rank, int size, long done[3])
{
    unsigned seed = 12345u + 7919u * rank;
    long one = 1;

    for (int i = 0; i < ITERS; i++) {
        int t = next_random(&seed) % size;

        if (next_random(&seed) & 1) {
            long value;

            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win);
            MPI_Get(&value, 1, MPI_LONG, t, 0, 1, MPI_LONG, win);
            MPI_Win_flush(t, win);
            value++;
            MPI_Put(&value, 1, MPI_LONG, t, 0, 1, MPI_LONG, win);
            MPI_Win_unlock(t, win);
            done[0]++;
        } else {
            MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win);
            MPI_Accumulate(&one, 1, MPI_LONG, t, 1, 1, MPI_LONG, MPI_SUM, win);
            MPI_Win_unlock(t, win);
            done[1]++;
        }
        if (i % LOCK_ALL_EVERY == 0) {
            MPI_Win_lock_all(0, win);
            for (int u = 0; u < size; u++)
                MPI_Accumulate(&one, 1, MPI_LONG, u, 2, 1, MPI_LONG, MPI_SUM, win);
            MPI_Win_unlock_all(win);
            done[2] += size;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, expect_in_place, expect_mixed, heap_rma, spans, provided;

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    heap_rma = heap_enabled() == 1 && cvar_int("MPIR_CVAR_CH3_SMHEAP_RMA") != 0 &&
        pvar_value("smheap_heap_shared") == 1;
    spans = spans_nodes(MPI_COMM_WORLD);
    expect_in_place = !spans && heap_rma;
    {
        MPI_Comm host = comm_of_my_host(MPI_COMM_WORLD);
        int host_size, has_pair;

        MPI_Comm_size(host, &host_size);
        has_pair = host_size > 1;
        MPI_Allreduce(&has_pair, &expect_mixed, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, &heap_rma, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
        expect_mixed = expect_mixed && spans && heap_rma;
        MPI_Comm_free(&host);
    }

    for (int f = 0; f < 2; f++) {
        const char *name = f ? "MPI_Win_allocate" : "MPI_Win_create";
        long *mem, done[3] = { 0, 0, 0 }, total_done[3], here[3], total_here[3];
        unsigned long long locks0 = pvar_value("smheap_rma_locks_in_place");
        unsigned long long granted0 = pvar_value("smheap_rma_locks_for_packets");
        unsigned long long ways[2], total_ways[2];
        MPI_Win win;

        if (f == 0) {
            mem = calloc(3, sizeof(long));
            MPI_Win_create(mem, 3 * sizeof(long), sizeof(long), MPI_INFO_NULL,
                           MPI_COMM_WORLD, &win);
        } else {
            MPI_Win_allocate(3 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD,
                             &mem, &win);
            mem[0] = mem[1] = mem[2] = 0;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        stress(win, rank, size, done);
        MPI_Barrier(MPI_COMM_WORLD);

        MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
        memcpy(here, mem, sizeof(here));
        MPI_Win_unlock(rank, win);
        MPI_Allreduce(done, total_done, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(here, total_here, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0)
            for (int c = 0; c < 3; c++)
                if (total_here[c] != total_done[c]) {
                    printf("%s: counter %d sums to %ld, but %ld increments were done%s\n",
                           name, c, total_here[c], total_done[c],
                           c == 0 ? " under exclusive locks" : "");
                    errs++;
                }
        ways[0] = pvar_value("smheap_rma_locks_in_place") - locks0;
        ways[1] = pvar_value("smheap_rma_locks_for_packets") - granted0;
        MPI_Reduce(ways, total_ways, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0 && expect_mixed && (total_ways[0] == 0 || total_ways[1] == 0)) {
            printf("%s: %llu locks taken in the heap by the nodes' origins and %llu granted "
                   "to other nodes' packets under the lock words: both should be some\n",
                   name, total_ways[0], total_ways[1]);
            errs++;
        }
        if (expect_in_place && pvar_value("smheap_rma_locks_in_place") - locks0 < ITERS) {
            printf("rank %d, %s: %llu locks taken in the heap, fewer than %d\n", rank, name,
                   pvar_value("smheap_rma_locks_in_place") - locks0, ITERS);
            errs++;
        }
        MPI_Win_free(&win);
        if (f == 0)
            free(mem);
    }
    smheap_test_report(errs);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}

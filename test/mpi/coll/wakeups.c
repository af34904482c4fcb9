/* A doorbell rung many times while its owner sleeps is woken once: after the first ring,
 * the others leave it alone until the owner arms it again (node/smheap_doorbell.h).  So on
 * every node, the wake-ups its ranks issued (MPI_T smheap_wakeups: futex calls and
 * datagrams) are at most the doorbells they armed (smheap_arms) plus one per rank.  Before
 * that rule, 16 ranks on 2 CPUs issued about 143 wake-ups per MPI_Reduce of 8 bytes, 90 per
 * arm, every rank's reach() ringing every sleeper again.
 *
 * The ranks run collectives and a ring of messages, with more ranks than CPUs where the
 * test runs them so (8 on 2 here), and every 50 calls rank 0 stays away for 2 ms, so that
 * the others sleep on any machine; then the node's counters are compared.  A node where no
 * rank slept (which the pauses rule out) fails the test: it would prove nothing.
 * WAKEUPS_VERBOSE=1 prints each node's counts. */
#include <unistd.h>
#include "../include/smheap_test.h"

#define CALLS 2000

int main(int argc, char **argv)
{
    int rank, size, node_rank, node_size, provided, errs = 0;
    unsigned long long mine[3], node[3];
    MPI_Comm node_comm;
    double x = 1, y;

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    node_comm_coll_on(&node_comm, &node_rank, &node_size);     /* rings either way */

    for (int i = 0; i < CALLS; i++) {
        int right = (rank + 1) % size, left = (rank + size - 1) % size, got;

        if (rank == 0 && i % 50 == 0)
            usleep(2000);
        MPI_Reduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, i % size, MPI_COMM_WORLD);
        MPI_Bcast(&x, 1, MPI_DOUBLE, (i + 1) % size, MPI_COMM_WORLD);
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_MAX, node_comm);
        MPI_Sendrecv(&i, 1, MPI_INT, right, 0, &got, 1, MPI_INT, left, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        if (got != i && errs++ < 10)
            printf("rank %d: call %d received %d from rank %d\n", rank, i, got, left);
        if (i % 10 == 9)
            MPI_Barrier(MPI_COMM_WORLD);
    }

    /* Wake-ups first, then a barrier, then the arms: every wake-up counted is of an arm
     * counted (the barrier's own come after the first reading). */
    mine[0] = pvar_value("smheap_wakeups");
    MPI_Barrier(node_comm);
    mine[1] = pvar_value("smheap_arms");
    mine[2] = pvar_value("smheap_sleeps");
    MPI_Reduce(mine, node, 3, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, node_comm);
    if (node_rank == 0) {
        if (getenv("WAKEUPS_VERBOSE"))
            printf("node of %d ranks: %llu wake-ups issued, %llu doorbells armed, %llu sleeps\n",
                   node_size, node[0], node[1], node[2]);
        if (mine[0] == ~0ULL || mine[1] == ~0ULL || mine[2] == ~0ULL) {
            printf("MPI_T lacks smheap_wakeups, smheap_arms or smheap_sleeps\n");
            errs++;
        } else if (node_size > 1 && node[2] == 0) {
            printf("no rank of the node of %d slept: the test proves nothing\n", node_size);
            errs++;
        } else if (node[0] > node[1] + (unsigned long long) node_size) {
            printf("node of %d ranks: more wake-ups than arms: %llu > %llu + %d\n", node_size,
                   node[0], node[1], node_size);
            errs++;
        }
    }

    MPI_Comm_free(&node_comm);
    MPI_T_finalize();
    smheap_test_report(errs);
    MPI_Finalize();
    return 0;
}

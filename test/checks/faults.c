/* A job that a fault will end: faults WHERE HOW [ROUNDS]
 *   WHERE  coll      every rank loops over shared-heap collectives (Allreduce, Bcast of
 *                    1 MiB heap buffers on MPI_COMM_WORLD, one node)
 *          transfer  ranks in pairs (an even count) send 16 MiB heap blocks back and forth
 *                    (single-copy)
 *   HOW    kill      the last rank prints "victim <pid>" and loops until the caller kills it
 *          abort     the last rank calls MPI_Abort after ROUNDS rounds, while the others are
 *                    inside the next collective or transfer
 * Rank 0 prints "running" once the shared-heap path has run (MPI_T says so), so the caller
 * faults a job that is mid-collective or mid-transfer, not one still starting.  The job
 * never ends by itself: only the fault (and the launcher's reaction to it) can end it. */
#include <signal.h>
#include <unistd.h>
#include "../mpi/include/smheap_test.h"

#define COLL_BYTES (1 << 20)
#define TRANSFER_BYTES (16 << 20)

static int rank, size;

static void collective_round(char *buf)
{
    MPI_Allreduce(MPI_IN_PLACE, buf, COLL_BYTES / sizeof(int), MPI_INT, MPI_BOR, MPI_COMM_WORLD);
    MPI_Bcast(buf, COLL_BYTES, MPI_CHAR, 0, MPI_COMM_WORLD);
}

static void transfer_round(char *buf)
{
    int peer = rank ^ 1;

    if (rank < peer) {
        MPI_Send(buf, TRANSFER_BYTES, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
        MPI_Recv(buf, TRANSFER_BYTES, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(buf, TRANSFER_BYTES, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, TRANSFER_BYTES, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    int prov, coll, abort_after, ran_shared;
    const char *counter;
    char *buf;

    if (argc < 3 || (strcmp(argv[1], "coll") && strcmp(argv[1], "transfer")) ||
        (strcmp(argv[2], "kill") && strcmp(argv[2], "abort"))) {
        fprintf(stderr, "usage: faults coll|transfer kill|abort [ROUNDS]\n");
        return 2;
    }
    coll = strcmp(argv[1], "coll") == 0;
    abort_after = strcmp(argv[2], "abort") == 0 ? (argc > 3 ? atoi(argv[3]) : 1) : -1;
    counter = coll ? "smheap_coll_shared" : "smheap_single_copy_msgs";

    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!coll && size % 2) {
        fprintf(stderr, "transfer needs an even number of ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    buf = malloc(coll ? COLL_BYTES : TRANSFER_BYTES);
    memset(buf, rank, coll ? COLL_BYTES : TRANSFER_BYTES);

    if (coll)
        collective_round(buf);
    else
        transfer_round(buf);
    ran_shared = pvar_value(counter) > 0 && pvar_value(counter) != ~0ULL;
    MPI_Allreduce(MPI_IN_PLACE, &ran_shared, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == size - 1 && abort_after < 0) {
        printf("victim %d\n", (int) getpid());
        fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf(ran_shared ? "running\n" : "running, but %s stayed 0\n", counter);
        fflush(stdout);
    }

    for (int round = 0;; round++) {
        if (rank == size - 1 && round == abort_after) {
            /* Hydra tears the job down as soon as it hears of the abort, and may drop output
             * it has not forwarded yet: give it time for rank 0's line.  The others wait
             * in the collective or transfer meanwhile. */
            usleep(100000);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        if (coll)
            collective_round(buf);
        else
            transfer_round(buf);
    }
}

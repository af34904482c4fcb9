/* Short messages through a ring's hot cell (one cell per ring that a short message takes
 * instead of its own whenever its sender has been told the last one there was read)
 * arrive intact and in order, however they mix with messages in cells of their own:
 *   ping-pong    0 to 512 bytes (and larger, which never use it), each reply checked:
 *                on one node, every such message of ranks 0 and 1 (but perhaps the
 *                first of each size) goes through the hot cell (MPI_T smheap_hot_msgs),
 *                and none of 1000 or 2048 bytes does;
 *   ssend        synchronous sends, whose acknowledgements are packets of their own;
 *   bursts       1 to 8 messages sent at once, then a reply: the first of a burst finds
 *                the hot cell free, the rest take cells of their own, in order between;
 *   stream       200 messages sent without waiting, received late (unexpected);
 *   any source   from every other rank at once, in per-sender order. */
#include <stdlib.h>
#include <string.h>
#include "../include/smheap_test.h"

#define SHORT_MAX 512   /* data the hot cell always takes */
#define STREAM 200

/* Round trips of n bytes; on one node, requires that each of ranks 0 and 1 sent all of
 * them but the first (hot) or none of them (!hot) through the hot cell. */
static int ping_pong(int rank, int local, char *buf, int n, int sync, int hot)
{
    unsigned long long before = pvar_value("smheap_hot_msgs"), got;
    int errs = 0, rounds = 100;

    for (int i = 0; i < rounds; i++)
        errs += round_trip_checked(rank, buf, n, n * 1000 + i, 1, sync, "ping-pong");
    got = pvar_value("smheap_hot_msgs") - before;
    /* the first may find the hot cell still holding a message nobody has said was read */
    if (local && rank < 2 && (hot ? got < (unsigned long long) rounds - 1 : got != 0)) {
        printf("rank %d: %llu of %d %s%d-byte messages went through the hot cell, "
               "expected %s\n", rank, got, rounds, sync ? "synchronous " : "", n,
               hot ? "all" : "none");
        errs++;
    }
    return errs;
}

static int bursts(int rank, char *buf)
{
    int errs = 0, seq = 0;

    for (int b = 0; b < 400; b++) {
        int n = 1 + b % 8, len = 1 + (b * 37) % SHORT_MAX;

        for (int k = 0; k < n; k++, seq++) {
            if (rank == 0) {
                fill_pattern(buf, len, seq);
                MPI_Send(buf, len, MPI_CHAR, 1, 3, MPI_COMM_WORLD);
            } else if (rank == 1) {
                memset(buf, 0, len);
                MPI_Recv(buf, len, MPI_CHAR, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                errs += check_pattern(buf, len, seq, "burst");
            }
        }
        if (rank == 0)
            MPI_Recv(buf, 0, MPI_CHAR, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else if (rank == 1)
            MPI_Send(buf, 0, MPI_CHAR, 0, 4, MPI_COMM_WORLD);
    }
    return errs;
}

int main(int argc, char **argv)
{
    static const int short_sizes[] = { 0, 1, 8, 64, 100, 256, SHORT_MAX };
    int rank, size, prov, errs = 0, local;
    char *buf;

    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    buf = malloc(4096);
    local = same_node(MPI_COMM_WORLD, 0, 1);

    for (size_t s = 0; s < sizeof(short_sizes) / sizeof(short_sizes[0]); s++)
        errs += ping_pong(rank, local, buf, short_sizes[s], 0, 1);
    errs += ping_pong(rank, local, buf, 1000, 0, 0);
    errs += ping_pong(rank, local, buf, 2048, 0, 0);
    errs += ping_pong(rank, local, buf, 8, 1, 1);
    errs += bursts(rank, buf);
    errs += stream_unexpected(rank, 40, STREAM, 3000, 5, "stream");
    /* now and then a reply, so that senders learn their messages were read */
    errs += any_source_checked(rank, size, buf, 16, 300, 6, 7);

    free(buf);
    smheap_test_report(errs);
    MPI_Finalize();
    MPI_T_finalize();
    return errs != 0;
}

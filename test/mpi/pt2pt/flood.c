/* Every rank but 0 sends a burst of messages (small, ring-filling and rendezvous sizes)
 * to rank 0 before rank 0 posts anything, so rings fill and senders must queue and wait.
 * Rank 0 then receives with MPI_ANY_SOURCE/MPI_ANY_TAG and checks that each sender's
 * messages arrive complete and in order (MPI's non-overtaking rule). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NMSG 300
#define MAXLEN (300 * 1000)

static int msg_len(int i)
{
    static const int lens[] = { 0, 4, 1000, 40000, 140000, MAXLEN };
    return lens[i % 6];
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    unsigned char *buf = malloc(MAXLEN + sizeof(int));

    if (rank == 0) {
        int *next = calloc(size, sizeof(int));
        usleep(200 * 1000);     /* let the senders run into full rings */
        for (int k = 0; k < NMSG * (size - 1); k++) {
            MPI_Status st;
            int count;
            MPI_Recv(buf, MAXLEN, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &count);
            int src = st.MPI_SOURCE, i = next[src]++;
            if (st.MPI_TAG != i || count != msg_len(i)) {
                if (errs++ < 10)
                    printf("from %d: got tag %d len %d, expected tag %d len %d\n",
                           src, st.MPI_TAG, count, i, msg_len(i));
                continue;
            }
            for (int j = 0; j < count; j++)
                if (buf[j] != (unsigned char) (src + i + j)) {
                    if (errs++ < 10)
                        printf("from %d msg %d: byte %d wrong\n", src, i, j);
                    break;
                }
        }
        free(next);
    } else {
        MPI_Request *reqs = malloc(NMSG * sizeof(MPI_Request));
        unsigned char **bufs = malloc(NMSG * sizeof(*bufs));
        for (int i = 0; i < NMSG; i++) {
            bufs[i] = malloc(msg_len(i) + 1);
            for (int j = 0; j < msg_len(i); j++)
                bufs[i][j] = (unsigned char) (rank + i + j);
            MPI_Isend(bufs[i], msg_len(i), MPI_BYTE, 0, i, MPI_COMM_WORLD, &reqs[i]);
        }
        MPI_Waitall(NMSG, reqs, MPI_STATUSES_IGNORE);
        for (int i = 0; i < NMSG; i++)
            free(bufs[i]);
        free(bufs);
        free(reqs);
    }

    int tot;
    MPI_Reduce(&errs, &tot, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf(tot ? "Found %d errors\n" : " No Errors\n", tot);
    free(buf);
    MPI_Finalize();
    return 0;
}

/* Seed 003's lesson: 10,000 MPI_Isend of one 1 MiB heap buffer to a rank that has not yet
 * posted its receives must grow the sender's memory by the requests, not by the 10 GB of
 * data (no copy per pending message). */
#include "../include/smheap_test.h"
#include <stdlib.h>
#include <unistd.h>

#define N 10000
#define BYTES (1 << 20)

static long rss_kib(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f == NULL || fscanf(f, "%ld %ld", &pages, &rss) != 2)
        rss = 0;
    if (f)
        fclose(f);
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

int main(int argc, char **argv)
{
    int rank, errs = 0;
    char *buf;
    MPI_Request *reqs;
    MPI_Status *statuses;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    buf = malloc(BYTES);
    for (int i = 0; i < BYTES; i++)
        buf[i] = (char) i;
    reqs = malloc(N * sizeof(*reqs));
    statuses = malloc(N * sizeof(*statuses));

    if (rank == 0) {
        long before = rss_kib(), after;

        for (int i = 0; i < N; i++)
            MPI_Isend(buf, BYTES, MPI_CHAR, 1, 0, MPI_COMM_WORLD, &reqs[i]);
        after = rss_kib();
        if (after - before > 100 * 1024) {      /* requests are a few hundred bytes each */
            printf("sender RSS grew by %ld KiB for %d pending 1 MiB sends\n", after - before, N);
            errs++;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Waitall(N, reqs, statuses);
    } else if (rank == 1) {
        MPI_Barrier(MPI_COMM_WORLD);    /* the sends are all pending by now */
        for (int i = 0; i < N; i++)
            MPI_Irecv(buf, BYTES, MPI_CHAR, 0, 0, MPI_COMM_WORLD, &reqs[i]);
        MPI_Waitall(N, reqs, statuses);
        for (int i = 0; i < BYTES; i++)
            if (buf[i] != (char) i) {
                printf("received data differs at %d\n", i);
                errs++;
                break;
            }
    } else
        MPI_Barrier(MPI_COMM_WORLD);
    free(buf);
    free(reqs);
    free(statuses);

    smheap_test_report(errs);
    MPI_Finalize();
    return 0;
}

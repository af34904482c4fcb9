/* A process that aborts says why: abort_says_why
 * Rank 0 writes a line to its stderr and calls MPI_Abort just before the wall clock's second
 * turns: mpiexec kills the proxies of an aborted job at that turn, so a proxy that forwarded
 * the abort ahead of the line has no time left to forward the line (MPICH patch 0018).  The
 * other ranks wait in a barrier that only the abort ends. */
#include <stdio.h>
#include <sys/time.h>
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank;
    struct timeval now;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        do
            gettimeofday(&now, NULL);
        while (now.tv_usec < 999000);
        fprintf(stderr, "abort_says_why: rank 0 gives up\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}

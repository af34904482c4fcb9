/* A rank that finalizes and leaves while another still waits in MPI_Finalize is not a lost
 * peer: rank 1 sends rank 0 a message and leaves at once; rank 2 sends too, then computes
 * for LATE_S seconds before it finalizes, so rank 0 waits in MPI_Finalize for rank 2 long
 * after rank 1 has gone, sleeping, and a sleeping rank checks that its peers live.  Run on
 * simulated nodes, rank 1 is on another node than rank 0 (over sockets or libfabric), and
 * MPI_Finalize must succeed on every rank, and end on rank 0 soon after rank 2 joins it:
 * not after some wait for a message to rank 1 that can no longer arrive.  No collective
 * is called, so that rank 1 never talks to rank 2 and has nothing to wait for. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <mpi.h>

#define LATE_S 3
#define SOON_S 5        /* rank 0's MPI_Finalize ends within this of rank 2's start of it */

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, v;
    double last_came = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size < 3) {
        if (rank == 0)
            printf("needs 3 ranks\n");
        MPI_Finalize();
        return 1;
    }
    if (rank == 0) {
        for (i = 1; i < 3; i++) {
            if (MPI_Recv(&v, 1, MPI_INT, i, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS
                || v != i) {
                printf("message from rank %d: %d\n", i, v);
                errs++;
            }
        }
        for (i = 3; i < size; i++)
            MPI_Recv(&v, 1, MPI_INT, i, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        last_came = now() + LATE_S;
    } else {
        MPI_Send(&rank, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
        if (rank == 2)
            sleep(LATE_S);
    }
    if (MPI_Finalize() != MPI_SUCCESS) {
        printf("rank %d: MPI_Finalize failed\n", rank);
        errs++;
    }
    if (rank == 0 && now() - last_came > SOON_S) {
        printf("rank 0: MPI_Finalize ended %.1f s after rank 2 began it\n", now() - last_came);
        errs++;
    }
    if (rank == 0 && errs == 0)
        printf(" No Errors\n");
    fflush(stdout);
    return errs != 0;
}

/* A Bcast whose root passes a different length from the other ranks (too short, then too
 * long) returns an error on every rank but the root, whichever path the data takes: the
 * shared-heap Bcast within a node, or the two-level one on a communicator spanning nodes
 * (a node's leader that received the wrong length passes its error on to its node).  Then
 * a right Bcast works on the same communicator.  On MPI_COMM_WORLD and on a split half. */
#include <stdlib.h>
#include "../include/smheap_test.h"

static int mismatched(MPI_Comm comm, int root_count, int other_count, const char *what)
{
    int rank, err, buf[10] = { 0 }, errs = 0;

    MPI_Comm_rank(comm, &rank);
    err = MPI_Bcast(buf, rank == 0 ? root_count : other_count, MPI_INT, 0, comm);
    if (rank != 0 && err == MPI_SUCCESS) {
        fprintf(stderr, "rank %d: a Bcast with a %s count did not fail\n", rank, what);
        errs++;
    }
    return errs;
}

static int right(MPI_Comm comm)
{
    int rank, buf[10], errs = 0;

    MPI_Comm_rank(comm, &rank);
    for (int i = 0; i < 10; i++)
        buf[i] = rank == 0 ? 100 + i : -1;
    if (MPI_Bcast(buf, 10, MPI_INT, 0, comm) != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: a right Bcast after the wrong ones failed\n", rank);
        return 1;
    }
    for (int i = 0; i < 10; i++)
        errs += buf[i] != 100 + i;
    if (errs)
        fprintf(stderr, "rank %d: a right Bcast after the wrong ones delivered wrong data\n",
                rank);
    return errs != 0;
}

static int check(MPI_Comm comm)
{
    int errs = 0;

    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    errs += mismatched(comm, 1, 10, "longer");
    errs += mismatched(comm, 10, 1, "shorter");
    MPI_Barrier(comm);
    errs += right(comm);
    return errs;
}

int main(int argc, char **argv)
{
    MPI_Comm half;
    int rank, errs = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    errs += check(MPI_COMM_WORLD);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    errs += check(half);
    MPI_Comm_free(&half);
    smheap_test_report(errs);
    MPI_Finalize();
    return 0;
}

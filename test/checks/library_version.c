/* Which MPI library ran: rank 0 prints MPI_Get_library_version's text. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int rank, len;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Get_library_version(version, &len);
    if (rank == 0)
        printf("%s\n", version);
    MPI_Finalize();
    return 0;
}

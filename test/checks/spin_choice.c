/* Prints, from rank 0, how many CPUs the channel found for the node's ranks and how long a
 * waiting rank spins (MPI_T), then runs a few collectives and messages so that the choice is
 * exercised, and a receive that rank 1 completes by polling MPI_Test while rank 0 computes
 * before sending: the polls that yielded the CPU are printed (test_yields).  maint/test.sh
 * runs it with the ranks confined to fewer CPUs than there are ranks, and with every CPU. */
#include "../mpi/include/smheap_test.h"

int main(int argc, char **argv)
{
    int prov, rank, size, x, errs = 0;
    unsigned long long yields, total;

    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0)
        printf("node_cpus=%llu spin_polls=%llu\n", pvar_value("smheap_node_cpus"),
               pvar_value("smheap_spin_polls"));
    for (int i = 0; i < 1000; i++) {
        x = rank + i;
        MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (x != size * (size - 1) / 2 + size * i)
            errs++;
        x = rank;
        MPI_Sendrecv_replace(&x, 1, MPI_INT, (rank + 1) % size, 0, (rank + size - 1) % size,
                             0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (x != (rank + size - 1) % size)
            errs++;
    }
    if (size > 1 && rank == 0) {
        double until = MPI_Wtime() + 0.02;

        while (MPI_Wtime() < until)
            ;   /* computing */
        x = 42;
        MPI_Send(&x, 1, MPI_INT, 1, 5, MPI_COMM_WORLD);
    } else if (size > 1 && rank == 1) {
        MPI_Request req;
        int done = 0;

        MPI_Irecv(&x, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, &req);
        while (!done)
            MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        errs += x != 42;
    }
    yields = pvar_value("smheap_test_yields");
    MPI_Reduce(&yields, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_yields=%llu\n", total);
    smheap_test_report(errs);
    MPI_Finalize();
    MPI_T_finalize();
    return 0;
}

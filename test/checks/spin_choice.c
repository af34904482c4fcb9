/* Prints, from rank 0, how many CPUs the channel found for the node's ranks and how long a
 * waiting rank spins (MPI_T: polls, or microseconds when the channel chooses), then runs a few collectives and messages so that the choice is
 * exercised, and a receive that rank 1 completes by polling MPI_Test while rank 0 computes
 * before sending: the polls that yielded the CPU are printed (test_yields).  maint/test.sh
 * runs it with the ranks confined to fewer CPUs than there are ranks, and with every CPU.
 * It also prints whether waking a peer goes without a fence (smheap_wake_fenceless) and
 * whether the kernel offers membarrier's global expedited command, on which that rests.
 * spin_choice contended: first, rank 0 keeps one thread more busy than the machine's CPUs for
 * 300 ms while rank 1 waits for a message; rank 1 then prints how many of its waits stopped
 * spinning because the CPUs were contended (smheap_contended_waits). */
#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "../mpi/include/smheap_test.h"

static double seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *busy(void *arg)
{
    double until = seconds() + 0.3;
    volatile unsigned long n = 0;

    (void) arg;
    while (seconds() < until)
        n++;
    return NULL;
}

static void contended(int rank)
{
    int x = 0;

    if (rank == 0) {
        /* the channel compares the runnable threads with the machine's CPUs */
        long node_cpus = (long) pvar_value("smheap_node_cpus");
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        int n = (int) (cpus > node_cpus ? cpus : node_cpus) + 1;
        pthread_t *t = calloc(n, sizeof(*t));

        for (int i = 0; i < n; i++)
            pthread_create(&t[i], NULL, busy, NULL);
        MPI_Send(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);        /* they run: wait now */
        for (int i = 0; i < n; i++)
            pthread_join(t[i], NULL);
        free(t);
        MPI_Send(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Recv(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        usleep(10000);  /* past the channel's memory of an answer from before they ran */
        MPI_Recv(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("contended_waits=%llu\n", pvar_value("smheap_contended_waits"));
    }
}

int main(int argc, char **argv)
{
    int prov, rank, size, x, errs = 0;
    unsigned long long yields, total;

    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && strcmp(argv[1], "contended") == 0 && size >= 2)
        contended(rank);
    if (rank == 0)
        printf("node_cpus=%llu spin_polls=%llu spin_usec=%llu\n",
               pvar_value("smheap_node_cpus"), pvar_value("smheap_spin_polls"),
               pvar_value("smheap_spin_usec"));
    if (rank == 0) {
        long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

        printf("wake_fenceless=%llu membarrier=%d\n", pvar_value("smheap_wake_fenceless"),
               cmds > 0 && (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) != 0);
    }
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

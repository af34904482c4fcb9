/*
 * What a waiting rank costs the ranks it waits for when they share its CPU: every rank but
 * rank 0 computes for a while, then all meet in MPI_Barrier; rank 0 only waits.  Rank 0
 * prints the time per step.  A waiter that polls (spins or keeps yielding) takes CPU time
 * from the computing ranks; one that sleeps does not, but is woken late.  Run with more
 * ranks than CPUs, for example
 *
 *   taskset -c 0 mpiexec -n 4 ./imbalance 30 2000000
 *
 * and compare settings of the waiting ladder (MPIR_CVAR_CH3_SMHEAP_YIELD_POLLS, ...).
 *
 *   imbalance [STEPS [ITERS]]   (default 50 steps of 2,000,000 iterations of work)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static void work(long iters)
{
    double x = 1.0;

    for (long i = 0; i < iters; i++)
        x = x * 1.0000001 + 1e-9;
    sink = x;
}

int main(int argc, char **argv)
{
    int rank, steps = argc > 1 ? atoi(argv[1]) : 50;
    long iters = argc > 2 ? atol(argv[2]) : 2000000;
    double t0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = now();
    for (int s = 0; s < steps; s++) {
        if (rank > 0)
            work(iters);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 0)
        printf("imbalance: %.3f ms per step\n", 1e3 * (now() - t0) / steps);
    MPI_Finalize();
    return 0;
}

/*
 * A malloc-heavy program: each thread keeps LIVE blocks and, at every step, frees a random
 * one and allocates its replacement (writing its first and last bytes).  Prints operations
 * per second (one step = one malloc + one free) and the peak RSS.  Run it with the shared
 * heap on and off (MPIR_CVAR_CH3_SMHEAP_ENABLE); bench/heap/run.sh does, side by side.
 *
 *   malloc_bench small|mix [threads] [steps per thread]
 *   small: 16 B - 4 KiB uniform; mix: 80% 16 B - 4 KiB, 15% 4 - 64 KiB, 5% 64 KiB - 1 MiB
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define LIVE 1000

static int mix;
static long steps;

static size_t pick_size(unsigned *seed)
{
    unsigned r = (unsigned) rand_r(seed);

    if (!mix || r % 100 < 80)
        return 16 + (size_t) rand_r(seed) % (4096 - 16);
    if (r % 100 < 95)
        return 4096 + (size_t) rand_r(seed) % (65536 - 4096);
    return 65536 + (size_t) rand_r(seed) % ((1 << 20) - 65536);
}

static void *churn(void *arg)
{
    unsigned seed = (unsigned) (size_t) arg;
    char *live[LIVE];

    for (int i = 0; i < LIVE; i++)
        live[i] = malloc(pick_size(&seed));
    for (long s = 0; s < steps; s++) {
        int i = rand_r(&seed) % LIVE;
        size_t n = pick_size(&seed);

        free(live[i]);
        live[i] = malloc(n);
        live[i][0] = live[i][n - 1] = (char) s;
    }
    for (int i = 0; i < LIVE; i++)
        free(live[i]);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads, rank;
    pthread_t t[64];
    struct timespec a, b;
    struct rusage ru;
    double secs;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    mix = argc > 1 && strcmp(argv[1], "mix") == 0;
    threads = argc > 2 ? atoi(argv[2]) : 1;
    steps = argc > 3 ? atol(argv[3]) : (mix ? 4000000 : 20000000);
    if (threads < 1 || threads > 64)
        threads = 1;

    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, churn, (void *) (size_t) (i + 1 + rank * 100));
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    getrusage(RUSAGE_SELF, &ru);
    secs = (double) (b.tv_sec - a.tv_sec) + (double) (b.tv_nsec - a.tv_nsec) * 1e-9;
    if (rank == 0)
        printf("ops_per_s %.0f peak_rss_kib %ld\n", (double) steps * threads / secs,
               ru.ru_maxrss);
    MPI_Finalize();
    return 0;
}

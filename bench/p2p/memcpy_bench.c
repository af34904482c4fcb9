/*
 * The copy ceilings for bench/p2p's bandwidth tests: what memcpy itself achieves on this
 * machine, with the same reuse as p2p_bench's bw test (the same source and the same
 * destination every time).  No MPI.  For each size (powers of two):
 *
 *   memcpy1  one thread (pinned to CPU 0) copies SIZE bytes from one buffer to another,
 *            again and again;
 *   memcpy2  two threads (pinned to CPUs 0 and 1) each copy one half of the same buffers
 *            at the same time; the time is the slower thread's.
 *
 * MB/s (1e6 bytes/s) = SIZE * repetitions / time.  A single-copy message transfer cannot
 * beat memcpy1 by much (the receiver copies alone); memcpy2 is the machine's two-core copy.
 * The repetitions come from one timed copy, so that one size takes about 0.15 s per test
 * (0.03 s with -q), and at least 3.  Buffers are page aligned and written before timing.
 *
 *   memcpy_bench [-s MIN] [-S MAX] [-q]      (default 64 KiB ... 64 MiB)
 * Output, one line per size and test:  test=memcpy1 size=65536 value=12345.6
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define MAX_THREADS 2

struct job {
    int cpu;
    size_t off, len;
    long reps;
    double secs;
};

static char *src, *dst;
static pthread_barrier_t start;
/* Called through a volatile pointer so that the compiler keeps every repetition. */
static void *(*volatile copy)(void *, const void *, size_t) = memcpy;

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec + (double) t.tv_nsec * 1e-9;
}

/* Pin the calling thread to CPU (if the machine has it and lets us). */
static void pin(int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *copier(void *arg)
{
    struct job *j = arg;
    double t0;

    pin(j->cpu);
    pthread_barrier_wait(&start);
    t0 = now();
    for (long r = 0; r < j->reps; r++)
        copy(dst + j->off, src + j->off, j->len);
    j->secs = now() - t0;
    return NULL;
}

/* Seconds for REPS copies of SIZE bytes split among NTHR threads (the slowest one). */
static double timed_copies(int nthr, size_t size, long reps)
{
    pthread_t t[MAX_THREADS];
    struct job job[MAX_THREADS];
    double secs = 0;

    pthread_barrier_init(&start, NULL, (unsigned) nthr);
    for (int i = 0; i < nthr; i++) {
        job[i].cpu = i;
        job[i].off = size / (size_t) nthr * (size_t) i;
        job[i].len = i == nthr - 1 ? size - job[i].off : size / (size_t) nthr;
        job[i].reps = reps;
        pthread_create(&t[i], NULL, copier, &job[i]);
    }
    for (int i = 0; i < nthr; i++) {
        pthread_join(t[i], NULL);
        if (job[i].secs > secs)
            secs = job[i].secs;
    }
    pthread_barrier_destroy(&start);
    return secs;
}

/* MB/s of one test at one size: one copy to size the run, then the run. */
static double copy_rate(int nthr, size_t size, double target)
{
    double one = timed_copies(nthr, size, 1);
    long reps = one > 0 ? (long) (target / one) : 1000000;

    if (reps < 3)
        reps = 3;
    if (reps > 1000000)
        reps = 1000000;
    return (double) size * (double) reps / timed_copies(nthr, size, reps) / 1e6;
}

int main(int argc, char **argv)
{
    size_t min_size = 65536, max_size = 64 << 20;
    double target = 0.15;
    int c;

    while ((c = getopt(argc, argv, "s:S:q")) != -1) {
        switch (c) {
        case 's': min_size = strtoul(optarg, NULL, 0); break;
        case 'S': max_size = strtoul(optarg, NULL, 0); break;
        case 'q': target = 0.03; break;
        default:
            fprintf(stderr, "usage: memcpy_bench [-s MIN] [-S MAX] [-q]\n");
            return 1;
        }
    }
    if (min_size == 0 || min_size > max_size ||
        posix_memalign((void **) &src, PAGE, max_size) ||
        posix_memalign((void **) &dst, PAGE, max_size)) {
        fprintf(stderr, "memcpy_bench: bad sizes or out of memory\n");
        return 1;
    }
    memset(src, 1, max_size);
    memset(dst, 0, max_size);
    for (size_t size = min_size; size <= max_size; size *= 2) {
        printf("test=memcpy1 size=%zu value=%.3f\n", size, copy_rate(1, size, target));
        printf("test=memcpy2 size=%zu value=%.3f\n", size, copy_rate(2, size, target));
        fflush(stdout);
    }
    free(src);
    free(dst);
    return 0;
}

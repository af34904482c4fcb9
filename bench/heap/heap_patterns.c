/*
 * Allocation patterns of real programs, one per run, timed in one process: whatever malloc
 * the process has (the shared heap, glibc's with MPIR_CVAR_CH3_SMHEAP_ENABLE=0, or an
 * allocator preloaded with LD_PRELOAD) serves them.  bench/heap/run.sh runs them side by
 * side; test/checks/heap_speed.sh checks the shared heap against glibc with them.
 *
 *   heap_patterns small THREADS [OPS]     small-object churn: each thread keeps 1000 blocks
 *                                         of 16 B - 4 KiB live, frees one at random and
 *                                         allocates its replacement
 *   heap_patterns churn MAX [MIN]         for every size from MIN (16 B) to MAX, powers of
 *                                         two and an odd size in between: malloc, touch
 *                                         every page, free
 *   heap_patterns realloc MAX             grow one block by 16 KiB at a time up to MAX,
 *                                         writing each new page, then free it
 *   heap_patterns producer [OPS]          one thread allocates 16 B - 64 KiB blocks, another
 *                                         frees them (a queue between the two)
 *   heap_patterns calloc MAX [MIN]        calloc of zeroed arrays from MIN (1 MiB) to MAX,
 *                                         sizes four times apart, every page checked and
 *                                         written, then freed
 *   heap_patterns idle SIZE SECONDS       eight blocks of SIZE, touched, all freed; then no
 *                                         allocation for SECONDS: prints /dev/shm's use
 *                                         after the frees and after the wait
 *
 * HEAP_PATTERNS_SCALE=N divides the operation counts by N (for a quick check).
 *
 * Sizes take K, M and G suffixes.  Each size prints one line:
 *   <pattern> <size> ops <n> ns_per_op <t>
 * and each run ends with
 *   total <pattern> ns <t> peak_rss_kib <k> shm_peak_kib <p> shm_left_kib <l>
 * where shm_peak and shm_left are /dev/shm's use above what it was after MPI_Init (sampled
 * while the pattern runs; once everything is freed).  A size takes about the same wall time
 * whatever the allocator: the operation counts depend only on the size.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define LIVE 1000

static long long shm_base, shm_peak;
static volatile unsigned char sink;

static double now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec * 1e9 + (double) t.tv_nsec;
}

static long long shm_used(void)
{
    struct statvfs v;

    if (statvfs("/dev/shm", &v) != 0)
        return 0;
    return (long long) (v.f_blocks - v.f_bfree) * (long long) v.f_frsize;
}

static void sample_shm(void)
{
    long long used = shm_used() - shm_base;

    if (used > shm_peak)
        shm_peak = used;
}

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);

    switch (*end) {
        case 'K': case 'k': v *= 1024; break;
        case 'M': case 'm': v *= 1024 * 1024; break;
        case 'G': case 'g': v *= 1024.0 * 1024 * 1024; break;
    }
    return (size_t) v;
}

/* The byte a program filling the block would touch in the page at i: a cache line further
 * into each page, so that the touches do not all fall into one set of the cache (which
 * would time where the allocator happened to put the block within its page). */
static size_t page_byte(size_t i, size_t end)
{
    size_t at = i + (i / PAGE * 64) % PAGE;

    return at < end ? at : i;
}

/* Write one byte in every page of [from, to), and the last byte. */
static void touch_pages(char *p, size_t from, size_t to, unsigned char value)
{
    for (size_t i = from; i < to; i += PAGE)
        p[page_byte(i, to)] = (char) value;
    if (to > from)
        p[to - 1] = (char) value;
}

/* The bytes touch_pages would write are all zero. */
static int zeroed(const char *p, size_t size)
{
    for (size_t i = 0; i < size; i += PAGE)
        if (p[page_byte(i, size)] != 0)
            return 0;
    return p[size - 1] == 0;
}

static void die(const char *what)
{
    fprintf(stderr, "heap_patterns: %s failed\n", what);
    exit(1);
}

/* --- small-object churn on several threads --- */

static long small_ops;

static void *small_churn(void *arg)
{
    unsigned seed = (unsigned) (uintptr_t) arg;
    char *live[LIVE];

    for (int i = 0; i < LIVE; i++)
        if ((live[i] = malloc(16 + (size_t) rand_r(&seed) % (4096 - 16))) == NULL)
            die("malloc");
    for (long s = 0; s < small_ops; s++) {
        int i = rand_r(&seed) % LIVE;
        size_t n = 16 + (size_t) rand_r(&seed) % (4096 - 16);

        free(live[i]);
        if ((live[i] = malloc(n)) == NULL)
            die("malloc");
        live[i][0] = live[i][n - 1] = (char) s;
    }
    for (int i = 0; i < LIVE; i++)
        free(live[i]);
    return NULL;
}

static double run_small(int threads, long ops)
{
    pthread_t t[64];
    double start, ns;

    small_ops = ops;
    start = now_ns();
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, small_churn, (void *) (uintptr_t) (i + 1)) != 0)
            die("pthread_create");
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    ns = now_ns() - start;
    sample_shm();
    printf("small %d ops %ld ns_per_op %.2f\n", threads, ops * threads, ns / (ops * threads));
    return ns;
}

/* --- churn of one size, every size --- */

/* Enough operations that a size takes a comparable time whether its pages are touched
 * for the first time or reused; the first one is not timed. */
static long scale = 1;

static long churn_ops(size_t size)
{
    long ops = (long) (((size_t) 1 << 31) / (size + PAGE)) / scale;

    return ops > 200000 / scale ? 200000 / scale : ops < 4 ? 4 : ops;
}

/* malloc (or calloc, checked to come zeroed) a block of size, touch every page, free it;
 * the operation counts depend only on the size, and the first one is not timed. */
static double churn_one(const char *pattern, size_t size, int cleared)
{
    long ops = churn_ops(size);
    double start = 0;

    for (long i = -1; i < ops; i++) {
        char *p;

        if (i == 0)
            start = now_ns();
        if ((p = cleared ? calloc(size / 8, 8) : malloc(size)) == NULL)
            die(pattern);
        if (cleared && !zeroed(p, size))
            die("calloc zeroing");
        touch_pages(p, 0, size, (unsigned char) (i | 1));
        if (i == ops / 2)
            sample_shm();
        free(p);
    }
    start = now_ns() - start;
    printf("%s %zu ops %ld ns_per_op %.2f\n", pattern, size, ops, start / ops);
    return start;
}

static double run_churn(size_t min, size_t max)
{
    double total = 0;

    for (size_t s = min; s <= max; s *= 2) {
        total += churn_one("churn", s, 0);
        if (s + s / 2 + 3 <= max && s >= 32)
            total += churn_one("churn", s + s / 2 + 3, 0);      /* odd, between powers of two */
    }
    return total;
}

/* --- realloc growth --- */

static double run_realloc(size_t max)
{
    const size_t step = 16384;
    long rounds = (long) (((size_t) 1 << 30) / max), ops = 0;
    double start;

    rounds = rounds < 3 ? 3 : rounds > 20 ? 20 : rounds;
    rounds = rounds / scale < 2 ? 2 : rounds / scale;
    start = now_ns();
    for (long r = 0; r < rounds; r++) {
        char *p = NULL;

        for (size_t size = step; size <= max; size += step, ops++) {
            char *q = realloc(p, size);

            if (q == NULL)
                die("realloc");
            if (p != NULL && (q[0] != (char) r || q[size - step - 1] != (char) r))
                die("realloc keeping the contents");
            touch_pages(q, size - step, size, (unsigned char) r);
            q[0] = (char) r;
            p = q;
        }
        sample_shm();
        free(p);
    }
    start = now_ns() - start;
    printf("realloc %zu ops %ld ns_per_op %.2f\n", max, ops, start / ops);
    return start;
}

/* --- one thread allocates, another frees --- */

/* Few blocks in flight: a deep queue fills when the producer runs ahead, and the peak RSS
 * would measure how far ahead, not what the allocators keep. */
#define QUEUE 256
static char *_Atomic queue[QUEUE];
static long producer_ops;

static void *consume(void *unused)
{
    (void) unused;
    for (long i = 0; i < producer_ops; i++) {
        _Atomic(char *) *slot = &queue[i % QUEUE];
        char *p;

        while ((p = atomic_load_explicit(slot, memory_order_acquire)) == NULL)
            ;
        atomic_store_explicit(slot, NULL, memory_order_relaxed);
        sink ^= (unsigned char) p[0];
        free(p);
    }
    return NULL;
}

static double run_producer(long ops)
{
    unsigned seed = 7;
    pthread_t consumer;
    double start;

    producer_ops = ops;
    start = now_ns();
    if (pthread_create(&consumer, NULL, consume, NULL) != 0)
        die("pthread_create");
    for (long i = 0; i < ops; i++) {
        _Atomic(char *) *slot = &queue[i % QUEUE];
        size_t n = rand_r(&seed) % 8 ? 16 + (size_t) rand_r(&seed) % 1008
            : 1024 + (size_t) rand_r(&seed) % (65536 - 1024);
        char *p = malloc(n);

        if (p == NULL)
            die("malloc");
        p[0] = p[n - 1] = (char) i;
        while (atomic_load_explicit(slot, memory_order_relaxed) != NULL)
            ;
        atomic_store_explicit(slot, p, memory_order_release);
    }
    pthread_join(consumer, NULL);
    start = now_ns() - start;
    sample_shm();
    printf("producer 0 ops %ld ns_per_op %.2f\n", ops, start / ops);
    return start;
}

/* --- calloc of large zeroed arrays --- */

static double run_calloc(size_t min, size_t max)
{
    double total = 0;

    for (size_t s = min; s <= max; s *= 4)
        total += churn_one("calloc", s, 1);
    return total;
}

static double run_idle(size_t size, int seconds)
{
    char *p[8];
    double start = now_ns();

    for (int i = 0; i < 8; i++) {
        if ((p[i] = malloc(size)) == NULL)
            die("malloc");
        touch_pages(p[i], 0, size, (unsigned char) i);
    }
    sample_shm();
    for (int i = 0; i < 8; i++)
        free(p[i]);
    printf("idle %zu shm_after_free_kib %lld\n", size, (shm_used() - shm_base) / 1024);
    fflush(stdout);
    sleep((unsigned) seconds);
    printf("idle %zu shm_after_idle_kib %lld\n", size, (shm_used() - shm_base) / 1024);
    return now_ns() - start;
}

int main(int argc, char **argv)
{
    const char *pattern = argc > 1 ? argv[1] : "";
    struct rusage ru;
    double ns;

    MPI_Init(&argc, &argv);
    shm_base = shm_used();
    if (getenv("HEAP_PATTERNS_SCALE") && atol(getenv("HEAP_PATTERNS_SCALE")) > 0)
        scale = atol(getenv("HEAP_PATTERNS_SCALE"));
    if (strcmp(pattern, "small") == 0 && argc > 2)
        ns = run_small(atoi(argv[2]), (argc > 3 ? atol(argv[3]) : 4000000) / scale);
    else if (strcmp(pattern, "churn") == 0 && argc > 2)
        ns = run_churn(argc > 3 ? parse_size(argv[3]) : 16, parse_size(argv[2]));
    else if (strcmp(pattern, "realloc") == 0 && argc > 2)
        ns = run_realloc(parse_size(argv[2]));
    else if (strcmp(pattern, "producer") == 0)
        ns = run_producer((argc > 2 ? atol(argv[2]) : 4000000) / scale);
    else if (strcmp(pattern, "idle") == 0 && argc > 3)
        ns = run_idle(parse_size(argv[2]), atoi(argv[3]));
    else if (strcmp(pattern, "calloc") == 0 && argc > 2)
        ns = run_calloc(argc > 3 ? parse_size(argv[3]) : (size_t) 1 << 20, parse_size(argv[2]));
    else {
        fprintf(stderr, "usage: heap_patterns small THREADS [OPS] | churn MAX [MIN] | "
                "realloc MAX | producer [OPS] | calloc MAX [MIN] | idle SIZE SECONDS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
        return 2;
    }
    getrusage(RUSAGE_SELF, &ru);
    printf("total %s ns %.0f peak_rss_kib %ld shm_peak_kib %lld shm_left_kib %lld\n", pattern,
           ns, ru.ru_maxrss, shm_peak / 1024, (shm_used() - shm_base) / 1024);
    MPI_Finalize();
    return 0;
}

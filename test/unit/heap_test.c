/*
 * Unit tests of the shared heap, without MPICH: heap_test <case>.  Each case exits 0 on
 * success and prints "FAIL: ..." otherwise; heap_test.sh runs them with their settings.
 */
#define _GNU_SOURCE
#include "smheap.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);

static int failures;

#define CHECK(cond, ...) do {                                           \
        if (!(cond)) {                                                  \
            printf("FAIL (%s:%d): ", __FILE__, __LINE__);               \
            printf(__VA_ARGS__);                                        \
            printf("\n");                                               \
            failures++;                                                 \
        }                                                               \
    } while (0)

/* Calls through volatile pointers, so the compiler cannot drop a malloc/free pair. */
static void *(*volatile xmalloc)(size_t) = malloc;
static void *(*volatile xcalloc)(size_t, size_t) = calloc;
static void *(*volatile xrealloc)(void *, size_t) = realloc;
static void (*volatile xfree)(void *) = free;

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char) (seed + i * 7);
}

static int intact(const unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char) (seed + i * 7))
            return 0;
    return 1;
}

static int test_family(void)
{
    unsigned char *p, *q;
    void *v = NULL;
    char *s;
    size_t page = (size_t) sysconf(_SC_PAGESIZE);

    CHECK(smheap_active(), "heap off: %s", smheap_off_reason());
    p = xmalloc(100);
    CHECK(p && smheap_in_region(p), "malloc(100) = %p not in the region", (void *) p);
    CHECK(malloc_usable_size(p) >= 100, "usable size %zu", malloc_usable_size(p));
    fill(p, 100, 1);
    q = xrealloc(p, 100000);
    CHECK(q && smheap_in_region(q) && intact(q, 100, 1), "realloc grow lost data");
    fill(q, 100000, 2);
    p = xrealloc(q, 10);
    CHECK(p && intact(p, 10, 2), "realloc shrink lost data");
    xfree(p);

    p = xcalloc(1000, 1000);
    CHECK(p && smheap_in_region(p), "calloc not in region");
    for (size_t i = 0; p && i < 1000000; i++)
        if (p[i] != 0) {
            CHECK(0, "calloc byte %zu is %d", i, p[i]);
            break;
        }
    xfree(p);
    errno = 0;
    CHECK(xcalloc(SIZE_MAX / 2, 3) == NULL && errno == ENOMEM, "calloc overflow");

    p = xmalloc(0);
    q = xmalloc(0);
    CHECK(p && q && p != q, "malloc(0) must give distinct blocks");
    xfree(p);
    xfree(q);
    xfree(NULL);
    p = xrealloc(NULL, 50);
    CHECK(p && smheap_in_region(p), "realloc(NULL, 50)");
    CHECK(xrealloc(p, 0) == NULL, "realloc(p, 0) frees and returns NULL");

    p = memalign(4096, 5000);
    CHECK(p && smheap_in_region(p) && (uintptr_t) p % 4096 == 0, "memalign");
    free(p);
    p = memalign(48, 100);      /* not a power of two: rounded up to 64, as glibc does */
    CHECK(p && (uintptr_t) p % 64 == 0, "memalign(48)");
    free(p);
    CHECK(posix_memalign(&v, 256, 1000) == 0 && smheap_in_region(v) &&
          (uintptr_t) v % 256 == 0, "posix_memalign");
    free(v);
    CHECK(posix_memalign(&v, 24, 1000) == EINVAL, "posix_memalign(24) is EINVAL");
    CHECK(posix_memalign(&v, 0, 1000) == EINVAL, "posix_memalign(0) is EINVAL");
    p = aligned_alloc(1024, 4096);
    CHECK(p && smheap_in_region(p) && (uintptr_t) p % 1024 == 0, "aligned_alloc");
    free(p);
    p = valloc(10);
    CHECK(p && smheap_in_region(p) && (uintptr_t) p % page == 0, "valloc");
    free(p);
    p = pvalloc(10);
    CHECK(p && (uintptr_t) p % page == 0 && malloc_usable_size(p) >= page, "pvalloc");
    free(p);

    s = strdup("libc allocates through the interposed malloc");
    CHECK(s && smheap_in_region(s), "strdup not in region");
    free(s);
    v = __libc_malloc(64);     /* a private block: free and realloc route it to glibc */
    CHECK(!smheap_in_region(v) && malloc_usable_size(v) >= 64, "glibc block");
    p = xmalloc(1000);
    CHECK(smheap_holds(p, 1000) && smheap_holds(p + 999, 1) && !smheap_holds(v, 64) &&
          smheap_holds(v, 0) && !smheap_holds(p, SIZE_MAX) &&
          !smheap_holds(p, (size_t) -(uintptr_t) p + 16), "smheap_holds: ranges in and out");
    xfree(p);
    v = xrealloc(v, 128);
    CHECK(v && !smheap_in_region(v), "realloc of a glibc block stays in glibc");
    xfree(v);
    return failures;
}

static int test_alignments(void)
{
    for (size_t align = 16; align <= ((size_t) 64 << 20); align *= 2) {
        size_t size = align + 1;
        void *p = memalign(align, size);

        CHECK(p && smheap_in_region(p) && (uintptr_t) p % align == 0,
              "memalign(%zu) = %p", align, p);
        if (p)
            memset(p, 1, size);
        free(p);
    }
    return failures;
}

/* 8 threads; each allocates, and frees blocks that other threads allocated. */
#define THREADS 8
#define OPS 100000
#define SLOTS 1024
static void *_Atomic exchange[SLOTS];

static void *churn(void *arg)
{
    unsigned seed = (unsigned) (uintptr_t) arg;
    long bad = 0;

    for (int i = 0; i < OPS; i++) {
        size_t size = 16 + rand_r(&seed) % (rand_r(&seed) % 16 ? 4096 : 200000);
        unsigned char *p = xmalloc(size);

        if (p == NULL || !smheap_in_region(p)) {
            bad++;
            continue;
        }
        p[0] = (unsigned char) size;
        p[size - 1] = (unsigned char) (size >> 8);
        memcpy(p + 1, &size, size >= 1 + sizeof(size) + 1 ? sizeof(size) : 0);
        p = atomic_exchange(&exchange[rand_r(&seed) % SLOTS], p);
        if (p != NULL) {        /* most often another thread's block */
            size_t n = 0;

            memcpy(&n, p + 1, sizeof(n));
            if (n >= 1 + sizeof(n) + 1 && (p[0] != (unsigned char) n ||
                                           p[n - 1] != (unsigned char) (n >> 8)))
                bad++;
            xfree(p);
        }
    }
    return (void *) bad;
}

static int test_threads(void)
{
    pthread_t t[THREADS];
    long bad = 0;

    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, churn, (void *) (i + 1));
    for (int i = 0; i < THREADS; i++) {
        void *r;

        pthread_join(t[i], &r);
        bad += (long) r;
    }
    for (int i = 0; i < SLOTS; i++)
        xfree(exchange[i]);
    CHECK(bad == 0, "%ld blocks outside the region or corrupted", bad);
    CHECK(smheap_in_use() < ((size_t) 16 << 20), "%zu bytes still in use after every "
          "thread exited and every block was freed", smheap_in_use());
    return failures;
}

/* Allocations from pthread key destructors, which run after the heap's thread-exit
 * callback: they must work (from glibc) and free cleanly. */
static pthread_key_t late_key;
static _Atomic long late_in_region;

static void late_destructor(void *block)
{
    for (int i = 0; i < 100; i++) {
        void *p = xmalloc(64 + i);

        if (smheap_in_region(p))
            late_in_region++;
        xfree(p);
    }
    xfree(block);               /* allocated from the slice while the thread ran */
}

static void *short_lived(void *arg)
{
    void *p = xmalloc(1000);

    (void) arg;
    pthread_setspecific(late_key, p);
    xfree(xmalloc(100));
    return NULL;
}

static int test_thread_exit(void)
{
    pthread_key_create(&late_key, late_destructor);
    for (int round = 0; round < 50; round++) {
        pthread_t t[4];

        for (int i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, short_lived, NULL);
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
    }
    CHECK(late_in_region == 0, "%ld allocations after thread exit came from the slice",
          (long) late_in_region);
    return failures;
}

/* smheap_private_begin/_end: blocks allocated inside (nested too) come from glibc, those
 * after from the slice again; blocks of either kind are freed and reallocated anywhere. */
static int test_private(void)
{
    unsigned char *before = xmalloc(1000), *inside, *nested, *big, *after;

    CHECK(smheap_in_region(before), "a block before the scope is not in the region");
    fill(before, 1000, 3);
    smheap_private_begin();
    inside = xmalloc(1000);
    smheap_private_begin();
    nested = xmalloc(100);
    smheap_private_end();
    big = xmalloc(4 << 20);     /* the slice's large part */
    before = xrealloc(before, 2000);        /* a slice block grown inside: glibc's now */
    smheap_private_end();
    after = xmalloc(1000);
    CHECK(inside && !smheap_in_region(inside), "a block inside the scope is in the region");
    CHECK(nested && !smheap_in_region(nested), "a block of a nested scope is in the region");
    CHECK(big && !smheap_in_region(big), "a big block inside the scope is in the region");
    CHECK(before && !smheap_in_region(before) && intact(before, 1000, 3),
          "a slice block reallocated inside the scope: in the region, or its data lost");
    CHECK(after && smheap_in_region(after), "a block after the scope is not in the region");
    fill(inside, 1000, 4);
    inside = xrealloc(inside, 3000);        /* a glibc block grown outside stays glibc's */
    CHECK(inside && !smheap_in_region(inside) && intact(inside, 1000, 4),
          "a glibc block reallocated after the scope");
    xfree(inside);
    xfree(nested);
    xfree(big);
    xfree(before);
    xfree(after);
    return failures;
}

/* fork: the child allocates from glibc, frees of shared blocks are no-ops, realloc copies,
 * exec works; the parent's heap is untouched. */
static int test_fork(void)
{
    enum { N = 64 };
    unsigned char *mine[N];
    char **argv = xmalloc(2 * sizeof(char *));
    char *keep = strdup("kept across realloc in the child");
    int status;
    pid_t pid;

    argv[0] = strdup("/bin/true");
    argv[1] = NULL;
    for (int i = 0; i < N; i++) {
        mine[i] = xmalloc(256);
        fill(mine[i], 256, (unsigned) i);
    }
    pid = fork();
    if (pid == 0) {
        int bad = 0;
        char *p = xmalloc(256), *r;
        FILE *f = fopen("/proc/self/stat", "r");

        bad += smheap_in_region(p);
        memset(p, 0xEE, 256);
        for (int i = 0; i < N; i++)
            xfree(mine[i]);     /* must not reach the parent's slice */
        r = xrealloc(keep, 4096);
        bad += r == NULL || smheap_in_region(r) || strcmp(r, "kept across realloc in the child");
        bad += f == NULL;
        if (f)
            fclose(f);
        for (int i = 0; i < 1000; i++)
            bad += smheap_in_region(xmalloc(100));
        if (bad)
            _exit(10 + bad);
        execv(argv[0], argv);
        _exit(99);
    }
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "fork child failed (status %d)", status);
    for (int i = 0; i < N; i++) {
        CHECK(intact(mine[i], 256, (unsigned) i), "parent block %d changed", i);
        unsigned char *fresh = xmalloc(256);

        for (int j = 0; j < N; j++)
            CHECK(fresh != mine[j], "a new block aliases a live one");
        fill(fresh, 256, 77);
        CHECK(intact(mine[i], 256, (unsigned) i), "a new block overlaps a live one");
        xfree(fresh);
    }
    for (int i = 0; i < N; i++)
        xfree(mine[i]);
    CHECK(system("exit 3") == 3 << 8, "system() from a heap program");
    CHECK(strcmp(keep, "kept across realloc in the child") == 0, "parent's block changed");
    free(keep);
    free(argv[0]);
    free(argv);
    return failures;
}

/* A 16 MiB slice: what does not fit comes from glibc, counted, never NULL. */
static int test_exhaustion(void)
{
    enum { N = 64 };
    void *p[N];
    int shared = 0;

    CHECK(smheap_active(), "heap off: %s", smheap_off_reason());
    for (int i = 0; i < N; i++) {
        p[i] = xmalloc(1 << 20);
        CHECK(p[i] != NULL, "malloc returned NULL with glibc available");
        if (p[i])
            memset(p[i], i, 1 << 20);
        shared += smheap_in_region(p[i]);
    }
    CHECK(shared > 0 && shared < N, "%d of %d MiB blocks in a 16 MiB slice", shared, N);
    CHECK(smheap_counter_total(SMHEAP_GLIBC_FULL) >= (uint64_t) (N - shared),
          "glibc-full counter %llu", (unsigned long long) smheap_counter_total(SMHEAP_GLIBC_FULL));
    for (int i = 0; i < N; i++)
        xfree(p[i]);
    p[0] = xmalloc(1 << 20);
    CHECK(smheap_in_region(p[0]), "freed slice memory is reused");
    xfree(p[0]);
    return failures;
}

/* Big blocks, run with MPIR_CVAR_CH3_SMHEAP_RETAIN=256M: a freed block is reused without
 * a trip through tmpfs; realloc grows in place; freed memory beyond the bound (or beyond
 * a sixteenth of it when fresh pages were needed anyway) goes back to /dev/shm. */
static int test_big_blocks(void)
{
    const size_t mib = (size_t) 1 << 20;
    size_t committed;
    char *p, *q;
    int moves = 0;

    CHECK(smheap_active(), "heap off: %s", smheap_off_reason());
    p = xmalloc(64 * mib);
    fill((unsigned char *) p, 64 * mib, 1);
    xfree(p);
    committed = smheap_committed();
    q = xmalloc(64 * mib);
    CHECK(((uintptr_t) q & ~(uintptr_t) 4095) == ((uintptr_t) p & ~(uintptr_t) 4095),
          "a freed 64 MiB block was not reused (%p, then %p)", (void *) p, (void *) q);
    CHECK(smheap_committed() < committed + mib, "reusing a 64 MiB block committed %zd bytes",
          (ssize_t) (smheap_committed() - committed));
    xfree(q);

    p = NULL;
    for (size_t size = 16384; size <= 64 * mib; size += 16384) {
        q = xrealloc(p, size);
        CHECK(q != NULL, "realloc to %zu failed", size);
        if (p != NULL && q != p && size > 2 * mib)
            moves++;
        q[size - 1] = 1;
        p = q;
    }
    CHECK(moves == 0, "a block grown by realloc moved %d times past 2 MiB", moves);
    xfree(p);

    /* Growing arrays: once the freed ones cannot hold the next, at most 16 MiB of them
     * stay (a sixteenth of the bound) beside the new one. */
    for (size_t size = 4 * mib; size <= 256 * mib; size *= 2) {
        p = xmalloc(size);
        memset(p, 1, size);
        xfree(p);
    }
    CHECK(smheap_committed() <= 256 * mib + 16 * mib + 8 * mib, "after growing arrays up to "
          "256 MiB: %zu MiB committed", smheap_committed() / mib);

    /* Above the bound of 256 MiB, freed blocks go back at once. */
    {
        char *blocks[6];

        for (int i = 0; i < 6; i++) {
            blocks[i] = xmalloc(64 * mib);
            memset(blocks[i], i, 64 * mib);
        }
        for (int i = 0; i < 6; i++)
            xfree(blocks[i]);
        CHECK(smheap_committed() <= 256 * mib + 8 * mib, "384 MiB freed with a 256 MiB bound: "
              "%zu MiB still committed", smheap_committed() / mib);
    }
    return failures;
}

/* Heap off (ENABLE=0, malformed settings, /dev/shm too small): all from glibc, a reason. */
static int test_off(void)
{
    void *p = xmalloc(1000);

    CHECK(!smheap_active() && !smheap_in_region(p), "heap should be off");
    CHECK(smheap_counter_total(SMHEAP_GLIBC_OFF) > 0, "glibc-off not counted");
    printf("reason: %s\n", smheap_off_reason());
    if (smheap_config_error())
        printf("config error: %s\n", smheap_config_error());
    xfree(p);
    return failures;
}

static int test_selftest(void)
{
    char why[256];

    CHECK(smheap_selftest(why, sizeof(why)) == 0, "self-test: %s", why);
    return failures;
}

/* Two processes of one "job" (children of this one, as Hydra's ranks are children of its
 * proxy): rank 0 writes, rank 1 reads by raw pointer. */
static int test_two_ranks(const char *self)
{
    int fds[2];
    pid_t pid[2];
    int status;

    if (pipe(fds) != 0)
        return 1;
    for (int r = 0; r < 2; r++) {
        pid[r] = fork();
        if (pid[r] == 0) {
            char rank[8], fd[8];

            snprintf(rank, sizeof(rank), "%d", r);
            snprintf(fd, sizeof(fd), "%d", r ? fds[0] : fds[1]);
            setenv("MPI_LOCALRANKID", rank, 1);
            setenv("MPI_LOCALNRANKS", "2", 1);
            execl(self, self, r ? "reader" : "writer", fd, (char *) NULL);
            _exit(99);
        }
    }
    close(fds[0]);
    close(fds[1]);
    for (int r = 0; r < 2; r++)
        CHECK(waitpid(pid[r], &status, 0) == pid[r] && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0, "rank %d failed (status %d)", r, status);
    return failures;
}

static int rank_writer(int fd)
{
    char *p = xmalloc(64 << 20);

    CHECK(p && smheap_in_region(p), "writer's block not shared: %s", smheap_off_reason());
    for (size_t i = 0; i < (64 << 20); i++)
        p[i] = (char) (i % 251);
    CHECK(write(fd, &p, sizeof(p)) == sizeof(p), "write");
    sleep(1);           /* keep the block alive while the reader checks */
    return failures;
}

static int rank_reader(int fd)
{
    char *p;

    CHECK(read(fd, &p, sizeof(p)) == sizeof(p), "read");
    CHECK(smheap_active() && smheap_in_region(p), "reader: %s", smheap_off_reason());
    for (size_t i = 0; i < (64 << 20); i++)
        if (p[i] != (char) (i % 251)) {
            CHECK(0, "byte %zu differs", i);
            break;
        }
    return failures;
}

/* The job key the region derives for a job launched by process owner (uid, pid, start
 * time), as the heap computes it; 0 on success. */
static int job_key(pid_t owner, int singleton, char *key, size_t len)
{
    char path[64], stat[1024], *p;
    unsigned long long start = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int) owner);
    f = fopen(path, "r");
    if (f == NULL || fgets(stat, sizeof(stat), f) == NULL) {
        if (f != NULL)
            fclose(f);
        return -1;
    }
    fclose(f);
    p = strrchr(stat, ')');
    for (int field = 2; p != NULL && field < 22; field++)
        p = strchr(p + 1, ' ');
    if (p == NULL || sscanf(p + 1, "%llu", &start) != 1)
        return -1;
    snprintf(key, len, "%u-%d-%llu%s", (unsigned) geteuid(), (int) owner, start,
             singleton ? "-s" : "");
    return 0;
}

/* A creator that is slow to publish its file (descheduled on a loaded node): this process
 * binds the job's rendezvous socket as rank 0 would and never accepts; rank 1, started as
 * its child, must wait without filling the socket's queue, where a full queue would block
 * its connect() for good.  One connection after two seconds of waiting. */
static int test_slow_creator(const char *self)
{
    struct sockaddr_un a;
    char key[96];
    socklen_t len;
    int s, c, connections = 0, status;
    pid_t pid;

    CHECK(job_key(getpid(), 0, key, sizeof(key)) == 0, "cannot compute the job key");
    memset(&a, 0, sizeof(a));
    a.sun_family = AF_UNIX;
    snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "smheap-%s", key);
    len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + strlen(a.sun_path + 1));
    s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    CHECK(s >= 0 && bind(s, (struct sockaddr *) &a, len) == 0 && listen(s, SOMAXCONN) == 0,
          "cannot bind @%s (%s)", a.sun_path + 1, strerror(errno));
    pid = fork();
    if (pid == 0) {
        setenv("MPI_LOCALRANKID", "1", 1);
        setenv("MPI_LOCALNRANKS", "2", 1);
        execl(self, self, "family", (char *) NULL);
        _exit(99);
    }
    sleep(2);
    while ((c = accept(s, NULL, NULL)) >= 0) {
        connections++;
        close(c);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    close(s);
    CHECK(connections == 1, "rank 1 connected %d times while the creator was busy", connections);
    return failures;
}

/* A file in /dev/shm under the name this process's heap will use, that this job did not
 * make: the heap must stay off and say so, never share it.  The name is computed as the
 * region does (uid, the job's pid, its start time) in a child that then execs the test:
 * kind "singleton" (the child's own name), or "joiner-junk" and "joiner-mode" (rank 1 of 2,
 * named after this process, with garbage in the file or a mode other than 0600). */
static int test_foreign_file(const char *self, const char *kind)
{
    int singleton = !strcmp(kind, "singleton"), mode = strcmp(kind, "joiner-mode") ? 0600 : 0644;
    int status;
    pid_t pid = fork();

    if (pid == 0) {
        pid_t owner = singleton ? getpid() : getppid();
        char key[96], path[128];
        int fd;

        if (job_key(owner, singleton, key, sizeof(key)) != 0)
            _exit(90);
        snprintf(path, sizeof(path), "/dev/shm/smheap-%s", key);
        fd = open(path, O_CREAT | O_EXCL | O_RDWR, mode);
        if (fd < 0 || fchmod(fd, mode) != 0 || ftruncate(fd, 1 << 20) != 0 ||
            write(fd, "not a heap, not a heap, not a heap", 34) != 34)
            _exit(92);
        close(fd);
        if (!singleton) {
            setenv("MPI_LOCALRANKID", "1", 1);
            setenv("MPI_LOCALNRANKS", "2", 1);
        }
        execl(self, self, "off-foreign", path, (char *) NULL);
        _exit(94);
    }
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "foreign-file child failed (status %d)", status);
    return failures;
}

static int test_off_foreign(const char *path)
{
    int rc = test_off();

    CHECK(unlink(path) == 0, "the foreign file %s must be left alone", path);
    return rc;
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    int rc;

    if (!strcmp(c, "family"))
        rc = test_family();
    else if (!strcmp(c, "alignments"))
        rc = test_alignments();
    else if (!strcmp(c, "threads"))
        rc = test_threads();
    else if (!strcmp(c, "thread-exit"))
        rc = test_thread_exit();
    else if (!strcmp(c, "fork"))
        rc = test_fork();
    else if (!strcmp(c, "private"))
        rc = test_private();
    else if (!strcmp(c, "exhaustion"))
        rc = test_exhaustion();
    else if (!strcmp(c, "big-blocks"))
        rc = test_big_blocks();
    else if (!strcmp(c, "off"))
        rc = test_off();
    else if (!strcmp(c, "selftest"))
        rc = test_selftest();
    else if (!strcmp(c, "foreign-file") && argc > 2)
        rc = test_foreign_file(argv[0], argv[2]);
    else if (!strcmp(c, "off-foreign") && argc > 2)
        rc = test_off_foreign(argv[2]);
    else if (!strcmp(c, "slow-creator"))
        rc = test_slow_creator(argv[0]);
    else if (!strcmp(c, "two-ranks"))
        rc = test_two_ranks(argv[0]);
    else if (!strcmp(c, "writer") && argc > 2)
        rc = rank_writer(atoi(argv[2]));
    else if (!strcmp(c, "reader") && argc > 2)
        rc = rank_reader(atoi(argv[2]));
    else {
        fprintf(stderr, "usage: heap_test family|alignments|threads|thread-exit|private|fork|"
                "exhaustion|big-blocks|off|selftest|two-ranks|slow-creator\n");
        return 2;
    }
    return rc ? 1 : 0;
}

/*
 * Unit test of libsmheap_preload.so (src/heap/smheap_preload.c), run with it preloaded (the
 * program starts itself again with LD_PRELOAD when it is not).  A stand-in heap counts the
 * calls that reach it and serves them from glibc.
 *   - a heap attaches while the program's libraries load (here: the program's preinit
 *     function, which runs before main, as a libmpi's constructor does); before it, the
 *     family is glibc's: nothing reaches the stand-in;
 *   - after, every member of the family reaches it, including free of a block glibc served
 *     before (the heap routes by address), and the forwarders the library returns are what
 *     the program's malloc resolves to (what the heap's self-test compares);
 *   - a second heap cannot take the family over;
 *   - a heap that comes once main has started (a libmpi loaded with dlopen) attaches while
 *     other threads allocate, reallocate and free: every block goes back to whoever served
 *     it (the stand-in's header tells), and every member reaches the heap afterwards.
 */

#define _GNU_SOURCE
#include "smheap_family.h"
#include "smheap_glibc.h"
#include "unit_check.h"

#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { M_MALLOC, M_FREE, M_CALLOC, M_REALLOC, M_MEMALIGN, M_ALIGNED_ALLOC, M_POSIX_MEMALIGN,
    M_VALLOC, M_PVALLOC, M_USABLE_SIZE, MEMBERS };
static const char *const member_name[MEMBERS] = { "malloc", "free", "calloc", "realloc",
    "memalign", "aligned_alloc", "posix_memalign", "valloc", "pvalloc", "malloc_usable_size" };
static _Atomic long calls[MEMBERS];

static void counted(int member)
{
    atomic_fetch_add_explicit(&calls[member], 1, memory_order_relaxed);
}

/* The stand-in's own blocks carry a header, so that glibc aborts if it is handed one
 * (as it would be, were a thread to see glibc's free with the stand-in's malloc), and the
 * stand-in tells them from glibc's, as the heap does by address. */
#define STAND_IN_MAGIC 0x5ea7ed0b10c4a11dULL
#define HEADER 16

static int stand_ins(void *p)
{
    return p != NULL && ((unsigned long long *) p)[-2] == STAND_IN_MAGIC;
}

static void *stand_in_block(size_t size)
{
    unsigned long long *b = __libc_malloc(size + HEADER);

    if (b == NULL)
        return NULL;
    b[0] = STAND_IN_MAGIC;
    b[1] = size;
    return (char *) b + HEADER;
}

static void *stand_in_malloc(size_t size)
{
    counted(M_MALLOC);
    return stand_in_block(size);
}

static void stand_in_free(void *p)
{
    counted(M_FREE);
    if (stand_ins(p)) {
        ((unsigned long long *) p)[-2] = 0;
        __libc_free((char *) p - HEADER);
    } else {
        __libc_free(p);
    }
}

static void *stand_in_realloc(void *p, size_t size)
{
    void *q;
    size_t old;

    counted(M_REALLOC);
    if (!stand_ins(p))
        return __libc_realloc(p, size);
    old = ((unsigned long long *) p)[-1];
    q = stand_in_block(size);
    if (q != NULL) {
        memcpy(q, p, old < size ? old : size);
        ((unsigned long long *) p)[-2] = 0;
        __libc_free((char *) p - HEADER);
    }
    return q;
}

static void *stand_in_calloc(size_t n, size_t size)
{
    counted(M_CALLOC);
    return __libc_calloc(n, size);
}

static void *stand_in_memalign(size_t alignment, size_t size)
{
    counted(M_MEMALIGN);
    return __libc_memalign(alignment, size);
}

static void *stand_in_aligned_alloc(size_t alignment, size_t size)
{
    counted(M_ALIGNED_ALLOC);
    return __libc_memalign(alignment, size);
}

static int stand_in_posix_memalign(void **result, size_t alignment, size_t size)
{
    counted(M_POSIX_MEMALIGN);
    *result = __libc_memalign(alignment, size);
    return *result != NULL ? 0 : 12;
}

static void *stand_in_valloc(size_t size)
{
    counted(M_VALLOC);
    return __libc_valloc(size);
}

static void *stand_in_pvalloc(size_t size)
{
    counted(M_PVALLOC);
    return __libc_pvalloc(size);
}

static size_t stand_in_usable_size(void *p)
{
    counted(M_USABLE_SIZE);
    return p != NULL ? 1 : 0;   /* glibc's would never say 1 for a block of 100 bytes */
}

static const struct smheap_family stand_in = {
    stand_in_malloc, stand_in_free, stand_in_calloc, stand_in_realloc, stand_in_memalign,
    stand_in_aligned_alloc, stand_in_posix_memalign, stand_in_valloc, stand_in_pvalloc,
    stand_in_usable_size
};

/* Every member of the family once.  Each block goes through a volatile pointer, so that
 * the compiler neither drops an allocation it sees freed nor calls glibc's directly. */
static void *volatile kept;

static void keep_and_free(void *p)
{
    kept = p;
    CHECK(kept != NULL);
    free(kept);
}

static void call_every_member(void)
{
    void *p = malloc(100), *q = NULL;

    kept = p;
    CHECK(malloc_usable_size(kept) > 0);
    keep_and_free(realloc(kept, 200));
    keep_and_free(calloc(3, 40));
    keep_and_free(memalign(64, 100));
    keep_and_free(aligned_alloc(64, 128));
    CHECK(posix_memalign(&q, 64, 100) == 0);
    keep_and_free(q);
    keep_and_free(valloc(100));
    keep_and_free(pvalloc(100));
}

static void check_all_calls(int expected_at_least, const char *when)
{
    for (int m = 0; m < MEMBERS; m++) {
        long n = atomic_load(&calls[m]);

        if (expected_at_least == 0 ? n != 0 : n < expected_at_least) {
            fprintf(stderr, "%s: %s reached the heap %ld times\n", when, member_name[m], n);
            failures++;
        }
    }
}

static _Atomic int stop;

/* Allocates and frees while a heap tries to attach: a block must always go back to whoever
 * served it (glibc aborts if handed one of the stand-in's). */
static void *churn(void *arg)
{
    (void) arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        void *p = malloc(48);

        p = realloc(p, 4096);
        free(p);
    }
    return NULL;
}

static smheap_preload_attach_fn *find_attach(void)
{
    return (smheap_preload_attach_fn *) dlsym(RTLD_DEFAULT, SMHEAP_PRELOAD_ATTACH);
}

/* Before main, as a libmpi's constructor: glibc's family first, then the stand-in's. */
static const struct smheap_forwarders *mine;
static long calls_before_attach[MEMBERS];
static void *early;

static int late;     /* PRELOAD_TEST_LATE: this run tries to attach in main instead */

static void attach_before_main(int argc, char **argv, char **envp)
{
    smheap_preload_attach_fn *attach = find_attach();

    (void) argc, (void) argv;
    for (char **e = envp; *e != NULL; e++)  /* getenv does not work this early */
        late |= strncmp(*e, "PRELOAD_TEST_LATE=", 18) == 0;
    if (attach == NULL || late)
        return;
    call_every_member();
    for (int m = 0; m < MEMBERS; m++)
        calls_before_attach[m] = atomic_load(&calls[m]);
    early = malloc(1000);
    mine = attach(&stand_in);
}
__attribute__((section(".preinit_array"), used))
static void (*const preinit)(int, char **, char **) = attach_before_main;

static void start_again(char **argv, const char *late)
{
    if (getenv("PRELOAD_TEST_AGAIN") != NULL) {
        fprintf(stderr, "preloading %s did not define %s\n", PRELOAD_LIB,
                SMHEAP_PRELOAD_ATTACH);
        exit(1);
    }
    setenv("PRELOAD_TEST_AGAIN", "1", 1);
    setenv("LD_PRELOAD", PRELOAD_LIB, 1);
    if (late != NULL)
        setenv("PRELOAD_TEST_LATE", late, 1);
    execv("/proc/self/exe", argv);
    perror("execv");
    exit(1);
}

/* A heap that comes after main started, while threads allocate, takes the family. */
static int late_attach(void)
{
    pthread_t threads[2];

    for (int t = 0; t < 2; t++)
        CHECK(pthread_create(&threads[t], NULL, churn, NULL) == 0);
    usleep(20000);
    check_all_calls(0, "before a heap came");
    CHECK(find_attach()(&stand_in) != NULL);
    usleep(20000);
    atomic_store(&stop, 1);
    for (int t = 0; t < 2; t++)
        pthread_join(threads[t], NULL);
    CHECK(atomic_load(&calls[M_MALLOC]) > 0 && atomic_load(&calls[M_FREE]) > 0);
    memset(calls, 0, sizeof(calls));
    call_every_member();
    check_all_calls(1, "after a heap came late");
    CHECK(find_attach()(&stand_in) == NULL);
    printf("preload_test (late attach): %s\n", failures ? "FAILED" : "passed");
    return failures != 0;
}

int main(int argc, char **argv)
{
    (void) argc;
    if (find_attach() == NULL)
        start_again(argv, NULL);
    if (late)
        return late_attach();

    for (int m = 0; m < MEMBERS; m++)
        if (calls_before_attach[m] != 0) {
            fprintf(stderr, "before a heap attached: %s reached it\n", member_name[m]);
            failures++;
        }
    CHECK(mine != NULL);
    if (mine != NULL) {
        void *(*volatile my_malloc)(size_t) = malloc;
        void (*volatile my_free)(void *) = free;
        void *(*volatile my_calloc)(size_t, size_t) = calloc;
        void *(*volatile my_realloc)(void *, size_t) = realloc;
        void *(*volatile my_memalign)(size_t, size_t) = memalign;

        CHECK(mine->malloc_fn == my_malloc && mine->free_fn == my_free &&
              mine->calloc_fn == my_calloc && mine->realloc_fn == my_realloc &&
              mine->memalign_fn == my_memalign);
    }
    memset(calls, 0, sizeof(calls));
    call_every_member();
    check_all_calls(1, "after the heap attached");
    CHECK(malloc_usable_size(early) == 1);
    free(early);                /* served by glibc, freed through the heap's family */
    CHECK(find_attach()(&stand_in) == NULL);
    printf("preload_test: %s\n", failures ? "FAILED" : "passed");
    if (failures)
        return 1;
    fflush(stdout);
    unsetenv("PRELOAD_TEST_AGAIN");
    start_again(argv, "1");     /* the late case, in a fresh process */
    return 1;
}

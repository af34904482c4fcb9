/*
 * A program that does not link libmpi and loads it with dlopen, as Python does: it loads
 * dlopen_module (built against the install, as mpi4py's extension module is), which runs
 * the MPI part.  mpiexec's preloaded family takes the heap's when libmpi loads, while
 * this program's threads allocate, reallocate and free blocks, each other's too: every
 * block must keep its contents and go back to whoever served it (glibc aborts if handed a
 * block of the slice).  One more thread waits until MPI is up and then frees blocks the
 * others made, so that its first call into the heap is a free.  The module is closed
 * after MPI_Finalize, while the threads go on: libmpi must stay loaded.
 *
 * Built as Debian builds python3: a non-PIE executable (-no-pie) that takes malloc's
 * address, so that its PLT entry is the address of malloc every library sees.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SLOTS 256
#define CHURNERS 3
#define BIG (4 << 20)

/* A block: its size and seed, then bytes made from the seed. */
struct block {
    size_t size;
    unsigned seed;
    unsigned char data[];
};

static void *(*volatile host_malloc)(size_t);
static struct block *_Atomic slots[SLOTS];
static _Atomic int stop, mpi_up;
static _Atomic long errors;

static void fill(struct block *b, size_t size, unsigned seed)
{
    b->size = size;
    b->seed = seed;
    memset(b->data, (unsigned char) seed, size);
}

/* The first n bytes of b's data. */
static void check_bytes(const struct block *b, size_t n, const char *when)
{
    for (size_t i = 0; i < n; i++)
        if (b->data[i] != (unsigned char) b->seed) {
            if (atomic_fetch_add(&errors, 1) < 5)
                printf("%s: byte %zu of a block of %zu differs\n", when, i, b->size);
            return;
        }
}

static void check(const struct block *b, const char *when)
{
    check_bytes(b, b->size, when);
}

/* Mostly small blocks, some of tens of KiB, a few of MiBs (the heap's large part). */
static size_t some_size(unsigned *r)
{
    unsigned x = rand_r(r);

    return x % 64 == 0 ? (1 << 20) + x % (2 << 20) : x % 8 == 0 ? 4096 + x % 65536 : 16 + x % 1024;
}

static void take_and_free(unsigned slot)
{
    struct block *b = atomic_exchange(&slots[slot % SLOTS], NULL);

    if (b != NULL) {
        check(b, "a block freed");
        free(b);
    }
}

static void *churn(void *arg)
{
    unsigned r = (unsigned) (uintptr_t) arg;

    while (!atomic_load(&stop)) {
        size_t size = some_size(&r);
        struct block *b = host_malloc(sizeof(*b) + size), *old;

        if (b == NULL)
            continue;
        fill(b, size, rand_r(&r));
        if (rand_r(&r) % 4 == 0) {
            struct block *c;
            size_t old = size;

            size = some_size(&r);
            c = realloc(b, sizeof(*b) + size);
            if (c == NULL) {
                free(b);
                continue;
            }
            check_bytes(c, old < size ? old : size, "a block reallocated");
            b = c;
            fill(b, size, rand_r(&r));
        }
        old = atomic_exchange(&slots[rand_r(&r) % SLOTS], b);
        if (old != NULL) {
            check(old, "a block freed");
            free(old);
        }
    }
    return NULL;
}

/* Its first call into the heap, once MPI is up, is a free. */
static void *free_first(void *arg)
{
    (void) arg;
    while (!atomic_load(&mpi_up))
        usleep(1000);
    for (unsigned i = 0; i < SLOTS; i += 2)
        take_and_free(i);
    return churn((void *) 77);
}

static long host_check(void)
{
    atomic_store(&mpi_up, 1);
    usleep(200000);             /* the threads go on while MPI runs */
    return atomic_load(&errors);
}

typedef int module_run_fn(int, char **, char *, long (*)(void), int *);

int main(int argc, char **argv)
{
    pthread_t threads[CHURNERS + 1];
    char *early = malloc(BIG);  /* glibc's: libmpi is not loaded yet */
    void *module;
    module_run_fn *run;
    int failed, rank = -1;

    host_malloc = malloc;       /* in code: an address constant, so the PLT entry is canonical */
    for (int t = 0; t < CHURNERS; t++)
        pthread_create(&threads[t], NULL, churn, (void *) (uintptr_t) (t + 1));
    pthread_create(&threads[CHURNERS], NULL, free_first, NULL);
    usleep(50000);
    module = dlopen(MODULE, RTLD_NOW | RTLD_GLOBAL);
    if (module == NULL || (run = (module_run_fn *) dlsym(module, "dlopen_module_run")) == NULL) {
        printf("dlopen: %s\n", dlerror());
        return 1;
    }
    failed = run(argc, argv, early, host_check, &rank);
    dlclose(module);            /* libmpi must stay: the threads' blocks and calls need it */
    atomic_store(&mpi_up, 1);
    usleep(100000);
    atomic_store(&stop, 1);
    for (int t = 0; t <= CHURNERS; t++)
        pthread_join(threads[t], NULL);
    for (unsigned i = 0; i < SLOTS; i++)
        take_and_free(i);
    free(early);
    if (atomic_load(&errors) != 0) {
        printf("%ld blocks changed under their owner\n", atomic_load(&errors));
        return 1;
    }
    if (failed == 0 && rank == 0)
        printf(" No Errors\n");
    return failed != 0;
}

/*
 * smheap -- the malloc family for a program whose own link order puts libc's first:
 * libsmheap_preload.so, which mpiexec preloads into the processes it starts.
 *
 * Why: the dynamic linker binds malloc to the first definition in load order.  A program
 * that reaches libmpi only through another library (ScaLAPACK, PETSc, HDF5) lists libc
 * before it, and one that loads libmpi with dlopen (Python) has bound malloc before libmpi
 * exists; either way the heap in libmpi is never called.  A preloaded library comes first
 * whatever the program's link order.
 *
 * It holds no allocator and pulls in nothing: until a heap attaches (libmpi's constructor
 * calls smheap_preload_attach, at start-up or inside dlopen), every call goes to glibc, so
 * the shells, wrappers and tools that mpiexec also starts run as without it.  Once
 * attached, every call goes to the heap's family, which routes blocks by address: memory
 * glibc served before is still freed by glibc.
 */

#define _GNU_SOURCE
#include "smheap_family.h"
#include "smheap_glibc.h"

#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>

#define PUBLIC __attribute__((visibility("default")))

/* --- glibc's family, for the time before a heap attaches --- */

static int glibc_posix_memalign(void **result, size_t alignment, size_t size)
{
    void *p;
    int saved = errno;

    if (alignment == 0 || (alignment & (alignment - 1)) || alignment % sizeof(void *))
        return EINVAL;
    p = __libc_memalign(alignment, size);
    if (p == NULL) {
        errno = saved;
        return ENOMEM;
    }
    *result = p;
    return 0;
}

static const struct smheap_family glibc_family = {
    .malloc_fn = __libc_malloc,
    .free_fn = __libc_free,
    .calloc_fn = __libc_calloc,
    .realloc_fn = __libc_realloc,
    .memalign_fn = __libc_memalign,
    .aligned_alloc_fn = __libc_memalign,
    .posix_memalign_fn = glibc_posix_memalign,
    .valloc_fn = __libc_valloc,
    .pvalloc_fn = __libc_pvalloc,
    .malloc_usable_size_fn = smheap_glibc_usable_size,
};

/* One pointer, so a call sees glibc's family or the heap's whole, never half of each. */
static const struct smheap_family *_Atomic family = &glibc_family;

static inline const struct smheap_family *current(void)
{
    return atomic_load_explicit(&family, memory_order_acquire);
}

PUBLIC void *malloc(size_t size)
{
    return current()->malloc_fn(size);
}

PUBLIC void free(void *p)
{
    current()->free_fn(p);
}

PUBLIC void *calloc(size_t n, size_t size)
{
    return current()->calloc_fn(n, size);
}

PUBLIC void *realloc(void *p, size_t size)
{
    return current()->realloc_fn(p, size);
}

PUBLIC void *memalign(size_t alignment, size_t size)
{
    return current()->memalign_fn(alignment, size);
}

PUBLIC void *aligned_alloc(size_t alignment, size_t size)
{
    return current()->aligned_alloc_fn(alignment, size);
}

PUBLIC int posix_memalign(void **result, size_t alignment, size_t size)
{
    return current()->posix_memalign_fn(result, alignment, size);
}

PUBLIC void *valloc(size_t size)
{
    return current()->valloc_fn(size);
}

PUBLIC void *pvalloc(size_t size)
{
    return current()->pvalloc_fn(size);
}

PUBLIC size_t malloc_usable_size(void *p)
{
    return current()->malloc_usable_size_fn(p);
}

/* The definitions above as bound inside this library, for the heap's self-test. */
#define OWN(name) SMHEAP_BOUND_HERE(preloaded_##name, name)
OWN(malloc);
OWN(free);
OWN(calloc);
OWN(realloc);
OWN(memalign);

PUBLIC const struct smheap_forwarders *smheap_preload_attach(const struct smheap_family *heap)
{
    static const struct smheap_forwarders mine = {
        preloaded_malloc, preloaded_free, preloaded_calloc, preloaded_realloc,
        preloaded_memalign
    };
    const struct smheap_family *expected = &glibc_family;

    /* The first heap keeps the family: a second libmpi in one process is not one the
     * first can route for.  A heap may come after main started (a libmpi loaded with
     * dlopen) while other threads allocate: it routes every block by address, so what
     * glibc served before still goes back to glibc. */
    if (!atomic_compare_exchange_strong(&family, &expected, heap))
        return NULL;
    return &mine;
}

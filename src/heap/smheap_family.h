/*
 * smheap -- the malloc family exported a second time, for the libraries that load ahead of
 * the heap's and forward the family to it.
 *
 * Why: the dynamic linker binds malloc to the first definition in load order, and the heap
 * (in libmpi) is not always first.  Two libraries forward:
 * - libmpifort (smheap_forward.c): a fixed-form Fortran program calls only libmpifort, so
 *   when it is linked with --as-needed (gcc's default on Debian) libmpi is not among the
 *   program's own dependencies and loads after libc; libmpifort loads before libc.
 * - libsmheap_preload.so (smheap_preload.c), which mpiexec preloads: a program that reaches
 *   libmpi through another library (ScaLAPACK) or loads it with dlopen (Python).  It cannot
 *   link libmpi (it is preloaded into every process mpiexec starts, shells included), so
 *   the heap hands it its family (smheap_preload_attach) when libmpi loads.
 */
#ifndef SMHEAP_FAMILY_H_INCLUDED
#define SMHEAP_FAMILY_H_INCLUDED

#include <stddef.h>

void *smheap_family_malloc(size_t size);
void smheap_family_free(void *p);
void *smheap_family_calloc(size_t n, size_t size);
void *smheap_family_realloc(void *p, size_t size);
void *smheap_family_memalign(size_t alignment, size_t size);
void *smheap_family_aligned_alloc(size_t alignment, size_t size);
int smheap_family_posix_memalign(void **result, size_t alignment, size_t size);
void *smheap_family_valloc(size_t size);
void *smheap_family_pvalloc(size_t size);
size_t smheap_family_malloc_usable_size(void *p);

/* here: name's definition in this library, under a hidden name (a reference to name
 * itself may resolve to another library's). */
#define SMHEAP_BOUND_HERE(here, name) \
    extern __typeof(name) here __attribute__((alias(#name), visibility("hidden"), copy(name)))

/* The whole family, as the preloaded library calls it. */
struct smheap_family {
    void *(*malloc_fn)(size_t);
    void (*free_fn)(void *);
    void *(*calloc_fn)(size_t, size_t);
    void *(*realloc_fn)(void *, size_t);
    void *(*memalign_fn)(size_t, size_t);
    void *(*aligned_alloc_fn)(size_t, size_t);
    int (*posix_memalign_fn)(void **, size_t, size_t);
    void *(*valloc_fn)(size_t);
    void *(*pvalloc_fn)(size_t);
    size_t (*malloc_usable_size_fn)(void *);
};

/* A forwarding library's own definitions of what smheap_selftest checks, so that it takes
 * them for the heap's (libmpifort's constructor passes them; the preloaded library returns
 * them from smheap_preload_attach). */
struct smheap_forwarders {
    void *(*malloc_fn)(size_t);
    void (*free_fn)(void *);
    void *(*calloc_fn)(size_t, size_t);
    void *(*realloc_fn)(void *, size_t);
    void *(*memalign_fn)(size_t, size_t);
};
void smheap_family_forwarded(const struct smheap_forwarders *forwarders);

/* Defined by libsmheap_preload.so: from now on its family calls heap's.  Returns its own
 * definitions, or NULL if another heap attached first.  The heap looks it up with dlsym
 * when it loads (at start-up, or inside the dlopen of libmpi); the name is also what tells
 * that the library was preloaded. */
#define SMHEAP_PRELOAD_ATTACH "smheap_preload_attach"
typedef const struct smheap_forwarders *smheap_preload_attach_fn(const struct smheap_family *heap);
smheap_preload_attach_fn smheap_preload_attach;

#endif /* SMHEAP_FAMILY_H_INCLUDED */

/*
 * smheap -- the malloc family exported a second time, for a library that loads ahead of
 * the heap's and forwards the family to it (smheap_forward.c, built into libmpifort).
 *
 * Why: a fixed-form Fortran program calls only libmpifort, so when it is linked with
 * --as-needed (gcc's default on Debian) libmpi is not among the program's own
 * dependencies; the dynamic linker then loads it after libc and finds libc's malloc first.
 * libmpifort is loaded before libc, so the family it defines is the one in use.
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

/* A forwarding library's own definitions of what smheap_selftest checks, so that it takes
 * them for the heap's: the library's constructor passes them (one forwarding library). */
struct smheap_forwarders {
    void *(*malloc_fn)(size_t);
    void (*free_fn)(void *);
    void *(*calloc_fn)(size_t, size_t);
    void *(*realloc_fn)(void *, size_t);
    void *(*memalign_fn)(size_t, size_t);
};
void smheap_family_forwarded(const struct smheap_forwarders *forwarders);

#endif /* SMHEAP_FAMILY_H_INCLUDED */

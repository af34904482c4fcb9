/*
 * smheap -- glibc's own allocator, for the blocks the heap does not serve: the __libc_
 * names glibc exports beside the malloc family that programs may replace, and its
 * malloc_usable_size, which has no such name.
 */
#ifndef SMHEAP_GLIBC_H_INCLUDED
#define SMHEAP_GLIBC_H_INCLUDED

#include <stddef.h>

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t alignment, size_t size);
void *__libc_valloc(size_t size);
void *__libc_pvalloc(size_t size);
void __libc_free(void *p);

/* glibc's malloc_usable_size, asked of libc itself: the next definition after the caller's
 * library need not be libc's (libc loads ahead of libmpi in a Fortran program, and libmpi
 * comes after the preloaded library). */
size_t smheap_glibc_usable_size(void *p) __attribute__((visibility("hidden")));

#endif /* SMHEAP_GLIBC_H_INCLUDED */

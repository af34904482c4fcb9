/*
 * smheap -- the engine: jemalloc, embedded in libmpi under its own prefix, allocating only
 * from this rank's slice of the region.
 */
#ifndef SMHEAP_ENGINE_H_INCLUDED
#define SMHEAP_ENGINE_H_INCLUDED

#include <stddef.h>
#include "smheap_region.h"

/* Create the jemalloc arena that serves this rank's slice.  0, or -1 with why set. */
int smheap_engine_start(const struct smheap_region *region, char *why, size_t why_len);

/* A block of at least size bytes aligned to alignment (0: the default), zeroed if asked,
 * its usable size in *usable; NULL when the slice (or tmpfs) is full, or when the calling
 * thread has already run its thread-exit handlers and must use the private heap. */
void *smheap_engine_alloc(size_t size, size_t alignment, int zero, size_t * usable);

/* Resize in place or move within the slice; NULL (p untouched) if the slice is full. */
void *smheap_engine_resize(void *p, size_t size);

/* Free a block of the slice; returns its usable size. */
size_t smheap_engine_free(void *p);
size_t smheap_engine_usable_size(const void *p);

/* 1 if the calling thread has run its thread-exit handlers (it allocates from glibc). */
int smheap_engine_thread_exited(void);

#endif /* SMHEAP_ENGINE_H_INCLUDED */

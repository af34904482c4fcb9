/*
 * smheap -- the engine: jemalloc, embedded in libmpi under its own prefix, allocating only
 * from this rank's slice of the region.
 */
#ifndef SMHEAP_ENGINE_H_INCLUDED
#define SMHEAP_ENGINE_H_INCLUDED

#include <stddef.h>
#include "smheap_region.h"

/* Blocks larger than this skip the thread caches: freeing one adds to the idle memory. */
#define SMHEAP_ENGINE_CACHED_MAX 1048576        /* jemalloc's tcache_max */

/* Create the jemalloc arenas that serve this rank's slice, keeping at most retain bytes of
 * freed memory committed (smheap_engine_bound_idle).  0, or -1 with why set. */
int smheap_engine_start(const struct smheap_region *region, size_t retain, char *why,
                        size_t why_len);

/* A block of at least size bytes aligned to alignment (0: the default), zeroed if asked,
 * its usable size in *usable; NULL when the slice (or tmpfs) is full, or when the calling
 * thread has already run its thread-exit handlers and must use the private heap. */
void *smheap_engine_alloc(size_t size, size_t alignment, int zero, size_t * usable);

/* Resize in place or move within the slice; NULL (p untouched) if the slice is full. */
void *smheap_engine_resize(void *p, size_t size);

/* Free a block of the slice; returns its usable size. */
size_t smheap_engine_free(void *p);
size_t smheap_engine_usable_size(const void *p);

/* Give freed memory back to tmpfs if the slice has more committed beyond the in_use bytes
 * of live blocks than the bound allows (less of it after_fresh_pages: when an allocation
 * had to commit pages although freed memory was kept).  1 if it did. */
int smheap_engine_bound_idle(uint64_t in_use, int after_fresh_pages);

/* Give back what has stayed freed for longer than jemalloc's decay time (a rank calls this
 * now and then while it has nothing to do). */
void smheap_engine_decay(void);

/* Bytes of the slice committed in tmpfs (0 before the heap starts). */
size_t smheap_engine_committed(void);

/* 1 if the calling thread has run its thread-exit handlers (it allocates from glibc). */
int smheap_engine_thread_exited(void);

#endif /* SMHEAP_ENGINE_H_INCLUDED */

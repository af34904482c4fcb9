/*
 * smheap -- the engine: jemalloc, embedded in libmpi under its own prefix, allocating only
 * from this rank's slice of the region.
 */
#ifndef SMHEAP_ENGINE_H_INCLUDED
#define SMHEAP_ENGINE_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include <jemalloc/jemalloc.h>
#include "smheap_region.h"

/* Blocks larger than this skip the thread caches and come from the large part of the
 * slice. */
#define SMHEAP_ENGINE_CACHED_MAX 1048576        /* jemalloc's tcache_max */

/* Create the jemalloc arenas that serve this rank's slice, keeping at most retain bytes
 * (or SMHEAP_RETAIN_AUTO) of freed big blocks committed.  0, or -1 with why set. */
int smheap_engine_start(const struct smheap_region *region, size_t retain, char *why,
                        size_t why_len);

/* Start jemalloc's background thread, which gives freed memory not reused for 10 s back
 * to tmpfs. */
void smheap_engine_start_background(void);

/* A block of at least size bytes aligned to alignment (0: the default), zeroed if asked;
 * NULL when the slice (or tmpfs) is full, or when the calling thread has already run its
 * thread-exit handlers and must use the private heap. */
void *smheap_engine_alloc(size_t size, size_t alignment, int zero);

/* Resize in place or move within the slice; NULL (p untouched) if the slice is full. */
void *smheap_engine_resize(void *p, size_t size);

/* Free a block of the slice (what smheap_engine_free does not do inline). */
void smheap_engine_free_slowly(void *p);
size_t smheap_engine_usable_size(const void *p);

/* Bytes of the pages that hold live blocks (and blocks the thread caches keep). */
size_t smheap_engine_in_use(void);

/* Bytes of the slice committed in tmpfs (0 before the heap starts). */
size_t smheap_engine_committed(void);

/* Never decommit again: freed ranges stay committed for reuse. */
void smheap_engine_keep_pages(void);

/* 1 if the calling thread allocates from glibc for now: it has run its thread-exit
 * handlers, or is between smheap_private_begin and _end. */
int smheap_engine_thread_elsewhere(void);

/* The calling thread allocates from glibc until the matching _end (they nest). */
void smheap_engine_private_begin(void);
void smheap_engine_private_end(void);

/* The calling thread's state (see smheap_tls.c).  Its first allocation binds it to one
 * of the small arenas; after its thread-exit handlers it allocates from glibc. */
enum smheap_thread_phase { SMHEAP_THREAD_NEW, SMHEAP_THREAD_STARTING, SMHEAP_THREAD_BOUND,
    SMHEAP_THREAD_EXITED, SMHEAP_THREAD_PRIVATE
};
struct smheap_engine_thread {
    unsigned char phase;
    unsigned char phase_outside;        /* the phase to go back to after PRIVATE */
    unsigned short private_depth;
    unsigned arena;
};
extern __thread struct smheap_engine_thread smheap_engine_thread
    __attribute__((tls_model("initial-exec")));

/* The short paths, inlined into malloc and free: a bound thread takes jemalloc's own fast
 * paths for a block of the small part of the slice. */
extern uintptr_t smheap_engine_large_start __attribute__((visibility("hidden")));

/* smheap_engine_alloc(size, 0, 0). */
static inline void *smheap_engine_malloc(size_t size)
{
    void *p;

    if (__builtin_expect(smheap_engine_thread.phase == SMHEAP_THREAD_BOUND &&
                         size <= SMHEAP_ENGINE_CACHED_MAX, 1) &&
        (p = smheap_je_malloc(size)) != NULL)
        return p;
    return smheap_engine_alloc(size, 0, 0);
}

/* Free a block of the slice. */
static inline void smheap_engine_free(void *p)
{
    if (__builtin_expect(smheap_engine_thread.phase == SMHEAP_THREAD_BOUND &&
                         (uintptr_t) p < smheap_engine_large_start, 1))
        smheap_je_free(p);
    else
        smheap_engine_free_slowly(p);
}

#endif /* SMHEAP_ENGINE_H_INCLUDED */

/*
 * smheap -- backing the slice with tmpfs pages.
 *
 * Committing is fallocate: the pages exist in tmpfs before anyone touches them, so a full
 * /dev/shm is a failed commit and never a SIGBUS.  jemalloc commits extents often a few
 * pages at a time, and fallocate takes the file's inode lock, which every rank of the node
 * shares: so the slice is backed a chunk at a time (consecutive chunks in one call), and a
 * commit inside a chunk backed whole costs nothing.  Decommitting gives the range back at
 * once (MADV_REMOVE); a chunk in which nothing committed is left goes back whole, so the
 * pages that chunking backed ahead of need never stay in tmpfs.
 *
 * Per chunk: how many pages are committed in it, and whether it is backed whole (no
 * holes).  A chunk with no committed page is not backed at all.  One lock keeps this and
 * the file in step.
 */

#define _GNU_SOURCE
#include "smheap_region.h"
#include "smheap_valgrind.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define CHUNK ((size_t) 1 << 20)
#define PAGE ((size_t) 4096)

struct chunk {
    uint16_t pages;             /* committed pages, at most CHUNK / PAGE */
    uint16_t whole;             /* every page of the chunk is backed */
};

struct smheap_backing {
    pthread_mutex_t lock;
    size_t committed;           /* bytes */
    size_t nchunks;
    struct chunk chunk[];
};

int smheap_region_backing_init(struct smheap_region *r, char *why, size_t why_len)
{
    size_t nchunks = (r->slice_size + CHUNK - 1) / CHUNK;
    struct smheap_backing *b = mmap(NULL, sizeof(*b) + nchunks * sizeof(struct chunk),
                                    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (b == MAP_FAILED) {
        snprintf(why, why_len, "cannot map the heap's bookkeeping (%s)", strerror(errno));
        return -1;
    }
    pthread_mutex_init(&b->lock, NULL);
    b->nchunks = nchunks;
    r->backing = b;
    return 0;
}

static uintptr_t chunk_start(const struct smheap_region *r, size_t c)
{
    return r->slice + c * CHUNK;
}

static size_t chunk_len(const struct smheap_region *r, size_t c)
{
    return c * CHUNK + CHUNK <= r->slice_size ? CHUNK : r->slice_size - c * CHUNK;
}

static size_t chunk_of(const struct smheap_region *r, uintptr_t addr)
{
    return (addr - r->slice) / CHUNK;
}

/* Pages of [addr, end) that lie in chunk c. */
static uint16_t pages_in(const struct smheap_region *r, size_t c, uintptr_t addr, uintptr_t end)
{
    uintptr_t lo = chunk_start(r, c), hi = lo + chunk_len(r, c);

    lo = addr > lo ? addr : lo;
    hi = end < hi ? end : hi;
    return (uint16_t) ((hi - lo) / PAGE);
}

/* Chunk c lies within [addr, end). */
static int inside(const struct smheap_region *r, size_t c, uintptr_t addr, uintptr_t end)
{
    return chunk_start(r, c) >= addr && chunk_start(r, c) + chunk_len(r, c) <= end;
}

/* Back chunks [first, end) whole: one fallocate fills whatever holes they have. */
static int back_chunks(const struct smheap_region *r, size_t first, size_t end)
{
    off_t offset = (off_t) (chunk_start(r, first) - r->base);
    off_t len = (off_t) (chunk_start(r, end - 1) + chunk_len(r, end - 1) - chunk_start(r, first));
    size_t c;
    int rc;

    while ((rc = fallocate(r->fd, 0, offset, len)) != 0 && errno == EINTR)
        ;
    for (c = first; rc == 0 && c < end; c++)
        r->backing->chunk[c].whole = 1;
    return rc;
}

static void remove_chunk(const struct smheap_region *r, size_t c)
{
    madvise((void *) chunk_start(r, c), chunk_len(r, c), MADV_REMOVE);
    r->backing->chunk[c].whole = 0;
}

int smheap_region_commit(const struct smheap_region *r, void *addr, size_t len)
{
    struct smheap_backing *b = r->backing;
    uintptr_t start = (uintptr_t) addr, end = start + len;
    size_t first = chunk_of(r, start), last = chunk_of(r, end - 1), c, run;
    int rc = 0;

    pthread_mutex_lock(&b->lock);
    for (c = first; c <= last && rc == 0; c = run) {
        for (run = c; run <= last && !b->chunk[run].whole; run++)
            ;
        if (run > c)
            rc = back_chunks(r, c, run);
        else
            run = c + 1;
    }
    for (c = first; c <= last; c++) {
        if (rc == 0)
            b->chunk[c].pages += pages_in(r, c, start, end);
        else if (b->chunk[c].pages == 0 && b->chunk[c].whole)
            remove_chunk(r, c);         /* backed by this call: a chunk in use stays */
    }
    if (rc == 0)
        __atomic_fetch_add(&b->committed, len, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&b->lock);
    if (rc == 0)
        VALGRIND_MAKE_MEM_DEFINED(addr, len);   /* fresh pages read as zeros */
    return rc == 0 ? 0 : -1;
}

void smheap_region_decommit(const struct smheap_region *r, void *addr, size_t len)
{
    struct smheap_backing *b = r->backing;
    uintptr_t start = (uintptr_t) addr, end = start + len;
    size_t c;

    pthread_mutex_lock(&b->lock);
    madvise(addr, len, MADV_REMOVE);
    for (c = chunk_of(r, start); c <= chunk_of(r, end - 1); c++) {
        b->chunk[c].pages -= pages_in(r, c, start, end);
        b->chunk[c].whole = 0;
        if (b->chunk[c].pages == 0 && !inside(r, c, start, end))
            remove_chunk(r, c);     /* the pages backed ahead of need around the range */
    }
    __atomic_fetch_sub(&b->committed, len, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&b->lock);
    VALGRIND_MAKE_MEM_NOACCESS(addr, len);
}

size_t smheap_region_committed(const struct smheap_region *r)
{
    return __atomic_load_n(&r->backing->committed, __ATOMIC_RELAXED);
}

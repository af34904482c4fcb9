/*
 * smheap -- a shared heap: the malloc family served from one shared-memory region that
 * every rank of a job on a node maps at the same address, so a pointer from malloc in one
 * rank is valid, as is, in all of them.  Not MPI specific; libmpi (ch3:smheap) and the
 * unit tests link the same sources.
 *
 * The heap starts inside the first call of the malloc family.  Settings come from the
 * environment (smheap_config.h); everything it cannot serve goes to glibc.
 */
#ifndef SMHEAP_H_INCLUDED
#define SMHEAP_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include "smheap_stats.h"

/* 1 while new allocations come from the shared heap. */
int smheap_active(void);

/* 1 if p points into the shared region (any rank's slice). */
int smheap_in_region(const void *p);

/* 1 if every byte of [p, p+len) lies in the shared region, so that every rank of the node
 * can read it through the same pointer (an empty range does, wherever it points). */
int smheap_holds(const void *p, size_t len);

/* Another process of the node wrote [p, p+len) of this rank's memory (through the shared
 * heap): memcheck, which sees only this process's stores, must take the bytes as defined
 * there.  Nothing to do without valgrind. */
void smheap_peer_wrote(void *p, size_t len);

/* Why the heap is off ("" while it is on or has not started). */
const char *smheap_off_reason(void);

/* A malformed setting (names the variable and the value), or NULL. */
const char *smheap_config_error(void);

/* Seed 000's proof that the interposition is live: malloc, realloc and memalign a few MiB
 * and free them, and check the shared heap served and saw each.  0, or -1 with why set. */
int smheap_selftest(char *why, size_t why_len);

/* Start the thread that gives back to /dev/shm the freed memory not reused for 10 s
 * (jemalloc's background thread).  MPI_Init does; a no-op while the heap is off. */
void smheap_start_background_purge(void);

/* Bytes of this rank's slice committed in /dev/shm: blocks in use and freed memory kept
 * for reuse (freed big blocks: at most MPIR_CVAR_CH3_SMHEAP_RETAIN more than in use). */
size_t smheap_committed(void);

/* Bytes of the pages of this rank's slice that hold live blocks (and blocks the thread
 * caches keep for reuse). */
size_t smheap_in_use(void);

/* From now on the slice's pages stay in /dev/shm until the job ends, the freed ones kept
 * for reuse: a network card's registration of heap memory, which pins the pages it finds,
 * then never holds pages the heap gave back while the program writes to new ones. */
void smheap_keep_pages(void);

/* Serve every later allocation from glibc; blocks already in the heap are still freed
 * into it. */
void smheap_disable(void);
/* The calling thread's allocations come from glibc until the matching smheap_private_end
 * (they nest): for a library's own memory, which need not take room in the shared heap
 * (a network provider's buffer pools). */
void smheap_private_begin(void);
void smheap_private_end(void);

/* The region this rank is mapped to: base address, size and the job key every rank of
 * the job shares.  0 while the heap is on, -1 otherwise. */
int smheap_region_identity(uintptr_t * base, size_t * size, const char **job_key);

#endif /* SMHEAP_H_INCLUDED */

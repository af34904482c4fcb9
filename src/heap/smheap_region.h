/*
 * smheap -- the region: one shared-memory file per node per job, mapped at the same
 * address in every local rank, cut into one slice per rank.
 */
#ifndef SMHEAP_REGION_H_INCLUDED
#define SMHEAP_REGION_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include "smheap_config.h"

#define SMHEAP_REGION_HEADER_SIZE ((size_t) 2 << 20)

struct smheap_region {
    char name[96];              /* shm_open name, "/smheap-<uid>-<job>" */
    char job_key[64];           /* identifies the job; stored in the header */
    int fd;                     /* kept open to commit pages (fallocate) */
    uintptr_t base;             /* the region, at the same address in every rank */
    size_t size;
    int nslices;
    size_t slice_size;
    uintptr_t slice;            /* this rank's slice */
    int created;                /* this rank created the file */
    struct smheap_backing *backing;     /* which pages of the slice tmpfs backs */
};

/* Create or join this job's region and map it.  Returns 0, or -1 with a message in why
 * (the heap then stays off).  Calls no allocator. */
int smheap_region_attach(const struct smheap_config *cfg, struct smheap_region *region,
                         char *why, size_t why_len);

/* The bookkeeping of the slice's backing (smheap_commit.c), made by attach.  0, or -1
 * with why set. */
int smheap_region_backing_init(struct smheap_region *region, char *why, size_t why_len);

/* Back [addr, addr+len) of the slice with tmpfs pages now, so that touching them later
 * can never raise SIGBUS.  Returns 0, or -1 when tmpfs is full.  A range is committed
 * once and decommitted once, page-aligned, as jemalloc does. */
int smheap_region_commit(const struct smheap_region *region, void *addr, size_t len);

/* Give the pages of [addr, addr+len) back to tmpfs; they read as zeros afterwards. */
void smheap_region_decommit(const struct smheap_region *region, void *addr, size_t len);

/* Bytes of the slice committed and not decommitted since. */
size_t smheap_region_committed(const struct smheap_region *region);

/* Remove the backing file's name (idempotent; the mappings stay). */
void smheap_region_unlink(const struct smheap_region *region);

#endif /* SMHEAP_REGION_H_INCLUDED */

/*
 * smheap -- counters of what the heap served, per thread without atomics, summed on demand.
 */
#ifndef SMHEAP_STATS_H_INCLUDED
#define SMHEAP_STATS_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

enum smheap_counter {
    SMHEAP_SHARED_ALLOCS,       /* blocks served from this rank's slice */
    SMHEAP_SHARED_FREES,        /* blocks of the slice freed */
    SMHEAP_BYTES_ALLOCATED,     /* usable bytes handed out from the slice */
    SMHEAP_BYTES_FREED,         /* usable bytes given back to the slice */
    SMHEAP_GLIBC_FULL,          /* served by glibc because the slice or tmpfs was full */
    SMHEAP_GLIBC_OFF,           /* served by glibc because the heap was off for the call */
    SMHEAP_PURGES,              /* freed memory given back to tmpfs: above the retain bound */
    SMHEAP_NUM_COUNTERS
};

/* Add n to counter c of the calling thread. */
void smheap_count(enum smheap_counter c, uint64_t n);

/* The counter summed over all threads (a snapshot while others run). */
uint64_t smheap_counter_total(enum smheap_counter c);

#endif /* SMHEAP_STATS_H_INCLUDED */

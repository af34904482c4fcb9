/*
 * smheap -- counters of what the heap served, per thread without atomics, summed on demand.
 *
 * malloc and free must not pay for a contended atomic, so each thread owns a cache-line
 * slot of a static table and updates it with plain loads and stores; readers sum the
 * slots.  Slots are not recycled: a thread that exits leaves its totals in place.  Threads
 * beyond the table share one extra slot, updated atomically.
 */
#ifndef SMHEAP_STATS_H_INCLUDED
#define SMHEAP_STATS_H_INCLUDED

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum smheap_counter {
    SMHEAP_GLIBC_FULL,          /* served by glibc because the slice or tmpfs was full */
    SMHEAP_GLIBC_OFF,           /* served by glibc because the heap was off for the call */
    SMHEAP_PURGES,              /* freed big blocks given back to tmpfs: above the bound */
    SMHEAP_NUM_COUNTERS
};

struct smheap_stat_slot {
    _Atomic uint64_t value[SMHEAP_NUM_COUNTERS];
    int shared;                 /* the extra slot: atomic updates */
} __attribute__((aligned(64)));

/* The calling thread's slot (NULL until its first count); see smheap_tls.c. */
extern __thread struct smheap_stat_slot *smheap_stat_mine
    __attribute__((tls_model("initial-exec")));

/* Give the calling thread its slot. */
struct smheap_stat_slot *smheap_stat_claim(void) __attribute__((visibility("hidden")));

/* Add n to counter c of the calling thread. */
static inline void smheap_count(enum smheap_counter c, uint64_t n)
{
    struct smheap_stat_slot *s = smheap_stat_mine;

    if (__builtin_expect(s == NULL, 0))
        s = smheap_stat_claim();
    if (__builtin_expect(s->shared, 0))
        atomic_fetch_add_explicit(&s->value[c], n, memory_order_relaxed);
    else        /* only this thread writes the slot */
        atomic_store_explicit(&s->value[c],
                              atomic_load_explicit(&s->value[c], memory_order_relaxed) + n,
                              memory_order_relaxed);
}

/* The counter summed over all threads (a snapshot while others run). */
uint64_t smheap_counter_total(enum smheap_counter c);

#endif /* SMHEAP_STATS_H_INCLUDED */

/*
 * smheap -- counters of what the heap served.
 *
 * malloc and free must not pay for a contended atomic, so each thread owns a cache-line
 * slot of a static table and updates it with plain loads and stores; readers sum the
 * slots.  Slots are not recycled: a thread that exits leaves its totals in place.  Threads
 * beyond the table share one extra slot, updated atomically.
 */

#include "smheap_stats.h"

#include <stdatomic.h>

#define STAT_SLOTS 256

struct stat_slot {
    _Atomic uint64_t value[SMHEAP_NUM_COUNTERS];
} __attribute__((aligned(64)));

static struct stat_slot slots[STAT_SLOTS + 1];  /* the last one is shared */
static atomic_uint slots_used;
static __thread struct stat_slot *my_slot;

static struct stat_slot *claim_slot(void)
{
    unsigned i = atomic_fetch_add_explicit(&slots_used, 1, memory_order_relaxed);

    return &slots[i < STAT_SLOTS ? i : STAT_SLOTS];
}

void smheap_count(enum smheap_counter c, uint64_t n)
{
    struct stat_slot *s = my_slot;

    if (__builtin_expect(s == NULL, 0))
        s = my_slot = claim_slot();
    if (__builtin_expect(s == &slots[STAT_SLOTS], 0))
        atomic_fetch_add_explicit(&s->value[c], n, memory_order_relaxed);
    else        /* only this thread writes the slot */
        atomic_store_explicit(&s->value[c],
                              atomic_load_explicit(&s->value[c], memory_order_relaxed) + n,
                              memory_order_relaxed);
}

uint64_t smheap_counter_total(enum smheap_counter c)
{
    unsigned i, used = atomic_load_explicit(&slots_used, memory_order_relaxed);
    uint64_t sum = atomic_load_explicit(&slots[STAT_SLOTS].value[c], memory_order_relaxed);

    for (i = 0; i < used && i < STAT_SLOTS; i++)
        sum += atomic_load_explicit(&slots[i].value[c], memory_order_relaxed);
    return sum;
}

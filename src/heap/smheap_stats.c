/*
 * smheap -- counters of what the heap served (see smheap_stats.h).
 */

#include "smheap_stats.h"

#define STAT_SLOTS 256

static struct smheap_stat_slot slots[STAT_SLOTS + 1] = {[STAT_SLOTS] = {.shared = 1} };
static atomic_uint slots_used;

struct smheap_stat_slot *smheap_stat_claim(void)
{
    unsigned i = atomic_fetch_add_explicit(&slots_used, 1, memory_order_relaxed);

    return smheap_stat_mine = &slots[i < STAT_SLOTS ? i : STAT_SLOTS];
}

uint64_t smheap_counter_total(enum smheap_counter c)
{
    unsigned i, used = atomic_load_explicit(&slots_used, memory_order_relaxed);
    uint64_t sum = atomic_load_explicit(&slots[STAT_SLOTS].value[c], memory_order_relaxed);

    for (i = 0; i < used && i < STAT_SLOTS; i++)
        sum += atomic_load_explicit(&slots[i].value[c], memory_order_relaxed);
    return sum;
}

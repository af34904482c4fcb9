/*
 * ch3:smheap -- the node segment: one ring per ordered pair of local ranks, one doorbell
 * per rank, and each rank's CPU affinity mask (do the ranks outnumber their CPUs?).
 *
 * A receiver's inbox is the set of rings that point at it.  A message starts at the
 * beginning of a cell (so a packet header never straddles cells) and may continue in the
 * following cells of the same ring.  A rank that has polled for a while without finding
 * work sleeps on its doorbell; a peer that gives it work (a cell, or room in a full ring)
 * rings it.
 */

#ifndef SMHEAP_QUEUE_H_INCLUDED
#define SMHEAP_QUEUE_H_INCLUDED

#include "smheap_ring.h"
#include "smheap_doorbell.h"

/* This process's view of the node segment (the segment is not mapped at the same
 * address in every rank, so only offsets are shared). */
typedef struct smheap_queue {
    int nranks;
    int my_rank;
    int node_cpus;              /* CPUs the node's ranks may run on between them */
    size_t cache_l2;            /* bytes of the first local rank's L2 cache (0: unknown) */
    smheap_ring_geometry_t geom;
    size_t warm_min;            /* eager data from this size uses a ring's warm slot */
    size_t spread_min;          /* or, if the slot is busy, is spread into its cell */
    void *segment;
    smheap_doorbell_t *bells;   /* [nranks] */
    char *rings;                /* [receiver][sender] rings */
} smheap_queue_t;

extern smheap_queue_t smheap_queue;

int MPIDI_CH3I_Smheap_queue_init(int nranks, int my_rank);
int MPIDI_CH3I_Smheap_queue_finalize(void);

static inline smheap_ring_t *MPIDI_CH3I_Smheap_ring(int receiver, int sender)
{
    size_t idx = (size_t) receiver * smheap_queue.nranks + sender;
    return (smheap_ring_t *) (smheap_queue.rings + idx * smheap_ring_size(&smheap_queue.geom));
}

/* Wake `rank` if it may be asleep (after publishing work for it). */
static inline void MPIDI_CH3I_Smheap_wake(int rank)
{
    smheap_doorbell_ring(&smheap_queue.bells[rank]);
}

/* Wake those of `ranks` (node ranks, n of them) that may be asleep, after publishing
 * something they wait for: one fence for all. */
static inline void MPIDI_CH3I_Smheap_wake_ranks(const int *ranks, int n)
{
    smheap_doorbell_order(smheap_doorbell_fenceless);
    for (int i = 0; i < n; i++) {
        smheap_doorbell_t *b = &smheap_queue.bells[ranks[i]];
        if (smheap_doorbell_has_sleepers(b))
            smheap_doorbell_wake(b);
    }
}

#endif /* SMHEAP_QUEUE_H_INCLUDED */

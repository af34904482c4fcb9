/*
 * ch3:smheap -- what the channel offers the shared-heap collectives (src/coll), and all
 * they may use of it: waiting the channel's way, waking ranks, the heap's state, the
 * node's cache size, the channel's bulk copy and its vector reduction kernels.
 */

#ifndef SMHEAP_CHANNEL_H_INCLUDED
#define SMHEAP_CHANNEL_H_INCLUDED

#include "mpidimpl.h"
#include "smheap_node.h"
#include "smheap_copy.h"
#include "smheap_reduce.h"
#include "smheap_mpit.h"

#ifndef SMHEAP_CACHELINE
#define SMHEAP_CACHELINE 64     /* the line size shared structures are laid out for */
#endif

/* Wait until ready(arg) holds, the way a blocking wait for a request waits (this rank's
 * messages keep moving; spin, yield, then sleep until rung).  An error of the progress
 * engine is returned. */
int MPIDI_CH3I_Progress_wait_for(int (*ready) (void *), void *arg);

/* The index among this node's ranks (of its rings, doorbell and heap slice) of the process
 * at `rank` of comm, or -1 if it is on another node or of another job.  Waking them and
 * the node's cache size are node/'s (smheap_node.h). */
static inline int MPIDI_CH3I_Smheap_node_rank(MPIR_Comm * comm, int rank)
{
    return comm->dev.vcrt->vcr_table[rank]->ch.node_rank;
}

/* 1 when every rank of this node allocates from one shared heap (set at MPI_Init). */
extern int MPIDI_CH3I_Smheap_heap_shared;

#endif /* SMHEAP_CHANNEL_H_INCLUDED */

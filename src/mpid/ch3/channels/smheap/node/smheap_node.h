/*
 * ch3:smheap -- the on-node transport: the node segment a job's ranks on one node share (a
 * message ring per ordered pair of ranks, a doorbell per rank) and the pacing that watches
 * how fast the rings run.  All that the rest of the channel may use of node/.
 */

#ifndef SMHEAP_NODE_H_INCLUDED
#define SMHEAP_NODE_H_INCLUDED

#include "smheap_queue.h"       /* the segment, its rings and doorbells */
#include "smheap_pace.h"        /* how fast the rings run against the kernel's copy */

/* Wake those of the node's ranks `ranks` (n of them) that may sleep in a wait, after
 * publishing what they wait for. */
void MPIDI_CH3I_Smheap_wake_node_ranks(const int *ranks, int n);

/* Bytes of a second-level cache of this node, the same in all its ranks (0: unknown). */
size_t MPIDI_CH3I_Smheap_node_cache_l2(void);

#endif /* SMHEAP_NODE_H_INCLUDED */

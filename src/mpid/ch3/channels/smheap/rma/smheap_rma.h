/*
 * ch3:smheap -- one-sided communication through the shared heap (rma/).
 *
 * Every address of the shared heap means the same memory in all ranks of the node, so a
 * window whose memory lies in it can be read and written in place by any of them, however
 * it was made.  What the heap adds to ch3's RMA:
 *
 * - Windows of MPI_Win_create whose memory, on every rank of a node, lies in the heap are
 *   made shared-memory windows, as ch3:nemesis makes those of MPI_Win_allocate: ch3 then
 *   does the operations of the node's origins in place (its mpid_rma_shm.h), accumulates
 *   under one process-shared mutex kept in the heap.  Dynamic windows whose ranks all
 *   share the heap are made shared too, their base address 0 (MPI_BOTTOM) everywhere: an
 *   operation whose target bytes lie in the heap is done in place, any other goes to the
 *   target as packets (MPIDI_CH3_RMA_TARGET_IN_PLACE, decided operation by operation).
 *   smheap_rma_window.c.
 * - Passive-target locks of windows whose ranks all share the heap are lock words in the
 *   heap, one per target, which origins take themselves (ch3's window hooks lock, unlock,
 *   lock_all, unlock_all; maint/patches/0009): MPI_Win_lock, the operations and
 *   MPI_Win_unlock complete while the target computes without calling MPI.
 *   smheap_rma_lock.c.  Where a window spans nodes, the node's origins take the words of
 *   the node's targets so, and a target grants ch3's lock packets from other nodes only
 *   while it holds its own word for them (maint/patches/0016): smheap_rma_hold.c.
 * - Active-target synchronization of windows whose every operation is done in place (all
 *   ranks share the heap, the window is in shared memory, not dynamic) goes through the
 *   heap too (hooks fence, post, start, complete, wait, test; maint/patches/0011): a fence
 *   is the shared-heap barrier; post and complete add one to a counter of each partner,
 *   start and wait wait for their partners' counters to move.  smheap_rma_epoch.c.
 *
 * ch3 reaches the folder through its window tables and hooks, which
 * MPIDI_CH3I_Win_heap_init wraps, and the macros of mpidi_ch3_pre.h.
 */

#ifndef SMHEAP_RMA_H_INCLUDED
#define SMHEAP_RMA_H_INCLUDED

#include "mpidimpl.h"

/* Wraps ch3's window tables, which MPID_Init filled before the channel starts. */
void MPIDI_CH3I_Win_heap_init(void);

#endif /* SMHEAP_RMA_H_INCLUDED */

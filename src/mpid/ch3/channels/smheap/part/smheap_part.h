/*
 * ch3:smheap -- partitioned communication (part/): MPI-4's MPI_Psend_init and the rest
 * are the channel's (MPID_Psend_init ..., through maint/patches/0004); the ch3 layer needs
 * only to set it up and tear it down.
 */

#ifndef SMHEAP_PART_H_INCLUDED
#define SMHEAP_PART_H_INCLUDED

#include "mpidimpl.h"

/* Adds its packets' handlers to the table and registers its progress hook. */
int MPIDI_CH3I_Smheap_part_init(MPIDI_CH3_PktHandler_Fcn * pktArray[], int arraySize);
int MPIDI_CH3I_Smheap_part_finalize(void);

#endif /* SMHEAP_PART_H_INCLUDED */

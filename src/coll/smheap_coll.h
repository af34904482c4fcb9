/*
 * ch3:smheap collectives -- single-copy collectives through the shared heap, installed per
 * communicator by the channel's communicator hooks (smheap_coll_comm.c) in the table that
 * MPICH's MPID_<Coll> call through (maint/patches/0002-ch3-collectives-table.patch).
 *
 * Each communicator has a control block in the shared heap: one cache line per rank holding
 * the rank's step (how far it got through the collectives' synchronization points, which
 * every rank passes in the same order) and the addresses of the buffers it offers.  A rank
 * reads or reduces straight from a peer's buffer once the peer's step says it is there, and
 * does not return before everyone who reads its buffers has said it is done.  Data outside
 * the heap, or laid out by a noncontiguous datatype, is first packed into the rank's own
 * staging buffer in the heap, so the choice is local and needs no agreement.
 *
 * Data that fit in a cell (the small vectors most programs reduce and broadcast every step)
 * travel inline instead: after the slots, each rank has a ring of cells, one per call in
 * turn, in which it writes its data and then the call's number, so that a reader finds the
 * data on the line it polls.  A writer need not wait for its readers before it returns (it
 * runs ahead, as an eager send does); it waits only before it writes a cell again, until
 * every rank has passed the call that last used it.
 *
 * The rooted calls (Bcast, Gather(v), Scatter(v)) and Alltoallv, whose writer would otherwise
 * wait for every reader, keep that eagerness for data a little too big for a cell (a Scatter
 * of 8 bytes to 16 ranks): the writer puts them in its spill area, one piece per cell of its
 * ring, and the cell says where.  The cell's turn guards the piece as it guards the cell.
 */

#ifndef SMHEAP_COLL_H_INCLUDED
#define SMHEAP_COLL_H_INCLUDED

#include "mpidimpl.h"
#include <stdatomic.h>

#define SMHEAP_COLL_FAILED_KEPT 6

typedef struct smheap_coll_slot {
    _Alignas(64) _Atomic uint64_t step;         /* last synchronization point reached */
    const void *src;            /* what this rank offers to read, valid from its first step */
    void *dst;                  /* where peers may write for it, likewise */
    uint64_t bytes;             /* how much src holds, where peers must check it */
    uint32_t nfailed;           /* calls this rank left early, */
    uint32_t failed[SMHEAP_COLL_FAILED_KEPT];   /* the last few of them (by call_number);
                                                 * a
                                                 * rank that leaves early does not wait, and
                                                 * its peers may still be in an earlier one */
    int32_t carried;            /* the MPICH errflag a Bcast root brought into the call (an
                                 * earlier step of a two-level collective failed): its
                                 * readers report it too */
} smheap_coll_slot_t;
_Static_assert(sizeof(smheap_coll_slot_t) == 64, "a rank's slot is one cache line");

/* How many calls a writer may run ahead of its slowest reader: deep enough that ranks sharing
 * CPUs go through several calls per time slice, fewer on large communicators, whose control
 * block holds size x cells of them (32 cells up to 16 ranks, 8 above 64: 272 KiB with slots
 * for 256 ranks).  A power of two (cell_turn masks with it). */
#define SMHEAP_COLL_CELLS_MAX 32
static inline int smheap_coll_cells(int size)
{
    return size <= 16 ? 32 : size <= 64 ? 16 : 8;
}

#define SMHEAP_COLL_CELL_LEN 128        /* two cache lines: a call's flag and data */

typedef struct smheap_coll_cell {
    _Alignas(64) _Atomic uint64_t call;         /* first step of the call it holds data of */
    uint32_t bytes;             /* how much data, where readers must check it */
    int16_t carried;            /* as in the slot: a Bcast root's errflag */
    _Alignas(16) char data[SMHEAP_COLL_CELL_LEN - 16];
} smheap_coll_cell_t;

/* A spilled call's data, at most: a small multiple of a cell, so that the writer's copy into
 * its piece costs less than a wait for its slowest reader (a few cache lines moved, against
 * a trip through every reader's time slice), and the area (cells x this, made at a rank's
 * first spill) stays small. */
#define SMHEAP_COLL_SPILL_LEN 2048

#define SMHEAP_COLL_ALL_READ (-1)

#define SMHEAP_COLL_CELL_DATA ((MPI_Aint) sizeof(((smheap_coll_cell_t *) 0)->data))

typedef struct smheap_coll_ctrl {
    _Alignas(64) atomic_int users;      /* ranks whose communicator is not freed yet */
    int size;
    smheap_coll_slot_t slot[];  /* size of them, then smheap_coll_cells(size) cells per rank */
} smheap_coll_ctrl_t;

/* The channel's part of a communicator (mpidi_ch3_pre.h) holds a pointer to this. */
typedef struct smheap_coll_comm {
    MPIDI_Coll_fns *prev;       /* the table ours replaced: for what we do not handle */
    struct smheap_coll_tables *tables;  /* the list ours came from */
    smheap_coll_ctrl_t *ctrl;   /* NULL until the first collective */
    int unusable;               /* the control block could not be placed in the heap */
    uint64_t step;              /* this rank's next synchronization point */
    uint64_t call_first;        /* the current call's first point */
    uint64_t call_next;         /* and the next it has not taken yet */
    void *scratch;              /* this rank's staging buffer, in the heap */
    size_t scratch_len;
    char *spill;                /* this rank's spill area, in the heap; NULL until needed */
    uint64_t spill_read;        /* the point its readers pass once done with its last spill */
    int cells;                  /* cells per rank in the control block */
    int cells_per_call;         /* 2 with a tree (its calls have two phases), else 1 */
    uint64_t cell_read[SMHEAP_COLL_CELLS_MAX];  /* the point its readers pass once done
                                                 * reading what this rank last wrote there */
    int cell_root[SMHEAP_COLL_CELLS_MAX];       /* who those readers were: every rank
                                                 * (SMHEAP_COLL_ALL_READ), or the parent
                                                 * and children in the tree for this root */
    struct smheap_coll_tree *tree;      /* NULL: this communicator's collectives stay flat */
    int tree_call;              /* the current call runs on the tree */
    uint64_t *seen;             /* the highest step this rank has seen each rank reach */
    int offers_inline;          /* the last offer this rank waited for came in a cell */
    int size;
    int node_rank[];            /* whose doorbell to ring for each rank */
} smheap_coll_comm_t;

/* Which algorithms a call of a smheap table took (MPI_T counters). */
typedef enum {
    SMHEAP_COLL_FALLBACK,       /* MPICH's, for what the table leaves to them */
    SMHEAP_COLL_SHARED,         /* the shared-heap ones, all ranks on this node */
    SMHEAP_COLL_NODE_AWARE,     /* two levels, on a communicator that spans nodes */
    SMHEAP_COLL_INLINE,         /* of the shared ones, those whose data went inline */
    SMHEAP_COLL_SPILLED,        /* of those, the ones whose data went to a spill area */
    SMHEAP_COLL_TREE            /* and those that ran as a tree (smheap_coll_tree.h) */
} smheap_coll_path_t;

/* smheap_coll_comm.c: the communicator hooks */
int MPIDI_CH3I_Smheap_coll_init(void);
int MPIDI_CH3I_Smheap_coll_finalize(void);

/* smheap_coll_block.c: a communicator's control block, staging and waits, and the
 * counters of the paths taken */
int MPIDI_CH3I_Smheap_coll_ready(MPIR_Comm * comm, smheap_coll_comm_t ** cc);
void *MPIDI_CH3I_Smheap_coll_scratch(smheap_coll_comm_t * cc, size_t len);
char *MPIDI_CH3I_Smheap_coll_spill(smheap_coll_comm_t * cc);
int MPIDI_CH3I_Smheap_coll_wait(smheap_coll_comm_t * cc, int rank, uint64_t step);
extern unsigned long long PVAR_COUNTER_smheap_coll_shared;
extern unsigned long long PVAR_COUNTER_smheap_coll_node_aware;
extern unsigned long long PVAR_COUNTER_smheap_coll_fallback;
extern unsigned long long PVAR_COUNTER_smheap_coll_inline;
extern unsigned long long PVAR_COUNTER_smheap_coll_spilled;
extern unsigned long long PVAR_COUNTER_smheap_coll_tree;
extern unsigned long long PVAR_COUNTER_smheap_coll_lines_read;
extern unsigned long long PVAR_COUNTER_smheap_coll_lines_written;
extern unsigned long long PVAR_COUNTER_smheap_coll_reduce_peer_bytes;
extern unsigned long long PVAR_COUNTER_smheap_coll_allreduce_whole;
extern unsigned long long PVAR_COUNTER_smheap_coll_allreduce_split;
void MPIDI_CH3I_Smheap_coll_count(smheap_coll_path_t path);

/* The table entries for communicators within one node, by family of collectives */
void MPIDI_CH3I_Smheap_coll_override_rooted(MPIDI_Coll_fns * table);    /* smheap_coll_rooted.c */
void MPIDI_CH3I_Smheap_coll_override_reductions(MPIDI_Coll_fns * table);        /* _reduce.c */
void MPIDI_CH3I_Smheap_coll_override_exchanges(MPIDI_Coll_fns * table); /* _exchange.c */

/* smheap_coll_nodes.c: and for communicators that span nodes */
void MPIDI_CH3I_Smheap_coll_override_nodes(MPIDI_Coll_fns * table);

#endif /* SMHEAP_COLL_H_INCLUDED */

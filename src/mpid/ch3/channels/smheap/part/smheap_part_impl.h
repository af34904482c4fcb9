/*
 * ch3:smheap -- partitioned communication, inside part/: what smheap_part.c (requests,
 * matching, the MPID entry points), smheap_part_data.c (moving the data) and
 * smheap_part_active.c (requests with work in progress) share.  Calls go from the first
 * to the second to the third.
 */

#ifndef SMHEAP_PART_IMPL_H_INCLUDED
#define SMHEAP_PART_IMPL_H_INCLUDED

#include "mpidi_ch3_impl.h"
#include "smheap_part.h"
#include <stdatomic.h>

/* What the sender shares with an in-place receiver, in the sender's heap. */
typedef struct part_flags {
    _Alignas(SMHEAP_CACHELINE) atomic_int consumed;     /* last round the receiver copied */
    /* written by the receiver: its buffer, if the sender may place data there, and the
     * round it has started (which publishes recv_buf) */
    _Alignas(SMHEAP_CACHELINE) atomic_int recv_round;
    char *recv_buf;
    /* per partition: ready_mark() of the round it was readied in */
    _Alignas(SMHEAP_CACHELINE) atomic_int ready[];
} part_flags_t;

/* A partition's flag: ready in this round, and placed in the receive buffer already? */
static inline int ready_mark(int round, int placed)
{
    return 2 * round + placed;
}

enum { PART_IDLE, PART_READY, PART_SENT };      /* a message-path sender partition */

typedef struct smheap_part {
    MPIR_Request *req;
    struct smheap_part *active_prev, *active_next;      /* `active`: has work in progress */
    struct smheap_part *posted_prev, *posted_next;      /* `posted`: receive not matched */
    MPIDI_VC_t *vc;             /* NULL: MPI_PROC_NULL */
    int peer_rank, tag, context_id;
    char *buf;
    MPI_Aint count;             /* elements of datatype in the whole buffer */
    MPI_Datatype datatype;
    int dt_contig;
    MPI_Aint dt_true_lb;
    int partitions;
    intptr_t part_sz, data_sz;  /* bytes per partition, in all */
    int round;                  /* MPI_Start calls so far */
    int handshake;              /* PART_INIT/PART_CTS not yet both seen */
    int freed;                  /* MPI_Request_free came */
    int in_place;
    int mismatch;               /* the peer's total size differs */
    MPI_Request peer_req;

    /* sender */
    part_flags_t *flags;        /* in place */
    atomic_int n_readied;       /* in place: partitions readied this round */
    int cts_round;              /* the receiver's latest round (message path) */
    int n_sent;                 /* message path: sent this round */
    char *state;                /* message path: PART_IDLE/READY/SENT per partition */
    MPIR_Request **sends;       /* message path: data sends not yet complete */
    int n_sends;

    /* receiver */
    int matched;
    int peer_partitions;
    const char *peer_buf;       /* in place: the sender's data */
    part_flags_t *peer_flags;
    intptr_t peer_part_sz;
    intptr_t *arrived;          /* bytes of each partition in our buffer this round */
    intptr_t arrived_total;
} smheap_part_t;

typedef struct {
    MPIDI_CH3_Pkt_type_t type;
    MPIDI_Message_match match;
    MPI_Request sreq;
    intptr_t data_sz;
    intptr_t part_sz;
    int partitions;
    const void *buf;            /* in place: the data, in the heap; NULL: as messages */
    part_flags_t *flags;
} part_pkt_init_t;

typedef struct {
    MPIDI_CH3_Pkt_type_t type;
    MPI_Request sreq, rreq;
    int round;                  /* the receiver's; 0: not started yet */
    int size_ok;
} part_pkt_cts_t;

typedef struct {
    MPIDI_CH3_Pkt_type_t type;
    MPI_Request rreq;
    intptr_t offset, len;       /* where the data that follows goes in the message */
} part_pkt_data_t;

typedef union {
    MPIDI_CH3_Pkt_t ch3;
    part_pkt_init_t init;
    part_pkt_cts_t cts;
    part_pkt_data_t data;
} part_pkt_t;

MPL_static_assert(sizeof(part_pkt_t) == sizeof(MPIDI_CH3_Pkt_t),
                  "ch3:smheap partitioned packets must fit in ch3's packet header");

#define PART(req_) ((req_)->ch.part)

/* smheap_part_active.c: requests with work in progress (the progress hook walks them) */
extern smheap_part_t *MPIDI_CH3I_Part_active;
extern int MPIDI_CH3I_Part_hook_id;
int MPIDI_CH3I_Part_is_self(MPIDI_VC_t * vc);
void MPIDI_CH3I_Part_activate(smheap_part_t * p);
void MPIDI_CH3I_Part_deactivate(smheap_part_t * p);
int MPIDI_CH3I_Part_is_active(smheap_part_t * p);
void MPIDI_CH3I_Part_complete_round(smheap_part_t * p);

/* smheap_part_data.c: choosing the way at MPI_Psend_init */
int MPIDI_CH3I_Part_can_send_in_place(smheap_part_t * p);
int MPIDI_CH3I_Part_new_flags(smheap_part_t * p);

/* the sender: a partition is ready (sets *wake_owed if the receiver needs to know now);
 * after one or more, wake it if owed; the receiver's CTS came; progress of a started
 * round */
int MPIDI_CH3I_Part_ready(smheap_part_t * p, int k, int *wake_owed);
void MPIDI_CH3I_Part_readied(smheap_part_t * p, int wake_owed);
int MPIDI_CH3I_Part_send_ready(smheap_part_t * p);
int MPIDI_CH3I_Part_send_progress(smheap_part_t * p);

/* the receiver: a round starts in place; copy one partition, or all that are ready; is
 * everything here; the round is over; a PART_DATA packet's handler */
void MPIDI_CH3I_Part_start_in_place(smheap_part_t * p);
int MPIDI_CH3I_Part_copy_in_place(smheap_part_t * p, int j);
int MPIDI_CH3I_Part_copy_ready(smheap_part_t * p);
int MPIDI_CH3I_Part_round_received(smheap_part_t * p);
void MPIDI_CH3I_Part_receive_done(smheap_part_t * p);
int MPIDI_CH3I_Part_handle_data(MPIDI_VC_t * vc, MPIDI_CH3_Pkt_t * pkt, void *data,
                                intptr_t * buflen, MPIR_Request ** rreqp);

#endif /* SMHEAP_PART_IMPL_H_INCLUDED */

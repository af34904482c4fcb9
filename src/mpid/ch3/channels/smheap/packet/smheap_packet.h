/*
 * ch3:smheap -- ch3's packets into and out of a VC, whichever transport carries them (the
 * node's rings, a link, a socket): the packet handlers, handing received bytes to ch3, and
 * a VC's send queue.  All that the rest of the channel may use of packet/.
 */

#ifndef SMHEAP_PACKET_H_INCLUDED
#define SMHEAP_PACKET_H_INCLUDED

#include "mpidimpl.h"
#include "smheap_node.h"        /* ring cells */
#include "smheap_copy.h"

#define MPIDI_CH3I_PKTARRAY_SIZE (MPIDI_CH3_PKT_END_ALL + 1)

/* The short form of an eager message in a ring cell.  ch3's packet is 80 bytes (its union
 * of every packet type), so after the cell's header the data of an eager message would
 * start in the cell's second line, and 32 bytes of it would reach into the third.  A
 * message moves line by line between cores, and on a mesh of many cores each line costs
 * about as much as the message itself.  In the short form a message with data of
 * SMHEAP_SHORT_DATA bytes at most is the cell's word (smheap_ring.h: sequence number, ack
 * and this form), the match (tag, rank, context id), the sender's request if it has one
 * (MPI_Isend: so that MPI_Cancel can find the message), and the data: 48 bytes of data
 * (44 with a request) share the first line with all of it.  The form gives the data's
 * length. */
#define SMHEAP_SHORT_FORM 0x8000
#define SMHEAP_SHORT_SREQ 0x4000        /* the sender's request follows the match */
#define SMHEAP_SHORT_LEN_MASK 0x3fff
#define SMHEAP_SHORT_DATA 512
#define SMHEAP_SHORT_HEADER (sizeof(uint64_t) + sizeof(MPIDI_Message_match) + sizeof(MPI_Request))
extern MPIDI_CH3_PktHandler_Fcn *MPIDI_CH3I_pkt_handlers[];    /* by packet type */

/* Fill the handler table with ch3's own (the channel's packets are added by their
 * owners, in MPIDI_CH3_Init). */
int MPIDI_CH3I_Packet_init(void);

/* Feed bytes to ch3: they start either a new message (a packet header, then perhaps
 * data) or continue vc's active receive.  Inline: every message whose data shares its
 * ring cell comes this way. */
static inline int MPIDI_CH3I_Handle_cell(MPIDI_VC_t * vc, char *buf, intptr_t buflen)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_CH3I_VC *ch = &vc->ch;

    while (buflen > 0) {
        MPIR_Request *rreq = ch->recv_active;
        int complete = FALSE;

        if (rreq == NULL) {
            MPIDI_CH3_Pkt_t *pkt = (MPIDI_CH3_Pkt_t *) buf;
            intptr_t len;

            /* senders start every message at a cell boundary */
            MPIR_Assert(buflen >= (intptr_t) sizeof(MPIDI_CH3_Pkt_t));
            MPIR_Assert(pkt->type >= 0 && pkt->type < MPIDI_CH3_PKT_END_ALL);
            buf += sizeof(MPIDI_CH3_Pkt_t);
            buflen -= sizeof(MPIDI_CH3_Pkt_t);
            len = buflen;
            mpi_errno = MPIDI_CH3I_pkt_handlers[pkt->type] (vc, pkt, buf, &len, &rreq);
            MPIR_ERR_CHECK(mpi_errno);
            buf += len;
            buflen -= len;
            if (rreq == NULL)
                continue;
            rreq->dev.iov_offset = 0;
            ch->recv_active = rreq;
            if (buflen == 0)
                break;
        }

        /* copy into the receive request's iov */
        while (buflen > 0 && rreq->dev.iov_count > 0) {
            struct iovec *iov = &rreq->dev.iov[rreq->dev.iov_offset];
            size_t len = MPL_MIN(iov->iov_len, (size_t) buflen);
            if (!rreq->dev.drop_data)
                smheap_copy(iov->iov_base, buf, len);
            buf += len;
            buflen -= len;
            iov->iov_base = (char *) iov->iov_base + len;
            iov->iov_len -= len;
            if (iov->iov_len == 0) {
                rreq->dev.iov_offset++;
                rreq->dev.iov_count--;
            }
        }
        if (rreq->dev.iov_count > 0)
            break;      /* the rest arrives in later cells */

        /* the iov is full: complete the request or let ch3 reload the iov */
        if (rreq->dev.OnDataAvail == NULL) {
            mpi_errno = MPID_Request_complete(rreq);
            complete = TRUE;
        } else {
            mpi_errno = rreq->dev.OnDataAvail(vc, rreq, &complete);
        }
        MPIR_ERR_CHECK(mpi_errno);
        if (complete)
            ch->recv_active = NULL;
        else
            rreq->dev.iov_offset = 0;
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Requests ch3 completed so far: a wait for one request stops scanning after a change. */
static inline int MPIDI_CH3I_Completion_count(void)
{
    return MPL_atomic_relaxed_load_int(&MPIDI_CH3I_progress_completion_count);
}

/* A handler (which returned mpi_errno) took `used` of the `total` bytes of data that came
 * with its packet and gave back rreq, a receive that takes the rest piece by piece: from
 * these bytes, then from later cells. */
static inline int MPIDI_CH3I_Receive_rest(MPIDI_VC_t * vc, MPIR_Request * rreq, int mpi_errno,
                                          char *data, intptr_t used, intptr_t total)
{
    rreq->dev.iov_offset = 0;
    vc->ch.recv_active = rreq;
    if (mpi_errno == MPI_SUCCESS && used < total)
        mpi_errno = MPIDI_CH3I_Handle_cell(vc, data + used, total - used);
    return mpi_errno;
}

/* Hand ch3 an eager message in the short form: rebuild its packet, then as for any other. */
static inline int MPIDI_CH3I_Receive_short(MPIDI_VC_t * vc, smheap_cell_t * cell, unsigned form)
{
    MPIDI_CH3_Pkt_t pkt;
    MPIDI_CH3_Pkt_eager_send_t *eager = &pkt.eager_send;
    char *at = smheap_cell_inline(cell);
    intptr_t len = form & SMHEAP_SHORT_LEN_MASK;
    MPIR_Request *rreq = NULL;
    int mpi_errno;

    MPIR_Assert(vc->ch.recv_active == NULL);    /* a whole message, between messages */
    MPIDI_Pkt_init(eager, MPIDI_CH3_PKT_EAGER_SEND);
    memcpy(&eager->match, at, sizeof(eager->match));
    at += sizeof(eager->match);
    eager->sender_req_id = MPI_REQUEST_NULL;
    if (form & SMHEAP_SHORT_SREQ) {
        memcpy(&eager->sender_req_id, at, sizeof(eager->sender_req_id));
        at += sizeof(eager->sender_req_id);
    }
    eager->data_sz = len;
    mpi_errno = MPIDI_CH3I_pkt_handlers[MPIDI_CH3_PKT_EAGER_SEND] (vc, &pkt, at, &len, &rreq);
    if (rreq != NULL)
        mpi_errno = MPIDI_CH3I_Receive_rest(vc, rreq, mpi_errno, at, len, eager->data_sz);
    return mpi_errno;
}

/* Hand one ring cell to ch3.  A cell holding just a packet header, arriving between
 * messages (every short message and most control packets, and eager messages whose data
 * is placed apart), goes straight to its handler; anything else takes the general path.
 * Inline: it is on the path of every short message. */
static inline int MPIDI_CH3I_Receive_cell(MPIDI_VC_t * vc, smheap_cell_t * cell)
{
    MPIDI_CH3_Pkt_t *pkt = (MPIDI_CH3_Pkt_t *) cell->payload;
    MPIR_Request *rreq = NULL;
    char *data = cell->payload + sizeof(*pkt);
    unsigned form = smheap_cell_form(cell);
    intptr_t len;
    int mpi_errno;

    if (form & SMHEAP_SHORT_FORM)
        return MPIDI_CH3I_Receive_short(vc, cell, form);
    len = cell->apart_len;
    if (vc->ch.recv_active != NULL || cell->len != sizeof(MPIDI_CH3_Pkt_t)) {
        MPIR_Assert(cell->apart_len == 0);      /* only a new message places data apart */
        return MPIDI_CH3I_Handle_cell(vc, cell->payload, cell->len);
    }
    MPIR_Assert(pkt->type >= 0 && pkt->type < MPIDI_CH3_PKT_END_ALL);
    if (len > 0)
        data = smheap_ring_apart_data(&vc->ch.in, vc->ch.geom, cell);
    mpi_errno = MPIDI_CH3I_pkt_handlers[pkt->type] (vc, pkt, data, &len, &rreq);
    if (rreq != NULL)   /* the message's data follows: placed apart, or in later cells */
        mpi_errno = MPIDI_CH3I_Receive_rest(vc, rreq, mpi_errno, data, len, cell->apart_len);
    return mpi_errno;
}

/* A VC's send queue (ch3's socket utilities look at it through SendQ_head). */
#define MPIDI_CH3I_SendQ_head(vcch) ((vcch)->sendq_head)
#define MPIDI_CH3I_Sendq_empty(vc) ((vc)->ch.sendq_head == NULL)

static inline void MPIDI_CH3I_Sendq_append(MPIDI_VC_t * vc, MPIR_Request * sreq)
{
    sreq->next = NULL;
    if (vc->ch.sendq_tail)
        vc->ch.sendq_tail->next = sreq;
    else
        vc->ch.sendq_head = sreq;
    vc->ch.sendq_tail = sreq;
}

static inline MPIR_Request *MPIDI_CH3I_Sendq_dequeue(MPIDI_VC_t * vc)
{
    MPIR_Request *sreq = vc->ch.sendq_head;
    vc->ch.sendq_head = sreq->next;
    if (vc->ch.sendq_head == NULL)
        vc->ch.sendq_tail = NULL;
    return sreq;
}

/* Run fn(arg) with MPICH's global lock released (held recursively or not), so that the
 * application's other threads may use MPI meanwhile. */
int MPIDI_CH3I_Without_global_lock(int (*fn) (void *), void *arg);

#endif /* SMHEAP_PACKET_H_INCLUDED */

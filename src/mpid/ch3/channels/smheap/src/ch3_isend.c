/*
 * ch3:smheap -- MPIDI_CH3_iStartMsg(v) and MPIDI_CH3_iSend(v): copy a packet and its
 * data into the receiver's ring; what does not fit waits, in order, on the VC's send
 * queue and is finished by the progress engine.
 */

#include "mpidi_ch3_impl.h"
#include <sys/mman.h>
#include <unistd.h>

/* Fault in our mapping of vc's outbound ring before the first copy of n bytes that the
 * pace watcher may time (copy_into_ring): its first lap through a ring's cells would
 * otherwise pay a page fault per page, which the watcher would take for slow rings.  Only
 * rings that carry messages of several cells are committed whole. */
static inline void populate_out_ring(MPIDI_VC_t * vc, size_t n)
{
    uintptr_t page, start, end;

    if (likely(vc->ch.out_populated || n < SMHEAP_PACE_SAMPLE_MIN))
        return;
    vc->ch.out_populated = TRUE;
    page = (uintptr_t) sysconf(_SC_PAGESIZE);
    start = ((uintptr_t) vc->ch.out.ring + page - 1) & ~(page - 1);
    end = ((uintptr_t) vc->ch.out.ring + smheap_ring_size(vc->ch.geom)) & ~(page - 1);
    if (end <= start)
        return;
#ifdef MADV_POPULATE_WRITE
    if (madvise((void *) start, end - start, MADV_POPULATE_WRITE) == 0)
        return;
#endif
    /* kernels before 5.14: write each page unchanged (the receiver may be reading it) */
    for (uintptr_t p = start; p < end; p += page)
        __atomic_fetch_add((char *) p, 0, __ATOMIC_RELAXED);
}

/* Copy n bytes into a cell of a message that fills several, timing some of the copies to
 * tell when the rings are slow (smheap_pace.h).  Not the data of one-cell messages: from
 * a few KiB it goes further into its cell, into lines that come back cold, at a speed
 * that says more about the caches than about the rings. */
static inline void copy_into_ring(char *dst, const void *src, size_t n, int timed)
{
    if (timed && unlikely(smheap_pace_sample_due(n))) {
        uint64_t start = smheap_pace_now();

        smheap_copy(dst, src, n);
        smheap_pace_record(n, smheap_pace_now() - start);
    } else {
        smheap_copy(dst, src, n);
    }
}

/* Count the cache lines a message was written into (MPI_T): hdr bytes from the start of its
 * cell, and apart bytes placed apart from them. */
static inline void count_lines(size_t hdr, size_t apart)
{
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_ring_lines,
                            MPL_DIV_ROUNDUP(hdr, SMHEAP_CACHELINE) +
                            MPL_DIV_ROUNDUP(apart, SMHEAP_CACHELINE));
}

/* What a cell we send tells vc's process: how many of its cells to us we have released. */
static inline unsigned our_ack(const MPIDI_VC_t * vc)
{
    return (unsigned) vc->ch.in.pos;
}

/* Copy as much of iov[0..*n_iov) as fits into free cells of vc's ring.  Advances *iov and
 * *n_iov past what was copied (a partly copied entry is adjusted in place).  Returns
 * TRUE when everything was copied.  timed: the pace watch may time these copies. */
int MPIDI_CH3I_Writev(MPIDI_VC_t * vc, struct iovec **iov, int *n_iov, int timed)
{
    struct iovec *v = *iov;
    int n = *n_iov;
    const smheap_ring_geometry_t *geom = vc->ch.geom;
    size_t payload = smheap_cell_payload(geom);
    int published = 0;

    while (n > 0) {
        smheap_cell_t *cell;
        size_t used = 0;

        while (n > 0 && v->iov_len == 0) {
            v++;
            n--;
        }
        if (n == 0)
            break;
        cell = smheap_ring_reserve(&vc->ch.out, geom);
        if (cell == NULL)
            break;
        while (n > 0 && used < payload) {
            size_t len = MPL_MIN(v->iov_len, payload - used);

            populate_out_ring(vc, len);
            copy_into_ring(cell->payload + used, v->iov_base, len, timed);
            used += len;
            v->iov_base = (char *) v->iov_base + len;
            v->iov_len -= len;
            if (v->iov_len == 0) {
                v++;
                n--;
            }
        }
        smheap_ring_publish(&vc->ch.out, geom, cell, used, our_ack(vc));
        count_lines(offsetof(smheap_cell_t, payload) + used, 0);
        published = 1;
    }
    if (published)
        smheap_doorbell_ring(vc->ch.peer_bell);

    *iov = v;
    *n_iov = n;
    return n == 0;
}

/* A VC to a process of another job gets its path at its first message: an outbound ring
 * (a link) if the process is on our node, else its socket (vc->ch.remote). */
static inline int choose_path(MPIDI_VC_t * vc)
{
    if (likely(vc->ch.out.ring != NULL || vc->ch.remote) ||
        vc->state == MPIDI_VC_STATE_MORIBUND)
        return MPI_SUCCESS;
    return MPIDI_CH3I_Link_open_outbox(vc);
}

/* Count the eager messages among the packets we send (MPI_T). */
static inline void count_eager(const MPIDI_CH3_Pkt_t * pkt)
{
    switch (pkt->type) {
        case MPIDI_CH3_PKT_EAGER_SEND:
        case MPIDI_CH3_PKT_EAGER_SYNC_SEND:
        case MPIDI_CH3_PKT_READY_SEND:
            MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_eager_msgs, 1);
            MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_eager_bytes, pkt->eager_send.data_sz);
            break;
        case MPIDI_CH3_PKT_EAGERSHORT_SEND:
            MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_eager_msgs, 1);
            MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_eager_bytes, pkt->eagershort_send.data_sz);
            break;
        default:
            break;
    }
}

static size_t iov_bytes(const struct iovec *iov, int n_iov)
{
    size_t n = 0;

    for (int i = 0; i < n_iov; i++)
        n += iov[i].iov_len;
    return n;
}

/* Copy the caller's iov; every packet header travels at the channel's one fixed header
 * size, that of the largest packet. */
static void copy_iov(struct iovec *dst, const struct iovec *iov, int n_iov)
{
    int i;

    MPIR_Assert(n_iov <= MPL_IOV_LIMIT);
    MPIR_Assert(iov[0].iov_len <= sizeof(MPIDI_CH3_Pkt_t));
    for (i = 0; i < n_iov; i++)
        dst[i] = iov[i];
    dst[0].iov_len = sizeof(MPIDI_CH3_Pkt_t);
}

/* A free cell of vc's ring for a new message, if nothing is queued ahead of it. */
static inline smheap_cell_t *reserve_for_new_message(MPIDI_VC_t * vc)
{
    if (!MPIDI_CH3I_Sendq_empty(vc) || vc->ch.out.ring == NULL ||
        vc->state == MPIDI_VC_STATE_MORIBUND)
        return NULL;
    return smheap_ring_reserve(&vc->ch.out, vc->ch.geom);
}

/* Copy the data of iov[1..n_iov) to dst. */
static inline void copy_data(char *dst, const struct iovec *iov, int n_iov)
{
    for (int i = 1; i < n_iov; i++) {
        smheap_copy(dst, iov[i].iov_base, iov[i].iov_len);
        dst += iov[i].iov_len;
    }
}

/* An eager message of 1 to SMHEAP_SHORT_DATA bytes of contiguous data (a packet and its
 * data): where its data is, and how much.  FALSE for every other packet, among them ch3's
 * own short packet (MPI_Send of up to 16 bytes), whose data inside the packet already ends
 * within the cell's first line, and empty messages, whose header does too. */
static inline int short_eager_data(const struct iovec *iov, int n_iov, const void **data,
                                   size_t *len)
{
#ifndef MPID_USE_SEQUENCE_NUMBERS       /* the short form has no room for them */
    const MPIDI_CH3_Pkt_t *pkt = iov[0].iov_base;

    if (pkt->type == MPIDI_CH3_PKT_EAGER_SEND && n_iov <= 2) {
        *len = n_iov == 2 ? iov[1].iov_len : 0;
        *data = n_iov == 2 ? iov[1].iov_base : NULL;
        return *len > 0 && *len <= SMHEAP_SHORT_DATA && *len == (size_t) pkt->eager_send.data_sz;
    }
#endif
    return FALSE;
}

/* Write a short eager message into cell in the short form (smheap_packet.h) and publish it. */
static inline void send_short(MPIDI_VC_t * vc, smheap_cell_t * cell, const MPIDI_CH3_Pkt_t * pkt,
                              const void *data, size_t len, unsigned ack)
{
    char *at = smheap_cell_inline(cell);
    unsigned form = SMHEAP_SHORT_FORM | (unsigned) len;

    memcpy(at, &pkt->eager_send.match, sizeof(MPIDI_Message_match));
    at += sizeof(MPIDI_Message_match);
    if (pkt->eager_send.sender_req_id != MPI_REQUEST_NULL) {
        memcpy(at, &pkt->eager_send.sender_req_id, sizeof(MPI_Request));
        at += sizeof(MPI_Request);
        form |= SMHEAP_SHORT_SREQ;
    }
    if (len <= SMHEAP_COPY_SMALL)
        smheap_copy_small(at, data, len);
    else
        memcpy(at, data, len);
    smheap_ring_publish_form(&vc->ch.out, vc->ch.geom, cell, form, ack);
    count_lines(at + len - (char *) cell, 0);
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_short_msgs, 1);
}

/* A lone packet header that fits in the cell's first line (ch3's short packet with its data,
 * an empty eager message, most control packets) is written there and no further: the rest
 * of the channel's fixed header size is the packet union's padding, which no handler reads,
 * and writing it would cost the line after. */
#define FIRST_LINE_HEADER (SMHEAP_CACHELINE - offsetof(smheap_cell_t, payload))

/* The commonest sends, a lone packet header (every short message, most control packets) or
 * a header and data that fit in one cell (eager messages), to a VC with nothing queued: the
 * message goes straight into one cell, with no iov bookkeeping and the header copied at a
 * size the compiler inlines.  Eager messages of a few hundred bytes go in the short form,
 * whose header leaves 48 bytes of data in the cell's first line.  From a few KiB the data
 * goes further into the cell, where the ring spreads it (smheap_ring.h); smaller data of at
 * least a kilobyte or so goes into the ring's warm slot if that is free; other data follows
 * the header.  (Spread lines come back cold; the slot's come back from the other core's
 * cache, which is cheaper only for the smallest; figures: doc/p2p.md.)
 * A short message whose last one has been read goes into the ring's hot cell, whose lines
 * stay in both cores' caches (smheap_ring.h).  This is the sending half of the
 * small-message latency. */
static inline int try_send_in_one_cell(MPIDI_VC_t * vc, const struct iovec *iov, int n_iov)
{
    smheap_cell_t *cell = reserve_for_new_message(vc), *hot;
    const smheap_ring_geometry_t *geom = vc->ch.geom;
    size_t used = sizeof(MPIDI_CH3_Pkt_t), data = 0, at, bytes;
    unsigned ack = our_ack(vc);
    const void *short_data;
    char *warm;
    int i, is_short;

    if (cell == NULL)
        return FALSE;
    is_short = short_eager_data(iov, n_iov, &short_data, &data);
    if (is_short) {
        bytes = SMHEAP_SHORT_HEADER + data;
    } else {
        for (i = 1, data = 0; i < n_iov; i++)
            data += iov[i].iov_len;
        if (data > smheap_cell_payload(geom) - used)
            return FALSE;       /* nothing written: the cell stays free */
        bytes = offsetof(smheap_cell_t, payload) + used + data;
    }
    count_eager(iov[0].iov_base);
    if ((hot = smheap_ring_reserve_hot(&vc->ch.out, geom, bytes)) != NULL) {
        cell = hot;
        MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_hot_msgs, 1);
    }
    if (is_short) {
        send_short(vc, cell, iov[0].iov_base, short_data, data, ack);
    } else {
        if (data == 0 && iov[0].iov_len <= FIRST_LINE_HEADER) {
            memcpy(cell->payload, iov[0].iov_base, FIRST_LINE_HEADER);
            bytes = SMHEAP_CACHELINE;
        } else {
            memcpy(cell->payload, iov[0].iov_base, sizeof(MPIDI_CH3_Pkt_t));
        }
        if (hot == NULL && data >= smheap_queue.spread_min &&
            (at = smheap_ring_spread(&vc->ch.out, geom, used, data)) != 0) {
            copy_data((char *) cell + at, iov, n_iov);
            smheap_ring_publish_apart(&vc->ch.out, geom, cell, used, data, at, ack);
            MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_spread_msgs, 1);
            count_lines(offsetof(smheap_cell_t, payload) + used, data);
        } else if (hot == NULL && data >= smheap_queue.warm_min &&
                   (warm = smheap_ring_reserve_warm(&vc->ch.out, geom, data)) != NULL) {
            copy_data(warm, iov, n_iov);
            smheap_ring_publish_warm(&vc->ch.out, geom, cell, used, data, ack);
            MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_warm_msgs, 1);
            count_lines(offsetof(smheap_cell_t, payload) + used, data);
        } else {
            copy_data(cell->payload + used, iov, n_iov);
            smheap_ring_publish(&vc->ch.out, geom, cell, used + data, ack);
            count_lines(bytes, 0);
        }
    }
    smheap_doorbell_ring(vc->ch.peer_bell);
    return TRUE;
}

/* Keep what is left of a send in sreq, copying the packet header into the request if it
 * was not sent yet (the caller's header may live on its stack). */
static void save_remainder(MPIR_Request * sreq, const struct iovec *iov, int n_iov,
                           int header_unsent)
{
    int i;

    for (i = 0; i < n_iov; i++)
        sreq->dev.iov[i] = iov[i];
    if (header_unsent) {
        sreq->dev.pending_pkt = *(MPIDI_CH3_Pkt_t *) iov[0].iov_base;
        sreq->dev.iov[0].iov_base = (void *) &sreq->dev.pending_pkt;
    }
    sreq->dev.iov_offset = 0;
    sreq->dev.iov_count = n_iov;
}

/* A request's iov has been copied out: complete it, or let ch3 reload its iov (a
 * noncontiguous or pipelined send) and keep going. */
static int send_iov_done(MPIDI_VC_t * vc, MPIR_Request * sreq, int *complete)
{
    int mpi_errno = MPI_SUCCESS;
    int (*reqFn) (MPIDI_VC_t *, MPIR_Request *, int *) = sreq->dev.OnDataAvail;

    if (!reqFn) {
        MPIR_Assert(MPIDI_Request_get_type(sreq) != MPIDI_REQUEST_TYPE_GET_RESP);
        mpi_errno = MPID_Request_complete(sreq);
        *complete = TRUE;
    } else {
        mpi_errno = reqFn(vc, sreq, complete);
        if (!*complete)
            sreq->dev.iov_offset = 0;
    }
    return mpi_errno;
}

/* Drive one VC's send queue as far as its ring allows.
 *
 * A request's OnDataAvail may start another send on the same VC (an RMA completion that
 * acknowledges, say).  That send is queued behind the head request, which stays at the
 * head until its handler says it is complete, and the re-entrant call returns at once:
 * this loop then sends it, after the whole of the head message. */
int MPIDI_CH3I_Send_progress_vc(MPIDI_VC_t * vc)
{
    int mpi_errno = MPI_SUCCESS;

    if (vc->ch.draining)
        return MPI_SUCCESS;
    vc->ch.draining = TRUE;

    while (!MPIDI_CH3I_Sendq_empty(vc)) {
        MPIR_Request *sreq = vc->ch.sendq_head;
        struct iovec *iov = &sreq->dev.iov[sreq->dev.iov_offset];
        int n_iov = sreq->dev.iov_count;
        int complete = FALSE;

        if (!MPIDI_CH3I_Writev(vc, &iov, &n_iov, sreq->ch.pace_timed)) {
            sreq->dev.iov_offset = iov - sreq->dev.iov;
            sreq->dev.iov_count = n_iov;
            break;
        }
        sreq->dev.iov_count = 0;        /* all written; OnDataAvail may load more */
        mpi_errno = send_iov_done(vc, sreq, &complete);
        MPIR_ERR_CHECK(mpi_errno);
        if (complete)
            MPIDI_CH3I_Sendq_dequeue(vc);
        /* else: OnDataAvail loaded the next part of the same message into the iov */
    }

    if (MPIDI_CH3I_Sendq_empty(vc) && vc->ch.terminate_when_drained) {
        vc->ch.terminate_when_drained = FALSE;
        mpi_errno = MPIDI_CH3I_Connection_closed(vc);
        MPIR_ERR_CHECK(mpi_errno);
    }

  fn_exit:
    vc->ch.draining = FALSE;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_CH3_iSendv(MPIDI_VC_t * vc, MPIR_Request * sreq, struct iovec *iov, int n_iov)
{
    int mpi_errno = MPI_SUCCESS;
    struct iovec local[MPL_IOV_LIMIT];
    struct iovec *rest = local;
    int n_rest = n_iov;

    MPIR_FUNC_ENTER;
    mpi_errno = choose_path(vc);
    MPIR_ERR_CHECK(mpi_errno);
    if (vc->ch.remote) {
        mpi_errno = MPIDI_CH3I_Net_iSendv(vc, sreq, iov, n_iov);
        goto fn_exit;
    }
    sreq->ch.vc = vc;
    if (sreq->dev.OnDataAvail == NULL && try_send_in_one_cell(vc, iov, n_iov)) {
        mpi_errno = MPID_Request_complete(sreq);
        goto fn_exit;
    }
    copy_iov(local, iov, n_iov);
    count_eager(iov[0].iov_base);

    if (vc->state == MPIDI_VC_STATE_MORIBUND) {
        MPIR_ERR_SET1(sreq->status.MPI_ERROR, MPIX_ERR_PROC_FAILED, "**comm_fail",
                      "**comm_fail %d", vc->pg_rank);
        mpi_errno = MPID_Request_complete(sreq);
        goto fn_exit;
    }

    sreq->ch.pace_timed = smheap_pace_watches(iov_bytes(iov, n_iov));
    if (MPIDI_CH3I_Sendq_empty(vc) &&
        MPIDI_CH3I_Writev(vc, &rest, &n_rest, sreq->ch.pace_timed) &&
        sreq->dev.OnDataAvail == NULL) {
        /* the common case: all in the ring, nothing more to do for this request */
        mpi_errno = MPID_Request_complete(sreq);
        goto fn_exit;
    }
    /* Whatever is left -- data that did not fit, or a handler that may load more data
     * or start other sends -- goes through the queue, in order. */
    save_remainder(sreq, rest, n_rest, rest == local);
    MPIDI_CH3I_Sendq_enqueue(vc, sreq);
    mpi_errno = MPIDI_CH3I_Send_progress_vc(vc);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_CH3_iSend(MPIDI_VC_t * vc, MPIR_Request * sreq, void *hdr, intptr_t hdr_sz)
{
    struct iovec iov = { hdr, hdr_sz };
    return MPIDI_CH3_iSendv(vc, sreq, &iov, 1);
}

/* A message without a request of its own that did not go into one cell: a VC on another
 * node, a VC still without its ring, a queue ahead of it, a full ring, or more data than a
 * cell holds. */
static int start_msg_slowly(MPIDI_VC_t * vc, struct iovec *iov, int n_iov,
                            MPIR_Request ** sreq_ptr)
{
    int mpi_errno = MPI_SUCCESS;
    struct iovec local[MPL_IOV_LIMIT];
    struct iovec *rest = local;
    int n_rest = n_iov, timed;
    MPIR_Request *sreq;

    mpi_errno = choose_path(vc);
    MPIR_ERR_CHECK(mpi_errno);
    if (vc->ch.remote)
        return MPIDI_CH3I_Net_iStartMsgv(vc, iov, n_iov, sreq_ptr);
    copy_iov(local, iov, n_iov);
    count_eager(iov[0].iov_base);
    *sreq_ptr = NULL;

    if (vc->state == MPIDI_VC_STATE_MORIBUND) {
        sreq = MPIR_Request_create_complete(MPIR_REQUEST_KIND__SEND);
        MPIR_ERR_CHKANDJUMP(sreq == NULL, mpi_errno, MPI_ERR_OTHER, "**nomemreq");
        MPIR_ERR_SET1(sreq->status.MPI_ERROR, MPIX_ERR_PROC_FAILED, "**comm_fail",
                      "**comm_fail %d", vc->pg_rank);
        *sreq_ptr = sreq;
        goto fn_exit;
    }

    timed = smheap_pace_watches(iov_bytes(iov, n_iov));
    if (MPIDI_CH3I_Sendq_empty(vc) && MPIDI_CH3I_Writev(vc, &rest, &n_rest, timed))
        goto fn_exit;   /* all in the ring: no request needed */

    sreq = MPIR_Request_create(MPIR_REQUEST_KIND__SEND);
    MPIR_ERR_CHKANDJUMP(sreq == NULL, mpi_errno, MPI_ERR_OTHER, "**nomemreq");
    MPIR_Object_set_ref(sreq, 2);       /* one for the caller, one until it is sent */
    sreq->dev.OnDataAvail = NULL;
    sreq->ch.vc = vc;
    sreq->ch.pace_timed = timed;
    save_remainder(sreq, rest, n_rest, rest == local);
    MPIDI_CH3I_Sendq_enqueue(vc, sreq);
    *sreq_ptr = sreq;

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_CH3_iStartMsgv(MPIDI_VC_t * vc, struct iovec *iov, int n_iov,
                         MPIR_Request ** sreq_ptr)
{
    MPIR_Assert(iov[0].iov_len <= sizeof(MPIDI_CH3_Pkt_t));
    if (likely(try_send_in_one_cell(vc, iov, n_iov))) {
        *sreq_ptr = NULL;
        return MPI_SUCCESS;
    }
    return start_msg_slowly(vc, iov, n_iov, sreq_ptr);
}

int MPIDI_CH3_iStartMsg(MPIDI_VC_t * vc, void *hdr, intptr_t hdr_sz, MPIR_Request ** sreq_ptr)
{
    struct iovec iov = { hdr, hdr_sz };
    return MPIDI_CH3_iStartMsgv(vc, &iov, 1, sreq_ptr);
}

/* Send a packet without data, forgetting it: a request the channel needs to finish
 * sending it is released at once (the channel completes it). */
int MPIDI_CH3I_Send_pkt(MPIDI_VC_t * vc, void *pkt, intptr_t size)
{
    int mpi_errno;
    MPIR_Request *req = NULL;

    MPID_THREAD_CS_ENTER(POBJ, vc->pobj_mutex);
    mpi_errno = MPIDI_CH3_iStartMsg(vc, pkt, size, &req);
    MPID_THREAD_CS_EXIT(POBJ, vc->pobj_mutex);
    if (req != NULL)
        MPIR_Request_free(req);
    return mpi_errno;
}

/* ------------------------------------------------------------------------------------ */
/* VCs with queued sends, and closing                                                   */

MPIDI_VC_t *MPIDI_CH3I_Pending_vcs;     /* VCs whose send queue is not empty */

void MPIDI_CH3I_Sendq_mark_pending(MPIDI_VC_t * vc)
{
    if (!vc->ch.on_pending_list) {
        vc->ch.on_pending_list = TRUE;
        DL_PREPEND_NP(MPIDI_CH3I_Pending_vcs, vc, ch.pending_next, ch.pending_prev);
    }
}

/* Push what the VCs with a nonempty send queue have queued (the progress engine). */
int MPIDI_CH3I_Send_pending(int *made_progress)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_VC_t *vc, *tmp;

    DL_FOREACH_SAFE_NP(MPIDI_CH3I_Pending_vcs, vc, tmp, ch.pending_next, ch.pending_prev) {
        unsigned before = vc->ch.out.pos;

        mpi_errno = MPIDI_CH3I_Send_progress_vc(vc);
        MPIR_ERR_CHECK(mpi_errno);
        if (vc->ch.out.pos != before)
            *made_progress = TRUE;
        if (MPIDI_CH3I_Sendq_empty(vc)) {
            DL_DELETE_NP(MPIDI_CH3I_Pending_vcs, vc, ch.pending_next, ch.pending_prev);
            vc->ch.on_pending_list = FALSE;
        }
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* The close protocol is over and everything sent: the VC's links (if any) are done with;
 * ch3 may now destroy the VC. */
int MPIDI_CH3I_Connection_closed(MPIDI_VC_t * vc)
{
    MPIDI_CH3I_Link_retire(vc);
    return MPIDI_CH3U_Handle_connection(vc, MPIDI_VC_EVENT_TERMINATED);
}

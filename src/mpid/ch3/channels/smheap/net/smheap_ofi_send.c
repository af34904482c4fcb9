/*
 * ch3:smheap -- messages to the ranks of our job on other nodes over libfabric: ch3's iovs
 * as DATA messages (copied, up to a buffer's size) or READs (where the data lies, for the
 * receiver to read), queued per peer in ch3's order, control messages (ACK, PING) ahead of
 * them; and the sender's side of an ACK.
 */

#include "smheap_ofi.h"
#include "smheap_mpit.h"

/* The peer is gone: `how` we learnt it. */
int smheap_ofi_peer_lost_as(MPIDI_VC_t * vc, const char *how)
{
    vc->ch.ofi->failed = 1;
    vc->ch.state = MPIDI_CH3I_VC_STATE_FAILED;
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_remote_failures, 1);
    return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                MPIX_ERR_PROC_FAILED, "**smheap_ofi_lost",
                                "**smheap_ofi_lost %d %s", vc->pg_rank, how);
}

/* Whether the peer may have closed its endpoint and left in good order: it sends its last
 * message of ch3's close protocol (a CLOSE ack) before it leaves, so from CLOSE_ACKED on
 * we owe it nothing and it owes us at most that ack. */
int smheap_ofi_peer_may_have_left(MPIDI_VC_t * vc)
{
    return vc->ch.ofi->closed || vc->state == MPIDI_VC_STATE_CLOSE_ACKED ||
        vc->state == MPIDI_VC_STATE_CLOSED || vc->state == MPIDI_VC_STATE_MORIBUND;
}

/* An operation with the peer failed with libfabric's error ret: a lost peer, unless it
 * may have left in good order.  Then nothing more goes to it, and a close still waiting
 * for its ack ends as ch3 ends one whose connection closed (there is nothing in flight
 * either way at that step); an ack that arrives after is dropped with the rest of what
 * a failed peer sends. */
int smheap_ofi_peer_lost(MPIDI_VC_t * vc, int ret)
{
    if (!smheap_ofi_peer_may_have_left(vc))
        return smheap_ofi_peer_lost_as(vc, smheap_ofi_lib.strerror(ret));
    vc->ch.ofi->failed = 1;
    if (vc->state == MPIDI_VC_STATE_CLOSE_ACKED)
        return MPIDI_CH3U_Handle_connection(vc, MPIDI_VC_EVENT_TERMINATED);
    return MPI_SUCCESS;
}

/* Hand one message to the provider: 0, or -FI_EAGAIN (then poll tries again), or the
 * error that lost the peer. */
static int post_send(MPIDI_VC_t * vc, buf_t * b)
{
    smheap_ofi_peer_t *peer = vc->ch.ofi;
    hdr_t *h = (hdr_t *) b->data;
    ssize_t ret;

    h->seq = peer->send_seq;
    PRIVATELY(ret = fi_send(smheap_ofi.ep, b->data, b->len, smheap_ofi_buf_desc(b), peer->addr,
                            &b->ctx));
    if (ret == -FI_EAGAIN && !peer->out_stalled) {
        peer->out_stalled = 1;
        peer->next_stalled = smheap_ofi.stalled_peers;
        smheap_ofi.stalled_peers = peer;
    }
    if (ret == 0) {
        smheap_ofi.sends_out++;
        peer->send_seq++;
    }
    return (int) ret;
}

/* Hand the peer's queued messages to the provider: ACKs first (they are not part of ch3's
 * stream, and a peer waiting for ours may be what we wait for), then ch3's, up to a READ
 * (then wait for its ACK). */
int smheap_ofi_flush_out(MPIDI_VC_t * vc)
{
    smheap_ofi_peer_t *peer = vc->ch.ofi;
    int ret = 0;

    while (peer->ctl_head != NULL && (ret = post_send(vc, peer->ctl_head)) == 0)
        peer->ctl_head = peer->ctl_head->next;
    while (ret == 0 && peer->ctl_head == NULL && peer->out_head != NULL && !peer->awaiting_ack) {
        buf_t *b = peer->out_head;

        ret = post_send(vc, b);
        if (ret != 0)
            break;
        peer->out_head = b->next;
        if (peer->out_head == NULL)
            peer->out_tail = NULL;
        if (((hdr_t *) b->data)->kind == MSG_READ) {
            peer->awaiting_ack = 1;
            peer->read_sreq = b->sreq;
            memcpy(peer->read_mrs, b->mrs, b->n_mrs * sizeof(b->mrs[0]));
            peer->n_read_mrs = b->n_mrs;
        }
    }
    if (ret != 0 && ret != -FI_EAGAIN)
        return smheap_ofi_peer_lost(vc, -ret);
    return MPI_SUCCESS;
}

/* An ACK or a PING: behind the peer's other control messages, ahead of ch3's. */
int smheap_ofi_send_control(MPIDI_VC_t * vc, buf_t * b)
{
    buf_t **at;

    for (at = &vc->ch.ofi->ctl_head; *at != NULL; at = &(*at)->next)
        continue;
    b->next = NULL;
    *at = b;
    return smheap_ofi_flush_out(vc);
}

buf_t *smheap_ofi_new_msg(MPIDI_VC_t * vc, int kind, uint64_t cookie)
{
    buf_t *b = smheap_ofi_get_buf();
    hdr_t *h;

    if (b == NULL)
        return NULL;
    h = (hdr_t *) b->data;
    h->src = (uint32_t) MPIDI_Process.my_pg_rank;
    h->kind = (uint32_t) kind;
    h->cookie = cookie;
    b->vc = vc;
    b->len = sizeof(hdr_t);
    b->sreq = NULL;
    b->n_mrs = 0;
    return b;
}

static size_t iov_bytes(const struct iovec *iov, int n)
{
    size_t total = 0;
    int i;

    for (i = 0; i < n; i++)
        total += iov[i].iov_len;
    return total;
}

static void append(buf_t * b, buf_t ** head, buf_t ** tail)
{
    b->next = NULL;
    if (*tail)
        (*tail)->next = b;
    else
        *head = b;
    *tail = b;
}

/* Copy iov[0..n) into DATA messages of at most smheap_ofi.data_max bytes each (what the
 * provider sends eagerly: a larger message would take its own rendezvous), appended to
 * the list.  0, or -1 for want of memory. */
static int data_msgs(MPIDI_VC_t * vc, const struct iovec *iov, int n, buf_t ** head,
                     buf_t ** tail)
{
    size_t off = 0;
    int i = 0, first = 1;

    for (;;) {
        buf_t *b;

        while (i < n && off == iov[i].iov_len) {
            i++;
            off = 0;
        }
        if (i == n && !first)
            return 0;
        first = 0;
        b = smheap_ofi_new_msg(vc, MSG_DATA, 0);
        if (b == NULL)
            return -1;
        while (i < n && b->len < smheap_ofi.data_max) {
            size_t len = MPL_MIN(iov[i].iov_len - off, smheap_ofi.data_max - b->len);

            memcpy(b->data + b->len, (char *) iov[i].iov_base + off, len);
            b->len += len;
            off += len;
            if (off == iov[i].iov_len) {
                i++;
                off = 0;
            }
        }
        append(b, head, tail);
        MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_net_ofi_data_msgs, 1);
    }
}

/* A READ for sreq's iov[0..n) (iov[0] a packet header if has_pkt): name where each piece
 * lies, registering the pieces outside the heap. */
static buf_t *read_msg(MPIDI_VC_t * vc, MPIR_Request * sreq, const struct iovec *iov, int n,
                       int has_pkt)
{
    buf_t *b = smheap_ofi_new_msg(vc, MSG_READ, (uint64_t) (uintptr_t) sreq);
    read_desc_t *d;
    seg_t *segs;
    int i, first = has_pkt ? 1 : 0;

    if (b == NULL)
        return NULL;
    d = (read_desc_t *) (b->data + b->len);
    d->has_pkt = has_pkt;
    d->nseg = 0;
    b->len += sizeof(*d);
    if (has_pkt) {
        memcpy(b->data + b->len, iov[0].iov_base, sizeof(MPIDI_CH3_Pkt_t));
        b->len += sizeof(MPIDI_CH3_Pkt_t);
    }
    segs = (seg_t *) (b->data + b->len);
    for (i = first; i < n; i++) {
        seg_t *s = &segs[d->nseg];

        if (iov[i].iov_len == 0)
            continue;
        s->len = iov[i].iov_len;
        if (smheap_ofi_in_heap(iov[i].iov_base, iov[i].iov_len)) {
            s->addr = smheap_ofi_remote_addr(iov[i].iov_base, smheap_ofi.heap_base);
            s->key = fi_mr_key(smheap_ofi.heap_mr);
        } else {
            struct fid_mr *mr;

            MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_net_registrations, 1);
            if (smheap_ofi_mr_register(iov[i].iov_base, iov[i].iov_len, FI_REMOTE_READ, &mr) != 0)
                goto fail;
            b->mrs[b->n_mrs++] = mr;
            s->addr = smheap_ofi_remote_addr(iov[i].iov_base, (uintptr_t) iov[i].iov_base);
            s->key = fi_mr_key(mr);
        }
        d->nseg++;
    }
    b->len += d->nseg * sizeof(seg_t);
    b->sreq = sreq;
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_net_ofi_read_msgs, 1);
    return b;

  fail:
    while (b->n_mrs > 0)
        fi_close(&b->mrs[--b->n_mrs]->fid);
    smheap_ofi_put_buf(b);
    return NULL;
}

/* The request's iov went (copied, or read by the peer): complete it or let ch3 reload. */
static int request_sent(MPIDI_VC_t * vc, MPIR_Request * sreq, int *complete)
{
    int (*reqFn) (MPIDI_VC_t *, MPIR_Request *, int *) = sreq->dev.OnDataAvail;

    if (reqFn == NULL) {
        *complete = TRUE;
        return MPID_Request_complete(sreq);
    }
    return reqFn(vc, sreq, complete);
}

/* Queue the messages that send iov[0..n) of sreq (NULL: a message without a request; one
 * is made if its data must be read) onto the list head..tail, in order.  DATA messages
 * complete the request as they copy; a READ leaves it to the ACK. */
static int describe(MPIDI_VC_t * vc, MPIR_Request * sreq, struct iovec *iov, int n, int has_pkt,
                    MPIR_Request ** made, buf_t ** head, buf_t ** tail)
{
    int mpi_errno = MPI_SUCCESS;

    for (;;) {
        size_t bytes = iov_bytes(iov, n);
        int complete;

        MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_remote_bytes,
                                bytes - (has_pkt ? sizeof(MPIDI_CH3_Pkt_t) : 0));
        if (bytes <= smheap_ofi.copy_max) {
            MPIR_ERR_CHKANDJUMP(data_msgs(vc, iov, n, head, tail) != 0, mpi_errno,
                                MPI_ERR_OTHER, "**nomem");
        } else {
            buf_t *b;

            if (sreq == NULL) {
                sreq = MPIR_Request_create(MPIR_REQUEST_KIND__SEND);
                MPIR_ERR_CHKANDJUMP(sreq == NULL, mpi_errno, MPI_ERR_OTHER, "**nomemreq");
                MPIR_Object_set_ref(sreq, 2);   /* the caller's and the completion's */
                sreq->dev.OnDataAvail = NULL;
                *made = sreq;
            }
            b = read_msg(vc, sreq, iov, n, has_pkt);
            MPIR_ERR_CHKANDJUMP1(b == NULL, mpi_errno, MPI_ERR_OTHER, "**smheap_ofi_reg",
                                 "**smheap_ofi_reg %d", vc->pg_rank);
            append(b, head, tail);
            break;      /* the ACK goes on with the request */
        }
        if (sreq == NULL)
            break;
        mpi_errno = request_sent(vc, sreq, &complete);
        MPIR_ERR_CHECK(mpi_errno);
        if (complete)
            break;
        /* OnDataAvail loaded the next part of the message */
        iov = sreq->dev.iov;
        n = sreq->dev.iov_count;
        has_pkt = 0;
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Send iov[0..n_iov) (a packet header and its data) of sreq, or of a request made if one
 * is needed (*made). */
int smheap_ofi_send_iov(MPIDI_VC_t * vc, MPIR_Request * sreq, struct iovec *iov, int n_iov,
                        MPIR_Request ** made)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_ofi_peer_t *peer = vc->ch.ofi;
    buf_t *head = NULL, *tail = NULL;

    MPIR_Assert(n_iov <= MPL_IOV_LIMIT && iov[0].iov_len <= sizeof(MPIDI_CH3_Pkt_t));
    iov[0].iov_len = sizeof(MPIDI_CH3_Pkt_t);   /* the receiver takes whole headers */
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_remote_msgs, 1);
    if (peer->failed) {
        MPIR_Request *req = sreq;

        if (req == NULL) {
            req = MPIR_Request_create_complete(MPIR_REQUEST_KIND__SEND);
            MPIR_ERR_CHKANDJUMP(req == NULL, mpi_errno, MPI_ERR_OTHER, "**nomemreq");
            *made = req;
        }
        MPIR_ERR_SET2(req->status.MPI_ERROR, MPIX_ERR_PROC_FAILED, "**smheap_ofi_lost",
                      "**smheap_ofi_lost %d %s", vc->pg_rank, "found earlier");
        if (sreq != NULL)
            mpi_errno = MPID_Request_complete(sreq);
        goto fn_exit;
    }
    mpi_errno = describe(vc, sreq, iov, n_iov, 1, made, &head, &tail);
    MPIR_ERR_CHECK(mpi_errno);
    if (peer->out_tail)
        peer->out_tail->next = head;
    else
        peer->out_head = head;
    peer->out_tail = tail;
    mpi_errno = smheap_ofi_flush_out(vc);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* The peer read what our READ named: release its registrations, then finish the request
 * or send the next part of it ahead of everything queued behind. */
int smheap_ofi_handle_ack(MPIDI_VC_t * vc, uint64_t cookie)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_ofi_peer_t *peer = vc->ch.ofi;
    MPIR_Request *sreq = peer->read_sreq;
    buf_t *head = NULL, *tail = NULL;
    int complete;

    MPIR_Assert(peer->awaiting_ack && (uint64_t) (uintptr_t) sreq == cookie);
    while (peer->n_read_mrs > 0)
        fi_close(&peer->read_mrs[--peer->n_read_mrs]->fid);
    peer->awaiting_ack = 0;
    peer->read_sreq = NULL;
    mpi_errno = request_sent(vc, sreq, &complete);
    MPIR_ERR_CHECK(mpi_errno);
    if (!complete) {
        mpi_errno = describe(vc, sreq, sreq->dev.iov, sreq->dev.iov_count, 0, NULL, &head,
                             &tail);
        MPIR_ERR_CHECK(mpi_errno);
        tail->next = peer->out_head;
        peer->out_head = head;
        if (peer->out_tail == NULL)
            peer->out_tail = tail;
    }
    mpi_errno = smheap_ofi_flush_out(vc);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

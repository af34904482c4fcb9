/*
 * ch3:smheap -- messages from the ranks of our job on other nodes over libfabric, handled
 * in the order each peer sent them: DATA goes to ch3 as a ring cell would; a READ's data is
 * read with RDMA from the sender's memory into the receive request's iov, the sender told
 * by an ACK, and what the peer sent meanwhile waits until then.
 */

#include "smheap_ofi.h"
#include "smheap_packet.h"
#include "smheap_mpit.h"

static int deliver(MPIDI_VC_t * vc);

/* The READ is served: tell the sender, then handle what arrived from it meanwhile. */
static int end_read(MPIDI_VC_t * vc)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_ofi_peer_t *peer = vc->ch.ofi;
    buf_t *ack = smheap_ofi_new_msg(vc, MSG_ACK, peer->read_cookie);

    MPIR_ERR_CHKANDJUMP(ack == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    peer->reading = 0;
    smheap_ofi.reading_peers--;
    mpi_errno = smheap_ofi_send_control(vc, ack);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = deliver(vc);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* The request's iov is full: complete it, or let ch3 reload it. */
static int iov_filled(MPIDI_VC_t * vc, MPIR_Request * rreq)
{
    int mpi_errno, complete = FALSE;

    if (rreq->dev.OnDataAvail == NULL) {
        mpi_errno = MPID_Request_complete(rreq);
        complete = TRUE;
    } else {
        mpi_errno = rreq->dev.OnDataAvail(vc, rreq, &complete);
    }
    if (complete)
        vc->ch.recv_active = NULL;
    else
        rreq->dev.iov_offset = 0;
    return mpi_errno;
}

/* Post reads of the sender's pieces into the receive request's iov, as far as the iov
 * goes; when the reads posted so far land, fill (or reload) and go on; the READ is served
 * when its pieces are all read, or when the request is complete (the rest is dropped, as a
 * truncated message's is). */
int smheap_ofi_read_more(MPIDI_VC_t * vc)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_ofi_peer_t *peer = vc->ch.ofi;

    for (;;) {
        MPIR_Request *rreq = vc->ch.recv_active;

        while (rreq != NULL && peer->seg_i < peer->nseg && rreq->dev.iov_count > 0) {
            struct iovec *iov = &rreq->dev.iov[rreq->dev.iov_offset];
            seg_t *s = &peer->segs[peer->seg_i];
            size_t n = MPL_MIN(iov->iov_len, s->len - peer->seg_off);

            n = MPL_MIN(n, smheap_ofi.max_msg);
            if (n > 0 && !rreq->dev.drop_data) {
                read_op_t *op = smheap_ofi_get_op();
                void *desc;
                ssize_t ret;

                MPIR_ERR_CHKANDJUMP(op == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
                op->vc = vc;
                if (smheap_ofi_local_desc(iov->iov_base, n, FI_READ, &desc, &op->mr) != 0) {
                    smheap_ofi_put_op(op);
                    MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**smheap_ofi_reg",
                                         "**smheap_ofi_reg %d", vc->pg_rank);
                }
                PRIVATELY(ret = fi_read(smheap_ofi.ep, iov->iov_base, n, desc, peer->addr,
                                        s->addr + peer->seg_off, s->key, &op->ctx));
                if (ret != 0) {
                    smheap_ofi_put_op(op);
                    if (ret != -FI_EAGAIN) {
                        mpi_errno = smheap_ofi_peer_lost(vc, (int) -ret);
                        goto fn_fail;
                    }
                    if (!peer->reads_stalled) {
                        peer->reads_stalled = 1;
                        smheap_ofi.stalled_reads++;
                    }
                    goto fn_exit;       /* poll posts it again */
                }
                peer->reads_out++;
                MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_net_ofi_reads, 1);
                MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_net_ofi_read_bytes, n);
            }
            iov->iov_base = (char *) iov->iov_base + n;
            iov->iov_len -= n;
            if (iov->iov_len == 0) {
                rreq->dev.iov_offset++;
                rreq->dev.iov_count--;
            }
            peer->seg_off += n;
            if (peer->seg_off == s->len) {
                peer->seg_i++;
                peer->seg_off = 0;
            }
        }
        if (peer->reads_out > 0)
            break;      /* the next step needs these to land */
        if (rreq != NULL && rreq->dev.iov_count == 0) {
            mpi_errno = iov_filled(vc, rreq);
            MPIR_ERR_CHECK(mpi_errno);
            if (vc->ch.recv_active != NULL && peer->seg_i < peer->nseg)
                continue;
        }
        if (vc->ch.recv_active == NULL || peer->seg_i == peer->nseg)
            mpi_errno = end_read(vc);
        break;
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* A READ: its packet (if any) to ch3, then its pieces into the receive request. */
static int start_read(MPIDI_VC_t * vc, buf_t * b)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_ofi_peer_t *peer = vc->ch.ofi;
    const hdr_t *h = (const hdr_t *) b->data;
    read_desc_t *d = (read_desc_t *) (b->data + sizeof(hdr_t));
    char *p = (char *) (d + 1);

    MPIR_Assert(d->nseg <= MAX_SEGS);
    if (d->has_pkt) {
        MPIDI_CH3_Pkt_t *pkt = (MPIDI_CH3_Pkt_t *) p;

        MPIR_ERR_CHKANDJUMP1(vc->ch.recv_active != NULL ||
                             !MPIDI_CH3I_Net_packet_travels(pkt->type), mpi_errno,
                             MPI_ERR_INTERN, "**ch3|sock|badpacket",
                             "**ch3|sock|badpacket %d", pkt->type);
        mpi_errno = MPIDI_CH3I_Handle_cell(vc, p, sizeof(MPIDI_CH3_Pkt_t));
        MPIR_ERR_CHECK(mpi_errno);
        p += sizeof(MPIDI_CH3_Pkt_t);
    }
    memcpy(peer->segs, p, d->nseg * sizeof(seg_t));
    peer->nseg = (int) d->nseg;
    peer->seg_i = 0;
    peer->seg_off = 0;
    peer->read_cookie = h->cookie;
    peer->reading = 1;
    smheap_ofi.reading_peers++;
    mpi_errno = smheap_ofi_read_more(vc);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* A received message, in order: b goes back to the provider once handled. */
static int handle_msg(MPIDI_VC_t * vc, buf_t * b)
{
    int mpi_errno = MPI_SUCCESS;
    const hdr_t *h = (const hdr_t *) b->data;

    switch (h->kind) {
        case MSG_DATA:
            if (vc->ch.recv_active == NULL) {
                const MPIDI_CH3_Pkt_t *pkt = (const MPIDI_CH3_Pkt_t *) (h + 1);

                MPIR_ERR_CHKANDJUMP1(!MPIDI_CH3I_Net_packet_travels(pkt->type), mpi_errno,
                                     MPI_ERR_INTERN, "**ch3|sock|badpacket",
                                     "**ch3|sock|badpacket %d", pkt->type);
            }
            mpi_errno = MPIDI_CH3I_Handle_cell(vc, b->data + sizeof(hdr_t),
                                               (intptr_t) (b->len - sizeof(hdr_t)));
            break;
        case MSG_READ:
            mpi_errno = start_read(vc, b);
            break;
        case MSG_ACK:
            mpi_errno = smheap_ofi_handle_ack(vc, h->cookie);
            break;
        case MSG_PING:
            break;
        default:
            MPIR_ERR_SET1(mpi_errno, MPI_ERR_INTERN, "**ch3|sock|badpacket",
                          "**ch3|sock|badpacket %d", (int) h->kind);
    }
    MPIR_ERR_CHECK(mpi_errno);
    if (smheap_ofi_post_recv(b) != 0)
        MPIR_ERR_SETANDJUMP(mpi_errno, MPI_ERR_OTHER, "**smheap_ofi_recv");

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Handle the peer's received messages in the order it sent them, while no READ of its is
 * being served. */
static int deliver(MPIDI_VC_t * vc)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_ofi_peer_t *peer = vc->ch.ofi;

    while (!peer->reading && peer->pending != NULL &&
           ((hdr_t *) peer->pending->data)->seq == peer->recv_seq) {
        buf_t *b = peer->pending;

        peer->pending = b->next;
        peer->recv_seq++;
        mpi_errno = handle_msg(vc, b);
        MPIR_ERR_CHECK(mpi_errno);
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int smheap_ofi_received(buf_t * b, size_t len)
{
    const hdr_t *h = (const hdr_t *) b->data;
    MPIDI_VC_t *vc;
    smheap_ofi_peer_t *peer;
    buf_t **at;

    b->len = len;
    if (len < sizeof(hdr_t) || h->src >= (uint32_t) MPIDI_Process.my_pg->size)
        return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_FATAL, __func__, __LINE__,
                                    MPI_ERR_INTERN, "**smheap_ofi_recv", NULL);
    MPIDI_PG_Get_vc(MPIDI_Process.my_pg, (int) h->src, &vc);
    /* a peer we closed with, or lost, has nothing more for ch3 (a PING of a rank still
     * closing with others, a CLOSE ack behind the error that ended it) */
    if (vc->ch.ofi != NULL && (vc->ch.ofi->closed || vc->ch.ofi->failed))
        return smheap_ofi_post_recv(b) == 0 ? MPI_SUCCESS :
            MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_FATAL, __func__, __LINE__,
                                 MPI_ERR_OTHER, "**smheap_ofi_recv", NULL);
    MPIDI_PG_Get_vc_set_active(MPIDI_Process.my_pg, (int) h->src, &vc);
    if (vc->ch.ofi == NULL && !MPIDI_CH3I_Netofi_claim(vc))
        return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_FATAL, __func__, __LINE__,
                                    MPI_ERR_INTERN, "**smheap_ofi_recv", NULL);
    peer = vc->ch.ofi;
    /* sequence numbers wrap: compare by difference */
    for (at = &peer->pending; *at != NULL &&
         (int32_t) (((hdr_t *) (*at)->data)->seq - h->seq) < 0; at = &(*at)->next)
        continue;
    b->next = *at;
    *at = b;
    return deliver(vc);
}

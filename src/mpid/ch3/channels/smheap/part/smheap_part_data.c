/*
 * ch3:smheap -- partitioned communication: moving the data (requests and matching are in
 * smheap_part.c).
 *
 * The sender chooses the way at MPI_Psend_init.
 *  - In place: the receiver shares our heap (a rank of our job on this node), the send
 *    buffer lies in the heap and its type is contiguous.  The sender allocates, in the
 *    heap, one flag per partition and publishes in it the round (the count of MPI_Start
 *    calls) in which the partition was readied.  The receiver copies each of its own
 *    partitions straight out of the send buffer as soon as every sender partition that
 *    overlaps it carries the current round (in MPI_Parrived, or whenever it makes
 *    progress), and when all are copied publishes the round as consumed, which completes
 *    the send.  No message moves per partition or per round.  When the receive buffer is
 *    contiguous and in the heap too, and the receiver has started the round, the thread
 *    that readies a partition places it in the receive buffer itself, while the data is
 *    still in its cache, and says so in the flag: the receiver then has nothing to copy.
 *  - As messages: everything else (data outside the heap, a noncontiguous send type, a
 *    peer on another node or of another job, or MPIR_CVAR_CH3_SMHEAP_PART_IN_PLACE off).
 *    Each round the receiver's MPI_Start sends PART_CTS (so that no data lands in a buffer
 *    it still reads), and the sender sends each partition, as soon as it is ready and the
 *    CTS is there, as one PART_DATA packet addressed to the receiver's request.
 * Either way the receiver places bytes by their offset in the message, so sender and
 * receiver may cut the data into different numbers of partitions, and any receive type
 * works.
 */

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_CH3_SMHEAP_PART_IN_PLACE
      category    : CH3
      type        : boolean
      default     : true
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        ch3:smheap: let the receiver of a partitioned send read each partition in place,
        from the sender's buffer, when that buffer is contiguous and in the shared heap
        of its node.  0 sends every partition as a message.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

#include "smheap_part_impl.h"
#include "smheap.h"

/* ------------------------------------------------------------------------------------ */
/* Choosing the way                                                                     */

/* May the receiver read this send buffer in place? */
int MPIDI_CH3I_Part_can_send_in_place(smheap_part_t * p)
{
    return MPIR_CVAR_CH3_SMHEAP_PART_IN_PLACE && MPIDI_CH3I_Smheap_heap_shared &&
        MPIR_CVAR_CH3_SMHEAP_SINGLE_COPY && p->vc->rndvSend_fn == MPIDI_CH3I_Smheap_RndvSend &&
        p->dt_contig && p->data_sz > 0 &&
        smheap_holds(p->buf + p->dt_true_lb, (size_t) p->data_sz);
}

int MPIDI_CH3I_Part_new_flags(smheap_part_t * p)
{
    size_t sz = sizeof(part_flags_t) + (size_t) p->partitions * sizeof(atomic_int);
    part_flags_t *f = MPL_aligned_alloc(SMHEAP_CACHELINE, sz, MPL_MEM_BUFFER);

    if (f != NULL && !smheap_holds(f, sz)) {
        MPL_free(f);    /* this thread allocates outside the heap */
        return 0;
    }
    if (f == NULL)
        return 0;
    atomic_init(&f->consumed, 0);
    atomic_init(&f->recv_round, 0);
    f->recv_buf = NULL;
    for (int k = 0; k < p->partitions; k++)
        atomic_init(&f->ready[k], 0);
    p->flags = f;
    return 1;
}

/* An in-place receive starts its round: from now on the sender may place data in our
 * buffer itself, if it is contiguous and in the heap (recv_buf is published by the store
 * of the round). */
void MPIDI_CH3I_Part_start_in_place(smheap_part_t * p)
{
    if (p->dt_contig && smheap_holds(p->buf + p->dt_true_lb, (size_t) p->data_sz))
        p->peer_flags->recv_buf = p->buf + p->dt_true_lb;
    atomic_store_explicit(&p->peer_flags->recv_round, p->round, memory_order_release);
    MPIDI_CH3I_Part_activate(p);
}

/* ------------------------------------------------------------------------------------ */
/* The sender                                                                           */

struct copy_args {
    void *dst;
    const void *src;
    intptr_t len;
};

static int copy_fn(void *arg)
{
    struct copy_args *c = arg;

    smheap_copy(c->dst, c->src, c->len);
    return 0;
}

/* In place: put partition k into the receive buffer ourselves, if the receiver has
 * started this round and its buffer is in the heap.  MPICH's global lock is released
 * meanwhile, so that threads readying other partitions copy at the same time. */
static int place_for_receiver(smheap_part_t * p, int k)
{
    struct copy_args c;
    intptr_t off = (intptr_t) k * p->part_sz;

    if (p->part_sz == 0 ||
        atomic_load_explicit(&p->flags->recv_round, memory_order_acquire) != p->round ||
        p->flags->recv_buf == NULL)
        return 0;
    c.dst = p->flags->recv_buf + off;
    c.src = p->buf + p->dt_true_lb + off;
    c.len = p->part_sz;
    MPIDI_CH3I_Without_global_lock(copy_fn, &c);
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_part_placed, 1);
    return 1;
}

/* Partition k as a PART_DATA packet, its data taken from the send buffer by ch3 (any
 * type).  The request is kept until the channel has sent it all. */
static int send_partition(smheap_part_t * p, int k)
{
    int mpi_errno = MPI_SUCCESS;
    part_pkt_t upkt;
    part_pkt_data_t *data = &upkt.data;
    MPIR_Request *sreq;

    p->state[k] = PART_SENT;
    p->n_sent++;
    if (p->part_sz == 0)
        goto fn_exit;
    MPIDI_Pkt_init(data, MPIDI_CH3I_SMHEAP_PKT_PART_DATA);
    data->rreq = p->peer_req;
    data->offset = (intptr_t) k *p->part_sz;
    data->len = p->part_sz;
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_part_msgs, 1);

    if (MPIDI_CH3I_Part_is_self(p->vc)) {
        /* to ourselves: pack it and hand it to the handler */
        char *tmp = MPL_malloc(p->part_sz, MPL_MEM_BUFFER);
        MPI_Aint packed;
        intptr_t len = p->part_sz;
        MPIR_Request *rreq = NULL;

        MPIR_ERR_CHKANDJUMP(tmp == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
        mpi_errno = MPIR_Typerep_pack(p->buf, p->count, p->datatype, data->offset, tmp,
                                      p->part_sz, &packed);
        if (mpi_errno == MPI_SUCCESS)
            mpi_errno = MPIDI_CH3I_Part_handle_data(p->vc, &upkt.ch3, tmp, &len, &rreq);
        MPL_free(tmp);
        MPIR_Assert(rreq == NULL);
        goto fn_exit;
    }

    sreq = MPIR_Request_create(MPIR_REQUEST_KIND__SEND);
    MPIR_ERR_CHKANDJUMP(sreq == NULL, mpi_errno, MPIX_ERR_NOREQ, "**nomemreq");
    MPIR_Object_set_ref(sreq, 2);       /* the channel's, and ours until it completes */
    sreq->dev.user_buf = p->buf;
    sreq->dev.user_count = p->count;
    sreq->dev.datatype = p->datatype;
    sreq->dev.msg_offset = data->offset;
    sreq->dev.msgsize = data->offset + data->len;
    sreq->dev.OnDataAvail = NULL;
    sreq->dev.OnFinal = NULL;
    MPID_THREAD_CS_ENTER(POBJ, p->vc->pobj_mutex);
    mpi_errno = p->vc->sendNoncontig_fn(p->vc, sreq, data, sizeof(upkt), NULL, 0);
    MPID_THREAD_CS_EXIT(POBJ, p->vc->pobj_mutex);
    if (mpi_errno != MPI_SUCCESS) {
        MPIR_Request_free(sreq);
        MPIR_ERR_SETANDJUMP(mpi_errno, MPI_ERR_OTHER, "**smheap_part_send");
    }
    p->sends[p->n_sends++] = sreq;

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* An in-place receiver needs to know of a partition it must copy itself, so that it may
 * copy while we fill the next; of one we placed, only when it completes the round: waking
 * it for each would take a CPU from the threads still filling when the machine has no CPU
 * to spare, which is when the receiver sleeps. */
int MPIDI_CH3I_Part_ready(smheap_part_t * p, int k, int *wake_owed)
{
    if (p->in_place) {
        int placed = place_for_receiver(p, k), last;

        atomic_store_explicit(&p->flags->ready[k], ready_mark(p->round, placed),
                              memory_order_release);
        last = atomic_fetch_add_explicit(&p->n_readied, 1, memory_order_relaxed) + 1 ==
            p->partitions;
        if (!placed || last)
            *wake_owed = 1;
        return MPI_SUCCESS;
    }
    p->state[k] = PART_READY;
    if (p->part_sz == 0 || p->mismatch) {
        p->state[k] = PART_SENT;
        p->n_sent++;
        return MPI_SUCCESS;
    }
    if (p->handshake || p->cts_round < p->round)
        return MPI_SUCCESS;
    return send_partition(p, k);
}

/* After readying: an in-place receiver may sleep on its doorbell. */
void MPIDI_CH3I_Part_readied(smheap_part_t * p, int wake_owed)
{
    if (wake_owed && p->vc->ch.node_rank >= 0)
        MPIDI_CH3I_Smheap_wake(p->vc->ch.node_rank);
}

/* Message path: send what is ready, if the receiver has started this round. */
int MPIDI_CH3I_Part_send_ready(smheap_part_t * p)
{
    int mpi_errno = MPI_SUCCESS;

    if (p->handshake || p->cts_round < p->round || p->mismatch)
        return MPI_SUCCESS;
    for (int k = 0; k < p->partitions && mpi_errno == MPI_SUCCESS; k++)
        if (p->state[k] == PART_READY)
            mpi_errno = send_partition(p, k);
    return mpi_errno;
}

/* Sends of the message path that the channel finished. */
static void reap_sends(smheap_part_t * p)
{
    for (int i = 0; i < p->n_sends;) {
        if (MPIR_Request_is_complete(p->sends[i])) {
            MPIR_Request_free(p->sends[i]);
            p->sends[i] = p->sends[--p->n_sends];
        } else {
            i++;
        }
    }
}

int MPIDI_CH3I_Part_send_progress(smheap_part_t * p)
{
    if (p->in_place) {
        if (atomic_load_explicit(&p->flags->consumed, memory_order_acquire) == p->round)
            MPIDI_CH3I_Part_complete_round(p);
        return MPI_SUCCESS;
    }
    reap_sends(p);
    if (p->n_sent == p->partitions && p->n_sends == 0)
        MPIDI_CH3I_Part_complete_round(p);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------------------------------ */
/* The receiver                                                                         */

/* Place len bytes of the message, from offset on, into our buffer. */
static int place(smheap_part_t * p, const void *data, intptr_t offset, intptr_t len)
{
    MPI_Aint actual;

    if (p->dt_contig) {
        smheap_copy(p->buf + p->dt_true_lb + offset, data, len);
        return MPI_SUCCESS;
    }
    return MPIR_Typerep_unpack(data, len, p->buf, p->count, p->datatype, offset, &actual);
}

/* Copy our partition j out of the sender's buffer if every sender partition it overlaps
 * is ready in this round (except the parts the sender has placed already). */
int MPIDI_CH3I_Part_copy_in_place(smheap_part_t * p, int j)
{
    int mpi_errno = MPI_SUCCESS;
    intptr_t lo = (intptr_t) j * p->part_sz, hi = lo + p->part_sz;
    intptr_t first = lo / p->peer_part_sz, last = (hi - 1) / p->peer_part_sz;

    for (intptr_t k = first; k <= last; k++)
        if (atomic_load_explicit(&p->peer_flags->ready[k], memory_order_acquire) >> 1 !=
            p->round)
            return MPI_SUCCESS;
    for (intptr_t k = first; k <= last && mpi_errno == MPI_SUCCESS; k++) {
        intptr_t from = MPL_MAX(lo, k * p->peer_part_sz);
        intptr_t to = MPL_MIN(hi, (k + 1) * p->peer_part_sz);

        if (atomic_load_explicit(&p->peer_flags->ready[k], memory_order_relaxed) & 1) {
            /* placed by the sender (our buffer is contiguous then) */
            smheap_peer_wrote(p->buf + p->dt_true_lb + from, to - from);
            continue;
        }
        mpi_errno = place(p, p->peer_buf + from, from, to - from);
    }
    MPIR_ERR_CHECK(mpi_errno);
    p->arrived[j] = p->part_sz;
    p->arrived_total += p->part_sz;

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_CH3I_Part_round_received(smheap_part_t * p)
{
    return p->arrived_total == p->data_sz;
}

/* Every partition is in our buffer (or there was nothing to receive): tell an in-place
 * sender, and complete the round. */
void MPIDI_CH3I_Part_receive_done(smheap_part_t * p)
{
    if (p->in_place && p->matched) {
        MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_part_in_place, p->peer_partitions);
        atomic_store_explicit(&p->peer_flags->consumed, p->round, memory_order_release);
        if (p->vc->ch.node_rank >= 0)
            MPIDI_CH3I_Smheap_wake(p->vc->ch.node_rank);
    }
    MPIDI_CH3I_Part_complete_round(p);
}

int MPIDI_CH3I_Part_copy_ready(smheap_part_t * p)
{
    int mpi_errno = MPI_SUCCESS;

    for (int j = 0; j < p->partitions && mpi_errno == MPI_SUCCESS; j++)
        if (p->arrived[j] < p->part_sz)
            mpi_errno = MPIDI_CH3I_Part_copy_in_place(p, j);
    if (mpi_errno == MPI_SUCCESS && MPIDI_CH3I_Part_round_received(p))
        MPIDI_CH3I_Part_receive_done(p);
    return mpi_errno;
}

/* The data of a PART_DATA packet, bytes [offset, offset + len) of the message, is here (in
 * our buffer, or in dreq's temporary buffer for a noncontiguous one). */
static int data_received(MPIDI_VC_t * vc, MPIR_Request * dreq, int *complete)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Request *req = dreq->dev.partner_request;
    smheap_part_t *p = PART(req);
    intptr_t lo = dreq->ch.part_offset, hi = lo + dreq->dev.recv_data_sz;

    (void) vc;
    if (dreq->dev.tmpbuf != NULL) {
        mpi_errno = place(p, dreq->dev.tmpbuf, lo, hi - lo);
        MPL_free(dreq->dev.tmpbuf);
        dreq->dev.tmpbuf = NULL;
        MPIR_ERR_CHECK(mpi_errno);
    }
    for (intptr_t j = lo / p->part_sz; j < p->partitions && j * p->part_sz < hi; j++) {
        intptr_t plo = j * p->part_sz, phi = plo + p->part_sz;

        p->arrived[j] += MPL_MIN(hi, phi) - MPL_MAX(lo, plo);
    }
    p->arrived_total += hi - lo;
    if (MPIDI_CH3I_Part_round_received(p))
        MPIDI_CH3I_Part_complete_round(p);
    *complete = TRUE;
    mpi_errno = MPID_Request_complete(dreq);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_CH3I_Part_handle_data(MPIDI_VC_t * vc, MPIDI_CH3_Pkt_t * pkt, void *data, intptr_t * buflen,
                       MPIR_Request ** rreqp)
{
    int mpi_errno = MPI_SUCCESS;
    part_pkt_data_t *dp = &((part_pkt_t *) pkt)->data;
    MPIR_Request *req, *dreq;
    smheap_part_t *p;
    int complete = FALSE;

    *rreqp = NULL;
    MPIR_Request_get_ptr(dp->rreq, req);
    p = PART(req);

    dreq = MPIR_Request_create(MPIR_REQUEST_KIND__RECV);
    MPIR_ERR_CHKANDJUMP(dreq == NULL, mpi_errno, MPIX_ERR_NOREQ, "**nomemreq");
    dreq->dev.partner_request = req;
    dreq->dev.recv_data_sz = dp->len;
    dreq->dev.tmpbuf = NULL;
    dreq->ch.part_offset = dp->offset;

    if (*buflen >= dp->len) {
        /* all here: place it now */
        mpi_errno = place(p, data, dp->offset, dp->len);
        MPIR_ERR_CHECK(mpi_errno);
        *buflen = dp->len;
        mpi_errno = data_received(vc, dreq, &complete);
        goto fn_exit;
    }
    /* the channel reads the rest into our buffer, or, for a noncontiguous one, into a
     * temporary buffer that data_received unpacks (ch3's own staging buffer would complete
     * the request without telling us) */
    *buflen = 0;
    if (p->dt_contig) {
        dreq->dev.iov[0].iov_base = p->buf + p->dt_true_lb + dp->offset;
    } else {
        dreq->dev.tmpbuf = MPL_malloc(dp->len, MPL_MEM_BUFFER);
        MPIR_ERR_CHKANDJUMP(dreq->dev.tmpbuf == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
        dreq->dev.iov[0].iov_base = dreq->dev.tmpbuf;
    }
    dreq->dev.iov[0].iov_len = dp->len;
    dreq->dev.iov_count = 1;
    dreq->dev.iov_offset = 0;
    dreq->dev.OnDataAvail = data_received;
    *rreqp = dreq;

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

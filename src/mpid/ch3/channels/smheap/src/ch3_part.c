/*
 * ch3:smheap -- MPI-4 partitioned communication (MPI_Psend_init, MPI_Precv_init,
 * MPI_Pready*, MPI_Parrived), which ch3 leaves to a channel that defines
 * MPIDI_CH3_HAS_PARTITIONED (maint/patches/0004).
 *
 * Matching.  MPI_Psend_init sends PART_INIT to the receiver, which matches it against its
 * MPI_Precv_init requests in order of (context, source, tag), as MPI matches partitioned
 * operations once, at initialization.  At the match the receiver answers with PART_CTS,
 * carrying its request's handle.  Both requests keep a reference for this handshake, so
 * that either side may free its request before the other has answered.
 *
 * Moving the data: the sender chooses at MPI_Psend_init.
 *  - In place: the receiver shares our heap (a rank of our job on this node), the send
 *    buffer lies in the heap and its type is contiguous.  The sender allocates, in the
 *    heap, one flag per partition and publishes in it the round (the count of MPI_Start
 *    calls) in which the partition was readied.  The receiver copies each of its own
 *    partitions straight out of the send buffer as soon as every sender partition that
 *    overlaps it carries the current round (in MPI_Parrived, or whenever it makes
 *    progress), and when all are copied publishes the round as consumed, which completes
 *    the send.  No message moves per partition or per round.
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

#include "mpidi_ch3_impl.h"
#include "smheap.h"
#include <stdatomic.h>

/* What the sender shares with an in-place receiver, in the heap. */
typedef struct part_flags {
    _Alignas(SMHEAP_CACHELINE) atomic_int consumed;     /* last round the receiver copied */
    _Alignas(SMHEAP_CACHELINE) atomic_int ready[];      /* per partition: round it was readied */
} part_flags_t;

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
    int cts_round;              /* the receiver's latest round (message path) */
    int n_ready;                /* partitions readied this round */
    int n_sent;                 /* message path: sent this round */
    char *state;                /* message path: PART_IDLE/READY/SENT per partition */
    MPIR_Request **sends;       /* message path: data sends not yet complete */
    int n_sends;

    /* receiver */
    int matched;
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

/* A PART_INIT that came before its MPI_Precv_init. */
typedef struct part_unexpected {
    part_pkt_init_t init;
    MPIDI_VC_t *vc;
    struct part_unexpected *prev, *next;
} part_unexpected_t;

static smheap_part_t *active, *posted;
static part_unexpected_t *unexpected;
static int hook_id = -1;

#define PART(req_) ((req_)->ch.part)

/* ------------------------------------------------------------------------------------ */
/* Requests                                                                             */

static int is_self(MPIDI_VC_t * vc)
{
    return vc->pg == MPIDI_Process.my_pg && vc->pg_rank == MPIDI_Process.my_pg_rank;
}

static void activate(smheap_part_t * p)
{
    if (active == NULL)
        MPIR_Progress_hook_activate(hook_id);
    DL_APPEND_NP(active, p, active_next, active_prev);
}

static void deactivate(smheap_part_t * p)
{
    DL_DELETE_NP(active, p, active_next, active_prev);
    p->active_prev = p->active_next = NULL;
    if (active == NULL)
        MPIR_Progress_hook_deactivate(hook_id);
}

static int is_on_active_list(smheap_part_t * p)
{
    return p->active_prev != NULL;      /* utlist: the head's prev is the tail */
}

/* This round is over: MPI_Wait and MPI_Test see the request complete. */
static void complete_round(smheap_part_t * p)
{
    if (is_on_active_list(p))
        deactivate(p);
    MPIR_cc_set(&p->req->cc, 0);
    MPIDI_CH3_Progress_signal_completion();
}

static void free_part(smheap_part_t * p)
{
    p->req->ch.part = NULL;
    MPIR_Datatype_release_if_not_builtin(p->datatype);
    MPL_free(p->flags);
    MPL_free(p->state);
    MPL_free(p->sends);
    MPL_free(p->arrived);
    MPL_free(p);
}

/* The handshake is over: its reference of the request goes, and the state with it if the
 * user has freed the request already. */
static void handshake_done(smheap_part_t * p)
{
    MPIR_Request *req = p->req;

    p->handshake = 0;
    if (p->freed)
        free_part(p);
    MPIR_Request_free(req);
}

static int new_part(void *buf, int partitions, MPI_Aint count, MPI_Datatype datatype,
                    int rank, int tag, MPIR_Comm * comm, MPIR_Request_kind_t kind,
                    MPIR_Request ** request)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Request *req;
    smheap_part_t *p;
    MPIR_Datatype *dt_ptr;
    intptr_t data_sz;

    req = MPIR_Request_create(kind);
    MPIR_ERR_CHKANDJUMP(req == NULL, mpi_errno, MPIX_ERR_NOREQ, "**nomemreq");
    p = MPL_calloc(1, sizeof(*p), MPL_MEM_OTHER);
    if (p == NULL) {
        MPIR_Request_free(req);
        MPIR_ERR_SETANDJUMP(mpi_errno, MPI_ERR_OTHER, "**nomem");
    }
    req->comm = comm;
    MPIR_Comm_add_ref(comm);
    req->u.part.partitions = partitions;
    MPIR_Part_request_inactivate(req);
    MPIR_cc_set(&req->cc, 0);   /* an inactive request is complete */
    req->ch.part = p;

    p->req = req;
    p->buf = buf;
    p->count = count * partitions;
    p->datatype = datatype;
    MPIR_Datatype_add_ref_if_not_builtin(datatype);
    MPIDI_Datatype_get_info(p->count, datatype, p->dt_contig, data_sz, dt_ptr, p->dt_true_lb);
    p->data_sz = data_sz;
    p->partitions = partitions;
    p->part_sz = partitions > 0 ? data_sz / partitions : 0;
    p->peer_rank = rank;
    p->tag = tag;
    if (rank != MPI_PROC_NULL)
        MPIDI_Comm_get_vc_set_active(comm, rank, &p->vc);
    *request = req;

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* ------------------------------------------------------------------------------------ */
/* Packets                                                                              */

static int handle_init(MPIDI_VC_t *, MPIDI_CH3_Pkt_t *, void *, intptr_t *, MPIR_Request **);
static int handle_cts(MPIDI_VC_t *, MPIDI_CH3_Pkt_t *, void *, intptr_t *, MPIR_Request **);
static int handle_data(MPIDI_VC_t *, MPIDI_CH3_Pkt_t *, void *, intptr_t *, MPIR_Request **);

/* Send a packet without data.  To ourselves it is handled at once. */
static int send_pkt(MPIDI_VC_t * vc, part_pkt_t * upkt)
{
    int mpi_errno;
    MPIR_Request *req = NULL;
    intptr_t len = 0;

    if (is_self(vc))
        return MPIDI_CH3I_pkt_handlers[upkt->ch3.type] (vc, &upkt->ch3, NULL, &len, &req);
    MPID_THREAD_CS_ENTER(POBJ, vc->pobj_mutex);
    mpi_errno = MPIDI_CH3_iStartMsg(vc, upkt, sizeof(*upkt), &req);
    MPID_THREAD_CS_EXIT(POBJ, vc->pobj_mutex);
    if (req != NULL)
        MPIR_Request_free(req);
    return mpi_errno;
}

/* The receiver's answer: at the match, and at each MPI_Start of the message path. */
static int send_cts(smheap_part_t * p)
{
    part_pkt_t upkt;
    part_pkt_cts_t *cts = &upkt.cts;

    MPIDI_Pkt_init(cts, MPIDI_CH3I_SMHEAP_PKT_PART_CTS);
    cts->sreq = p->peer_req;
    cts->rreq = p->req->handle;
    cts->round = MPIR_Part_request_is_active(p->req) ? p->round : 0;
    cts->size_ok = !p->mismatch;
    return send_pkt(p->vc, &upkt);
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

    if (is_self(p->vc)) {
        /* to ourselves: pack it and hand it to the handler */
        char *tmp = MPL_malloc(p->part_sz, MPL_MEM_BUFFER);
        MPI_Aint packed;
        intptr_t len = p->part_sz;
        MPIR_Request *rreq = NULL;

        MPIR_ERR_CHKANDJUMP(tmp == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
        mpi_errno = MPIR_Typerep_pack(p->buf, p->count, p->datatype, data->offset, tmp,
                                      p->part_sz, &packed);
        if (mpi_errno == MPI_SUCCESS)
            mpi_errno = handle_data(p->vc, &upkt.ch3, tmp, &len, &rreq);
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

/* Message path: send what is ready, if the receiver has started this round. */
static int send_ready_partitions(smheap_part_t * p)
{
    int mpi_errno = MPI_SUCCESS;

    if (p->handshake || p->cts_round < p->round || p->mismatch)
        return MPI_SUCCESS;
    for (int k = 0; k < p->partitions && mpi_errno == MPI_SUCCESS; k++)
        if (p->state[k] == PART_READY)
            mpi_errno = send_partition(p, k);
    return mpi_errno;
}

/* ------------------------------------------------------------------------------------ */
/* Receiving in place                                                                   */

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
 * is ready in this round. */
static int copy_in_place(smheap_part_t * p, int j)
{
    int mpi_errno = MPI_SUCCESS;
    intptr_t lo = (intptr_t) j * p->part_sz, len = p->part_sz;
    intptr_t first = lo / p->peer_part_sz, last = (lo + len - 1) / p->peer_part_sz;

    for (intptr_t k = first; k <= last; k++)
        if (atomic_load_explicit(&p->peer_flags->ready[k], memory_order_acquire) != p->round)
            return MPI_SUCCESS;
    mpi_errno = place(p, p->peer_buf + lo, lo, len);
    MPIR_ERR_CHECK(mpi_errno);
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_part_in_place, 1);
    p->arrived[j] = len;
    p->arrived_total += len;

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Every partition is in our buffer (or there was nothing to receive): tell an in-place
 * sender, and complete the round. */
static void receive_done(smheap_part_t * p)
{
    if (p->in_place && p->matched) {
        atomic_store_explicit(&p->peer_flags->consumed, p->round, memory_order_release);
        if (p->vc->ch.node_rank >= 0)
            MPIDI_CH3I_Smheap_wake(p->vc->ch.node_rank);
    }
    complete_round(p);
}

static int round_received(smheap_part_t * p)
{
    return p->arrived_total == p->data_sz;
}

static int copy_ready_partitions(smheap_part_t * p)
{
    int mpi_errno = MPI_SUCCESS;

    for (int j = 0; j < p->partitions && mpi_errno == MPI_SUCCESS; j++)
        if (p->arrived[j] < p->part_sz)
            mpi_errno = copy_in_place(p, j);
    if (mpi_errno == MPI_SUCCESS && round_received(p))
        receive_done(p);
    return mpi_errno;
}

/* ------------------------------------------------------------------------------------ */
/* Progress                                                                             */

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

static int send_progress(smheap_part_t * p)
{
    if (p->in_place) {
        if (atomic_load_explicit(&p->flags->consumed, memory_order_acquire) == p->round)
            complete_round(p);
        return MPI_SUCCESS;
    }
    reap_sends(p);
    if (p->n_sent == p->partitions && p->n_sends == 0)
        complete_round(p);
    return MPI_SUCCESS;
}

/* The progress hook: active only while some request has work. */
static int part_progress(int *made_progress)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_part_t *p, *tmp;

    DL_FOREACH_SAFE_NP(active, p, tmp, active_next, active_prev) {
        if (p->req->kind == MPIR_REQUEST_KIND__PART_SEND)
            mpi_errno = send_progress(p);
        else
            mpi_errno = copy_ready_partitions(p);
        MPIR_ERR_CHECK(mpi_errno);
        if (!is_on_active_list(p))
            *made_progress = TRUE;
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* ------------------------------------------------------------------------------------ */
/* Matching                                                                             */

/* The receive p matched the sender's PART_INIT. */
static int matched(smheap_part_t * p, const part_pkt_init_t * init)
{
    p->matched = 1;
    p->peer_req = init->sreq;
    p->mismatch = init->data_sz != p->data_sz;
    p->in_place = init->buf != NULL && !p->mismatch;
    p->peer_buf = init->buf;
    p->peer_flags = init->flags;
    p->peer_part_sz = init->part_sz;
    if (p->mismatch)
        p->req->status.MPI_ERROR =
            MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                 MPI_ERR_TRUNCATE, "**smheap_part_size",
                                 "**smheap_part_size %d %d", (int) p->data_sz,
                                 (int) init->data_sz);
    if (MPIR_Part_request_is_active(p->req) && !MPIR_Request_is_complete(p->req)) {
        if (p->mismatch)
            complete_round(p);
        else if (p->in_place)
            activate(p);
    }
    return send_cts(p);
}

static int same_match(const MPIDI_Message_match * m, const smheap_part_t * p)
{
    return m->parts.context_id == p->context_id && m->parts.rank == p->peer_rank &&
        m->parts.tag == p->tag;
}

static int handle_init(MPIDI_VC_t * vc, MPIDI_CH3_Pkt_t * pkt, void *data, intptr_t * buflen,
                       MPIR_Request ** rreqp)
{
    int mpi_errno = MPI_SUCCESS;
    part_pkt_init_t *init = &((part_pkt_t *) pkt)->init;
    smheap_part_t *p;
    part_unexpected_t *u;

    (void) data;
    *buflen = 0;
    *rreqp = NULL;
    DL_FOREACH_NP(posted, p, posted_next, posted_prev) {
        if (same_match(&init->match, p))
            break;
    }
    if (p != NULL) {
        DL_DELETE_NP(posted, p, posted_next, posted_prev);
        mpi_errno = matched(p, init);
        handshake_done(p);
        goto fn_exit;
    }
    u = MPL_malloc(sizeof(*u), MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP(u == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    u->init = *init;
    u->vc = vc;
    DL_APPEND(unexpected, u);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int handle_cts(MPIDI_VC_t * vc, MPIDI_CH3_Pkt_t * pkt, void *data, intptr_t * buflen,
                      MPIR_Request ** rreqp)
{
    int mpi_errno = MPI_SUCCESS;
    part_pkt_cts_t *cts = &((part_pkt_t *) pkt)->cts;
    MPIR_Request *sreq;
    smheap_part_t *p;

    (void) vc, (void) data;
    *buflen = 0;
    *rreqp = NULL;
    MPIR_Request_get_ptr(cts->sreq, sreq);
    p = PART(sreq);
    p->cts_round = MPL_MAX(p->cts_round, cts->round);
    if (p->handshake) {
        p->peer_req = cts->rreq;
        p->mismatch = !cts->size_ok;
        if (p->mismatch)
            sreq->status.MPI_ERROR =
                MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                     MPI_ERR_TRUNCATE, "**smheap_part_peer_size", 0);
        int gone = p->freed;

        handshake_done(p);
        if (gone)
            return MPI_SUCCESS;
    }
    if (!p->in_place && MPIR_Part_request_is_active(sreq))
        mpi_errno = send_ready_partitions(p);
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
    if (round_received(p))
        complete_round(p);
    *complete = TRUE;
    mpi_errno = MPID_Request_complete(dreq);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int handle_data(MPIDI_VC_t * vc, MPIDI_CH3_Pkt_t * pkt, void *data, intptr_t * buflen,
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

int MPIDI_CH3I_Smheap_part_init(MPIDI_CH3_PktHandler_Fcn * pktArray[], int arraySize)
{
    MPIR_Assert(arraySize > MPIDI_CH3I_SMHEAP_PKT_PART_DATA);
    pktArray[MPIDI_CH3I_SMHEAP_PKT_PART_INIT] = handle_init;
    pktArray[MPIDI_CH3I_SMHEAP_PKT_PART_CTS] = handle_cts;
    pktArray[MPIDI_CH3I_SMHEAP_PKT_PART_DATA] = handle_data;
    return MPIR_Progress_hook_register(part_progress, &hook_id);
}

int MPIDI_CH3I_Smheap_part_finalize(void)
{
    part_unexpected_t *u, *tmp;

    DL_FOREACH_SAFE(unexpected, u, tmp) {
        DL_DELETE(unexpected, u);
        MPL_free(u);
    }
    if (hook_id >= 0)
        MPIR_Progress_hook_deregister(hook_id);
    hook_id = -1;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------------------------------ */
/* MPID entry points                                                                    */

/* May the receiver read this send buffer in place? */
static int can_send_in_place(smheap_part_t * p)
{
    return MPIR_CVAR_CH3_SMHEAP_PART_IN_PLACE && MPIDI_CH3I_Smheap_heap_shared &&
        MPIR_CVAR_CH3_SMHEAP_SINGLE_COPY && p->vc->rndvSend_fn == MPIDI_CH3I_Smheap_RndvSend &&
        p->dt_contig && p->data_sz > 0 &&
        smheap_holds(p->buf + p->dt_true_lb, (size_t) p->data_sz);
}

static int new_flags(smheap_part_t * p)
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
    for (int k = 0; k < p->partitions; k++)
        atomic_init(&f->ready[k], 0);
    p->flags = f;
    return 1;
}

int MPID_Psend_init(const void *buf, int partitions, MPI_Count count, MPI_Datatype datatype,
                    int dest, int tag, MPIR_Comm * comm, MPIR_Info * info,
                    MPIR_Request ** request)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_part_t *p;
    part_pkt_t upkt;
    part_pkt_init_t *init = &upkt.init;

    (void) info;
    mpi_errno = new_part((void *) buf, partitions, count, datatype, dest, tag, comm,
                         MPIR_REQUEST_KIND__PART_SEND, request);
    MPIR_ERR_CHECK(mpi_errno);
    p = PART(*request);
    if (p->vc == NULL)
        goto fn_exit;

    p->in_place = can_send_in_place(p) && new_flags(p);
    if (!p->in_place) {
        p->state = MPL_calloc(partitions, 1, MPL_MEM_OTHER);
        p->sends = MPL_malloc(partitions * sizeof(*p->sends), MPL_MEM_OTHER);
        MPIR_ERR_CHKANDJUMP(p->state == NULL || p->sends == NULL, mpi_errno, MPI_ERR_OTHER,
                            "**nomem");
    }
    p->handshake = 1;
    MPIR_Request_add_ref(*request);     /* until the receiver's CTS */

    MPIDI_Pkt_init(init, MPIDI_CH3I_SMHEAP_PKT_PART_INIT);
    init->match.parts.rank = comm->rank;
    init->match.parts.tag = tag;
    init->match.parts.context_id = comm->context_id;
    init->sreq = (*request)->handle;
    init->data_sz = p->data_sz;
    init->part_sz = p->part_sz;
    init->buf = p->in_place ? p->buf + p->dt_true_lb : NULL;
    init->flags = p->flags;
    mpi_errno = send_pkt(p->vc, &upkt);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPID_Precv_init(void *buf, int partitions, MPI_Count count, MPI_Datatype datatype,
                    int source, int tag, MPIR_Comm * comm, MPIR_Info * info,
                    MPIR_Request ** request)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_part_t *p;
    part_unexpected_t *u;
    MPIDI_Message_match m;

    (void) info;
    mpi_errno = new_part(buf, partitions, count, datatype, source, tag, comm,
                         MPIR_REQUEST_KIND__PART_RECV, request);
    MPIR_ERR_CHECK(mpi_errno);
    p = PART(*request);
    if (p->vc == NULL)
        goto fn_exit;
    p->context_id = comm->recvcontext_id;
    (*request)->status.MPI_SOURCE = source;
    (*request)->status.MPI_TAG = tag;
    p->arrived = MPL_calloc(partitions, sizeof(*p->arrived), MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP(p->arrived == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");

    DL_FOREACH(unexpected, u) {
        m = u->init.match;
        if (same_match(&m, p))
            break;
    }
    if (u != NULL) {
        DL_DELETE(unexpected, u);
        mpi_errno = matched(p, &u->init);
        MPL_free(u);
        MPIR_ERR_CHECK(mpi_errno);
    } else {
        p->handshake = 1;
        MPIR_Request_add_ref(*request); /* until the sender's PART_INIT */
        DL_APPEND_NP(posted, p, posted_next, posted_prev);
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int start_send(smheap_part_t * p)
{
    p->n_ready = 0;
    if (!p->in_place) {
        memset(p->state, PART_IDLE, p->partitions);
        p->n_sent = 0;
    }
    activate(p);
    return MPI_SUCCESS;
}

static int start_recv(smheap_part_t * p)
{
    int mpi_errno = MPI_SUCCESS;

    memset(p->arrived, 0, p->partitions * sizeof(*p->arrived));
    p->arrived_total = 0;
    if (p->data_sz == 0 || (p->matched && p->mismatch)) {
        receive_done(p);
    } else if (p->matched && p->in_place) {
        activate(p);
    } else if (p->matched) {
        mpi_errno = send_cts(p);
    }
    return mpi_errno;
}

int MPIDI_CH3_Part_start(MPIR_Request * req)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_part_t *p = PART(req);

    MPIR_Part_request_activate(req);
    req->status.MPI_ERROR = p->mismatch ? req->status.MPI_ERROR : MPI_SUCCESS;
    if (p->vc == NULL) {
        MPIR_Status_set_procnull(&req->status);
        return MPI_SUCCESS;
    }
    MPIR_cc_set(&req->cc, 1);
    p->round++;
    if (req->kind == MPIR_REQUEST_KIND__PART_SEND)
        mpi_errno = start_send(p);
    else
        mpi_errno = start_recv(p);
    if (req->kind == MPIR_REQUEST_KIND__PART_RECV && mpi_errno == MPI_SUCCESS)
        MPIR_STATUS_SET_COUNT(req->status, p->data_sz);
    return mpi_errno;
}

static int ready_one(smheap_part_t * p, int k)
{
    p->n_ready++;
    if (p->in_place) {
        atomic_store_explicit(&p->flags->ready[k], p->round, memory_order_release);
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
static void readied(smheap_part_t * p)
{
    if (p->in_place && p->vc->ch.node_rank >= 0)
        MPIDI_CH3I_Smheap_wake(p->vc->ch.node_rank);
}

int MPID_Pready_range(int partition_low, int partition_high, MPIR_Request * sreq)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_part_t *p = PART(sreq);

    if (p->vc == NULL)
        return MPI_SUCCESS;
    for (int k = partition_low; k <= partition_high && mpi_errno == MPI_SUCCESS; k++)
        mpi_errno = ready_one(p, k);
    readied(p);
    return mpi_errno;
}

int MPID_Pready_list(int length, int array_of_partitions[], MPIR_Request * sreq)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_part_t *p = PART(sreq);

    if (p->vc == NULL)
        return MPI_SUCCESS;
    for (int i = 0; i < length && mpi_errno == MPI_SUCCESS; i++)
        mpi_errno = ready_one(p, array_of_partitions[i]);
    readied(p);
    return mpi_errno;
}

int MPID_Parrived(MPIR_Request * rreq, int partition, int *flag)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_part_t *p = PART(rreq);

    *flag = TRUE;
    if (p->vc == NULL || !MPIR_Part_request_is_active(rreq) || MPIR_Request_is_complete(rreq))
        goto fn_exit;
    if (p->in_place && p->matched && p->arrived[partition] < p->part_sz) {
        mpi_errno = copy_in_place(p, partition);
        MPIR_ERR_CHECK(mpi_errno);
        if (round_received(p))
            receive_done(p);
    }
    if (p->arrived[partition] < p->part_sz || (!p->matched && p->data_sz > 0)) {
        mpi_errno = MPID_Progress_poke();
        MPIR_ERR_CHECK(mpi_errno);
    }
    *flag = MPIR_Request_is_complete(rreq) ||
        (p->matched && p->arrived[partition] == p->part_sz);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

void MPIDI_CH3_Part_request_free_hook(MPIR_Request * req)
{
    smheap_part_t *p = PART(req);

    if (p == NULL)
        return;
    if (is_on_active_list(p))
        deactivate(p);
    p->freed = 1;
    if (!p->handshake)
        free_part(p);
}

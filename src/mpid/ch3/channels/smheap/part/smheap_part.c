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
 * How the data moves, in place or as messages, is smheap_part_data.c's; they share
 * smheap_part_impl.h.
 */

#include "smheap_part_impl.h"

/* A PART_INIT that came before its MPI_Precv_init. */
typedef struct part_unexpected {
    part_pkt_init_t init;
    struct part_unexpected *prev, *next;
} part_unexpected_t;

static smheap_part_t *posted;
static part_unexpected_t *unexpected;

/* ------------------------------------------------------------------------------------ */
/* Requests                                                                             */

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

/* Send a packet without data.  To ourselves it is handled at once. */
static int send_pkt(MPIDI_VC_t * vc, part_pkt_t * upkt)
{
    MPIR_Request *req = NULL;
    intptr_t len = 0;

    if (MPIDI_CH3I_Part_is_self(vc))
        return MPIDI_CH3I_pkt_handlers[upkt->ch3.type] (vc, &upkt->ch3, NULL, &len, &req);
    return MPIDI_CH3I_Send_pkt(vc, upkt, sizeof(*upkt));
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

/* ------------------------------------------------------------------------------------ */
/* Progress                                                                             */

/* The progress hook: active only while some request has work. */
static int part_progress(int *made_progress)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_part_t *p, *tmp;

    DL_FOREACH_SAFE_NP(MPIDI_CH3I_Part_active, p, tmp, active_next, active_prev) {
        if (p->req->kind == MPIR_REQUEST_KIND__PART_SEND)
            mpi_errno = MPIDI_CH3I_Part_send_progress(p);
        else
            mpi_errno = MPIDI_CH3I_Part_copy_ready(p);
        MPIR_ERR_CHECK(mpi_errno);
        if (!MPIDI_CH3I_Part_is_active(p))
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
    p->peer_partitions = init->partitions;
    if (p->mismatch)
        p->req->status.MPI_ERROR =
            MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                 MPI_ERR_TRUNCATE, "**smheap_part_size",
                                 "**smheap_part_size %d %d", (int) p->data_sz,
                                 (int) init->data_sz);
    if (MPIR_Part_request_is_active(p->req) && !MPIR_Request_is_complete(p->req)) {
        if (p->mismatch)
            MPIDI_CH3I_Part_complete_round(p);
        else if (p->in_place)
            MPIDI_CH3I_Part_start_in_place(p);
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

    (void) vc, (void) data;
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
        mpi_errno = MPIDI_CH3I_Part_send_ready(p);
    return mpi_errno;
}

int MPIDI_CH3I_Smheap_part_init(MPIDI_CH3_PktHandler_Fcn * pktArray[], int arraySize)
{
    MPIR_Assert(arraySize > MPIDI_CH3I_SMHEAP_PKT_PART_DATA);
    pktArray[MPIDI_CH3I_SMHEAP_PKT_PART_INIT] = handle_init;
    pktArray[MPIDI_CH3I_SMHEAP_PKT_PART_CTS] = handle_cts;
    pktArray[MPIDI_CH3I_SMHEAP_PKT_PART_DATA] = MPIDI_CH3I_Part_handle_data;
    return MPIR_Progress_hook_register(part_progress, &MPIDI_CH3I_Part_hook_id);
}

int MPIDI_CH3I_Smheap_part_finalize(void)
{
    part_unexpected_t *u, *tmp;

    DL_FOREACH_SAFE(unexpected, u, tmp) {
        DL_DELETE(unexpected, u);
        MPL_free(u);
    }
    if (MPIDI_CH3I_Part_hook_id >= 0)
        MPIR_Progress_hook_deregister(MPIDI_CH3I_Part_hook_id);
    MPIDI_CH3I_Part_hook_id = -1;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------------------------------ */
/* MPID entry points                                                                    */

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

    p->in_place = MPIDI_CH3I_Part_can_send_in_place(p) && MPIDI_CH3I_Part_new_flags(p);
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
    init->partitions = p->partitions;
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
    atomic_store_explicit(&p->n_readied, 0, memory_order_relaxed);
    if (!p->in_place) {
        memset(p->state, PART_IDLE, p->partitions);
        p->n_sent = 0;
    }
    MPIDI_CH3I_Part_activate(p);
    return MPI_SUCCESS;
}

static int start_recv(smheap_part_t * p)
{
    int mpi_errno = MPI_SUCCESS;

    memset(p->arrived, 0, p->partitions * sizeof(*p->arrived));
    p->arrived_total = 0;
    if (p->data_sz == 0 || (p->matched && p->mismatch)) {
        MPIDI_CH3I_Part_receive_done(p);
    } else if (p->matched && p->in_place) {
        MPIDI_CH3I_Part_start_in_place(p);
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

int MPID_Pready_range(int partition_low, int partition_high, MPIR_Request * sreq)
{
    int mpi_errno = MPI_SUCCESS, wake_owed = 0;
    smheap_part_t *p = PART(sreq);

    if (p->vc == NULL)
        return MPI_SUCCESS;
    for (int k = partition_low; k <= partition_high && mpi_errno == MPI_SUCCESS; k++)
        mpi_errno = MPIDI_CH3I_Part_ready(p, k, &wake_owed);
    MPIDI_CH3I_Part_readied(p, wake_owed);
    return mpi_errno;
}

int MPID_Pready_list(int length, int array_of_partitions[], MPIR_Request * sreq)
{
    int mpi_errno = MPI_SUCCESS, wake_owed = 0;
    smheap_part_t *p = PART(sreq);

    if (p->vc == NULL)
        return MPI_SUCCESS;
    for (int i = 0; i < length && mpi_errno == MPI_SUCCESS; i++)
        mpi_errno = MPIDI_CH3I_Part_ready(p, array_of_partitions[i], &wake_owed);
    MPIDI_CH3I_Part_readied(p, wake_owed);
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
        mpi_errno = MPIDI_CH3I_Part_copy_in_place(p, partition);
        MPIR_ERR_CHECK(mpi_errno);
        if (MPIDI_CH3I_Part_round_received(p))
            MPIDI_CH3I_Part_receive_done(p);
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
    if (MPIDI_CH3I_Part_is_active(p))
        MPIDI_CH3I_Part_deactivate(p);
    p->freed = 1;
    if (!p->handshake)
        free_part(p);
}

/*
 * ch3:smheap -- single-copy rendezvous through the shared heap.
 *
 * When every local rank allocates from one shared heap and a large message's data lies in
 * it, the request-to-send carries the data's address; the receiver, once it has matched
 * the message, copies (or unpacks into a derived datatype) straight from the sender's
 * buffer and answers DONE, which completes the send.  Everything else (data on the stack,
 * in static memory, from mmap, a noncontiguous send type, the heap off) goes through ch3's
 * own rendezvous, whose data travels through the rings.  ch3 calls these through the VC's
 * rndvSend_fn and rndvRecv_fn, as nemesis does for its large-message transfer.
 */

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_CH3_SMHEAP_SINGLE_COPY
      category    : CH3
      type        : boolean
      default     : true
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        ch3:smheap: move rendezvous messages whose data lies in the shared heap with a single
        copy, from the sender's buffer straight into the receiver's.  0 sends them through
        ch3's rendezvous like other data.  Messages smaller than
        MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE are sent eagerly either way.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

#include "mpidi_ch3_impl.h"
#include "smheap.h"

typedef struct {
    MPIDI_CH3_Pkt_type_t type;
    MPIDI_Message_match match;
    MPI_Request sender_req_id;
    intptr_t data_sz;
    const void *data;           /* the sender's data, in the shared heap */
} smheap_pkt_rts_t;

typedef struct {
    MPIDI_CH3_Pkt_type_t type;
    MPI_Request sender_req_id;
} smheap_pkt_done_t;

typedef union {
    MPIDI_CH3_Pkt_t ch3;
    smheap_pkt_rts_t rts;
    smheap_pkt_done_t done;
} smheap_pkt_t;

MPL_static_assert(sizeof(smheap_pkt_t) == sizeof(MPIDI_CH3_Pkt_t),
                  "ch3:smheap packets must fit in ch3's packet header");

/* Messages and bytes per path (MPI_T). */
static unsigned long long PVAR_COUNTER_smheap_single_copy_msgs;
static unsigned long long PVAR_COUNTER_smheap_single_copy_bytes;
static unsigned long long PVAR_COUNTER_smheap_rndv_copy_msgs;
static unsigned long long PVAR_COUNTER_smheap_rndv_copy_bytes;

/* Is [buf, buf+len) in the shared heap, so that every local rank can read it? */
static int readable_by_peers(const void *buf, intptr_t len)
{
    return MPIDI_CH3I_Smheap_heap_shared && len > 0 && smheap_in_region(buf) &&
        smheap_in_region((const char *) buf + len - 1);
}

int MPIDI_CH3I_Smheap_RndvSend(MPIR_Request ** sreq_p, const void *buf, MPI_Aint count,
                               MPI_Datatype datatype, int dt_contig, intptr_t data_sz,
                               MPI_Aint dt_true_lb, int rank, int tag, MPIR_Comm * comm,
                               int context_offset)
{
    int mpi_errno = MPI_SUCCESS;
    const char *data = (const char *) buf + dt_true_lb;
    MPIR_Request *sreq = *sreq_p, *rts_req = NULL;
    smheap_pkt_t upkt;
    smheap_pkt_rts_t *rts = &upkt.rts;
    MPIDI_VC_t *vc;

    MPIR_FUNC_ENTER;

    if (!MPIR_CVAR_CH3_SMHEAP_SINGLE_COPY || !dt_contig || !readable_by_peers(data, data_sz)) {
        MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_rndv_copy_msgs, 1);
        MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_rndv_copy_bytes, data_sz);
        mpi_errno = MPIDI_CH3_RndvSend(sreq_p, buf, count, datatype, dt_contig, data_sz,
                                       dt_true_lb, rank, tag, comm, context_offset);
        goto fn_exit;
    }

    MPIDI_Pkt_init(rts, MPIDI_CH3I_SMHEAP_PKT_RTS);
    rts->match.parts.rank = comm->rank;
    rts->match.parts.tag = tag;
    rts->match.parts.context_id = comm->context_id + context_offset;
    rts->sender_req_id = sreq->handle;
    rts->data_sz = data_sz;
    rts->data = data;
    sreq->dev.OnDataAvail = NULL;
    sreq->dev.partner_request = NULL;

    MPIDI_Comm_get_vc_set_active(comm, rank, &vc);
    sreq->ch.vc = vc;
    MPID_THREAD_CS_ENTER(POBJ, vc->pobj_mutex);
    mpi_errno = MPIDI_CH3_iStartMsg(vc, &upkt, sizeof(upkt), &rts_req);
    MPID_THREAD_CS_EXIT(POBJ, vc->pobj_mutex);
    if (mpi_errno != MPI_SUCCESS) {
        MPIR_Request_free(sreq);
        *sreq_p = NULL;
        MPIR_ERR_SETANDJUMP(mpi_errno, MPI_ERR_OTHER, "**ch3|rtspkt");
    }
    if (rts_req != NULL)
        MPIR_Request_free(rts_req);
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_single_copy_msgs, 1);
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_single_copy_bytes, data_sz);
    /* sreq completes when the receiver says DONE: until then it reads our buffer */

  fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* The receive is matched: copy the data out of the sender's buffer, tell the sender,
 * complete the receive. */
static int copy_from_peer(MPIDI_VC_t * vc, MPIR_Request * rreq)
{
    int mpi_errno = MPI_SUCCESS;
    intptr_t data_sz = rreq->dev.recv_data_sz, userbuf_sz;
    MPI_Aint dt_true_lb, actual;
    MPIR_Datatype *dt_ptr;
    MPIR_Request *done_req = NULL;
    smheap_pkt_t upkt;
    smheap_pkt_done_t *done = &upkt.done;
    int dt_contig;

    MPIDI_Datatype_get_info(rreq->dev.user_count, rreq->dev.datatype, dt_contig, userbuf_sz,
                            dt_ptr, dt_true_lb);
    if (data_sz > userbuf_sz) {
        rreq->status.MPI_ERROR = MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE,
                                                      __func__, __LINE__, MPI_ERR_TRUNCATE,
                                                      "**truncate", "**truncate %d %d %d %d",
                                                      rreq->status.MPI_SOURCE,
                                                      rreq->status.MPI_TAG, (int) data_sz,
                                                      (int) userbuf_sz);
        data_sz = userbuf_sz;
    }
    if (dt_contig)
        MPIR_Memcpy((char *) rreq->dev.user_buf + dt_true_lb, rreq->ch.peer_buf, data_sz);
    else {
        mpi_errno = MPIR_Typerep_unpack(rreq->ch.peer_buf, data_sz, rreq->dev.user_buf,
                                        rreq->dev.user_count, rreq->dev.datatype, 0, &actual);
        MPIR_ERR_CHECK(mpi_errno);
        if (actual != data_sz && rreq->status.MPI_ERROR == MPI_SUCCESS)
            rreq->status.MPI_ERROR = MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE,
                                                          __func__, __LINE__, MPI_ERR_TYPE,
                                                          "**dtypemismatch", 0);
        data_sz = actual;
    }
    MPIR_STATUS_SET_COUNT(rreq->status, data_sz);
    rreq->ch.peer_buf = NULL;

    MPIDI_Pkt_init(done, MPIDI_CH3I_SMHEAP_PKT_DONE);
    done->sender_req_id = rreq->dev.sender_req_id;
    MPID_THREAD_CS_ENTER(POBJ, vc->pobj_mutex);
    mpi_errno = MPIDI_CH3_iStartMsg(vc, &upkt, sizeof(upkt), &done_req);
    MPID_THREAD_CS_EXIT(POBJ, vc->pobj_mutex);
    MPIR_ERR_CHKANDJUMP(mpi_errno, mpi_errno, MPI_ERR_OTHER, "**ch3|ctspkt");
    if (done_req != NULL)
        MPIR_Request_free(done_req);

    mpi_errno = MPID_Request_complete(rreq);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* ch3 matched a receive to a rendezvous message that had arrived before it. */
int MPIDI_CH3I_Smheap_RndvRecv(MPIDI_VC_t * vc, MPIR_Request * rreq)
{
    if (rreq->ch.peer_buf == NULL)
        return MPIDI_CH3_RecvRndv(vc, rreq);
    return copy_from_peer(vc, rreq);
}

static int handle_rts(MPIDI_VC_t * vc, MPIDI_CH3_Pkt_t * pkt, void *data, intptr_t * buflen,
                      MPIR_Request ** rreqp)
{
    smheap_pkt_rts_t *rts = &((smheap_pkt_t *) pkt)->rts;
    int mpi_errno = MPI_SUCCESS, found;
    MPIR_Request *rreq;

    (void) data;
    *buflen = 0;
    *rreqp = NULL;

    MPID_THREAD_CS_ENTER(POBJ, MPIR_THREAD_POBJ_MSGQ_MUTEX);
    rreq = MPIDI_CH3U_Recvq_FDP_or_AEU(&rts->match, &found);
    MPIR_ERR_CHKANDJUMP1(!rreq, mpi_errno, MPI_ERR_OTHER, "**nomemreq", "**nomemuereq %d",
                         MPIDI_CH3U_Recvq_count_unexp());
    /* a receive on a revoked communicator: drop the message */
    if (!found && MPIR_cc_get(rreq->cc) == 0)
        goto fn_exit;

    rreq->status.MPI_SOURCE = rts->match.parts.rank;
    rreq->status.MPI_TAG = rts->match.parts.tag;
    MPIR_STATUS_SET_COUNT(rreq->status, rts->data_sz);
    rreq->dev.sender_req_id = rts->sender_req_id;
    rreq->dev.recv_data_sz = rts->data_sz;
    MPIDI_Request_set_msg_type(rreq, MPIDI_REQUEST_RNDV_MSG);
    rreq->ch.peer_buf = rts->data;

    if (found)
        mpi_errno = copy_from_peer(vc, rreq);
    else        /* wait for a receive: ch3 then calls vc->rndvRecv_fn */
        MPIDI_CH3_Progress_signal_completion();

  fn_exit:
    MPID_THREAD_CS_EXIT(POBJ, MPIR_THREAD_POBJ_MSGQ_MUTEX);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int handle_done(MPIDI_VC_t * vc, MPIDI_CH3_Pkt_t * pkt, void *data, intptr_t * buflen,
                       MPIR_Request ** rreqp)
{
    smheap_pkt_done_t *done = &((smheap_pkt_t *) pkt)->done;
    MPIR_Request *sreq;

    (void) vc, (void) data;
    *buflen = 0;
    *rreqp = NULL;
    MPIR_Request_get_ptr(done->sender_req_id, sreq);
    return MPID_Request_complete(sreq);
}

int MPIDI_CH3I_Smheap_rndv_init(MPIDI_CH3_PktHandler_Fcn * pktArray[], int arraySize)
{
    MPIR_Assert(arraySize > MPIDI_CH3I_SMHEAP_PKT_DONE);
    pktArray[MPIDI_CH3I_SMHEAP_PKT_RTS] = handle_rts;
    pktArray[MPIDI_CH3I_SMHEAP_PKT_DONE] = handle_done;

    MPIR_T_PVAR_COUNTER_REGISTER_STATIC(SMHEAP, MPI_UNSIGNED_LONG_LONG,
                                        smheap_single_copy_msgs, MPI_T_VERBOSITY_USER_BASIC,
                                        MPI_T_BIND_NO_OBJECT, MPIR_T_PVAR_FLAG_READONLY |
                                        MPIR_T_PVAR_FLAG_CONTINUOUS, "CH3",
                                        "rendezvous messages this rank sent with a single "
                                        "copy from the shared heap");
    MPIR_T_PVAR_COUNTER_REGISTER_STATIC(SMHEAP, MPI_UNSIGNED_LONG_LONG,
                                        smheap_single_copy_bytes, MPI_T_VERBOSITY_USER_BASIC,
                                        MPI_T_BIND_NO_OBJECT, MPIR_T_PVAR_FLAG_READONLY |
                                        MPIR_T_PVAR_FLAG_CONTINUOUS, "CH3",
                                        "bytes of those messages");
    MPIR_T_PVAR_COUNTER_REGISTER_STATIC(SMHEAP, MPI_UNSIGNED_LONG_LONG, smheap_rndv_copy_msgs,
                                        MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                                        MPIR_T_PVAR_FLAG_READONLY |
                                        MPIR_T_PVAR_FLAG_CONTINUOUS, "CH3",
                                        "rendezvous messages this rank sent through ch3's "
                                        "rendezvous, copied through the rings (data outside "
                                        "the shared heap, or noncontiguous)");
    MPIR_T_PVAR_COUNTER_REGISTER_STATIC(SMHEAP, MPI_UNSIGNED_LONG_LONG, smheap_rndv_copy_bytes,
                                        MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                                        MPIR_T_PVAR_FLAG_READONLY |
                                        MPIR_T_PVAR_FLAG_CONTINUOUS, "CH3",
                                        "bytes of those messages");
    return MPI_SUCCESS;
}

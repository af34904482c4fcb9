/*
 * ch3:smheap -- single-copy rendezvous through the shared heap or the kernel.
 *
 * When every local rank allocates from one shared heap and a large message's data lies in
 * it, the request-to-send carries the data's address; the receiver, once it has matched
 * the message, copies (or unpacks into a derived datatype) straight from the sender's
 * buffer and answers DONE, which completes the send.  When the receive buffer is in the
 * heap too and the message is large, the two share the copy (HMPI's "synergistic" copy):
 * the receiver asks the sender to HELP, and both claim chunks of the transfer from a
 * counter pair the sender allocated in the heap, so two cores copy at once.
 *
 * Large contiguous data outside the heap (stack, static data, mmap), and mid-sized data
 * while copies into the rings run slow (smheap_pace.h), goes the same way through the
 * kernel (smheap_cma.h): the request-to-send also carries the sender's pid,
 * the receiver reads its chunks with process_vm_readv and the sender writes its own into
 * the receiver's buffer with process_vm_writev.  Where the kernel refuses, or the receive
 * type is noncontiguous, the receiver answers with ch3's clear-to-send instead and the
 * data is staged through the rings after all (and a refused sender stops trying that
 * peer).
 *
 * Other data outside the heap (the heap off, noncontiguous send types, smaller messages)
 * goes eagerly below ch3's eager limit, as it would without this channel; above it,
 * through ch3's own rendezvous, whose data is staged through the rings in a pipeline.
 * ch3 calls these through the VC's rndvSend_fn and rndvRecv_fn, as nemesis does for its
 * large-message transfer; the VC's eager limit is lowered to
 * MPIR_CVAR_CH3_SMHEAP_SINGLE_COPY_MIN so that heap data of that size reaches us.
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
        ch3:smheap: move messages whose data lies in the shared heap with a single copy,
        from the sender's buffer straight into the receiver's.  0 sends them like other
        data: eagerly up to MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE, staged through the rings
        above.

    - name        : MPIR_CVAR_CH3_SMHEAP_SINGLE_COPY_MIN
      category    : CH3
      type        : int
      default     : 4096
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        ch3:smheap: smallest message (bytes) whose shared-heap data is sent with a single
        copy; smaller ones are sent eagerly.  Data outside the heap keeps ch3's eager
        limit, MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE.  On two cores the single copy is faster
        from 1 KiB (bench/p2p); 4 KiB, Open MPI's shared-memory eager limit, leaves
        programs that count on small blocking sends being buffered room to do so.

    - name        : MPIR_CVAR_CH3_SMHEAP_SHARED_COPY_MIN
      category    : CH3
      type        : int
      default     : 65536
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        ch3:smheap: smallest single-copy message (bytes) whose copy the sender shares with
        the receiver when both buffers are in the shared heap.  -1 never shares.  Measured
        on two cores, sharing pays from 64 KiB.

    - name        : MPIR_CVAR_CH3_SMHEAP_COPY_CHUNK
      category    : CH3
      type        : int
      default     : 32768
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        ch3:smheap: bytes the sender and the receiver claim at a time when they share a
        copy (at least 4096).

    - name        : MPIR_CVAR_CH3_SMHEAP_CMA_MIN
      category    : CH3
      type        : int
      default     : 131072
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        ch3:smheap: smallest contiguous message (bytes) outside the shared heap that goes
        to a rank of this node with a single copy through the kernel (Linux's
        process_vm_readv and process_vm_writev), shared by the receiver and the sender;
        smaller ones go eagerly or staged through the rings.  -1 never.  Where Yama's
        ptrace_scope is 1, every rank allows any process of its user to attach to it, as
        Open MPI does for the same copies.

    - name        : MPIR_CVAR_CH3_SMHEAP_CMA_SLOW_RING_MIN
      category    : CH3
      type        : int
      default     : 16384
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        ch3:smheap: smallest contiguous message (bytes) outside the shared heap that goes
        through the kernel, as from MPIR_CVAR_CH3_SMHEAP_CMA_MIN, while copies into the
        rings run slower than MPIR_CVAR_CH3_SMHEAP_SLOW_RING_RATE (on virtual machines,
        moving cache lines between cores can slow down tenfold for minutes at a time).
        -1 never.

    - name        : MPIR_CVAR_CH3_SMHEAP_SLOW_RING_RATE
      category    : CH3
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        ch3:smheap: the rings count as slow while copies into them run below this many
        MB/s; 0 takes half the speed of a 64 KiB copy through the kernel, measured at
        MPI_Init.

    - name        : MPIR_CVAR_CH3_SMHEAP_STAGE_BOTH_WAYS_MAX
      category    : CH3
      type        : int
      default     : -1
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        ch3:smheap: largest message (bytes) offered through the kernel that a receiver
        has staged through the rings instead while it is sending to the same peer and the
        rings are fast: two ranks streaming both ways each copy once into and once out of
        cells that stay in cache, faster than two kernel copies at once.  -1: any size;
        0: never.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

#include "mpidi_ch3_impl.h"
#include <sched.h>
#include <unistd.h>
#include "smheap.h"
#include <stdatomic.h>

/* A transfer that sender and receiver may share.  Allocated by the sender in the shared
 * heap; both claim chunks through `claimed`, one from the front of the data and the other
 * from the back, and account for each in `done` once copied (or refused by the kernel:
 * then `refused` is set too).  The receiver answers only when
 * `done` reaches the length, and the sender frees the job only on that answer, DONE or
 * ch3's clear-to-send (or when the send is cancelled before the receiver saw it). */
typedef struct smheap_copy_job {
    _Alignas(SMHEAP_CACHELINE) atomic_size_t claimed;   /* chunks claimed by either side */
    _Alignas(SMHEAP_CACHELINE) atomic_size_t done;      /* bytes accounted for */
    atomic_int refused;         /* a chunk the kernel would not copy */
} smheap_copy_job_t;

typedef struct {
    MPIDI_CH3_Pkt_type_t type;
    int32_t pid;                /* 0: data lies in the shared heap; else the sender's pid */
    MPIDI_Message_match match;
    MPI_Request sender_req_id;
    intptr_t data_sz;
    const void *data;           /* the sender's data, by address or through the kernel */
    smheap_copy_job_t *job;     /* NULL: the sender cannot help */
} smheap_pkt_rts_t;

typedef struct {
    MPIDI_CH3_Pkt_type_t type;
    int32_t pid;                /* the receiver's, to reach dst outside the heap */
    smheap_copy_job_t *job;
    const void *src;
    void *dst;
    intptr_t len;
    intptr_t chunk;
    int32_t helper_from_front;  /* the sender takes chunks from the front, else the back */
} smheap_pkt_help_t;

typedef struct {
    MPIDI_CH3_Pkt_type_t type;
    MPI_Request sender_req_id;
} smheap_pkt_done_t;

typedef union {
    MPIDI_CH3_Pkt_t ch3;
    smheap_pkt_rts_t rts;
    smheap_pkt_help_t help;
    smheap_pkt_done_t done;
} smheap_pkt_t;

MPL_static_assert(sizeof(smheap_pkt_t) == sizeof(MPIDI_CH3_Pkt_t),
                  "ch3:smheap packets must fit in ch3's packet header");

/* How one side copies its chunks: by address, when both ranges are in its address space
 * or the shared heap, or through the kernel to the other process's range. */
typedef struct {
    char *dst;
    const char *src;
    enum { COPY_BY_ADDRESS, COPY_READ_PEER, COPY_WRITE_PEER } how;
    pid_t peer;
} copy_route_t;


static MPIDI_CH3_PktHandler_Fcn *ch3_cancel_send_resp, *ch3_clr_to_send;

/* Can this process copy through the kernel?  Decided at MPI_Init, before any peer tries
 * to reach it that way. */
int MPIDI_CH3I_Smheap_cma_ready;

static int single_copy_on(void)
{
    return MPIDI_CH3I_Smheap_heap_shared && MPIR_CVAR_CH3_SMHEAP_SINGLE_COPY;
}

/* Data outside the heap goes through the kernel from CMA_MIN, and from CMA_SLOW_RING_MIN
 * while the rings are slow (asked last: the answer may let this message probe them); the
 * copy job it shares lives in the heap. */
static int cma_on(MPIDI_VC_t * vc, intptr_t data_sz)
{
    if (!MPIDI_CH3I_Smheap_cma_ready || !single_copy_on() || vc->ch.cma_refused ||
        MPIR_CVAR_CH3_SMHEAP_CMA_MIN < 0)
        return FALSE;
    return data_sz >= MPIR_CVAR_CH3_SMHEAP_CMA_MIN ||
        (MPIR_CVAR_CH3_SMHEAP_CMA_SLOW_RING_MIN >= 0 &&
         data_sz >= MPIR_CVAR_CH3_SMHEAP_CMA_SLOW_RING_MIN && smheap_pace_rings_slow());
}

/* The VC's eager limit: ch3 hands every larger message to MPIDI_CH3I_Smheap_RndvSend. */
int MPIDI_CH3I_Smheap_eager_max_msg_sz(void)
{
    int limit = MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE;

    if (single_copy_on() && MPIR_CVAR_CH3_SMHEAP_SINGLE_COPY_MIN > 0)
        limit = MPL_MIN(limit, MPIR_CVAR_CH3_SMHEAP_SINGLE_COPY_MIN - 1 +
                        (int) sizeof(MPIDI_CH3_Pkt_eager_send_t));
    return limit;
}

/* Would ch3 have sent this eagerly with its own limit? */
static int below_ch3_eager_limit(MPIR_Comm * comm, intptr_t data_sz)
{
    int limit = comm->hints[MPIR_COMM_HINT_EAGER_THRESH];

    if (limit == -1)
        limit = MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE;
    return data_sz + (intptr_t) sizeof(MPIDI_CH3_Pkt_eager_send_t) <= limit;
}

/* Data we cannot hand over by address, below ch3's eager limit: what ch3 would have done. */
static int send_eager(MPIR_Request ** sreq_p, const void *buf, MPI_Aint count,
                      MPI_Datatype datatype, int dt_contig, intptr_t data_sz,
                      MPI_Aint dt_true_lb, int rank, int tag, MPIR_Comm * comm,
                      int context_offset)
{
    MPIR_Request *sreq = *sreq_p;

    if (MPIDI_Request_get_type(sreq) == MPIDI_REQUEST_TYPE_SSEND)
        return MPIDI_CH3_EagerSyncNoncontigSend(sreq_p, buf, count, datatype, data_sz,
                                                dt_contig, dt_true_lb, rank, tag, comm,
                                                context_offset);
    MPIDI_Request_set_msg_type(sreq, MPIDI_REQUEST_EAGER_MSG);
    if (dt_contig)
        return MPIDI_CH3_EagerContigIsend(sreq_p, MPIDI_CH3_PKT_EAGER_SEND,
                                          (const char *) buf + dt_true_lb, data_sz, rank, tag,
                                          comm, context_offset);
    return MPIDI_CH3_EagerNoncontigSend(sreq_p, MPIDI_CH3_PKT_EAGER_SEND, buf, count,
                                        datatype, rank, tag, comm, context_offset);
}

/* A job the receiver can use to share the copy of data_sz bytes, or NULL. */
static smheap_copy_job_t *new_copy_job(intptr_t data_sz)
{
    smheap_copy_job_t *job;

    if (MPIR_CVAR_CH3_SMHEAP_SHARED_COPY_MIN < 0 ||
        data_sz < MPIR_CVAR_CH3_SMHEAP_SHARED_COPY_MIN)
        return NULL;
    job = MPL_aligned_alloc(SMHEAP_CACHELINE, sizeof(*job), MPL_MEM_BUFFER);
    if (job != NULL && !smheap_holds(job, sizeof(*job))) {
        MPL_free(job);  /* this thread allocates from glibc (heap full, thread exiting) */
        return NULL;
    }
    if (job != NULL) {
        atomic_init(&job->claimed, 0);
        atomic_init(&job->done, 0);
        atomic_init(&job->refused, 0);
    }
    return job;
}

/* Count sreq among vc's rendezvous sends awaiting the receiver's answer (before sending
 * its request: the answer may come at once), and uncount it when it comes. */
static void await_answer(MPIDI_VC_t * vc, MPIR_Request * sreq)
{
    sreq->ch.unanswered = TRUE;
    vc->ch.rndv_unanswered++;
}

static void answered(MPIDI_VC_t * vc, MPIR_Request * sreq)
{
    if (sreq->ch.unanswered) {
        sreq->ch.unanswered = FALSE;
        vc->ch.rndv_unanswered--;
    }
}

/* Offer data_sz bytes at data to the receiver: by address (pid 0, data in the heap) or
 * through the kernel (pid ours). */
static int send_rts(MPIR_Request * sreq, MPIDI_VC_t * vc, const char *data, intptr_t data_sz,
                    pid_t pid, int tag, MPIR_Comm * comm, int context_offset)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Request *rts_req = NULL;
    smheap_pkt_t upkt;
    smheap_pkt_rts_t *rts = &upkt.rts;

    MPIDI_Pkt_init(rts, MPIDI_CH3I_SMHEAP_PKT_RTS);
    rts->pid = pid;
    rts->match.parts.rank = comm->rank;
    rts->match.parts.tag = tag;
    rts->match.parts.context_id = comm->context_id + context_offset;
    rts->sender_req_id = sreq->handle;
    rts->data_sz = data_sz;
    rts->data = data;
    rts->job = sreq->ch.copy_job = new_copy_job(data_sz);
    /* a rendezvous send in ch3's terms, should the receiver answer with ch3's
     * clear-to-send (and for MPID_Cancel_send) */
    sreq->dev.OnDataAvail = NULL;
    sreq->dev.partner_request = NULL;
    MPIDI_Request_set_msg_type(sreq, MPIDI_REQUEST_RNDV_MSG);

    sreq->ch.vc = vc;
    await_answer(vc, sreq);
    MPID_THREAD_CS_ENTER(POBJ, vc->pobj_mutex);
    mpi_errno = MPIDI_CH3_iStartMsg(vc, &upkt, sizeof(upkt), &rts_req);
    MPID_THREAD_CS_EXIT(POBJ, vc->pobj_mutex);
    MPIR_ERR_CHKANDJUMP(mpi_errno, mpi_errno, MPI_ERR_OTHER, "**ch3|rtspkt");
    if (rts_req != NULL)
        MPIR_Request_free(rts_req);
    /* sreq completes when the receiver says DONE: until then it reads our buffer */

  fn_exit:
    return mpi_errno;
  fn_fail:
    answered(vc, sreq);
    MPL_free(sreq->ch.copy_job);
    sreq->ch.copy_job = NULL;
    goto fn_exit;
}

int MPIDI_CH3I_Smheap_RndvSend(MPIR_Request ** sreq_p, const void *buf, MPI_Aint count,
                               MPI_Datatype datatype, int dt_contig, intptr_t data_sz,
                               MPI_Aint dt_true_lb, int rank, int tag, MPIR_Comm * comm,
                               int context_offset)
{
    int mpi_errno = MPI_SUCCESS;
    const char *data = (const char *) buf + dt_true_lb;
    MPIDI_VC_t *vc;

    MPIR_FUNC_ENTER;

    MPIDI_Comm_get_vc_set_active(comm, rank, &vc);
    if (single_copy_on() && dt_contig && data_sz > 0 && smheap_holds(data, (size_t) data_sz)) {
        MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_single_copy_msgs, 1);
        MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_single_copy_bytes, data_sz);
        mpi_errno = send_rts(*sreq_p, vc, data, data_sz, 0, tag, comm, context_offset);
    } else if (dt_contig && cma_on(vc, data_sz)) {
        MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_cma_msgs, 1);
        MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_cma_bytes, data_sz);
        if (data_sz < MPIR_CVAR_CH3_SMHEAP_CMA_MIN)
            MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_cma_slow_ring_msgs, 1);
        mpi_errno = send_rts(*sreq_p, vc, data, data_sz, getpid(), tag, comm, context_offset);
    } else if (below_ch3_eager_limit(comm, data_sz)) {
        mpi_errno = send_eager(sreq_p, buf, count, datatype, dt_contig, data_sz, dt_true_lb,
                               rank, tag, comm, context_offset);
        goto fn_exit;
    } else {
        MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_staged_msgs, 1);
        MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_staged_bytes, data_sz);
        await_answer(vc, *sreq_p);
        mpi_errno = MPIDI_CH3_RndvSend(sreq_p, buf, count, datatype, dt_contig, data_sz,
                                       dt_true_lb, rank, tag, comm, context_offset);
        if (mpi_errno != MPI_SUCCESS)
            vc->ch.rndv_unanswered--;   /* ch3 freed the request */
        goto fn_exit;
    }
    if (mpi_errno != MPI_SUCCESS) {
        MPIR_Request_free(*sreq_p);
        *sreq_p = NULL;
    }

  fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
}

/* Copy n bytes at offset off of the route; 0 or the errno with which the kernel refused. */
static int copy_range(const copy_route_t * route, size_t off, size_t n)
{
    switch (route->how) {
        case COPY_READ_PEER:
            return smheap_cma_read(route->peer, route->dst + off, route->src + off, n);
        case COPY_WRITE_PEER:
            return smheap_cma_write(route->peer, route->dst + off, route->src + off, n);
        default:
            smheap_copy(route->dst + off, route->src + off, n);
            return 0;
    }
}

/* Claim chunks of the job until none is left, from the front of the data or from the back;
 * returns the bytes this process copied.  Every claim takes a ticket, and there are as many
 * tickets as chunks, so the two ends never overlap.  After a refusal (by either side) the
 * rest is only accounted for, not copied. */
static intptr_t copy_chunks(smheap_copy_job_t * job, const copy_route_t * route, intptr_t len,
                            intptr_t chunk, int from_front)
{
    intptr_t copied = 0;
    size_t chunks = (size_t) ((len + chunk - 1) / chunk), mine = 0;

    while (atomic_fetch_add_explicit(&job->claimed, 1, memory_order_relaxed) < chunks) {
        size_t off = (from_front ? mine : chunks - 1 - mine) * (size_t) chunk;
        intptr_t n = MPL_MIN(chunk, len - (intptr_t) off);

        mine++;

        if (!atomic_load_explicit(&job->refused, memory_order_relaxed)) {
            if (copy_range(route, off, n) == 0)
                copied += n;
            else
                atomic_store_explicit(&job->refused, 1, memory_order_relaxed);
        }
        atomic_fetch_add_explicit(&job->done, n, memory_order_release);
    }
    return copied;
}

/* Every chunk is claimed; wait for the sender to finish the ones it took (it is copying
 * them right now, unless the OS preempted it: then give it the CPU; MPL_sched_yield does
 * nothing on Linux). */
static void wait_for_helper(smheap_copy_job_t * job, intptr_t len)
{
    int polls = 0;

    while (atomic_load_explicit(&job->done, memory_order_acquire) < (size_t) len) {
        if (++polls > 1000)
            sched_yield();
    }
}

/* Copy len contiguous bytes from the sender's buffer, with the sender's help when it
 * offered a job and can reach our buffer (in the heap, or through the kernel).  Sets
 * *refused if the kernel would not copy some of it. */
static int copy_contig(MPIDI_VC_t * vc, MPIR_Request * rreq, char *dst, intptr_t len,
                       int *refused)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_copy_job_t *job = rreq->ch.copy_job;
    pid_t sender = rreq->ch.peer_pid;
    copy_route_t route = { dst, rreq->ch.peer_buf,
        sender ? COPY_READ_PEER : COPY_BY_ADDRESS, sender
    };
    intptr_t chunk = MPL_MAX(MPIR_CVAR_CH3_SMHEAP_COPY_CHUNK, 4096);
    smheap_pkt_t upkt;
    smheap_pkt_help_t *help = &upkt.help;
    int from_front;

    /* Through the kernel, each side in one system call: it pins the pages it copies, so
     * many small chunks cost more than an uneven split (figures: doc/p2p.md). */
    if (sender)
        chunk = MPL_MAX(chunk, MPL_ROUND_UP_ALIGN(len / 2, 4096));

    /* Through the kernel, a peer that is receiving from us too (both directions at once)
     * would only slow its own receive down by helping with ours: each side copying its own
     * receive alone does better (figures: doc/p2p.md). */
    if (sender && vc->ch.rndv_unanswered > 0)
        job = NULL;
    if (job == NULL || len <= chunk || (!sender && !smheap_holds(dst, (size_t) len))) {
        *refused = copy_range(&route, 0, len) != 0;
        goto fn_exit;
    }

    MPIDI_Pkt_init(help, MPIDI_CH3I_SMHEAP_PKT_HELP);
    help->pid = getpid();
    help->job = job;
    help->src = route.src;
    help->dst = dst;
    help->len = len;
    help->chunk = chunk;
    /* The lower rank of the pair takes the front in both directions: in a ping-pong with one
     * buffer per rank, each side then copies the part of the data its own cache holds (it
     * read or wrote it in the previous copy).  Both claiming from the front, the two halves
     * landed in the wrong caches in one run out of two and a 1 MiB message took twice as
     * long (figures: doc/p2p.md). */
    from_front = MPIDI_Process.my_pg_rank < vc->pg_rank;
    help->helper_from_front = !from_front;
    mpi_errno = MPIDI_CH3I_Send_pkt(vc, &upkt, sizeof(upkt));
    MPIR_ERR_CHKANDJUMP(mpi_errno, mpi_errno, MPI_ERR_OTHER, "**ch3|ctspkt");
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_shared_copy_msgs, 1);

    copy_chunks(job, &route, len, chunk, from_front);
    wait_for_helper(job, len);
    *refused = atomic_load_explicit(&job->refused, memory_order_relaxed);
    smheap_peer_wrote(dst, len);        /* the sender's chunks */

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Have the data staged through the rings after all: ch3's clear-to-send, answered by the
 * sender from the same request (its ch3 fields are a rendezvous send's). */
static int recv_staged(MPIDI_VC_t * vc, MPIR_Request * rreq)
{
    rreq->ch.peer_buf = NULL;
    rreq->ch.copy_job = NULL;
    return MPIDI_CH3_RecvRndv(vc, rreq);
}

static intptr_t stage_both_ways_max;   /* MPIR_CVAR_CH3_SMHEAP_STAGE_BOTH_WAYS_MAX */

/* Between slow and fast, stage a message now and then to time the rings again. */
#define STAGE_RETRY_NS 100000000

/* Are the rings fast enough to stage through?  Not timed yet (the staged copies will be),
 * or the last copies into them ran at four times the slow bound or more (twice the
 * kernel's speed by default), which leaves out the slow spells and the states between
 * (smheap_pace.h).  In between, the kernel copies,
 * and a message is staged every STAGE_RETRY_NS to find out whether that has changed. */
static int rings_fast(void)
{
    if (smheap_pace.slow_below <= 0 || smheap_pace.slow)
        return FALSE;
    if (smheap_pace.last_rate == 0 || smheap_pace.last_rate >= 4 * smheap_pace.slow_below)
        return TRUE;
    return smheap_pace_now() - smheap_pace.probed_at >= STAGE_RETRY_NS;
}

/* Rather have len bytes the peer offers through the kernel staged through the rings?
 * Where we are sending to it too and the rings are fast: then each side copies into cells
 * the other empties while they are in cache, and the two directions keep each other going,
 * where two kernel copies at once each pin pages and copy alone.  Staging wins at every
 * size, even where both ways move the same bytes through memory, hence no bound by default
 * (figures: doc/p2p.md). */
static int stage_instead(MPIDI_VC_t * vc, intptr_t len)
{
    return vc->ch.rndv_unanswered > 0 && len <= stage_both_ways_max && rings_fast();
}

/* The receive is matched: copy the data out of the sender's buffer, tell the sender,
 * complete the receive. */
static int copy_from_peer(MPIDI_VC_t * vc, MPIR_Request * rreq)
{
    int mpi_errno = MPI_SUCCESS;
    intptr_t data_sz = rreq->dev.recv_data_sz, userbuf_sz;
    MPI_Aint dt_true_lb, actual;
    MPIR_Datatype *dt_ptr;
    smheap_pkt_t upkt;
    smheap_pkt_done_t *done = &upkt.done;
    int dt_contig, refused = 0;

    MPIDI_Datatype_get_info(rreq->dev.user_count, rreq->dev.datatype, dt_contig, userbuf_sz,
                            dt_ptr, dt_true_lb);
    if (rreq->ch.peer_pid && !dt_contig) {
        MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_cma_fallbacks, 1);
        return recv_staged(vc, rreq);   /* ch3 unpacks it as it comes */
    }
    if (rreq->ch.peer_pid && stage_instead(vc, data_sz)) {
        MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_both_ways_staged_msgs, 1);
        return recv_staged(vc, rreq);
    }
    if (data_sz > userbuf_sz) {
        rreq->status.MPI_ERROR = MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE,
                                                      __func__, __LINE__, MPI_ERR_TRUNCATE,
                                                      "**truncate", "**truncate %d %d %d %d",
                                                      rreq->status.MPI_SOURCE,
                                                      rreq->status.MPI_TAG, (int) data_sz,
                                                      (int) userbuf_sz);
        data_sz = userbuf_sz;
    }
    if (dt_contig) {
        mpi_errno = copy_contig(vc, rreq, (char *) rreq->dev.user_buf + dt_true_lb, data_sz,
                                &refused);
        MPIR_ERR_CHECK(mpi_errno);
        if (refused) {
            MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_cma_fallbacks, 1);
            return recv_staged(vc, rreq);
        }
    } else {
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
    rreq->ch.copy_job = NULL;

    MPIDI_Pkt_init(done, MPIDI_CH3I_SMHEAP_PKT_DONE);
    done->sender_req_id = rreq->dev.sender_req_id;
    mpi_errno = MPIDI_CH3I_Send_pkt(vc, &upkt, sizeof(upkt));
    MPIR_ERR_CHKANDJUMP(mpi_errno, mpi_errno, MPI_ERR_OTHER, "**ch3|ctspkt");

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
    rreq->ch.peer_pid = rts->pid;
    rreq->ch.copy_job = rts->job;

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

/* The receiver asks us to share the copy of our message: into its buffer by address when
 * that lies in the heap, else through the kernel.  The job lives until the answer that
 * follows this packet on the same ring. */
static int handle_help(MPIDI_VC_t * vc, MPIDI_CH3_Pkt_t * pkt, void *data, intptr_t * buflen,
                       MPIR_Request ** rreqp)
{
    smheap_pkt_help_t *help = &((smheap_pkt_t *) pkt)->help;
    int reachable = smheap_holds(help->dst, (size_t) help->len);
    copy_route_t route = { help->dst, help->src,
        reachable ? COPY_BY_ADDRESS : COPY_WRITE_PEER, help->pid
    };
    intptr_t copied;

    (void) vc, (void) data;
    *buflen = 0;
    *rreqp = NULL;
    copied = copy_chunks(help->job, &route, help->len, help->chunk, help->helper_from_front);
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_copy_help_bytes, copied);
    return MPI_SUCCESS;
}

/* Our copy job, no longer needed once the receiver answered; a refusal by the kernel
 * means this peer cannot be reached that way. */
static void drop_copy_job(MPIDI_VC_t * vc, MPIR_Request * sreq)
{
    smheap_copy_job_t *job = sreq->ch.copy_job;

    if (job != NULL && atomic_load_explicit(&job->refused, memory_order_relaxed))
        vc->ch.cma_refused = 1;
    MPL_free(job);
    sreq->ch.copy_job = NULL;
}

static int handle_done(MPIDI_VC_t * vc, MPIDI_CH3_Pkt_t * pkt, void *data, intptr_t * buflen,
                       MPIR_Request ** rreqp)
{
    smheap_pkt_done_t *done = &((smheap_pkt_t *) pkt)->done;
    MPIR_Request *sreq;

    (void) data;
    *buflen = 0;
    *rreqp = NULL;
    MPIR_Request_get_ptr(done->sender_req_id, sreq);
    answered(vc, sreq);
    drop_copy_job(vc, sreq);
    return MPID_Request_complete(sreq);
}

/* ch3's clear-to-send, which also answers our request-to-send when the receiver could not
 * copy through the kernel: ch3 then sends the data staged. */
static int handle_clr_to_send(MPIDI_VC_t * vc, MPIDI_CH3_Pkt_t * pkt, void *data,
                              intptr_t * buflen, MPIR_Request ** rreqp)
{
    MPIR_Request *sreq;

    MPIR_Request_get_ptr(pkt->rndv_clr_to_send.sender_req_id, sreq);
    answered(vc, sreq);
    drop_copy_job(vc, sreq);
    return ch3_clr_to_send(vc, pkt, data, buflen, rreqp);
}

/* ch3's answer to a cancel: a send the receiver never matched will not see DONE, so its job
 * is freed here before ch3 completes the request. */
static int handle_cancel_send_resp(MPIDI_VC_t * vc, MPIDI_CH3_Pkt_t * pkt, void *data,
                                   intptr_t * buflen, MPIR_Request ** rreqp)
{
    MPIR_Request *sreq;

    MPIR_Request_get_ptr(pkt->cancel_send_resp.sender_req_id, sreq);
    if (pkt->cancel_send_resp.ack) {
        answered(vc, sreq);
        drop_copy_job(vc, sreq);
    }
    return ch3_cancel_send_resp(vc, pkt, data, buflen, rreqp);
}

/* While the rings are slow, let a message through them this often (ns) to measure them
 * again: slow spells last seconds to minutes, and such a message costs far more than it
 * would through the kernel (figures: doc/p2p.md). */
#define SLOW_RING_PROBE_NS 10000000

/* Compare copies into the rings with a copy through the kernel (smheap_pace.h).  Half its
 * speed, because a copy into cells that have gone cold (the first after a pause) runs at
 * about the kernel's speed and must not count as slow, while in the slow spells copies run
 * far below half of it (figures: doc/p2p.md). */
static void watch_rings(void)
{
    double slow_below = MPIR_CVAR_CH3_SMHEAP_SLOW_RING_RATE / 1000.0;  /* MB/s: bytes/ns */

    if (MPIR_CVAR_CH3_SMHEAP_SLOW_RING_RATE <= 0)
        slow_below = smheap_pace_kernel_rate(65536) / 2;
    /* messages that fit in a core's own cache: most are sent soon after they are written */
    smheap_pace_init(slow_below, SLOW_RING_PROBE_NS, MPL_MAX(smheap_cache_size(2), 65536));
}

static void choose_stage_both_ways_max(void)
{
    stage_both_ways_max = MPIR_CVAR_CH3_SMHEAP_STAGE_BOTH_WAYS_MAX >= 0 ?
        MPIR_CVAR_CH3_SMHEAP_STAGE_BOTH_WAYS_MAX : INTPTR_MAX;
}

int MPIDI_CH3I_Smheap_rndv_init(MPIDI_CH3_PktHandler_Fcn * pktArray[], int arraySize)
{
    MPIR_Assert(arraySize > MPIDI_CH3I_SMHEAP_PKT_DONE);
    pktArray[MPIDI_CH3I_SMHEAP_PKT_RTS] = handle_rts;
    pktArray[MPIDI_CH3I_SMHEAP_PKT_HELP] = handle_help;
    pktArray[MPIDI_CH3I_SMHEAP_PKT_DONE] = handle_done;
    ch3_cancel_send_resp = pktArray[MPIDI_CH3_PKT_CANCEL_SEND_RESP];
    pktArray[MPIDI_CH3_PKT_CANCEL_SEND_RESP] = handle_cancel_send_resp;
    ch3_clr_to_send = pktArray[MPIDI_CH3_PKT_RNDV_CLR_TO_SEND];
    pktArray[MPIDI_CH3_PKT_RNDV_CLR_TO_SEND] = handle_clr_to_send;

    if (MPIR_CVAR_CH3_SMHEAP_CMA_MIN >= 0 && single_copy_on()) {
        const char *why_not = smheap_cma_init();

        MPIDI_CH3I_Smheap_cma_ready = why_not == NULL;
        /* one line per node, as for the heap (ch3_heap.c) */
        if (why_not != NULL && MPIR_Process.local_rank == 0 && MPIR_Process.local_size > 1)
            MPL_error_printf("ch3:smheap: large messages outside the shared heap are copied "
                             "twice, through the rings: %s (or set "
                             "MPIR_CVAR_CH3_SMHEAP_CMA_MIN=-1)\n", why_not);
    }
    if (MPIDI_CH3I_Smheap_cma_ready && (MPIR_CVAR_CH3_SMHEAP_CMA_SLOW_RING_MIN >= 0 ||
                                        MPIR_CVAR_CH3_SMHEAP_STAGE_BOTH_WAYS_MAX != 0))
        watch_rings();
    choose_stage_both_ways_max();
    return MPI_SUCCESS;
}

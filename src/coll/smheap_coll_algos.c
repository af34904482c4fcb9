/*
 * ch3:smheap collectives -- the algorithms (see smheap_coll.h for the control block).
 *
 * Every collective numbers its synchronization points from the communicator's step counter;
 * all ranks pass the same points in the same order.  Each call takes STEPS_PER_CALL of them,
 * whichever it uses, so that a rank that must leave a call early (its staging buffer cannot
 * grow, a datatype fails to pack, the progress engine fails) can mark the call failed in its
 * slot and reach the call's last point at once: its peers pass every wait for it, see the
 * mark, and leave with an error naming it, doing the same; no rank waits forever and the
 * counters stay in step for the next call.  "offer" publishes what a rank lets
 * peers read (and where they may write) and marks a point; "wait" waits for a peer to reach
 * a point.  A rank returns only once every reader of what it offered is past the point that
 * ends the reading.
 *
 * Byte-moving collectives read peers' data as a packed byte stream: contiguous data in the
 * heap is offered in place, anything else is packed into the rank's staging buffer first
 * and unpacked by the reader, so each rank decides alone.  Reductions need the datatype's
 * own layout, so they run here only for contiguous datatypes (every predefined one) and go
 * to MPICH's algorithms otherwise; the datatype of a reduction is the same on every rank.
 */

#include "smheap_channel.h"
#include "smheap.h"
#include "smheap_coll.h"

/* Below this many bytes a reduction is done whole by each rank that needs the result; above,
 * the vector is split so that every rank reduces its own part at once. */
#define SMALL_REDUCTION 8192

typedef struct {
    void *buf;
    MPI_Aint count;
    MPI_Datatype dt;
    int contig;
    MPI_Aint bytes, lb;
} view_t;

static view_t view_of(const void *buf, MPI_Aint count, MPI_Datatype dt)
{
    view_t v = { (void *) buf, count, dt, 1, 0, 0 };
    MPIR_Datatype *dt_ptr;

    MPIDI_Datatype_get_info(count, dt, v.contig, v.bytes, dt_ptr, v.lb);
    (void) dt_ptr;
    return v;
}

static int in_heap(const void *p, MPI_Aint len)
{
    return len <= 0 || smheap_holds(p, (size_t) len);
}

static smheap_coll_slot_t *slot(smheap_coll_comm_t * cc, int rank)
{
    return &cc->ctrl->slot[rank];
}

static void reach(smheap_coll_comm_t * cc, int me, uint64_t step)
{
    MPIDI_CH3I_Smheap_coll_reach(cc, me, step);
}

static void offer(smheap_coll_comm_t * cc, int me, const void *src, void *dst, uint64_t step)
{
    slot(cc, me)->src = src;
    slot(cc, me)->dst = dst;
    reach(cc, me, step);
}

static int failed_in_call(smheap_coll_comm_t * cc, int rank);

/* Wait until `rank` has reached `step`; an error if the progress engine fails, or if the
 * rank left this call early. */
static int wait_for(smheap_coll_comm_t * cc, int rank, uint64_t step)
{
    int mpi_errno = MPIDI_CH3I_Smheap_coll_wait(cc, rank, step);

    if (mpi_errno == MPI_SUCCESS && failed_in_call(cc, rank))
        MPIR_ERR_SET1(mpi_errno, MPI_ERR_OTHER, "**smheap_coll_peer", "**smheap_coll_peer %d",
                      rank);
    return mpi_errno;
}

static int wait_all(smheap_coll_comm_t * cc, int size, uint64_t step)
{
    int mpi_errno = MPI_SUCCESS;

    for (int r = 0; r < size && mpi_errno == MPI_SUCCESS; r++)
        mpi_errno = wait_for(cc, r, step);
    return mpi_errno;
}

#define STEPS_PER_CALL 4

/* This call's synchronization points: STEPS_PER_CALL from the communicator's counter. */
static void begin_call(smheap_coll_comm_t * cc)
{
    cc->call_first = cc->step;
    cc->call_next = cc->step;
    cc->step += STEPS_PER_CALL;
}

static uint64_t next_step(smheap_coll_comm_t * cc)
{
    MPIR_Assert(cc->call_next < cc->call_first + STEPS_PER_CALL);
    return cc->call_next++;
}

/* Did `rank` leave this call early? */
static int failed_in_call(smheap_coll_comm_t * cc, int rank)
{
    return slot(cc, rank)->failed >= cc->call_first;
}

/* Leaving this call with an error: if this rank has not reached every point it took, mark
 * the call failed and reach its last point, so that no peer waits for it. */
static void leave_failed(smheap_coll_comm_t * cc, int me, MPIR_Errflag_t * errflag)
{
    uint64_t reached = atomic_load_explicit(&slot(cc, me)->step, memory_order_relaxed);

    if (*errflag == MPIR_ERR_NONE)
        *errflag = MPIR_ERR_OTHER;
    if (cc->call_next > cc->call_first && reached >= cc->call_next - 1)
        return;         /* every peer is past this rank already */
    slot(cc, me)->failed = cc->call_first;
    reach(cc, me, cc->call_first + STEPS_PER_CALL - 1);
}

/* Waits whose failure (the progress engine's, or a peer that left the call) ends the call on
 * this rank: the caller has mpi_errno, and fn_fail calls leave_failed.  An error the caller
 * holds in mpi_errno already (a datatype's, reported once the peers are past reading) stays
 * there when the wait works. */
#define CHECK_WAIT(call_)                                                       \
    do {                                                                        \
        int wait_errno_ = (call_);                                              \
        if (wait_errno_ != MPI_SUCCESS) {                                       \
            mpi_errno = wait_errno_;                                            \
            MPIR_ERR_POP(mpi_errno);                                            \
        }                                                                       \
    } while (0)
#define WAIT(cc_, rank_, step_) CHECK_WAIT(wait_for(cc_, rank_, step_))
#define WAIT_ALL(cc_, size_, step_) CHECK_WAIT(wait_all(cc_, size_, step_))

/* Where peers can read v's data as packed bytes: in place, or packed into the staging
 * buffer at `at` (which the caller sized).  `stage` forces the copy (the rank will
 * overwrite the data while peers read it). */
static int readable(smheap_coll_comm_t * cc, view_t v, int stage, size_t at, const void **out)
{
    MPI_Aint actual;
    char *s;

    if (v.contig && !stage && in_heap((char *) v.buf + v.lb, v.bytes)) {
        *out = (char *) v.buf + v.lb;
        return MPI_SUCCESS;
    }
    s = (char *) cc->scratch + at;
    *out = s;
    if (v.contig)
        smheap_copy(s, (char *) v.buf + v.lb, v.bytes);
    else
        return MPIR_Typerep_pack(v.buf, v.count, v.dt, 0, s, v.bytes, &actual);
    return MPI_SUCCESS;
}

/* Copy `bytes` packed bytes from src into (buf, count, dt), starting at byte `offset` of
 * the packed stream of (buf, count, dt). */
static int unpack_into(view_t v, const void *src, MPI_Aint bytes, MPI_Aint offset)
{
    MPI_Aint actual;

    if (bytes == 0)
        return MPI_SUCCESS;
    if (v.contig) {
        smheap_copy((char *) v.buf + v.lb + offset, src, bytes);
        return MPI_SUCCESS;
    }
    return MPIR_Typerep_unpack(src, bytes, v.buf, v.count, v.dt, offset, &actual);
}

#define READY_OR_FALL_BACK(comm_, cc_, call_)                                   \
    do {                                                                        \
        int err_ = MPIDI_CH3I_Smheap_coll_ready(comm_, &cc_);                   \
        if (err_ != MPI_SUCCESS)                                                \
            return err_;                                                        \
        if (cc_->unusable) {                                                    \
            MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_FALLBACK);                                    \
            return cc_->prev->call_;                                            \
        }                                                                       \
        begin_call(cc_);                                                        \
    } while (0)

#define NEED_SCRATCH(cc_, len_)                                                 \
    do {                                                                        \
        if ((len_) > 0 && MPIDI_CH3I_Smheap_coll_scratch(cc_, len_) == NULL)    \
            MPIR_ERR_SETANDJUMP(mpi_errno, MPI_ERR_NO_MEM, "**smheap_coll_scratch"); \
    } while (0)

/* ------------------------------------------------------------------------------------ */

static int barrier(MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_coll_comm_t *cc;
    uint64_t step;

    READY_OR_FALL_BACK(comm, cc, Barrier(comm, errflag));
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SHARED);
    step = next_step(cc);
    reach(cc, comm->rank, step);
    WAIT_ALL(cc, comm->local_size, step);

  fn_exit:
    return mpi_errno;
  fn_fail:
    leave_failed(cc, comm->rank, errflag);
    goto fn_exit;
}

static int bcast(void *buf, MPI_Aint count, MPI_Datatype dt, int root, MPIR_Comm * comm,
                 MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS, me = comm->rank;
    smheap_coll_comm_t *cc;
    view_t v = view_of(buf, count, dt);
    uint64_t offered, copied;
    const void *src;

    READY_OR_FALL_BACK(comm, cc, Bcast(buf, count, dt, root, comm, errflag));
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SHARED);
    /* no shortcut for zero bytes: the root's count may differ (an error we must report) */
    offered = next_step(cc);
    copied = next_step(cc);

    if (me == root) {
        NEED_SCRATCH(cc, v.bytes);
        mpi_errno = readable(cc, v, 0, 0, &src);
        MPIR_ERR_CHECK(mpi_errno);
        slot(cc, me)->bytes = v.bytes;
        slot(cc, me)->carried = *errflag;
        offer(cc, me, src, NULL, offered);
        reach(cc, me, copied);
        WAIT_ALL(cc, comm->local_size, copied);
    } else {
        uint64_t sent;
        int carried;

        WAIT(cc, root, offered);
        sent = slot(cc, root)->bytes;
        carried = slot(cc, root)->carried;
        if (sent == v.bytes)
            mpi_errno = unpack_into(v, slot(cc, root)->src, v.bytes, 0);
        reach(cc, me, copied);
        MPIR_ERR_CHECK(mpi_errno);
        /* the data came, and so does the root's error (as MPICH's error tags pass it on) */
        if (carried != MPIR_ERR_NONE && *errflag == MPIR_ERR_NONE) {
            *errflag = carried;
            if (carried == MPIR_ERR_PROC_FAILED)
                MPIR_ERR_SETANDJUMP(mpi_errno, MPIX_ERR_PROC_FAILED, "**coll_fail");
            MPIR_ERR_SETANDJUMP(mpi_errno, MPI_ERR_OTHER, "**coll_fail");
        }
        /* as MPICH's own Bcast reports it: every rank still took part */
        if (sent != v.bytes) {
            *errflag = MPIR_ERR_OTHER;
            MPIR_ERR_SETANDJUMP2(mpi_errno, MPI_ERR_OTHER, "**collective_size_mismatch",
                                 "**collective_size_mismatch %d %d", (int) sent,
                                 (int) v.bytes);
        }
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    leave_failed(cc, comm->rank, errflag);
    goto fn_exit;
}

/* --- reductions ------------------------------------------------------------------------ */

/* acc = in[0] op in[1] op ... op in[n-1], over elements [first, first+count) of each input,
 * in rank order (MPIR_Reduce_local(a, b) computes b = a op b), so non-commutative operations
 * get MPI's order. */
static int reduce_inputs(smheap_coll_comm_t * cc, int n, MPI_Aint first, MPI_Aint count,
                         MPI_Aint extent, MPI_Datatype dt, MPI_Op op, void *acc)
{
    int mpi_errno = MPI_SUCCESS;
    MPI_Aint off = first * extent;

    if (count == 0)
        return MPI_SUCCESS;
    smheap_copy(acc, (const char *) slot(cc, n - 1)->src + off, count * extent);
    for (int r = n - 2; r >= 0 && mpi_errno == MPI_SUCCESS; r--)
        mpi_errno = MPIR_Reduce_local((const char *) slot(cc, r)->src + off, acc, count, dt, op);
    return mpi_errno;
}

/* Elements [*first, *first + *count) of a vector of `count` split among n ranks. */
static void my_part(MPI_Aint count, int n, int rank, MPI_Aint * first, MPI_Aint * part)
{
    MPI_Aint per = (count + n - 1) / n;

    *first = MPL_MIN(count, per * rank);
    *part = MPL_MIN(count, *first + per) - *first;
}

static int reduction_handled(MPI_Datatype dt, MPI_Aint count)
{
    view_t v = view_of(NULL, count, dt);
    MPI_Aint extent;

    MPIR_Datatype_get_extent_macro(dt, extent);
    return v.contig && v.lb == 0 && extent * count == v.bytes;
}

static int allreduce(const void *sendbuf, void *recvbuf, MPI_Aint count, MPI_Datatype dt,
                     MPI_Op op, MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS, me = comm->rank, n = comm->local_size;
    int in_place = sendbuf == MPI_IN_PLACE;
    smheap_coll_comm_t *cc;
    MPI_Aint extent, bytes, first, part;
    uint64_t offered, reduced, pulled;
    const void *src;
    char *acc;

    READY_OR_FALL_BACK(comm, cc, Allreduce(sendbuf, recvbuf, count, dt, op, comm, errflag));
    if (!reduction_handled(dt, count)) {
        MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_FALLBACK);
        return cc->prev->Allreduce(sendbuf, recvbuf, count, dt, op, comm, errflag);
    }
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SHARED);
    if (count == 0)
        return MPI_SUCCESS;
    MPIR_Datatype_get_extent_macro(dt, extent);
    bytes = count * extent;
    my_part(count, n, me, &first, &part);
    /* staging area: the input (if it must be staged), then room for the result, whose
     * part i rank i computes; in recvbuf itself when peers can read it there */
    NEED_SCRATCH(cc, 2 * bytes + SMHEAP_CACHELINE);
    acc = in_heap(recvbuf, bytes) ? (char *) recvbuf :
        (char *) cc->scratch + MPL_ROUND_UP_ALIGN(bytes, SMHEAP_CACHELINE);

    /* in place, the input is recvbuf, which this rank overwrites while peers read it */
    mpi_errno = readable(cc, view_of(in_place ? recvbuf : sendbuf, count, dt), in_place, 0,
                         &src);
    MPIR_ERR_CHECK(mpi_errno);
    offered = next_step(cc);
    reduced = next_step(cc);
    offer(cc, me, src, acc, offered);
    WAIT_ALL(cc, n, offered);

    if (bytes <= SMALL_REDUCTION) {
        mpi_errno = reduce_inputs(cc, n, 0, count, extent, dt, op, recvbuf);
        reach(cc, me, reduced);
        WAIT_ALL(cc, n, reduced);
        MPIR_ERR_CHECK(mpi_errno);
        goto fn_exit;
    }

    /* each rank reduces its part, then everyone gathers the parts */
    pulled = next_step(cc);
    mpi_errno = reduce_inputs(cc, n, first, part, extent, dt, op, acc + first * extent);
    reach(cc, me, reduced);
    WAIT_ALL(cc, n, reduced);
    for (int r = 0; r < n; r++) {
        MPI_Aint f, p;
        const char *from = (const char *) slot(cc, r)->dst;
        my_part(count, n, r, &f, &p);
        if (p > 0 && from + f * extent != (char *) recvbuf + f * extent)
            smheap_copy((char *) recvbuf + f * extent, from + f * extent, p * extent);
    }
    reach(cc, me, pulled);
    WAIT_ALL(cc, n, pulled);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    leave_failed(cc, comm->rank, errflag);
    goto fn_exit;
}

static int reduce(const void *sendbuf, void *recvbuf, MPI_Aint count, MPI_Datatype dt,
                  MPI_Op op, int root, MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS, me = comm->rank, n = comm->local_size;
    int in_place = sendbuf == MPI_IN_PLACE;     /* only the root may say so */
    smheap_coll_comm_t *cc;
    MPI_Aint extent, bytes, first, part;
    uint64_t offered, reduced;
    const void *src;
    char *acc;

    READY_OR_FALL_BACK(comm, cc, Reduce(sendbuf, recvbuf, count, dt, op, root, comm, errflag));
    if (!reduction_handled(dt, count)) {
        MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_FALLBACK);
        return cc->prev->Reduce(sendbuf, recvbuf, count, dt, op, root, comm, errflag);
    }
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SHARED);
    if (count == 0)
        return MPI_SUCCESS;
    MPIR_Datatype_get_extent_macro(dt, extent);
    bytes = count * extent;
    my_part(count, n, me, &first, &part);
    NEED_SCRATCH(cc, 2 * bytes + SMHEAP_CACHELINE);
    acc = (char *) cc->scratch + MPL_ROUND_UP_ALIGN(bytes, SMHEAP_CACHELINE);

    mpi_errno = readable(cc, view_of(in_place ? recvbuf : sendbuf, count, dt),
                         in_place && bytes <= SMALL_REDUCTION, 0, &src);
    MPIR_ERR_CHECK(mpi_errno);
    offered = next_step(cc);
    reduced = next_step(cc);
    offer(cc, me, src, acc, offered);

    if (bytes <= SMALL_REDUCTION) {     /* the root reduces everything */
        if (me == root) {
            WAIT_ALL(cc, n, offered);
            mpi_errno = reduce_inputs(cc, n, 0, count, extent, dt, op, recvbuf);
        }
        reach(cc, me, reduced);
        WAIT(cc, root, reduced);
        MPIR_ERR_CHECK(mpi_errno);
        goto fn_exit;
    }

    /* each rank reduces its part into its accumulator; the root collects the parts */
    WAIT_ALL(cc, n, offered);
    mpi_errno = reduce_inputs(cc, n, first, part, extent, dt, op, acc + first * extent);
    reach(cc, me, reduced);
    WAIT_ALL(cc, n, reduced);   /* my input is read by all until here */
    if (me == root) {
        uint64_t collected = next_step(cc);
        for (int r = 0; r < n; r++) {
            MPI_Aint f, p;
            my_part(count, n, r, &f, &p);
            if (p > 0)
                smheap_copy((char *) recvbuf + f * extent,
                            (const char *) slot(cc, r)->dst + f * extent, p * extent);
        }
        reach(cc, me, collected);
    } else {
        WAIT(cc, root, next_step(cc));      /* it read my part */
    }
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    leave_failed(cc, comm->rank, errflag);
    goto fn_exit;
}

/* --- data movement ----------------------------------------------------------------- */

static int allgather(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                     void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                     MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS, me = comm->rank, n = comm->local_size;
    smheap_coll_comm_t *cc;
    view_t rv = view_of(recvbuf, recvcount * n, recvtype), in;
    MPI_Aint block = rv.bytes / n;
    uint64_t offered, copied;
    const void *src;

    READY_OR_FALL_BACK(comm, cc, Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                           recvtype, comm, errflag));
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SHARED);
    if (block == 0)
        return MPI_SUCCESS;
    if (sendbuf == MPI_IN_PLACE) {
        MPI_Aint extent;
        MPIR_Datatype_get_extent_macro(recvtype, extent);
        in = view_of((char *) recvbuf + me * recvcount * extent, recvcount, recvtype);
    } else {
        in = view_of(sendbuf, sendcount, sendtype);
    }
    NEED_SCRATCH(cc, block);
    mpi_errno = readable(cc, in, 0, 0, &src);
    MPIR_ERR_CHECK(mpi_errno);
    offered = next_step(cc);
    copied = next_step(cc);
    offer(cc, me, src, NULL, offered);

    for (int i = 1; i <= n && mpi_errno == MPI_SUCCESS; i++) {
        int r = (me + i) % n;   /* own block last, and peers staggered */
        if (r == me && sendbuf == MPI_IN_PLACE)
            continue;
        WAIT(cc, r, offered);
        mpi_errno = unpack_into(rv, slot(cc, r)->src, block, r * block);
    }
    reach(cc, me, copied);
    WAIT_ALL(cc, n, copied);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    leave_failed(cc, comm->rank, errflag);
    goto fn_exit;
}

static int gather(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                  void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype, int root,
                  MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS, me = comm->rank, n = comm->local_size;
    smheap_coll_comm_t *cc;
    view_t in = { 0 };
    uint64_t offered, copied;
    const void *src;

    if (sendbuf != MPI_IN_PLACE)        /* (the root's send arguments are then ignored) */
        in = view_of(sendbuf, sendcount, sendtype);
    READY_OR_FALL_BACK(comm, cc, Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                        recvtype, root, comm, errflag));
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SHARED);
    offered = next_step(cc);
    copied = next_step(cc);

    if (me != root) {
        if (in.bytes > 0) {
            NEED_SCRATCH(cc, in.bytes);
            mpi_errno = readable(cc, in, 0, 0, &src);
            MPIR_ERR_CHECK(mpi_errno);
            offer(cc, me, src, NULL, offered);
        } else {
            reach(cc, me, offered);
        }
        WAIT(cc, root, copied);
    } else {
        view_t rv = view_of(recvbuf, recvcount * n, recvtype);
        MPI_Aint block = rv.bytes / n;

        reach(cc, me, offered);
        for (int r = 0; r < n && mpi_errno == MPI_SUCCESS && block > 0; r++) {
            if (r == me) {
                if (sendbuf == MPI_IN_PLACE)
                    continue;
                NEED_SCRATCH(cc, in.bytes);
                mpi_errno = readable(cc, in, 0, 0, &src);
                if (mpi_errno == MPI_SUCCESS)
                    mpi_errno = unpack_into(rv, src, block, r * block);
                continue;
            }
            WAIT(cc, r, offered);
            mpi_errno = unpack_into(rv, slot(cc, r)->src, block, r * block);
        }
        reach(cc, me, copied);
        MPIR_ERR_CHECK(mpi_errno);
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    leave_failed(cc, comm->rank, errflag);
    goto fn_exit;
}

static int scatter(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                   void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype, int root,
                   MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS, me = comm->rank, n = comm->local_size;
    smheap_coll_comm_t *cc;
    uint64_t offered, copied;
    const void *src;

    READY_OR_FALL_BACK(comm, cc, Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                         recvtype, root, comm, errflag));
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SHARED);
    offered = next_step(cc);
    copied = next_step(cc);

    if (me == root) {
        view_t sv = view_of(sendbuf, sendcount * n, sendtype);
        MPI_Aint block = sv.bytes / n;

        NEED_SCRATCH(cc, sv.bytes);
        mpi_errno = readable(cc, sv, 0, 0, &src);
        MPIR_ERR_CHECK(mpi_errno);
        offer(cc, me, src, NULL, offered);
        if (recvbuf != MPI_IN_PLACE)
            mpi_errno = unpack_into(view_of(recvbuf, recvcount, recvtype),
                                    (const char *) src + me * block, block, 0);
        reach(cc, me, copied);
        WAIT_ALL(cc, n, copied);
        MPIR_ERR_CHECK(mpi_errno);
    } else {
        view_t rv = view_of(recvbuf, recvcount, recvtype);

        WAIT(cc, root, offered);
        mpi_errno = unpack_into(rv, (const char *) slot(cc, root)->src + me * rv.bytes,
                                rv.bytes, 0);
        reach(cc, me, copied);
        MPIR_ERR_CHECK(mpi_errno);
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    leave_failed(cc, comm->rank, errflag);
    goto fn_exit;
}

static int alltoall(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                    void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                    MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS, me = comm->rank, n = comm->local_size;
    int in_place = sendbuf == MPI_IN_PLACE;
    smheap_coll_comm_t *cc;
    view_t rv = view_of(recvbuf, recvcount * n, recvtype);
    view_t sv = in_place ? rv : view_of(sendbuf, sendcount * n, sendtype);
    MPI_Aint block = rv.bytes / n;
    uint64_t offered, copied;
    const void *src;

    READY_OR_FALL_BACK(comm, cc, Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                          recvtype, comm, errflag));
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SHARED);
    if (block == 0)
        return MPI_SUCCESS;
    NEED_SCRATCH(cc, sv.bytes);
    /* in place, the input is recvbuf, which this rank overwrites while peers read it */
    mpi_errno = readable(cc, sv, in_place, 0, &src);
    MPIR_ERR_CHECK(mpi_errno);
    offered = next_step(cc);
    copied = next_step(cc);
    offer(cc, me, src, NULL, offered);

    for (int i = 0; i < n && mpi_errno == MPI_SUCCESS; i++) {
        int r = (me + i) % n;
        WAIT(cc, r, offered);
        mpi_errno = unpack_into(rv, (const char *) slot(cc, r)->src + me * block, block,
                                r * block);
    }
    reach(cc, me, copied);
    WAIT_ALL(cc, n, copied);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    leave_failed(cc, comm->rank, errflag);
    goto fn_exit;
}

/* --- the v variants, and Reduce_scatter_block ---------------------------------------- */

static MPI_Aint extent_of(MPI_Datatype dt)
{
    MPI_Aint extent;
    MPIR_Datatype_get_extent_macro(dt, extent);
    return extent;
}

static MPI_Aint size_of(MPI_Datatype dt)
{
    MPI_Aint size;
    MPIR_Datatype_get_size_macro(dt, size);
    return size;
}

static int allgatherv(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                      void *recvbuf, const MPI_Aint * recvcounts, const MPI_Aint * displs,
                      MPI_Datatype recvtype, MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS, me = comm->rank, n = comm->local_size;
    int in_place = sendbuf == MPI_IN_PLACE;
    smheap_coll_comm_t *cc;
    MPI_Aint rext = extent_of(recvtype), rsize = size_of(recvtype);
    view_t in;
    uint64_t offered, copied;
    const void *src;

    READY_OR_FALL_BACK(comm, cc, Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                            displs, recvtype, comm, errflag));
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SHARED);
    in = in_place ? view_of((char *) recvbuf + displs[me] * rext, recvcounts[me], recvtype) :
        view_of(sendbuf, sendcount, sendtype);
    NEED_SCRATCH(cc, in.bytes);
    mpi_errno = readable(cc, in, 0, 0, &src);
    MPIR_ERR_CHECK(mpi_errno);
    offered = next_step(cc);
    copied = next_step(cc);
    offer(cc, me, src, NULL, offered);

    for (int i = 1; i <= n && mpi_errno == MPI_SUCCESS; i++) {
        int r = (me + i) % n;
        if ((r == me && in_place) || recvcounts[r] == 0)
            continue;
        WAIT(cc, r, offered);
        mpi_errno = unpack_into(view_of((char *) recvbuf + displs[r] * rext, recvcounts[r],
                                        recvtype), slot(cc, r)->src, recvcounts[r] * rsize, 0);
    }
    reach(cc, me, copied);
    WAIT_ALL(cc, n, copied);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    leave_failed(cc, comm->rank, errflag);
    goto fn_exit;
}

static int gatherv(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                   void *recvbuf, const MPI_Aint * recvcounts, const MPI_Aint * displs,
                   MPI_Datatype recvtype, int root, MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS, me = comm->rank, n = comm->local_size;
    smheap_coll_comm_t *cc;
    view_t in = { 0 };
    uint64_t offered, copied;
    const void *src;

    if (sendbuf != MPI_IN_PLACE)
        in = view_of(sendbuf, sendcount, sendtype);
    READY_OR_FALL_BACK(comm, cc, Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                         displs, recvtype, root, comm, errflag));
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SHARED);
    offered = next_step(cc);
    copied = next_step(cc);
    if (sendbuf != MPI_IN_PLACE) {
        NEED_SCRATCH(cc, in.bytes);
        mpi_errno = readable(cc, in, 0, 0, &src);
        MPIR_ERR_CHECK(mpi_errno);
        offer(cc, me, src, NULL, offered);
    } else {
        reach(cc, me, offered);
    }

    if (me == root) {
        MPI_Aint rext = extent_of(recvtype), rsize = size_of(recvtype);
        for (int r = 0; r < n && mpi_errno == MPI_SUCCESS; r++) {
            if ((r == me && sendbuf == MPI_IN_PLACE) || recvcounts[r] == 0)
                continue;
            WAIT(cc, r, offered);
            mpi_errno = unpack_into(view_of((char *) recvbuf + displs[r] * rext, recvcounts[r],
                                            recvtype), slot(cc, r)->src,
                                    recvcounts[r] * rsize, 0);
        }
        reach(cc, me, copied);
    } else {
        WAIT(cc, root, copied);
    }
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    leave_failed(cc, comm->rank, errflag);
    goto fn_exit;
}

/* Scatterv and Alltoallv: only the sender knows where each reader's block lies, so it
 * offers a table of packed offsets, one per rank, followed by its data; a block is the
 * reader's receive count of packed bytes from its offset. */
static int offer_blocks(smheap_coll_comm_t * cc, const void *sendbuf, const MPI_Aint * counts,
                        const MPI_Aint * displs, MPI_Datatype dt, int n, const void **out)
{
    int mpi_errno = MPI_SUCCESS;
    MPI_Aint ext = extent_of(dt), size = size_of(dt), total = 0, actual;
    MPI_Aint table = MPL_ROUND_UP_ALIGN(n * sizeof(MPI_Aint), SMHEAP_CACHELINE);
    MPI_Aint *offsets;
    char *data;

    for (int r = 0; r < n; r++)
        total += counts[r] * size;
    if (MPIDI_CH3I_Smheap_coll_scratch(cc, table + total) == NULL)
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_NO_MEM, "**smheap_init", "**smheap_init %s",
                             "the shared heap is full");
    offsets = cc->scratch;
    data = (char *) cc->scratch + table;
    total = 0;
    for (int r = 0; r < n && mpi_errno == MPI_SUCCESS; r++) {
        offsets[r] = table + total;
        if (counts[r] > 0)
            mpi_errno = MPIR_Typerep_pack((const char *) sendbuf + displs[r] * ext, counts[r],
                                          dt, 0, data + total, counts[r] * size, &actual);
        total += counts[r] * size;
    }
    *out = cc->scratch;

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static const void *block_for(const void *offered, int reader)
{
    return (const char *) offered + ((const MPI_Aint *) offered)[reader];
}

static int scatterv(const void *sendbuf, const MPI_Aint * sendcounts, const MPI_Aint * displs,
                    MPI_Datatype sendtype, void *recvbuf, MPI_Aint recvcount,
                    MPI_Datatype recvtype, int root, MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS, me = comm->rank, n = comm->local_size;
    smheap_coll_comm_t *cc;
    uint64_t offered, copied;
    const void *src;

    READY_OR_FALL_BACK(comm, cc, Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf,
                                          recvcount, recvtype, root, comm, errflag));
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SHARED);
    offered = next_step(cc);
    copied = next_step(cc);
    if (me == root) {
        mpi_errno = offer_blocks(cc, sendbuf, sendcounts, displs, sendtype, n, &src);
        MPIR_ERR_CHECK(mpi_errno);
        offer(cc, me, src, NULL, offered);
        if (recvbuf != MPI_IN_PLACE && recvcount > 0)
            mpi_errno = unpack_into(view_of(recvbuf, recvcount, recvtype), block_for(src, me),
                                    recvcount * size_of(recvtype), 0);
        reach(cc, me, copied);
        WAIT_ALL(cc, n, copied);
    } else {
        WAIT(cc, root, offered);
        if (recvcount > 0)
            mpi_errno = unpack_into(view_of(recvbuf, recvcount, recvtype),
                                    block_for(slot(cc, root)->src, me),
                                    recvcount * size_of(recvtype), 0);
        reach(cc, me, copied);
    }
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    leave_failed(cc, comm->rank, errflag);
    goto fn_exit;
}

static int alltoallv(const void *sendbuf, const MPI_Aint * sendcounts, const MPI_Aint * sdispls,
                     MPI_Datatype sendtype, void *recvbuf, const MPI_Aint * recvcounts,
                     const MPI_Aint * rdispls, MPI_Datatype recvtype, MPIR_Comm * comm,
                     MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS, me = comm->rank, n = comm->local_size;
    int in_place = sendbuf == MPI_IN_PLACE;
    smheap_coll_comm_t *cc;
    MPI_Aint rext = extent_of(recvtype), rsize = size_of(recvtype);
    uint64_t offered, copied;
    const void *src;

    READY_OR_FALL_BACK(comm, cc, Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                           recvcounts, rdispls, recvtype, comm, errflag));
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SHARED);
    /* in place, the blocks are recvbuf's, laid out by the receive arguments; packing them
     * first leaves recvbuf free to be overwritten */
    mpi_errno = in_place ? offer_blocks(cc, recvbuf, recvcounts, rdispls, recvtype, n, &src) :
        offer_blocks(cc, sendbuf, sendcounts, sdispls, sendtype, n, &src);
    MPIR_ERR_CHECK(mpi_errno);
    offered = next_step(cc);
    copied = next_step(cc);
    offer(cc, me, src, NULL, offered);

    for (int i = 0; i < n && mpi_errno == MPI_SUCCESS; i++) {
        int r = (me + i) % n;
        if (recvcounts[r] == 0)
            continue;
        WAIT(cc, r, offered);
        mpi_errno = unpack_into(view_of((char *) recvbuf + rdispls[r] * rext, recvcounts[r],
                                        recvtype), block_for(slot(cc, r)->src, me),
                                recvcounts[r] * rsize, 0);
    }
    reach(cc, me, copied);
    WAIT_ALL(cc, n, copied);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    leave_failed(cc, comm->rank, errflag);
    goto fn_exit;
}

static int reduce_scatter_block(const void *sendbuf, void *recvbuf, MPI_Aint recvcount,
                                MPI_Datatype dt, MPI_Op op, MPIR_Comm * comm,
                                MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS, me = comm->rank, n = comm->local_size;
    int in_place = sendbuf == MPI_IN_PLACE;
    smheap_coll_comm_t *cc;
    MPI_Aint extent = extent_of(dt), count = recvcount * n;
    uint64_t offered, reduced;
    const void *src;

    READY_OR_FALL_BACK(comm, cc, Reduce_scatter_block(sendbuf, recvbuf, recvcount, dt, op,
                                                      comm, errflag));
    if (!reduction_handled(dt, count)) {
        MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_FALLBACK);
        return cc->prev->Reduce_scatter_block(sendbuf, recvbuf, recvcount, dt, op, comm,
                                              errflag);
    }
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SHARED);
    if (recvcount == 0)
        return MPI_SUCCESS;
    NEED_SCRATCH(cc, count * extent);
    /* in place, the input is recvbuf, whose first block this rank overwrites */
    mpi_errno = readable(cc, view_of(in_place ? recvbuf : sendbuf, count, dt), in_place, 0,
                         &src);
    MPIR_ERR_CHECK(mpi_errno);
    offered = next_step(cc);
    reduced = next_step(cc);
    offer(cc, me, src, NULL, offered);
    WAIT_ALL(cc, n, offered);
    mpi_errno = reduce_inputs(cc, n, me * recvcount, recvcount, extent, dt, op, recvbuf);
    reach(cc, me, reduced);
    WAIT_ALL(cc, n, reduced);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    leave_failed(cc, comm->rank, errflag);
    goto fn_exit;
}

void MPIDI_CH3I_Smheap_coll_override(MPIDI_Coll_fns * table)
{
    table->Allgatherv = allgatherv;
    table->Gatherv = gatherv;
    table->Scatterv = scatterv;
    table->Alltoallv = alltoallv;
    table->Reduce_scatter_block = reduce_scatter_block;
    table->Barrier = barrier;
    table->Bcast = bcast;
    table->Reduce = reduce;
    table->Allreduce = allreduce;
    table->Allgather = allgather;
    table->Gather = gather;
    table->Scatter = scatter;
    table->Alltoall = alltoall;
}

/*
 * ch3:smheap collectives with a root, or none at all: Barrier, Bcast, Gather(v), Scatter(v).
 * The root offers its buffer, or a table of where each rank's block lies, and every other
 * rank copies its part straight from there (or, gathering, into the root's buffer).  Small
 * data of Bcast, Gather and Scatter travel inline in the writer's cell instead, or up to
 * SMHEAP_COLL_SPILL_LEN in its spill piece of the cell, so that the writer need not wait.
 */

#include "smheap_coll_call.h"

static int barrier(MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_coll_comm_t *cc;
    uint64_t step;

    READY_OR_FALL_BACK(comm, cc, Barrier(comm, errflag));
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SHARED);
    step = next_step(cc);
    if (cc->tree != NULL) {
        mpi_errno = MPIDI_CH3I_Smheap_coll_tree_barrier(cc, comm->rank, step, next_step(cc));
        MPIR_ERR_CHECK(mpi_errno);
        goto fn_exit;
    }
    reach(cc, comm->rank, step);
    WAIT_ALL(cc, comm->local_size, step);

  fn_exit:
    return mpi_errno;
  fn_fail:
    leave_failed(cc, comm->rank, errflag);
    goto fn_exit;
}

/* A writer whose data fit in a cell: it writes them there and leaves the call at once
 * (reach wakes its readers). */
static int leave_inline(smheap_coll_comm_t * cc, int me, view_t v, int carried, uint64_t copied)
{
    smheap_coll_cell_t *c;
    int mpi_errno = write_cell(cc, me, v, carried, &c);

    if (mpi_errno == MPI_SUCCESS) {
        reach(cc, me, copied);
        MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_INLINE);
    }
    return mpi_errno;
}

/* The root's data: inline in its cell when they fit (it returns at once, readers copy when
 * they come), else offered in place or staged, and the root waits until every reader has
 * copied them. */
static int bcast_offer(smheap_coll_comm_t * cc, int me, view_t v, int carried, uint64_t offered,
                       uint64_t copied)
{
    int mpi_errno = MPI_SUCCESS;
    const void *src;

    if (fits_cell(v.bytes))
        return leave_inline(cc, me, v, carried, copied);
    NEED_SCRATCH(cc, v.bytes);
    mpi_errno = readable(cc, v, 0, 0, &src);
    MPIR_ERR_CHECK(mpi_errno);
    slot(cc, me)->bytes = v.bytes;
    slot(cc, me)->carried = carried;
    offer(cc, me, src, NULL, offered);
    reach(cc, me, copied);
    WAIT_ALL(cc, cc->size, copied);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int bcast(void *buf, MPI_Aint count, MPI_Datatype dt, int root, MPIR_Comm * comm,
                 MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS, me = comm->rank;
    smheap_coll_comm_t *cc;
    view_t v = view_of(buf, count, dt);
    uint64_t offered, copied, sent = 0;
    int carried = MPIR_ERR_NONE;

    READY_OR_FALL_BACK(comm, cc, Bcast(buf, count, dt, root, comm, errflag));
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SHARED);
    /* no shortcut for zero bytes: the root's count may differ (an error we must report) */
    offered = next_step(cc);
    copied = next_step(cc);

    if (use_tree_for(cc, v.bytes)) {
        mpi_errno = MPIDI_CH3I_Smheap_coll_tree_bcast(cc, me, root, v, *errflag, offered,
                                                      copied, &sent, &carried);
        MPIR_ERR_CHECK(mpi_errno);
    } else if (me == root) {
        mpi_errno = bcast_offer(cc, me, v, *errflag, offered, copied);
        MPIR_ERR_CHECK(mpi_errno);
    } else {
        const smheap_coll_cell_t *c;

        CHECK_WAIT(wait_offer_at(cc, root, 0, offered, fits_cell(v.bytes), &c));
        sent = c ? c->bytes : slot(cc, root)->bytes;
        carried = c ? c->carried : slot(cc, root)->carried;
        if (sent == v.bytes)
            mpi_errno = unpack_into(v, c ? cell_data(c) : slot(cc, root)->src, v.bytes, 0);
        reach(cc, me, copied);
        MPIR_ERR_CHECK(mpi_errno);
        if (c != NULL)
            MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_INLINE);
    }
    if (me != root) {
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


/* The root takes each block from its writer's cell, or from where the writer offered it. */
static int gather_blocks(smheap_coll_comm_t * cc, int me, view_t in, int in_place, view_t rv,
                         MPI_Aint block, uint64_t offered)
{
    int mpi_errno = MPI_SUCCESS, n = cc->size;

    for (int r = 0; r < n && mpi_errno == MPI_SUCCESS && block > 0; r++) {
        const smheap_coll_cell_t *c;

        if (r == me) {
            if (!in_place)
                mpi_errno = copy_view(in, view_of((char *) rv.buf + r * (rv.count / n) *
                                                  extent_of(rv.dt), rv.count / n, rv.dt));
            continue;
        }
        CHECK_WAIT(wait_offer_as(cc, r, 0, offered, fits_cell(block), &c));
        if (c != NULL && c->bytes != block)
            MPIR_ERR_SETANDJUMP2(mpi_errno, MPI_ERR_OTHER, "**collective_size_mismatch",
                                 "**collective_size_mismatch %d %d", (int) c->bytes,
                                 (int) block);
        mpi_errno = unpack_into(rv, c ? cell_data(c) : slot(cc, r)->src, block, r * block);
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* A Gather(v) sender's part: a block that fits in a cell goes there, and the sender returns
 * at once; a bigger one is offered in place or staged, and the sender waits until the root
 * has copied it. */
static int gather_send(smheap_coll_comm_t * cc, int me, int root, view_t in, uint64_t offered,
                       uint64_t copied)
{
    int mpi_errno = MPI_SUCCESS;
    const void *src;

    if (fits_cell(in.bytes))
        return leave_inline(cc, me, in, MPIR_ERR_NONE, copied);
    NEED_SCRATCH(cc, in.bytes);
    mpi_errno = readable(cc, in, 0, 0, &src);
    MPIR_ERR_CHECK(mpi_errno);
    offer(cc, me, src, NULL, offered);
    WAIT(cc, root, copied);

  fn_exit:
    return mpi_errno;
  fn_fail:
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

    if (sendbuf != MPI_IN_PLACE)        /* (the root's send arguments are then ignored) */
        in = view_of(sendbuf, sendcount, sendtype);
    READY_OR_FALL_BACK(comm, cc, Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                        recvtype, root, comm, errflag));
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SHARED);
    offered = next_step(cc);
    copied = next_step(cc);

    if (me != root) {
        mpi_errno = gather_send(cc, me, root, in, offered, copied);
        MPIR_ERR_CHECK(mpi_errno);
    } else {
        view_t rv = view_of(recvbuf, recvcount * n, recvtype);
        MPI_Aint block = rv.bytes / n;

        mpi_errno = gather_blocks(cc, me, in, sendbuf == MPI_IN_PLACE, rv, block, offered);
        MPIR_ERR_CHECK(mpi_errno);      /* senders still waiting learn of it (leave_failed) */
        reach(cc, me, copied);
        if (fits_cell(block) && n > 1)
            MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_INLINE);
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    leave_failed(cc, comm->rank, errflag);
    goto fn_exit;
}

/* The root's blocks (sv: n blocks alike) in its cell, rank r's at r times a block, all but
 * its own, which it copies straight to its receive buffer. */
static int write_blocks_but_mine(smheap_coll_comm_t * cc, int me, view_t sv,
                                 smheap_coll_cell_t ** c)
{
    int n = cc->size;
    MPI_Aint count = sv.count / n, block = sv.bytes / n, ext = count * extent_of(sv.dt);
    char *data;
    int mpi_errno = claim_cell(cc, me, c);

    if (mpi_errno == MPI_SUCCESS)
        mpi_errno = cell_space(cc, me, *c, sv.bytes, &data);
    if (mpi_errno == MPI_SUCCESS && me > 0)
        mpi_errno = pack_view(view_of(sv.buf, count * me, sv.dt), data);
    if (mpi_errno == MPI_SUCCESS && me < n - 1)
        mpi_errno = pack_view(view_of((const char *) sv.buf + (me + 1) * ext,
                                      count * (n - 1 - me), sv.dt), data + (me + 1) * block);
    if (mpi_errno == MPI_SUCCESS)
        store_cell(cc, *c, sv.bytes, MPIR_ERR_NONE);
    return mpi_errno;
}

/* The root's blocks, all of them in its cell when they fit: it returns at once, and each
 * reader takes its block from there.  mine: the root's own block of sv. */
static int scatter_offer(smheap_coll_comm_t * cc, int me, view_t sv, view_t mine, view_t rv,
                         int in_place, uint64_t offered, uint64_t copied)
{
    int mpi_errno = MPI_SUCCESS, n = cc->size;
    const void *src;

    if (fits_cell(sv.bytes)) {
        smheap_coll_cell_t *c;

        mpi_errno = write_blocks_but_mine(cc, me, sv, &c);
        MPIR_ERR_CHECK(mpi_errno);
        if (!in_place)
            mpi_errno = copy_view(mine, rv);
        reach(cc, me, copied);
        MPIR_ERR_CHECK(mpi_errno);
        MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_INLINE);
        goto fn_exit;
    }
    NEED_SCRATCH(cc, sv.bytes);
    mpi_errno = readable(cc, sv, 0, 0, &src);
    MPIR_ERR_CHECK(mpi_errno);
    offer(cc, me, src, NULL, offered);
    if (!in_place)
        mpi_errno = copy_view(mine, rv);
    reach(cc, me, copied);
    WAIT_ALL(cc, n, copied);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int scatter(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                   void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype, int root,
                   MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS, me = comm->rank, n = comm->local_size;
    smheap_coll_comm_t *cc;
    uint64_t offered, copied;
    view_t rv = { 0 };

    READY_OR_FALL_BACK(comm, cc, Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                         recvtype, root, comm, errflag));
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SHARED);
    offered = next_step(cc);
    copied = next_step(cc);
    if (recvbuf != MPI_IN_PLACE)        /* (only the root may pass it) */
        rv = view_of(recvbuf, recvcount, recvtype);

    if (me == root) {
        const char *mine = (const char *) sendbuf + me * sendcount * extent_of(sendtype);

        mpi_errno = scatter_offer(cc, me, view_of(sendbuf, sendcount * n, sendtype),
                                  view_of(mine, sendcount, sendtype), rv,
                                  recvbuf == MPI_IN_PLACE, offered, copied);
        MPIR_ERR_CHECK(mpi_errno);
    } else {
        const smheap_coll_cell_t *c;
        const char *from;

        CHECK_WAIT(wait_offer_as(cc, root, 0, offered, fits_cell(rv.bytes * n), &c));
        if (c != NULL && c->bytes != rv.bytes * n)
            MPIR_ERR_SETANDJUMP2(mpi_errno, MPI_ERR_OTHER, "**collective_size_mismatch",
                                 "**collective_size_mismatch %d %d", (int) c->bytes / n,
                                 (int) rv.bytes);
        from = c ? cell_data(c) : slot(cc, root)->src;
        mpi_errno = unpack_into(rv, from + me * rv.bytes, rv.bytes, 0);
        reach(cc, me, copied);
        MPIR_ERR_CHECK(mpi_errno);
        if (c != NULL)
            MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_INLINE);
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    leave_failed(cc, comm->rank, errflag);
    goto fn_exit;
}

/* As gather: a block that fits in a cell goes there and its writer returns at once (the
 * root expects it there by the count it has for that rank, which must match). */
static int gatherv(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                   void *recvbuf, const MPI_Aint * recvcounts, const MPI_Aint * displs,
                   MPI_Datatype recvtype, int root, MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS, me = comm->rank, n = comm->local_size;
    smheap_coll_comm_t *cc;
    view_t in = { 0 };
    uint64_t offered, copied;

    if (sendbuf != MPI_IN_PLACE)
        in = view_of(sendbuf, sendcount, sendtype);
    READY_OR_FALL_BACK(comm, cc, Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                         displs, recvtype, root, comm, errflag));
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SHARED);
    offered = next_step(cc);
    copied = next_step(cc);
    if (me != root) {
        mpi_errno = gather_send(cc, me, root, in, offered, copied);
        MPIR_ERR_CHECK(mpi_errno);
    } else {
        MPI_Aint rext = extent_of(recvtype);

        for (int r = 0; r < n && mpi_errno == MPI_SUCCESS; r++) {
            view_t rv = view_of((char *) recvbuf + displs[r] * rext, recvcounts[r], recvtype);
            const smheap_coll_cell_t *c = NULL;

            if ((r == me && sendbuf == MPI_IN_PLACE) || recvcounts[r] == 0)
                continue;
            if (r == me) {
                mpi_errno = copy_view(in, rv);
                continue;
            }
            CHECK_WAIT(wait_offer_as(cc, r, 0, offered, fits_cell(rv.bytes), &c));
            if (c != NULL && c->bytes != rv.bytes)
                MPIR_ERR_SETANDJUMP2(mpi_errno, MPI_ERR_OTHER, "**collective_size_mismatch",
                                     "**collective_size_mismatch %d %d", (int) c->bytes,
                                     (int) rv.bytes);
            mpi_errno = unpack_into(rv, c ? cell_data(c) : slot(cc, r)->src, rv.bytes, 0);
        }
        MPIR_ERR_CHECK(mpi_errno);      /* senders still waiting learn of it (leave_failed) */
        reach(cc, me, copied);
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    leave_failed(cc, comm->rank, errflag);
    goto fn_exit;
}

/* Scatterv's blocks in the root's cell when they fit, with a table of where each starts
 * (write_blocks_cell): the root returns at once, each reader takes its block from there.
 * Returns FALSE, having done nothing, when they do not fit. */
static int scatterv_inline(smheap_coll_comm_t * cc, int me, const void *sendbuf,
                           const MPI_Aint * sendcounts, const MPI_Aint * displs,
                           MPI_Datatype sendtype, view_t mine, view_t rv, uint64_t copied,
                           int *mpi_errno)
{
    smheap_coll_cell_t *c;

    if (!write_blocks_cell(cc, me, sendbuf, sendcounts, displs, sendtype, &c, mpi_errno))
        return FALSE;
    if (*mpi_errno == MPI_SUCCESS && rv.buf != NULL)
        *mpi_errno = copy_view(mine, rv);
    reach(cc, me, copied);
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_INLINE);
    return TRUE;
}

static int scatterv(const void *sendbuf, const MPI_Aint * sendcounts, const MPI_Aint * displs,
                    MPI_Datatype sendtype, void *recvbuf, MPI_Aint recvcount,
                    MPI_Datatype recvtype, int root, MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS, me = comm->rank, n = comm->local_size;
    smheap_coll_comm_t *cc;
    uint64_t offered, copied;
    const void *src;
    view_t rv = { 0 };

    READY_OR_FALL_BACK(comm, cc, Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf,
                                          recvcount, recvtype, root, comm, errflag));
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SHARED);
    offered = next_step(cc);
    copied = next_step(cc);
    if (recvbuf != MPI_IN_PLACE)        /* (only the root may pass it) */
        rv = view_of(recvbuf, recvcount, recvtype);
    if (me == root) {
        view_t mine = view_of((const char *) sendbuf + displs[me] * extent_of(sendtype),
                              sendcounts[me], sendtype);

        if (scatterv_inline(cc, me, sendbuf, sendcounts, displs, sendtype, mine, rv, copied,
                            &mpi_errno)) {
            MPIR_ERR_CHECK(mpi_errno);
            goto fn_exit;
        }
        mpi_errno = offer_blocks(cc, sendbuf, sendcounts, displs, sendtype, n, 0, &src);
        MPIR_ERR_CHECK(mpi_errno);
        offer(cc, me, src, NULL, offered);
        if (rv.buf != NULL)
            mpi_errno = copy_view(mine, rv);
        reach(cc, me, copied);
        WAIT_ALL(cc, n, copied);
    } else {
        const smheap_coll_cell_t *c;

        CHECK_WAIT(wait_offer(cc, root, offered, &c));
        if (c != NULL) {
            mpi_errno = read_block_cell(c, me, rv);
        } else if (recvcount > 0) {
            mpi_errno = unpack_into(rv, block_for(slot(cc, root)->src, me), rv.bytes, 0);
        }
        reach(cc, me, copied);
    }
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    leave_failed(cc, comm->rank, errflag);
    goto fn_exit;
}

void MPIDI_CH3I_Smheap_coll_override_rooted(MPIDI_Coll_fns * table)
{
    table->Barrier = barrier;
    table->Bcast = bcast;
    table->Gather = gather;
    table->Gatherv = gatherv;
    table->Scatter = scatter;
    table->Scatterv = scatterv;
}

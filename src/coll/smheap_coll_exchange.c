/*
 * ch3:smheap collectives where every rank both gives and takes: Allgather(v), Alltoall(v).
 * Every rank offers its data and copies each peer's part straight from the peer's buffer.
 */

#include "smheap_coll_call.h"

/* Where the blocks of an Allgather(v) go: rank r's block is counts[r] elements of dt at
 * displs[r] extents into buf; for an Allgather, counts and displs are NULL and every block
 * is `count` elements, rank r's at r * count. */
typedef struct {
    void *buf;
    MPI_Aint count;
    const MPI_Aint *counts, *displs;
    MPI_Datatype dt;
    MPI_Aint extent;            /* dt's */
} blocks_t;

static inline view_t block_of(blocks_t b, int r)
{
    MPI_Aint count = b.counts ? b.counts[r] : b.count;
    MPI_Aint displ = b.displs ? b.displs[r] : r * b.count;

    return view_of((char *) b.buf + displ * b.extent, count, b.dt);
}

/* Blocks that fit in a cell: every rank publishes `in` there and copies the others' blocks
 * from their cells, each of the length its counts say; nobody waits for its readers.  A cell
 * holds one block (Allgather(v)), or with `each` one block for every rank in rank order, of
 * which a reader takes its own (Alltoall).  mine: this rank's block for itself, within in. */
static int exchange_inline(smheap_coll_comm_t * cc, int me, view_t in, view_t mine,
                           blocks_t out, int each, int in_place, uint64_t offered,
                           uint64_t copied)
{
    int mpi_errno = MPI_SUCCESS, n = cc->size;
    smheap_coll_cell_t *own;
    const smheap_coll_cell_t *c;

    mpi_errno = write_cell(cc, me, in, MPIR_ERR_NONE, &own);
    MPIR_ERR_CHECK(mpi_errno);
    wake_readers(cc);
    for (int i = 1; i <= n && mpi_errno == MPI_SUCCESS; i++) {
        int r = (me + i) % n;   /* own block last, and peers staggered */
        view_t to = block_of(out, r);
        MPI_Aint whole = each ? to.bytes * n : to.bytes;

        if ((r == me && in_place) || to.bytes == 0)
            continue;
        if (r == me) {
            mpi_errno = copy_view(mine, to);
            continue;
        }
        WAIT_INLINE(cc, r, offered, &c);
        if (c->bytes != whole)
            MPIR_ERR_SET2(mpi_errno, MPI_ERR_OTHER, "**collective_size_mismatch",
                          "**collective_size_mismatch %d %d", (int) c->bytes, (int) whole);
        else
            mpi_errno = unpack_into(to, c->data + (each ? me * to.bytes : 0), to.bytes, 0);
    }
    reach(cc, me, copied);
    MPIR_ERR_CHECK(mpi_errno);
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_INLINE);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

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
    offered = next_step(cc);
    copied = next_step(cc);
    if (in.bytes != block)      /* the type signatures differ: no rank may write past one */
        MPIR_ERR_SETANDJUMP2(mpi_errno, MPI_ERR_OTHER, "**collective_size_mismatch",
                             "**collective_size_mismatch %d %d", (int) in.bytes, (int) block);
    if (fits_inline(block)) {
        blocks_t out = { recvbuf, recvcount, NULL, NULL, recvtype, extent_of(recvtype) };

        mpi_errno = exchange_inline(cc, me, in, in, out, 0, sendbuf == MPI_IN_PLACE, offered,
                                    copied);
        MPIR_ERR_CHECK(mpi_errno);
        goto fn_exit;
    }
    NEED_SCRATCH(cc, block);
    mpi_errno = readable(cc, in, 0, 0, &src);
    MPIR_ERR_CHECK(mpi_errno);
    offer(cc, me, src, NULL, offered);

    for (int i = 1; i <= n && mpi_errno == MPI_SUCCESS; i++) {
        int r = (me + i) % n;   /* own block last, and peers staggered */
        if (r == me && sendbuf == MPI_IN_PLACE)
            continue;
        WAIT_IN_SLOT(cc, r, offered);
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
    offered = next_step(cc);
    copied = next_step(cc);
    if (fits_inline(sv.bytes)) {
        blocks_t out = { recvbuf, recvcount, NULL, NULL, recvtype, extent_of(recvtype) };
        MPI_Aint scount = in_place ? recvcount : sendcount;
        MPI_Datatype stype = in_place ? recvtype : sendtype;
        view_t mine = view_of((const char *) sv.buf + me * scount * extent_of(stype), scount,
                              stype);

        mpi_errno = exchange_inline(cc, me, sv, mine, out, 1, in_place, offered, copied);
        MPIR_ERR_CHECK(mpi_errno);
        goto fn_exit;
    }
    NEED_SCRATCH(cc, sv.bytes);
    /* in place, the input is recvbuf, which this rank overwrites while peers read it */
    mpi_errno = readable(cc, sv, in_place, 0, &src);
    MPIR_ERR_CHECK(mpi_errno);
    offer(cc, me, src, NULL, offered);

    for (int i = 0; i < n && mpi_errno == MPI_SUCCESS; i++) {
        int r = (me + i) % n;
        WAIT_IN_SLOT(cc, r, offered);   /* (a peer with more data went inline: an error) */
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

static int allgatherv(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                      void *recvbuf, const MPI_Aint * recvcounts, const MPI_Aint * displs,
                      MPI_Datatype recvtype, MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS, me = comm->rank, n = comm->local_size;
    int in_place = sendbuf == MPI_IN_PLACE;
    smheap_coll_comm_t *cc;
    MPI_Aint rext = extent_of(recvtype), rsize = size_of(recvtype), largest = 0;
    view_t in;
    uint64_t offered, copied;
    const void *src;

    READY_OR_FALL_BACK(comm, cc, Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                            displs, recvtype, comm, errflag));
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SHARED);
    in = in_place ? view_of((char *) recvbuf + displs[me] * rext, recvcounts[me], recvtype) :
        view_of(sendbuf, sendcount, sendtype);
    offered = next_step(cc);
    copied = next_step(cc);
    /* every rank has the same counts, hence takes the same way */
    for (int r = 0; r < n; r++)
        largest = MPL_MAX(largest, recvcounts[r] * rsize);
    if (fits_inline(largest)) {
        blocks_t out = { recvbuf, 0, recvcounts, displs, recvtype, rext };

        if (in.bytes != recvcounts[me] * rsize)     /* more than its cell holds, maybe */
            MPIR_ERR_SETANDJUMP2(mpi_errno, MPI_ERR_OTHER, "**collective_size_mismatch",
                                 "**collective_size_mismatch %d %d", (int) in.bytes,
                                 (int) (recvcounts[me] * rsize));
        mpi_errno = exchange_inline(cc, me, in, in, out, 0, in_place, offered, copied);
        MPIR_ERR_CHECK(mpi_errno);
        goto fn_exit;
    }
    NEED_SCRATCH(cc, in.bytes);
    mpi_errno = readable(cc, in, 0, 0, &src);
    MPIR_ERR_CHECK(mpi_errno);
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

static int alltoallv(const void *sendbuf, const MPI_Aint * sendcounts, const MPI_Aint * sdispls,
                     MPI_Datatype sendtype, void *recvbuf, const MPI_Aint * recvcounts,
                     const MPI_Aint * rdispls, MPI_Datatype recvtype, MPIR_Comm * comm,
                     MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS, me = comm->rank, n = comm->local_size;
    int in_place = sendbuf == MPI_IN_PLACE;
    smheap_coll_comm_t *cc;
    MPI_Aint rext = extent_of(recvtype);
    uint64_t offered, copied;
    smheap_coll_cell_t *mine;
    const void *src;
    int wrote_cell;

    READY_OR_FALL_BACK(comm, cc, Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                           recvcounts, rdispls, recvtype, comm, errflag));
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SHARED);
    offered = next_step(cc);
    copied = next_step(cc);
    /* In place, the blocks are recvbuf's, laid out by the receive arguments; packing them
     * first (into the cell, or staged) leaves recvbuf free to be overwritten.  Each rank
     * takes its own way: a reader finds a peer's blocks in its cell or offered in its slot. */
    if (in_place)
        wrote_cell = write_blocks_cell(cc, me, recvbuf, recvcounts, rdispls, recvtype, &mine,
                                       &mpi_errno);
    else
        wrote_cell = write_blocks_cell(cc, me, sendbuf, sendcounts, sdispls, sendtype, &mine,
                                       &mpi_errno);
    if (wrote_cell) {
        MPIR_ERR_CHECK(mpi_errno);
        wake_readers(cc);
    } else {
        mpi_errno = in_place ?
            offer_blocks(cc, recvbuf, recvcounts, rdispls, recvtype, n, 1, &src) :
            offer_blocks(cc, sendbuf, sendcounts, sdispls, sendtype, n, 0, &src);
        MPIR_ERR_CHECK(mpi_errno);
        offer(cc, me, src, NULL, offered);
    }

    for (int i = 0; i < n && mpi_errno == MPI_SUCCESS; i++) {
        int r = (me + i) % n;
        view_t to = view_of((char *) recvbuf + rdispls[r] * rext, recvcounts[r], recvtype);
        const smheap_coll_cell_t *c;

        if (recvcounts[r] == 0 || (r == me && in_place))
            continue;
        if (r == me) {
            mpi_errno = copy_view(view_of((const char *) sendbuf + sdispls[me] *
                                          extent_of(sendtype), sendcounts[me], sendtype), to);
            continue;
        }
        CHECK_WAIT(wait_offer(cc, r, offered, &c));
        mpi_errno = c ? read_block_cell(c, me, to) :
            unpack_into(to, block_for(slot(cc, r)->src, me), to.bytes, 0);
    }
    reach(cc, me, copied);
    if (!wrote_cell)
        WAIT_ALL(cc, n, copied);
    MPIR_ERR_CHECK(mpi_errno);
    if (wrote_cell)
        MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_INLINE);

  fn_exit:
    return mpi_errno;
  fn_fail:
    leave_failed(cc, comm->rank, errflag);
    goto fn_exit;
}

void MPIDI_CH3I_Smheap_coll_override_exchanges(MPIDI_Coll_fns * table)
{
    table->Allgather = allgather;
    table->Allgatherv = allgatherv;
    table->Alltoall = alltoall;
    table->Alltoallv = alltoallv;
}

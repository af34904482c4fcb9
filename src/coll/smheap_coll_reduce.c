/*
 * ch3:smheap reductions: Allreduce, Reduce, Reduce_scatter_block.  Every rank offers its
 * input in place (or staged); small vectors are reduced whole by each rank that needs the
 * result, larger ones split so that every rank reduces its own part of all inputs at once.
 * They need the datatype's own layout, so they run here only for contiguous datatypes (every
 * predefined one) and go to MPICH's algorithms otherwise.
 */

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_CH3_SMHEAP_ALLREDUCE
      category    : CH3
      type        : enum
      default     : auto
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : |-
        ch3:smheap: how a flat Allreduce of a vector too big for the control block's cells
        runs on a communicator within one node.
        auto  - as the cost model of doc/coll-model.md chooses from the rank count, the
                vector's size and the second-level cache
        whole - every rank reduces the whole vector, reading every peer's input
        split - every rank reduces its part of the vector, then copies the others' parts

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

#include "smheap_coll_call.h"

/* Below this many bytes a Reduce is done whole by the root; above, the vector is split so
 * that every rank reduces its own part at once. */
#define SMALL_REDUCTION 8192

/*
 * Allreduce, whole or split: the cost model (doc/coll-model.md).  In cache lines of data a
 * rank reads from its peers' memory, where the time goes on a node of many cores:
 *   whole: every peer's input,                           (n - 1) B / 64 lines, 2 steps;
 *   split: its part of each peer's input, then each peer's part of the result,
 *                                                       2 (n - 1) B / 64n lines, 3 steps.
 * A step is a wait for every peer: n - 1 lines that each arrive with the latency of a line
 * moving between cores, which STEP_LINE_COST puts at that many lines of streamed data.  The
 * whole vector is reduced while the lines it reads beyond the split's cost less than the
 * split's extra step,
 *   (n - 1) B / 64 - 2 (n - 1) B / 64n  <=  (n - 1) STEP_LINE_COST,
 * i.e. B <= 64 n STEP_LINE_COST / (n - 2): always on 2 ranks (both read B), up to 12 KiB on
 * 3 ranks, 8 KiB on 4, 4.6 KiB on 16, towards 4 KiB on more; and while what it pulls from
 * its peers, (n - 1) B, fits in a quarter of the second-level cache, beyond which it misses
 * there too (on 2 ranks the split's copies of lines the peer has just written cost more than
 * reducing the other half, up to that bound: doc/collectives.md).  A decision of the model
 * moves with the constant only near the crossover: 64 KiB on 8 ranks is split for any
 * STEP_LINE_COST below 768.
 */
#define STEP_LINE_COST 64

static int allreduce_whole(int n, MPI_Aint bytes)
{
    size_t b = (size_t) bytes;

    if (MPIR_CVAR_CH3_SMHEAP_ALLREDUCE != MPIR_CVAR_CH3_SMHEAP_ALLREDUCE_auto)
        return MPIR_CVAR_CH3_SMHEAP_ALLREDUCE == MPIR_CVAR_CH3_SMHEAP_ALLREDUCE_whole;
    return (n <= 2 || (size_t) (n - 2) * b <= (size_t) 64 * n * STEP_LINE_COST) &&
        (size_t) (n - 1) * b <= MPIDI_CH3I_Smheap_node_cache_l2() / 4;
}

/* acc = in[0] op in[1] op ... op in[n-1], over elements [first, first+count) of each input,
 * in rank order (smheap_reduce_local(a, b) computes b = a op b), so non-commutative operations
 * get MPI's order. */
static int reduce_inputs(smheap_coll_comm_t * cc, int n, MPI_Aint first, MPI_Aint count,
                         MPI_Aint extent, MPI_Datatype dt, MPI_Op op, void *acc)
{
    int mpi_errno = MPI_SUCCESS;
    MPI_Aint off = first * extent;

    if (count == 0)
        return MPI_SUCCESS;
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_coll_reduce_peer_bytes, (n - 1) * count * extent);
    smheap_copy(acc, (const char *) slot(cc, n - 1)->src + off, count * extent);
    for (int r = n - 2; r >= 0 && mpi_errno == MPI_SUCCESS; r--)
        mpi_errno = smheap_reduce_local((const char *) slot(cc, r)->src + off, acc, count, dt, op);
    return mpi_errno;
}

/* Elements [*first, *first + *count) of a vector of `count` split among n ranks. */
static void my_part(MPI_Aint count, int n, int rank, MPI_Aint * first, MPI_Aint * part)
{
    MPI_Aint per = (count + n - 1) / n;

    *first = MPL_MIN(count, per * rank);
    *part = MPL_MIN(count, *first + per) - *first;
}

/* A reduction whose vector fits in a cell: every rank publishes its input there and returns
 * once it has what it needs; `result` (NULL on the ranks that need none) gets elements
 * [first, first + part) of the inputs reduced in rank order, read straight from the cells. */
static int reduce_inline(smheap_coll_comm_t * cc, int me, const void *input, MPI_Aint count,
                         MPI_Aint first, MPI_Aint part, MPI_Datatype dt, MPI_Op op,
                         void *result, uint64_t offered, uint64_t reduced)
{
    int mpi_errno = MPI_SUCCESS, n = cc->size;
    MPI_Aint extent = extent_of(dt), off = first * extent;
    smheap_coll_cell_t *mine;

    mpi_errno = claim_cell(cc, me, &mine);
    MPIR_ERR_CHECK(mpi_errno);
    memcpy(mine->data, input, count * extent);
    publish_cell(cc, mine, count * extent, MPIR_ERR_NONE);
    if (result != NULL) {
        /* this rank's own input from `input`, not back out of the cell on its way to peers
         * (unless the result overwrites it: in place) */
        const char *own = input == result ? mine->data : input;

        WAIT_ALL_INLINE(cc, n, offered);
        memcpy(result, (n - 1 == me ? own : cell(cc, n - 1)->data) + off, part * extent);
        for (int r = n - 2; r >= 0 && mpi_errno == MPI_SUCCESS; r--)
            mpi_errno = smheap_reduce_local((r == me ? own : cell(cc, r)->data) + off, result,
                                          part, dt, op);
    }
    reach(cc, me, reduced);
    MPIR_ERR_CHECK(mpi_errno);
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_INLINE);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
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
    offered = next_step(cc);
    reduced = next_step(cc);
    if (use_tree_for(cc, bytes) && MPIR_Op_is_commutative(op)) {
        mpi_errno = MPIDI_CH3I_Smheap_coll_tree_reduce(cc, me, 0, 1, in_place ? recvbuf : sendbuf,
                                                       count, dt, op, recvbuf, offered, reduced);
        MPIR_ERR_CHECK(mpi_errno);
        goto fn_exit;
    }
    if (fits_inline(bytes)) {
        mpi_errno = reduce_inline(cc, me, in_place ? recvbuf : sendbuf, count, 0, count, dt, op,
                                  recvbuf, offered, reduced);
        MPIR_ERR_CHECK(mpi_errno);
        goto fn_exit;
    }
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
    offer(cc, me, src, acc, offered);
    WAIT_ALL_IN_SLOTS(cc, n, offered);

    if (allreduce_whole(n, bytes)) {
        MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_coll_allreduce_whole, 1);
        mpi_errno = reduce_inputs(cc, n, 0, count, extent, dt, op, recvbuf);
        reach(cc, me, reduced);
        WAIT_ALL(cc, n, reduced);
        MPIR_ERR_CHECK(mpi_errno);
        goto fn_exit;
    }

    /* each rank reduces its part, then everyone gathers the parts */
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_coll_allreduce_split, 1);
    pulled = next_step(cc);
    mpi_errno = reduce_inputs(cc, n, first, part, extent, dt, op, acc + first * extent);
    reach(cc, me, reduced);
    WAIT_ALL(cc, n, reduced);
    for (int r = 0; r < n; r++) {
        MPI_Aint f, p;
        const char *from = (const char *) slot(cc, r)->dst;
        my_part(count, n, r, &f, &p);
        if (p > 0 && from + f * extent != (char *) recvbuf + f * extent) {
            smheap_copy((char *) recvbuf + f * extent, from + f * extent, p * extent);
            if (r != me)
                MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_coll_reduce_peer_bytes, p * extent);
        }
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
    offered = next_step(cc);
    reduced = next_step(cc);
    if (use_tree_for(cc, bytes) && MPIR_Op_is_commutative(op)) {
        mpi_errno = MPIDI_CH3I_Smheap_coll_tree_reduce(cc, me, root, 0,
                                                       in_place ? recvbuf : sendbuf, count, dt,
                                                       op, me == root ? recvbuf : NULL,
                                                       offered, reduced);
        MPIR_ERR_CHECK(mpi_errno);
        goto fn_exit;
    }
    if (fits_inline(bytes)) {
        mpi_errno = reduce_inline(cc, me, in_place ? recvbuf : sendbuf, count, 0, count, dt, op,
                                  me == root ? recvbuf : NULL, offered, reduced);
        MPIR_ERR_CHECK(mpi_errno);
        goto fn_exit;
    }
    my_part(count, n, me, &first, &part);
    NEED_SCRATCH(cc, 2 * bytes + SMHEAP_CACHELINE);
    acc = (char *) cc->scratch + MPL_ROUND_UP_ALIGN(bytes, SMHEAP_CACHELINE);

    mpi_errno = readable(cc, view_of(in_place ? recvbuf : sendbuf, count, dt),
                         in_place && bytes <= SMALL_REDUCTION, 0, &src);
    MPIR_ERR_CHECK(mpi_errno);
    /* the root's accumulator is its recvbuf itself where peers can write there (in place,
     * recvbuf is its input, which they read) */
    if (me == root && !in_place && in_heap(recvbuf, bytes))
        acc = recvbuf;
    offer(cc, me, src, acc, offered);

    if (bytes <= SMALL_REDUCTION) {     /* the root reduces everything */
        if (me == root) {
            WAIT_ALL_IN_SLOTS(cc, n, offered);
            mpi_errno = reduce_inputs(cc, n, 0, count, extent, dt, op, recvbuf);
        }
        reach(cc, me, reduced);
        WAIT(cc, root, reduced);
        MPIR_ERR_CHECK(mpi_errno);
        goto fn_exit;
    }

    /* each rank reduces its part straight into the root's accumulator: the root copies no
     * part back out of its peers' memory, which saves more than the writes into the root's
     * memory cost (figures: doc/collectives.md) */
    WAIT_ALL_IN_SLOTS(cc, n, offered);
    mpi_errno = reduce_inputs(cc, n, first, part, extent, dt, op,
                              (char *) slot(cc, root)->dst + first * extent);
    reach(cc, me, reduced);
    WAIT_ALL(cc, n, reduced);   /* my input is read, and the parts written, by all until here */
    if (me == root) {
        smheap_peer_wrote(acc, bytes);
        if (acc != recvbuf && mpi_errno == MPI_SUCCESS)
            smheap_copy(recvbuf, acc, bytes);
    }
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    leave_failed(cc, comm->rank, errflag);
    goto fn_exit;
}

/* MPICH's default selection (maint/tuning/coll/mpir/generic.json) runs a commutative
 * Reduce_scatter_block of this many bytes in all or more with its pairwise algorithm. */
#define MPICH_PAIRWISE_FROM 524288

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
    offered = next_step(cc);
    reduced = next_step(cc);
    if (fits_inline(count * extent)) {
        mpi_errno = reduce_inline(cc, me, in_place ? recvbuf : sendbuf, count, me * recvcount,
                                  recvcount, dt, op, recvbuf, offered, reduced);
    } else {
        NEED_SCRATCH(cc, count * extent);
        /* in place, the input is recvbuf, whose first block this rank overwrites */
        mpi_errno = readable(cc, view_of(in_place ? recvbuf : sendbuf, count, dt), in_place, 0,
                             &src);
        MPIR_ERR_CHECK(mpi_errno);
        offer(cc, me, src, NULL, offered);
        WAIT_ALL(cc, n, offered);
        mpi_errno = reduce_inputs(cc, n, me * recvcount, recvcount, extent, dt, op, recvbuf);
        reach(cc, me, reduced);
        WAIT_ALL(cc, n, reduced);
    }
    /* In place, the rest of the buffer stays as it was, as with MPICH's own algorithms
     * (programs check it: mpi4py's tests), except that MPICH's pairwise algorithm, which its
     * default selection takes for commutative operations from MPICH_PAIRWISE_FROM bytes in
     * all, leaves the result in this rank's own block too, and programs read it there
     * (MPICH's cxx/coll/redscatblk).  No other rank reads that block any more. */
    if (in_place && me != 0 && mpi_errno == MPI_SUCCESS && MPIR_Op_is_commutative(op) &&
        count * extent >= MPICH_PAIRWISE_FROM)
        mpi_errno = MPIR_Localcopy(recvbuf, recvcount, dt,
                                   (char *) recvbuf + me * recvcount * extent, recvcount, dt);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    leave_failed(cc, comm->rank, errflag);
    goto fn_exit;
}

void MPIDI_CH3I_Smheap_coll_override_reductions(MPIDI_Coll_fns * table)
{
    table->Reduce = reduce;
    table->Allreduce = allreduce;
    table->Reduce_scatter_block = reduce_scatter_block;
}

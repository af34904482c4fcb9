/*
 * ch3:smheap collectives as trees that follow the node's topology (smheap_coll_tree.h):
 * Barrier, and Bcast, Reduce and Allreduce whose data travel inline.  The flat entry points
 * call these, with the steps of their call, when the communicator has a tree.  A rank reads
 * only its parent's and its children's lines and wakes only them; the data go down the
 * tree cell by cell, and partial reductions up it.
 */

#include "smheap_coll_call.h"

static void use_tree(smheap_coll_comm_t * cc, int me, int root)
{
    MPIDI_CH3I_Smheap_coll_tree_root(cc->tree, me, root, cc->node_rank);
    cc->tree_call = 1;
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_TREE);
}

/* Each rank arrives once its children have (so a leader's arrival stands for its groups),
 * and leaves once its parent has. */
int MPIDI_CH3I_Smheap_coll_tree_barrier(smheap_coll_comm_t * cc, int me, uint64_t arrived,
                                        uint64_t released)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_coll_tree_t *t;

    use_tree(cc, me, 0);
    t = cc->tree;
    for (int i = 0; i < t->nchildren; i++)
        WAIT(cc, t->children[i], arrived);
    if (t->parent >= 0) {
        reach(cc, me, arrived);
        WAIT(cc, t->parent, released);
    }
    reach(cc, me, released);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Pass a cell's data on to this rank's children (the caller's reach() wakes them).  A Bcast
 * root with more data than a cell holds spilled them (sizes that differ: the tree carries
 * only data that fit in a cell): its cell holds their address, which goes on with the count,
 * so that every rank below finds the mismatch. */
static int forward(smheap_coll_comm_t * cc, int me, int phase, const void *data, MPI_Aint bytes,
                   int carried)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_coll_cell_t *mine;

    if (cc->tree->nchildren == 0)
        return MPI_SUCCESS;
    mpi_errno = claim_cell_at(cc, me, phase, &mine);
    if (mpi_errno == MPI_SUCCESS) {
        memcpy(mine->data, data, fits_inline(bytes) ? bytes : (MPI_Aint) sizeof(char *));
        store_cell(cc, mine, bytes, carried);
    }
    return mpi_errno;
}

/* The root's data (which fit in a cell) go down the tree; *sent and *carried are what the
 * root sent and the error it carried, for the caller to check against its own count. */
int MPIDI_CH3I_Smheap_coll_tree_bcast(smheap_coll_comm_t * cc, int me, int root, view_t v,
                                      int carried_in, uint64_t offered, uint64_t copied,
                                      uint64_t * sent, int *carried)
{
    int mpi_errno = MPI_SUCCESS;
    const smheap_coll_cell_t *c;
    smheap_coll_tree_t *t;

    use_tree(cc, me, root);
    t = cc->tree;
    if (me == root) {
        smheap_coll_cell_t *mine;

        mpi_errno = write_cell_at(cc, me, 0, v, carried_in, &mine);
        MPIR_ERR_CHECK(mpi_errno);
        *sent = v.bytes;
        *carried = carried_in;
        reach(cc, me, copied);
        goto fn_exit;
    }

    CHECK_WAIT(wait_offer_at(cc, t->parent, 0, offered, TRUE, &c));
    if (c == NULL && t->parent != root)
        /* the parent did not get the root's data inline: it passed a different amount */
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**smheap_coll_sizes",
                             "**smheap_coll_sizes %d", t->parent);
    /* (the root itself, with more data than a cell holds, offered them in its slot) */
    *sent = c ? c->bytes : slot(cc, root)->bytes;
    *carried = c ? c->carried : slot(cc, root)->carried;
    if (c != NULL)
        mpi_errno = forward(cc, me, 0, c->data, c->bytes, c->carried);
    if (mpi_errno == MPI_SUCCESS && c != NULL && *sent == v.bytes)
        mpi_errno = unpack_into(v, c->data, v.bytes, 0);
    reach(cc, me, copied);
    MPIR_ERR_CHECK(mpi_errno);
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_INLINE);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* A commutative reduction whose vector fits in a cell: partial results go up the tree to
 * the root (for Allreduce rank 0, whose result then comes down); `result` is NULL on the
 * ranks of a Reduce other than its root. */
int MPIDI_CH3I_Smheap_coll_tree_reduce(smheap_coll_comm_t * cc, int me, int root, int all,
                                       const void *input, MPI_Aint count, MPI_Datatype dt,
                                       MPI_Op op, void *result, uint64_t offered,
                                       uint64_t reduced)
{
    int mpi_errno = MPI_SUCCESS;
    MPI_Aint bytes = count * extent_of(dt);
    _Alignas(16) char acc[SMHEAP_COLL_CELL_DATA];
    const smheap_coll_cell_t *c;
    smheap_coll_tree_t *t;

    use_tree(cc, me, all ? 0 : root);
    t = cc->tree;
    memcpy(acc, input, bytes);
    for (int i = 0; i < t->nchildren; i++) {
        CHECK_WAIT(wait_offer_as(cc, t->children[i], 0, offered, 1, &c));
        mpi_errno = smheap_reduce_local(c->data, acc, count, dt, op);
        MPIR_ERR_CHECK(mpi_errno);
    }
    if (t->parent >= 0) {
        smheap_coll_cell_t *mine;

        mpi_errno = claim_cell_at(cc, me, 0, &mine);
        MPIR_ERR_CHECK(mpi_errno);
        memcpy(mine->data, acc, bytes);
        publish_cell(cc, mine, bytes, MPIR_ERR_NONE);
        if (all) {
            CHECK_WAIT(wait_offer_as(cc, t->parent, 1, offered, 1, &c));
            memcpy(acc, c->data, bytes);
        }
    }
    if (all) {
        mpi_errno = forward(cc, me, 1, acc, bytes, MPIR_ERR_NONE);
        MPIR_ERR_CHECK(mpi_errno);
    }
    if (result != NULL)
        memcpy(result, acc, bytes);
    reach(cc, me, reduced);
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_INLINE);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

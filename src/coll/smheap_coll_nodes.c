/*
 * ch3:smheap collectives -- communicators that span nodes.
 *
 * Such a communicator gets a table of its own (smheap_coll_comm.c): Barrier, Bcast, Reduce
 * and Allreduce run in two levels, over MPICH's node communicators.  Within each node the
 * ranks meet in comm->node_comm, whose table holds the shared-heap algorithms
 * (smheap_coll_rooted.c, _reduce.c, _exchange.c), and one leader per node (node_comm's
 * rank 0) talks to the others in comm->node_roots_comm, over MPICH's algorithms and the
 * sockets.  So data crosses each node boundary once, and moves inside a node with one copy.  Barrier, Reduce and Allreduce are
 * MPICH's own *_intra_smp algorithms, which are built that way; Bcast is ours because
 * MPICH's goes flat above its medium size.  What the table leaves alone (the other
 * collectives, non-commutative reductions) and communicators MPICH gave no node
 * communicators (one rank per node) go to the table this one replaced.
 */

#include "smheap_channel.h"
#include "smheap_coll.h"

static MPIDI_Coll_fns *prev_table(MPIR_Comm * comm)
{
    smheap_coll_comm_t *cc = comm->dev.ch.coll;
    return cc->prev;
}

/* MPICH made node communicators for it (at commit, after the create hook ran). */
static int two_levels(MPIR_Comm * comm)
{
    return comm->hierarchy_kind == MPIR_COMM_HIERARCHY_KIND__PARENT;
}

/* As MPICH's own algorithms do: note a step's error and go on, so that every rank still
 * takes part in every step and no peer waits for ever. */
static void note_error(int mpi_errno, int *mpi_errno_ret, MPIR_Errflag_t * errflag)
{
    if (mpi_errno == MPI_SUCCESS)
        return;
    *errflag = MPIR_ERR_GET_CLASS(mpi_errno) == MPIX_ERR_PROC_FAILED ?
        MPIR_ERR_PROC_FAILED : MPIR_ERR_OTHER;
    MPIR_ERR_SET(mpi_errno, *errflag, "**fail");
    MPIR_ERR_ADD(*mpi_errno_ret, mpi_errno);
}

static int barrier(MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    if (!two_levels(comm)) {
        MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_FALLBACK);
        return prev_table(comm)->Barrier(comm, errflag);
    }
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_NODE_AWARE);
    return MPIR_Barrier_intra_smp(comm, errflag);
}

/* The root's node first spreads the data from the root (so its leader has it), the leaders
 * pass it between nodes, then every other node spreads it from its leader. */
static int bcast(void *buf, MPI_Aint count, MPI_Datatype dt, int root, MPIR_Comm * comm,
                 MPIR_Errflag_t * errflag)
{
    int mpi_errno, mpi_errno_ret = MPI_SUCCESS;
    int root_on_node;

    if (!two_levels(comm)) {
        MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_FALLBACK);
        return prev_table(comm)->Bcast(buf, count, dt, root, comm, errflag);
    }
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_NODE_AWARE);
    root_on_node = MPIR_Get_intranode_rank(comm, root);        /* -1: on another node */
    if (comm->node_comm != NULL && root_on_node > 0) {
        mpi_errno = MPIR_Bcast(buf, count, dt, root_on_node, comm->node_comm, errflag);
        note_error(mpi_errno, &mpi_errno_ret, errflag);
    }
    if (comm->node_roots_comm != NULL) {
        mpi_errno = MPIR_Bcast(buf, count, dt, MPIR_Get_internode_rank(comm, root),
                               comm->node_roots_comm, errflag);
        note_error(mpi_errno, &mpi_errno_ret, errflag);
    }
    if (comm->node_comm != NULL && root_on_node <= 0) {
        mpi_errno = MPIR_Bcast(buf, count, dt, 0, comm->node_comm, errflag);
        note_error(mpi_errno, &mpi_errno_ret, errflag);
    }
    return mpi_errno_ret;
}

/* Reductions in two levels combine a node's contributions first: only for operations
 * whose order does not matter. */
static int reduce(const void *sendbuf, void *recvbuf, MPI_Aint count, MPI_Datatype dt,
                  MPI_Op op, int root, MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    if (!two_levels(comm) || !MPIR_Op_is_commutative(op)) {
        MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_FALLBACK);
        return prev_table(comm)->Reduce(sendbuf, recvbuf, count, dt, op, root, comm, errflag);
    }
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_NODE_AWARE);
    return MPIR_Reduce_intra_smp(sendbuf, recvbuf, count, dt, op, root, comm, errflag);
}

static int allreduce(const void *sendbuf, void *recvbuf, MPI_Aint count, MPI_Datatype dt,
                     MPI_Op op, MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    if (!two_levels(comm) || !MPIR_Op_is_commutative(op)) {
        MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_FALLBACK);
        return prev_table(comm)->Allreduce(sendbuf, recvbuf, count, dt, op, comm, errflag);
    }
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_NODE_AWARE);
    return MPIR_Allreduce_intra_smp(sendbuf, recvbuf, count, dt, op, comm, errflag);
}

void MPIDI_CH3I_Smheap_coll_override_nodes(MPIDI_Coll_fns * table)
{
    table->Barrier = barrier;
    table->Bcast = bcast;
    table->Reduce = reduce;
    table->Allreduce = allreduce;
}

/*
 * ch3:smheap collectives -- a communicator's control block in the shared heap, made at its
 * first collective, a rank's staging buffer and spill area there, the wait for a peer's
 * step, and the counters of the paths taken: what every algorithm calls first and waits
 * with.
 */

#include "smheap_channel.h"
#include "smheap.h"
#include "smheap_coll.h"
#include "smheap_coll_tree.h"

unsigned long long PVAR_COUNTER_smheap_coll_shared;
unsigned long long PVAR_COUNTER_smheap_coll_node_aware;
unsigned long long PVAR_COUNTER_smheap_coll_fallback;
unsigned long long PVAR_COUNTER_smheap_coll_inline;
unsigned long long PVAR_COUNTER_smheap_coll_spilled;
unsigned long long PVAR_COUNTER_smheap_coll_tree;
unsigned long long PVAR_COUNTER_smheap_coll_lines_read;
unsigned long long PVAR_COUNTER_smheap_coll_lines_written;
unsigned long long PVAR_COUNTER_smheap_coll_reduce_peer_bytes;
unsigned long long PVAR_COUNTER_smheap_coll_allreduce_whole;
unsigned long long PVAR_COUNTER_smheap_coll_allreduce_split;

void MPIDI_CH3I_Smheap_coll_count(smheap_coll_path_t path)
{
    switch (path) {
        case SMHEAP_COLL_SHARED:
            MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_coll_shared, 1);
            break;
        case SMHEAP_COLL_NODE_AWARE:
            MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_coll_node_aware, 1);
            break;
        case SMHEAP_COLL_FALLBACK:
            MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_coll_fallback, 1);
            break;
        case SMHEAP_COLL_INLINE:
            MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_coll_inline, 1);
            break;
        case SMHEAP_COLL_SPILLED:
            MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_coll_spilled, 1);
            break;
        case SMHEAP_COLL_TREE:
            MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_coll_tree, 1);
            break;
    }
}

/* Where the communicator's ranks sit, from every rank's own view of its place; the tree,
 * the same on every rank, if they sit apart.  Every rank must take the same algorithms, so
 * if one cannot build the tree (no memory), they all stay flat. */
static int make_tree(MPIR_Comm * comm, smheap_coll_comm_t * cc)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Errflag_t errflag = MPIR_ERR_NONE;
    smheap_coll_tree_t *tree = NULL;
    int *places, built;

    places = MPL_malloc((size_t) comm->local_size * SMHEAP_TOPO_LEVELS * sizeof(int),
                        MPL_MEM_COMM);
    if (places != NULL) {
        MPIDI_CH3I_Smheap_coll_place(cc->node_rank[comm->rank],
                                     &places[comm->rank * SMHEAP_TOPO_LEVELS]);
        mpi_errno = cc->prev->Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, places,
                                        SMHEAP_TOPO_LEVELS, MPI_INT, comm, &errflag);
        MPIR_ERR_CHECK(mpi_errno);
        tree = MPIDI_CH3I_Smheap_coll_tree_create(comm->local_size, places);
    }
    built = places != NULL && tree != MPIDI_CH3I_SMHEAP_COLL_TREE_NOMEM;
    mpi_errno = cc->prev->Allreduce(MPI_IN_PLACE, &built, 1, MPI_INT, MPI_MIN, comm, &errflag);
    MPIR_ERR_CHECK(mpi_errno);
    if (built && tree != NULL) {
        cc->tree = tree;
        cc->cells_per_call = 2;
        tree = NULL;
    }

  fn_exit:
    if (tree != MPIDI_CH3I_SMHEAP_COLL_TREE_NOMEM)
        MPIDI_CH3I_Smheap_coll_tree_free(tree);
    MPL_free(places);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Rank 0 places the control block in the shared heap and tells the others where, through
 * MPICH's own broadcast; done at the communicator's first collective (the create hook may
 * not communicate).  NULL for everyone if rank 0's heap could not hold it. */
static int make_ctrl(MPIR_Comm * comm, smheap_coll_comm_t * cc)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Errflag_t errflag = MPIR_ERR_NONE;
    smheap_coll_ctrl_t *ctrl = NULL;
    size_t len = sizeof(*ctrl) + (size_t) comm->local_size *
        (sizeof(smheap_coll_slot_t) + cc->cells * sizeof(smheap_coll_cell_t));

    if (comm->rank == 0) {
        ctrl = MPL_aligned_alloc(SMHEAP_CACHELINE, len, MPL_MEM_COMM);
        if (ctrl != NULL && !smheap_holds(ctrl, len)) {
            MPL_free(ctrl);
            ctrl = NULL;
        }
        if (ctrl != NULL) {
            memset(ctrl, 0, len);
            atomic_init(&ctrl->users, comm->local_size);
            ctrl->size = comm->local_size;
        }
    }
    mpi_errno = cc->prev->Bcast(&ctrl, sizeof(ctrl), MPI_BYTE, 0, comm, &errflag);
    MPIR_ERR_CHECK(mpi_errno);
    cc->ctrl = ctrl;
    cc->unusable = ctrl == NULL;
    if (ctrl != NULL && MPIR_CVAR_CH3_SMHEAP_COLL_TREE_MIN > 0 &&
        comm->local_size >= MPIR_CVAR_CH3_SMHEAP_COLL_TREE_MIN)
        mpi_errno = make_tree(comm, cc);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Called first by every smheap collective: the communicator's state, with its control
 * block made if this is its first collective.  (*cc)->unusable: use (*cc)->prev. */
int MPIDI_CH3I_Smheap_coll_ready(MPIR_Comm * comm, smheap_coll_comm_t ** cc)
{
    *cc = comm->dev.ch.coll;
    if ((*cc)->ctrl != NULL || (*cc)->unusable)
        return MPI_SUCCESS;
    return make_ctrl(comm, *cc);
}

/* This rank's staging buffer, at least len bytes, in the shared heap; NULL if the heap
 * cannot hold it.  Only called between collectives' first step and after the previous
 * collective's readers are done, so growing it never pulls it from under a reader. */
void *MPIDI_CH3I_Smheap_coll_scratch(smheap_coll_comm_t * cc, size_t len)
{
    void *p;

    if (len <= cc->scratch_len)
        return cc->scratch;
    len = MPL_MAX(len, 2 * cc->scratch_len);
    p = MPL_aligned_alloc(SMHEAP_CACHELINE, len, MPL_MEM_BUFFER);
    if (p != NULL && !smheap_holds(p, len)) {
        MPL_free(p);
        return NULL;
    }
    if (p == NULL)
        return NULL;
    MPL_free(cc->scratch);
    cc->scratch = p;
    cc->scratch_len = len;
    return p;
}

/* This rank's spill area (smheap_coll.h), made at its first spill: a piece for each of its
 * cells, in the shared heap; NULL if the heap cannot hold it. */
char *MPIDI_CH3I_Smheap_coll_spill(smheap_coll_comm_t * cc)
{
    size_t len = (size_t) cc->cells * SMHEAP_COLL_SPILL_LEN;
    char *p;

    if (cc->spill != NULL)
        return cc->spill;
    p = MPL_aligned_alloc(SMHEAP_CACHELINE, len, MPL_MEM_BUFFER);
    if (p != NULL && !smheap_holds(p, len)) {
        MPL_free(p);
        p = NULL;
    }
    cc->spill = p;
    return p;
}

struct reached {
    _Atomic uint64_t *step;
    uint64_t want;
};

static int has_reached(void *arg)
{
    struct reached *r = arg;
    return atomic_load_explicit(r->step, memory_order_acquire) >= r->want;
}

/* Wait until `rank` has reached `step`, as a blocking progress wait waits: this rank's
 * point-to-point traffic keeps moving (a peer may be waiting for it), and after a while it
 * sleeps until a peer rings it (more ranks than cores).  Returns the progress engine's
 * error, if it has one. */
int MPIDI_CH3I_Smheap_coll_wait(smheap_coll_comm_t * cc, int rank, uint64_t step)
{
    struct reached r = { &cc->ctrl->slot[rank].step, step };

    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_coll_lines_read, 1);
    if (has_reached(&r))
        return MPI_SUCCESS;
    return MPIDI_CH3I_Progress_wait_for(has_reached, &r);
}

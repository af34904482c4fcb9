/*
 * ch3:smheap collectives -- communicators: the create and destroy hooks that install and
 * remove the smheap tables (smheap_coll_tables.h: one list for communicators within this
 * node, one for communicators that span nodes), each communicator's control block and
 * staging buffer in the shared heap, the wait for a peer, and the MPI_T variables.
 */

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_CH3_SMHEAP_COLL
      category    : CH3
      type        : boolean
      default     : true
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        ch3:smheap: run collectives on communicators whose ranks share the heap with the
        channel's single-copy algorithms (src/coll), and those of communicators that span
        nodes in two levels (within each node over the heap, between nodes among one
        leader per node).  0 keeps MPICH's own algorithms everywhere, as
        MPIR_CVAR_DEVICE_COLLECTIVES=none also does.

    - name        : MPIR_CVAR_CH3_SMHEAP_COLL_TREE_MIN
      category    : CH3
      type        : int
      default     : 32
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        ch3:smheap: communicators within one node of at least this many ranks, whose ranks
        are bound to different packages, NUMA nodes or L3 caches, run Barrier and the
        collectives whose data travel inline as trees that follow those levels (src/coll/
        smheap_coll_tree.h); smaller ones stay flat.  0 never uses trees.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

#include "smheap_channel.h"
#include "smheap.h"
#include "smheap_coll.h"
#include "smheap_coll_tables.h"
#include "smheap_coll_tree.h"

static smheap_coll_tables_t node_tables;       /* communicators within this node */
static smheap_coll_tables_t spanning_tables;   /* communicators that span nodes */

/* Control blocks whose communicator this rank (their owner, rank 0) has freed while a peer
 * still held it; freed once the last peer lets go. */
typedef struct zombie {
    smheap_coll_ctrl_t *ctrl;
    struct zombie *next, *prev;
} zombie_t;
static zombie_t *zombies;

static unsigned long long PVAR_COUNTER_smheap_coll_shared;
static unsigned long long PVAR_COUNTER_smheap_coll_node_aware;
static unsigned long long PVAR_COUNTER_smheap_coll_fallback;
static unsigned long long PVAR_COUNTER_smheap_coll_inline;
static unsigned long long PVAR_COUNTER_smheap_coll_tree;
unsigned long long PVAR_COUNTER_smheap_coll_lines_read;
unsigned long long PVAR_COUNTER_smheap_coll_lines_written;

static void get_tables_live(void *addr, void *obj_handle, int count, void *buf)
{
    (void) addr, (void) obj_handle, (void) count;
    *(unsigned long long *) buf = (unsigned long long) (node_tables.live + spanning_tables.live);
}

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
        case SMHEAP_COLL_TREE:
            MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_coll_tree, 1);
            break;
    }
}

static void free_released_zombies(void)
{
    zombie_t *z, *tmp;

    DL_FOREACH_SAFE(zombies, z, tmp) {
        if (atomic_load_explicit(&z->ctrl->users, memory_order_acquire) == 0) {
            DL_DELETE(zombies, z);
            MPL_free(z->ctrl);
            MPL_free(z);
        }
    }
}

/* This rank is done with the control block; its owner frees it when everyone is. */
static void release_ctrl(smheap_coll_ctrl_t * ctrl, int owner)
{
    int left = atomic_fetch_sub_explicit(&ctrl->users, 1, memory_order_acq_rel) - 1;
    zombie_t *z;

    if (!owner)
        return;
    if (left == 0) {
        MPL_free(ctrl);
        return;
    }
    z = MPL_malloc(sizeof(*z), MPL_MEM_COMM);
    if (z == NULL)
        return;         /* leaked until exit: a few hundred bytes */
    z->ctrl = ctrl;
    DL_PREPEND(zombies, z);
}

/* Are all of the communicator's processes ranks of our job on this node (and so share
 * our heap)?  Not on a communicator that spans nodes, nor after MPI_Intercomm_merge with
 * spawned or connected processes. */
static int all_on_my_node(MPIR_Comm * comm)
{
    for (int r = 0; r < comm->local_size; r++)
        if (MPIDI_CH3I_Smheap_node_rank(comm, r) < 0)
            return FALSE;
    return TRUE;
}

static void override_one_node(MPIDI_Coll_fns * table)
{
    MPIDI_CH3I_Smheap_coll_override_rooted(table);
    MPIDI_CH3I_Smheap_coll_override_reductions(table);
    MPIDI_CH3I_Smheap_coll_override_exchanges(table);
}

/* Which list's table a new communicator gets: the shared-heap algorithms if its ranks all
 * share our heap; else the two-level ones, unless it is one of MPICH's node communicators
 * (their algorithms run over those, and a node communicator whose ranks do not share our
 * heap holds processes of another job); else none. */
static smheap_coll_tables_t *tables_for(MPIR_Comm * comm, void (**override) (MPIDI_Coll_fns *))
{
    if (all_on_my_node(comm)) {
        *override = override_one_node;
        return &node_tables;
    }
    if (comm->hierarchy_kind == MPIR_COMM_HIERARCHY_KIND__NODE ||
        comm->hierarchy_kind == MPIR_COMM_HIERARCHY_KIND__NODE_ROOTS)
        return NULL;
    *override = MPIDI_CH3I_Smheap_coll_override_nodes;
    return &spanning_tables;
}

static int comm_created(MPIR_Comm * comm, void *param)
{
    smheap_coll_comm_t *cc;
    smheap_coll_tables_t *list;
    void (*override) (MPIDI_Coll_fns *);
    MPIDI_Coll_fns *table;

    (void) param;
    comm->dev.ch.coll = NULL;   /* the device part of a communicator is not zeroed */
    if (!MPIR_CVAR_CH3_SMHEAP_COLL || !MPIDI_CH3I_Smheap_heap_shared ||
        comm->comm_kind != MPIR_COMM_KIND__INTRACOMM)
        return MPI_SUCCESS;
    list = tables_for(comm, &override);
    if (list == NULL)
        return MPI_SUCCESS;

    cc = MPL_calloc(1, sizeof(*cc) + comm->local_size * sizeof(int), MPL_MEM_COMM);
    if (cc == NULL)
        return MPI_SUCCESS;     /* MPICH's collectives will do */
    cc->seen = MPL_calloc(comm->local_size, sizeof(*cc->seen), MPL_MEM_COMM);
    if (cc->seen == NULL) {
        MPL_free(cc);
        return MPI_SUCCESS;
    }
    cc->size = comm->local_size;
    cc->cells = smheap_coll_cells(comm->local_size);
    MPIR_Assert((cc->cells & (cc->cells - 1)) == 0);
    cc->cells_per_call = 1;
    for (int i = 0; i < SMHEAP_COLL_CELLS_MAX; i++)
        cc->cell_root[i] = SMHEAP_COLL_ALL_READ;
    cc->tables = list;
    for (int r = 0; r < comm->local_size; r++)
        cc->node_rank[r] = MPIDI_CH3I_Smheap_node_rank(comm, r);
    table = smheap_coll_tables_acquire(list, comm->dev.coll_fns, override);
    if (table == NULL) {
        MPL_free(cc->seen);
        MPL_free(cc);
        return MPI_SUCCESS;
    }
    cc->prev = comm->dev.coll_fns;
    cc->step = 1;
    comm->dev.coll_fns = table;
    comm->dev.ch.coll = cc;
    return MPI_SUCCESS;
}

static int comm_destroyed(MPIR_Comm * comm, void *param)
{
    smheap_coll_comm_t *cc = comm->dev.ch.coll;

    (void) param;
    if (cc == NULL)
        return MPI_SUCCESS;
    comm->dev.coll_fns = smheap_coll_tables_release(cc->tables, comm->dev.coll_fns);
    if (cc->ctrl)
        release_ctrl(cc->ctrl, comm->rank == 0);
    free_released_zombies();
    MPL_free(cc->scratch);
    MPL_free(cc->seen);
    MPIDI_CH3I_Smheap_coll_tree_free(cc->tree);
    MPL_free(cc);
    comm->dev.ch.coll = NULL;
    return MPI_SUCCESS;
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

/* In MPIDI_CH3_Init, after the heap check.  ch3 prepends hooks and runs them in list
 * order: these run before ch3's own (which do not touch the table). */
int MPIDI_CH3I_Smheap_coll_init(void)
{
    int mpi_errno = MPI_SUCCESS;

    mpi_errno = MPIDI_CH3U_Comm_register_create_hook(comm_created, NULL);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_CH3U_Comm_register_destroy_hook(comm_destroyed, NULL);
    MPIR_ERR_CHECK(mpi_errno);

    PVAR_GATED_ACTION(SMHEAP, MPIR_T_PVAR_LEVEL_REGISTER_DYNAMIC_impl(
        MPI_UNSIGNED_LONG_LONG, smheap_coll_tables_live, (void *) NULL, 1,
        MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
        MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS, get_tables_live, NULL,
        "CH3", "smheap collective tables alive (each shared by communicators that had the "
        "same table before)"));
    MPIR_T_PVAR_COUNTER_REGISTER_STATIC(SMHEAP, MPI_UNSIGNED_LONG_LONG, smheap_coll_shared,
                                        MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                                        MPIR_T_PVAR_FLAG_READONLY |
                                        MPIR_T_PVAR_FLAG_CONTINUOUS, "CH3",
                                        "collectives this rank ran with the shared-heap "
                                        "algorithms");
    MPIR_T_PVAR_COUNTER_REGISTER_STATIC(SMHEAP, MPI_UNSIGNED_LONG_LONG, smheap_coll_node_aware,
                                        MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                                        MPIR_T_PVAR_FLAG_READONLY |
                                        MPIR_T_PVAR_FLAG_CONTINUOUS, "CH3",
                                        "collectives this rank ran in two levels on a "
                                        "communicator that spans nodes (the shared heap "
                                        "within each node, one leader per node between)");
    MPIR_T_PVAR_COUNTER_REGISTER_STATIC(SMHEAP, MPI_UNSIGNED_LONG_LONG, smheap_coll_fallback,
                                        MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                                        MPIR_T_PVAR_FLAG_READONLY |
                                        MPIR_T_PVAR_FLAG_CONTINUOUS, "CH3",
                                        "collectives the smheap table handed to MPICH's "
                                        "algorithms (a datatype or operation it leaves to "
                                        "them)");
    MPIR_T_PVAR_COUNTER_REGISTER_STATIC(SMHEAP, MPI_UNSIGNED_LONG_LONG, smheap_coll_inline,
                                        MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                                        MPIR_T_PVAR_FLAG_READONLY |
                                        MPIR_T_PVAR_FLAG_CONTINUOUS, "CH3",
                                        "of the shared-heap collectives, those whose data "
                                        "travelled inline with their flag in the control "
                                        "block (small Bcast, Reduce, Allreduce, Allgather)");
    MPIR_T_PVAR_COUNTER_REGISTER_STATIC(SMHEAP, MPI_UNSIGNED_LONG_LONG, smheap_coll_tree,
                                        MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                                        MPIR_T_PVAR_FLAG_READONLY |
                                        MPIR_T_PVAR_FLAG_CONTINUOUS, "CH3",
                                        "of the shared-heap collectives, those that ran as "
                                        "a tree following the node's topology "
                                        "(MPIR_CVAR_CH3_SMHEAP_COLL_TREE_MIN)");
    MPIR_T_PVAR_COUNTER_REGISTER_STATIC(SMHEAP, MPI_UNSIGNED_LONG_LONG,
                                        smheap_coll_lines_read, MPI_T_VERBOSITY_USER_BASIC,
                                        MPI_T_BIND_NO_OBJECT, MPIR_T_PVAR_FLAG_READONLY |
                                        MPIR_T_PVAR_FLAG_CONTINUOUS, "CH3",
                                        "shared cache lines the shared-heap collectives of "
                                        "this rank read: peers' steps and cells, and the "
                                        "doorbells it checks to wake sleepers (bulk data "
                                        "not counted)");
    MPIR_T_PVAR_COUNTER_REGISTER_STATIC(SMHEAP, MPI_UNSIGNED_LONG_LONG,
                                        smheap_coll_lines_written, MPI_T_VERBOSITY_USER_BASIC,
                                        MPI_T_BIND_NO_OBJECT, MPIR_T_PVAR_FLAG_READONLY |
                                        MPIR_T_PVAR_FLAG_CONTINUOUS, "CH3",
                                        "shared cache lines the shared-heap collectives of "
                                        "this rank wrote: its steps and cells (bulk data "
                                        "not counted)");
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_CH3I_Smheap_coll_finalize(void)
{
    free_released_zombies();
    return MPIDI_CH3I_Smheap_coll_topo_finalize();
}

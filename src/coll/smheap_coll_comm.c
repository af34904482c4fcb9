/*
 * ch3:smheap collectives -- communicators: the create and destroy hooks that install and
 * remove the smheap tables (smheap_coll_tables.h: one list for communicators within this
 * node, one for communicators that span nodes), the release of control blocks and spill
 * areas, and the MPI_T variables.  The blocks themselves and the waits are
 * smheap_coll_block.c's.
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

/* Communicators this rank has freed while a peer may still read what it last spilled (a
 * writer does not wait for its readers): its spill area and its hold on the control block
 * (whose slots say how far the peers got) go once every peer has passed that point. */
typedef struct lingering {
    smheap_coll_ctrl_t *ctrl;
    char *spill;
    uint64_t read;              /* the point the readers pass once done */
    int rank;
    struct lingering *next, *prev;
} lingering_t;
static lingering_t *lingering;

static void get_tables_live(void *addr, void *obj_handle, int count, void *buf)
{
    (void) addr, (void) obj_handle, (void) count;
    *(unsigned long long *) buf = (unsigned long long) (node_tables.live + spanning_tables.live);
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

/* Has every peer passed `read`?  (A peer that left a call early reached its last point.) */
static int spill_read_by_all(smheap_coll_ctrl_t * ctrl, int me, uint64_t read)
{
    for (int r = 0; r < ctrl->size; r++)
        if (r != me && atomic_load_explicit(&ctrl->slot[r].step, memory_order_acquire) < read)
            return FALSE;
    return TRUE;
}

/* Checked whenever a communicator goes, as the zombies are. */
static void free_read_spills(void)
{
    lingering_t *l, *tmp;

    DL_FOREACH_SAFE(lingering, l, tmp) {
        if (spill_read_by_all(l->ctrl, l->rank, l->read)) {
            DL_DELETE(lingering, l);
            MPL_free(l->spill);
            release_ctrl(l->ctrl, l->rank == 0);
            MPL_free(l);
        }
    }
}

/* This rank is done with the communicator: its spill area goes (now, or once read), and its
 * hold on the control block with it. */
static void release_spill_and_ctrl(smheap_coll_comm_t * cc, int me)
{
    lingering_t *l;

    if (cc->spill == NULL || spill_read_by_all(cc->ctrl, me, cc->spill_read)) {
        MPL_free(cc->spill);
        release_ctrl(cc->ctrl, me == 0);
        return;
    }
    l = MPL_malloc(sizeof(*l), MPL_MEM_COMM);
    if (l == NULL)
        return;         /* both leaked until exit */
    l->ctrl = cc->ctrl;
    l->spill = cc->spill;
    l->read = cc->spill_read;
    l->rank = me;
    DL_PREPEND(lingering, l);
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
        release_spill_and_ctrl(cc, comm->rank);
    free_read_spills();
    free_released_zombies();
    MPL_free(cc->scratch);
    MPL_free(cc->seen);
    MPIDI_CH3I_Smheap_coll_tree_free(cc->tree);
    MPL_free(cc);
    comm->dev.ch.coll = NULL;
    return MPI_SUCCESS;
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
    MPIR_T_PVAR_COUNTER_REGISTER_STATIC(SMHEAP, MPI_UNSIGNED_LONG_LONG, smheap_coll_spilled,
                                        MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                                        MPIR_T_PVAR_FLAG_READONLY |
                                        MPIR_T_PVAR_FLAG_CONTINUOUS, "CH3",
                                        "of the inline collectives, those in which this rank "
                                        "wrote data too big for a cell (up to 2 KiB: a "
                                        "Bcast or Gather block, a Scatter(v) root's or an "
                                        "Alltoallv rank's blocks) to its spill area, and "
                                        "returned without waiting for its readers");
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
    MPIR_T_PVAR_COUNTER_REGISTER_STATIC(SMHEAP, MPI_UNSIGNED_LONG_LONG,
                                        smheap_coll_reduce_peer_bytes,
                                        MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                                        MPIR_T_PVAR_FLAG_READONLY |
                                        MPIR_T_PVAR_FLAG_CONTINUOUS, "CH3",
                                        "bytes of other ranks' buffers this rank's "
                                        "shared-heap reductions read in place: their inputs "
                                        "and, split, their parts of the result (the cost "
                                        "model of doc/coll-model.md counts these)");
    MPIR_T_PVAR_COUNTER_REGISTER_STATIC(SMHEAP, MPI_UNSIGNED_LONG_LONG,
                                        smheap_coll_allreduce_whole,
                                        MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                                        MPIR_T_PVAR_FLAG_READONLY |
                                        MPIR_T_PVAR_FLAG_CONTINUOUS, "CH3",
                                        "flat shared-heap Allreduces (not inline) in which "
                                        "this rank reduced the whole vector "
                                        "(MPIR_CVAR_CH3_SMHEAP_ALLREDUCE)");
    MPIR_T_PVAR_COUNTER_REGISTER_STATIC(SMHEAP, MPI_UNSIGNED_LONG_LONG,
                                        smheap_coll_allreduce_split,
                                        MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                                        MPIR_T_PVAR_FLAG_READONLY |
                                        MPIR_T_PVAR_FLAG_CONTINUOUS, "CH3",
                                        "flat shared-heap Allreduces (not inline) split: "
                                        "this rank reduced its part of the vector, then "
                                        "copied the others' parts");
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_CH3I_Smheap_coll_finalize(void)
{
    free_read_spills();
    free_released_zombies();
    return MPIDI_CH3I_Smheap_coll_topo_finalize();
}

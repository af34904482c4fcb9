/*
 * ch3:smheap -- windows served by the shared heap (rma/): what the heap adds to a window
 * ch3 made, and what it takes back at MPI_Win_free; ch3's window tables wrapped.
 */

#include "smheap_rma_impl.h"
#include "smheap.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_CH3_SMHEAP_RMA
      category    : CH3
      type        : boolean
      default     : true
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        ch3:smheap: windows of MPI_Win_create whose memory lies in the shared heap, and
        those of MPI_Win_allocate (their memory taken from the heap), are
        accessed in place by the node's origins (where the window's ranks all share the
        heap, the targets whose memory is in it; else where it is so on every rank of the
        node), and passive-target locks are taken in the heap, without the target: on
        every target where the window's ranks all share the heap, on the node's targets
        where it spans nodes (those of other nodes send ch3's lock packets, which the
        target grants under the same lock word).  0 leaves both to ch3 (packets the
        target answers from its progress engine).

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

static MPIDI_CH3U_Win_fns_t ch3_fns;    /* what ch3 and nemesis's code filled in */
static MPIDI_CH3U_Win_hooks_t ch3_hooks;

/* Does the heap serve windows here?  (The same answer on every rank of a node.) */
static int heap_serves_windows(void)
{
    return MPIR_CVAR_CH3_SMHEAP_RMA && MPIDI_CH3I_Smheap_heap_shared;
}

/* Does every rank of the window share this rank's heap? (The same answer on all of
 * them: sharing a heap is being of one job on one node.) */
static int all_share_heap(MPIR_Comm * comm)
{
    int r;

    for (r = 0; r < comm->local_size; r++)
        if (MPIDI_CH3I_Smheap_node_rank(comm, r) < 0)
            return FALSE;
    return TRUE;
}

/* A zeroed block of len bytes in this rank's heap slice, or NULL (the heap is full or off
 * here: ch3's messages then serve the window). */
static void *alloc_in_heap(size_t len)
{
    void *p = MPL_aligned_alloc(SMHEAP_CACHELINE, MPL_ROUND_UP_ALIGN(len, SMHEAP_CACHELINE),
                                MPL_MEM_RMA);

    if (p && !smheap_holds(p, len)) {
        MPL_free(p);
        p = NULL;
    }
    if (p)
        memset(p, 0, len);
    return p;
}

/* Lock words and epoch counters for a window whose ranks all share the heap: each rank puts
 * its own in its heap slice; all learn where the others' are.  Collective over the
 * window. */
static int attach_locks(MPIR_Win * win, struct MPIDI_CH3I_Win_heap *h)
{
    MPIR_Comm *comm = win->comm_ptr;
    int n = comm->local_size, r, all_in_heap = 1;
    MPI_Aint *where;
    MPIR_Errflag_t errflag = MPIR_ERR_NONE;
    int mpi_errno = MPI_SUCCESS;
    MPIR_CHKLMEM_DECL(1);

    h->locks = MPL_calloc(n, sizeof(*h->locks), MPL_MEM_RMA);
    h->epochs = MPL_calloc(n, sizeof(*h->epochs), MPL_MEM_RMA);
    h->held = MPL_calloc(n, sizeof(*h->held), MPL_MEM_RMA);
    h->posts_used = MPL_calloc(n, sizeof(*h->posts_used), MPL_MEM_RMA);
    h->node_ranks = MPL_malloc(n * sizeof(*h->node_ranks), MPL_MEM_RMA);
    h->access_group = MPL_malloc(n * sizeof(*h->access_group), MPL_MEM_RMA);
    h->wake = MPL_malloc(n * sizeof(*h->wake), MPL_MEM_RMA);
    MPIR_ERR_CHKANDJUMP(!h->locks || !h->epochs || !h->held || !h->posts_used ||
                        !h->node_ranks || !h->access_group || !h->wake, mpi_errno,
                        MPI_ERR_OTHER, "**nomem");
    h->my_lock = alloc_in_heap(sizeof(struct smheap_rma_lock) + n * sizeof(MPL_atomic_int_t));
    h->my_epochs = alloc_in_heap(sizeof(struct smheap_rma_epochs) +
                                 n * sizeof(MPL_atomic_uint32_t));

    MPIR_CHKLMEM_MALLOC(where, MPI_Aint *, 2 * n * sizeof(MPI_Aint), mpi_errno,
                        "lock words", MPL_MEM_RMA);
    where[2 * comm->rank] = MPIR_Ptr_to_aint(h->my_lock);
    where[2 * comm->rank + 1] = MPIR_Ptr_to_aint(h->my_epochs);
    mpi_errno = MPIR_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, where, 2, MPI_AINT, comm,
                               &errflag);
    MPIR_ERR_CHECK(mpi_errno);
    MPIR_ERR_CHKANDJUMP(errflag, mpi_errno, MPI_ERR_OTHER, "**coll_fail");
    for (r = 0; r < n; r++) {
        h->locks[r] = MPIR_Aint_to_ptr(where[2 * r]);
        h->epochs[r] = MPIR_Aint_to_ptr(where[2 * r + 1]);
        h->node_ranks[r] = MPIDI_CH3I_Smheap_node_rank(comm, r);
        all_in_heap &= h->locks[r] != NULL && h->epochs[r] != NULL;
    }
    h->locks_in_place = all_in_heap;
  fn_exit:
    MPIR_CHKLMEM_FREEALL();
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Do all ranks of the window on this node share this rank's heap?  (Not so where ranks of
 * two jobs meet on a node.)  The same answer on all of them. */
static int node_shares_heap(MPIR_Comm * comm)
{
    for (int r = 0; r < comm->local_size; r++)
        if (comm->intranode_table[r] >= 0 && MPIDI_CH3I_Smheap_node_rank(comm, r) < 0)
            return FALSE;
    return TRUE;
}

/* Lock words for a window that spans nodes: the node's ranks put theirs in their heap
 * slices and learn where the others of the node put theirs.  Collective over the node's
 * ranks of the window. */
static int attach_node_locks(MPIR_Win * win, struct MPIDI_CH3I_Win_heap *h)
{
    MPIR_Comm *comm = win->comm_ptr, *node_comm = comm->node_comm;
    int n = comm->local_size, r, in_heap = 1;
    MPI_Aint *where = NULL;
    MPIR_Errflag_t errflag = MPIR_ERR_NONE;
    int mpi_errno = MPI_SUCCESS;
    MPIR_CHKLMEM_DECL(1);

    h->locks = MPL_calloc(n, sizeof(*h->locks), MPL_MEM_RMA);
    h->held = MPL_calloc(n, sizeof(*h->held), MPL_MEM_RMA);
    h->node_ranks = MPL_malloc(n * sizeof(*h->node_ranks), MPL_MEM_RMA);
    MPIR_ERR_CHKANDJUMP(!h->locks || !h->held || !h->node_ranks, mpi_errno, MPI_ERR_OTHER,
                        "**nomem");
    h->my_lock = alloc_in_heap(sizeof(struct smheap_rma_lock) + n * sizeof(MPL_atomic_int_t));
    if (node_comm != NULL) {
        MPIR_CHKLMEM_MALLOC(where, MPI_Aint *, node_comm->local_size * sizeof(MPI_Aint),
                            mpi_errno, "lock words", MPL_MEM_RMA);
        where[node_comm->rank] = MPIR_Ptr_to_aint(h->my_lock);
        mpi_errno = MPIR_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, where, 1, MPI_AINT,
                                   node_comm, &errflag);
        MPIR_ERR_CHECK(mpi_errno);
        MPIR_ERR_CHKANDJUMP(errflag, mpi_errno, MPI_ERR_OTHER, "**coll_fail");
    }
    for (r = 0; r < n; r++) {
        h->node_ranks[r] = MPIDI_CH3I_Smheap_node_rank(comm, r);
        if (r == comm->rank)
            h->locks[r] = h->my_lock;
        else if (comm->intranode_table[r] >= 0)
            h->locks[r] = MPIR_Aint_to_ptr(where[comm->intranode_table[r]]);
        else
            continue;
        in_heap &= h->locks[r] != NULL;
    }
    if (in_heap) {
        mpi_errno = MPIDI_CH3I_Rma_register_holds_hook();
        MPIR_ERR_CHECK(mpi_errno);
    }
    h->locks_on_node = in_heap;
  fn_exit:
    MPIR_CHKLMEM_FREEALL();
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Does window rank r's memory lie in the heap of this node's ranks? */
static int memory_in_heap(MPIR_Win * win, int r)
{
    return MPIDI_CH3I_Smheap_node_rank(win->comm_ptr, r) >= 0 &&
        smheap_holds(win->basic_info_table[r].base_addr, (size_t) win->basic_info_table[r].size);
}

enum node_memory { MEMORY_IN_HEAP_NONE, MEMORY_IN_HEAP_SOME, MEMORY_IN_HEAP_ALL };

/* How much of the memory of this node's ranks, in a window where each has its own
 * (has_own_memory), is in the heap (the same answer on all of them). */
static enum node_memory node_memory(MPIR_Win * win)
{
    MPIR_Comm *comm = win->comm_ptr;
    int r, in = 0, out = 0;

    for (r = 0; r < comm->local_size; r++) {
        if (comm->intranode_table[r] < 0)
            continue;
        if (memory_in_heap(win, r))
            in++;
        else
            out++;
    }
    return out == 0 ? MEMORY_IN_HEAP_ALL : in == 0 ? MEMORY_IN_HEAP_NONE : MEMORY_IN_HEAP_SOME;
}

/* Which ranks' memory an origin reaches in place, where only some of it is in the heap
 * (MPIDI_CH3_RMA_TARGET_IN_PLACE). */
static int mark_targets_in_place(MPIR_Win * win)
{
    MPIR_Comm *comm = win->comm_ptr;
    int mpi_errno = MPI_SUCCESS, r;

    win->smheap_in_place = MPL_calloc(comm->local_size, 1, MPL_MEM_RMA);
    MPIR_ERR_CHKANDJUMP(win->smheap_in_place == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    for (r = 0; r < comm->local_size; r++)
        win->smheap_in_place[r] = comm->intranode_table[r] >= 0 && memory_in_heap(win, r);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Are the target bytes of an operation on a dynamic window in the heap?  Their address is
 * the displacement itself. */
int MPIDI_CH3I_Win_dynamic_in_place(MPI_Aint disp, MPI_Aint count, MPI_Datatype datatype)
{
    MPI_Aint true_lb, true_extent, extent;

    if (count <= 0)
        return TRUE;
    MPIR_Type_get_true_extent_impl(datatype, &true_lb, &true_extent);
    MPIR_Datatype_get_extent_macro(datatype, extent);
    if (extent < 0 || true_extent < 0)
        return FALSE;
    return smheap_holds(MPIR_Aint_to_ptr(disp + true_lb),
                        (size_t) ((count - 1) * extent + true_extent));
}

/* Make a window a shared-memory window: its node's ranks reach each other's memory at the
 * addresses they gave (MPI_Win_create, where that memory is in the heap), or at the
 * displacements themselves (dynamic).  Collective over the window. */
static int make_heap_window(MPIR_Win * win, struct MPIDI_CH3I_Win_heap *h)
{
    MPIR_Comm *comm = win->comm_ptr, *node_comm = comm->node_comm;
    MPIDI_CH3I_SHM_MUTEX *mutex = NULL;
    MPI_Aint where = 0;
    MPIR_Errflag_t errflag = MPIR_ERR_NONE;
    int mpi_errno = MPI_SUCCESS, r, dynamic = win->create_flavor == MPI_WIN_FLAVOR_DYNAMIC;
    enum node_memory memory = dynamic ? MEMORY_IN_HEAP_SOME : node_memory(win);

    if (node_comm == NULL || comm->intranode_table == NULL || memory == MEMORY_IN_HEAP_NONE)
        goto fn_exit;

    /* the node's first rank makes the accumulates' mutex, in its slice */
    if (node_comm->rank == 0) {
        mutex = MPL_malloc(sizeof(*mutex), MPL_MEM_RMA);
        if (mutex && smheap_holds(mutex, sizeof(*mutex))) {
            int pt_err;

            MPL_proc_mutex_create(mutex, &pt_err);
            if (pt_err) {
                MPL_free(mutex);
                mutex = NULL;
            }
        } else {
            MPL_free(mutex);
            mutex = NULL;
        }
        where = MPIR_Ptr_to_aint(mutex);
    }
    mpi_errno = MPIR_Bcast(&where, 1, MPI_AINT, 0, node_comm, &errflag);
    MPIR_ERR_CHECK(mpi_errno);
    MPIR_ERR_CHKANDJUMP(errflag, mpi_errno, MPI_ERR_OTHER, "**coll_fail");
    if (where == 0)
        goto fn_exit;
    if (node_comm->rank != 0)   /* memcheck: the futex calls check the word's bytes */
        smheap_peer_wrote(MPIR_Aint_to_ptr(where), sizeof(*mutex));

    win->shm_base_addrs = MPL_calloc(node_comm->local_size, sizeof(void *), MPL_MEM_SHM);
    MPIR_ERR_CHKANDJUMP(win->shm_base_addrs == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    for (r = 0; r < comm->local_size && !dynamic; r++)
        if (comm->intranode_table[r] >= 0)
            win->shm_base_addrs[comm->intranode_table[r]] = win->basic_info_table[r].base_addr;
    if (!dynamic && memory == MEMORY_IN_HEAP_SOME) {
        mpi_errno = mark_targets_in_place(win);
        MPIR_ERR_CHECK(mpi_errno);
    }
    win->shm_mutex = MPIR_Aint_to_ptr(where);
    win->shm_allocated = TRUE;
    h->heap_memory = TRUE;
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_rma_heap_windows, 1);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* A window of MPI_Win_create or MPI_Win_allocate: each rank's memory a block of its own,
 * which the node's ranks reach where it lies in the heap (MPI_Win_allocate's does where the
 * heap serves windows: win_allocate_memory). */
static int has_own_memory(MPIR_Win * win)
{
    return win->create_flavor == MPI_WIN_FLAVOR_CREATE ||
        win->create_flavor == MPI_WIN_FLAVOR_ALLOCATE;
}

/* After ch3 made a window of any flavour: what the heap adds to it.  Collective. */
static int serve_window(MPIR_Win * win)
{
    struct MPIDI_CH3I_Win_heap *h;
    int mpi_errno = MPI_SUCCESS;

    if (!heap_serves_windows())
        goto fn_exit;
    h = MPL_calloc(1, sizeof(*h), MPL_MEM_RMA);
    MPIR_ERR_CHKANDJUMP(h == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    h->my_rank = win->comm_ptr->rank;
    h->win = win;
    win->smheap = h;
    if (has_own_memory(win) && !win->shm_allocated && node_memory(win) == MEMORY_IN_HEAP_ALL) {
        mpi_errno = make_heap_window(win, h);
        MPIR_ERR_CHECK(mpi_errno);
    }
    /* Windows reached in place only in part (dynamic ones, and those of MPI_Win_create with
     * some memory outside the heap) only where locks are taken in the heap as well: ch3
     * locks node-local targets of a shared-memory window ahead of MPI_Win_lock_all, and
     * would lock again those that its packets reach. */
    if (all_share_heap(win->comm_ptr)) {
        mpi_errno = attach_locks(win, h);
        MPIR_ERR_CHECK(mpi_errno);
        if (h->locks_in_place && !win->shm_allocated &&
            (win->create_flavor == MPI_WIN_FLAVOR_DYNAMIC || has_own_memory(win))) {
            mpi_errno = make_heap_window(win, h);
            MPIR_ERR_CHECK(mpi_errno);
        }
        /* every operation in place: nobody's packets need a target's progress */
        h->epochs_in_place = h->locks_in_place && win->shm_allocated &&
            win->create_flavor != MPI_WIN_FLAVOR_DYNAMIC && win->smheap_in_place == NULL;
    } else if (win->shm_allocated && win->smheap_in_place == NULL &&
               win->create_flavor != MPI_WIN_FLAVOR_DYNAMIC &&
               node_shares_heap(win->comm_ptr)) {
        /* spanning nodes, every operation of the node's origins on the node's targets in
         * place: the node's locks in the heap too, ch3's packets for the rest */
        mpi_errno = attach_node_locks(win, h);
        MPIR_ERR_CHECK(mpi_errno);
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* After ch3 made a window: the heap's part, then ch3's lock requests that came meanwhile
 * (smheap_rma_hold.c). */
static int set_up_window(MPIR_Win * win)
{
    int mpi_errno = serve_window(win);

    return mpi_errno ? mpi_errno : MPIDI_CH3I_Rma_grant_queued_locks(win);
}

static int win_create(void *base, MPI_Aint size, int disp_unit, MPIR_Info * info,
                      MPIR_Comm * comm, MPIR_Win ** win)
{
    int mpi_errno = ch3_fns.create(base, size, disp_unit, info, comm, win);

    return mpi_errno ? mpi_errno : set_up_window(*win);
}

static int win_allocate(MPI_Aint size, int disp_unit, MPIR_Info * info, MPIR_Comm * comm,
                        void *baseptr, MPIR_Win ** win)
{
    int mpi_errno = ch3_fns.allocate(size, disp_unit, info, comm, baseptr, win);

    return mpi_errno ? mpi_errno : set_up_window(*win);
}

static int win_allocate_shared(MPI_Aint size, int disp_unit, MPIR_Info * info,
                               MPIR_Comm * comm, void *baseptr, MPIR_Win ** win)
{
    int mpi_errno = ch3_fns.allocate_shared(size, disp_unit, info, comm, baseptr, win);

    return mpi_errno ? mpi_errno : set_up_window(*win);
}

static int win_create_dynamic(MPIR_Info * info, MPIR_Comm * comm, MPIR_Win ** win)
{
    int mpi_errno = ch3_fns.create_dynamic(info, comm, win);

    return mpi_errno ? mpi_errno : set_up_window(*win);
}

/* ch3's allocate_shm, for MPI_Win_allocate and MPI_Win_allocate_shared: where the heap
 * serves windows, MPI_Win_allocate's memory comes from this rank's heap slice (malloc), and
 * serve_window makes the window one of memory in the heap, as MPI_Win_create's: no segment
 * and mapping of its own per window.  MPI_Win_allocate_shared keeps ch3's segment,
 * contiguous across the node's ranks. */
static int win_allocate_memory(MPI_Aint size, int disp_unit, MPIR_Info * info,
                               MPIR_Comm * comm, void *baseptr, MPIR_Win ** win)
{
    if ((*win)->create_flavor == MPI_WIN_FLAVOR_ALLOCATE && heap_serves_windows())
        return MPIDI_CH3U_Win_allocate_no_shm(size, disp_unit, info, comm, baseptr, win);
    return ch3_fns.allocate_shm(size, disp_unit, info, comm, baseptr, win);
}

static int win_init(MPI_Aint size, int disp_unit, int create_flavor, int model,
                    MPIR_Info * info, MPIR_Comm * comm, MPIR_Win ** win)
{
    (*win)->smheap = NULL;
    (*win)->smheap_in_place = NULL;
    (*win)->smheap_set_up = FALSE;
    return ch3_hooks.win_init ? ch3_hooks.win_init(size, disp_unit, create_flavor, model,
                                                   info, comm, win) : MPI_SUCCESS;
}

/* Every rank has passed ch3's barrier of MPI_Win_free: nobody uses the window any more. */
static int win_free(MPIR_Win ** win)
{
    struct MPIDI_CH3I_Win_heap *h = (*win)->smheap;
    MPIDI_CH3I_SHM_MUTEX *mutex = NULL;
    int mpi_errno = MPI_SUCCESS;

    if (h != NULL && h->heap_memory && (*win)->comm_ptr->node_comm->rank == 0)
        mutex = (*win)->shm_mutex;
    if (ch3_hooks.win_free) {
        mpi_errno = ch3_hooks.win_free(win);
        MPIR_ERR_CHECK(mpi_errno);
    }
    if (h == NULL)
        goto fn_exit;
    MPIDI_CH3I_Rma_hold_give_up(h, (*win)->comm_ptr->local_size);
    if (h->heap_memory) {
        (*win)->shm_allocated = FALSE;
        (*win)->shm_mutex = NULL;
    }
    if (mutex) {
        int pt_err = pthread_mutex_destroy(mutex);

        MPL_free(mutex);
        MPIR_ERR_CHKANDJUMP1(pt_err, mpi_errno, MPI_ERR_OTHER, "**pthread_mutex",
                             "**pthread_mutex %s", strerror(pt_err));
    }
    MPL_free(h->my_lock);
    MPL_free(h->my_epochs);
    MPL_free(h->locks);
    MPL_free(h->epochs);
    MPL_free(h->held);
    MPL_free(h->posts_used);
    MPL_free(h->node_ranks);
    MPL_free(h->access_group);
    MPL_free(h->wake);
    MPL_free(h);
    (*win)->smheap = NULL;
    MPL_free((*win)->smheap_in_place);
    (*win)->smheap_in_place = NULL;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* ch3 filled its window tables (MPID_Init, before the channel starts); the heap's entries
 * wrap what it put there. */
void MPIDI_CH3I_Win_heap_init(void)
{
    ch3_fns = MPIDI_CH3U_Win_fns;
    ch3_hooks = MPIDI_CH3U_Win_hooks;
    MPIDI_CH3U_Win_fns.create = win_create;
    MPIDI_CH3U_Win_fns.allocate = win_allocate;
    MPIDI_CH3U_Win_fns.allocate_shared = win_allocate_shared;
    MPIDI_CH3U_Win_fns.create_dynamic = win_create_dynamic;
    if (ch3_fns.allocate_shm)
        MPIDI_CH3U_Win_fns.allocate_shm = win_allocate_memory;
    MPIDI_CH3U_Win_hooks.win_init = win_init;
    MPIDI_CH3U_Win_hooks.win_free = win_free;
    MPIDI_CH3U_Win_hooks.lock = MPIDI_CH3I_Rma_lock;
    MPIDI_CH3U_Win_hooks.unlock = MPIDI_CH3I_Rma_unlock;
    MPIDI_CH3U_Win_hooks.lock_all = MPIDI_CH3I_Rma_lock_all;
    MPIDI_CH3U_Win_hooks.unlock_all = MPIDI_CH3I_Rma_unlock_all;
    MPIDI_CH3U_Win_hooks.fence = MPIDI_CH3I_Rma_fence;
    MPIDI_CH3U_Win_hooks.post = MPIDI_CH3I_Rma_post;
    MPIDI_CH3U_Win_hooks.start = MPIDI_CH3I_Rma_start;
    MPIDI_CH3U_Win_hooks.complete = MPIDI_CH3I_Rma_complete;
    MPIDI_CH3U_Win_hooks.wait = MPIDI_CH3I_Rma_wait;
    MPIDI_CH3U_Win_hooks.test = MPIDI_CH3I_Rma_test;
}

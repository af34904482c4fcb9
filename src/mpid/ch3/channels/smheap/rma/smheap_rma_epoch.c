/*
 * ch3:smheap -- fence and post/start/complete/wait through the shared heap: ch3's
 * active-target hooks (rma/).
 */

#include "smheap_rma_impl.h"
#include "mpidrma.h"            /* ch3's RMA state, read by the fence */

static int epochs_served(MPIR_Win * win)
{
    return win->smheap != NULL && win->smheap->epochs_in_place;
}

/* The ranks in the window of a group's members, into ranks. */
static int window_ranks(MPIR_Win * win, MPIR_Group * group, int *ranks)
{
    MPIR_Group *win_group;
    int *members, i, mpi_errno;
    MPIR_CHKLMEM_DECL(1);

    MPIR_CHKLMEM_MALLOC(members, int *, group->size * sizeof(int), mpi_errno, "members",
                        MPL_MEM_RMA);
    for (i = 0; i < group->size; i++)
        members[i] = i;
    mpi_errno = MPIR_Comm_group_impl(win->comm_ptr, &win_group);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIR_Group_translate_ranks_impl(group, group->size, members, win_group, ranks);
    MPIR_Group_release(win_group);
  fn_exit:
    MPIR_CHKLMEM_FREEALL();
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Add one to a counter of each rank of group (n of them) and wake them. */
static void signal_group(struct MPIDI_CH3I_Win_heap *h, const int *group, int n,
                         MPL_atomic_uint32_t * (*counter) (struct MPIDI_CH3I_Win_heap *, int))
{
    for (int i = 0; i < n; i++) {
        MPL_atomic_fetch_add_uint32(counter(h, group[i]), 1);
        h->wake[i] = h->node_ranks[group[i]];
    }
    MPIDI_CH3I_Smheap_wake_node_ranks(h->wake, n);
}

static MPL_atomic_uint32_t *post_counter(struct MPIDI_CH3I_Win_heap *h, int origin)
{
    return &h->epochs[origin]->posts[h->my_rank];
}

static MPL_atomic_uint32_t *complete_counter(struct MPIDI_CH3I_Win_heap *h, int target)
{
    return &h->epochs[target]->completes;
}

/* Counters that only grow, compared with what has been consumed of them. */
static int moved_past(uint32_t counter, uint32_t used, uint32_t by)
{
    return (int32_t) (counter - used - by) >= 0;
}

static int posts_arrived(void *arg)
{
    struct MPIDI_CH3I_Win_heap *h = arg;

    for (int i = 0; i < h->access_size; i++) {
        int t = h->access_group[i];

        if (!moved_past(MPL_atomic_acquire_load_uint32(&h->my_epochs->posts[t]),
                        h->posts_used[t], 1))
            return FALSE;
    }
    return TRUE;
}

static int completes_arrived(void *arg)
{
    struct MPIDI_CH3I_Win_heap *h = arg;

    return moved_past(MPL_atomic_acquire_load_uint32(&h->my_epochs->completes),
                      h->completes_used, h->exposure_size);
}

/* Has ch3 anything of this window in flight: operations queued as packets (to targets in
 * its slots), acknowledgements, operations of others still to arrive, a fence's barrier? */
static int ch3_window_busy(MPIR_Win * win)
{
    if (win->outstanding_acks || win->at_completion_counter || win->sync_request_cnt)
        return TRUE;
    for (int i = 0; i < win->num_slots; i++)
        if (win->slots[i].target_list_head != NULL)
            return TRUE;
    return FALSE;
}

/* A fence is a barrier where every operation before it was done in place: on windows
 * whose operations all are, always; on windows of heap-sharing ranks reached in place only
 * in part (dynamic ones, or with some memory outside the heap: operations on it go as
 * packets), when no rank has anything of ch3's in flight, which they agree on with one
 * allreduce (itself the barrier); else ch3 fences. */
int MPIDI_CH3I_Rma_fence(MPIR_Win * win, int assert, int *done)
{
    struct MPIDI_CH3I_Win_heap *h = win->smheap;
    MPIR_Errflag_t errflag = MPIR_ERR_NONE;
    int mpi_errno = MPI_SUCCESS, busy;

    *done = FALSE;
    if (h == NULL || !(h->epochs_in_place || (h->locks_in_place && win->shm_allocated)))
        goto fn_exit;
    MPL_atomic_read_write_barrier();
    if ((assert & (MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED)) ==
        (MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED)) {
        /* no epoch ends or begins: nothing to order */
    } else if (h->epochs_in_place) {
        mpi_errno = MPIR_Barrier(win->comm_ptr, &errflag);
    } else {
        /* a previous fence of ch3's ends with a barrier in flight: let it complete */
        while (win->sync_request_cnt > 0 && mpi_errno == MPI_SUCCESS)
            mpi_errno = MPID_Progress_test(NULL);
        MPIR_ERR_CHECK(mpi_errno);
        busy = ch3_window_busy(win);
        mpi_errno = MPIR_Allreduce(MPI_IN_PLACE, &busy, 1, MPI_INT, MPI_LOR, win->comm_ptr,
                                   &errflag);
        if (mpi_errno == MPI_SUCCESS && !errflag && busy)
            goto fn_exit;       /* ch3 fences, on every rank */
    }
    MPIR_ERR_CHECK(mpi_errno);
    MPIR_ERR_CHKANDJUMP(errflag, mpi_errno, MPI_ERR_OTHER, "**coll_fail");
    MPL_atomic_read_write_barrier();
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_rma_epochs_in_place, 1);
    *done = TRUE;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Exposure: each origin learns of it through its counter of this target's posts. */
int MPIDI_CH3I_Rma_post(MPIR_Win * win, MPIR_Group * group, int assert, int *done)
{
    struct MPIDI_CH3I_Win_heap *h = win->smheap;
    int mpi_errno = MPI_SUCCESS;
    int *origins;
    MPIR_CHKLMEM_DECL(1);

    *done = FALSE;
    if (!epochs_served(win))
        goto fn_exit;
    MPIR_CHKLMEM_MALLOC(origins, int *, group->size * sizeof(int), mpi_errno, "origins",
                        MPL_MEM_RMA);
    mpi_errno = window_ranks(win, group, origins);
    MPIR_ERR_CHECK(mpi_errno);
    h->exposure_size = group->size;
    MPL_atomic_read_write_barrier();    /* our window's stores before their accesses */
    if (!(assert & MPI_MODE_NOCHECK))
        signal_group(h, origins, group->size, post_counter);
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_rma_epochs_in_place, 1);
    *done = TRUE;
  fn_exit:
    MPIR_CHKLMEM_FREEALL();
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_CH3I_Rma_start(MPIR_Win * win, MPIR_Group * group, int assert, int *done)
{
    struct MPIDI_CH3I_Win_heap *h = win->smheap;
    int mpi_errno = MPI_SUCCESS;

    *done = FALSE;
    if (!epochs_served(win))
        goto fn_exit;
    mpi_errno = window_ranks(win, group, h->access_group);
    MPIR_ERR_CHECK(mpi_errno);
    h->access_size = group->size;
    if (!(assert & MPI_MODE_NOCHECK)) {
        mpi_errno = MPIDI_CH3I_Progress_wait_for(posts_arrived, h);
        MPIR_ERR_CHECK(mpi_errno);
        for (int i = 0; i < h->access_size; i++)
            h->posts_used[h->access_group[i]]++;
    }
    MPL_atomic_read_write_barrier();
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_rma_epochs_in_place, 1);
    *done = TRUE;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_CH3I_Rma_complete(MPIR_Win * win, int *done)
{
    struct MPIDI_CH3I_Win_heap *h = win->smheap;

    *done = FALSE;
    if (!epochs_served(win))
        return MPI_SUCCESS;
    MPL_atomic_read_write_barrier();    /* our accesses before the targets see them done */
    signal_group(h, h->access_group, h->access_size, complete_counter);
    h->access_size = 0;
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_rma_epochs_in_place, 1);
    *done = TRUE;
    return MPI_SUCCESS;
}

static void end_exposure(struct MPIDI_CH3I_Win_heap *h)
{
    h->completes_used += h->exposure_size;
    h->exposure_size = 0;
    MPL_atomic_read_write_barrier();    /* the origins' accesses before ours */
}

int MPIDI_CH3I_Rma_wait(MPIR_Win * win, int *done)
{
    struct MPIDI_CH3I_Win_heap *h = win->smheap;
    int mpi_errno = MPI_SUCCESS;

    *done = FALSE;
    if (!epochs_served(win))
        goto fn_exit;
    mpi_errno = MPIDI_CH3I_Progress_wait_for(completes_arrived, h);
    MPIR_ERR_CHECK(mpi_errno);
    end_exposure(h);
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_rma_epochs_in_place, 1);
    *done = TRUE;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_CH3I_Rma_test(MPIR_Win * win, int *flag, int *done)
{
    struct MPIDI_CH3I_Win_heap *h = win->smheap;
    int mpi_errno = MPI_SUCCESS;

    *done = FALSE;
    if (!epochs_served(win))
        goto fn_exit;
    mpi_errno = MPID_Progress_test(NULL);       /* our messages move meanwhile */
    MPIR_ERR_CHECK(mpi_errno);
    *flag = completes_arrived(h);
    if (*flag) {
        end_exposure(h);
        MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_rma_epochs_in_place, 1);
    }
    *done = TRUE;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

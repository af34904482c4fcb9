/*
 * ch3:smheap -- a target's lock word, held for ch3's lock holders where a window spans
 * nodes (rma/).
 *
 * Where a window spans nodes, origins of other nodes send ch3's lock packets, granted here
 * by ch3, while origins of this node take this rank's word themselves.  ch3 grants only
 * while this rank holds its word for ch3 (maint/patches/0016): taken in the mode of the
 * request that found it free, held while ch3 has holders, given back when its last holder
 * leaves.  While the word is not yet ours ch3 keeps its requests queued, and the progress
 * engine takes the word further (a progress hook), then has ch3 go through its queue.
 *
 * Such windows' words prefer readers, as ch3's own lock does: a reader enters unless a
 * writer is inside.  MPI_Win_lock_all holds the shared locks of its node's targets while
 * ch3 asks for those of the others, in no set order; with writers that keep later readers
 * out (phase-fair), a writer waiting at each of two nodes for the other node's lock_all
 * reader to leave would keep each lock_all from the lock it still needs.  Writers may wait
 * while readers come and go, as with ch3 alone.
 */

#include "smheap_rma_impl.h"
#include "mpidrma.h"            /* MPIDI_CH3I_Release_lock */

static struct MPIDI_CH3I_Win_heap *waiting_holds;       /* utlist, by next/prev */
static int holds_hook_id = -1;  /* a progress hook, active while holds wait */

static int poll_waiting_holds(int *made_progress);

/* With the first window that needs it, where an error can still be returned. */
int MPIDI_CH3I_Rma_register_holds_hook(void)
{
    if (holds_hook_id >= 0)
        return MPI_SUCCESS;
    return MPIR_Progress_hook_register(poll_waiting_holds, &holds_hook_id);
}

static void hold_wait(struct MPIDI_CH3I_Win_heap *h)
{
    if (waiting_holds == NULL)
        MPIR_Progress_hook_activate(holds_hook_id);
    h->hold_state = HOLD_WAITING;
    MPIDI_CH3I_Rma_announce_waiting(h->my_lock, h->my_rank);
    DL_APPEND(waiting_holds, h);
}

static void hold_stop_waiting(struct MPIDI_CH3I_Win_heap *h)
{
    MPIDI_CH3I_Rma_stop_waiting(h->my_lock, h->my_rank);
    DL_DELETE(waiting_holds, h);
    if (waiting_holds == NULL)
        MPIR_Progress_hook_deactivate(holds_hook_id);
    h->hold_state = HOLD_NONE;
}

/* MPIDI_CH3_WIN_LOCK_GRANT: may ch3 grant lock_type here now?  Its rules already agree:
 * it has no holder, or readers only and asks for one more. */
int MPIDI_CH3I_Win_lock_grant(MPIR_Win * win, int lock_type)
{
    struct MPIDI_CH3I_Win_heap *h = win->smheap;
    struct lock_attempt a;

    /* An origin of another node may ask as soon as its own node has made the window, while
     * this rank still sets up its part (and the node's origins may already take this
     * rank's word): ch3 queues the request until MPIDI_CH3I_Rma_grant_queued_locks. */
    if (!win->smheap_set_up)
        return FALSE;
    if (h == NULL || !h->locks_on_node)
        return TRUE;
    if (h->hold_state == HOLD_GRANTED) {
        /* one more of ch3's readers under our reader's hold; anything else waits for
         * ch3's holders to leave (ch3 should not ask) */
        if (lock_type != MPI_LOCK_SHARED || h->hold_held != READER)
            return FALSE;
    } else {
        MPIDI_CH3I_Rma_attempt_start(&a, h->my_lock, lock_type, FALSE);
        if (MPIDI_CH3I_Rma_attempt_advance(&a) != NULL) {
            h->hold_refused_at = a.refused_at;
            if (h->hold_state == HOLD_NONE)
                hold_wait(h);
            return FALSE;
        }
        if (h->hold_state == HOLD_WAITING)
            hold_stop_waiting(h);
        h->hold_held = a.held;
        h->hold_state = HOLD_GRANTED;
    }
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_rma_locks_for_packets, 1);
    return TRUE;
}

int MPIDI_CH3I_Rma_grant_queued_locks(MPIR_Win * win)
{
    win->smheap_set_up = TRUE;
    if (win->target_lock_queue_head == NULL)
        return MPI_SUCCESS;
    /* with no holder, ch3's release goes through its queue */
    return MPIDI_CH3I_Release_lock(win);
}

/* MPIDI_CH3_WIN_LOCK_RELEASED: ch3's last holder left. */
void MPIDI_CH3I_Win_lock_released(MPIR_Win * win)
{
    struct MPIDI_CH3I_Win_heap *h = win->smheap;

    if (h == NULL || h->hold_state != HOLD_GRANTED)
        return;
    MPIDI_CH3I_Rma_release_word(h, h->my_lock, h->hold_held, win->comm_ptr->local_size);
    h->hold_state = HOLD_NONE;
}

/* The progress hook while holds wait: where the word moved since it refused, ch3 goes
 * through its queue again (each request asking MPIDI_CH3I_Win_lock_grant). */
static int poll_waiting_holds(int *made_progress)
{
    struct MPIDI_CH3I_Win_heap *h, *tmp, *again = NULL;
    int mpi_errno = MPI_SUCCESS;

    DL_FOREACH_SAFE(waiting_holds, h, tmp) {
        uint32_t now = MPL_atomic_acquire_load_uint32(&h->my_lock->readers_in);

        if (now == h->hold_refused_at)
            continue;
        hold_stop_waiting(h);
        mpi_errno = MPIDI_CH3I_Release_lock(h->win);
        MPIR_ERR_CHECK(mpi_errno);
        if (h->hold_state == HOLD_GRANTED) {
            *made_progress = TRUE;
        } else if (h->hold_state == HOLD_NONE && h->win->target_lock_queue_head != NULL) {
            /* ch3 asked for none of its requests (their data still on the way, or its walk
             * already under way higher up, which then only counted our call): ask at the
             * next poll again */
            h->hold_state = HOLD_WAITING;
            h->hold_refused_at = ~now;
            MPIDI_CH3I_Rma_announce_waiting(h->my_lock, h->my_rank);
            DL_APPEND(again, h);
        }
    }
    if (again != NULL) {
        if (waiting_holds == NULL)
            MPIR_Progress_hook_activate(holds_hook_id);
        DL_CONCAT(waiting_holds, again);
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

void MPIDI_CH3I_Rma_hold_give_up(struct MPIDI_CH3I_Win_heap *h, int nranks)
{
    if (h->hold_state == HOLD_WAITING)
        hold_stop_waiting(h);
    else if (h->hold_state == HOLD_GRANTED)
        MPIDI_CH3I_Rma_release_word(h, h->my_lock, h->hold_held, nranks);
    h->hold_state = HOLD_NONE;
}

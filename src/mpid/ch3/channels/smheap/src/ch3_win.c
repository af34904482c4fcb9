/*
 * ch3:smheap -- one-sided communication through the shared heap.
 *
 * Every address of the shared heap means the same memory in all ranks of the node, so a
 * window whose memory lies in it can be read and written in place by any of them, however
 * it was made.  Two things are added to ch3's RMA here:
 *
 * - Windows of MPI_Win_create whose memory, on every rank of a node, lies in the heap are
 *   made shared-memory windows, as ch3:nemesis makes those of MPI_Win_allocate: ch3 then
 *   does the operations of the node's origins in place (its mpid_rma_shm.h), accumulates
 *   under one process-shared mutex kept in the heap.  Dynamic windows whose ranks all
 *   share the heap are made shared too, their base address 0 (MPI_BOTTOM) everywhere: an
 *   operation whose target bytes lie in the heap is done in place, any other goes to the
 *   target as packets (MPIDI_CH3_RMA_TARGET_IN_PLACE, decided operation by operation).
 * - Passive-target locks of windows whose ranks all share the heap are lock words in the
 *   heap, one per target, which origins take themselves (ch3's window hooks lock, unlock,
 *   lock_all, unlock_all; maint/patches/0009): MPI_Win_lock, the operations and
 *   MPI_Win_unlock complete while the target computes without calling MPI.  Where a
 *   window spans nodes, the node's origins take the words of the node's targets so, and
 *   a target grants ch3's lock packets from other nodes only while it holds its own word
 *   for them (maint/patches/0016).
 * - Active-target synchronization of windows whose every operation is done in place (all
 *   ranks share the heap, the window is in shared memory, not dynamic) goes through the
 *   heap too (hooks fence, post, start, complete, wait, test; maint/patches/0011): a fence
 *   is the shared-heap barrier; post and complete add one to a counter of each partner,
 *   start and wait wait for their partners' counters to move.
 *
 * A lock word is a phase-fair reader-writer ticket lock (Brandenburg and Anderson, "Spin-
 * based reader-writer synchronization for multiprocessor real-time systems", 2010):
 * writers are served in ticket order, and readers wait for at most one writer, so neither
 * exclusive nor shared lockers starve.  A waiting origin keeps its own messages moving and
 * may sleep; whoever releases rings the doorbells of the ranks that wait on that word.
 */

#include "mpidi_ch3_impl.h"
#include "mpidrma.h"          /* ch3's RMA state, read by the fence */
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
        ch3:smheap: windows of MPI_Win_create whose memory lies in the shared heap are
        accessed in place by the node's origins (where the window's ranks all share the
        heap, the targets whose memory is in it; else where it is so on every rank of the
        node), and passive-target locks are taken in the heap, without the target: on
        every target where the window's ranks all share the heap, on the node's targets
        where it spans nodes (those of other nodes send ch3's lock packets, which the
        target grants under the same lock word).  0 leaves both to ch3 (packets the
        target answers from its progress engine).

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

/* Phase-fair ticket lock: readers_in counts arriving readers in units of READER and holds
 * the writer's bits below them; readers_out counts leaving readers; writers take tickets
 * from writers_in and are served when writers_out reaches theirs. */
#define READER          0x100u
#define WRITER_BITS     0x3u
#define WRITER_PRESENT  0x2u
#define WRITER_PHASE    0x1u

struct smheap_rma_lock {
    MPL_atomic_uint32_t readers_in;
    MPL_atomic_uint32_t readers_out;
    MPL_atomic_uint32_t writers_in;
    MPL_atomic_uint32_t writers_out;
    MPL_atomic_int_t nwaiting;  /* ranks that may sleep on this word */
    MPL_atomic_int_t waiting[]; /* by rank of the window's communicator */
};

/* The counters of post-start-complete-wait epochs, one set per rank, in its heap slice.
 * They only grow; each rank remembers how much of them its own calls have consumed. */
struct smheap_rma_epochs {
    MPL_atomic_uint32_t completes;      /* MPI_Win_complete of origins to this rank */
    MPL_atomic_uint32_t posts[];        /* by target: its MPI_Win_post to this rank */
};

#define HELD_EXCLUSIVE  (1u << 31)

struct lock_wait {
    struct smheap_rma_lock *lock;
    uint32_t ticket;
    uint32_t phase;
};

/* One taking of a lock word, in steps: an origin waits between them, a target taking the
 * word for ch3's holders polls them from its progress engine. */
enum lock_step {
    STEP_READER_WAITS, STEP_WRITER_TURN, STEP_WRITER_DRAINS,    /* phase-fair */
    STEP_TRY,                   /* reader-preferring: until the word's state lets us in */
    STEP_HELD
};

struct lock_attempt {
    struct lock_wait w;
    enum lock_step step;
    int exclusive;
    uint32_t held;              /* once held: READER, or HELD_EXCLUSIVE (with the writer's
                                 * bits, phase-fair) */
    uint32_t refused_at;        /* reader-preferring: the state of the last failed try */
};

/* This rank's word, held for ch3's lock holders (windows that span nodes). */
enum ch3_hold_state {
    HOLD_NONE,                  /* the word is not held for ch3 */
    HOLD_WAITING,               /* ch3 queued a request the word refused: polled */
    HOLD_GRANTED                /* ch3 granted a lock under it */
};

/* What this rank keeps of a window served here. */
struct MPIDI_CH3I_Win_heap {
    MPIR_Win *win;
    int heap_memory;            /* made a shared-memory window here: the mutex is ours */
    int locks_in_place;         /* all ranks share the heap: every lock taken in it */
    int locks_on_node;          /* the window spans nodes: its node's locks taken in it */
    int epochs_in_place;        /* fence and PSCW through the heap */
    struct smheap_rma_lock *my_lock;    /* this rank's word, in its heap slice */
    struct smheap_rma_lock **locks;     /* by rank: each target's word */
    struct smheap_rma_epochs *my_epochs;        /* this rank's counters, in its heap slice */
    struct smheap_rma_epochs **epochs;  /* by rank */
    uint32_t *held;             /* by rank: 0, READER, or the writer's bits | 1 << 31 */
    int *node_ranks;            /* by rank: index among the node's ranks, for wake-ups */
    uint32_t *posts_used;       /* by target: its posts that this rank's starts consumed */
    uint32_t completes_used;    /* completes that this rank's waits consumed */
    int *access_group;          /* ranks of this rank's access epoch (start to complete) */
    int access_size;
    int exposure_size;          /* origins of this rank's exposure epoch (post to wait) */
    int *wake;                  /* room for the node ranks of a group */
    int my_rank;                /* in the window */
    /* this rank's word held for ch3's lock holders (locks_on_node) */
    enum ch3_hold_state hold_state;
    uint32_t hold_held;         /* READER or HELD_EXCLUSIVE */
    uint32_t hold_refused_at;   /* the word's state when it last refused ch3 */
    struct MPIDI_CH3I_Win_heap *next, *prev;    /* in waiting_holds */
};

static MPIDI_CH3U_Win_fns_t ch3_fns;    /* what ch3 and nemesis's code filled in */
static MPIDI_CH3U_Win_hooks_t ch3_hooks;

/* ------------------------------------------------------------------------------------ */
/* The lock word                                                                          */

static int reader_may_enter(void *arg)
{
    struct lock_wait *w = arg;

    return (MPL_atomic_acquire_load_uint32(&w->lock->readers_in) & WRITER_BITS) != w->phase;
}

static int writer_turn(void *arg)
{
    struct lock_wait *w = arg;

    return MPL_atomic_acquire_load_uint32(&w->lock->writers_out) == w->ticket;
}

static int readers_gone(void *arg)
{
    struct lock_wait *w = arg;

    return MPL_atomic_acquire_load_uint32(&w->lock->readers_out) == w->ticket;
}

/* The reader-preferring word of a window that spans nodes (see "The target's word, taken
 * for ch3's lock holders"): readers_in alone, the count of readers inside, or
 * PREFERRING_WRITER while a writer is; readers enter unless a writer is inside. */
#define PREFERRING_WRITER (1u << 31)

static int preferring_reader_may_try(void *arg)
{
    struct lock_wait *w = arg;

    return !(MPL_atomic_acquire_load_uint32(&w->lock->readers_in) & PREFERRING_WRITER);
}

static int preferring_writer_may_try(void *arg)
{
    struct lock_wait *w = arg;

    return MPL_atomic_acquire_load_uint32(&w->lock->readers_in) == 0;
}

/* One try; on failure *seen is the state that refused us (refusal depends on it alone: a
 * reader fails only with a writer inside, a writer with anyone inside). */
static int preferring_try(struct lock_attempt *a, uint32_t * seen)
{
    MPL_atomic_uint32_t *state = &a->w.lock->readers_in;
    uint32_t now;

    if (a->exclusive)
        return (*seen = MPL_atomic_cas_uint32(state, 0, PREFERRING_WRITER)) == 0;
    for (now = MPL_atomic_acquire_load_uint32(state); !(now & PREFERRING_WRITER);) {
        uint32_t was = MPL_atomic_cas_uint32(state, now, now + 1);

        if (was == now)
            return TRUE;
        now = was;      /* another reader came or went: try again */
    }
    *seen = now;
    return FALSE;
}

static void attempt_start(struct lock_attempt *a, struct smheap_rma_lock *lock, int lock_type,
                          int fair)
{
    a->w.lock = lock;
    a->exclusive = lock_type == MPI_LOCK_EXCLUSIVE;
    if (!fair) {
        a->held = a->exclusive ? HELD_EXCLUSIVE : READER;
        a->step = STEP_TRY;
    } else if (lock_type == MPI_LOCK_SHARED) {
        a->w.phase = MPL_atomic_fetch_add_uint32(&lock->readers_in, READER) & WRITER_BITS;
        a->held = READER;
        /* a writer holds or waits: enter when its phase ends */
        a->step = a->w.phase ? STEP_READER_WAITS : STEP_HELD;
    } else {
        a->w.ticket = MPL_atomic_fetch_add_uint32(&lock->writers_in, 1);
        a->step = STEP_WRITER_TURN;
    }
}

/* Take the attempt as far as it goes now; returns what it waits for, or NULL once held. */
static int (*attempt_advance(struct lock_attempt *a)) (void *)
{
    uint32_t bits;

    for (;;) {
        switch (a->step) {
        case STEP_READER_WAITS:
            if (!reader_may_enter(&a->w))
                return reader_may_enter;
            a->step = STEP_HELD;
            break;
        case STEP_WRITER_TURN:
            if (!writer_turn(&a->w))
                return writer_turn;
            /* the readers that came before us must leave; later ones wait for our phase */
            bits = WRITER_PRESENT | (a->w.ticket & WRITER_PHASE);
            a->w.ticket = MPL_atomic_fetch_add_uint32(&a->w.lock->readers_in, bits) &
                ~WRITER_BITS;
            a->held = HELD_EXCLUSIVE | bits;
            a->step = STEP_WRITER_DRAINS;
            break;
        case STEP_WRITER_DRAINS:
            if (!readers_gone(&a->w))
                return readers_gone;
            a->step = STEP_HELD;
            break;
        case STEP_TRY:
            if (!preferring_try(a, &a->refused_at))
                return a->exclusive ? preferring_writer_may_try : preferring_reader_may_try;
            a->step = STEP_HELD;
            break;
        case STEP_HELD:
            return NULL;
        }
    }
}

/* Those that wait on a word may sleep; releasers ring them.  Counts, not flags: a rank may
 * wait for a lock as an origin while its target side waits on its own word for ch3. */
static void announce_waiting(struct smheap_rma_lock *lock, int rank)
{
    MPL_atomic_fetch_add_int(&lock->waiting[rank], 1);
    MPL_atomic_fetch_add_int(&lock->nwaiting, 1);
    MPL_atomic_read_write_barrier();    /* a releaser sees us, or we see its release */
}

static void stop_waiting(struct smheap_rma_lock *lock, int rank)
{
    MPL_atomic_fetch_sub_int(&lock->nwaiting, 1);
    MPL_atomic_fetch_sub_int(&lock->waiting[rank], 1);
}

/* Take a word as any blocking MPI call waits. */
static int take_word(struct smheap_rma_lock *lock, int lock_type, int fair, int me,
                     uint32_t * held)
{
    struct lock_attempt a;
    int (*ready) (void *);
    int mpi_errno = MPI_SUCCESS;

    attempt_start(&a, lock, lock_type, fair);
    while ((ready = attempt_advance(&a)) != NULL) {
        announce_waiting(lock, me);
        mpi_errno = MPIDI_CH3I_Progress_wait_for(ready, &a.w);
        stop_waiting(lock, me);
        MPIR_ERR_CHECK(mpi_errno);
    }
    *held = a.held;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* After a release: ring those that may sleep on the word. */
static void wake_waiters(struct MPIDI_CH3I_Win_heap *h, struct smheap_rma_lock *lock,
                         int nranks)
{
    int r, n = 0, ranks[64];

    MPL_atomic_read_write_barrier();
    if (MPL_atomic_acquire_load_int(&lock->nwaiting) == 0)
        return;
    for (r = 0; r < nranks; r++) {
        if (!MPL_atomic_acquire_load_int(&lock->waiting[r]))
            continue;
        ranks[n++] = h->node_ranks[r];
        if (n == 64) {
            MPIDI_CH3I_Smheap_wake_node_ranks(ranks, n);
            n = 0;
        }
    }
    if (n)
        MPIDI_CH3I_Smheap_wake_node_ranks(ranks, n);
}

static void release_word(struct MPIDI_CH3I_Win_heap *h, struct smheap_rma_lock *lock,
                         uint32_t held, int nranks)
{
    if (h->locks_on_node) {
        if (held == READER)
            MPL_atomic_fetch_sub_uint32(&lock->readers_in, 1);
        else
            MPL_atomic_release_store_uint32(&lock->readers_in, 0);
    } else if (held == READER) {
        MPL_atomic_fetch_add_uint32(&lock->readers_out, READER);
    } else {
        MPL_atomic_fetch_sub_uint32(&lock->readers_in, held & WRITER_BITS);
        MPL_atomic_fetch_add_uint32(&lock->writers_out, 1);
    }
    wake_waiters(h, lock, nranks);
}

static int lock_target(struct MPIDI_CH3I_Win_heap *h, int target, int lock_type)
{
    return take_word(h->locks[target], lock_type, !h->locks_on_node, h->my_rank,
                     &h->held[target]);
}

static void release(struct MPIDI_CH3I_Win_heap *h, int target, int nranks)
{
    release_word(h, h->locks[target], h->held[target], nranks);
    h->held[target] = 0;
}

/* Can this rank take target's word itself?  All targets where every rank of the window
 * shares the heap; where the window spans nodes, those of this rank's node. */
static int takes_lock_of(struct MPIDI_CH3I_Win_heap *h, int target)
{
    return h->locks_in_place || (h->locks_on_node && h->node_ranks[target] >= 0);
}

/* ------------------------------------------------------------------------------------ */
/* ch3's passive-target hooks                                                             */

static int win_lock(MPIR_Win * win, int dest, int lock_type, int *taken)
{
    struct MPIDI_CH3I_Win_heap *h = win->smheap;
    int mpi_errno = MPI_SUCCESS;

    *taken = FALSE;
    if (h == NULL || !takes_lock_of(h, dest))
        goto fn_exit;
    mpi_errno = lock_target(h, dest, lock_type);
    MPIR_ERR_CHECK(mpi_errno);
    MPL_atomic_read_write_barrier();    /* the epoch's accesses come after the lock */
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_rma_locks_in_place, 1);
    *taken = TRUE;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int win_unlock(MPIR_Win * win, int dest)
{
    struct MPIDI_CH3I_Win_heap *h = win->smheap;

    if (h != NULL && h->held != NULL && h->held[dest]) {
        MPL_atomic_read_write_barrier();        /* the epoch's accesses come first */
        release(h, dest, win->comm_ptr->local_size);
    }
    return MPI_SUCCESS;
}

static int win_lock_all(MPIR_Win * win, int *taken)
{
    struct MPIDI_CH3I_Win_heap *h = win->smheap;
    int mpi_errno = MPI_SUCCESS, r, n = win->comm_ptr->local_size, locked = 0;

    *taken = FALSE;
    if (h == NULL || !(h->locks_in_place || h->locks_on_node))
        goto fn_exit;
    /* In rank order on every origin.  A reader that comes after a waiting writer waits for
     * it, so two origins taking their shared locks in different orders could each hold
     * what the other's writer waits for; in one order, whoever holds a lock waits only for
     * higher ranks, and the waits cannot close a circle. */
    for (r = 0; r < n; r++) {
        if (!takes_lock_of(h, r))
            continue;
        mpi_errno = lock_target(h, r, MPI_LOCK_SHARED);
        MPIR_ERR_CHECK(mpi_errno);
        locked++;
    }
    MPL_atomic_read_write_barrier();
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_rma_locks_in_place, locked);
    /* ch3 locks the targets of other nodes itself, with its packets */
    *taken = h->locks_in_place ? TRUE : MPIDI_CH3_LOCKS_TAKEN_ON_NODE;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int win_unlock_all(MPIR_Win * win)
{
    struct MPIDI_CH3I_Win_heap *h = win->smheap;
    int r, n = win->comm_ptr->local_size;

    if (h == NULL || h->held == NULL)
        return MPI_SUCCESS;
    MPL_atomic_read_write_barrier();
    for (r = 0; r < n; r++)
        if (h->held[r])
            release(h, r, n);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------------------------------ */
/* The target's word, taken for ch3's lock holders (windows that span nodes)              */

/* Where a window spans nodes, origins of other nodes send ch3's lock packets, granted here
 * by ch3, while origins of this node take this rank's word themselves.  ch3 grants only
 * while this rank holds its word for ch3 (maint/patches/0016): taken in the mode of the
 * request that found it free, held while ch3 has holders, given back when its last holder
 * leaves.  While the word is not yet ours ch3 keeps its requests queued, and the progress
 * engine takes the word further (a progress hook), then has ch3 go through its
 * queue.
 *
 * Such windows' words prefer readers, as ch3's own lock does: a reader enters unless a
 * writer is inside.  MPI_Win_lock_all holds the shared locks of its node's targets while
 * ch3 asks for those of the others, in no set order; with writers that keep later readers
 * out (phase-fair), a writer waiting at each of two nodes for the other node's lock_all
 * reader to leave would keep each lock_all from the lock it still needs.  Writers may wait
 * while readers come and go, as with ch3 alone. */
static struct MPIDI_CH3I_Win_heap *waiting_holds;       /* utlist, by next/prev */
static int holds_hook_id = -1;  /* a progress hook, active while holds wait */

static int poll_waiting_holds(int *made_progress);

/* With the first window that needs it, where an error can still be returned. */
static int register_holds_hook(void)
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
    announce_waiting(h->my_lock, h->my_rank);
    DL_APPEND(waiting_holds, h);
}

static void hold_stop_waiting(struct MPIDI_CH3I_Win_heap *h)
{
    stop_waiting(h->my_lock, h->my_rank);
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

    if (h == NULL || !h->locks_on_node)
        return TRUE;
    if (h->hold_state == HOLD_GRANTED) {
        /* one more of ch3's readers under our reader's hold; anything else waits for
         * ch3's holders to leave (ch3 should not ask) */
        if (lock_type != MPI_LOCK_SHARED || h->hold_held != READER)
            return FALSE;
    } else {
        attempt_start(&a, h->my_lock, lock_type, FALSE);
        if (attempt_advance(&a) != NULL) {
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

/* MPIDI_CH3_WIN_LOCK_RELEASED: ch3's last holder left. */
void MPIDI_CH3I_Win_lock_released(MPIR_Win * win)
{
    struct MPIDI_CH3I_Win_heap *h = win->smheap;

    if (h == NULL || h->hold_state != HOLD_GRANTED)
        return;
    release_word(h, h->my_lock, h->hold_held, win->comm_ptr->local_size);
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
            announce_waiting(h->my_lock, h->my_rank);
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

/* ------------------------------------------------------------------------------------ */
/* ch3's active-target hooks                                                              */

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
static int win_fence(MPIR_Win * win, int assert, int *done)
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
static int win_post(MPIR_Win * win, MPIR_Group * group, int assert, int *done)
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

static int win_start(MPIR_Win * win, MPIR_Group * group, int assert, int *done)
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

static int win_complete(MPIR_Win * win, int *done)
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

static int win_wait(MPIR_Win * win, int *done)
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

static int win_test(MPIR_Win * win, int *flag, int *done)
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

/* ------------------------------------------------------------------------------------ */
/* Windows                                                                                */

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
        mpi_errno = register_holds_hook();
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

/* How much of the memory of this node's ranks, in a window of MPI_Win_create, is in the
 * heap (the same answer on all of them). */
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

/* After ch3 made a window of any flavour: what the heap adds to it.  Collective. */
static int serve_window(MPIR_Win * win)
{
    struct MPIDI_CH3I_Win_heap *h;
    int mpi_errno = MPI_SUCCESS;

    if (!MPIR_CVAR_CH3_SMHEAP_RMA || !MPIDI_CH3I_Smheap_heap_shared)
        goto fn_exit;
    h = MPL_calloc(1, sizeof(*h), MPL_MEM_RMA);
    MPIR_ERR_CHKANDJUMP(h == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    h->my_rank = win->comm_ptr->rank;
    h->win = win;
    win->smheap = h;
    if (win->create_flavor == MPI_WIN_FLAVOR_CREATE && !win->shm_allocated &&
        node_memory(win) == MEMORY_IN_HEAP_ALL) {
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
            (win->create_flavor == MPI_WIN_FLAVOR_DYNAMIC ||
             win->create_flavor == MPI_WIN_FLAVOR_CREATE)) {
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

static int win_create(void *base, MPI_Aint size, int disp_unit, MPIR_Info * info,
                      MPIR_Comm * comm, MPIR_Win ** win)
{
    int mpi_errno = ch3_fns.create(base, size, disp_unit, info, comm, win);

    return mpi_errno ? mpi_errno : serve_window(*win);
}

static int win_allocate(MPI_Aint size, int disp_unit, MPIR_Info * info, MPIR_Comm * comm,
                        void *baseptr, MPIR_Win ** win)
{
    int mpi_errno = ch3_fns.allocate(size, disp_unit, info, comm, baseptr, win);

    return mpi_errno ? mpi_errno : serve_window(*win);
}

static int win_allocate_shared(MPI_Aint size, int disp_unit, MPIR_Info * info,
                               MPIR_Comm * comm, void *baseptr, MPIR_Win ** win)
{
    int mpi_errno = ch3_fns.allocate_shared(size, disp_unit, info, comm, baseptr, win);

    return mpi_errno ? mpi_errno : serve_window(*win);
}

static int win_create_dynamic(MPIR_Info * info, MPIR_Comm * comm, MPIR_Win ** win)
{
    int mpi_errno = ch3_fns.create_dynamic(info, comm, win);

    return mpi_errno ? mpi_errno : serve_window(*win);
}

static int win_init(MPI_Aint size, int disp_unit, int create_flavor, int model,
                    MPIR_Info * info, MPIR_Comm * comm, MPIR_Win ** win)
{
    (*win)->smheap = NULL;
    (*win)->smheap_in_place = NULL;
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
    /* ch3 let no one hold a lock here past its barrier: nothing should be held for it */
    if (h->hold_state == HOLD_WAITING)
        hold_stop_waiting(h);
    else if (h->hold_state == HOLD_GRANTED)
        release_word(h, h->my_lock, h->hold_held, (*win)->comm_ptr->local_size);
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
    MPIDI_CH3U_Win_hooks.win_init = win_init;
    MPIDI_CH3U_Win_hooks.win_free = win_free;
    MPIDI_CH3U_Win_hooks.lock = win_lock;
    MPIDI_CH3U_Win_hooks.unlock = win_unlock;
    MPIDI_CH3U_Win_hooks.lock_all = win_lock_all;
    MPIDI_CH3U_Win_hooks.unlock_all = win_unlock_all;
    MPIDI_CH3U_Win_hooks.fence = win_fence;
    MPIDI_CH3U_Win_hooks.post = win_post;
    MPIDI_CH3U_Win_hooks.start = win_start;
    MPIDI_CH3U_Win_hooks.complete = win_complete;
    MPIDI_CH3U_Win_hooks.wait = win_wait;
    MPIDI_CH3U_Win_hooks.test = win_test;
}

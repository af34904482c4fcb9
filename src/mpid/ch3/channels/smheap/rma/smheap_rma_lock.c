/*
 * ch3:smheap -- the lock words of windows in the shared heap, and ch3's passive-target
 * hooks that take them (rma/).
 *
 * A lock word is a phase-fair reader-writer ticket lock (Brandenburg and Anderson, "Spin-
 * based reader-writer synchronization for multiprocessor real-time systems", 2010):
 * writers are served in ticket order, and readers wait for at most one writer, so neither
 * exclusive nor shared lockers starve.  The words of windows that span nodes prefer
 * readers instead (smheap_rma_hold.c says why).  A waiting origin keeps its own messages
 * moving and may sleep; whoever releases rings the doorbells of the ranks that wait on
 * that word.
 */

#include "smheap_rma_impl.h"

/* The phase-fair word: readers_in counts arriving readers in units of READER and holds the
 * writer's bits below them; readers_out counts leaving readers; writers take tickets from
 * writers_in and are served when writers_out reaches theirs. */
#define WRITER_BITS     0x3u
#define WRITER_PRESENT  0x2u
#define WRITER_PHASE    0x1u

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

/* The reader-preferring word of a window that spans nodes (smheap_rma_hold.c says why):
 * readers_in alone, the count of readers inside, or PREFERRING_WRITER while a writer is;
 * readers enter unless a writer is inside. */
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

void MPIDI_CH3I_Rma_attempt_start(struct lock_attempt *a, struct smheap_rma_lock *lock,
                                  int lock_type, int fair)
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
rma_ready_fn MPIDI_CH3I_Rma_attempt_advance(struct lock_attempt *a)
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
void MPIDI_CH3I_Rma_announce_waiting(struct smheap_rma_lock *lock, int rank)
{
    MPL_atomic_fetch_add_int(&lock->waiting[rank], 1);
    MPL_atomic_fetch_add_int(&lock->nwaiting, 1);
    MPL_atomic_read_write_barrier();    /* a releaser sees us, or we see its release */
}

void MPIDI_CH3I_Rma_stop_waiting(struct smheap_rma_lock *lock, int rank)
{
    MPL_atomic_fetch_sub_int(&lock->nwaiting, 1);
    MPL_atomic_fetch_sub_int(&lock->waiting[rank], 1);
}

/* Take a word as any blocking MPI call waits. */
static int take_word(struct smheap_rma_lock *lock, int lock_type, int fair, int me,
                     uint32_t * held)
{
    struct lock_attempt a;
    rma_ready_fn ready;
    int mpi_errno = MPI_SUCCESS;

    MPIDI_CH3I_Rma_attempt_start(&a, lock, lock_type, fair);
    while ((ready = MPIDI_CH3I_Rma_attempt_advance(&a)) != NULL) {
        MPIDI_CH3I_Rma_announce_waiting(lock, me);
        mpi_errno = MPIDI_CH3I_Progress_wait_for(ready, &a.w);
        MPIDI_CH3I_Rma_stop_waiting(lock, me);
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

void MPIDI_CH3I_Rma_release_word(struct MPIDI_CH3I_Win_heap *h, struct smheap_rma_lock *lock,
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
    MPIDI_CH3I_Rma_release_word(h, h->locks[target], h->held[target], nranks);
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

int MPIDI_CH3I_Rma_lock(MPIR_Win * win, int dest, int lock_type, int *taken)
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

int MPIDI_CH3I_Rma_unlock(MPIR_Win * win, int dest)
{
    struct MPIDI_CH3I_Win_heap *h = win->smheap;

    if (h != NULL && h->held != NULL && h->held[dest]) {
        MPL_atomic_read_write_barrier();        /* the epoch's accesses come first */
        release(h, dest, win->comm_ptr->local_size);
    }
    return MPI_SUCCESS;
}

int MPIDI_CH3I_Rma_lock_all(MPIR_Win * win, int *taken)
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

int MPIDI_CH3I_Rma_unlock_all(MPIR_Win * win)
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

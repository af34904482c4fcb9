/*
 * ch3:smheap -- the progress engine: drain the inbox rings into ch3's packet handlers,
 * push queued sends, and, when there is nothing to do, spin briefly and then sleep on the
 * rank's doorbell so that jobs with more ranks than cores do not starve each other.
 */

#include "mpidi_ch3_impl.h"
#include <sched.h>
#include <fcntl.h>
#include <unistd.h>

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_CH3_SMHEAP_SPIN_POLLS
      category    : CH3
      type        : int
      default     : -1
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        ch3:smheap: how many times a rank waiting for a message or a collective polls
        before it starts yielding the CPU.  Larger values lower latency when every rank
        has a core of its own; spinning only delays the peer it waits for when the ranks
        outnumber their CPUs.  -1 chooses: spin for up to 1 ms, or not at all when the
        node's ranks outnumber the CPUs their affinity masks allow between them; and a
        wait idle for 10 us sleeps at once when more threads than the machine has CPUs
        have stayed runnable for a while (the application's own threads, say).

    - name        : MPIR_CVAR_CH3_SMHEAP_YIELD_POLLS
      category    : CH3
      type        : int
      default     : 20
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        ch3:smheap: after spinning, how many times a waiting rank yields the CPU
        (sched_yield) between polls before it sleeps until a peer wakes it.  Negative
        values count as 0.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

static MPIDI_VC_t **peer_vcs;   /* [node ranks], NULL for ourselves */
static int recv_nesting;        /* a packet handler re-entered progress */
static int next_peer;           /* round-robin start of the inbox scan */

/* A sleeping rank wakes up on its own after this long even if no peer rang its doorbell.
 * That bounds the cost of a wake-up we did not foresee (a progress hook with work outside
 * the rings, say); a correct doorbell makes it irrelevant. */
#define SMHEAP_SLEEP_NSEC (10 * 1000 * 1000)

/* How long a rank with a CPU of its own spins before it yields.  A sleep costs far more
 * than its system calls on a virtual machine, whose idle CPU goes back to the host; where
 * the host takes a CPU away for short spells many times a second, a spin much shorter than
 * this ends in a sleep at every such spell and slows even a ping-pong down (figures:
 * doc/p2p.md).  A time, not a count of polls: a poll costs more with more peers to look
 * at. */
#define SMHEAP_SPIN_NSEC_ALONE (1000 * 1000L)
#define SMHEAP_SPIN_UNBOUNDED (INT_MAX / 2)    /* polls: the spin ends by time */

/* A job that spans nodes looks at its sockets every this many polls (a poll() system call
 * each time), and always before it sleeps; right after an event, at the next poll.  A rank
 * alone on its node has nothing else to look at and looks at every poll, but not while a
 * message's data is partly read: a poll() at every poll then keeps the receiver in the
 * kernel, reading the data in small pieces, and costs bandwidth (figures: doc/p2p.md).
 * nemesis's tcp module looks every 128. */
#define SOCK_POLL_INTERVAL 16
static int sock_ticks;

static int sock_poll_interval(void)
{
    if (smheap_queue.nranks == 1 && !MPIDI_CH3I_Link_active &&
        !MPIDI_CH3I_Net_reading_data())
        return 1;
    return SOCK_POLL_INTERVAL;
}


/* ------------------------------------------------------------------------------------ */
/* Receiving                                                                            */

/* Senders whose cells we released since we last looked: one of them may be asleep waiting
 * for room (node ranks; each appears at most once, see wake_owed_senders). */
static int *owed_wake;
static int n_owed_wake;

/* Wake the senders we made room for, at the start of the poll after the one that received.
 * Waking takes a fence; taken at once, it would sit between a message's arrival and its
 * receiver's return to the caller, where every nanosecond counts for short messages.  A
 * sender asleep for room meanwhile is woken by our next poll, or by its sleep's time-out
 * (SMHEAP_SLEEP_NSEC) if we stay out of MPI longer.  The list is emptied before every
 * scan of the inbox, which adds each peer at most once. */
static void wake_owed_senders(void)
{
    if (n_owed_wake > 0) {
        MPIDI_CH3I_Smheap_wake_ranks(owed_wake, n_owed_wake);
        n_owed_wake = 0;
    }
}

/* Consume cells from the inbound rings, the links' first, then the node segment's, one
 * peer after another, up to a ring's worth from each.  Stops after a cell that completes a
 * request: the caller may be waiting for exactly that one, and the remaining peers come
 * first in the next scan (the starting peer rotates). */
static int poll_inbox(int *made_progress)
{
    int mpi_errno = MPI_SUCCESS;
    int nranks = smheap_queue.nranks;
    int completions = MPIDI_CH3I_Completion_count();
    int i;

    /* a packet handler that calls back into progress must not receive: the cell it
     * came from has not been released yet */
    if (recv_nesting)
        return MPI_SUCCESS;
    recv_nesting = 1;

    if (MPIDI_CH3I_Link_active) {
        mpi_errno = MPIDI_CH3I_Link_poll(made_progress);
        MPIR_ERR_CHECK(mpi_errno);
    }

    for (i = 0; i < nranks; i++) {
        int peer = next_peer + i < nranks ? next_peer + i : next_peer + i - nranks;
        MPIDI_VC_t *vc = peer_vcs[peer];
        int budget = smheap_queue.geom.cells;
        smheap_cell_t *cell;

        if (vc == NULL || (cell = smheap_ring_peek(&vc->ch.in, &smheap_queue.geom)) == NULL)
            continue;
        /* a peer that never spoke to us has an inactive VC; ch3 expects it active */
        MPIDI_PG_Get_vc_set_active(MPIDI_Process.my_pg, vc->pg_rank, &vc);
        for (; cell != NULL && budget-- > 0;
             cell = smheap_ring_peek(&vc->ch.in, &smheap_queue.geom)) {
            smheap_ring_take_ack(&vc->ch.out, smheap_cell_ack(cell));
            mpi_errno = MPIDI_CH3I_Receive_cell(vc, cell);
            smheap_ring_release(&vc->ch.in);
            MPIR_ERR_CHECK(mpi_errno);
            MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_cells_received, 1);
            *made_progress = TRUE;
            if (MPIDI_CH3I_Completion_count() != completions)
                break;
        }
        owed_wake[n_owed_wake++] = peer;
        if (MPIDI_CH3I_Completion_count() != completions)
            break;
    }
    if (++next_peer == nranks)
        next_peer = 0;

  fn_exit:
    recv_nesting = 0;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* ------------------------------------------------------------------------------------ */
/* Sending                                                                              */

/* A process of another job may connect to us once our card was handed out (a port, or
 * our job's connection strings sent to a job we connected to: MPIDI_CH3I_Link_active).
 * Nothing rings us for it: look at the listeners now and then, or now if `now`.  The
 * socket one matters only while no socket is in use (then the sockets are polled anyway). */
static int look_for_connections(int now)
{
    int mpi_errno, looked;

    mpi_errno = MPIDI_CH3I_Link_poll_listener(now, &looked);
    if (mpi_errno == MPI_SUCCESS && looked)
        mpi_errno = MPIDI_CH3I_Net_poll_listener();
    return mpi_errno;
}

/* One look at everything that may need us.  The inbox comes last, so that a caller whose
 * request completes there goes back to it at once. */
static int poll_once(int *made_progress)
{
    int mpi_errno = MPI_SUCCESS;
    int hook_progress = FALSE;

    wake_owed_senders();
    if (MPIDI_CH3I_Pending_vcs) {
        mpi_errno = MPIDI_CH3I_Send_pending(made_progress);
        MPIR_ERR_CHECK(mpi_errno);
    }
    if (MPIDI_CH3I_Link_active && !recv_nesting) {
        MPIDI_CH3I_Link_reap();
        mpi_errno = look_for_connections(FALSE);
        MPIR_ERR_CHECK(mpi_errno);
    }
    if (MPIDI_CH3I_Net_active &&
        (++sock_ticks >= sock_poll_interval())) {
        int sock_progress = FALSE;

        mpi_errno = MPIDI_CH3I_Net_poll(&sock_progress);
        MPIR_ERR_CHECK(mpi_errno);
        /* it handles one event: after one, look again at the next poll */
        sock_ticks = sock_progress ? SOCK_POLL_INTERVAL - 1 : 0;
        if (sock_progress)
            *made_progress = TRUE;
    }
    mpi_errno = MPIR_Progress_hook_exec_all(&hook_progress);
    MPIR_ERR_CHECK(mpi_errno);
    if (hook_progress) {
        *made_progress = TRUE;
        MPIDI_CH3_Progress_signal_completion();
    }
    mpi_errno = poll_inbox(made_progress);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* ------------------------------------------------------------------------------------ */
/* Waiting                                                                              */

/* The waiting ladder, one for every blocking wait of the channel (requests, collectives):
 * poll; while nothing happens, spin for spin_polls polls, then yield the CPU between polls
 * for yield_polls more, then sleep on the doorbells until a peer rings.  Spinning is what a
 * rank with a core of its own does best; when the node's ranks outnumber their CPUs, the
 * peer a spinning rank waits for may be the one it keeps from running, so it yields at once
 * (spin_polls 0, chosen in MPIDI_CH3I_Progress_init). */
static int spin_polls, yield_polls;
static int spin_auto;           /* spin_polls is ours to choose, not the user's */
static long long spin_nsec;     /* when it is: how long to spin, or 0 not at all */
static int machine_cpus;        /* online */

/* A wait idle for longer than a message takes asks, every SMHEAP_CONTENTION_EVERY polls,
 * whether the CPUs are contended. */
#define SMHEAP_CONTENTION_IDLE_NSEC (10 * 1000L)
#define SMHEAP_CONTENTION_EVERY 64
/* How long an answer holds: threads that became runnable must be seen soon; once they
 * are, they tend to stay so for a while. */
#define SMHEAP_UNCONTENDED_NSEC (20 * 1000L)
#define SMHEAP_CONTENDED_NSEC (1000 * 1000L)
/* Readings in a row, each at least SMHEAP_UNCONTENDED_NSEC after the last, that must find
 * the CPUs contended: the kernel's count includes its own threads, which run only briefly
 * and so turn up in a single reading now and then, while threads that compete with us stay
 * (figures: doc/p2p.md). */
#define SMHEAP_CONTENDED_READINGS 3

static int loadavg_fd = -1;

/* Are more threads runnable right now than the machine has CPUs?  Then the thread a
 * spinning rank waits for (a peer rank, or one of the application's threads that will give
 * it something to receive) may be the one it keeps from running.  The kernel's count
 * (/proc/loadavg's "runnable/total", this thread included) covers the whole machine, hence
 * the machine's CPUs as the bound, not only those of our ranks: other jobs busy on other
 * CPUs must not stop our spin.  A read is a system call, too dear for every poll, so an
 * answer holds for a while (SMHEAP_UNCONTENDED_NSEC; figures: doc/p2p.md). */
static int cpus_contended(long long ns)
{
    static long long valid_until;
    static int contended, in_a_row;
    char text[128], *p = text;
    ssize_t n;

    if (loadavg_fd < 0)
        return FALSE;   /* no /proc: keep the choice made at MPI_Init */
    if (ns < valid_until)
        return contended;
    n = pread(loadavg_fd, text, sizeof(text) - 1, 0);
    if (n <= 0)
        return FALSE;
    text[n] = '\0';
    for (int field = 0; field < 3 && p != NULL; field++)
        p = strchr(p + 1, ' ');
    in_a_row = p != NULL && atoi(p) > machine_cpus ? in_a_row + 1 : 0;
    contended = in_a_row >= SMHEAP_CONTENDED_READINGS;
    valid_until = ns + (contended ? SMHEAP_CONTENDED_NSEC : SMHEAP_UNCONTENDED_NSEC);
    return contended;
}

enum spin_verdict { SPIN_ON, SPIN_DONE, SPIN_CONTENDED };

/* Called every SMHEAP_CONTENTION_EVERY idle polls of a wait whose spin is ours to choose:
 * should it stop spinning, because it has spun long enough or because the CPUs are
 * contended?  idle_since: when this stretch of idle polls began. */
static enum spin_verdict spin_verdict(int idle, long long *idle_since)
{
    long long ns = smheap_pace_now();

    if (idle == SMHEAP_CONTENTION_EVERY) {
        *idle_since = ns;
        return SPIN_ON;
    }
    if (ns - *idle_since >= spin_nsec)
        return SPIN_DONE;
    if (ns - *idle_since >= SMHEAP_CONTENTION_IDLE_NSEC && cpus_contended(ns))
        return SPIN_CONTENDED;
    return SPIN_ON;
}

/* sched_yield itself: MPL_sched_yield does nothing on Linux (MPL's configure default). */
static int yield_once(void *arg)
{
    (void) arg;
    return sched_yield();
}

/* What a sleeping thread waits on: our node doorbell, and our doorbell in every link
 * segment (processes of other jobs cannot reach the node one). */
typedef struct bell_set {
    smheap_doorbell_t *bells[SMHEAP_DOORBELL_MAX_WAIT];
    int seqs[SMHEAP_DOORBELL_MAX_WAIT];
    int n;
    int may_sleep;              /* ringers that skip their fence cannot miss us */
} bell_set_t;

static int arm_bells(bell_set_t * set)
{
    int mpi_errno = MPI_SUCCESS;

    set->bells[0] = &smheap_queue.bells[smheap_queue.my_rank];
    set->n = 1;
    if (MPIDI_CH3I_Link_active) {
        /* a new connection cannot ring us: look now (and the sleep is bounded) */
        if (!recv_nesting)
            mpi_errno = look_for_connections(TRUE);
        set->n += MPIDI_CH3I_Link_bells(set->bells + 1, SMHEAP_DOORBELL_MAX_WAIT - 1);
    }
    for (int i = 0; i < set->n; i++) {
        MPIDI_CH3I_Net_listen_for_wakeups(set->bells[i]);
        set->seqs[i] = smheap_doorbell_arm(set->bells[i]);
    }
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_arms, set->n);
    MPIDI_CH3I_Link_sleepers++;         /* the link doorbells stay mapped meanwhile */
    set->may_sleep = smheap_doorbell_armed() == 0;
    return mpi_errno;
}

static void disarm_bells(bell_set_t * set)
{
    for (int i = 0; i < set->n; i++)
        smheap_doorbell_disarm(set->bells[i]);
    MPIDI_CH3I_Link_sleepers--;
}

static int sleep_on_bells(void *arg)
{
    const bell_set_t *set = arg;

    return smheap_doorbell_sleep_any(set->bells, set->seqs, set->n, SMHEAP_SLEEP_NSEC);
}

/* Nothing to do for a while: announce ourselves as a sleeper, look once more (a peer that
 * published work before seeing us will not ring), then sleep on the doorbells. */
static int sleep_until_rung(int (*ready) (void *), void *arg, int *made_progress)
{
    int mpi_errno = MPI_SUCCESS;
    bell_set_t set;
    int err = 0;

    mpi_errno = arm_bells(&set);
    if (mpi_errno == MPI_SUCCESS)
        mpi_errno = poll_once(made_progress);
    if (mpi_errno == MPI_SUCCESS && MPIDI_CH3I_Net_active && !*made_progress)
        mpi_errno = MPIDI_CH3I_Net_poll(made_progress);
    if (mpi_errno == MPI_SUCCESS && !*made_progress && !set.may_sleep) {
        MPIDI_CH3I_Without_global_lock(yield_once, NULL);
    } else if (mpi_errno == MPI_SUCCESS && !*made_progress && !ready(arg)) {
        MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_sleeps, 1);
        /* with sockets to watch, sleep in poll(): the doorbells send a byte there too */
        if (MPIDI_CH3I_Net_active)
            mpi_errno = MPIDI_CH3I_Net_sleep(SMHEAP_SLEEP_NSEC / 1000000, made_progress);
        else
            err = MPIDI_CH3I_Without_global_lock(sleep_on_bells, &set);
    }
    disarm_bells(&set);
    MPIR_ERR_CHECK(mpi_errno);
    MPIR_ERR_CHKANDJUMP1(err, mpi_errno, MPI_ERR_OTHER, "**smheap_futex",
                         "**smheap_futex %s", strerror(err));
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Poll until ready(arg) holds.  Whoever changes what ready() looks at from another process
 * must ring this rank's doorbell afterwards (MPIDI_CH3I_Smheap_wake). */
static int wait_until(int (*ready) (void *), void *arg)
{
    int mpi_errno = MPI_SUCCESS;
    int idle = 0;
    long long idle_since = 0;

    for (;;) {
        int made_progress = FALSE;

        mpi_errno = poll_once(&made_progress);
        MPIR_ERR_CHECK(mpi_errno);
        if (ready(arg))
            break;
        if (made_progress) {
            idle = 0;
        } else if (++idle < spin_polls) {
            if (spin_auto && idle % SMHEAP_CONTENTION_EVERY == 0) {
                enum spin_verdict v = spin_verdict(idle, &idle_since);

                if (v == SPIN_CONTENDED) {
                    /* the CPU is better given up for good than yielded now and then */
                    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_contended_waits, 1);
                    idle = spin_polls + yield_polls;
                    continue;
                }
                if (v == SPIN_DONE)
                    idle = spin_polls;  /* yield from the next poll on */
            }
#ifdef MPICH_IS_THREADED
            /* let the application's other threads into MPI now and then */
            if ((idle & 63) == 0)
                MPID_THREAD_CS_YIELD(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
#endif
            MPL_atomic_compiler_barrier();
        } else if (idle < spin_polls + yield_polls) {
            MPIDI_CH3I_Without_global_lock(yield_once, NULL);
        } else {
            mpi_errno = sleep_until_rung(ready, arg, &made_progress);
            MPIR_ERR_CHECK(mpi_errno);
            idle = made_progress ? 0 : spin_polls;      /* woken: poll, yield, sleep again */
        }
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Has a request completed since the caller last looked?  (Does not consume it.) */
static int completion_pending(void *arg)
{
    MPID_Progress_state *state = arg;

    return MPL_atomic_acquire_load_int(&MPIDI_CH3I_progress_completion_count) !=
        state->ch.completion_count;
}

/* A program that polls with MPI_Test (or a generalized request's poll function, as ROMIO's
 * nonblocking collective I/O has MPI_Wait do) never waits in the channel.  When waits do
 * not spin (the node's ranks outnumber their CPUs, or MPIR_CVAR_CH3_SMHEAP_SPIN_POLLS=0),
 * the peer it polls for may need this very CPU: after a few fruitless polls in a row, each
 * further one yields it. */
#define IDLE_TESTS_BEFORE_YIELD 8
static int idle_tests;

static int test_once(void)
{
    int mpi_errno, made_progress = FALSE;

    mpi_errno = poll_once(&made_progress);
    if (made_progress || spin_polls > 0)
        idle_tests = 0;
    else if (++idle_tests > IDLE_TESTS_BEFORE_YIELD) {
        MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_test_yields, 1);
        MPIDI_CH3I_Without_global_lock(yield_once, NULL);
    }
    return mpi_errno;
}

int MPIDI_CH3I_Progress(MPID_Progress_state * state, int blocking)
{
    int mpi_errno = MPI_SUCCESS;

    MPIR_FUNC_ENTER;
    MPIR_Assert(!blocking || state != NULL);

    if (blocking)
        mpi_errno = wait_until(completion_pending, state);
    else
        mpi_errno = test_once();
    MPIR_ERR_CHECK(mpi_errno);
    if (blocking)
        state->ch.completion_count =
            MPL_atomic_acquire_load_int(&MPIDI_CH3I_progress_completion_count);

  fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Wait until ready(arg) holds, the way a blocking progress wait waits for a request (this
 * rank's point-to-point traffic keeps moving meanwhile: a peer may be waiting for it). */
int MPIDI_CH3I_Progress_wait_for(int (*ready) (void *), void *arg)
{
    if (ready(arg))
        return MPI_SUCCESS;
    return wait_until(ready, arg);
}


/* ------------------------------------------------------------------------------------ */
/* Set-up and connection teardown                                                       */

static int oversubscribed(void)
{
    return smheap_queue.nranks > smheap_queue.node_cpus;
}

size_t MPIDI_CH3I_Progress_spin_polls(void)
{
    return (size_t) spin_polls;
}

size_t MPIDI_CH3I_Progress_spin_usec(void)
{
    return (size_t) (spin_nsec / 1000);
}

static void choose_spin(void)
{
    spin_auto = MPIR_CVAR_CH3_SMHEAP_SPIN_POLLS < 0;
    machine_cpus = (int) MPL_MAX(sysconf(_SC_NPROCESSORS_ONLN), smheap_queue.node_cpus);
    if (spin_auto && loadavg_fd < 0)
        loadavg_fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    spin_polls = MPIR_CVAR_CH3_SMHEAP_SPIN_POLLS;
    spin_nsec = 0;
    if (spin_auto && !oversubscribed()) {
        spin_polls = SMHEAP_SPIN_UNBOUNDED;
        spin_nsec = SMHEAP_SPIN_NSEC_ALONE;
    } else if (spin_auto) {
        spin_polls = 0;
    }
    yield_polls = MPL_MAX(MPIR_CVAR_CH3_SMHEAP_YIELD_POLLS, 0);
}

int MPIDI_CH3I_Progress_init(void)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PG_t *pg = MPIDI_Process.my_pg;
    int i;

    MPIR_FUNC_ENTER;

    peer_vcs = MPL_calloc(smheap_queue.nranks, sizeof(MPIDI_VC_t *), MPL_MEM_ADDRESS);
    owed_wake = MPL_malloc(smheap_queue.nranks * sizeof(int), MPL_MEM_ADDRESS);
    MPIR_ERR_CHKANDJUMP(peer_vcs == NULL || owed_wake == NULL, mpi_errno, MPI_ERR_OTHER,
                        "**nomem");
    for (i = 0; i < smheap_queue.nranks; i++)
        if (i != smheap_queue.my_rank)
            peer_vcs[i] = &pg->vct[MPIR_Process.node_local_map[i]];
    choose_spin();


  fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_CH3I_Progress_finalize(void)
{
    if (loadavg_fd >= 0)
        close(loadavg_fd);
    loadavg_fd = -1;
    MPL_free(peer_vcs);
    peer_vcs = NULL;
    MPL_free(owed_wake);
    owed_wake = NULL;
    n_owed_wake = 0;
    return MPI_SUCCESS;
}

int MPIDI_CH3_Connection_terminate(MPIDI_VC_t * vc)
{
    int mpi_errno = MPI_SUCCESS;

    MPIR_FUNC_ENTER;

    if (vc->state == MPIDI_VC_STATE_MORIBUND || vc->state == MPIDI_VC_STATE_INACTIVE_CLOSED)
        goto fn_exit;

    if (vc->ch.remote)
        mpi_errno = MPIDI_CH3I_Net_terminate(vc);
    else if (MPIDI_CH3I_Sendq_empty(vc))
        mpi_errno = MPIDI_CH3I_Connection_closed(vc);
    else
        vc->ch.terminate_when_drained = TRUE;   /* finished by MPIDI_CH3I_Send_progress_vc */
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

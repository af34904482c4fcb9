/*
 * ch3:smheap -- a doorbell: a futex word in shared memory that a process sleeps on when it
 * has nothing to do and that other processes ring when they give it work.  Independent of
 * MPICH so it can be unit-tested on its own.
 *
 * Sleeping is a Dekker handshake with the ringer:
 *   sleeper: seq = smheap_doorbell_arm(b)      (counts itself in `sleepers`)
 *            look for work once more; if none, smheap_doorbell_sleep(b, seq, ...)
 *            smheap_doorbell_disarm(b)
 *   ringer:  publish the work (release store), then smheap_doorbell_ring(b)
 * Either the sleeper's last look sees the work, or the ringer sees the sleeper and bumps
 * `seq`, which makes the futex wait return at once.
 */

#ifndef SMHEAP_DOORBELL_H_INCLUDED
#define SMHEAP_DOORBELL_H_INCLUDED

#include <stdatomic.h>

#define SMHEAP_DOORBELL_NAME_LEN 48

typedef struct smheap_doorbell {
    _Alignas(64) atomic_int seq;        /* futex word, bumped by every wake-up */
    atomic_int sleepers;        /* threads of the owner that may be asleep on seq */
    /* An owner that may sleep in poll() (on sockets) rather than on the futex names an
     * abstract UNIX datagram socket here; a wake-up also sends it a byte.  Empty: none. */
    char wake_socket[SMHEAP_DOORBELL_NAME_LEN];
} smheap_doorbell_t;

/* The owner of b will sleep in poll() on the socket it bound at the abstract name `name`
 * (at most SMHEAP_DOORBELL_NAME_LEN - 1 bytes); call before anyone may ring b. */
void smheap_doorbell_set_wake_socket(smheap_doorbell_t * b, const char *name);

static inline int smheap_doorbell_arm(smheap_doorbell_t * b)
{
    int seq = atomic_load_explicit(&b->seq, memory_order_acquire);
    atomic_fetch_add_explicit(&b->sleepers, 1, memory_order_seq_cst);
    return seq;
}

static inline void smheap_doorbell_disarm(smheap_doorbell_t * b)
{
    atomic_fetch_sub_explicit(&b->sleepers, 1, memory_order_relaxed);
}

void smheap_doorbell_wake(smheap_doorbell_t * b);

/* Wake every thread asleep on b.  Call after publishing the work.  Inline: every message
 * pays for the fence, and only a sleeper for the system call. */
static inline void smheap_doorbell_ring(smheap_doorbell_t * b)
{
    /* order the caller's publication before our look at `sleepers` (pairs with the
     * seq_cst increment in smheap_doorbell_arm) */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&b->sleepers, memory_order_relaxed) > 0)
        smheap_doorbell_wake(b);
}

/* Sleep until b is rung after smheap_doorbell_arm returned seq, or timeout_ns passes.
 * Returns 0, or an errno value for a futex failure other than a wake-up or timeout. */
int smheap_doorbell_sleep(smheap_doorbell_t * b, int seq, long timeout_ns);

/* The same for several doorbells at once (each armed, seqs[i] from its arm): returns when
 * any of them is rung.  Uses Linux's futex_waitv (5.16); where the kernel or a seccomp
 * filter refuses it, sleeps on bells[0] alone for at most 1 ms, so the others are
 * looked at that often.  At most SMHEAP_DOORBELL_MAX_WAIT bells. */
#define SMHEAP_DOORBELL_MAX_WAIT 128
int smheap_doorbell_sleep_any(smheap_doorbell_t * const *bells, const int *seqs, int n,
                              long timeout_ns);

#endif /* SMHEAP_DOORBELL_H_INCLUDED */

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
 *
 * A bump also marks `seq` rung (its low bit), and the owner's next arm takes the mark off.
 * A ringer that finds the mark leaves the doorbell alone: the ringer that set it has woken
 * every thread asleep on the value before, and the owner has not armed since, so nothing
 * sleeps on the new value.  Otherwise every publication would cost its ringer a futex call
 * (and a datagram) for each armed peer, woken already or not: 143 per 8-byte MPI_Reduce of
 * 16 ranks on 2 CPUs (doc/p2p.md, "Waiting").  A bump adds 2, so a value is not seen again
 * before 2^31 wake-ups: a thread about to sleep on the value it armed with cannot mistake a
 * later one for it after another thread's arm took the mark off.
 *
 * Each side must order its store before its load.  A fence on the ringer's side costs every
 * message: on x86 it waits until the message's lines have reached the reader's core, which
 * in a stream of short messages is most of a send.  Where the kernel offers membarrier(2)'s
 * global expedited command and the ringer's process registered for it
 * (smheap_doorbell_register), a sleeper that has armed calls it instead
 * (smheap_doorbell_armed), which runs a full barrier on every CPU running a registered
 * process: a ringer whose look came before that barrier had published before it, one whose
 * look came after sees the sleeper.  The processes that ring each other agree on it
 * (smheap_doorbell_fenceless: all of them, or none) and mark their doorbells
 * (owner_membarrier); ringing an unmarked doorbell takes the fence.
 */

#ifndef SMHEAP_DOORBELL_H_INCLUDED
#define SMHEAP_DOORBELL_H_INCLUDED

#include <stdatomic.h>
#include <stddef.h>

#define SMHEAP_DOORBELL_NAME_LEN 48

#define SMHEAP_DOORBELL_RUNG 1     /* in seq: rung since the owner last armed */

typedef struct smheap_doorbell {
    _Alignas(64) atomic_int seq;        /* futex word, bumped by every wake-up (by 2) */
    atomic_int sleepers;        /* threads of the owner that may be asleep on seq */
    int owner_membarrier;       /* set by the owner before anyone rings: its process is
                                 * registered (smheap_doorbell_register) */
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

    /* rings from now on must wake us again */
    while (seq & SMHEAP_DOORBELL_RUNG)
        if (atomic_compare_exchange_weak_explicit(&b->seq, &seq, seq & ~SMHEAP_DOORBELL_RUNG,
                                                  memory_order_acquire, memory_order_acquire))
            seq &= ~SMHEAP_DOORBELL_RUNG;
    atomic_fetch_add_explicit(&b->sleepers, 1, memory_order_seq_cst);
    return seq;
}

static inline void smheap_doorbell_disarm(smheap_doorbell_t * b)
{
    atomic_fetch_sub_explicit(&b->sleepers, 1, memory_order_relaxed);
}

/* This process's sleepers call membarrier after arming and its ringers leave the fence to
 * the sleepers of marked doorbells: set (to 1 where registered) only where every process
 * that rings our marked doorbells, or whose marked doorbells we ring, sets it too. */
extern int smheap_doorbell_fenceless;

/* Register this process (once; later calls return the first answer, in a forked child
 * its own): 1 if it is, 0 where the kernel, a seccomp filter or valgrind refuses it. */
int smheap_doorbell_register(void);

/* A sleeper has armed its doorbells and is about to look for work a last time: where this
 * process is fenceless, make every ringer's look at `sleepers` either see it or come after
 * the ringer's publication.  0, or an errno value: then the sleeper must not sleep. */
int smheap_doorbell_armed(void);

/* Wake every thread asleep on b, unless b is marked rung.  Call after publishing the work
 * and finding a sleeper (smheap_doorbell_has_sleepers). */
void smheap_doorbell_wake(smheap_doorbell_t * b);

/* The wake-ups this process has issued: at most one per arm of the doorbell woken, and one
 * for each doorbell before its first arm. */
size_t smheap_doorbell_wakeups(void);

/* Has b's owner armed?  Acquire: a ringer that sees an arm sees the mark it took off. */
static inline int smheap_doorbell_has_sleepers(smheap_doorbell_t * b)
{
    return atomic_load_explicit(&b->sleepers, memory_order_acquire) > 0;
}

/* Order the caller's publication before its look at `sleepers` (pairs with the seq_cst
 * increment in smheap_doorbell_arm): a fence, or, where the sleepers' membarrier does it
 * (fenceless), only the compiler's ordering. */
static inline void smheap_doorbell_order(int fenceless)
{
    if (fenceless)
        atomic_signal_fence(memory_order_seq_cst);
    else
        atomic_thread_fence(memory_order_seq_cst);
}

/* Wake every thread asleep on b.  Call after publishing the work.  Inline: every message
 * pays for the look (and the fence, where it takes one), and only a sleeper for the system
 * call. */
static inline void smheap_doorbell_ring(smheap_doorbell_t * b)
{
    smheap_doorbell_order(smheap_doorbell_fenceless && b->owner_membarrier);
    if (smheap_doorbell_has_sleepers(b))
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

/*
 * ch3:smheap -- are the rings slow right now?
 *
 * Moving data through a ring costs each cache line two trips between cores: the sender
 * writes lines the receiver read a lap before, the receiver reads what the sender wrote.
 * What such trips cost can change while a job runs: on some virtual machines, streams
 * through shared-memory rings (this channel's and ch3:nemesis's alike) slow down many
 * times over for seconds to minutes at a time, whatever the copy loop, while copies that
 * move each line across once, by a read (the kernel's process_vm_readv, the shared heap's
 * single copy), keep their speed (figures: doc/p2p.md).
 *
 * So the channel times some of its copies into the rings and compares their speed with a
 * bound it derives from a copy through the kernel, timed once at start-up: while the rings
 * are slower, it sends mid-sized messages through the kernel instead (ch3_rndv.c).  Samples
 * are taken in windows; the best of a window decides, so one copy slowed by an interrupt
 * does not.  While the rings count as slow, few messages go through them, so one is let
 * through now and then to measure them again.  Independent of MPICH, so that it can be
 * unit-tested alone; the channel calls it under its lock.
 */

#ifndef SMHEAP_PACE_H_INCLUDED
#define SMHEAP_PACE_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include <time.h>

enum {
    SMHEAP_PACE_SAMPLE_MIN = 8192,      /* smaller copies are too short to time */
    SMHEAP_PACE_SAMPLE_EVERY = 4,       /* while fast, time one copy in this many */
    SMHEAP_PACE_WINDOW = 4              /* samples per decision */
};

typedef struct smheap_pace {
    double slow_below;          /* bytes per ns: the rings are slow below this */
    uint64_t probe_ns;          /* while slow, let a message through after this long */
    double best;                /* the best rate of the window so far */
    unsigned samples;           /* samples in the window so far */
    unsigned countdown;         /* copies until the next one is timed */
    int slow;
    uint64_t probed_at;         /* when the rings were last measured or probed */
    double last_rate;           /* the best rate of the last whole window */
    size_t message_max;         /* longer messages are not timed */
    unsigned long long slow_spells;     /* times the rings were found slow */
} smheap_pace_t;

extern smheap_pace_t smheap_pace;

static inline uint64_t smheap_pace_now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t) t.tv_sec * 1000000000u + (uint64_t) t.tv_nsec;
}

/* The rate (bytes per ns) of the best of a few copies of n bytes through the kernel, from
 * this process to itself; 0 where the kernel refuses. */
double smheap_pace_kernel_rate(size_t n);

/* Count the rings slow while copies into them run below slow_below bytes per ns (0: never),
 * and let a message through them every probe_ns while they are.  Only messages of at most
 * message_max bytes are timed: the data of longer ones mostly comes from memory beyond the
 * caches, at a speed that says nothing of the rings (a copy of 16 MiB between two ranks
 * that both send runs below the bound in every state of the rings). */
void smheap_pace_init(double slow_below, uint64_t probe_ns, size_t message_max);

/* May the copies of a message of this many bytes be timed? */
static inline int smheap_pace_watches(size_t message_bytes)
{
    return message_bytes <= smheap_pace.message_max;
}

/* Should the copy of n bytes into a ring about to start be timed? */
static inline int smheap_pace_sample_due(size_t n)
{
    if (n < SMHEAP_PACE_SAMPLE_MIN || smheap_pace.slow_below <= 0)
        return 0;
    if (smheap_pace.slow || --smheap_pace.countdown == 0) {
        smheap_pace.countdown = SMHEAP_PACE_SAMPLE_EVERY;
        return 1;
    }
    return 0;
}

/* A timed copy of n bytes into a ring took ns. */
void smheap_pace_record(size_t n, uint64_t ns);

/* Are the rings slow?  While they are, answers no once every probe_ns, so that a message
 * goes through them to be measured. */
int smheap_pace_rings_slow(void);

#endif /* SMHEAP_PACE_H_INCLUDED */

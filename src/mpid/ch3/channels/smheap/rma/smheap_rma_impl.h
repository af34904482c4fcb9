/*
 * ch3:smheap -- one-sided communication, inside rma/: what smheap_rma_window.c (windows
 * set up and freed, ch3's tables wrapped), smheap_rma_epoch.c (fence and PSCW),
 * smheap_rma_hold.c (a target's word held for ch3's lock holders) and smheap_rma_lock.c
 * (the lock words, and the passive-target hooks) share.  Calls go from the first to the
 * others, and from smheap_rma_hold.c to smheap_rma_lock.c.
 */

#ifndef SMHEAP_RMA_IMPL_H_INCLUDED
#define SMHEAP_RMA_IMPL_H_INCLUDED

#include "mpidi_ch3_impl.h"
#include "smheap_rma.h"

/* A lock word, in the heap slice of its target.  Phase-fair words use all four counters,
 * reader-preferring ones (windows that span nodes) readers_in alone: smheap_rma_lock.c
 * gives both encodings. */
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

/* How a taker holds a word: as one reader, or exclusively (HELD_EXCLUSIVE, with the writer's
 * bits of a phase-fair word below it). */
#define READER          0x100u
#define HELD_EXCLUSIVE  (1u << 31)

/* What a waiting taker's condition reads: the word, and its ticket (a writer) or the phase
 * it waits out (a reader). */
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
    struct MPIDI_CH3I_Win_heap *next, *prev;    /* in smheap_rma_hold.c's waiting_holds */
};

/* What a waiting taker waits for (MPIDI_CH3I_Progress_wait_for's condition). */
typedef int (*rma_ready_fn) (void *);

/* smheap_rma_lock.c: the words */
void MPIDI_CH3I_Rma_attempt_start(struct lock_attempt *a, struct smheap_rma_lock *lock,
                                  int lock_type, int fair);
rma_ready_fn MPIDI_CH3I_Rma_attempt_advance(struct lock_attempt *a);
void MPIDI_CH3I_Rma_announce_waiting(struct smheap_rma_lock *lock, int rank);
void MPIDI_CH3I_Rma_stop_waiting(struct smheap_rma_lock *lock, int rank);
void MPIDI_CH3I_Rma_release_word(struct MPIDI_CH3I_Win_heap *h, struct smheap_rma_lock *lock,
                                 uint32_t held, int nranks);
/* smheap_rma_lock.c: ch3's passive-target hooks */
int MPIDI_CH3I_Rma_lock(MPIR_Win * win, int dest, int lock_type, int *taken);
int MPIDI_CH3I_Rma_unlock(MPIR_Win * win, int dest);
int MPIDI_CH3I_Rma_lock_all(MPIR_Win * win, int *taken);
int MPIDI_CH3I_Rma_unlock_all(MPIR_Win * win);

/* smheap_rma_hold.c: its progress hook, registered with the first window that needs holds */
int MPIDI_CH3I_Rma_register_holds_hook(void);
/* smheap_rma_hold.c: the window set up here, ch3 grants the lock requests that it was
 * refused meanwhile */
int MPIDI_CH3I_Rma_grant_queued_locks(MPIR_Win * win);
/* smheap_rma_hold.c: at MPI_Win_free (ch3 let no one hold a lock past its barrier), what is
 * left of a hold is given up */
void MPIDI_CH3I_Rma_hold_give_up(struct MPIDI_CH3I_Win_heap *h, int nranks);

/* smheap_rma_epoch.c: ch3's active-target hooks */
int MPIDI_CH3I_Rma_fence(MPIR_Win * win, int assert, int *done);
int MPIDI_CH3I_Rma_post(MPIR_Win * win, MPIR_Group * group, int assert, int *done);
int MPIDI_CH3I_Rma_start(MPIR_Win * win, MPIR_Group * group, int assert, int *done);
int MPIDI_CH3I_Rma_complete(MPIR_Win * win, int *done);
int MPIDI_CH3I_Rma_wait(MPIR_Win * win, int *done);
int MPIDI_CH3I_Rma_test(MPIR_Win * win, int *flag, int *done);

#endif /* SMHEAP_RMA_IMPL_H_INCLUDED */

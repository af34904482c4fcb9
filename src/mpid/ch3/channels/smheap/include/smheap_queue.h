/*
 * ch3:smheap -- the per-pair message rings and per-rank doorbells in the node segment.
 *
 * Every ordered pair of local ranks (sender, receiver) owns one single-producer,
 * single-consumer ring of fixed-size cells; a receiver's inbox is the set of rings that
 * point at it.  A message starts at the beginning of a cell (so a packet header never
 * straddles cells) and may continue in the following cells of the same ring.  Producer
 * and consumer positions live on separate cache lines and each side keeps a private
 * copy of the other's position, so a steady stream touches the shared counters once per
 * cell.  No locks.
 *
 * Each rank also owns a doorbell: a futex word that a rank sleeps on once it has polled
 * for a while without finding work, and that peers bump when they give it work.
 */

#ifndef SMHEAP_QUEUE_H_INCLUDED
#define SMHEAP_QUEUE_H_INCLUDED

#include <stdint.h>

#define SMHEAP_CACHELINE 64

typedef struct smheap_cell {
    uint32_t len;               /* payload bytes in this cell */
    char pad[SMHEAP_CACHELINE - sizeof(uint32_t)];
    char payload[];             /* smheap_queue.cell_payload bytes */
} smheap_cell_t;

typedef struct smheap_ring {
    MPL_atomic_int_t tail;      /* cells published by the producer (wraps) */
    char pad0[SMHEAP_CACHELINE - sizeof(MPL_atomic_int_t)];
    MPL_atomic_int_t head;      /* cells released by the consumer (wraps) */
    char pad1[SMHEAP_CACHELINE - sizeof(MPL_atomic_int_t)];
    /* smheap_queue.ring_cells cells of smheap_queue.cell_size bytes follow */
} smheap_ring_t;

typedef struct smheap_doorbell {
    MPL_atomic_int_t seq;       /* futex word, bumped by every wake-up */
    MPL_atomic_int_t sleepers;  /* threads of the owner that may be asleep on seq */
    char pad[SMHEAP_CACHELINE - 2 * sizeof(MPL_atomic_int_t)];
} smheap_doorbell_t;

/* This process's view of the node segment (the segment is not mapped at the same
 * address in every rank, so only offsets are shared). */
typedef struct smheap_queue {
    int nranks;
    int my_rank;
    unsigned ring_cells;        /* power of two */
    size_t cell_size;           /* bytes per cell, header included */
    size_t cell_payload;
    size_t ring_size;           /* bytes per ring, header included */
    void *segment;
    smheap_doorbell_t *bells;   /* [nranks] */
    char *rings;                /* [receiver][sender] rings */
} smheap_queue_t;

extern smheap_queue_t smheap_queue;

int MPIDI_CH3I_Smheap_queue_init(int nranks, int my_rank);
int MPIDI_CH3I_Smheap_queue_finalize(void);
void MPIDI_CH3I_Smheap_doorbell_ring(int rank);
int MPIDI_CH3I_Smheap_doorbell_sleep(int seen_seq);

static inline smheap_ring_t *MPIDI_CH3I_Smheap_ring(int receiver, int sender)
{
    size_t idx = (size_t) receiver * smheap_queue.nranks + sender;
    return (smheap_ring_t *) (smheap_queue.rings + idx * smheap_queue.ring_size);
}

static inline smheap_cell_t *MPIDI_CH3I_Smheap_cell(smheap_ring_t * ring, unsigned pos)
{
    unsigned slot = pos & (smheap_queue.ring_cells - 1);
    return (smheap_cell_t *) ((char *) ring + sizeof(smheap_ring_t) +
                              slot * smheap_queue.cell_size);
}

/* Producer: the next free cell of vc's outgoing ring, or NULL if the ring is full. */
static inline smheap_cell_t *MPIDI_CH3I_Smheap_cell_reserve(MPIDI_VC_t * vc)
{
    MPIDI_CH3I_VC *ch = &vc->ch;
    if (ch->out_tail - ch->out_head_seen >= smheap_queue.ring_cells) {
        ch->out_head_seen = (unsigned) MPL_atomic_acquire_load_int(&ch->out_ring->head);
        if (ch->out_tail - ch->out_head_seen >= smheap_queue.ring_cells)
            return NULL;
    }
    return MPIDI_CH3I_Smheap_cell(ch->out_ring, ch->out_tail);
}

static inline void MPIDI_CH3I_Smheap_cell_publish(MPIDI_VC_t * vc, smheap_cell_t * cell,
                                                  size_t len)
{
    cell->len = (uint32_t) len;
    vc->ch.out_tail++;
    MPL_atomic_release_store_int(&vc->ch.out_ring->tail, (int) vc->ch.out_tail);
}

/* Consumer: the oldest unread cell of vc's incoming ring, or NULL. */
static inline smheap_cell_t *MPIDI_CH3I_Smheap_cell_peek(MPIDI_VC_t * vc)
{
    MPIDI_CH3I_VC *ch = &vc->ch;
    if (ch->in_head == ch->in_tail_seen) {
        ch->in_tail_seen = (unsigned) MPL_atomic_acquire_load_int(&ch->in_ring->tail);
        if (ch->in_head == ch->in_tail_seen)
            return NULL;
    }
    return MPIDI_CH3I_Smheap_cell(ch->in_ring, ch->in_head);
}

static inline void MPIDI_CH3I_Smheap_cell_release(MPIDI_VC_t * vc)
{
    vc->ch.in_head++;
    MPL_atomic_release_store_int(&vc->ch.in_ring->head, (int) vc->ch.in_head);
}

/* Cheap check used before sleeping: does any inbound ring hold a cell? */
static inline int MPIDI_CH3I_Smheap_inbox_empty(void)
{
    int s;
    for (s = 0; s < smheap_queue.nranks; s++) {
        smheap_ring_t *r;
        if (s == smheap_queue.my_rank)
            continue;
        r = MPIDI_CH3I_Smheap_ring(smheap_queue.my_rank, s);
        if (MPL_atomic_acquire_load_int(&r->tail) != MPL_atomic_relaxed_load_int(&r->head))
            return 0;
    }
    return 1;
}

#endif /* SMHEAP_QUEUE_H_INCLUDED */

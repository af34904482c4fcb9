/*
 * ch3:smheap -- a single-producer, single-consumer ring of fixed-size cells in shared
 * memory.  Independent of MPICH (C11 atomics only) so it can be unit-tested on its own.
 *
 * The producer owns `tail`, the consumer owns `head`; they sit on separate cache lines and
 * each side keeps a private copy of the other's position (smheap_ring_end_t), so a steady
 * stream reads the other side's counter once per ring's worth of cells, not per cell.
 * Positions are free-running unsigned counters; differences are taken modulo 2^32.
 */

#ifndef SMHEAP_RING_H_INCLUDED
#define SMHEAP_RING_H_INCLUDED

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define SMHEAP_CACHELINE 64

typedef struct smheap_cell {
    uint32_t len;               /* payload bytes in this cell */
    char pad[SMHEAP_CACHELINE - sizeof(uint32_t)];
    char payload[];
} smheap_cell_t;

typedef struct smheap_ring {
    _Alignas(SMHEAP_CACHELINE) atomic_uint tail;    /* cells published by the producer */
    _Alignas(SMHEAP_CACHELINE) atomic_uint head;    /* cells released by the consumer */
    /* cells follow, at the next cache line */
} smheap_ring_t;

typedef struct smheap_ring_geometry {
    unsigned cells;             /* power of two */
    size_t cell_size;           /* bytes per cell, header included */
} smheap_ring_geometry_t;

/* One side's private view of a ring. */
typedef struct smheap_ring_end {
    smheap_ring_t *ring;
    unsigned pos;               /* our position: tail for the producer, head for the consumer */
    unsigned other_seen;        /* the other side's position when we last looked */
} smheap_ring_end_t;

static inline size_t smheap_ring_size(const smheap_ring_geometry_t * g)
{
    return sizeof(smheap_ring_t) + (size_t) g->cells * g->cell_size;
}

static inline size_t smheap_cell_payload(const smheap_ring_geometry_t * g)
{
    return g->cell_size - sizeof(smheap_cell_t);
}

static inline smheap_cell_t *smheap_ring_cell(const smheap_ring_end_t * e,
                                              const smheap_ring_geometry_t * g)
{
    return (smheap_cell_t *) ((char *) e->ring + sizeof(smheap_ring_t) +
                              (size_t) (e->pos & (g->cells - 1)) * g->cell_size);
}

/* Producer: the next free cell, or NULL if the ring is full. */
static inline smheap_cell_t *smheap_ring_reserve(smheap_ring_end_t * p,
                                                 const smheap_ring_geometry_t * g)
{
    if (p->pos - p->other_seen >= g->cells) {
        p->other_seen = atomic_load_explicit(&p->ring->head, memory_order_acquire);
        if (p->pos - p->other_seen >= g->cells)
            return NULL;
    }
    return smheap_ring_cell(p, g);
}

/* Producer: hand the reserved cell, holding len bytes, to the consumer. */
static inline void smheap_ring_publish(smheap_ring_end_t * p, smheap_cell_t * cell, size_t len)
{
    cell->len = (uint32_t) len;
    p->pos++;
    atomic_store_explicit(&p->ring->tail, p->pos, memory_order_release);
}

/* Consumer: the oldest unread cell, or NULL if the ring is empty. */
static inline smheap_cell_t *smheap_ring_peek(smheap_ring_end_t * c,
                                              const smheap_ring_geometry_t * g)
{
    if (c->pos == c->other_seen) {
        c->other_seen = atomic_load_explicit(&c->ring->tail, memory_order_acquire);
        if (c->pos == c->other_seen)
            return NULL;
    }
    return smheap_ring_cell(c, g);
}

/* Consumer: give the cell returned by smheap_ring_peek back to the producer. */
static inline void smheap_ring_release(smheap_ring_end_t * c)
{
    c->pos++;
    atomic_store_explicit(&c->ring->head, c->pos, memory_order_release);
}

/* Anyone: does the ring hold unread cells? */
static inline int smheap_ring_has_data(smheap_ring_t * r)
{
    return atomic_load_explicit(&r->tail, memory_order_acquire) !=
        atomic_load_explicit(&r->head, memory_order_relaxed);
}

#endif /* SMHEAP_RING_H_INCLUDED */

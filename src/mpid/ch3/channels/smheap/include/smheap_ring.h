/*
 * ch3:smheap -- a single-producer, single-consumer ring of fixed-size cells in shared
 * memory.  Independent of MPICH (C11 atomics only) so it can be unit-tested on its own.
 *
 * A cell is published by writing its sequence number (the producer's position plus one)
 * last, with release order; the consumer polls the sequence word of the cell it expects
 * next.  The word, the length and the start of the payload (a whole packet header and a
 * few bytes of data) share one cache line, so a short message costs the receiver a single
 * cache-line transfer, and the producer a single one to write it.  The consumer hands
 * cells back through `head`; the producer keeps a private copy of it and reads the shared
 * one only when its copy says the ring is full.  Positions are free-running unsigned
 * counters; differences are taken modulo 2^32.
 */

#ifndef SMHEAP_RING_H_INCLUDED
#define SMHEAP_RING_H_INCLUDED

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#ifndef SMHEAP_CACHELINE
#define SMHEAP_CACHELINE 64     /* the line size shared structures are laid out for */
#endif

typedef struct smheap_cell {
    _Alignas(SMHEAP_CACHELINE) atomic_uint seq;     /* position + 1 once published */
    uint32_t len;               /* payload bytes in this cell */
    _Alignas(8) char payload[];
} smheap_cell_t;

typedef struct smheap_ring {
    _Alignas(SMHEAP_CACHELINE) atomic_uint head;    /* cells released by the consumer */
    /* cells follow, at the next cache line */
} smheap_ring_t;

typedef struct smheap_ring_geometry {
    unsigned cells;             /* power of two */
    size_t cell_size;           /* bytes per cell, header included; a multiple of 64 */
} smheap_ring_geometry_t;

/* One side's private view of a ring. */
typedef struct smheap_ring_end {
    smheap_ring_t *ring;
    unsigned pos;               /* our position: cells published, or cells consumed */
    unsigned head_seen;         /* producer: the consumer's head when we last looked */
} smheap_ring_end_t;

static inline size_t smheap_ring_size(const smheap_ring_geometry_t * g)
{
    return sizeof(smheap_ring_t) + (size_t) g->cells * g->cell_size;
}

static inline size_t smheap_cell_payload(const smheap_ring_geometry_t * g)
{
    return g->cell_size - offsetof(smheap_cell_t, payload);
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
    if (p->pos - p->head_seen >= g->cells) {
        p->head_seen = atomic_load_explicit(&p->ring->head, memory_order_acquire);
        if (p->pos - p->head_seen >= g->cells)
            return NULL;
    }
    return smheap_ring_cell(p, g);
}

/* Producer: hand the reserved cell, holding len bytes, to the consumer. */
static inline void smheap_ring_publish(smheap_ring_end_t * p, smheap_cell_t * cell, size_t len)
{
    cell->len = (uint32_t) len;
    p->pos++;
    atomic_store_explicit(&cell->seq, p->pos, memory_order_release);
}

/* Consumer: the oldest unread cell, or NULL if the ring is empty. */
static inline smheap_cell_t *smheap_ring_peek(smheap_ring_end_t * c,
                                              const smheap_ring_geometry_t * g)
{
    smheap_cell_t *cell = smheap_ring_cell(c, g);

    if (atomic_load_explicit(&cell->seq, memory_order_acquire) != c->pos + 1)
        return NULL;
    return cell;
}

/* Consumer: give the cell returned by smheap_ring_peek back to the producer. */
static inline void smheap_ring_release(smheap_ring_end_t * c)
{
    c->pos++;
    atomic_store_explicit(&c->ring->head, c->pos, memory_order_release);
}

#endif /* SMHEAP_RING_H_INCLUDED */

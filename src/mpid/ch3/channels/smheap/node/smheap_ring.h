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
 * counters; differences are taken modulo 2^32, except in the sequence word, which holds
 * the whole 64-bit position: a cell may be skipped for a while (see the hot cell below),
 * and a cell last written 2^32 positions ago must not pass for a new one.
 *
 * A ring may also have a hot cell, before the others.  A message and its reply going back
 * and forth would otherwise take a new cell each time, and the lines of a ring's worth of
 * cells, two rings at a time, fill the first-level caches that each message's lines must
 * come back from, which slows even the shortest messages down (figures: doc/p2p.md).  A
 * short message goes into the hot cell instead of its own whenever the producer knows the
 * consumer has released the hot cell's last message, and it knows that without reading the
 * consumer's head: every cell carries, in its `ack`, how far its producer has read the ring
 * that runs the other way, so a reply tells the sender its message has been read.  The
 * consumer looks for its next position in the hot cell first, then in the position's own
 * cell.
 *
 * A ring may also have a warm slot: one buffer, after the cells, that holds the data of
 * at most one message at a time.  A message that goes back and forth (a ping-pong, a
 * request and its reply) would otherwise land in a new cell each time, so the lines it
 * touches cycle through cells x size bytes and fall out of both cores' first-level
 * caches; in the warm slot they are the same lines every time.  The producer may use the
 * slot again once the consumer has released the cell that last used it.
 *
 * A message too big for the slot but smaller than a cell would leave most of each cell
 * untouched, so a ring's worth of them would cycle through only cells x size bytes: few
 * enough to stay in the consumer's caches, where every line the producer writes again
 * must first be taken back from the other core, which costs more than a line that comes
 * back cold (figures: doc/p2p.md).  Such data may be placed further into its cell, at an
 * offset that moves on at every lap of the ring, so that successive laps use different
 * lines of each cell.  Data placed apart from the header, in the warm slot or further into
 * the cell, is described by the cell's apart_len and apart_at.
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
    _Alignas(SMHEAP_CACHELINE) _Atomic uint64_t seq;        /* position + 1 once published */
    uint32_t len;               /* payload bytes in this cell */
    uint32_t apart_len;         /* bytes of the message placed apart, 0 if none */
    uint32_t apart_at;          /* where: offset from the cell, or 0 for the warm slot */
    uint32_t ack;               /* cells the producer has released of the ring the other way */
    _Alignas(8) char payload[];
} smheap_cell_t;

typedef struct smheap_ring {
    _Alignas(SMHEAP_CACHELINE) atomic_uint head;    /* cells released by the consumer */
    /* the hot cell, if any, and the cells follow, at the next cache line */
} smheap_ring_t;

typedef struct smheap_ring_geometry {
    unsigned cells;             /* power of two */
    size_t cell_size;           /* bytes per cell, header included; a multiple of 64 */
    size_t warm_size;           /* bytes of the warm slot, a multiple of 64; 0: none */
    size_t hot_size;            /* bytes of the hot cell, header included, a multiple of 64;
                                 * 0: none */
} smheap_ring_geometry_t;

/* One side's private view of a ring. */
typedef struct smheap_ring_end {
    smheap_ring_t *ring;
    uint64_t pos;               /* our position: cells published, or cells consumed */
    unsigned head_seen;         /* producer: the consumer's head when we last looked or
                                 * were told (smheap_ring_take_ack) */
    unsigned warm_pos;          /* producer: the warm slot is free once head reaches it */
    unsigned warm_retry;        /* producer: found it busy; look again from this position */
    unsigned hot_pos;           /* producer: the hot cell is free once head reaches it */
} smheap_ring_end_t;

/* Either side's view of a ring that nothing has gone through yet. */
static inline void smheap_ring_end_init(smheap_ring_end_t * e, smheap_ring_t * ring)
{
    *e = (smheap_ring_end_t) {.ring = ring };
}

static inline size_t smheap_ring_size(const smheap_ring_geometry_t * g)
{
    return sizeof(smheap_ring_t) + g->hot_size + (size_t) g->cells * g->cell_size +
        g->warm_size;
}

static inline size_t smheap_cell_payload(const smheap_ring_geometry_t * g)
{
    return g->cell_size - offsetof(smheap_cell_t, payload);
}

static inline smheap_cell_t *smheap_ring_hot_cell(smheap_ring_t * ring)
{
    return (smheap_cell_t *) ((char *) ring + sizeof(smheap_ring_t));
}

static inline smheap_cell_t *smheap_ring_cell(const smheap_ring_end_t * e,
                                              const smheap_ring_geometry_t * g)
{
    return (smheap_cell_t *) ((char *) e->ring + sizeof(smheap_ring_t) + g->hot_size +
                              (size_t) (e->pos & (g->cells - 1)) * g->cell_size);
}

/* Producer: the next free cell, or NULL if the ring is full. */
static inline smheap_cell_t *smheap_ring_reserve(smheap_ring_end_t * p,
                                                 const smheap_ring_geometry_t * g)
{
    if ((unsigned) p->pos - p->head_seen >= g->cells) {
        p->head_seen = atomic_load_explicit(&p->ring->head, memory_order_acquire);
        if ((unsigned) p->pos - p->head_seen >= g->cells)
            return NULL;
    }
    return smheap_ring_cell(p, g);
}

/* Producer, once smheap_ring_reserve has given it a cell: the hot cell instead, for a
 * message of len payload bytes, or NULL if there is none, it is too small, or the consumer
 * may not have released its last message yet.  Never reads the consumer's head: a stream
 * that gets no replies leaves the hot cell alone. */
static inline smheap_cell_t *smheap_ring_reserve_hot(smheap_ring_end_t * p,
                                                     const smheap_ring_geometry_t * g,
                                                     size_t len)
{
    if (g->hot_size == 0 || len > g->hot_size - offsetof(smheap_cell_t, payload) ||
        (int) (p->hot_pos - p->head_seen) > 0)
        return NULL;
    return smheap_ring_hot_cell(p->ring);
}

/* Producer: the consumer has released `ack` cells (an ack from a cell of the ring that
 * runs the other way). */
static inline void smheap_ring_take_ack(smheap_ring_end_t * p, unsigned ack)
{
    if ((int) (ack - p->head_seen) > 0)
        p->head_seen = ack;
}

static inline char *smheap_ring_warm_slot(smheap_ring_t * ring, const smheap_ring_geometry_t * g)
{
    return (char *) ring + sizeof(smheap_ring_t) + g->hot_size + (size_t) g->cells * g->cell_size;
}

/* Producer: the warm slot, for len bytes of the message in the cell about to be
 * published, or NULL if it is too small or still in use.  Reads the consumer's head (a
 * line the consumer writes at every cell) only when the cell that last used the slot may
 * not have been released yet; a producer that streams messages faster than they are read
 * would find it busy every time, so after that it does not look again for a quarter of
 * the ring. */
static inline char *smheap_ring_reserve_warm(smheap_ring_end_t * p,
                                             const smheap_ring_geometry_t * g, size_t len)
{
    if (len > g->warm_size)
        return NULL;
    if ((int) (p->warm_pos - p->head_seen) > 0) {
        if ((int) (p->warm_retry - (unsigned) p->pos) > 0)
            return NULL;
        p->head_seen = atomic_load_explicit(&p->ring->head, memory_order_acquire);
        if ((int) (p->warm_pos - p->head_seen) > 0) {
            p->warm_retry = (unsigned) p->pos + g->cells / 4 + 1;
            return NULL;
        }
    }
    return smheap_ring_warm_slot(p->ring, g);
}

/* Producer: where in the reserved cell to place len bytes of data apart from a header of
 * hdr bytes (an offset from the cell, a multiple of the line size), or 0 if the cell has no
 * room to move them around.  The offset steps by the data's size at each lap of the ring. */
static inline size_t smheap_ring_spread(const smheap_ring_end_t * p,
                                        const smheap_ring_geometry_t * g, size_t hdr, size_t len)
{
    size_t first = offsetof(smheap_cell_t, payload) + hdr;
    size_t stride = (len + SMHEAP_CACHELINE - 1) / SMHEAP_CACHELINE * SMHEAP_CACHELINE;
    size_t places;

    first = (first + SMHEAP_CACHELINE - 1) / SMHEAP_CACHELINE * SMHEAP_CACHELINE;
    if (len == 0 || first + stride > g->cell_size)
        return 0;
    places = (g->cell_size - first - len) / stride + 1;
    if (places < 2)
        return 0;
    /* the lap: pos / cells, cells being a power of two */
    return first + (size_t) (p->pos >> __builtin_ctz(g->cells)) % places * stride;
}

/* Producer: hand the reserved cell (or the hot cell, if it reserved that instead),
 * holding len bytes, and apart_len bytes placed apart (at apart_at from the cell, from
 * smheap_ring_spread, or in the warm slot if apart_at is 0 and the producer reserved it),
 * to the consumer, with our ack: the cells we have released of the ring that runs the
 * other way. */
static inline void smheap_ring_publish_apart(smheap_ring_end_t * p, smheap_cell_t * cell,
                                             size_t len, size_t apart_len, size_t apart_at,
                                             unsigned ack)
{
    cell->len = (uint32_t) len;
    cell->apart_len = (uint32_t) apart_len;
    cell->apart_at = (uint32_t) apart_at;
    cell->ack = ack;
    p->pos++;
    if (apart_len > 0 && apart_at == 0)
        p->warm_pos = (unsigned) p->pos;
    if (cell == smheap_ring_hot_cell(p->ring))
        p->hot_pos = (unsigned) p->pos;
    atomic_store_explicit(&cell->seq, p->pos, memory_order_release);
}

/* Producer: hand the reserved cell, holding len bytes (and warm_len bytes in the warm
 * slot, if it reserved it), to the consumer. */
static inline void smheap_ring_publish_warm(smheap_ring_end_t * p, smheap_cell_t * cell,
                                            size_t len, size_t warm_len, unsigned ack)
{
    smheap_ring_publish_apart(p, cell, len, warm_len, 0, ack);
}

/* Producer: hand the reserved cell, holding len bytes, to the consumer. */
static inline void smheap_ring_publish(smheap_ring_end_t * p, smheap_cell_t * cell, size_t len,
                                       unsigned ack)
{
    smheap_ring_publish_apart(p, cell, len, 0, 0, ack);
}

/* Consumer: the oldest unread cell (the hot cell or its position's own), or NULL if the
 * ring is empty. */
static inline smheap_cell_t *smheap_ring_peek(smheap_ring_end_t * c,
                                              const smheap_ring_geometry_t * g)
{
    smheap_cell_t *cell;

    if (g->hot_size > 0) {
        cell = smheap_ring_hot_cell(c->ring);
        if (atomic_load_explicit(&cell->seq, memory_order_acquire) == c->pos + 1)
            return cell;
    }
    cell = smheap_ring_cell(c, g);
    if (atomic_load_explicit(&cell->seq, memory_order_acquire) != c->pos + 1)
        return NULL;
    return cell;
}

/* Consumer: where the data of a cell with apart_len > 0 is, until the cell is released. */
static inline char *smheap_ring_apart_data(const smheap_ring_end_t * c,
                                           const smheap_ring_geometry_t * g,
                                           smheap_cell_t * cell)
{
    return cell->apart_at ? (char *) cell + cell->apart_at : smheap_ring_warm_slot(c->ring, g);
}

/* Consumer: give the cell returned by smheap_ring_peek back to the producer (and the warm
 * slot, if the cell used it). */
static inline void smheap_ring_release(smheap_ring_end_t * c)
{
    c->pos++;
    atomic_store_explicit(&c->ring->head, (unsigned) c->pos, memory_order_release);
}

#endif /* SMHEAP_RING_H_INCLUDED */

/*
 * ch3:smheap -- a single-producer, single-consumer ring of fixed-size cells in shared
 * memory.  Independent of MPICH (C11 atomics only) so it can be unit-tested on its own.
 *
 * A cell is published by writing its first word last, with release order: the sequence
 * number (the producer's position plus one, modulo 2^SMHEAP_RING_SEQ_BITS), the producer's
 * ack (below) and the cell's form; the consumer polls the word of the cell it expects next.
 * Form 0 is a payload of `len` bytes; any other form is the caller's own, its bytes right
 * after the word (smheap_cell_inline), so that a short message and everything that
 * describes it fit the cell's first cache line: one line for the producer to write, one
 * for the consumer to take.  The consumer hands cells back through `head`; the producer
 * keeps a private copy of it and reads the shared one only when its copy says the ring is
 * full.  Positions are free-running unsigned counters; differences are taken modulo 2^32.
 *
 * A cell may be skipped for a while (see the hot cell below), and one written 2^SEQ_BITS
 * positions ago must not pass for a new one.  So in every period of 2^(SEQ_BITS - 2)
 * positions, `cells` positions from the middle of it go to their own cells, never to the
 * hot cell, which rewrites every cell once a period; and at the start of each period a free
 * hot cell gets a sequence number half the range away from any the consumer is about to
 * look for.
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

#ifndef SMHEAP_RING_SEQ_BITS
#define SMHEAP_RING_SEQ_BITS 32 /* the unit test takes fewer, to see them wrap */
#endif
#define SMHEAP_RING_SEQ_MASK ((UINT64_C(1) << SMHEAP_RING_SEQ_BITS) - 1)
#define SMHEAP_RING_REFRESH (UINT64_C(1) << (SMHEAP_RING_SEQ_BITS - 2))
/* acks carry 16 bits of a position: enough while the rings hold fewer than 2^15 cells */
#define SMHEAP_RING_MAX_CELLS (1u << 14)

typedef struct smheap_cell {
    /* sequence number | ack << 32 | form << 48 (smheap_cell_word) */
    _Alignas(SMHEAP_CACHELINE) _Atomic uint64_t word;
    uint32_t len;               /* form 0: payload bytes in this cell */
    uint32_t apart_len;         /* form 0: bytes of the message placed apart, 0 if none */
    uint32_t apart_at;          /* where: offset from the cell, or 0 for the warm slot */
    _Alignas(8) char payload[];
} smheap_cell_t;

static inline uint64_t smheap_cell_word(uint64_t pos, unsigned ack, unsigned form)
{
    return (pos & SMHEAP_RING_SEQ_MASK) | (uint64_t) (uint16_t) ack << 32 |
        (uint64_t) (uint16_t) form << 48;
}

/* Consumer, of a cell smheap_ring_peek returned: its form (0: a payload of len bytes)... */
static inline unsigned smheap_cell_form(const smheap_cell_t * cell)
{
    return (unsigned) (atomic_load_explicit(&cell->word, memory_order_relaxed) >> 48);
}

/* ... and its producer's ack, the low 16 bits of a position (smheap_ring_take_ack). */
static inline unsigned smheap_cell_ack(const smheap_cell_t * cell)
{
    return (uint16_t) (atomic_load_explicit(&cell->word, memory_order_relaxed) >> 32);
}

/* Where a cell of a form other than 0 keeps its bytes: right after the word. */
static inline char *smheap_cell_inline(smheap_cell_t * cell)
{
    return (char *) cell + sizeof(uint64_t);
}

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
 * message of `bytes` from the start of the cell, or NULL if there is none, it is too small,
 * the consumer may not have released its last message yet, or every cell is due to be
 * rewritten (see the top).  Never reads the consumer's head: a stream that gets no replies
 * leaves the hot cell alone. */
static inline smheap_cell_t *smheap_ring_reserve_hot(smheap_ring_end_t * p,
                                                     const smheap_ring_geometry_t * g,
                                                     size_t bytes)
{
    if (g->hot_size == 0 || bytes > g->hot_size || (int) (p->hot_pos - p->head_seen) > 0 ||
        ((p->pos + SMHEAP_RING_REFRESH / 2) & (SMHEAP_RING_REFRESH - 1)) < g->cells)
        return NULL;
    return smheap_ring_hot_cell(p->ring);
}

/* Producer: the consumer has released cells up to position `ack` (an ack from a cell of
 * the ring that runs the other way: its low 16 bits are enough, since it is never more
 * than the ring's cells from what we last knew). */
static inline void smheap_ring_take_ack(smheap_ring_end_t * p, unsigned ack)
{
    int16_t ahead = (int16_t) (uint16_t) (ack - p->head_seen);

    if (ahead > 0)
        p->head_seen += (unsigned) ahead;
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

/* Producer: the hot cell may be skipped for any number of positions; at the start of every
 * refresh period, give it a sequence number that the consumer will not look for within
 * the next two periods, unless it may still hold an unread message (then it was written
 * less than a ring ago, and is free at the next period). */
static inline void smheap_ring_refresh_hot(smheap_ring_end_t * p)
{
    smheap_cell_t *hot = smheap_ring_hot_cell(p->ring);

    p->head_seen = atomic_load_explicit(&p->ring->head, memory_order_acquire);
    if ((int) (p->hot_pos - p->head_seen) <= 0)
        atomic_store_explicit(&hot->word,
                              smheap_cell_word(p->pos + 1 + 2 * SMHEAP_RING_REFRESH, 0, 0),
                              memory_order_relaxed);
}

/* Producer: hand the reserved cell (or the hot cell, if it reserved that instead) to the
 * consumer with its form and our ack; a form other than 0 means the producer wrote the
 * cell's smheap_cell_inline bytes. */
static inline void smheap_ring_publish_form(smheap_ring_end_t * p,
                                            const smheap_ring_geometry_t * g,
                                            smheap_cell_t * cell, unsigned form, unsigned ack)
{
    int hot = cell == smheap_ring_hot_cell(p->ring);

    p->pos++;
    if (hot)
        p->hot_pos = (unsigned) p->pos;
    atomic_store_explicit(&cell->word, smheap_cell_word(p->pos, ack, form),
                          memory_order_release);
    if (!hot && g->hot_size > 0 && (p->pos & (SMHEAP_RING_REFRESH - 1)) == 0)
        smheap_ring_refresh_hot(p);
}

/* Producer: hand the reserved cell (or the hot cell, if it reserved that instead),
 * holding len bytes, and apart_len bytes placed apart (at apart_at from the cell, from
 * smheap_ring_spread, or in the warm slot if apart_at is 0 and the producer reserved it),
 * to the consumer, with our ack: the cells we have released of the ring that runs the
 * other way. */
static inline void smheap_ring_publish_apart(smheap_ring_end_t * p,
                                             const smheap_ring_geometry_t * g,
                                             smheap_cell_t * cell, size_t len,
                                             size_t apart_len, size_t apart_at, unsigned ack)
{
    cell->len = (uint32_t) len;
    cell->apart_len = (uint32_t) apart_len;
    cell->apart_at = (uint32_t) apart_at;
    if (apart_len > 0 && apart_at == 0)
        p->warm_pos = (unsigned) p->pos + 1;
    smheap_ring_publish_form(p, g, cell, 0, ack);
}

/* Producer: hand the reserved cell, holding len bytes (and warm_len bytes in the warm
 * slot, if it reserved it), to the consumer. */
static inline void smheap_ring_publish_warm(smheap_ring_end_t * p,
                                            const smheap_ring_geometry_t * g,
                                            smheap_cell_t * cell, size_t len, size_t warm_len,
                                            unsigned ack)
{
    smheap_ring_publish_apart(p, g, cell, len, warm_len, 0, ack);
}

/* Producer: hand the reserved cell, holding len bytes, to the consumer. */
static inline void smheap_ring_publish(smheap_ring_end_t * p, const smheap_ring_geometry_t * g,
                                       smheap_cell_t * cell, size_t len, unsigned ack)
{
    smheap_ring_publish_apart(p, g, cell, len, 0, 0, ack);
}

/* Consumer: the oldest unread cell (the hot cell or its position's own), or NULL if the
 * ring is empty. */
static inline smheap_cell_t *smheap_ring_peek(smheap_ring_end_t * c,
                                              const smheap_ring_geometry_t * g)
{
    smheap_cell_t *cell;

    uint64_t want = (c->pos + 1) & SMHEAP_RING_SEQ_MASK;

    if (g->hot_size > 0) {
        cell = smheap_ring_hot_cell(c->ring);
        if ((atomic_load_explicit(&cell->word, memory_order_acquire) & SMHEAP_RING_SEQ_MASK) ==
            want)
            return cell;
    }
    cell = smheap_ring_cell(c, g);
    if ((atomic_load_explicit(&cell->word, memory_order_acquire) & SMHEAP_RING_SEQ_MASK) != want)
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

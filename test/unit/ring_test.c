/*
 * Unit tests for the channel's ring and doorbell (no MPICH needed):
 *   - a ring fills at exactly its cell count, hands cells back in order, and keeps
 *     working when its free-running positions wrap past UINT_MAX;
 *   - its hot cell takes a short message only once the producer has been told (by an ack)
 *     that the consumer released the last one there; the consumer finds messages in order
 *     whether they are in the hot cell or their own;
 *   - built with narrow sequence numbers (ring_wrap_test), through many wraps: runs of
 *     messages through the hot cell alone and streams without it never let a cell or the
 *     hot cell written a wrap ago pass for a new message;
 *   - its warm slot holds one message's data at a time: the producer gets it back only
 *     once the consumer has released the cell that used it, also across UINT_MAX, and
 *     never for more data than it holds;
 *   - data spread into a cell stays inside it, clear of the header, on line boundaries,
 *     and moves to other lines of the cell from one lap of the ring to the next;
 *   - a doorbell rung with nobody asleep costs no futex call, and wakes an armed sleeper;
 *     rung again before its owner arms again, it is left alone (no second futex call);
 *   - a sleeper on several doorbells (its node one and its links') is woken by any of them,
 *     from another process, and otherwise sleeps until its timeout;
 *   - two processes stream 200,000 messages through a small ring, each side sleeping on
 *     its doorbell when it cannot proceed: every message arrives once, in order, intact,
 *     and no sleep ends by timeout (a lost wake-up would show up as one); once with a
 *     fence on every ring, once with sleepers calling membarrier instead, where the kernel
 *     allows it;
 *   - two processes exchange 200,000 messages in bursts and replies through a pair of
 *     rings with hot cells, each reply acknowledging what its sender has read: every
 *     message arrives once, in order, intact, through the hot cells and the others.
 */

#include "smheap_doorbell.h"
#include "smheap_ring.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "unit_check.h"

static void *shared_zeroed(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    return p;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void ring_at(smheap_ring_end_t * p, smheap_ring_end_t * c, smheap_ring_t * r,
                    uint64_t start)
{
    unsigned s32 = (unsigned) start;

    atomic_store(&r->head, s32);
    *p = (smheap_ring_end_t) { .ring = r, .pos = start, .head_seen = s32, .warm_pos = s32,
        .warm_retry = s32, .hot_pos = s32 };
    *c = *p;
}

static void test_fill_order_wrap(void)
{
    smheap_ring_geometry_t g = { .cells = 4, .cell_size = 256 };
    smheap_ring_t *r = shared_zeroed(smheap_ring_size(&g));
    smheap_ring_end_t p, c;
    uint64_t starts[] = { 0, UINT_MAX - 5 };

    CHECK(smheap_cell_payload(&g) == 256 - 24);
    CHECK(sizeof(smheap_cell_t) == SMHEAP_CACHELINE);   /* the payload starts in line 0 */
    for (int s = 0; s < 2; s++) {
        ring_at(&p, &c, r, starts[s]);
        CHECK(smheap_ring_peek(&c, &g) == NULL);
        for (int round = 0; round < 5; round++) {       /* crosses UINT_MAX for s == 1 */
            for (int i = 0; i < 4; i++) {
                smheap_cell_t *cell = smheap_ring_reserve(&p, &g);
                CHECK(cell != NULL);
                if (!cell)
                    return;
                memcpy(cell->payload, &i, sizeof i);
                smheap_ring_publish(&p, &g, cell, sizeof i, 0);
            }
            CHECK(smheap_ring_reserve(&p, &g) == NULL);        /* full at 4 */
            CHECK(smheap_ring_peek(&c, &g) != NULL);
            for (int i = 0; i < 4; i++) {
                smheap_cell_t *cell = smheap_ring_peek(&c, &g);
                int v;
                CHECK(cell != NULL && cell->len == sizeof v);
                if (!cell)
                    return;
                memcpy(&v, cell->payload, sizeof v);
                CHECK(v == i);
                smheap_ring_release(&c);
                if (i == 0)
                    CHECK(smheap_ring_reserve(&p, &g) != NULL); /* room again */
            }
            CHECK(smheap_ring_peek(&c, &g) == NULL);
        }
    }
    munmap(r, smheap_ring_size(&g));
}

static void test_warm_slot(void)
{
    smheap_ring_geometry_t g = { .cells = 4, .cell_size = 256, .warm_size = 128 };
    smheap_ring_t *r = shared_zeroed(smheap_ring_size(&g));
    smheap_ring_end_t p, c;
    uint64_t starts[] = { 0, UINT_MAX - 5 };

    CHECK(smheap_ring_warm_slot(r, &g) == (char *) r + smheap_ring_size(&g) - 128);
    for (int s = 0; s < 2; s++) {
        ring_at(&p, &c, r, starts[s]);
        for (int round = 0; round < 10; round++) {      /* crosses UINT_MAX for s == 1 */
            smheap_cell_t *cell = smheap_ring_reserve(&p, &g), *other;
            char *warm = smheap_ring_reserve_warm(&p, &g, 100);
            int v = round;

            CHECK(cell != NULL && warm != NULL);
            if (!cell || !warm)
                return;
            CHECK(smheap_ring_reserve_warm(&p, &g, 129) == NULL);      /* too big */
            memcpy(warm, &v, sizeof v);
            smheap_ring_publish_warm(&p, &g, cell, 8, 100, 0);
            /* the slot is taken until the consumer releases that cell... */
            other = smheap_ring_reserve(&p, &g);
            CHECK(other != NULL && smheap_ring_reserve_warm(&p, &g, 1) == NULL);
            if (!other)
                return;
            smheap_ring_publish(&p, &g, other, 4, 0);
            p.warm_retry = (unsigned) p.pos;       /* (found busy: it would wait before looking again) */
            cell = smheap_ring_peek(&c, &g);
            CHECK(cell != NULL && cell->len == 8 && cell->apart_len == 100 && cell->apart_at == 0);
            if (!cell)
                return;
            memcpy(&v, smheap_ring_apart_data(&c, &g, cell), sizeof v);
            CHECK(v == round);
            smheap_ring_release(&c);
            /* ...and free once it has, whatever came after it */
            CHECK(smheap_ring_reserve(&p, &g) != NULL);
            CHECK(smheap_ring_reserve_warm(&p, &g, 128) != NULL);
            cell = smheap_ring_peek(&c, &g);
            CHECK(cell != NULL && cell->len == 4 && cell->apart_len == 0);
            smheap_ring_release(&c);
        }
    }
    munmap(r, smheap_ring_size(&g));
}

static void test_spread(void)
{
    smheap_ring_geometry_t g = { .cells = 4, .cell_size = 1024 + 64 };
    smheap_ring_t *r = shared_zeroed(smheap_ring_size(&g));
    smheap_ring_end_t p, c;
    size_t hdr = 56, len = 200;
    size_t first = (offsetof(smheap_cell_t, payload) + hdr + 63) / 64 * 64;
    uint64_t starts[] = { 0, UINT_MAX - 9 };

    CHECK(smheap_ring_spread(&p, &g, hdr, 0) == 0);
    CHECK(smheap_ring_spread(&p, &g, hdr, g.cell_size - first + 1) == 0);      /* no room */
    CHECK(smheap_ring_spread(&p, &g, hdr, (g.cell_size - first) / 2 + 64) == 0);  /* one place */
    for (int s = 0; s < 2; s++) {
        size_t seen[4] = { 0 };

        ring_at(&p, &c, r, starts[s]);
        for (int lap = 0; lap < 4; lap++) {
            for (unsigned i = 0; i < g.cells; i++) {
                smheap_cell_t *cell = smheap_ring_reserve(&p, &g);
                size_t at = smheap_ring_spread(&p, &g, hdr, len);
                int v = lap * 100 + (int) i;

                CHECK(cell != NULL && at >= first && at % 64 == 0 && at + len <= g.cell_size);
                if (!cell || !at)
                    return;
                if (i == 0)
                    seen[lap] = at;
                if (s == 0)
                    CHECK(at == seen[lap]);     /* one offset per lap */
                memcpy((char *) cell + at, &v, sizeof v);
                smheap_ring_publish_apart(&p, &g, cell, hdr, len, at, 0);
                cell = smheap_ring_peek(&c, &g);
                CHECK(cell != NULL && cell->len == hdr && cell->apart_len == len);
                if (!cell)
                    return;
                memcpy(&v, smheap_ring_apart_data(&c, &g, cell), sizeof v);
                CHECK(v == lap * 100 + (int) i);
                smheap_ring_release(&c);
            }
        }
        if (s == 0)     /* each lap elsewhere in the cells (3 places for 200 bytes) */
            CHECK(seen[0] != seen[1] && seen[1] != seen[2] && seen[2] != seen[3]);
    }
    munmap(r, smheap_ring_size(&g));
}

/* Publish one int, as a message of `bytes` (the int, then nothing that matters), in the
 * hot cell if the producer may use it; says which. */
static int send_sized(smheap_ring_end_t * p, const smheap_ring_geometry_t * g, int v,
                      size_t bytes)
{
    smheap_cell_t *cell = smheap_ring_reserve(p, g), *hot;

    if (cell == NULL)
        return -1;
    if ((hot = smheap_ring_reserve_hot(p, g, offsetof(smheap_cell_t, payload) + bytes)))
        cell = hot;
    memcpy(cell->payload, &v, sizeof v);
    smheap_ring_publish(p, g, cell, bytes, 0);
    return hot != NULL;
}

/* Publish one int, in the hot cell if the producer may use it; says which. */
static int send_int(smheap_ring_end_t * p, const smheap_ring_geometry_t * g, int v, unsigned ack)
{
    smheap_cell_t *cell = smheap_ring_reserve(p, g), *hot;

    if (cell == NULL)
        return -1;
    if ((hot = smheap_ring_reserve_hot(p, g, offsetof(smheap_cell_t, payload) + sizeof v)))
        cell = hot;
    memcpy(cell->payload, &v, sizeof v);
    smheap_ring_publish(p, g, cell, sizeof v, ack);
    return hot != NULL;
}

/* The next message's int, or -1 if there is none; released. */
static int recv_int(smheap_ring_end_t * c, const smheap_ring_geometry_t * g, int *hot)
{
    smheap_cell_t *cell = smheap_ring_peek(c, g);
    int v;

    if (cell == NULL)
        return -1;
    *hot = cell == smheap_ring_hot_cell(c->ring);
    memcpy(&v, cell->payload, sizeof v);
    smheap_ring_release(c);
    return v;
}

static void test_hot_cell(void)
{
    smheap_ring_geometry_t g = { .cells = 4, .cell_size = 256, .hot_size = 128 };
    smheap_ring_geometry_t none = { .cells = 4, .cell_size = 256 };
    smheap_ring_t *r = shared_zeroed(smheap_ring_size(&g));
    smheap_ring_end_t p, c;
    uint64_t starts[] = { 0, UINT_MAX - 2, (uint64_t) 7 << 32 };
    int hot;

    CHECK(smheap_ring_size(&g) == 64 + 128 + 4 * 256);
    for (int s = 0; s < 3; s++) {
        ring_at(&p, &c, r, starts[s]);
        CHECK(smheap_ring_reserve(&p, &g) != NULL);
        CHECK(smheap_ring_reserve_hot(&p, &g, 128 + 1) == NULL);       /* too big */
        CHECK(smheap_ring_reserve_hot(&p, &none, 1) == NULL);         /* no hot cell */
        CHECK(send_int(&p, &g, 1, 0) == 1);     /* a new ring's hot cell is free */
        /* not yet read: the next two take their own cells, in the consumer's order */
        CHECK(send_int(&p, &g, 2, 0) == 0 && send_int(&p, &g, 3, 0) == 0);
        CHECK(recv_int(&c, &g, &hot) == 1 && hot);
        CHECK(recv_int(&c, &g, &hot) == 2 && !hot);
        /* read, but nobody said so: the producer does not look at the head for it */
        CHECK(send_int(&p, &g, 4, 0) == 0);
        smheap_ring_take_ack(&p, (unsigned) c.pos);     /* a reply says so */
        CHECK(send_int(&p, &g, 5, 0) == 1);
        smheap_ring_take_ack(&p, (unsigned) c.pos - 1); /* an older ack changes nothing */
        CHECK(p.head_seen == (unsigned) c.pos);
        CHECK(recv_int(&c, &g, &hot) == 3 && !hot);
        CHECK(recv_int(&c, &g, &hot) == 4 && !hot);
        CHECK(recv_int(&c, &g, &hot) == 5 && hot);
        CHECK(recv_int(&c, &g, &hot) == -1);
    }
    munmap(r, smheap_ring_size(&g));
}

/* Sequence numbers wrap (SMHEAP_RING_SEQ_BITS; this test is built with few of them too):
 * long runs of messages through the hot cell alone leave the other cells untouched, long
 * streams without replies leave the hot cell untouched, and neither may pass for a new
 * message when the numbers come round again.  Spells of ping-pong (each message read and
 * acknowledged before the next: all through the hot cell), of streams (messages too big
 * for it) and of random sends, receives and acks, each a few wraps long:
 * every message arrives once, in order, and the ring looks empty whenever it is. */
static void test_seq_wrap(void)
{
    smheap_ring_geometry_t g = { .cells = 4, .cell_size = 256, .hot_size = 128 };
    smheap_ring_t *r = shared_zeroed(smheap_ring_size(&g));
    smheap_ring_end_t p, c;
    const uint64_t wrap = UINT64_C(1) << SMHEAP_RING_SEQ_BITS;
    uint64_t hot_msgs = 0, bad = 0;
    int sent = 0, got = 0, hot;
    unsigned seed = 12345;

    if (SMHEAP_RING_SEQ_BITS > 16)
        return;         /* too many positions to go round: the narrow build does this */
    smheap_ring_end_init(&p, r);
    smheap_ring_end_init(&c, r);
    for (int spell = 0; spell < 60; spell++) {
        uint64_t len = wrap / 2 + (seed = seed * 1103515245 + 12345) % (3 * wrap);

        for (uint64_t i = 0; i < len; i++) {
            int kind = spell % 3, burst;

            seed = seed * 1103515245 + 12345;
            burst = kind == 0 ? 1 : kind == 1 ? 1 + (int) ((seed >> 8) % g.cells) : 0;
            for (int k = 0; k < burst; k++) {
                int h = send_sized(&p, &g, sent++, kind == 1 ? g.hot_size : sizeof(int));

                bad += h < 0;
                hot_msgs += h == 1;
            }
            if (kind == 2) {    /* random: a send, a receive (acknowledged or not), a look */
                if ((seed >> 8) % 3 == 0 && sent - got < (int) g.cells) {
                    int h = send_int(&p, &g, sent++, 0);

                    bad += h < 0;
                    hot_msgs += h == 1;
                } else if (sent > got) {
                    bad += recv_int(&c, &g, &hot) != got++;
                    if ((seed >> 12) % 2)
                        smheap_ring_take_ack(&p, (unsigned) c.pos);
                }
            } else {
                while (got < sent)
                    bad += recv_int(&c, &g, &hot) != got++;
                if (kind == 0)
                    smheap_ring_take_ack(&p, (unsigned) c.pos);
            }
            if (got == sent)
                bad += smheap_ring_peek(&c, &g) != NULL;        /* no stale cell passes */
        }
    }
    CHECK(bad == 0);
    CHECK(hot_msgs > 0 && hot_msgs < (uint64_t) sent);
    printf("wrap: %d messages over %d sequence bits, %llu through the hot cell, %llu bad\n",
           sent, SMHEAP_RING_SEQ_BITS, (unsigned long long) hot_msgs, (unsigned long long) bad);
    munmap(r, smheap_ring_size(&g));
}

static void test_doorbell_basics(void)
{
    smheap_doorbell_t *b = shared_zeroed(sizeof *b);
    int seq;
    double t0;

    smheap_doorbell_ring(b);
    CHECK(atomic_load(&b->seq) == 0);   /* nobody armed: no wake-up issued */

    seq = smheap_doorbell_arm(b);
    smheap_doorbell_ring(b);
    CHECK(atomic_load(&b->seq) == ((seq + 2) | SMHEAP_DOORBELL_RUNG));
    smheap_doorbell_ring(b);    /* rung already: no second bump (nor futex call) */
    CHECK(atomic_load(&b->seq) == ((seq + 2) | SMHEAP_DOORBELL_RUNG));
    t0 = now();
    CHECK(smheap_doorbell_sleep(b, seq, 2000000000L) == 0);     /* returns at once */
    CHECK(now() - t0 < 1.0);
    smheap_doorbell_disarm(b);

    /* the next arm takes the mark off, and the next ring bumps again */
    seq = smheap_doorbell_arm(b);
    CHECK(!(seq & SMHEAP_DOORBELL_RUNG) && atomic_load(&b->seq) == seq);
    smheap_doorbell_ring(b);
    CHECK(atomic_load(&b->seq) == ((seq + 2) | SMHEAP_DOORBELL_RUNG));
    smheap_doorbell_disarm(b);

    seq = smheap_doorbell_arm(b);       /* nobody rings: the timeout ends the sleep */
    t0 = now();
    CHECK(smheap_doorbell_sleep(b, seq, 50 * 1000 * 1000L) == 0);
    CHECK(now() - t0 >= 0.04);
    smheap_doorbell_disarm(b);
    munmap(b, sizeof *b);
}

/* Another process rings the last of three doorbells while we sleep on all of them. */
static void test_doorbell_any(void)
{
    smheap_doorbell_t *b = shared_zeroed(3 * sizeof(*b));
    smheap_doorbell_t *bells[3] = { &b[0], &b[1], &b[2] };
    int seqs[3];
    double t0;
    pid_t pid;

    for (int i = 0; i < 3; i++)
        seqs[i] = smheap_doorbell_arm(bells[i]);
    t0 = now();
    CHECK(smheap_doorbell_sleep_any(bells, seqs, 3, 50 * 1000 * 1000L) == 0);
    CHECK(now() - t0 >= 0.04);  /* nobody rang: the timeout ended it */

    pid = fork();
    if (pid == 0) {
        usleep(100 * 1000);     /* let the parent fall asleep */
        smheap_doorbell_ring(bells[2]);
        _exit(0);
    }
    t0 = now();
    CHECK(smheap_doorbell_sleep_any(bells, seqs, 3, 5000000000L) == 0);
    CHECK(now() - t0 < 2.5);    /* woken by the ring, not by the 5 s timeout */
    CHECK(atomic_load(&b[2].seq) == ((seqs[2] + 2) | SMHEAP_DOORBELL_RUNG));
    for (int i = 0; i < 3; i++)
        smheap_doorbell_disarm(bells[i]);
    waitpid(pid, NULL, 0);
    munmap(b, 3 * sizeof(*b));
}

#define NMSG 200000
#define TIMEOUT_NS 2000000000L  /* a sleep this long means a lost wake-up */

typedef struct {
    smheap_doorbell_t to_consumer;
    smheap_doorbell_t to_producer;
    atomic_int timeouts;
    atomic_int sleeps;
} stream_shared_t;

static size_t msg_len(unsigned i, size_t max)
{
    return sizeof(unsigned) + (i * 2654435761u) % (max - sizeof(unsigned) + 1);
}

/* Sleep on b unless ready() becomes true after arming; count timeouts. */
static void wait_on(smheap_doorbell_t * b, stream_shared_t * sh, smheap_ring_end_t * e,
                    const smheap_ring_geometry_t * g, int producer)
{
    int seq = smheap_doorbell_arm(b);
    int may_sleep = smheap_doorbell_armed() == 0;
    int ready = producer ? smheap_ring_reserve(e, g) != NULL : smheap_ring_peek(e, g) != NULL;
    if (!ready && may_sleep) {
        double t0 = now();
        smheap_doorbell_sleep(b, seq, TIMEOUT_NS);
        atomic_fetch_add(&sh->sleeps, 1);
        if (now() - t0 >= TIMEOUT_NS * 1e-9 * 0.9)
            atomic_fetch_add(&sh->timeouts, 1);
    }
    smheap_doorbell_disarm(b);
}

static void produce(smheap_ring_t * r, const smheap_ring_geometry_t * g, stream_shared_t * sh)
{
    smheap_ring_end_t p = { .ring = r };
    size_t max = smheap_cell_payload(g);

    for (unsigned i = 0; i < NMSG; i++) {
        smheap_cell_t *cell;
        size_t len = msg_len(i, max);
        while ((cell = smheap_ring_reserve(&p, g)) == NULL)
            wait_on(&sh->to_producer, sh, &p, g, 1);
        memcpy(cell->payload, &i, sizeof i);
        for (size_t j = sizeof i; j < len; j++)
            cell->payload[j] = (char) (i + j);
        smheap_ring_publish(&p, g, cell, len, 0);
        smheap_doorbell_ring(&sh->to_consumer);
    }
}

static int consume(smheap_ring_t * r, const smheap_ring_geometry_t * g, stream_shared_t * sh)
{
    smheap_ring_end_t c = { .ring = r };
    size_t max = smheap_cell_payload(g);
    int bad = 0;

    for (unsigned i = 0; i < NMSG; i++) {
        smheap_cell_t *cell;
        unsigned got;
        while ((cell = smheap_ring_peek(&c, g)) == NULL)
            wait_on(&sh->to_consumer, sh, &c, g, 0);
        memcpy(&got, cell->payload, sizeof got);
        if (got != i || cell->len != msg_len(i, max))
            bad++;
        else
            for (size_t j = sizeof got; j < cell->len; j++)
                if (cell->payload[j] != (char) (i + j)) {
                    bad++;
                    break;
                }
        smheap_ring_release(&c);
        smheap_doorbell_ring(&sh->to_producer);
    }
    return bad;
}

/* Bursts of 1 to 4 messages, the last of each asking for a reply; every message carries
 * its sender's ack.  Both sides busy-poll. */
#define BURST_MSGS 200000

typedef struct {
    atomic_int hot_msgs, hot_replies, replies, bad;
} burst_shared_t;

/* Send v (and whether a reply is wanted), in the hot cell if we may; says whether. */
static int send_pair(smheap_ring_end_t * out, const smheap_ring_end_t * in,
                     const smheap_ring_geometry_t * g, int v, int ask)
{
    smheap_cell_t *cell, *hot;

    while ((cell = smheap_ring_reserve(out, g)) == NULL);
    if ((hot = smheap_ring_reserve_hot(out, g, offsetof(smheap_cell_t, payload) + 8)) != NULL)
        cell = hot;
    memcpy(cell->payload, &v, sizeof v);
    memcpy(cell->payload + sizeof v, &ask, sizeof ask);
    smheap_ring_publish(out, g, cell, 2 * sizeof(int), (unsigned) in->pos);
    return hot != NULL;
}

/* Wait for the next message, take its ack, read it and release it. */
static int recv_pair(smheap_ring_end_t * in, smheap_ring_end_t * out,
                     const smheap_ring_geometry_t * g, int *ask)
{
    smheap_cell_t *cell;
    int v;

    while ((cell = smheap_ring_peek(in, g)) == NULL);
    smheap_ring_take_ack(out, smheap_cell_ack(cell));
    memcpy(&v, cell->payload, sizeof v);
    memcpy(ask, cell->payload + sizeof v, sizeof *ask);
    smheap_ring_release(in);
    return v;
}

static void burst_sender(smheap_ring_end_t * out, smheap_ring_end_t * in,
                         const smheap_ring_geometry_t * g, burst_shared_t * sh)
{
    int v = 0, hot = 0, ask;

    for (int bursts = 0; v < BURST_MSGS; bursts++) {
        int n = 1 + bursts % 4;

        for (int k = 0; k < n && v < BURST_MSGS; k++, v++)
            hot += send_pair(out, in, g, v, k == n - 1 || v == BURST_MSGS - 1);
        if (recv_pair(in, out, g, &ask) != v - 1)
            atomic_fetch_add(&sh->bad, 1);
    }
    send_pair(out, in, g, -1, 0);
    atomic_store(&sh->hot_msgs, hot);
}

static void burst_replier(smheap_ring_end_t * out, smheap_ring_end_t * in,
                          const smheap_ring_geometry_t * g, burst_shared_t * sh)
{
    int next = 0, hot = 0, replies = 0, ask, v;

    while ((v = recv_pair(in, out, g, &ask)) != -1) {
        if (v != next++)
            atomic_fetch_add(&sh->bad, 1);
        if (ask) {
            hot += send_pair(out, in, g, v, 0);
            replies++;
        }
    }
    atomic_store(&sh->hot_replies, hot);
    atomic_store(&sh->replies, replies);
}

static void test_two_process_bursts(void)
{
    smheap_ring_geometry_t g = { .cells = 8, .cell_size = 256, .hot_size = 128 };
    char *rings = shared_zeroed(2 * smheap_ring_size(&g));
    smheap_ring_t *ab = (smheap_ring_t *) rings;
    smheap_ring_t *ba = (smheap_ring_t *) (rings + smheap_ring_size(&g));
    burst_shared_t *sh = shared_zeroed(sizeof *sh);
    smheap_ring_end_t out, in;
    int status;
    pid_t pid = fork();

    if (pid == 0) {
        smheap_ring_end_init(&out, ba);
        smheap_ring_end_init(&in, ab);
        burst_replier(&out, &in, &g, sh);
        _exit(0);
    }
    smheap_ring_end_init(&out, ab);
    smheap_ring_end_init(&in, ba);
    burst_sender(&out, &in, &g, sh);
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(atomic_load(&sh->bad) == 0);
    /* the first message of each burst finds the hot cell free (the reply to the burst
     * before said so), the others do not: 2 in 5... */
    CHECK(atomic_load(&sh->hot_msgs) == atomic_load(&sh->replies));
    CHECK(atomic_load(&sh->replies) == BURST_MSGS / 5 * 2);
    /* ...and every reply finds it free (the next burst said so) */
    CHECK(atomic_load(&sh->hot_replies) == atomic_load(&sh->replies));
    printf("bursts: %d messages, %d bad, %d through the hot cell, %d of %d replies\n",
           BURST_MSGS, atomic_load(&sh->bad), atomic_load(&sh->hot_msgs),
           atomic_load(&sh->hot_replies), atomic_load(&sh->replies));
}

/* The handshake itself as a store-buffering litmus test: in round i the ringer stores i to
 * `work` and then loads `armed`, the sleeper adds to `armed` (a locked add, as
 * smheap_doorbell_arm does) and then loads `work`.  A round in which neither saw the other's
 * store is a lost wake-up.  Without the ringer's fence x86 allows it (the ringer's load may
 * pass its own store): `plain` counts such rounds to show the test can see them; with the
 * fence, or with the sleeper's membarrier and no fence, there must be none. */
#define LITMUS_ROUNDS 100000

typedef struct {
    _Alignas(64) atomic_uint round[2];  /* the round each side has reached */
    _Alignas(64) atomic_uint work;      /* the ringer's publication */
    _Alignas(64) atomic_uint armed;     /* the sleeper's arming */
    _Alignas(64) unsigned char ringer_saw[LITMUS_ROUNDS];
    unsigned char sleeper_saw[LITMUS_ROUNDS];
} litmus_t;

enum litmus_way { LITMUS_PLAIN, LITMUS_FENCE, LITMUS_MEMBARRIER };

static void litmus_side(litmus_t * l, int side, enum litmus_way way, int rounds)
{
    for (unsigned i = 1; i <= (unsigned) rounds; i++) {
        atomic_store(&l->round[side], i);
        while (atomic_load_explicit(&l->round[1 - side], memory_order_acquire) < i)
            continue;
        if (side == 0) {        /* ringer */
            atomic_store_explicit(&l->work, i, memory_order_relaxed);
            smheap_doorbell_order(way != LITMUS_FENCE);
            l->ringer_saw[i - 1] = atomic_load_explicit(&l->armed, memory_order_relaxed) >= i;
        } else {                /* sleeper: armed counts one per round, so it reaches i */
            atomic_fetch_add_explicit(&l->armed, 1, memory_order_seq_cst);
            if (way == LITMUS_MEMBARRIER)
                CHECK(smheap_doorbell_armed() == 0);
            l->sleeper_saw[i - 1] = atomic_load_explicit(&l->work, memory_order_relaxed) >= i;
        }
    }
}

/* Rounds in which neither side saw the other. */
static int litmus(enum litmus_way way, int rounds)
{
    litmus_t *l = shared_zeroed(sizeof *l);
    int status, lost = 0;
    pid_t pid = fork();

    if (way == LITMUS_MEMBARRIER)
        CHECK((smheap_doorbell_fenceless = smheap_doorbell_register()) == 1);
    if (pid == 0) {
        litmus_side(l, 1, way, rounds);
        _exit(failures ? 1 : 0);
    }
    litmus_side(l, 0, way, rounds);
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int i = 0; i < rounds; i++)
        lost += !l->ringer_saw[i] && !l->sleeper_saw[i];
    munmap(l, sizeof *l);
    return lost;
}

static void test_handshake_litmus(void)
{
    int plain = litmus(LITMUS_PLAIN, LITMUS_ROUNDS);
    int fence = litmus(LITMUS_FENCE, LITMUS_ROUNDS);
    int mb = -1;

    CHECK(fence == 0);
    if (smheap_doorbell_register()) {
        mb = litmus(LITMUS_MEMBARRIER, LITMUS_ROUNDS / 4);
        CHECK(mb == 0);
    }
    printf("handshake: rounds where neither side saw the other: %d of %d with no fence "
           "(x86 allows it), %d of %d with the fence, ", plain, LITMUS_ROUNDS, fence,
           LITMUS_ROUNDS);
    if (mb < 0)
        printf("membarrier refused here\n");
    else
        printf("%d of %d with the sleeper's membarrier\n", mb, LITMUS_ROUNDS / 4);
}

/* A stream through a 4-cell ring, each side sleeping whenever it cannot go on: every
 * message arrives intact and no sleep lasts until its timeout.  fenceless: both processes
 * register for membarrier and mark their doorbells, so that ringers skip their fence and
 * sleepers call membarrier (smheap_doorbell.h); where the kernel refuses, it is skipped. */
static void test_two_process_stream(int fenceless)
{
    smheap_ring_geometry_t g = { .cells = 4, .cell_size = 512 };
    smheap_ring_t *r = shared_zeroed(smheap_ring_size(&g));
    stream_shared_t *sh = shared_zeroed(sizeof *sh);
    int status, bad;
    pid_t pid = fork();

    if (fenceless) {
        /* each process for itself: a registration is the process's, not its parent's */
        sh->to_producer.owner_membarrier = 1;
        sh->to_consumer.owner_membarrier = 1;
        smheap_doorbell_fenceless = smheap_doorbell_register();
        if (!smheap_doorbell_fenceless) {
            if (pid == 0)
                _exit(0);
            waitpid(pid, &status, 0);
            printf("stream without fences: membarrier refused here, skipped\n");
            return;
        }
    }
    if (pid == 0) {
        produce(r, &g, sh);
        _exit(0);
    }
    bad = consume(r, &g, sh);
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(bad == 0);
    CHECK(atomic_load(&sh->timeouts) == 0);
    printf("stream%s: %d messages, %d bad, %d sleeps, %d timed out\n",
           fenceless ? " without fences (membarrier)" : "", NMSG, bad,
           atomic_load(&sh->sleeps), atomic_load(&sh->timeouts));
}

int main(void)
{
    if (SMHEAP_RING_SEQ_BITS < 32) {
        test_seq_wrap();        /* the narrow build: the others assume 32 bits */
        printf("%s\n", failures ? "FAILED" : "all sequence wrap checks passed");
        return failures ? 1 : 0;
    }
    test_fill_order_wrap();
    test_warm_slot();
    test_spread();
    test_hot_cell();
    test_doorbell_basics();
    test_doorbell_any();
    test_two_process_stream(0);
    test_two_process_bursts();
    test_handshake_litmus();            /* from here on this process is registered */
    test_two_process_stream(1);
    printf("%s\n", failures ? "FAILED" : "all ring and doorbell checks passed");
    return failures ? 1 : 0;
}

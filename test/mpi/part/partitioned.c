/* MPI-4 partitioned communication on ch3:smheap.  Every rank sends to the next rank and
 * receives from the previous one (a ring: with 2 ranks, both ways at once), with one
 * persistent request pair per case used for ROUNDS rounds of MPI_Start/MPI_Wait, the data
 * of every round checked.  Cases: send buffers in the heap (read in place by a receiver on
 * the same node), in static memory and on the stack (sent as messages), sender and
 * receiver cutting the data into different numbers of partitions, zero-size partitions,
 * derived send and receive types, partitions readied in reverse order, by MPI_Pready_range
 * and MPI_Pready_list, and by 4 threads at once (MPI_THREAD_MULTIPLE), a receiver that
 * polls MPI_Parrived and checks each partition as it arrives; MPI_Request_free with and
 * without MPI_Start; bad partition numbers return an error.  The MPI_T counters must say
 * that the partitions went in place exactly when they could (same node, heap on, send
 * buffer in the heap and contiguous, MPIR_CVAR_CH3_SMHEAP_PART_IN_PLACE on), as messages
 * otherwise; those the sender placed itself are some of those in place. */
#include <pthread.h>
#include "../include/smheap_test.h"

#define ROUNDS 10
#define BIGGEST (1 << 19)       /* doubles in the largest message (4 MiB) */
#define NTHREADS 4

enum where { HEAP, STATIC, STACK };
enum order { FORWARD, REVERSE, RANGE, LIST, THREADS };
/* who starts first: free-running, the receiver (then the sender places heap data in a heap
 * receive buffer itself from round 2, once matched), or the sender, which readies every
 * partition before the receiver starts (then the receiver copies all of them) */
enum sync { FREE, RECEIVER_FIRST, SENDER_FIRST };

struct pcase {
    const char *what;
    int spart, rpart;
    long total;                 /* doubles in the message */
    enum where swhere, rwhere;
    int sstride, rstride;       /* 1: contiguous; 2: every other double (a vector type) */
    enum order order;
    int poll;                   /* the receiver polls MPI_Parrived */
    enum sync sync;
};

static const struct pcase cases[] = {
    {"heap 8/8", 8, 8, 8 * 4096, HEAP, HEAP, 1, 1, FORWARD, 0},
    {"heap 8/3", 8, 3, 24 * 1000, HEAP, HEAP, 1, 1, FORWARD, 1},
    {"heap 1/16", 1, 16, 16 * 64, HEAP, HEAP, 1, 1, FORWARD, 1},
    {"heap 64 reverse, 4 MiB", 64, 64, BIGGEST, HEAP, HEAP, 1, 1, REVERSE, 1},
    {"heap 8192/512, 4 MiB", 8192, 512, BIGGEST, HEAP, STATIC, 1, 1, RANGE, 0},
    {"static 16/16", 16, 16, 16 * 8192, STATIC, STATIC, 1, 1, FORWARD, 1},
    {"static 16/32 list", 16, 32, 512, STATIC, HEAP, 1, 1, LIST, 0},
    {"stack 4/8", 4, 8, 64, STACK, STACK, 1, 1, FORWARD, 1},
    {"zero size", 4, 4, 0, HEAP, HEAP, 1, 1, FORWARD, 0},
    {"vector receive", 8, 4, 8 * 512, HEAP, HEAP, 1, 2, FORWARD, 1},
    {"vector send", 4, 8, 8 * 512, HEAP, HEAP, 2, 1, REVERSE, 0},
    {"threads 64/64", 64, 64, 64 * 1024, HEAP, HEAP, 1, 1, THREADS, 0},
    {"threads static 64/16", 64, 16, 64 * 256, STATIC, HEAP, 1, 1, THREADS, 1},
    {"receiver first 16/16", 16, 16, 16 * 4096, HEAP, HEAP, 1, 1, FORWARD, 0, RECEIVER_FIRST},
    {"receiver first 16/4", 16, 4, 16 * 4096, HEAP, HEAP, 1, 1, THREADS, 1, RECEIVER_FIRST},
    {"sender first 16/16", 16, 16, 16 * 4096, HEAP, HEAP, 1, 1, FORWARD, 0, SENDER_FIRST},
};

static double static_send[2 * BIGGEST], static_recv[2 * BIGGEST];
static int rank, size, errs, threads_ok, in_place_on;
static int shared;              /* smheap_heap_shared */
static char (*hosts)[MPI_MAX_PROCESSOR_NAME];

static double value(long i, int round, int src)
{
    return (double) i + 1e6 * round + 1e9 * src;
}

/* A datatype for `count` doubles at `stride`, whose extent tiles partitions. */
static MPI_Datatype part_type(long count, int stride)
{
    MPI_Datatype v, t;

    if (stride == 1)
        return MPI_DOUBLE;
    MPI_Type_vector((int) count, 1, stride, MPI_DOUBLE, &v);
    MPI_Type_create_resized(v, 0, (MPI_Aint) (count * stride * sizeof(double)), &t);
    MPI_Type_free(&v);
    MPI_Type_commit(&t);
    return t;
}

static double *buffer(enum where w, double *stack, long n, int is_send)
{
    if (w == HEAP)
        return malloc((n > 0 ? n : 1) * sizeof(double));
    if (w == STACK)
        return stack;
    return is_send ? static_send : static_recv;
}

struct sender {
    MPI_Request req;
    double *buf;
    const struct pcase *c;
    int round, first, step;
};

static void fill_partition(const struct sender *s, int k)
{
    long per = s->c->total / s->c->spart;

    for (long i = k * per; i < (k + 1) * per; i++)
        s->buf[i * s->c->sstride] = value(i, s->round, rank);
}

static void *ready_some(void *arg)
{
    struct sender *s = arg;

    for (int k = s->first; k < s->c->spart; k += s->step) {
        fill_partition(s, k);
        MPI_Pready(k, s->req);
    }
    return NULL;
}

static void ready_all(struct sender *s)
{
    const struct pcase *c = s->c;

    switch (c->order) {
    case FORWARD:
        for (int k = 0; k < c->spart; k++) {
            fill_partition(s, k);
            MPI_Pready(k, s->req);
        }
        break;
    case REVERSE:
        for (int k = c->spart - 1; k >= 0; k--) {
            fill_partition(s, k);
            MPI_Pready(k, s->req);
        }
        break;
    case RANGE:
        for (int k = 0; k < c->spart; k++)
            fill_partition(s, k);
        MPI_Pready_range(0, c->spart / 2 - 1, s->req);
        MPI_Pready_range(c->spart / 2, c->spart - 1, s->req);
        break;
    case LIST:{
            int *list = malloc(c->spart * sizeof(int)), n = 0;

            for (int k = 0; k < c->spart; k++)
                fill_partition(s, k);
            for (int k = 1; k < c->spart; k += 2)
                list[n++] = k;  /* odd ones first, then the even ones */
            for (int k = 0; k < c->spart; k += 2)
                list[n++] = k;
            MPI_Pready_list(c->spart / 2, list, s->req);
            MPI_Pready_list(c->spart - c->spart / 2, list + c->spart / 2, s->req);
            free(list);
            break;
        }
    case THREADS:{
            pthread_t t[NTHREADS];
            struct sender ts[NTHREADS];

            for (int i = 0; i < NTHREADS; i++) {
                ts[i] = *s;
                ts[i].first = i;
                ts[i].step = NTHREADS;
                pthread_create(&t[i], NULL, ready_some, &ts[i]);
            }
            for (int i = 0; i < NTHREADS; i++)
                pthread_join(t[i], NULL);
            break;
        }
    }
}

/* Errors in receive partition j (or the whole message if j < 0). */
static int check(const struct pcase *c, const double *rbuf, int j, int round, int src)
{
    long per = c->total / c->rpart, lo = j < 0 ? 0 : j * per, hi = j < 0 ? c->total : lo + per;
    int bad = 0;

    for (long i = lo; i < hi; i++) {
        double want = value(i, round, src), got = rbuf[i * c->rstride];

        if (got != want && bad++ < 3)
            fprintf(stderr, "rank %d, %s, round %d: element %ld is %.0f, not %.0f\n", rank,
                    c->what, round, i, got, want);
    }
    return bad;
}

/* Would our send go in place? */
static int expect_in_place(const struct pcase *c, int dst)
{
    return in_place_on && shared && strcmp(hosts[rank], hosts[dst]) == 0 &&
        c->swhere == HEAP && c->sstride == 1 && c->total > 0;
}

static unsigned long long sum(unsigned long long v)
{
    unsigned long long all;

    MPI_Allreduce(&v, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return all;
}

static void run_case(const struct pcase *c, int tag)
{
    int dst = (rank + 1) % size, src = (rank + size - 1) % size;
    long scount = c->total / c->spart, rcount = c->total / c->rpart;
    double sstack[2 * 64], rstack[2 * 64];
    double *sbuf = buffer(c->swhere, sstack, c->total * c->sstride, 1);
    double *rbuf = buffer(c->rwhere, rstack, c->total * c->rstride, 0);
    MPI_Datatype stype = part_type(scount, c->sstride), rtype = part_type(rcount, c->rstride);
    unsigned long long in_place0 = pvar_value("smheap_part_in_place");
    unsigned long long msgs0 = pvar_value("smheap_part_msgs");
    unsigned long long placed0 = pvar_value("smheap_part_placed");
    unsigned long long want_in_place = 0, want_msgs = 0, want_placed = 0;
    struct sender s = { MPI_REQUEST_NULL, sbuf, c, 0, 0, 1 };
    MPI_Request rreq;
    int scnt = c->sstride == 1 ? (int) scount : 1, rcnt = c->rstride == 1 ? (int) rcount : 1;

    MPI_Psend_init(sbuf, c->spart, scnt, stype, dst, tag, MPI_COMM_WORLD, MPI_INFO_NULL,
                   &s.req);
    MPI_Precv_init(rbuf, c->rpart, rcnt, rtype, src, tag, MPI_COMM_WORLD, MPI_INFO_NULL, &rreq);
    for (int round = 1; round <= ROUNDS; round++) {
        for (long i = 0; i < c->total * c->rstride; i++)
            rbuf[i] = -1;
        s.round = round;
        if (c->sync == SENDER_FIRST) {
            MPI_Start(&s.req);
            ready_all(&s);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Start(&rreq);
        } else {
            MPI_Start(&rreq);
            if (c->sync == RECEIVER_FIRST)
                MPI_Barrier(MPI_COMM_WORLD);
            MPI_Start(&s.req);
            ready_all(&s);
        }
        if (c->poll) {
            char *seen = calloc(c->rpart, 1);
            int left = c->rpart, flag;

            while (left > 0)
                for (int j = 0; j < c->rpart; j++) {
                    if (seen[j])
                        continue;
                    MPI_Parrived(rreq, j, &flag);
                    if (flag) {
                        errs += check(c, rbuf, j, round, src);
                        seen[j] = 1;
                        left--;
                    }
                }
            free(seen);
        }
        MPI_Wait(&s.req, MPI_STATUS_IGNORE);
        MPI_Wait(&rreq, MPI_STATUS_IGNORE);
        errs += check(c, rbuf, -1, round, src);
    }
    MPI_Request_free(&s.req);
    MPI_Request_free(&rreq);

    if (expect_in_place(c, dst)) {
        want_in_place = (unsigned long long) ROUNDS *c->spart;
        if (c->sync == RECEIVER_FIRST && c->rwhere == HEAP && c->rstride == 1)
            want_placed = (unsigned long long) (ROUNDS - 1) * c->spart;
    }
    else if (c->total > 0)
        want_msgs = (unsigned long long) ROUNDS *c->spart;
    want_in_place = sum(want_in_place);
    want_msgs = sum(want_msgs);
    in_place0 = sum(pvar_value("smheap_part_in_place") - in_place0);
    msgs0 = sum(pvar_value("smheap_part_msgs") - msgs0);
    placed0 = sum(pvar_value("smheap_part_placed") - placed0);
    want_placed = sum(want_placed);
    if (rank == 0 && (in_place0 != want_in_place || msgs0 != want_msgs ||
                      placed0 > in_place0 || placed0 < want_placed ||
                      (c->sync == SENDER_FIRST && placed0 > 0))) {
        fprintf(stderr, "%s: %llu partitions in place (%llu placed by the sender) and %llu "
                "as messages, expected %llu and %llu\n", c->what, in_place0, placed0, msgs0,
                want_in_place, want_msgs);
        errs++;
    }
    if (c->swhere == HEAP)
        free(sbuf);
    if (c->rwhere == HEAP)
        free(rbuf);
    if (stype != MPI_DOUBLE)
        MPI_Type_free(&stype);
    if (rtype != MPI_DOUBLE)
        MPI_Type_free(&rtype);
}

/* Requests freed without a round; bad partition numbers. */
static void run_edges(void)
{
    int dst = (rank + 1) % size, src = (rank + size - 1) % size, a = rank, b = -1, flag, rc;
    MPI_Request sreq, rreq;

    MPI_Psend_init(&a, 1, 1, MPI_INT, dst, 900, MPI_COMM_WORLD, MPI_INFO_NULL, &sreq);
    MPI_Precv_init(&b, 1, 1, MPI_INT, src, 900, MPI_COMM_WORLD, MPI_INFO_NULL, &rreq);
    MPI_Request_free(&sreq);
    MPI_Request_free(&rreq);

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Psend_init(&a, 1, 1, MPI_INT, dst, 901, MPI_COMM_WORLD, MPI_INFO_NULL, &sreq);
    MPI_Precv_init(&b, 1, 1, MPI_INT, src, 901, MPI_COMM_WORLD, MPI_INFO_NULL, &rreq);
    MPI_Start(&sreq);
    MPI_Start(&rreq);
    if ((rc = MPI_Pready(1, sreq)) == MPI_SUCCESS) {
        fprintf(stderr, "rank %d: MPI_Pready of partition 1 of 1 succeeded\n", rank);
        errs++;
    }
    if ((rc = MPI_Pready(-1, sreq)) == MPI_SUCCESS) {
        fprintf(stderr, "rank %d: MPI_Pready of partition -1 succeeded\n", rank);
        errs++;
    }
    if ((rc = MPI_Parrived(rreq, 1, &flag)) == MPI_SUCCESS) {
        fprintf(stderr, "rank %d: MPI_Parrived of partition 1 of 1 succeeded\n", rank);
        errs++;
    }
    MPI_Pready(0, sreq);
    MPI_Wait(&sreq, MPI_STATUS_IGNORE);
    MPI_Wait(&rreq, MPI_STATUS_IGNORE);
    if (b != src) {
        fprintf(stderr, "rank %d: received %d, expected %d\n", rank, b, src);
        errs++;
    }
    MPI_Request_free(&sreq);
    MPI_Request_free(&rreq);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    int provided, tprovided;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &tprovided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    threads_ok = provided == MPI_THREAD_MULTIPLE;
    in_place_on = cvar_int("MPIR_CVAR_CH3_SMHEAP_PART_IN_PLACE") == 1;
    shared = pvar_value("smheap_heap_shared") == 1;
    hosts = host_names(MPI_COMM_WORLD);

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (cases[i].order != THREADS || threads_ok)
            run_case(&cases[i], (int) i);
    run_edges();

    free(hosts);
    smheap_test_report(errs);
    MPI_Finalize();
    MPI_T_finalize();
    return 0;
}

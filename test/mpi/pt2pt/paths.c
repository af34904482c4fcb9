/* Every point-to-point path of ch3:smheap delivers correctly, and the MPI_T counters say
 * which path each message took:
 *   eager        1000 B from the heap, 64 KiB from static memory (below ch3's eager limit)
 *   single copy  16 KiB from the heap (the receiver copies)
 *   shared copy  1 MiB from the heap into a heap buffer (sender and receiver copy)
 *   kernel       1 MiB from static memory (through the kernel, the receiver sharing the
 *                copy with the sender: smheap_cma_msgs and smheap_shared_copy_msgs)
 *   staged       the same where the kernel does not allow it or MPIR_CVAR_CH3_SMHEAP_CMA_MIN
 *                is -1 (ch3's rendezvous through the rings)
 *   remote       anything, when ranks 0 and 1 run on different nodes (sockets)
 * each received posted first and unexpected, into heap and static buffers, with
 * MPI_ANY_SOURCE/MPI_ANY_TAG, by MPI_Ssend, through MPI_Mprobe/MPI_Mrecv, truncated, and
 * zero bytes.  With the heap off (testlist env) everything is eager or staged. */
#include <stdlib.h>
#include <string.h>
#include "../include/smheap_test.h"

#define BIG (1 << 20)
#define SLOW_TAG (1 << 20)      /* above every tag of the cases */
static char static_send[BIG], static_recv[BIG];

enum path { EAGER, SINGLE, SHARED, KERNEL, STAGED, REMOTE, NPATHS };
static const char *path_name[] = { "eager", "single_copy", "shared_copy", "kernel", "staged",
    "remote"
};
static const char *pvar_name[] = { "smheap_eager_msgs", "smheap_single_copy_msgs",
    "smheap_shared_copy_msgs", "smheap_cma_msgs", "smheap_staged_msgs", "smheap_remote_msgs"
};

enum op { EXPECTED, UNEXPECTED, ANY, SSEND, MPROBE, TRUNCATE, NOPS };
static const char *op_name[] = { "expected", "unexpected", "any-source/tag", "ssend",
    "mprobe", "truncate"
};

struct sendcase {
    const char *what;
    int heap;                   /* send buffer from malloc, else static */
    int size;
};

static const struct sendcase cases[] = {
    {"1000 B heap", 1, 1000},
    {"64 KiB static", 0, 64 * 1024},
    {"16 KiB heap", 1, 16 * 1024},
    {"1 MiB heap", 1, BIG},
    {"1 MiB static", 0, BIG},
};

static int shared;              /* smheap_heap_shared */
static int cma;                 /* smheap_cma */
static int local;               /* ranks 0 and 1 share a node */

/* The path the channel should take; SHARED also needs the receive buffer in the heap. */
static enum path expected_path(const struct sendcase *c, int recv_heap)
{
    if (!local)
        return REMOTE;
    if (shared && c->heap && c->size >= 64 * 1024)
        return recv_heap ? SHARED : SINGLE;
    if (shared && c->heap && c->size >= 4096)
        return SINGLE;
    if (c->size <= 128 * 1024 - 64)
        return EAGER;
    return cma ? KERNEL : STAGED;
}

static void fill(char *p, int n, int seed)
{
    for (int i = 0; i < n; i++)
        p[i] = (char) (seed + i % 253);
}

static int check(const char *p, int n, int seed)
{
    for (int i = 0; i < n; i++)
        if (p[i] != (char) (seed + i % 253))
            return i + 1;
    return 0;
}

static void read_counters(unsigned long long v[NPATHS])
{
    for (int p = 0; p < NPATHS; p++)
        v[p] = pvar_value(pvar_name[p]);
}

/* Send one message as op says; d gets how much each path counter moved for this send
 * alone (the barriers around it send messages of their own). */
static void send_one(const struct sendcase *c, char *buf, enum op op, int tag,
                     unsigned long long d[NPATHS])
{
    MPI_Request req;
    unsigned long long before[NPATHS], after[NPATHS];

    if (op != UNEXPECTED)
        MPI_Barrier(MPI_COMM_WORLD);    /* the receive is posted before this */
    read_counters(before);
    if (op == UNEXPECTED)
        MPI_Isend(buf, c->size, MPI_CHAR, 1, tag, MPI_COMM_WORLD, &req);
    else if (op == SSEND)
        MPI_Ssend(buf, c->size, MPI_CHAR, 1, tag, MPI_COMM_WORLD);
    else
        MPI_Send(buf, c->size, MPI_CHAR, 1, tag, MPI_COMM_WORLD);
    read_counters(after);
    for (int p = 0; p < NPATHS; p++)
        d[p] = after[p] - before[p];
    if (op == UNEXPECTED) {
        MPI_Barrier(MPI_COMM_WORLD);    /* the receive is posted after this */
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
}

/* Receive one message as op says; returns the number of errors. */
static int recv_one(const struct sendcase *c, char *buf, enum op op, int tag, int seed)
{
    MPI_Request req;
    MPI_Status st;
    MPI_Message msg;
    int count, rc = MPI_SUCCESS, errs = 0, bad;
    int want = op == TRUNCATE ? c->size / 2 : c->size;

    memset(buf, 0, BIG);
    if (op == UNEXPECTED) {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Probe(0, tag, MPI_COMM_WORLD, &st);
        rc = MPI_Recv(buf, c->size, MPI_CHAR, 0, tag, MPI_COMM_WORLD, &st);
    } else if (op == MPROBE) {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Mprobe(0, tag, MPI_COMM_WORLD, &msg, &st);
        MPI_Get_count(&st, MPI_CHAR, &count);
        errs += count != c->size;
        rc = MPI_Mrecv(buf, c->size, MPI_CHAR, &msg, &st);
    } else {
        if (op == ANY)
            MPI_Irecv(buf, want, MPI_CHAR, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &req);
        else
            MPI_Irecv(buf, want, MPI_CHAR, 0, tag, MPI_COMM_WORLD, &req);
        MPI_Barrier(MPI_COMM_WORLD);
        rc = MPI_Wait(&req, &st);
    }
    if (op == TRUNCATE) {
        MPI_Error_class(rc == MPI_SUCCESS ? st.MPI_ERROR : rc, &rc);
        if (rc != MPI_ERR_TRUNCATE) {
            printf("%s truncated: error class %d, not MPI_ERR_TRUNCATE\n", c->what, rc);
            errs++;
        }
        return errs + (check(buf, want, seed) != 0);
    }
    MPI_Get_count(&st, MPI_CHAR, &count);
    if (rc != MPI_SUCCESS || st.MPI_SOURCE != 0 || st.MPI_TAG != tag || count != c->size) {
        printf("%s %s: rc %d source %d tag %d count %d\n", c->what, op_name[op], rc,
               st.MPI_SOURCE, st.MPI_TAG, count);
        errs++;
    }
    if ((bad = check(buf, c->size, seed)) != 0) {
        printf("%s %s: byte %d differs\n", c->what, op_name[op], bad - 1);
        errs++;
    }
    return errs;
}

/* The sender counts eager, single-copy, kernel, staged and remote sends; the receiver counts
 * the copies it shared.  A shared copy is a single copy too; a copy through the kernel is
 * shared (the receiver sends nothing to the sender here, so it is free to help).  A remote send is one packet or
 * more (ch3's rendezvous sends its data after the handshake). */
static int check_path(int rank, const struct sendcase *c, int recv_heap, enum op op,
                      enum path want, int slow, const unsigned long long d[NPATHS])
{
    int errs = 0;

    for (int p = 0; p < NPATHS; p++) {
        int mine = rank == 1 ? p == SHARED : rank == 0 && p != SHARED;
        int w = p == (int) want || (want == SHARED && p == SINGLE) ||
            (want == KERNEL && p == SHARED);
        int wrong = p == REMOTE && w ? d[p] < 1 : d[p] != (unsigned long long) w;

        if (slow && p == SHARED)        /* whether the receiver helps depends on the size */
            wrong = d[p] > 1;

        if (mine && wrong) {
            printf("%s into %s, %s: %s counted %llu, want %d\n", c->what,
                   recv_heap ? "heap" : "static", op_name[op], path_name[p], d[p], w);
            errs++;
        }
    }
    return errs;
}

int main(int argc, char **argv)
{
    int rank, prov, errs = 0, tag = 0;
    char *heap_send, *heap_recv;

    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    shared = pvar_value("smheap_heap_shared") == 1;
    cma = pvar_value("smheap_cma") == 1;
    local = same_node(MPI_COMM_WORLD, 0, 1);
    heap_send = malloc(BIG);
    heap_recv = malloc(BIG);

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        for (int recv_heap = 1; recv_heap >= 0; recv_heap--) {
            for (int op = 0; op < NOPS; op++, tag++) {
                const struct sendcase *sc = &cases[c];
                enum path want = expected_path(sc, recv_heap);

                unsigned long long d[NPATHS] = { 0 }, shared_before, shared_after;

                /* While copies into the rings run slow (a spell of the machine), data
                 * outside the heap goes through the kernel from a smaller size on: the
                 * sender says so (smheap_cma_slow_ring_msgs), and both expect it. */
                int slow = 0;

                if (rank == 0) {
                    char *buf = sc->heap ? heap_send : static_send;
                    unsigned long long slow0 = pvar_value("smheap_cma_slow_ring_msgs");

                    fill(buf, sc->size, tag);
                    send_one(sc, buf, op, tag, d);
                    slow = pvar_value("smheap_cma_slow_ring_msgs") != slow0;
                    MPI_Send(&slow, 1, MPI_INT, 1, SLOW_TAG, MPI_COMM_WORLD);
                } else if (rank == 1) {
                    shared_before = pvar_value(pvar_name[SHARED]);
                    errs += recv_one(sc, recv_heap ? heap_recv : static_recv, op, tag, tag);
                    shared_after = pvar_value(pvar_name[SHARED]);
                    d[SHARED] = shared_after - shared_before;
                    MPI_Recv(&slow, 1, MPI_INT, 0, SLOW_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                }
                if (slow && want == EAGER && !sc->heap)
                    want = KERNEL;
                errs += check_path(rank, sc, recv_heap, op, want, slow, d);
            }
        }
    }

    /* zero bytes, from either kind of buffer */
    for (int h = 0; h < 2; h++) {
        MPI_Status st;
        int count = -1;
        if (rank == 0)
            MPI_Send(h ? heap_send : static_send, 0, MPI_CHAR, 1, 7, MPI_COMM_WORLD);
        else if (rank == 1) {
            MPI_Recv(heap_recv, BIG, MPI_CHAR, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_CHAR, &count);
            errs += count != 0 || st.MPI_TAG != 7;
        }
    }

    free(heap_send);
    free(heap_recv);
    smheap_test_report(errs);
    MPI_Finalize();
    MPI_T_finalize();
    return 0;
}

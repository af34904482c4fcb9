/*
 * Collectives on MPI_COMM_WORLD, any number of ranks, measured the way the OSU
 * micro-benchmarks do, so that ch3:smheap, ch3:nemesis and Open MPI can be compared with the
 * same binary source.
 *
 *   barrier    MPI_Barrier (size 0 only)
 *   bcast      MPI_Bcast of SIZE bytes from root 0
 *   reduce     MPI_Reduce, MPI_SUM of SIZE / 8 MPI_DOUBLEs to root 0 (8 B = 1 double)
 *   allreduce  MPI_Allreduce, likewise
 *   allgather  MPI_Allgather, a block of SIZE bytes from every rank
 *   gather     MPI_Gather to root 0, a block of SIZE bytes from every rank
 *   scatter    MPI_Scatter from root 0, a block of SIZE bytes to every rank
 *   alltoall   MPI_Alltoall, a block of SIZE bytes from every rank to every rank
 *   allgatherv, gatherv, scatterv, alltoallv
 *              the v-variants with every count SIZE bytes and the blocks in rank order
 *   reduce_scatter_block
 *              MPI_Reduce_scatter_block, MPI_SUM of nranks blocks of SIZE / 8 MPI_DOUBLEs,
 *              block r to rank r
 *
 * SIZE is bytes per rank (for the gathers, scatters and alltoalls the per-rank block, for
 * reduce_scatter_block the block each rank receives);
 * the data movers use MPI_BYTE.  The root is always 0 (nothing rotates).
 *
 * Per size: 2 warm-up calls, then a probe that times 1, 4, 16 ... calls (slowest rank) until
 * they take a tenth of the time budget, which also warms up; from its time per call, the
 * number of timed iterations that fill the budget (0.2 s, -q 0.03 s; at least 10, -q 3; at
 * most 1000000), the same on every rank: about 0.3 s per size in all (-q 0.05 s), more when
 * 10 calls take longer.  Then a barrier, and every rank times its loop of
 * that many calls, one collective call per iteration and nothing between them (as OSU does;
 * for the rooted ones the other ranks may run ahead of the root as far as the MPI lets them).
 * The value is the maximum over the ranks of the average time per call, in microseconds
 * (MPI_Reduce with MPI_MAX, as OSU's max).
 *
 * Buffers come from malloc (posix_memalign, page-aligned; under ch3:smheap that is the
 * shared heap), each big enough for the largest size, and are touched before timing.  The
 * send buffers hold a pattern of the size, the rank (and for alltoall the destination) during
 * the timed calls.  Once per size, after the timed loop, the receive buffers are poisoned and
 * one more call is checked (bcast, gather, scatter, allgather, alltoall: every byte of every
 * block; reduce, allreduce: every sum, exact since the values are small integers); a wrong
 * result stops the program with exit status 1.
 *
 * Output, rank 0, one line per size:  coll=bcast ranks=4 size=65536 value=12.345
 * (comment lines starting with '#': the library, the iterations per size).  At the end, if
 * the MPI has the MPI_T pvars smheap_coll_shared, smheap_coll_node_aware and
 * smheap_coll_fallback (ch3:smheap: how many collective calls took its shared-heap
 * algorithms, its two-level ones on a communicator that spans nodes -- whose steps within a
 * node count as shared-heap calls of the node's communicator --, and how many it handed to
 * MPICH's), their increase over the timed loops and verification calls only (not the warm-up,
 * the probe or the program's own reductions of the results), summed over the ranks:
 *     pvar smheap_coll_shared=N smheap_coll_node_aware=N smheap_coll_fallback=N
 * preceded by a comment with the number of such calls; nothing with an MPI that has no such
 * pvars.
 *
 *   coll_bench [-c barrier|bcast|reduce|allreduce|allgather|gather|scatter|alltoall|
 *                  allgatherv|gatherv|scatterv|alltoallv|reduce_scatter_block]
 *              [-s MIN] [-S MAX] [-l SIZE,SIZE,...] [-i ITERS] [-q]
 *   -s, -S: powers of two, every power of two from MIN to MAX (default 8 to 1 MiB);
 *   -l: exactly these sizes instead (any positive numbers; multiples of 8 for reductions);
 *   -i: timed iterations for every size (no probe); -q: quick (smoke tests)
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PAGE 4096
#define MAX_SIZES 64
#define MAX_SIZE (1L << 30)
#define BUDGET 0.2              /* seconds of timed calls per size */
#define QUICK_BUDGET 0.03
#define PROBE_SHARE 10          /* the probe stops at BUDGET / PROBE_SHARE */
#define WARM 2
#define MIN_ITERS 10
#define QUICK_MIN_ITERS 3
#define MAX_ITERS 1000000L

enum coll { BARRIER, BCAST, REDUCE, ALLREDUCE, ALLGATHER, GATHER, SCATTER, ALLTOALL,
    ALLGATHERV, GATHERV, SCATTERV, ALLTOALLV, REDUCE_SCATTER_BLOCK, NCOLLS
};
static const char *const names[] = { "barrier", "bcast", "reduce", "allreduce", "allgather",
    "gather", "scatter", "alltoall", "allgatherv", "gatherv", "scatterv", "alltoallv",
    "reduce_scatter_block"
};

static int rank, nranks, quick, iters_opt;
static enum coll coll = BCAST;
static long sizes[MAX_SIZES];
static int nsizes;
static char *sbuf, *rbuf;
static int *counts, *displs;    /* the v-variants': SIZE bytes per rank, in rank order */

static void usage(void)
{
    if (rank == 0)
        fprintf(stderr, "usage: coll_bench [-c barrier|bcast|reduce|allreduce|allgather|gather"
                "|scatter|alltoall|allgatherv|gatherv|scatterv|alltoallv|reduce_scatter_block]"
                " [-s MIN] [-S MAX] [-l SIZE,SIZE,...] [-i ITERS] [-q]\n"
                "  -s, -S: powers of two; sizes of reductions: multiples of 8 bytes\n");
}

static int is_pow2(long n)
{
    return n > 0 && (n & (n - 1)) == 0;
}

static int reduction(void)
{
    return coll == REDUCE || coll == ALLREDUCE || coll == REDUCE_SCATTER_BLOCK;
}

/* The collective whose data layout a v-variant shares (uniform counts, rank order). */
static enum coll layout(void)
{
    switch (coll) {
    case ALLGATHERV: return ALLGATHER;
    case GATHERV: return GATHER;
    case SCATTERV: return SCATTER;
    case ALLTOALLV: return ALLTOALL;
    default: return coll;
    }
}

/* "8,65536,1048576" into sizes[]; 0 if it makes no sense. */
static int parse_list(const char *s)
{
    char *end;

    nsizes = 0;
    for (;;) {
        long v = strtol(s, &end, 10);

        if (end == s || v <= 0 || v > MAX_SIZE || nsizes == MAX_SIZES)
            return 0;
        sizes[nsizes++] = v;
        if (*end == '\0')
            return 1;
        if (*end != ',')
            return 0;
        s = end + 1;
    }
}

/* Options into the globals; 0 if they make no sense. */
static int parse(int argc, char **argv)
{
    long min_size = 8, max_size = 1L << 20;
    const char *list = NULL;
    int c, k;

    while ((c = getopt(argc, argv, "c:s:S:l:i:q")) != -1) {
        switch (c) {
        case 'c':
            for (k = 0; k < NCOLLS && strcmp(optarg, names[k]); k++)
                ;
            if (k == NCOLLS)
                return 0;
            coll = (enum coll) k;
            break;
        case 's': min_size = atol(optarg); break;
        case 'S': max_size = atol(optarg); break;
        case 'l': list = optarg; break;
        case 'i': iters_opt = atoi(optarg); break;
        case 'q': quick = 1; break;
        default: return 0;
        }
    }
    if (optind < argc || iters_opt < 0)
        return 0;
    if (coll == BARRIER) {
        sizes[0] = 0;
        nsizes = 1;
        return 1;
    }
    if (list) {
        if (!parse_list(list))
            return 0;
    } else {
        if (!is_pow2(min_size) || !is_pow2(max_size) || min_size > max_size ||
            max_size > MAX_SIZE)
            return 0;
        for (long s = min_size; s <= max_size; s *= 2)
            sizes[nsizes++] = s;
    }
    for (k = 0; k < nsizes; k++)
        if (reduction() && sizes[k] % 8)
            return 0;
    return 1;
}

/* Bytes of the send and the receive buffer for a size. */
static size_t send_bytes(long size)
{
    enum coll c = layout();

    return c == SCATTER || c == ALLTOALL || c == REDUCE_SCATTER_BLOCK ?
        (size_t) nranks * size : (size_t) size;
}

static size_t recv_bytes(long size)
{
    enum coll c = layout();

    return c == ALLGATHER || c == GATHER || c == ALLTOALL ?
        (size_t) nranks * size : c == BCAST ? 0 : (size_t) size;
}

/* The byte at offset I of the block that rank FROM sends (for alltoall, FROM is
 * sender * nranks + receiver) at a size with SEED. */
static unsigned char pattern(long i, long from, long seed)
{
    return (unsigned char) ((i * 13 + from * 71 + seed) % 251);
}

/* Double K of rank R's contribution to a reduction: small integers, so the sums are exact. */
static double addend(long k, int r, long seed)
{
    return (double) (r + 1 + (k + seed) % 7);
}

static double expected_sum(long k, long seed)
{
    return (double) nranks * (nranks + 1) / 2 + (double) nranks * ((k + seed) % 7);
}

/* The send data of one size. */
static void fill(long size)
{
    long seed = size % 1000003;
    enum coll c = layout();

    for (int j = 0; j < nranks; j++) {
        counts[j] = (int) size;
        displs[j] = (int) (j * size);
    }
    if (reduction()) {
        double *d = (double *) sbuf;
        for (long k = 0; k < (long) send_bytes(size) / 8; k++)
            d[k] = addend(k, rank, seed);
    } else if (c == ALLTOALL || c == SCATTER) {
        for (int j = 0; j < nranks; j++)
            for (long i = 0; i < size; i++)
                sbuf[(size_t) j * size + i] = (char) pattern(i, c == ALLTOALL ?
                                                             (long) rank * nranks + j : j, seed);
    } else if (c != BARRIER) {
        for (long i = 0; i < size; i++)
            sbuf[i] = (char) pattern(i, rank, seed);
    }
}

/* One call of the collective. */
static void one(long size)
{
    int n = (int) size;

    switch (coll) {
    case BARRIER:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    case BCAST:
        MPI_Bcast(sbuf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    case REDUCE:
        MPI_Reduce(sbuf, rbuf, n / 8, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        break;
    case ALLREDUCE:
        MPI_Allreduce(sbuf, rbuf, n / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    case ALLGATHER:
        MPI_Allgather(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, MPI_COMM_WORLD);
        break;
    case GATHER:
        MPI_Gather(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    case SCATTER:
        MPI_Scatter(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    case ALLTOALL:
        MPI_Alltoall(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, MPI_COMM_WORLD);
        break;
    case ALLGATHERV:
        MPI_Allgatherv(sbuf, n, MPI_BYTE, rbuf, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
        break;
    case GATHERV:
        MPI_Gatherv(sbuf, n, MPI_BYTE, rbuf, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    case SCATTERV:
        MPI_Scatterv(sbuf, counts, displs, MPI_BYTE, rbuf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    case ALLTOALLV:
        MPI_Alltoallv(sbuf, counts, displs, MPI_BYTE, rbuf, counts, displs, MPI_BYTE,
                      MPI_COMM_WORLD);
        break;
    case REDUCE_SCATTER_BLOCK:
        MPI_Reduce_scatter_block(sbuf, rbuf, n / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    case NCOLLS:
        break;
    }
}

/* Seconds per call of the slowest rank, from timing 1, 4, 16 ... calls until they take
 * LIMIT seconds; the same on every rank. */
static double probe(long size, double limit)
{
    double t;

    for (long n = 1;; n *= 4) {
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        for (long i = 0; i < n; i++)
            one(size);
        t = MPI_Wtime() - t;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (t >= limit || n >= MAX_ITERS)
            return t / n;
    }
}

static long iterations(long size)
{
    double budget = quick ? QUICK_BUDGET : BUDGET, per_call;
    long lo = quick ? QUICK_MIN_ITERS : MIN_ITERS;

    for (int i = 0; i < WARM; i++)
        one(size);
    if (iters_opt > 0)
        return iters_opt;
    per_call = probe(size, budget / PROBE_SHARE);
    if (per_call * lo >= budget)
        return lo;
    return budget / per_call >= MAX_ITERS ? MAX_ITERS : (long) (budget / per_call);
}

/* ch3:smheap's collective counters, through MPI_T; pv_n is PV_N if all exist (on every
 * rank), else 0. */
#define PV_N 3
static const char *const pv_names[PV_N] = {
    "smheap_coll_shared", "smheap_coll_node_aware", "smheap_coll_fallback"
};

static int pv_n;
static MPI_T_pvar_session pv_session;
static MPI_T_pvar_handle pv_handle[PV_N];
static unsigned long long pv_count[PV_N], pv_calls;

static int pvar_index(const char *want, int *continuous)
{
    int n;

    MPI_T_pvar_get_num(&n);
    for (int i = 0; i < n; i++) {
        char name[256], desc[1024];
        int nlen = sizeof(name), dlen = sizeof(desc), verb, cls, bind, ro, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;

        if (MPI_T_pvar_get_info(i, name, &nlen, &verb, &cls, &dt, &en, desc, &dlen, &bind,
                                &ro, continuous, &atomic) == MPI_SUCCESS &&
            strcmp(name, want) == 0 && dt == MPI_UNSIGNED_LONG_LONG)
            return i;
    }
    return -1;
}

static void pv_open(void)
{
    int prov, idx[PV_N], cont[PV_N], count, found = 0, all, missing = 0;

    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &prov) == MPI_SUCCESS) {
        for (int k = 0; k < PV_N; k++)
            if ((idx[k] = pvar_index(pv_names[k], &cont[k])) < 0)
                missing = 1;
        if (!missing && MPI_T_pvar_session_create(&pv_session) == MPI_SUCCESS) {
            found = PV_N;
            for (int k = 0; k < PV_N; k++)
                if (MPI_T_pvar_handle_alloc(pv_session, idx[k], NULL, &pv_handle[k], &count)
                    != MPI_SUCCESS || (!cont[k] && MPI_T_pvar_start(pv_session, pv_handle[k])
                                       != MPI_SUCCESS))
                    found = 0;
        }
    }
    MPI_Allreduce(&found, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    pv_n = all;
}

static void pv_read(unsigned long long *v)
{
    for (int k = 0; k < pv_n; k++)
        MPI_T_pvar_read(pv_session, pv_handle[k], &v[k]);
}

/* Microseconds per call, this rank's average over ITERS calls; the pvars into BEFORE once the
 * barrier that starts them is over. */
static double timed(long size, long iters, unsigned long long *before)
{
    double t0;

    MPI_Barrier(MPI_COMM_WORLD);
    pv_read(before);
    t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++)
        one(size);
    return (MPI_Wtime() - t0) * 1e6 / iters;
}

/* One more call with poisoned receive buffers; does this rank have the right result? */
static int verified(long size)
{
    long seed = size % 1000003;
    size_t rb = recv_bytes(size);
    enum coll c = layout();

    if (coll == BARRIER) {
        one(size);
        return 1;
    }
    if (coll == BCAST && rank != 0)
        memset(sbuf, 0xa5, (size_t) size);
    memset(rbuf, 0xff, rb);     /* as doubles: NaN, equal to nothing */
    one(size);
    switch (c) {
    case BCAST:
        for (long i = 0; i < size; i++)
            if ((unsigned char) sbuf[i] != pattern(i, 0, seed))
                return fprintf(stderr, "coll_bench: rank %d: bcast size %ld: byte %ld is "
                               "wrong\n", rank, size, i), 0;
        return 1;
    case REDUCE:
    case ALLREDUCE:
        if (coll == REDUCE && rank != 0)
            return 1;
        for (long k = 0; k < size / 8; k++)
            if (((double *) rbuf)[k] != expected_sum(k, seed))
                return fprintf(stderr, "coll_bench: rank %d: %s size %ld: element %ld is %g,"
                               " not %g\n", rank, names[coll], size, k, ((double *) rbuf)[k],
                               expected_sum(k, seed)), 0;
        return 1;
    case REDUCE_SCATTER_BLOCK:
        for (long k = 0; k < size / 8; k++)
            if (((double *) rbuf)[k] != expected_sum(rank * (size / 8) + k, seed))
                return fprintf(stderr, "coll_bench: rank %d: %s size %ld: element %ld is %g,"
                               " not %g\n", rank, names[coll], size, k, ((double *) rbuf)[k],
                               expected_sum(rank * (size / 8) + k, seed)), 0;
        return 1;
    case ALLGATHER:
    case GATHER:
    case ALLTOALL:
        if (c == GATHER && rank != 0)
            return 1;
        for (int j = 0; j < nranks; j++)
            for (long i = 0; i < size; i++)
                if ((unsigned char) rbuf[(size_t) j * size + i] !=
                    pattern(i, c == ALLTOALL ? (long) j * nranks + rank : j, seed))
                    return fprintf(stderr, "coll_bench: rank %d: %s size %ld: byte %ld of "
                                   "the block of rank %d is wrong\n", rank, names[coll],
                                   size, i, j), 0;
        return 1;
    case SCATTER:
        for (long i = 0; i < size; i++)
            if ((unsigned char) rbuf[i] != pattern(i, rank, seed))
                return fprintf(stderr, "coll_bench: rank %d: scatter size %ld: byte %ld is "
                               "wrong\n", rank, size, i), 0;
        return 1;
    default:
        return 1;
    }
}

/* Rank 0 prints the counts over all ranks; then MPI_T is closed. */
static void pv_print(void)
{
    unsigned long long sum[PV_N + 1], mine[PV_N + 1];

    if (pv_n) {
        memcpy(mine, pv_count, sizeof(pv_count));
        mine[PV_N] = pv_calls;
        MPI_Reduce(mine, sum, PV_N + 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            printf("# pvar: counted over %llu calls of %s (timed and verification, all %d "
                   "ranks)\npvar", sum[PV_N], names[coll], nranks);
            for (int k = 0; k < PV_N; k++)
                printf(" %s=%llu", pv_names[k], sum[k]);
            printf("\n");
        }
        for (int k = 0; k < PV_N; k++)
            MPI_T_pvar_handle_free(pv_session, &pv_handle[k]);
        MPI_T_pvar_session_free(&pv_session);
    }
    MPI_T_finalize();
}

/* Time and check every size; 0 as soon as one is wrong. */
static int run(void)
{
    for (int k = 0; k < nsizes; k++) {
        long size = sizes[k], iters;
        unsigned long long before[PV_N] = { 0 }, after[PV_N] = { 0 };
        double us, max_us;
        int ok, all_ok;

        fill(size);
        iters = iterations(size);
        us = timed(size, iters, before);
        ok = verified(size);
        pv_read(after);
        for (int p = 0; p < pv_n; p++)
            pv_count[p] += after[p] - before[p];
        pv_calls += iters + 1;
        MPI_Reduce(&us, &max_us, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (rank == 0) {
            printf("# coll=%s size=%ld iters=%ld\n", names[coll], size, iters);
            if (all_ok)
                printf("coll=%s ranks=%d size=%ld value=%.3f\n", names[coll], nranks, size,
                       max_us);
            else
                fprintf(stderr, "coll_bench: %s size %ld: wrong result\n", names[coll], size);
            fflush(stdout);
        }
        if (!all_ok)
            return 0;
    }
    return 1;
}

static void print_library(void)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;

    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n")] = '\0';
    printf("# coll=%s ranks=%d library=%s\n", names[coll], nranks, lib);
}

int main(int argc, char **argv)
{
    int ok;
    long max_size = 0;
    size_t sb, rb;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (!parse(argc, argv)) {
        usage();
        MPI_Finalize();
        return 1;
    }
    for (int k = 0; k < nsizes; k++)
        max_size = sizes[k] > max_size ? sizes[k] : max_size;
    sb = (send_bytes(max_size) + PAGE - 1) / PAGE * PAGE;
    rb = (recv_bytes(max_size) + PAGE - 1) / PAGE * PAGE;
    counts = malloc(nranks * sizeof(int));
    displs = malloc(nranks * sizeof(int));
    if (counts == NULL || displs == NULL ||
        posix_memalign((void **) &sbuf, PAGE, sb ? sb : PAGE) ||
        posix_memalign((void **) &rbuf, PAGE, rb ? rb : PAGE)) {
        fprintf(stderr, "coll_bench: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(sbuf, 0, sb ? sb : PAGE);
    memset(rbuf, 0, rb ? rb : PAGE);
    pv_open();
    if (rank == 0)
        print_library();
    ok = run();
    pv_print();
    free(sbuf);
    free(rbuf);
    free(counts);
    free(displs);
    MPI_Finalize();
    return ok ? 0 : 1;
}

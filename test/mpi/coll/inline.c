/* Small collectives whose data travel inline in the control block (Bcast, Reduce, Allreduce,
 * Allgather(v), Gather(v), Scatter(v), Alltoall(v) of at most a cell's data): a writer
 * returns without waiting for its readers, so
 *  - a root broadcasts many times in a row while its readers sleep (three times as many
 *    calls as a rank has cells: it must wait before it writes a cell again), then each
 *    reader finds every value in order;
 *  - roots change from call to call, and small calls alternate with large ones (which take
 *    the slots) on the same communicator;
 *  - a non-commutative reduction is reduced in rank order, Reduce to every root, with
 *    MPI_IN_PLACE; an Allgather of a strided type;
 *  - Gather and Scatter run ahead the same way (senders of a Gather while its root sleeps),
 *    then change roots, with MPI_IN_PLACE at the root;
 *  - Gatherv and Scatterv likewise, with counts that differ by rank and blocks in reverse
 *    order, and Allgatherv and Alltoallv with such counts; Alltoall, of a strided type
 *    too, and in place;
 *  - ranks that pass different amounts of data, one of them small enough for a cell and the
 *    other not, all get an error (no hang), and the communicator works afterwards; but a
 *    writer whose data spilled (coll/spill.c) returned at once, and cannot know.
 * The MPI_T counter smheap_coll_inline shows which calls went inline (none with
 * MPIR_CVAR_CH3_SMHEAP_COLL=0 or the heap off, when MPICH's algorithms answer: the test is
 * then given the argument "off"). */
#include <unistd.h>
#include "../include/smheap_test.h"

#define CELLS 32                /* the most cells a rank has (SMHEAP_COLL_CELLS_MAX) */
#define SPILL_LEN 2048          /* the most data a call spills (SMHEAP_COLL_SPILL_LEN) */
static int errs, rank, size;
static int coll_on;             /* the shared-heap collectives answer on this communicator */

#define FAIL(...) do { if (errs++ < 10) { printf("rank %d: ", rank); printf(__VA_ARGS__); printf("\n"); } } while (0)

static void mat_of(int r, int i, int m[4])
{
    m[0] = 1; m[1] = (r + i) % 3 + 1; m[2] = r % 2; m[3] = 1 + (r == 0);
}

static unsigned long long inline_calls(void)
{
    return pvar_value("smheap_coll_inline");
}

/* The root runs ahead: the readers sleep while it broadcasts 3 * CELLS values. */
static void run_ahead(MPI_Comm comm)
{
    int n = 3 * CELLS, v[3 * CELLS];

    if (rank != 0)
        usleep(50000);
    for (int i = 0; i < n; i++) {
        v[i] = rank == 0 ? 1000 + i : -1;
        MPI_Bcast(&v[i], 1, MPI_INT, 0, comm);
    }
    for (int i = 0; i < n; i++)
        if (v[i] != 1000 + i)
            FAIL("run ahead: Bcast %d gave %d", i, v[i]);
}

/* Roots change every call; small and large calls alternate. */
static void mixed(MPI_Comm comm)
{
    static int big[4096];
    int small[3];

    for (int i = 0; i < 4 * CELLS; i++) {
        int root = i % size, large = i % 3 == 2, n = large ? 4096 : 3;
        int *b = large ? big : small;
        for (int k = 0; k < n; k++)
            b[k] = rank == root ? i * 7 + k : -1;
        MPI_Bcast(b, n, MPI_INT, root, comm);
        for (int k = 0; k < n; k++)
            if (b[k] != i * 7 + k) {
                FAIL("mixed Bcast %d (root %d, %d ints): [%d] = %d", i, root, n, k, b[k]);
                break;
            }
        int in[2] = { rank + i, 1 }, out[2] = { 0, 0 };
        MPI_Allreduce(in, out, 2, MPI_INT, MPI_SUM, comm);
        if (out[0] != size * (size - 1) / 2 + size * i || out[1] != size)
            FAIL("mixed Allreduce %d: %d %d", i, out[0], out[1]);
    }
}

static void reductions(MPI_Comm comm, MPI_Datatype mat4, MPI_Op mmul)
{
    int m = 3;                  /* three 2x2 matrices: 48 bytes */
    for (int root = 0; root < size; root++)
        for (int inplace = 0; inplace < 2; inplace++) {
            int in[12], out[12], want[12];
            for (int i = 0; i < m; i++) {
                mat_of(rank, i, in + 4 * i);
                int acc[4] = { 1, 0, 0, 1 }, t[4], one = 1;
                for (int r = 0; r < size; r++) {
                    mat_of(r, i, t);
                    smheap_test_matmul(acc, t, &one, NULL);         /* t = acc x t */
                    memcpy(acc, t, sizeof(acc));
                }
                memcpy(want + 4 * i, acc, sizeof(acc));
            }
            if (inplace && rank == root)
                memcpy(out, in, sizeof(in));
            MPI_Reduce(inplace && rank == root ? MPI_IN_PLACE : in, out, m, mat4, mmul, root,
                       comm);
            if (rank == root && memcmp(out, want, sizeof(want)) != 0)
                FAIL("Reduce of matrices to root %d (in place %d) not in rank order", root,
                     inplace);
            if (inplace)
                memcpy(out, in, sizeof(in));
            MPI_Allreduce(inplace ? MPI_IN_PLACE : in, out, m, mat4, mmul, comm);
            if (memcmp(out, want, sizeof(want)) != 0)
                FAIL("Allreduce of matrices (in place %d) not in rank order", inplace);
        }
}

static void gathers(MPI_Comm comm, MPI_Datatype every_other)
{
    int in[8], *out = malloc(sizeof(int) * 8 * size);

    for (int inplace = 0; inplace < 2; inplace++) {
        for (int k = 0; k < 8; k++)
            in[k] = k % 2 ? -7 : rank * 10 + k / 2;
        for (int k = 0; k < 8 * size; k++)
            out[k] = -1;
        if (inplace)
            memcpy(out + 8 * rank, in, sizeof(in));
        /* 4 ints per rank, every other one of 8 */
        MPI_Allgather(inplace ? MPI_IN_PLACE : in, 1, every_other, out, 1, every_other, comm);
        for (int r = 0; r < size; r++)
            for (int k = 0; k < 8; k += 2)
                if (out[8 * r + k] != r * 10 + k / 2) {
                    FAIL("strided Allgather (in place %d): rank %d's [%d] = %d", inplace, r,
                         k, out[8 * r + k]);
                    r = size;
                    break;
                }
    }
    free(out);
}

/* Gather and Scatter of two ints per rank: the non-roots of a Gather run ahead while its
 * root sleeps, as does the root of a Scatter while its readers sleep (each 3 * CELLS calls);
 * then roots change every call, with MPI_IN_PLACE at the root every third call. */
static void rooted(MPI_Comm comm)
{
    int n = 3 * CELLS, *all = malloc(sizeof(int) * 2 * size * n), mine[2];

    if (rank == 0)
        usleep(50000);
    for (int i = 0; i < n; i++) {
        mine[0] = rank * 1000 + i;
        mine[1] = -rank;
        MPI_Gather(mine, 2, MPI_INT, all + 2 * size * i, 2, MPI_INT, 0, comm);
    }
    for (int i = 0; i < n && rank == 0; i++)
        for (int r = 0; r < size; r++)
            if (all[2 * size * i + 2 * r] != r * 1000 + i || all[2 * size * i + 2 * r + 1] != -r) {
                FAIL("run ahead: Gather %d gave rank %d's block as %d %d", i, r,
                     all[2 * size * i + 2 * r], all[2 * size * i + 2 * r + 1]);
                i = n;
                break;
            }
    if (rank != 0)
        usleep(50000);
    for (int i = 0; i < n; i++) {
        for (int r = 0; r < size && rank == 0; r++) {
            all[2 * r] = r * 1000 + i;
            all[2 * r + 1] = -i;
        }
        MPI_Scatter(all, 2, MPI_INT, mine, 2, MPI_INT, 0, comm);
        if (mine[0] != rank * 1000 + i || mine[1] != -i)
            FAIL("run ahead: Scatter %d gave %d %d", i, mine[0], mine[1]);
    }
    for (int i = 0; i < 4 * CELLS; i++) {
        int root = i % size, inplace = rank == root && i % 3 == 0;
        for (int k = 0; k < 2 * size; k++)
            all[k] = rank == root ? k * 10 + i : -1;
        mine[0] = inplace ? -2 : rank + i;
        mine[1] = inplace ? -2 : rank - i;
        if (inplace) {
            all[2 * rank] = rank + i;
            all[2 * rank + 1] = rank - i;
        }
        MPI_Gather(inplace ? MPI_IN_PLACE : mine, 2, MPI_INT, all, 2, MPI_INT, root, comm);
        for (int r = 0; r < size && rank == root; r++)
            if (all[2 * r] != r + i || all[2 * r + 1] != r - i)
                FAIL("Gather %d to %d: rank %d's block %d %d", i, root, r, all[2 * r],
                     all[2 * r + 1]);
        for (int k = 0; k < 2 * size; k++)
            all[k] = rank == root ? k * 10 + i : -1;
        mine[0] = mine[1] = -1;
        MPI_Scatter(all, 2, MPI_INT, inplace ? MPI_IN_PLACE : mine, 2, MPI_INT, root, comm);
        if (inplace && (all[2 * rank] != 2 * rank * 10 + i || all[2 * rank + 1] != (2 * rank + 1) * 10 + i))
            FAIL("Scatter %d in place at %d changed its own block", i, root);
        if (!inplace && (mine[0] != 2 * rank * 10 + i || mine[1] != (2 * rank + 1) * 10 + i))
            FAIL("Scatter %d from %d gave %d %d", i, root, mine[0], mine[1]);
    }
    free(all);
}

/* One side small enough for a cell, the other not (`big` ints, per block for the gathers,
 * scatters and Alltoall): every rank but a Bcast's root (which cannot know) gets an error,
 * and nobody hangs. */
static void mismatches(MPI_Comm comm, int big)
{
    int *buf = calloc((size_t) big * size, sizeof(int)), *out = calloc((size_t) big * size,
                                                                         sizeof(int));
    /* does a big block, or a Scatter root's big blocks, go to a spill piece (its writer then
     * returns without waiting, and cannot find out)? */
    int block_spills = big * (int) sizeof(int) <= SPILL_LEN;
    int blocks_spill = big * size * (int) sizeof(int) <= SPILL_LEN;
    int err;

    if (!coll_on)
        return;                 /* MPICH's algorithms make no such promise */
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    for (int root_small = 0; root_small < 2; root_small++) {
        int small = rank == 0 ? root_small : !root_small;
        err = MPI_Bcast(buf, small ? 4 : big, MPI_INT, 0, comm);
        if (rank != 0 && err == MPI_SUCCESS)
            FAIL("a Bcast of %d ints at the root and %d here succeeded", root_small ? 4 : big,
                 root_small ? big : 4);
        err = MPI_Allreduce(buf, out, small ? 4 : big, MPI_INT, MPI_SUM, comm);
        if (err == MPI_SUCCESS)
            FAIL("an Allreduce of %d ints here, %d at rank 0, succeeded", small ? 4 : big,
                 root_small ? 4 : big);
        /* a Gather's root always finds out; its senders when they waited for it */
        err = MPI_Gather(buf, small ? 4 : big, MPI_INT, out, small ? 4 : big, MPI_INT, 0, comm);
        if ((rank == 0 || (root_small && !block_spills)) && err == MPI_SUCCESS)
            FAIL("a Gather of %d ints here, %d at rank 0, succeeded", small ? 4 : big,
                 root_small ? 4 : big);
        /* a Scatter's readers always find out; its root when it waited for them */
        err = MPI_Scatter(buf, small ? 4 : big, MPI_INT, out, small ? 4 : big, MPI_INT, 0, comm);
        if ((rank != 0 || (!root_small && !blocks_spill)) && err == MPI_SUCCESS)
            FAIL("a Scatter of %d ints here, %d at rank 0, succeeded", small ? 4 : big,
                 root_small ? 4 : big);
        /* every rank of an Alltoall reads every other's blocks */
        err = MPI_Alltoall(buf, small ? 2 : big, MPI_INT, out, small ? 2 : big, MPI_INT, comm);
        if (err == MPI_SUCCESS)
            FAIL("an Alltoall of %d ints per rank here, %d at rank 0, succeeded",
                 small ? 2 : big, root_small ? 2 : big);
    }
    MPI_Barrier(comm);
    int one = rank, sum = -1;
    if (MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm) != MPI_SUCCESS ||
        sum != size * (size - 1) / 2)
        FAIL("an Allreduce after the mismatches of %d ints: %d", big, sum);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
    free(buf);
    free(out);
}

/* Gatherv while the root sleeps, then Scatterv while the readers sleep: rank r's block is
 * 1 + r % 2 ints, the blocks laid out from the end of the buffer back. */
/* Counts of 1 or 2 ints by rank (1 + (r + shift) % 2), blocks laid out in reverse rank
 * order; returns the total. */
static int reverse_blocks(int shift, int *counts, int *displs)
{
    int total = 0;

    for (int r = 0; r < size; r++)
        total += counts[r] = 1 + (r + shift) % 2;
    for (int r = 0, end = total; r < size; r++)
        displs[r] = end -= counts[r];
    return total;
}

static void rooted_v(MPI_Comm comm)
{
    int n = 3 * CELLS, total, *counts = malloc(sizeof(int) * size);
    int *displs = malloc(sizeof(int) * size), *all, mine[2];
    unsigned long long before;

    total = reverse_blocks(0, counts, displs);
    all = malloc(sizeof(int) * total * n);

    before = inline_calls();
    if (rank == 0)
        usleep(50000);
    for (int i = 0; i < n; i++) {
        mine[0] = rank * 1000 + i;
        mine[1] = -rank;
        MPI_Gatherv(mine, counts[rank], MPI_INT, all + total * i, counts, displs, MPI_INT, 0,
                    comm);
    }
    for (int i = 0; i < n && rank == 0; i++)
        for (int r = 0; r < size; r++)
            for (int k = 0; k < counts[r]; k++)
                if (all[total * i + displs[r] + k] != (k == 0 ? r * 1000 + i : -r)) {
                    FAIL("run ahead: Gatherv %d gave rank %d's int %d as %d", i, r, k,
                         all[total * i + displs[r] + k]);
                    i = n;
                    r = size;
                    break;
                }
    if (coll_on && rank != 0 && inline_calls() - before < (unsigned long long) n)
        FAIL("only %llu of %d Gatherv blocks went inline", inline_calls() - before, n);

    before = inline_calls();
    if (rank != 0)
        usleep(50000);
    for (int i = 0; i < n; i++) {
        for (int r = 0; r < size && rank == 0; r++)
            for (int k = 0; k < counts[r]; k++)
                all[displs[r] + k] = r * 1000 + i + k;
        mine[0] = mine[1] = -1;
        MPI_Scatterv(all, counts, displs, MPI_INT, mine, counts[rank], MPI_INT, 0, comm);
        for (int k = 0; k < counts[rank]; k++)
            if (mine[k] != rank * 1000 + i + k)
                FAIL("run ahead: Scatterv %d gave int %d as %d", i, k, mine[k]);
    }
    if (coll_on && rank == 0 && inline_calls() - before < (unsigned long long) n)
        FAIL("only %llu of %d Scatterv calls went inline", inline_calls() - before, n);
    free(all);
    free(counts);
    free(displs);
}

/* Allgatherv of a cell's data each: counts that differ by rank, blocks in reverse order,
 * MPI_IN_PLACE every other call; every call inline. */
static void allgather_v(MPI_Comm comm)
{
    int n = 2 * CELLS, total, *counts = malloc(sizeof(int) * size);
    int *displs = malloc(sizeof(int) * size), *all, mine[2];
    unsigned long long before;

    total = reverse_blocks(0, counts, displs);
    all = malloc(sizeof(int) * total);

    before = inline_calls();
    for (int i = 0; i < n; i++) {
        mine[0] = rank * 1000 + i;
        mine[1] = -rank;
        for (int k = 0; k < total; k++)
            all[k] = -1;
        if (i % 2) {
            memcpy(all + displs[rank], mine, sizeof(int) * counts[rank]);
            MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, counts, displs, MPI_INT,
                           comm);
        } else {
            MPI_Allgatherv(mine, counts[rank], MPI_INT, all, counts, displs, MPI_INT, comm);
        }
        for (int r = 0; r < size; r++)
            for (int k = 0; k < counts[r]; k++)
                if (all[displs[r] + k] != (k == 0 ? r * 1000 + i : -r)) {
                    FAIL("Allgatherv %d gave rank %d's int %d as %d", i, r, k,
                         all[displs[r] + k]);
                    i = n;
                    r = size;
                    break;
                }
    }
    if (coll_on && inline_calls() - before < (unsigned long long) n)
        FAIL("only %llu of %d Allgatherv calls went inline", inline_calls() - before, n);
    free(all);
    free(counts);
    free(displs);
}

/* Alltoallv whose blocks and their table fit in a cell (SMHEAP_COLL_CELL_DATA bytes; a
 * table of size + 1 MPI_Aint offsets): counts that differ by rank and destination, blocks
 * in reverse order, MPI_IN_PLACE every other call; every call inline when they fit. */
#define CELL_DATA 112
static void alltoall_v(MPI_Comm comm)
{
    int n = 2 * CELLS, total, *counts = malloc(sizeof(int) * size);
    int *displs = malloc(sizeof(int) * size), *out, *in;
    unsigned long long before;

    /* rank a sends 1 + (a + b) % 2 ints to rank b: what b expects from a */
    total = reverse_blocks(rank, counts, displs);
    out = malloc(sizeof(int) * total);
    in = malloc(sizeof(int) * total);

    before = inline_calls();
    for (int i = 0; i < n; i++) {
        for (int r = 0; r < size; r++)
            for (int k = 0; k < counts[r]; k++) {
                out[displs[r] + k] = rank * 1000 + r * 10 + k + i;
                in[displs[r] + k] = -1;
            }
        if (i % 2) {
            memcpy(in, out, sizeof(int) * total);
            MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, in, counts, displs,
                          MPI_INT, comm);
        } else {
            MPI_Alltoallv(out, counts, displs, MPI_INT, in, counts, displs, MPI_INT, comm);
        }
        for (int r = 0; r < size; r++)
            for (int k = 0; k < counts[r]; k++) {
                int want = r * 1000 + rank * 10 + k + i;

                if (in[displs[r] + k] != want) {
                    FAIL("Alltoallv %d gave rank %d's int %d as %d, not %d", i, r, k,
                         in[displs[r] + k], want);
                    i = n;
                    r = size;
                    break;
                }
            }
    }
    if (coll_on && (size + 1) * 8 + total * (int) sizeof(int) <= CELL_DATA &&
        inline_calls() - before < (unsigned long long) n)
        FAIL("only %llu of %d Alltoallv calls went inline", inline_calls() - before, n);
    free(in);
    free(out);
    free(counts);
    free(displs);
}

/* Alltoall of a cell's data at most: two ints to each rank, or every third call one
 * every_other (four ints, each followed by a gap that must stay untouched), MPI_IN_PLACE
 * every other call; every call inline when a rank's blocks fit in a cell. */
static void alltoalls(MPI_Comm comm, MPI_Datatype every_other)
{
    int n = 2 * CELLS, len = 8 * size, fits = 1;
    int *out = malloc(sizeof(int) * len), *in = malloc(sizeof(int) * len);
    unsigned long long before = inline_calls();

    for (int i = 0; i < n; i++) {
        int strided = i % 3 == 0, inplace = i % 2;
        int ints = strided ? 4 : 2, stride = strided ? 8 : 2, step = strided ? 2 : 1;

        for (int k = 0; k < len; k++)
            out[k] = in[k] = -1;
        for (int r = 0; r < size; r++)
            for (int k = 0; k < ints; k++)
                out[stride * r + step * k] = rank * 1000 + r * 10 + k + i;
        if (inplace)
            memcpy(in, out, sizeof(int) * len);
        MPI_Alltoall(inplace ? MPI_IN_PLACE : out, strided ? 1 : 2,
                     strided ? every_other : MPI_INT, in, strided ? 1 : 2,
                     strided ? every_other : MPI_INT, comm);
        for (int k = 0; k < len; k++) {
            int r = k / stride, at = k % stride, want = -1;

            if (r < size && at % step == 0)
                want = r * 1000 + rank * 10 + at / step + i;
            if (in[k] != want) {
                FAIL("Alltoall %d (%s, in place %d): int %d is %d, not %d", i,
                     strided ? "strided" : "contiguous", inplace, k, in[k], want);
                i = n;
                break;
            }
        }
        fits = fits && size * ints * (int) sizeof(int) <= CELL_DATA;
    }
    if (coll_on && fits && inline_calls() - before < (unsigned long long) n)
        FAIL("only %llu of %d Alltoall calls went inline", inline_calls() - before, n);
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Comm dup;               /* the node's ranks */
    MPI_Datatype mat4, every_other;
    MPI_Op mmul;

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    coll_on = node_comm_coll_on(&dup, &rank, &size);
    MPI_Type_contiguous(4, MPI_INT, &mat4);
    MPI_Type_commit(&mat4);
    MPI_Datatype vec;
    MPI_Type_vector(4, 1, 2, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, 8 * sizeof(int), &every_other);
    MPI_Type_commit(&every_other);
    MPI_Type_free(&vec);
    MPI_Op_create(smheap_test_matmul, 0, &mmul);
    if (size > 1 && coll_on != (argc < 2 || strcmp(argv[1], "off") != 0))
        FAIL("the shared-heap collectives are %s, not as the test was told", coll_on ? "on" : "off");

    unsigned long long before = inline_calls();
    int x = rank;
    MPI_Bcast(&x, 1, MPI_INT, 0, dup);
    unsigned long long after_small = inline_calls();
    static int big[1024];
    MPI_Bcast(big, 1024, MPI_INT, 0, dup);
    unsigned long long after_big = inline_calls();
    if (coll_on && after_small != before + 1)
        FAIL("a 4-byte Bcast did not go inline (smheap_coll_inline %llu -> %llu)", before,
             after_small);
    if (!coll_on && after_small != before)
        FAIL("smheap_coll_inline counted a call the shared-heap collectives did not run");
    if (after_big != after_small)
        FAIL("a 4 KiB Bcast went inline");

    run_ahead(dup);
    mixed(dup);
    reductions(dup, mat4, mmul);
    gathers(dup, every_other);
    rooted(dup);
    rooted_v(dup);
    allgather_v(dup);
    alltoall_v(dup);
    alltoalls(dup, every_other);
    if (coll_on && inline_calls() - after_big < 3 * CELLS + 4 * CELLS)
        FAIL("only %llu calls went inline", inline_calls() - after_big);
    mismatches(dup, 1000);      /* the big side waits */
    mismatches(dup, 60);        /* the big side spills */

    MPI_Comm_free(&dup);
    MPI_Op_free(&mmul);
    MPI_Type_free(&mat4);
    MPI_Type_free(&every_other);
    MPI_T_finalize();
    smheap_test_report(errs);
    MPI_Finalize();
    return 0;
}

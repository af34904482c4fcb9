/* Collectives on a machine described by a synthetic hwloc topology (argv[1], '_' for ' ';
 * "none" for this machine):
 * the node's ranks are placed one per processing unit in order, so that communicators whose
 * ranks sit on different packages, NUMA nodes or L3 caches run Barrier and the small Bcast,
 * Reduce and Allreduce as trees (MPIR_CVAR_CH3_SMHEAP_COLL_TREE_MIN, set low by the
 * testlist).  Every collective the smheap table overrides is checked on MPI_COMM_WORLD, on
 * a communicator of every other rank and on one in reverse rank order:
 *  - Barrier: no rank leaves before the last one arrives (timestamps; ranks arrive late in
 *    turn);
 *  - Bcast from every root, small (down the tree) and large; a root that runs ahead of
 *    readers that sleep, over three rings of cells; roots changing every call;
 *  - Reduce to every root and Allreduce, commutative (tree) and not (flat, rank order), in
 *    place too; Reduce_scatter_block;
 *  - Gather(v), Scatter(v), Allgather(v), Alltoall(v);
 *  - a Bcast whose root passes more data than the others expect: an error everywhere, no
 *    hang, and the communicator works afterwards.
 * argv[2] says whether trees must have run (MPI_T smheap_coll_tree): "tree" or "flat"; a
 * job on several nodes only checks the results. */
#include <time.h>
#include <unistd.h>
#include "../include/smheap_test.h"

static int errs, wrank;

#define FAIL(...) do { if (errs++ < 10) { printf("rank %d: ", wrank); printf(__VA_ARGS__); printf("\n"); } } while (0)

static void mat_of(int r, int m[4])
{
    m[0] = 1; m[1] = r % 3 + 1; m[2] = r % 2; m[3] = 1 + (r == 0);
}

/* Seconds on CLOCK_MONOTONIC: every rank of these runs is on this machine (simulated nodes
 * too), and it does not step when the clock is set, as MPI_Wtime's CLOCK_REALTIME does (by
 * an hour on a virtual machine here: read as a rank leaving an hour before another came). */
static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void check_barrier(MPI_Comm comm, int rank, int size)
{
    for (int late = 0; late < size; late += (size > 4 ? size / 3 : 1)) {
        double t[2], *all = malloc(2 * size * sizeof(double)), last = 0, first = 1e30;

        if (rank == late)
            usleep(20000);
        t[0] = now();
        MPI_Barrier(comm);
        t[1] = now();
        MPI_Allgather(t, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, comm);
        for (int r = 0; r < size; r++) {
            last = all[2 * r] > last ? all[2 * r] : last;
            first = all[2 * r + 1] < first ? all[2 * r + 1] : first;
        }
        if (first < last)
            FAIL("Barrier: a rank left %.6f s before rank %d arrived", last - first, late);
        free(all);
    }
}

static void check_bcast(MPI_Comm comm, int rank, int size)
{
    int big = 100000, *v = malloc(big * sizeof(int));

    for (int root = 0; root < size; root++)
        for (int n = 1; n <= big; n = n == 1 ? 28 : n == 28 ? 29 : n == 29 ? 3000 : big + 1) {
            for (int i = 0; i < n; i++)
                v[i] = rank == root ? root * 7 + i : -1;
            MPI_Bcast(v, n, MPI_INT, root, comm);
            for (int i = 0; i < n; i++)
                if (v[i] != root * 7 + i) {
                    FAIL("Bcast of %d ints from %d: [%d] = %d", n, root, i, v[i]);
                    break;
                }
        }
    /* the root runs ahead over three rings of cells while the others sleep */
    if (rank != 0)
        usleep(30000);
    for (int i = 0; i < 96; i++) {
        v[i] = rank == 0 ? 500 + i : -1;
        MPI_Bcast(&v[i], 1, MPI_INT, 0, comm);
    }
    for (int i = 0; i < 96; i++)
        if (v[i] != 500 + i) {
            FAIL("Bcast run ahead: call %d gave %d", i, v[i]);
            break;
        }
    /* a new root every call, two of them running ahead in turn */
    for (int i = 0; i < 64; i++) {
        int root = (i * 5) % size, x = rank == root ? i * 3 + root : -1;
        if (i == 32 && rank % 2)
            usleep(10000);
        MPI_Bcast(&x, 1, MPI_INT, root, comm);
        if (x != i * 3 + root)
            FAIL("Bcast from changing root %d, call %d: %d", root, i, x);
    }
    free(v);
}

static void check_reductions(MPI_Comm comm, int rank, int size)
{
    MPI_Op matop;
    int n, sum[20], in[20], m[4], want[4], one[4];
    double d[8], dsum[8];

    MPI_Op_create(smheap_test_matmul, 0, &matop);
    for (n = 1; n <= 20; n += 19) {
        for (int i = 0; i < n; i++)
            in[i] = rank + i;
        for (int root = 0; root < size; root++) {
            for (int i = 0; i < n; i++)
                sum[i] = -1;
            MPI_Reduce(in, sum, n, MPI_INT, MPI_SUM, root, comm);
            if (rank == root)
                for (int i = 0; i < n; i++)
                    if (sum[i] != size * (size - 1) / 2 + size * i)
                        FAIL("Reduce SUM of %d to %d: [%d] = %d", n, root, i, sum[i]);
            if (rank == root)
                memcpy(sum, in, n * sizeof(int));
            MPI_Reduce(rank == root ? MPI_IN_PLACE : in, sum, n, MPI_INT, MPI_MAX, root, comm);
            if (rank == root && sum[n - 1] != size - 1 + n - 1)
                FAIL("Reduce MAX in place to %d: %d", root, sum[n - 1]);
        }
        MPI_Allreduce(in, sum, n, MPI_INT, MPI_SUM, comm);
        for (int i = 0; i < n; i++)
            if (sum[i] != size * (size - 1) / 2 + size * i)
                FAIL("Allreduce SUM of %d: [%d] = %d", n, i, sum[i]);
        memcpy(sum, in, n * sizeof(int));
        MPI_Allreduce(MPI_IN_PLACE, sum, n, MPI_INT, MPI_MIN, comm);
        if (sum[0] != 0)
            FAIL("Allreduce MIN in place: %d", sum[0]);
    }
    for (int i = 0; i < 8; i++)
        d[i] = 0.5 * rank + i;
    MPI_Allreduce(d, dsum, 8, MPI_DOUBLE, MPI_SUM, comm);
    for (int i = 0; i < 8; i++)
        if (dsum[i] != 0.25 * size * (size - 1) + size * i)
            FAIL("Allreduce of doubles: [%d] = %g", i, dsum[i]);

    /* not commutative: rank order, whatever the tree */
    want[0] = 1; want[1] = 0; want[2] = 0; want[3] = 1;
    for (int r = size - 1; r >= 0; r--) {
        mat_of(r, one);
        smheap_test_matmul(one, want, (int[]) {1}, NULL);
    }
    mat_of(rank, m);
    {
        MPI_Datatype mat;
        int got[4];
        MPI_Type_contiguous(4, MPI_INT, &mat);
        MPI_Type_commit(&mat);
        MPI_Allreduce(m, got, 1, mat, matop, comm);
        if (memcmp(got, want, sizeof(got)))
            FAIL("Allreduce of matrices: {%d %d %d %d}", got[0], got[1], got[2], got[3]);
        for (int root = 0; root < size; root += size > 3 ? size / 3 : 1) {
            MPI_Reduce(m, got, 1, mat, matop, root, comm);
            if (rank == root && memcmp(got, want, sizeof(got)))
                FAIL("Reduce of matrices to %d: {%d %d %d %d}", root, got[0], got[1], got[2],
                     got[3]);
        }
        MPI_Type_free(&mat);
    }
    {
        int *rs = malloc(3 * size * sizeof(int)), out[3];
        for (int i = 0; i < 3 * size; i++)
            rs[i] = rank * i;
        MPI_Reduce_scatter_block(rs, out, 3, MPI_INT, MPI_SUM, comm);
        for (int i = 0; i < 3; i++)
            if (out[i] != (3 * rank + i) * size * (size - 1) / 2)
                FAIL("Reduce_scatter_block: [%d] = %d", i, out[i]);
        free(rs);
    }
    MPI_Op_free(&matop);
}

static void check_exchanges(MPI_Comm comm, int rank, int size)
{
    int *all = malloc(4 * size * sizeof(int)), *cnt = malloc(size * sizeof(int));
    int *dsp = malloc(size * sizeof(int)), mine[4], got[4];

    for (int i = 0; i < size; i++) {
        cnt[i] = 2;
        dsp[i] = 2 * (size - 1 - i);
    }
    for (int root = 0; root < size; root += size > 3 ? size / 3 : 1) {
        mine[0] = rank; mine[1] = rank * 10;
        MPI_Gather(mine, 2, MPI_INT, all, 2, MPI_INT, root, comm);
        if (rank == root)
            for (int r = 0; r < size; r++)
                if (all[2 * r] != r || all[2 * r + 1] != r * 10)
                    FAIL("Gather to %d: from %d %d %d", root, r, all[2 * r], all[2 * r + 1]);
        MPI_Gatherv(mine, 2, MPI_INT, all, cnt, dsp, MPI_INT, root, comm);
        if (rank == root)
            for (int r = 0; r < size; r++)
                if (all[dsp[r]] != r)
                    FAIL("Gatherv to %d: from %d %d", root, r, all[dsp[r]]);
        for (int r = 0; r < size; r++)
            all[2 * r] = all[2 * r + 1] = r + 100 * root;
        MPI_Scatter(all, 2, MPI_INT, got, 2, MPI_INT, root, comm);
        if (got[0] != rank + 100 * root)
            FAIL("Scatter from %d: %d", root, got[0]);
        MPI_Scatterv(all, cnt, dsp, MPI_INT, got, 2, MPI_INT, root, comm);
        if (got[0] != size - 1 - rank + 100 * root)
            FAIL("Scatterv from %d: %d", root, got[0]);
    }
    mine[0] = rank * 3;
    MPI_Allgather(mine, 1, MPI_INT, all, 1, MPI_INT, comm);
    for (int r = 0; r < size; r++)
        if (all[r] != r * 3)
            FAIL("Allgather: from %d %d", r, all[r]);
    for (int i = 0; i < size; i++) {
        cnt[i] = 1;
        dsp[i] = size - 1 - i;
    }
    MPI_Allgatherv(mine, 1, MPI_INT, all, cnt, dsp, MPI_INT, comm);
    for (int r = 0; r < size; r++)
        if (all[size - 1 - r] != r * 3)
            FAIL("Allgatherv: from %d %d", r, all[size - 1 - r]);
    {
        int *s = malloc(size * sizeof(int)), *d = malloc(size * sizeof(int));
        for (int r = 0; r < size; r++)
            s[r] = rank * 1000 + r;
        MPI_Alltoall(s, 1, MPI_INT, d, 1, MPI_INT, comm);
        for (int r = 0; r < size; r++)
            if (d[r] != r * 1000 + rank)
                FAIL("Alltoall: from %d %d", r, d[r]);
        for (int r = 0; r < size; r++)
            cnt[r] = 1, dsp[r] = r;
        MPI_Alltoallv(s, cnt, dsp, MPI_INT, d, cnt, dsp, MPI_INT, comm);
        for (int r = 0; r < size; r++)
            if (d[r] != r * 1000 + rank)
                FAIL("Alltoallv: from %d %d", r, d[r]);
        free(s);
        free(d);
    }
    free(all);
    free(cnt);
    free(dsp);
}

/* The root passes 64 ints (its spill area) or 1000 (its slot), the others expect 1 (a cell,
 * down the tree). */
static void check_mismatch(MPI_Comm comm, int rank, int size)
{
    static int v[1000];
    int err, x, counts[2] = { 64, 1000 };

    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    for (int i = 0; i < 2; i++) {
        err = MPI_Bcast(v, rank == 0 ? counts[i] : 1, MPI_INT, 0, comm);
        if (err == MPI_SUCCESS && rank != 0)
            FAIL("Bcast of %d ints received as 1 int: no error", counts[i]);
        x = rank == 0 ? 77 : 0;
        MPI_Bcast(&x, 1, MPI_INT, 0, comm);
        if (x != 77)
            FAIL("Bcast after a mismatch of %d ints: %d", counts[i], x);
        MPI_Allreduce(&rank, &x, 1, MPI_INT, MPI_SUM, comm);
        if (x != size * (size - 1) / 2)
            FAIL("Allreduce after a mismatch of %d ints: %d", counts[i], x);
    }
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
}

static void check_all(MPI_Comm comm)
{
    int rank, size;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    check_barrier(comm, rank, size);
    check_bcast(comm, rank, size);
    check_reductions(comm, rank, size);
    check_exchanges(comm, rank, size);
    check_mismatch(comm, rank, size);
}

int main(int argc, char **argv)
{
    char topo[256];
    unsigned long long trees;
    MPI_Comm half, reversed;
    int size, one_node;

    if (argc < 3) {
        fprintf(stderr, "usage: tree <synthetic topology, '_' for ' '> tree|flat\n");
        return 1;
    }
    snprintf(topo, sizeof(topo), "%s", argv[1]);
    for (char *p = topo; *p; p++)
        if (*p == '_')
            *p = ' ';
    if (strcmp(topo, "none") != 0)    /* "none": this machine, whose ranks are not bound */
        setenv("HWLOC_SYNTHETIC", topo, 1);
    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    check_all(MPI_COMM_WORLD);
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &half);
    check_all(half);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - wrank, &reversed);
    check_all(reversed);
    MPI_Comm_free(&half);
    MPI_Comm_free(&reversed);

    /* trees are for communicators within one node: across nodes, only correctness counts
     * (spans_nodes is collective: every rank calls it) */
    one_node = !spans_nodes(MPI_COMM_WORLD);
    trees = pvar_value("smheap_coll_tree");
    if (strcmp(argv[2], "tree") == 0 && trees == 0 && one_node)
        FAIL("no collective ran as a tree on topology '%s'", topo);
    if (strcmp(argv[2], "flat") == 0 && trees != 0)
        FAIL("%llu collectives ran as trees, none should have", trees);
    smheap_test_report(errs);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}

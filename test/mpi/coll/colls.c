/* The shared-heap collectives give MPI's results: Barrier, Bcast, Reduce, Allreduce,
 * Allgather, Gather, Scatter, Alltoall, their v variants and Reduce_scatter_block, on
 * MPI_COMM_WORLD, a duplicate, an odd/even split
 * and a split with the ranks reversed; with buffers from the heap and from static memory;
 * with MPI_IN_PLACE where MPI allows it; for 1, 1000 and 300,000 elements (one rank reduces
 * small vectors, every rank a part of large ones); for MPI_INT with MPI_SUM and MPI_MAX,
 * MPI_DOUBLE with MPI_SUM, a user-defined commutative operation and a non-commutative one
 * (2x2 integer matrix product over a contiguous type of 4 ints), MPI_DOUBLE_INT with
 * MPI_MAXLOC (a gapped type: MPICH's algorithms), and a strided vector type for the data
 * movers.  The MPI_T counters show which algorithms ran.  On a job across nodes,
 * MPI_COMM_WORLD's Barrier, Bcast, Reduce and Allreduce run in two levels wherever a node
 * holds two of its ranks or more, and never on one node. */
#include <stdlib.h>
#include <string.h>
#include "../include/smheap_test.h"

#define MAXN 300000
static int errs;
static unsigned long long fallbacks, shared_calls;     /* around the MAXLOC calls */
static unsigned long long expected_fallbacks;
static int static_a[4 * MAXN * 10], static_b[4 * MAXN * 10];

#define FAIL(...) do { if (errs++ < 10) { printf(__VA_ARGS__); printf("\n"); } } while (0)

static int val(int rank, int i) { return (rank + 1) * 1000 + i % 997; }

static void user_sum(void *in, void *inout, int *len, MPI_Datatype * dt)
{
    (void) dt;
    for (int i = 0; i < *len; i++)
        ((int *) inout)[i] += ((int *) in)[i];
}

static void mat_of(int rank, int i, int m[4])
{
    m[0] = 1; m[1] = (rank + i) % 3; m[2] = 0; m[3] = 1 + (rank == 0);
}

#define BUFINTS (4 * MAXN * 10)
static int *heap_a, *heap_b;    /* malloc'd once, as large as the static ones */

/* Buffer `which` (0 or 1) from the heap or from static memory; ints says how much the
 * caller uses (at most BUFINTS). */
static int *buffer(int heap, int which, size_t ints)
{
    if (ints > BUFINTS)
        abort();
    if (!heap)
        return which ? static_b : static_a;
    return which ? heap_b : heap_a;
}

static void test_reductions(MPI_Comm comm, int heap, int n, MPI_Datatype mat4, MPI_Op usum,
                            MPI_Op mmul)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);

    for (int inplace = 0; inplace < 2; inplace++) {
        int *s = buffer(heap, 0, n), *r = buffer(heap, 1, n);
        for (int root = 0; root < size; root += size > 2 ? size - 1 : 1) {
            /* MPI_INT with MPI_SUM, MPI_MAX and the user sum; Reduce and Allreduce */
            MPI_Op ops[3] = { MPI_SUM, MPI_MAX, usum };
            for (int o = 0; o < 3; o++)
                for (int all = 0; all < 2; all++) {
                    for (int i = 0; i < n; i++)
                        (inplace && (all || rank == root) ? r : s)[i] = val(rank, i);
                    const void *sb = inplace && (all || rank == root) ? MPI_IN_PLACE : s;
                    if (all)
                        MPI_Allreduce(sb, r, n, MPI_INT, ops[o], comm);
                    else
                        MPI_Reduce(sb, r, n, MPI_INT, ops[o], root, comm);
                    if (!all && rank != root)
                        continue;
                    for (int i = 0; i < n; i++) {
                        int want = ops[o] == MPI_MAX ? val(size - 1, i) : 0;
                        if (ops[o] != MPI_MAX)
                            for (int k = 0; k < size; k++)
                                want += val(k, i);
                        if (r[i] != want) {
                            FAIL("%s op %d n %d inplace %d heap %d root %d: [%d] = %d, want %d",
                                 all ? "allreduce" : "reduce", o, n, inplace, heap, root, i,
                                 r[i], want);
                            break;
                        }
                    }
                }
            /* non-commutative: product of the ranks' matrices in rank order */
            int m = n / 4 + 1;
            int *ms = buffer(heap, 0, 4 * m), *mr = buffer(heap, 1, 4 * m);
            for (int i = 0; i < m; i++)
                mat_of(rank, i, (inplace ? mr : ms) + 4 * i);
            MPI_Allreduce(inplace ? MPI_IN_PLACE : ms, mr, m, mat4, mmul, comm);
            for (int i = 0; i < m; i++) {
                int want[4] = { 1, 0, 0, 1 }, t[4], c[4];
                for (int k = 0; k < size; k++) {
                    int one = 1;
                    mat_of(k, i, t);
                    memcpy(c, t, sizeof(c));
                    smheap_test_matmul(want, c, &one, NULL);        /* c = want x t */
                    memcpy(want, c, sizeof(c));
                }
                if (memcmp(want, mr + 4 * i, sizeof(want)) != 0) {
                    FAIL("matmul allreduce n %d inplace %d: element %d wrong", m, inplace, i);
                    break;
                }
            }
            /* MPI_DOUBLE sum */
            double *ds = (double *) buffer(heap, 0, 2 * n), *dr = (double *) buffer(heap, 1, 2 * n);
            for (int i = 0; i < n; i++)
                ds[i] = 0.5 * val(rank, i);
            MPI_Allreduce(ds, dr, n, MPI_DOUBLE, MPI_SUM, comm);
            for (int i = 0; i < n; i++) {
                double want = 0;
                for (int k = 0; k < size; k++)
                    want += 0.5 * val(k, i);
                if (dr[i] != want) {
                    FAIL("double allreduce n %d: [%d] = %g, want %g", n, i, dr[i], want);
                    break;
                }
            }
        }
    }
    /* a gapped pair type: MPICH's algorithms, same answer (MPICH itself answers calls on
     * one rank without calling the device) */
    if (size > 1)
        expected_fallbacks++;
    struct { double v; int loc; } in = { (double) (rank % 3), rank }, out;
    unsigned long long fb0 = pvar_value("smheap_coll_fallback"), sh0 = pvar_value("smheap_coll_shared");
    MPI_Allreduce(&in, &out, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm);
    fallbacks += pvar_value("smheap_coll_fallback") - fb0;
    shared_calls += pvar_value("smheap_coll_shared") - sh0;
    int wantloc = size > 2 ? 2 : size - 1;
    if (out.v != (double) (wantloc % 3) || out.loc != wantloc)
        FAIL("maxloc: %g at %d", out.v, out.loc);
}

static void test_movers(MPI_Comm comm, int heap, int n, MPI_Datatype strided)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *s = buffer(heap, 0, (size_t) n * size * 2), *r = buffer(heap, 1, (size_t) n * size * 2);

    for (int root = 0; root < size; root += size > 2 ? size - 1 : 1) {
        /* Bcast, contiguous and through the strided type (every other int) */
        for (int i = 0; i < n; i++)
            s[i] = rank == root ? val(root, i) : -1;
        MPI_Bcast(s, n, MPI_INT, root, comm);
        for (int i = 0; i < n; i++)
            if (s[i] != val(root, i)) {
                FAIL("bcast n %d heap %d root %d: [%d] = %d", n, heap, root, i, s[i]);
                break;
            }
        for (int i = 0; i < 2 * n; i++)
            r[i] = rank == root ? val(root, i / 2) : -1;
        MPI_Bcast(r, n, strided, root, comm);
        for (int i = 0; i < n; i++)
            if (r[2 * i] != val(root, i)) {
                FAIL("strided bcast n %d root %d: [%d] = %d", n, root, i, r[2 * i]);
                break;
            }

        /* Gather and Scatter, in place at the root too */
        for (int inplace = 0; inplace < 2; inplace++) {
            for (int i = 0; i < n; i++)
                s[i] = val(rank, i);
            for (int i = 0; i < n * size; i++)
                r[i] = -1;
            if (inplace && rank == root)
                memcpy(r + (size_t) root * n, s, n * sizeof(int));
            MPI_Gather(inplace && rank == root ? MPI_IN_PLACE : s, n, MPI_INT, r, n, MPI_INT,
                       root, comm);
            if (rank == root)
                for (int i = 0; i < n * size; i++)
                    if (r[i] != val(i / n, i % n)) {
                        FAIL("gather n %d inplace %d root %d: [%d] = %d", n, inplace, root,
                             i, r[i]);
                        break;
                    }
            for (int i = 0; i < n * size; i++)
                s[i] = rank == root ? val(i / n, i % n) : -1;
            for (int i = 0; i < n; i++)
                r[i] = -1;
            MPI_Scatter(s, n, MPI_INT, inplace && rank == root ? MPI_IN_PLACE : r, n, MPI_INT,
                        root, comm);
            if (!(inplace && rank == root))
                for (int i = 0; i < n; i++)
                    if (r[i] != val(rank, i)) {
                        FAIL("scatter n %d inplace %d root %d: [%d] = %d", n, inplace, root,
                             i, r[i]);
                        break;
                    }
        }
    }

    /* Allgather and Alltoall, in place too */
    for (int inplace = 0; inplace < 2; inplace++) {
        for (int i = 0; i < n; i++)
            s[i] = val(rank, i);
        for (int i = 0; i < n * size; i++)
            r[i] = inplace && i / n == rank ? val(rank, i % n) : -1;
        MPI_Allgather(inplace ? MPI_IN_PLACE : s, n, MPI_INT, r, n, MPI_INT, comm);
        for (int i = 0; i < n * size; i++)
            if (r[i] != val(i / n, i % n)) {
                FAIL("allgather n %d inplace %d: [%d] = %d", n, inplace, i, r[i]);
                break;
            }
        /* block j of rank k holds val(k * size + j, i) */
        for (int i = 0; i < n * size; i++)
            (inplace ? r : s)[i] = val(rank * size + i / n, i % n);
        MPI_Alltoall(inplace ? MPI_IN_PLACE : s, n, MPI_INT, r, n, MPI_INT, comm);
        for (int i = 0; i < n * size; i++)
            if (r[i] != val((i / n) * size + rank, i % n)) {
                FAIL("alltoall n %d inplace %d: [%d] = %d", n, inplace, i, r[i]);
                break;
            }
    }
}

/* The v variants: rank r's block has cnt(r) elements and sits at disp(r), with gaps. */
static int cnt(int r, int n) { return n / 2 + r % 3; }
static int disp(int r, int n) { int d = 0; for (int k = 0; k < r; k++) d += cnt(k, n) + 1; return d; }

static void test_vectors(MPI_Comm comm, int heap, int n)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *s = buffer(heap, 0, (size_t) (n + 3) * size * 2), *r = buffer(heap, 1, (size_t) (n + 3) * size * 2);
    MPI_Aint counts[64], displs[64], scounts[64], sdispls[64];
    int total = disp(size, n);

    for (int k = 0; k < size; k++) {
        counts[k] = cnt(k, n);
        displs[k] = disp(k, n);
    }
    for (int inplace = 0; inplace < 2; inplace++) {
        /* Allgatherv */
        for (int i = 0; i < total; i++)
            r[i] = -1;
        for (int i = 0; i < cnt(rank, n); i++)
            (inplace ? r + disp(rank, n) : s)[i] = val(rank, i);
        MPI_Allgatherv_c(inplace ? MPI_IN_PLACE : s, cnt(rank, n), MPI_INT, r, counts, displs,
                         MPI_INT, comm);
        for (int k = 0; k < size; k++)
            for (int i = 0; i < cnt(k, n); i++)
                if (r[disp(k, n) + i] != val(k, i)) {
                    FAIL("allgatherv n %d inplace %d: block %d [%d] = %d", n, inplace, k, i,
                         r[disp(k, n) + i]);
                    k = size;
                    break;
                }
        /* Gatherv and Scatterv to and from the last rank */
        int root = size - 1, mine = rank == root && inplace;
        for (int i = 0; i < total; i++)
            r[i] = -1;
        for (int i = 0; i < cnt(rank, n); i++)
            (mine ? r + disp(rank, n) : s)[i] = val(rank, i);
        MPI_Gatherv_c(mine ? MPI_IN_PLACE : s, cnt(rank, n), MPI_INT, r, counts, displs, MPI_INT,
                      root, comm);
        if (rank == root)
            for (int k = 0; k < size; k++)
                for (int i = 0; i < cnt(k, n); i++)
                    if (r[disp(k, n) + i] != val(k, i)) {
                        FAIL("gatherv n %d inplace %d: block %d [%d] = %d", n, inplace, k, i,
                             r[disp(k, n) + i]);
                        k = size;
                        break;
                    }
        for (int k = 0; k < size; k++)
            for (int i = 0; i < cnt(k, n); i++)
                s[disp(k, n) + i] = rank == root ? val(k, i) + 7 : -1;
        for (int i = 0; i < cnt(rank, n); i++)
            r[i] = -1;
        MPI_Scatterv_c(s, counts, displs, MPI_INT, mine ? MPI_IN_PLACE : r, cnt(rank, n), MPI_INT,
                       root, comm);
        if (!mine)
            for (int i = 0; i < cnt(rank, n); i++)
                if (r[i] != val(rank, i) + 7) {
                    FAIL("scatterv n %d inplace %d: [%d] = %d", n, inplace, i, r[i]);
                    break;
                }
        /* Alltoallv: rank a sends rank b cnt(a + b) elements; blocks spaced by disp */
        int off = 0, roff = 0;
        for (int k = 0; k < size; k++) {
            scounts[k] = cnt(rank + k, n);
            sdispls[k] = off;
            off += scounts[k] + 1;
            counts[k] = cnt(k + rank, n);
            displs[k] = roff;
            roff += counts[k] + 1;
        }
        for (int i = 0; i < roff; i++)
            r[i] = -1;
        for (int k = 0; k < size; k++)
            for (int i = 0; i < scounts[k]; i++)
                (inplace ? r : s)[(inplace ? displs : sdispls)[k] + i] = val(rank * 64 + k, i);
        MPI_Alltoallv_c(inplace ? MPI_IN_PLACE : s, scounts, sdispls, MPI_INT, r, counts, displs,
                        MPI_INT, comm);
        for (int k = 0; k < size; k++)
            for (int i = 0; i < counts[k]; i++)
                if (r[displs[k] + i] != val(k * 64 + rank, i)) {
                    FAIL("alltoallv n %d inplace %d: from %d [%d] = %d", n, inplace, k, i,
                         r[displs[k] + i]);
                    k = size;
                    break;
                }
        for (int k = 0; k < size; k++) {
            counts[k] = cnt(k, n);
            displs[k] = disp(k, n);
        }
        /* Reduce_scatter_block: block k of the sum goes to rank k */
        for (int i = 0; i < n * size; i++)
            (inplace ? r : s)[i] = val(rank, i);
        MPI_Reduce_scatter_block(inplace ? MPI_IN_PLACE : s, r, n, MPI_INT, MPI_SUM, comm);
        for (int i = 0; i < n; i++) {
            int want = 0;
            for (int k = 0; k < size; k++)
                want += val(k, rank * n + i);
            if (r[i] != want) {
                FAIL("reduce_scatter_block n %d inplace %d: [%d] = %d, want %d", n, inplace, i,
                     r[i], want);
                break;
            }
        }
    }
}

static void test_comm(MPI_Comm comm, MPI_Datatype mat4, MPI_Datatype strided, MPI_Op usum,
                      MPI_Op mmul)
{
    /* 20000 ints: an Allreduce done whole by every rank on few ranks, split on more (where
     * the inputs every rank would pull outgrow a quarter of the L2 cache) */
    int sizes[] = { 1, 1000, 20000, MAXN };
    for (int k = 0; k < 4; k++)
        for (int heap = 1; heap >= 0; heap--) {
            MPI_Barrier(comm);
            test_reductions(comm, heap, sizes[k], mat4, usum, mmul);
            test_movers(comm, heap, sizes[k] / (k == 3 ? 10 : 1), strided);
            test_vectors(comm, heap, sizes[k] / (k == 3 ? 10 : 1));
        }
}

int main(int argc, char **argv)
{
    int rank, size, prov;
    MPI_Comm dup, half, reversed;
    MPI_Datatype mat4, strided;
    MPI_Op usum, mmul;
    unsigned long long shared0, fallback0, shared1, fallback1, min_shared = 500;
    unsigned long long two_level0, two_level1, min_two_level = 0;
    int host_size, max_host_size;

    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    heap_a = malloc(BUFINTS * sizeof(int));
    heap_b = malloc(BUFINTS * sizeof(int));
    MPI_Type_contiguous(4, MPI_INT, &mat4);
    MPI_Type_commit(&mat4);
    MPI_Type_vector(1, 1, 2, MPI_INT, &strided);       /* one int, then a gap of one */
    MPI_Type_create_resized(strided, 0, 2 * sizeof(int), &strided);
    MPI_Type_commit(&strided);
    MPI_Op_create(user_sum, 1, &usum);
    MPI_Op_create(smheap_test_matmul, 0, &mmul);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &reversed);

    shared0 = pvar_value("smheap_coll_shared");
    fallback0 = pvar_value("smheap_coll_fallback");
    two_level0 = pvar_value("smheap_coll_node_aware");
    test_comm(MPI_COMM_WORLD, mat4, strided, usum, mmul);
    two_level1 = pvar_value("smheap_coll_node_aware");
    test_comm(dup, mat4, strided, usum, mmul);
    test_comm(half, mat4, strided, usum, mmul);
    test_comm(reversed, mat4, strided, usum, mmul);
    if (spans_nodes(MPI_COMM_WORLD)) {
        /* One heap per node: the shared-heap algorithms serve communicators within a node
         * (and the node parts of MPICH's algorithms); the ones above were checked for
         * their results.  The paths are checked on this node's communicator. */
        MPI_Comm host = comm_of_my_host(MPI_COMM_WORLD);

        fallbacks = expected_fallbacks = shared_calls = 0;
        shared0 = pvar_value("smheap_coll_shared");
        fallback0 = pvar_value("smheap_coll_fallback");
        test_comm(host, mat4, strided, usum, mmul);
        MPI_Comm_size(host, &host_size);
        min_shared = host_size > 1 ? 50 : 0;    /* MPICH answers calls on one rank */
        MPI_Comm_free(&host);
    }
    shared1 = pvar_value("smheap_coll_shared");
    fallback1 = pvar_value("smheap_coll_fallback");
    if (spans_nodes(MPI_COMM_WORLD)) {
        /* MPICH makes node communicators where a node holds two ranks or more */
        MPI_Allreduce(&host_size, &max_host_size, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        min_two_level = max_host_size > 1 ? 20 : 0;
    }

    /* with the heap shared and the collectives on, everything ran on the shared heap but the
     * MAXLOC calls, which went to MPICH's algorithms */
    if (pvar_value("smheap_heap_shared") == 1 && getenv("MPIR_CVAR_CH3_SMHEAP_COLL") == NULL &&
        getenv("MPIR_CVAR_DEVICE_COLLECTIVES") == NULL) {
        if (fallbacks != expected_fallbacks || fallback1 - fallback0 != expected_fallbacks ||
            shared_calls != 0 || shared1 - shared0 < min_shared)
            FAIL("algorithms: %llu shared, %llu handed to MPICH of which %llu MAXLOC (want %llu)",
                 shared1 - shared0, fallback1 - fallback0, fallbacks, expected_fallbacks);
        if (two_level1 - two_level0 < min_two_level ||
            (min_two_level == 0 && two_level1 != two_level0))
            FAIL("MPI_COMM_WORLD: %llu collectives in two levels (want %s%llu)",
                 two_level1 - two_level0, min_two_level ? "at least " : "", min_two_level);
    } else if (shared1 != shared0) {
        FAIL("%llu collectives ran on the shared heap, which is off", shared1 - shared0);
    }

    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
    MPI_Comm_free(&reversed);
    MPI_Op_free(&usum);
    MPI_Op_free(&mmul);
    MPI_Type_free(&mat4);
    MPI_Type_free(&strided);
    free(heap_a);
    free(heap_b);
    smheap_test_report(errs);
    MPI_Finalize();
    MPI_T_finalize();
    return 0;
}

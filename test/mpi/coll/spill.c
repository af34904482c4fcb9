/* Rooted collectives and Alltoallv whose data are too big for a cell but not for a spill
 * piece (between a cell's 112 bytes and SMHEAP_COLL_SPILL_LEN): the writer copies them to
 * its spill area and returns without waiting for its readers, as with inline data, so
 *  - a Bcast root, the senders of a Gather, a Scatter(v) root and the ranks of an Alltoallv
 *    run ahead 3 * CELLS calls while their readers sleep (each spill piece must wait for
 *    its cell's readers before it is written again), and the readers find every block;
 *  - a Bcast root that frees the communicator at once and reuses the memory does not pull
 *    its spill area from under readers still asleep;
 *  - MPI_T's smheap_coll_spilled counts exactly the calls whose writer spilled (none with
 *    MPIR_CVAR_CH3_SMHEAP_COLL=0 or the heap off: the test is then given "off").
 * Mismatched sizes with a spilled side: coll/inline.c. */
#include <unistd.h>
#include "../include/smheap_test.h"

#define CELLS 32                /* the most cells a rank has (SMHEAP_COLL_CELLS_MAX) */
#define CELL_DATA 112           /* a cell's data (SMHEAP_COLL_CELL_DATA) */
#define SPILL_LEN 2048          /* the most data a call spills (SMHEAP_COLL_SPILL_LEN) */
#define N (3 * CELLS)
#define BCAST_INTS 100          /* 400 bytes */

static int errs, rank, size, coll_on;

#define FAIL(...) do { if (errs++ < 10) { printf("rank %d: ", rank); printf(__VA_ARGS__); printf("\n"); } } while (0)

static unsigned long long spilled(void)
{
    return pvar_value("smheap_coll_spilled");
}

/* This rank's spilled calls since `before` must be `want` (0 with MPICH's algorithms).  Not
 * checked on a node with one rank of the job (simulated nodes): with no reader, a spill
 * there changes nothing. */
static void expect_spilled(const char *what, unsigned long long before, int want)
{
    unsigned long long got = spilled() - before;

    if (size == 1)
        return;
    if (got != (unsigned long long) (coll_on ? want : 0))
        FAIL("%s: %llu calls spilled here, not %d", what, got, coll_on ? want : 0);
}

static int value(int call, int r, int k)
{
    return call * 100000 + r * 1000 + k;
}

/* The root broadcasts N blocks of BCAST_INTS while the others sleep. */
static void bcast_ahead(MPI_Comm comm)
{
    int *v = malloc(sizeof(int) * N * BCAST_INTS);
    unsigned long long before = spilled();

    if (rank != 0)
        usleep(50000);
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < BCAST_INTS; k++)
            v[i * BCAST_INTS + k] = rank == 0 ? value(i, 0, k) : -1;
        MPI_Bcast(v + i * BCAST_INTS, BCAST_INTS, MPI_INT, 0, comm);
    }
    for (int i = 0; i < N * BCAST_INTS; i++)
        if (v[i] != value(i / BCAST_INTS, 0, i % BCAST_INTS)) {
            FAIL("Bcast %d: [%d] = %d", i / BCAST_INTS, i % BCAST_INTS, v[i]);
            break;
        }
    expect_spilled("Bcast run ahead", before, rank == 0 ? N : 0);
    free(v);
}

/* The senders of N Gathers of BCAST_INTS each run ahead while the root sleeps. */
static void gather_ahead(MPI_Comm comm)
{
    int *all = rank == 0 ? malloc(sizeof(int) * N * size * BCAST_INTS) : NULL;
    int mine[BCAST_INTS];
    unsigned long long before = spilled();

    if (rank == 0)
        usleep(50000);
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < BCAST_INTS; k++)
            mine[k] = value(i, rank, k);
        MPI_Gather(mine, BCAST_INTS, MPI_INT, rank == 0 ? all + i * size * BCAST_INTS : NULL,
                   BCAST_INTS, MPI_INT, 0, comm);
    }
    for (int i = 0; rank == 0 && i < N * size * BCAST_INTS; i++) {
        int call = i / (size * BCAST_INTS), r = i / BCAST_INTS % size, k = i % BCAST_INTS;
        if (all[i] != value(call, r, k)) {
            FAIL("Gather %d: rank %d's [%d] = %d", call, r, k, all[i]);
            break;
        }
    }
    expect_spilled("Gather run ahead", before, rank == 0 ? 0 : N);
    free(all);
}

/* N Scatters of `ints` per rank, and N Scatterv of 20 + r % 2 ints to rank r (blocks in
 * reverse rank order), while the readers sleep. */
static void scatters_ahead(MPI_Comm comm)
{
    int ints = 256 / (int) sizeof(int) / size;  /* 256 bytes from the root in all */
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    int total = 0, *all, *mine = malloc(sizeof(int) * N * (ints > 21 ? ints : 21));
    unsigned long long before = spilled();

    for (int r = 0; r < size; r++)
        total += counts[r] = 20 + r % 2;
    for (int r = 0, end = total; r < size; r++)
        displs[r] = end -= counts[r];
    all = malloc(sizeof(int) * (size_t) (total > ints * size ? total : ints * size));

    if (rank != 0)
        usleep(50000);
    for (int i = 0; i < N; i++) {
        for (int k = 0; rank == 0 && k < ints * size; k++)
            all[k] = value(i, k / ints, k % ints);
        MPI_Scatter(all, ints, MPI_INT, mine + i * ints, ints, MPI_INT, 0, comm);
    }
    for (int i = 0; i < N * ints; i++)
        if (mine[i] != value(i / ints, rank, i % ints)) {
            FAIL("Scatter %d: [%d] = %d", i / ints, i % ints, mine[i]);
            break;
        }
    expect_spilled("Scatter run ahead", before,
                   rank == 0 && ints * size * (int) sizeof(int) > CELL_DATA ? N : 0);

    before = spilled();
    MPI_Barrier(comm);
    if (rank != 0)
        usleep(50000);
    for (int i = 0; i < N; i++) {
        for (int r = 0; rank == 0 && r < size; r++)
            for (int k = 0; k < counts[r]; k++)
                all[displs[r] + k] = value(i, r, k);
        MPI_Scatterv(all, counts, displs, MPI_INT, mine + i * counts[rank], counts[rank],
                     MPI_INT, 0, comm);
    }
    for (int i = 0; i < N * counts[rank]; i++)
        if (mine[i] != value(i / counts[rank], rank, i % counts[rank])) {
            FAIL("Scatterv %d: [%d] = %d", i / counts[rank], i % counts[rank], mine[i]);
            break;
        }
    expect_spilled("Scatterv run ahead", before, rank == 0 ? N : 0);
    free(all);
    free(mine);
    free(counts);
    free(displs);
}

/* N Alltoallv of 20 + (r + s) % 2 ints from rank s to rank r, rank 0 asleep at first: the
 * others run ahead of it. */
static void alltoallv_ahead(MPI_Comm comm)
{
    int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size);
    int *rc = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
    int stotal = 0, rtotal = 0, *in, *out;
    unsigned long long before = spilled();

    for (int r = 0; r < size; r++) {
        sd[r] = stotal;
        stotal += sc[r] = 20 + (r + rank) % 2;
        rd[r] = rtotal;
        rtotal += rc[r] = 20 + (rank + r) % 2;
    }
    in = malloc(sizeof(int) * stotal);
    out = malloc(sizeof(int) * N * rtotal);
    if (rank == 0)
        usleep(50000);
    for (int i = 0; i < N; i++) {
        for (int r = 0; r < size; r++)
            for (int k = 0; k < sc[r]; k++)
                in[sd[r] + k] = value(i, rank, r * 100 + k);
        MPI_Alltoallv(in, sc, sd, MPI_INT, out + i * rtotal, rc, rd, MPI_INT, comm);
    }
    for (int i = 0; i < N; i++)
        for (int s = 0; s < size; s++)
            for (int k = 0; k < rc[s]; k++)
                if (out[i * rtotal + rd[s] + k] != value(i, s, rank * 100 + k)) {
                    FAIL("Alltoallv %d: from %d [%d] = %d", i, s, k, out[i * rtotal + rd[s] + k]);
                    i = N, s = size;
                    break;
                }
    /* each rank's blocks and their table of offsets: spilled when over a cell */
    expect_spilled("Alltoallv run ahead", before,
                   (size + 1) * 8 + stotal * (int) sizeof(int) > CELL_DATA ? N : 0);
    free(in);
    free(out);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

/* The root spills a Bcast, frees the communicator and reuses the memory while the others
 * sleep; they must still find what it sent. */
static void free_while_read(MPI_Comm parent)
{
    enum { REUSE = 16 };
    MPI_Comm comm;
    int v[BCAST_INTS];
    char *reuse[REUSE];

    MPI_Comm_dup(parent, &comm);
    MPI_Barrier(comm);          /* the communicator's control block is made */
    if (rank != 0)
        usleep(100000);
    for (int k = 0; k < BCAST_INTS; k++)
        v[k] = rank == 0 ? value(7, 0, k) : -1;
    MPI_Bcast(v, BCAST_INTS, MPI_INT, 0, comm);
    MPI_Comm_free(&comm);
    if (rank == 0)      /* blocks of the spill area's size, likely where a freed one was */
        for (int i = 0; i < REUSE; i++) {
            reuse[i] = malloc(CELLS * SPILL_LEN);
            memset(reuse[i], 0x5a, CELLS * SPILL_LEN);
        }
    for (int k = 0; k < BCAST_INTS; k++)
        if (v[k] != value(7, 0, k)) {
            FAIL("Bcast before the root freed the communicator: [%d] = %d", k, v[k]);
            break;
        }
    MPI_Barrier(parent);
    for (int i = 0; rank == 0 && i < REUSE; i++)
        free(reuse[i]);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Comm comm;

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    coll_on = node_comm_coll_on(&comm, &rank, &size);
    if (size > 1 && coll_on != (argc < 2 || strcmp(argv[1], "off") != 0))
        FAIL("the shared-heap collectives are %s, not as the test was told", coll_on ? "on" : "off");

    bcast_ahead(comm);
    gather_ahead(comm);
    scatters_ahead(comm);
    alltoallv_ahead(comm);
    for (int i = 0; i < 3; i++)
        free_while_read(comm);

    MPI_Comm_free(&comm);
    MPI_T_finalize();
    smheap_test_report(errs);
    MPI_Finalize();
    return 0;
}

/* Allreduce whole or split (src/coll/smheap_coll_reduce.c, doc/coll-model.md): MPI_SUM of
 * doubles and MPI_MAX of ints, 4 KiB, 64 KiB and 1 MiB, from a send buffer and in place,
 * every element checked; then, where every rank shares this node's heap, the MPI_T counters
 * say which algorithm ran and how many bytes of its peers' buffers each rank read, which is
 * what the cost model counts:
 *   whole: (n - 1) x the vector;
 *   split: (n - 1) x this rank's part of the inputs, then the other ranks' parts of the
 *          result.
 * MPIR_CVAR_CH3_SMHEAP_ALLREDUCE=whole or split forces one; with auto, the choices that do
 * not depend on the machine's caches: 2 ranks reduce 4 and 64 KiB whole (both read as
 * much; the cache bound is far above), more ranks 4 KiB whole and 64 KiB split (the lines a
 * whole reduction reads beyond the split's cost more than the split's extra step). */
#include "../include/smheap_test.h"

#define KIB 1024

static int errs, rank, size;

#define FAIL(...) do { if (errs++ < 10) { printf("rank %d: ", rank); printf(__VA_ARGS__); printf("\n"); } } while (0)

typedef struct counts {
    unsigned long long whole, split, peer_bytes, shared;
} counts_t;

static counts_t read_counts(void)
{
    counts_t c;

    c.whole = pvar_value("smheap_coll_allreduce_whole");
    c.split = pvar_value("smheap_coll_allreduce_split");
    c.peer_bytes = pvar_value("smheap_coll_reduce_peer_bytes");
    c.shared = pvar_value("smheap_coll_shared");
    return c;
}

/* Elements [first, first + part) of count, as the split gives them to rank r. */
static long part_of(long count, int r)
{
    long per = (count + size - 1) / size, first = per * r < count ? per * r : count;

    return (first + per < count ? first + per : count) - first;
}

/* "whole", "split", or NULL where the machine's caches decide. */
static const char *expected(long bytes)
{
    const char *forced = getenv("MPIR_CVAR_CH3_SMHEAP_ALLREDUCE");

    if (forced != NULL && strcmp(forced, "auto") != 0)
        return forced;
    if (bytes == 4 * KIB)
        return "whole";
    if (bytes == 64 * KIB)
        return size == 2 ? "whole" : "split";
    return NULL;
}

static void check_counts(const char *what, counts_t c0, counts_t c1, long count, int extent)
{
    const char *want = expected(count * extent);
    unsigned long long whole = c1.whole - c0.whole, split = c1.split - c0.split;
    unsigned long long bytes = c1.peer_bytes - c0.peer_bytes, want_bytes;

    if (c1.shared - c0.shared != 1) {
        FAIL("%s: %llu shared-heap collectives counted, expected 1", what, c1.shared - c0.shared);
        return;
    }
    if (whole + split != 1) {
        FAIL("%s: whole %llu, split %llu: expected one of them", what, whole, split);
        return;
    }
    if (want != NULL && strcmp(want, whole ? "whole" : "split") != 0)
        FAIL("%s: ran %s, expected %s", what, whole ? "whole" : "split", want);
    if (whole)
        want_bytes = (unsigned long long) (size - 1) * count * extent;
    else
        want_bytes = (unsigned long long) ((size - 1) * part_of(count, rank) +
                                           count - part_of(count, rank)) * extent;
    if (bytes != want_bytes)
        FAIL("%s (%s): read %llu bytes of peers' buffers, expected %llu", what,
             whole ? "whole" : "split", bytes, want_bytes);
}

static void run(long bytes, int in_place, int counted)
{
    long n = bytes / sizeof(double);
    double *dsend = malloc(bytes), *drecv = malloc(bytes);
    int *isend = malloc(bytes), *irecv = malloc(bytes);
    long ni = bytes / sizeof(int);
    char what[64];
    counts_t c0, c1;

    for (long i = 0; i < n; i++)
        dsend[i] = drecv[i] = rank + 1 + (double) (i % 7);
    for (long i = 0; i < ni; i++)
        isend[i] = irecv[i] = (int) ((rank * 131 + i * 17) % 1009);

    snprintf(what, sizeof(what), "SUM of %ld KiB of doubles%s", bytes / KIB,
             in_place ? ", in place" : "");
    c0 = read_counts();
    MPI_Allreduce(in_place ? MPI_IN_PLACE : dsend, drecv, (int) n, MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
    c1 = read_counts();
    for (long i = 0; i < n; i++) {
        double want = size * (double) (size + 1) / 2 + size * (double) (i % 7);

        if (drecv[i] != want) {
            FAIL("%s: element %ld is %g, not %g", what, i, drecv[i], want);
            break;
        }
    }
    if (counted)
        check_counts(what, c0, c1, n, sizeof(double));

    snprintf(what, sizeof(what), "MAX of %ld KiB of ints%s", bytes / KIB,
             in_place ? ", in place" : "");
    c0 = read_counts();
    MPI_Allreduce(in_place ? MPI_IN_PLACE : isend, irecv, (int) ni, MPI_INT, MPI_MAX,
                  MPI_COMM_WORLD);
    c1 = read_counts();
    for (long i = 0; i < ni; i++) {
        int want = 0;

        for (int r = 0; r < size; r++) {
            int x = (int) ((r * 131 + i * 17) % 1009);

            want = x > want ? x : want;
        }
        if (irecv[i] != want) {
            FAIL("%s: element %ld is %d, not %d", what, i, irecv[i], want);
            break;
        }
    }
    if (counted)
        check_counts(what, c0, c1, ni, sizeof(int));
    free(dsend);
    free(drecv);
    free(isend);
    free(irecv);
}

int main(int argc, char **argv)
{
    static const long sizes[] = { 4 * KIB, 64 * KIB, 1024 * KIB };
    int provided, node_size, counted;
    MPI_Comm node;

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    /* a first call sets the communicator's control block up; the counters then count
     * whether the shared-heap algorithms run here at all */
    MPI_Barrier(MPI_COMM_WORLD);
    counted = node_size == size && pvar_value("smheap_coll_shared") > 0;
    for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        for (int in_place = 0; in_place <= 1; in_place++)
            run(sizes[s], in_place, counted);
    smheap_test_report(errs);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}

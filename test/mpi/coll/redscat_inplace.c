/* MPI_Reduce_scatter_block with MPI_IN_PLACE: the result (this rank's block of every rank's
 * buffer, reduced) goes to the first block of the buffer, and the rest of the buffer is left as it was (mpi4py's tests check both), except
 * that where MPICH's default selection takes its pairwise algorithm (a commutative
 * operation on 512 KiB or more in all) this rank's own block holds the result as well, and
 * programs read it there (MPICH's cxx/coll/redscatblk).  Small and large vectors, MIN, SUM,
 * PROD, MAX and a non-commutative operation, every element checked; the same expectations
 * hold for MPICH's own algorithms (run with MPIR_CVAR_CH3_SMHEAP_COLL=0). */
#include "../include/smheap_test.h"

#define PAIRWISE_FROM 524288    /* MPICH's tuning: total_msg_size < 524288 halves */

static int errs, rank, size;

#define FAIL(...) do { if (errs++ < 10) { printf("rank %d: ", rank); printf(__VA_ARGS__); printf("\n"); } } while (0)

static int input(int r, int block, int i)
{
    return r * 7 + block * 3 + i % 5 + 1;
}

/* inout = in "first" inout: the lower rank's value; associative, not commutative. */
static void first_of(void *in, void *inout, int *len, MPI_Datatype * dt)
{
    (void) dt;
    memcpy(inout, in, *len * sizeof(int));
}

/* Element i of this rank's block of the inputs, reduced. */
static int reduced(const char *op, int i)
{
    int v = input(0, rank, i);

    for (int r = 1; r < size; r++) {
        int x = input(r, rank, i);

        if (strcmp(op, "min") == 0)
            v = x < v ? x : v;
        else if (strcmp(op, "max") == 0)
            v = x > v ? x : v;
        else if (strcmp(op, "sum") == 0)
            v += x;
        else if (strcmp(op, "prod") == 0)
            v *= x;
    }
    return v;                   /* "first": rank 0's */
}

static void check(const char *name, MPI_Op op, int commutative, int count)
{
    int *buf = malloc((size_t) count * size * sizeof(int));
    int own_result = commutative && (long) count * size * (long) sizeof(int) >= PAIRWISE_FROM;

    for (int b = 0; b < size; b++)
        for (int i = 0; i < count; i++)
            buf[b * count + i] = input(rank, b, i);
    MPI_Reduce_scatter_block(MPI_IN_PLACE, buf, count, MPI_INT, op, MPI_COMM_WORLD);
    for (int b = 0; b < size; b++)
        for (int i = 0; i < count; i++) {
            int want = b == 0 || (b == rank && own_result) ? reduced(name, i) : input(rank, b, i);

            if (buf[b * count + i] != want) {
                FAIL("%s of %d per rank: element %d of block %d is %d, not %d", name, count, i, b,
                     buf[b * count + i], want);
                break;
            }
        }
    free(buf);
}

int main(int argc, char **argv)
{
    static const int counts[] = { 1, 3, 1000, 65536 };
    MPI_Op first;
    int total;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Op_create(first_of, 0, &first);
    for (unsigned c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        check("min", MPI_MIN, 1, counts[c]);
        check("max", MPI_MAX, 1, counts[c]);
        check("sum", MPI_SUM, 1, counts[c]);
        check("prod", MPI_PROD, 1, counts[c]);
        check("first", first, 0, counts[c]);
    }
    MPI_Op_free(&first);
    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && total == 0)
        printf(" No Errors\n");
    MPI_Finalize();
    return 0;
}

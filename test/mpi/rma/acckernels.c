/* Accumulates with every predefined operation the channel has vector kernels for (sum,
 * product, minimum, maximum, bitwise and/or/xor), on every C integer and floating type and
 * MPI_BYTE, and on two types it has none for (long double, double complex), at lengths that
 * leave every vector width a remainder and at an odd element offset.  Each rank accumulates
 * into the next one's window (MPI_Win_allocate, and MPI_Win_create over malloc'd memory);
 * the result must be bit for bit what MPI_Reduce_local (MPICH's own loops) computes from
 * the same operands, NaNs, infinities and signed zeros included for minimum and maximum.
 * MPI_Get_accumulate and MPI_Fetch_and_op are checked the same way.  On ch3:smheap the
 * vector kernels must have done the work (MPI_T smheap_vector_reductions, summed over the
 * ranks: the origin's when done in place, the target's when applied from packets). */
#include "../include/smheap_test.h"
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <complex.h>

#define MAX_COUNT 4099
#define OFFSET 1                /* elements: the target region starts off vector alignment */

struct type {
    MPI_Datatype dt;
    const char *name;
    size_t size;
    enum { INTEGER, FLOATING, BYTE, OTHER } kind;
    int kernel;                 /* the channel has vector kernels for it */
};

struct op {
    MPI_Op op;
    const char *name;
};

static const struct op ops[] = {
    {MPI_SUM, "sum"}, {MPI_PROD, "prod"}, {MPI_MIN, "min"}, {MPI_MAX, "max"},
    {MPI_BAND, "band"}, {MPI_BOR, "bor"}, {MPI_BXOR, "bxor"},
};

#define NOPS (int) (sizeof(ops) / sizeof(ops[0]))

static int allowed(const struct type *t, MPI_Op op)
{
    int bitwise = op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR;
    int order = op == MPI_MIN || op == MPI_MAX;

    switch (t->kind) {
        case INTEGER:
            return 1;
        case FLOATING:
            return !bitwise;
        case BYTE:
            return bitwise;
        default:
            return !bitwise && !order;  /* long double: sum, prod; complex: sum, prod */
    }
}

/* The value of element i of a rank's operand: small, so that products stay exact; floats
 * get NaN, infinities and signed zeros where the operation only compares. */
static void fill(const struct type *t, MPI_Op op, void *buf, int count, int seed)
{
    for (int i = 0; i < count; i++) {
        int v = (i * 7 + seed * 13) % 5 + 1;
        int special = (op == MPI_MIN || op == MPI_MAX) ? (i + seed) % 11 : -1;
        double d = (i % 3 == 0 ? -1 : 1) * (v + 0.25 * seed);

        if (special == 0)
            d = NAN;
        else if (special == 3)
            d = INFINITY;
        else if (special == 5)
            d = -0.0;
        else if (special == 7)
            d = 0.0;
        if (t->dt == MPI_FLOAT)
            ((float *) buf)[i] = (float) d;
        else if (t->dt == MPI_DOUBLE)
            ((double *) buf)[i] = d;
        else if (t->dt == MPI_LONG_DOUBLE)
            ((long double *) buf)[i] = d;
        else if (t->dt == MPI_C_DOUBLE_COMPLEX)
            ((double _Complex *) buf)[i] = v + I * (seed - v);
        else {
            long long x = (i % 4 == 1 ? -v : v) * (1 + seed);

            memcpy((char *) buf + i * t->size, &x, t->size);    /* little-endian low bytes */
        }
    }
}

/* Bit for bit, but long double by value: its padding bytes are undefined. */
static int same(const struct type *t, const void *a, const void *b)
{
    if (t->dt == MPI_LONG_DOUBLE)
        return *(const long double *) a == *(const long double *) b;
    return memcmp(a, b, t->size) == 0;
}

static int check(const struct type *t, const struct op *o, const char *what, const void *got,
                 const void *want, int count, int rank)
{
    for (int i = 0; i < count; i++)
        if (!same(t, (const char *) got + i * t->size, (const char *) want + i * t->size)) {
            printf("rank %d: %s %s %s count %d: element %d differs from MPI_Reduce_local's\n",
                   rank, what, o->name, t->name, count, i);
            return 1;
        }
    return 0;
}

/* One operation and type at one length, on one window. */
static int accumulate_round(MPI_Win win, char *mine, const struct type *t, const struct op *o,
                            int count, int rank, int size, char *origin, char *want,
                            char *result, long long *kernel_accs)
{
    int errs = 0, target = (rank + 1) % size, from = (rank + size - 1) % size;
    MPI_Aint disp = OFFSET * t->size;

    /* my window: the target operand; origin: what I add to the next rank's */
    fill(t, o->op, mine + disp, count, 100 + rank);
    fill(t, o->op, origin, count, rank);
    MPI_Win_sync(win);
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Accumulate(origin, count, t->dt, target, disp, count, t->dt, o->op, win);
    MPI_Win_flush(target, win);
    if (t->kernel)
        (*kernel_accs)++;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);

    fill(t, o->op, want, count, 100 + rank);
    fill(t, o->op, origin, count, from);
    MPI_Reduce_local(origin, want, count, t->dt, o->op);
    errs += check(t, o, "MPI_Accumulate", mine + disp, want, count, rank);
    MPI_Barrier(MPI_COMM_WORLD);

    /* the same again through MPI_Get_accumulate: the old values come back */
    fill(t, o->op, origin, count, rank);
    MPI_Get_accumulate(origin, count, t->dt, result, count, t->dt, target, disp, count, t->dt,
                       o->op, win);
    MPI_Win_flush(target, win);
    if (t->kernel)
        (*kernel_accs)++;
    /* the next rank's window held its seed op my operand; it now holds that op mine again */
    fill(t, o->op, want, count, 100 + target);
    MPI_Reduce_local(origin, want, count, t->dt, o->op);
    errs += check(t, o, "MPI_Get_accumulate's result", result, want, count, rank);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    fill(t, o->op, want, count, 100 + rank);
    fill(t, o->op, origin, count, from);
    MPI_Reduce_local(origin, want, count, t->dt, o->op);
    MPI_Reduce_local(origin, want, count, t->dt, o->op);
    errs += check(t, o, "MPI_Get_accumulate", mine + disp, want, count, rank);
    MPI_Barrier(MPI_COMM_WORLD);
    return errs;
}

/* MPI_Fetch_and_op of one element: old value back, new one in place. */
static int fetch_round(MPI_Win win, char *mine, const struct type *t, const struct op *o,
                       int rank, int size, long long *kernel_accs)
{
    char origin[16], want[16], result[16];
    int errs = 0, target = (rank + 1) % size, from = (rank + size - 1) % size;

    fill(t, o->op, mine, 1, 200 + rank);
    MPI_Win_sync(win);
    MPI_Barrier(MPI_COMM_WORLD);
    fill(t, o->op, origin, 1, rank);
    MPI_Fetch_and_op(origin, result, t->dt, target, 0, o->op, win);
    MPI_Win_flush(target, win);
    if (t->kernel)
        (*kernel_accs)++;
    fill(t, o->op, want, 1, 200 + target);
    errs += check(t, o, "MPI_Fetch_and_op's result", result, want, 1, rank);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    fill(t, o->op, want, 1, 200 + rank);
    fill(t, o->op, origin, 1, from);
    MPI_Reduce_local(origin, want, 1, t->dt, o->op);
    errs += check(t, o, "MPI_Fetch_and_op", mine, want, 1, rank);
    MPI_Barrier(MPI_COMM_WORLD);
    return errs;
}

int main(int argc, char **argv)
{
    struct type types[] = {
        {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", 1, INTEGER, 1},
        {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", 1, INTEGER, 1},
        {MPI_SHORT, "MPI_SHORT", sizeof(short), INTEGER, 1},
        {MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", sizeof(short), INTEGER, 1},
        {MPI_INT, "MPI_INT", sizeof(int), INTEGER, 1},
        {MPI_UNSIGNED, "MPI_UNSIGNED", sizeof(int), INTEGER, 1},
        {MPI_LONG, "MPI_LONG", sizeof(long), INTEGER, 1},
        {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", sizeof(long), INTEGER, 1},
        {MPI_LONG_LONG, "MPI_LONG_LONG", sizeof(long long), INTEGER, 1},
        {MPI_INT8_T, "MPI_INT8_T", 1, INTEGER, 1},
        {MPI_UINT16_T, "MPI_UINT16_T", 2, INTEGER, 1},
        {MPI_INT32_T, "MPI_INT32_T", 4, INTEGER, 1},
        {MPI_UINT64_T, "MPI_UINT64_T", 8, INTEGER, 1},
        {MPI_AINT, "MPI_AINT", sizeof(MPI_Aint), INTEGER, 1},
        {MPI_FLOAT, "MPI_FLOAT", sizeof(float), FLOATING, 1},
        {MPI_DOUBLE, "MPI_DOUBLE", sizeof(double), FLOATING, 1},
        {MPI_BYTE, "MPI_BYTE", 1, BYTE, 1},
        {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", sizeof(long double), OTHER, 0},
        {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", sizeof(double _Complex), OTHER, 0},
    };
    const int ntypes = sizeof(types) / sizeof(types[0]);
    const int counts[] = { 1, 3, 17, 255, MAX_COUNT };
    const size_t win_bytes = (MAX_COUNT + OFFSET) * sizeof(double _Complex);
    int rank, size, provided, errs = 0, smheap;
    long long kernel_accs = 0, all_kernel_accs;
    unsigned long long before = 0, after, used;
    char *origin, *want, *result;

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    smheap = pvar_index("smheap_vector_reductions") >= 0;
    if (smheap)
        before = pvar_value("smheap_vector_reductions");
    origin = malloc(win_bytes);
    want = malloc(win_bytes);
    result = malloc(win_bytes);

    for (int flavor = 0; flavor < 2; flavor++) {
        char *mine;
        MPI_Win win;

        if (flavor == 0) {
            MPI_Win_allocate(win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mine, &win);
        } else {
            mine = malloc(win_bytes);
            MPI_Win_create(mine, win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        }
        MPI_Win_lock_all(0, win);
        for (int ti = 0; ti < ntypes; ti++)
            for (int oi = 0; oi < NOPS; oi++) {
                if (!allowed(&types[ti], ops[oi].op))
                    continue;
                for (int ci = 0; ci < (int) (sizeof(counts) / sizeof(counts[0])); ci++)
                    errs += accumulate_round(win, mine, &types[ti], &ops[oi], counts[ci],
                                             rank, size, origin, want, result,
                                             &kernel_accs);
                errs += fetch_round(win, mine, &types[ti], &ops[oi], rank, size,
                                    &kernel_accs);
            }
        MPI_Win_unlock_all(win);
        MPI_Win_free(&win);
        if (flavor == 1)
            free(mine);
    }

    if (smheap) {
        after = pvar_value("smheap_vector_reductions");
        used = after - before;
        MPI_Allreduce(MPI_IN_PLACE, &used, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(&kernel_accs, &all_kernel_accs, 1, MPI_LONG_LONG, MPI_SUM,
                      MPI_COMM_WORLD);
        if (rank == 0 && used < (unsigned long long) all_kernel_accs) {
            printf("the vector kernels did %llu reductions, fewer than the %lld accumulates "
                   "on types and operations they have\n", used, all_kernel_accs);
            errs++;
        }
    }
    free(origin);
    free(want);
    free(result);
    MPI_T_finalize();
    smheap_test_report(errs);
    MPI_Finalize();
    return 0;
}

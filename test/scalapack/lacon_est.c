/*
 * Reproducer of the hangs and the "illegal value" of Debian's ScaLAPACK testers (xsllt,
 * xslu, xdllt): ScaLAPACK 2.2.1's P?LACON decides on the caller's uninitialised EST.
 *
 * P?LACON estimates a norm by reverse communication: it returns KASE = 1 or 2 to ask for a
 * product with the matrix or its transpose, and 0 when done.  At every entry it copies its
 * argument EST into its running estimate and later compares the new estimate with it to
 * decide whether to iterate again; its callers (P?GERFS, P?PORFS, P?GECON and their kind)
 * never set EST before the first call.  P?GERFS and P?PORFS run it in every process column
 * at once, on copies of one vector (DESCW's CSRC_ set to MYCOL), and count on every column
 * deciding alike.  Columns whose EST slot holds different stack garbage decide differently:
 * they then ask P?GETRS for different transposes ("On entry to PSGETRS parameter number 1
 * had an illegal value") or wait in different collectives for ever.  What lies in the slot
 * is what earlier calls left on the stack, MPI's among them: so the testers hang on one MPI
 * and not on another, or in one run of eight.
 *
 * Here two ranks (a 1 x 2 grid) run P?LACON as P?GERFS does, each on its own copy of the
 * same vector with the same small matrices, with EST = +1e38 on one and -1e38 on the other
 * for garbage, and compare what each was asked for.  With Debian's library they differ;
 * with P?LACON fixed (lacon_est_fix.c, preloaded: EST set to zero on entry, as upstream
 * did) both ask for the same products and reach the same estimate, for all four types.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

void Cblacs_get(int context, int what, int *value);
void Cblacs_gridinit(int *context, const char *order, int nprow, int npcol);
void Cblacs_gridinfo(int context, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int context);
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb,
               const int *irsrc, const int *icsrc, const int *ictxt, const int *lld,
               int *info);
void pslacon_(const int *n, float *v, const int *iv, const int *jv, const int *descv,
              float *x, const int *ix, const int *jx, const int *descx, int *isgn,
              float *est, int *kase);
void pdlacon_(const int *n, double *v, const int *iv, const int *jv, const int *descv,
              double *x, const int *ix, const int *jx, const int *descx, int *isgn,
              double *est, int *kase);
void pclacon_(const int *n, float *v, const int *iv, const int *jv, const int *descv,
              float *x, const int *ix, const int *jx, const int *descx, float *est,
              int *kase);
void pzlacon_(const int *n, double *v, const int *iv, const int *jv, const int *descv,
              double *x, const int *ix, const int *jx, const int *descx, double *est,
              int *kase);

enum { N = 12, MATRICES = 40, MAX_STEPS = 64 };

/* What one run of P?LACON asked for, and what it answered. */
struct run {
    int steps;
    char kases[MAX_STEPS];
    double est;
};

static const int one = 1;

/* A small matrix with entries of both signs, the same on every rank. */
static double entry(int m, int i, int j)
{
    unsigned h = (unsigned) (m + 1) * 2654435761u ^ (unsigned) (i * N + j) * 40503u;

    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    return (double) (h % 2001) / 1000.0 - 1.0 + (i == j ? 0.5 : 0.0);
}

/* x = A x (kase 1) or A' x (kase 2), for 'parts' reals per element (2 for complex; the
 * matrix is real, so its conjugate transpose is its transpose). */
#define PRODUCT(type)                                                                   \
    static void product_##type(int m, int kase, type *x, int parts)                     \
    {                                                                                   \
        type y[2 * N];                                                                  \
        for (int i = 0; i < N; i++)                                                     \
            for (int p = 0; p < parts; p++) {                                           \
                double sum = 0;                                                         \
                for (int j = 0; j < N; j++)                                             \
                    sum += (kase == 1 ? entry(m, i, j) : entry(m, j, i)) * x[j * parts + p]; \
                y[i * parts + p] = (type) sum;                                          \
            }                                                                           \
        memcpy(x, y, sizeof(type) * N * parts);                                         \
    }
PRODUCT(float)
PRODUCT(double)

/* One estimation of matrix m's norm in the given type ('s', 'd', 'c', 'z'), starting with
 * EST = garbage, as its callers do. */
static struct run estimate(char type, int m, const int *desc, double garbage)
{
    struct run r = { 0 };
    float xs[2 * N], vs[2 * N], ests = (float) garbage;
    double xd[2 * N], vd[2 * N], estd = garbage;
    int isgn[N], kase = 0, n = N;

    memset(xs, 0, sizeof(xs)), memset(vs, 0, sizeof(vs));
    memset(xd, 0, sizeof(xd)), memset(vd, 0, sizeof(vd));
    do {
        switch (type) {
        case 's':
            pslacon_(&n, vs, &one, &one, desc, xs, &one, &one, desc, isgn, &ests, &kase);
            break;
        case 'd':
            pdlacon_(&n, vd, &one, &one, desc, xd, &one, &one, desc, isgn, &estd, &kase);
            break;
        case 'c':
            pclacon_(&n, vs, &one, &one, desc, xs, &one, &one, desc, &ests, &kase);
            break;
        default:
            pzlacon_(&n, vd, &one, &one, desc, xd, &one, &one, desc, &estd, &kase);
        }
        r.kases[r.steps++] = (char) kase;
        if (kase != 0 && (type == 's' || type == 'c'))
            product_float(m, kase, xs, type == 'c' ? 2 : 1);
        else if (kase != 0)
            product_double(m, kase, xd, type == 'z' ? 2 : 1);
    } while (kase != 0 && r.steps < MAX_STEPS);
    r.est = type == 's' || type == 'c' ? ests : estd;
    return r;
}

int main(int argc, char **argv)
{
    const char types[] = "sdcz";
    int rank, size, ctxt, nprow, npcol, myrow, mycol, desc[9], info, n = N, zero = 0;
    int differ[4] = { 0 }, errs = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "lacon_est: run on 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    Cblacs_get(-1, 0, &ctxt);
    Cblacs_gridinit(&ctxt, "Row", 1, 2);
    Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
    /* the whole vector in this rank's column, as P?GERFS sets DESCW */
    descinit_(desc, &n, &one, &n, &one, &zero, &mycol, &ctxt, &n, &info);

    for (int t = 0; t < 4; t++)
        for (int m = 0; m < MATRICES; m++) {
            struct run mine = estimate(types[t], m, desc, mycol == 0 ? 1e38 : -1e38), peer;

            MPI_Sendrecv(&mine, sizeof(mine), MPI_BYTE, 1 - rank, 0, &peer, sizeof(peer),
                         MPI_BYTE, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (mine.steps != peer.steps || memcmp(mine.kases, peer.kases, mine.steps) ||
                mine.est != peer.est)
                differ[t]++;
        }
    for (int t = 0; t < 4; t++)
        if (differ[t]) {
            if (rank == 0)
                printf("p%clacon_: the two columns went different ways for %d of %d "
                       "matrices\n", types[t], differ[t], MATRICES);
            errs++;
        }
    Cblacs_gridexit(ctxt);
    if (rank == 0) {
        if (errs == 0)
            printf(" No Errors\n");
        else
            printf(" Found %d errors\n", errs);
    }
    MPI_Finalize();
    return 0;
}

/*
 * For xssyevr and xdsyevr, which fail checks of their own making: preloaded, p?syevr_
 * here calls the library's and checks, bit for bit, that it left IL, IU, VL and VU as they
 * were when RANGE is 'A' (where it must not read them).
 *
 * ScaLAPACK 2.2.1's P?SEPRTST never sets VL and VU before its RANGE='A' call: they hold
 * whatever earlier calls left in its stack frame, and its P?SEPRSUBTST reports "IL, IU, VL
 * or VU altered by P?SYEVR" when VL.NE.OLDVL, which is true of a NaN compared with its own
 * copy.  Stack garbage such as -2800 read as a double is a NaN.  So the count of calls that
 * got a NaN VL or VU is printed at exit (one line per rank):
 *   pdsyevr_guard: rank R: N of M RANGE='A' calls got a NaN VL or VU, 0 changed them
 * and maint/run-scalapack.sh accepts a reported alteration only up to that count, with
 * none changed here.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void syevr_fn(void *, void *, void *, void *, void *, void *, void *, void *, void *,
                      void *, void *, void *, void *, void *, void *, void *, void *, void *,
                      void *, void *, void *, void *, void *, void *, size_t, size_t, size_t);

static long range_a_calls, nan_calls, changed_calls;

static void *library_own(const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);

    if (fn == NULL) {
        fprintf(stderr, "pdsyevr_guard: no %s after this library\n", name);
        abort();
    }
    return fn;
}

/* P?SYEVR(JOBZ, RANGE, UPLO, N, A, IA, JA, DESCA, VL, VU, IL, IU, M, NZ, W, Z, IZ, JZ,
 *         DESCZ, WORK, LWORK, IWORK, LIWORK, INFO) */
#define GUARD(name, type)                                                               \
    void name(void *jobz, char *range, void *uplo, void *n, void *a, void *ia, void *ja,  \
              void *desca, type *vl, type *vu, int *il, int *iu, void *m, void *nz,       \
              void *w, void *z, void *iz, void *jz, void *descz, void *work, void *lwork, \
              void *iwork, void *liwork, void *info, size_t l1, size_t l2, size_t l3)     \
    {                                                                                   \
        static syevr_fn *own;                                                           \
        unsigned char before[2 * sizeof(type) + 2 * sizeof(int)], after[sizeof(before)]; \
        int all = (*range == 'A' || *range == 'a');                                     \
        if (own == NULL)                                                                \
            own = (syevr_fn *) library_own(#name);                                      \
        memcpy(before, vl, sizeof(type));                                               \
        memcpy(before + sizeof(type), vu, sizeof(type));                                \
        memcpy(before + 2 * sizeof(type), il, sizeof(int));                             \
        memcpy(before + 2 * sizeof(type) + sizeof(int), iu, sizeof(int));               \
        if (all) {                                                                      \
            range_a_calls++;                                                            \
            nan_calls += isnan(*vl) || isnan(*vu);                                      \
        }                                                                               \
        own(jobz, range, uplo, n, a, ia, ja, desca, vl, vu, il, iu, m, nz, w, z, iz, jz,  \
            descz, work, lwork, iwork, liwork, info, l1, l2, l3);                       \
        memcpy(after, vl, sizeof(type));                                                \
        memcpy(after + sizeof(type), vu, sizeof(type));                                 \
        memcpy(after + 2 * sizeof(type), il, sizeof(int));                              \
        memcpy(after + 2 * sizeof(type) + sizeof(int), iu, sizeof(int));               \
        if (all && memcmp(before, after, sizeof(before)) != 0)                          \
            changed_calls++;                                                            \
    }

GUARD(pssyevr_, float)
GUARD(pdsyevr_, double)

static void __attribute__((destructor)) say_counts(void)
{
    const char *rank = getenv("PMI_RANK");

    if (range_a_calls > 0)
        fprintf(stderr, "pdsyevr_guard: rank %s: %ld of %ld RANGE='A' calls got a NaN VL or "
                "VU, %ld changed them\n", rank ? rank : "?", nan_calls, range_a_calls,
                changed_calls);
}

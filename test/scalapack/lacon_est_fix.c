/*
 * P?LACON of ScaLAPACK 2.2.1 (Debian 12's libscalapack-*2.2) fixed in front of Debian's
 * library, for the testers: preloaded, each p?lacon_ here sets EST to zero and calls the
 * library's own.
 *
 * P?LACON estimates a norm by reverse communication: its caller calls it again and again
 * with the same EST until KASE comes back 0.  It copies EST into its running estimate at
 * every entry and compares that with the new estimate to decide whether to iterate again;
 * the callers in the library (P?GERFS, P?PORFS, P?GECON and their kind) never set EST
 * before the first call.  So the decision rests on whatever an earlier call left in EST's
 * stack slot: ranks of one process column that hold different garbage decide differently
 * and wait in different collectives for ever, or ask P?GETRS for different transposes
 * ("parameter number 1 had an illegal value").  lacon_est.c reproduces it.  Upstream set
 * EST to zero on entry (Reference-ScaLAPACK issue #121, pull request #122, in 2.2.3): the
 * same is done here.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef void lacon12_fn(void *, void *, void *, void *, void *, void *, void *, void *,
                        void *, void *, void *, void *);
typedef void lacon11_fn(void *, void *, void *, void *, void *, void *, void *, void *,
                        void *, void *, void *);

static void *library_own(const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);

    if (fn == NULL) {
        fprintf(stderr, "lacon_est_fix: no %s after this library\n", name);
        abort();
    }
    return fn;
}

/* Real:    P?LACON(N, V, IV, JV, DESCV, X, IX, JX, DESCX, ISGN, EST, KASE)
 * Complex: P?LACON(N, V, IV, JV, DESCV, X, IX, JX, DESCX, EST, KASE) */
#define REAL_LACON(name, type)                                                          \
    void name(void *n, void *v, void *iv, void *jv, void *descv, void *x, void *ix,     \
              void *jx, void *descx, void *isgn, type *est, void *kase)                 \
    {                                                                                   \
        static lacon12_fn *own;                                                         \
        if (own == NULL)                                                                \
            own = (lacon12_fn *) library_own(#name);                                    \
        *est = 0;                                                                       \
        own(n, v, iv, jv, descv, x, ix, jx, descx, isgn, est, kase);                    \
    }
#define COMPLEX_LACON(name, type)                                                       \
    void name(void *n, void *v, void *iv, void *jv, void *descv, void *x, void *ix,     \
              void *jx, void *descx, type *est, void *kase)                             \
    {                                                                                   \
        static lacon11_fn *own;                                                         \
        if (own == NULL)                                                                \
            own = (lacon11_fn *) library_own(#name);                                    \
        *est = 0;                                                                       \
        own(n, v, iv, jv, descv, x, ix, jx, descx, est, kase);                          \
    }

REAL_LACON(pslacon_, float)
REAL_LACON(pdlacon_, double)
COMPLEX_LACON(pclacon_, float)
COMPLEX_LACON(pzlacon_, double)

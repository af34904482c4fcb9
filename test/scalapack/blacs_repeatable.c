/*
 * BLACS with repeatable combine topologies, for the testers whose checks depend on the
 * last bits of a sum: preloaded, each BLACS grid a tester makes is set TopsRepeat
 * (BLACS_SET's WHAT 15) right after BLACS_GRIDINIT or BLACS_GRIDMAP made it.
 *
 * BLACS sums a vector over a scope with MPI_Allreduce, or with its own trees where a
 * routine asks for a topology: P?SYTRD sets '1-tree' for its combines.  Unless TopsRepeat
 * is set, a tree node receives its children's parts with MPI_ANY_SOURCE and adds them in
 * the order they arrive (BLACS/SRC/BI_TreeComb.c), so (a + b) + c one run and (a + c) + b
 * the next: the tridiagonal matrix differs in its last bits with the timing of the ranks.
 * For xdsep's matrix type 10 on a 3x1 grid that decides whether P?STEIN's eigenvectors of
 * a close cluster come out orthogonal: ||Q^T Q - I|| / (N eps) is 0.5 to 130 from run to
 * run, over the threshold of 50 in about one run of ten, with or without the shared heap
 * and its collectives.  With TopsRepeat every run gives the same bits (0.49 on that grid).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

enum { BLACS_TOPSREPEAT = 15 };

typedef void gridinit_fn(int *, const char *, int *, int *, size_t);
typedef void gridmap_fn(int *, int *, int *, int *, int *);
typedef void getset_fn(int *, int *, int *);

static void *library_own(const char *name, void *where)
{
    void *fn = dlsym(where, name);

    if (fn == NULL) {
        fprintf(stderr, "blacs_repeatable: no %s in the program's libraries\n", name);
        abort();
    }
    return fn;
}

static void make_repeatable(int *context)
{
    getset_fn *set = library_own("blacs_set_", RTLD_DEFAULT);
    getset_fn *get = library_own("blacs_get_", RTLD_DEFAULT);
    int what = BLACS_TOPSREPEAT, one = 1, now = 0;

    if (*context < 0)           /* this process is not in the grid */
        return;
    set(context, &what, &one);
    get(context, &what, &now);
    if (now != 1) {
        fprintf(stderr, "blacs_repeatable: BLACS context %d did not take TopsRepeat\n",
                *context);
        abort();
    }
}

void blacs_gridinit_(int *context, const char *order, int *nprow, int *npcol, size_t len)
{
    gridinit_fn *own = library_own("blacs_gridinit_", RTLD_NEXT);

    own(context, order, nprow, npcol, len);
    make_repeatable(context);
}

void blacs_gridmap_(int *context, int *usermap, int *ldumap, int *nprow, int *npcol)
{
    gridmap_fn *own = library_own("blacs_gridmap_", RTLD_NEXT);

    own(context, usermap, ldumap, nprow, npcol);
    make_repeatable(context);
}

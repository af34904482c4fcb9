/*
 * Unit tests for the collective-table list (src/coll/smheap_coll_tables.h), no MPICH needed:
 *   - communicators over the same table share one smheap table; its count follows them;
 *   - a communicator over a different table gets its own, chained by prev_coll_fns;
 *   - release gives back the replaced table and frees at zero; the list empties;
 *   - 10,000 create/destroy cycles keep one table alive at most, and an override of an
 *     override (two layers) chains and unwinds in order.
 */

#include <stdio.h>

typedef struct MPIDI_Coll_fns {
    int ref_count;
    struct MPIDI_Coll_fns *prev_coll_fns;
    int (*Barrier) (void);
} MPIDI_Coll_fns;

#include "smheap_coll_tables.h"

#include "unit_check.h"

static int default_barrier(void) { return 1; }
static int smheap_barrier(void) { return 2; }
static int outer_barrier(void) { return 3; }
static void override(MPIDI_Coll_fns * t) { t->Barrier = smheap_barrier; }
static void override_outer(MPIDI_Coll_fns * t) { t->Barrier = outer_barrier; }

int main(void)
{
    MPIDI_Coll_fns def = { 1, NULL, default_barrier }, other = { 1, NULL, default_barrier };
    smheap_coll_tables_t list = { NULL, 0 }, outer = { NULL, 0 };
    MPIDI_Coll_fns *a, *b, *c, *d;

    a = smheap_coll_tables_acquire(&list, &def, override);
    b = smheap_coll_tables_acquire(&list, &def, override);
    CHECK(a != NULL && a == b && a->ref_count == 2 && list.live == 1);
    CHECK(a->prev_coll_fns == &def && a->Barrier() == 2);
    c = smheap_coll_tables_acquire(&list, &other, override);
    CHECK(c != a && c->prev_coll_fns == &other && list.live == 2);

    /* a second layer over ours chains to it and unwinds back to it */
    d = smheap_coll_tables_acquire(&outer, a, override_outer);
    CHECK(d->prev_coll_fns == a && d->Barrier() == 3 && a->ref_count == 2);
    CHECK(smheap_coll_tables_release(&outer, d) == a && outer.live == 0);

    CHECK(smheap_coll_tables_release(&list, b) == &def && a->ref_count == 1);
    CHECK(list.live == 2);
    CHECK(smheap_coll_tables_release(&list, a) == &def && list.live == 1);
    CHECK(smheap_coll_tables_release(&list, c) == &other && list.live == 0);
    CHECK(list.head == NULL && def.ref_count == 1 && def.Barrier() == 1);

    for (int i = 0; i < 10000; i++) {
        MPIDI_Coll_fns *t = smheap_coll_tables_acquire(&list, &def, override);
        CHECK(list.live == 1);
        CHECK(smheap_coll_tables_release(&list, t) == &def);
    }
    CHECK(list.live == 0 && list.head == NULL);

    if (failures == 0)
        printf("all collective-table checks passed\n");
    return failures != 0;
}

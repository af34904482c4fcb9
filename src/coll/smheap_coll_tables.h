/*
 * ch3:smheap collectives -- the list of collective tables (seed 004).
 *
 * A communicator's collectives go through comm->dev.coll_fns.  The create hook gives each
 * eligible communicator a table made over the one it had: a copy with the shared-heap
 * collectives in place, whose prev_coll_fns is the replaced table.  Communicators whose
 * tables were the same share one smheap table: the list is searched for a table whose
 * prev_coll_fns is the communicator's current table, and its count goes up.  The destroy
 * hook gives the communicator its prev_coll_fns back and counts down; the table is freed
 * at zero.  So memory stays flat however many communicators come and go.
 *
 * Header-only and independent of MPICH apart from the table's type, which the includer
 * defines (MPICH's MPIDI_Coll_fns, or a small stand-in in the unit test): it needs the
 * fields ref_count and prev_coll_fns, and copies the rest.  The list is MPL's utlist.h.
 */

#ifndef SMHEAP_COLL_TABLES_H_INCLUDED
#define SMHEAP_COLL_TABLES_H_INCLUDED

#include <stdlib.h>
#include "utlist.h"

typedef struct smheap_coll_table_node {
    MPIDI_Coll_fns *table;
    struct smheap_coll_table_node *next, *prev;
} smheap_coll_table_node_t;

typedef struct smheap_coll_tables {
    smheap_coll_table_node_t *head;
    int live;                   /* tables in the list */
} smheap_coll_tables_t;

/* The table for a communicator whose table is now `current`: the one in the list made over
 * `current`, with one more reference, or a new one (a copy of *current that `override`
 * edits).  NULL when memory runs out; the communicator then keeps `current`. */
static inline MPIDI_Coll_fns *smheap_coll_tables_acquire(smheap_coll_tables_t * list,
                                                         MPIDI_Coll_fns * current,
                                                         void (*override) (MPIDI_Coll_fns *))
{
    smheap_coll_table_node_t *node;
    MPIDI_Coll_fns *table;

    DL_FOREACH(list->head, node) {
        if (node->table->prev_coll_fns == current) {
            node->table->ref_count++;
            return node->table;
        }
    }

    node = malloc(sizeof(*node));
    table = malloc(sizeof(*table));
    if (node == NULL || table == NULL) {
        free(node);
        free(table);
        return NULL;
    }
    *table = *current;
    table->ref_count = 1;
    table->prev_coll_fns = current;
    override(table);
    node->table = table;
    DL_PREPEND(list->head, node);
    list->live++;
    return table;
}

/* Drop a communicator's reference to `table`; returns the table to give it back. */
static inline MPIDI_Coll_fns *smheap_coll_tables_release(smheap_coll_tables_t * list,
                                                         MPIDI_Coll_fns * table)
{
    MPIDI_Coll_fns *prev = table->prev_coll_fns;
    smheap_coll_table_node_t *node;

    if (--table->ref_count > 0)
        return prev;
    DL_SEARCH_SCALAR(list->head, node, table, table);
    if (node != NULL) {
        DL_DELETE(list->head, node);
        free(node);
        list->live--;
    }
    free(table);
    return prev;
}

#endif /* SMHEAP_COLL_TABLES_H_INCLUDED */

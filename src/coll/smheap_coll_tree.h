/*
 * ch3:smheap collectives -- trees that follow the node's topology, for large communicators
 * on big nodes.  Private to src/coll.
 *
 * A flat collective has every rank read one line of every peer (a Barrier) or all ranks
 * poll one root's line (a Bcast): per rank, the lines read grow with the communicator, and
 * on a node of several packages most of them cross the interconnect.  When a communicator's
 * ranks are bound to places that hwloc tells apart (packages, NUMA nodes, L3 caches), its
 * ranks are grouped level by level, each group led by its lowest rank (or by the root, in
 * the group that holds it); a rank waits for the leaders of the groups it leads, then for
 * its own leader: per rank, the lines read grow with the size of its groups, summed over the
 * levels, not with the communicator.  Barrier and the collectives whose data travel inline
 * (Bcast, and Reduce and Allreduce with a commutative operation) run this way; the rest stay
 * flat.
 *
 * Where ranks are placed: on a machine, each rank's CPU binding; a rank that is not bound
 * has no place and its communicators stay flat.  A topology that hwloc reads from its
 * HWLOC_SYNTHETIC or HWLOC_XMLFILE variables describes another machine, on which no rank is
 * bound: the ranks of this node are placed one per processing unit in node order, as
 * mpiexec -bind-to core would place them (so that such a machine can be tested here).
 */

#ifndef SMHEAP_COLL_TREE_H_INCLUDED
#define SMHEAP_COLL_TREE_H_INCLUDED

#include "smheap_coll.h"

/* The topology levels a tree may follow, outermost first. */
enum { SMHEAP_TOPO_PACKAGE, SMHEAP_TOPO_NUMA, SMHEAP_TOPO_L3, SMHEAP_TOPO_LEVELS };

typedef struct smheap_coll_tree {
    int size;
    int levels;                 /* the whole communicator, the topology levels that split
                                 * it further, then the ranks themselves */
    int *group;                 /* [level * size + rank]: the lowest rank of rank's group */
    /* for one root at a time: */
    int root;
    int *neighbours;            /* this rank's parent (unless it is the root), then its
                                 * children: whom it waits for and who waits for it */
    int nneighbours;
    int parent;                 /* -1 at the root */
    int *children;              /* (in neighbours) */
    int nchildren;
    int *wake;                  /* node ranks of the neighbours */
    /* and the neighbours for an earlier root, who last read one of this rank's cells */
    int other_root;
    int nother;
    int *other;
} smheap_coll_tree_t;

/* This process's place: for each level, the index of the object that holds its binding,
 * or -1. */
void MPIDI_CH3I_Smheap_coll_place(int node_rank, int place[SMHEAP_TOPO_LEVELS]);

/* The tree for a communicator of `size` ranks whose places are places[rank * LEVELS + l],
 * or NULL when they do not split (or a rank has no place), or ..._NOMEM. */
smheap_coll_tree_t *MPIDI_CH3I_Smheap_coll_tree_create(int size, const int *places);
#define MPIDI_CH3I_SMHEAP_COLL_TREE_NOMEM ((smheap_coll_tree_t *) -1)
void MPIDI_CH3I_Smheap_coll_tree_free(smheap_coll_tree_t * tree);

/* Make the tree's neighbours those for `root`. */
void MPIDI_CH3I_Smheap_coll_tree_root(smheap_coll_tree_t * tree, int me, int root,
                                      const int *node_rank);

/* This rank's parent and children in the tree for `root` (*out, valid until the next call);
 * how many. */
int MPIDI_CH3I_Smheap_coll_tree_neighbours(smheap_coll_tree_t * tree, int me, int root,
                                           const int **out);

int MPIDI_CH3I_Smheap_coll_topo_finalize(void);

#endif /* SMHEAP_COLL_TREE_H_INCLUDED */

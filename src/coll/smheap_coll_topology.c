/*
 * ch3:smheap collectives -- where a communicator's ranks sit on the node (hwloc), and the
 * tree that follows it (smheap_coll_tree.h).
 */

#include "smheap_coll_tree.h"
#include <hwloc.h>

static hwloc_topology_t topology;
static enum { NOT_LOADED, LOADED, UNAVAILABLE } topology_state;

/* Loaded once, the first time a communicator is large enough to want a tree. */
static hwloc_topology_t node_topology(void)
{
    if (topology_state == NOT_LOADED) {
        topology_state = UNAVAILABLE;
        if (hwloc_topology_init(&topology) == 0) {
            if (hwloc_topology_load(topology) == 0)
                topology_state = LOADED;
            else
                hwloc_topology_destroy(topology);
        }
    }
    return topology_state == LOADED ? topology : NULL;
}

int MPIDI_CH3I_Smheap_coll_topo_finalize(void)
{
    if (topology_state == LOADED)
        hwloc_topology_destroy(topology);
    topology_state = NOT_LOADED;
    return MPI_SUCCESS;
}

/* The processing units this process runs on, or an empty set if it may run anywhere.  On a
 * topology that describes another machine, the node_rank-th one. */
static void my_cpus(hwloc_topology_t topo, int node_rank, hwloc_bitmap_t set)
{
    hwloc_bitmap_zero(set);
    if (!hwloc_topology_is_thissystem(topo)) {
        int pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
        hwloc_obj_t pu = pus > 0 ? hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU,
                                                         node_rank % pus) : NULL;
        if (pu != NULL)
            hwloc_bitmap_copy(set, pu->cpuset);
        return;
    }
    if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) != 0 ||
        hwloc_bitmap_isincluded(hwloc_topology_get_allowed_cpuset(topo), set))
        hwloc_bitmap_zero(set);
}

/* The logical index of the object of `type` that holds all of `set`, or -1. */
static int holder(hwloc_topology_t topo, hwloc_obj_type_t type, hwloc_const_bitmap_t set)
{
    hwloc_obj_t obj = NULL;

    if (hwloc_bitmap_iszero(set))
        return -1;
    while ((obj = hwloc_get_next_obj_by_type(topo, type, obj)) != NULL)
        if (obj->cpuset != NULL && hwloc_bitmap_isincluded(set, obj->cpuset))
            return (int) obj->logical_index;
    return -1;
}

void MPIDI_CH3I_Smheap_coll_place(int node_rank, int place[SMHEAP_TOPO_LEVELS])
{
    static const hwloc_obj_type_t types[SMHEAP_TOPO_LEVELS] = {
        [SMHEAP_TOPO_PACKAGE] = HWLOC_OBJ_PACKAGE,
        [SMHEAP_TOPO_NUMA] = HWLOC_OBJ_NUMANODE,
        [SMHEAP_TOPO_L3] = HWLOC_OBJ_L3CACHE
    };
    hwloc_topology_t topo = node_topology();
    hwloc_bitmap_t set;

    for (int l = 0; l < SMHEAP_TOPO_LEVELS; l++)
        place[l] = -1;
    if (topo == NULL || (set = hwloc_bitmap_alloc()) == NULL)
        return;
    my_cpus(topo, node_rank, set);
    for (int l = 0; l < SMHEAP_TOPO_LEVELS; l++)
        place[l] = holder(topo, types[l], set);
    hwloc_bitmap_free(set);
}


/* The tree's shape.  Level 0 holds the whole communicator, the last level each rank alone;
 * between them, the topology levels at which every rank has a place and which split the
 * ranks further than the level above.  A group is named by its lowest rank. */

static int same_place(const int *places, int a, int b, const int *levels, int n)
{
    for (int i = 0; i < n; i++)
        if (places[a * SMHEAP_TOPO_LEVELS + levels[i]] !=
            places[b * SMHEAP_TOPO_LEVELS + levels[i]])
            return 0;
    return 1;
}

/* group[r]: the lowest rank whose place matches r's at `levels`; returns how many groups. */
static int group_by(int size, const int *places, const int *levels, int n, int *group)
{
    int groups = 0;

    for (int r = 0; r < size; r++) {
        group[r] = r;
        for (int q = 0; q < r; q++)
            if (same_place(places, q, r, levels, n)) {
                group[r] = q;
                break;
            }
        groups += group[r] == r;
    }
    return groups;
}

/* The topology levels that split the communicator further, outermost first. */
static int splitting_levels(int size, const int *places, int *levels, int *scratch)
{
    int n = 0, groups = 1;

    for (int l = 0; l < SMHEAP_TOPO_LEVELS; l++) {
        int placed = 1, g;

        for (int r = 0; r < size; r++)
            placed &= places[r * SMHEAP_TOPO_LEVELS + l] >= 0;
        if (!placed)
            continue;
        levels[n] = l;
        g = group_by(size, places, levels, n + 1, scratch);
        if (g > groups && g < size) {   /* (groups of one are the last level anyway) */
            groups = g;
            n++;
        }
    }
    return n;
}

smheap_coll_tree_t *MPIDI_CH3I_Smheap_coll_tree_create(int size, const int *places)
{
    smheap_coll_tree_t *tree;
    int levels[SMHEAP_TOPO_LEVELS], n;
    int *scratch = MPL_malloc(size * sizeof(int), MPL_MEM_COMM);

    if (scratch == NULL)
        return MPIDI_CH3I_SMHEAP_COLL_TREE_NOMEM;
    n = splitting_levels(size, places, levels, scratch);
    MPL_free(scratch);
    if (n == 0)
        return NULL;

    tree = MPL_calloc(1, sizeof(*tree), MPL_MEM_COMM);
    if (tree == NULL)
        return MPIDI_CH3I_SMHEAP_COLL_TREE_NOMEM;
    tree->size = size;
    tree->levels = n + 2;
    tree->group = MPL_malloc((size_t) tree->levels * size * sizeof(int), MPL_MEM_COMM);
    tree->neighbours = MPL_malloc(size * sizeof(int), MPL_MEM_COMM);
    tree->wake = MPL_malloc(size * sizeof(int), MPL_MEM_COMM);
    tree->other = MPL_malloc(size * sizeof(int), MPL_MEM_COMM);
    if (!tree->group || !tree->neighbours || !tree->wake || !tree->other) {
        MPIDI_CH3I_Smheap_coll_tree_free(tree);
        return MPIDI_CH3I_SMHEAP_COLL_TREE_NOMEM;
    }
    for (int r = 0; r < size; r++) {
        tree->group[r] = 0;
        tree->group[(tree->levels - 1) * size + r] = r;
    }
    for (int i = 1; i <= n; i++)
        group_by(size, places, levels, i, &tree->group[i * size]);
    tree->root = -1;
    tree->other_root = -1;
    return tree;
}

void MPIDI_CH3I_Smheap_coll_tree_free(smheap_coll_tree_t * tree)
{
    if (tree == NULL)
        return;
    MPL_free(tree->group);
    MPL_free(tree->neighbours);
    MPL_free(tree->wake);
    MPL_free(tree->other);
    MPL_free(tree);
}

/* The leader of r's group at `level`: the root if the group holds it, else its lowest rank. */
static int leader(const smheap_coll_tree_t * tree, int level, int r, int root)
{
    const int *group = &tree->group[level * tree->size];

    return group[root] == group[r] ? root : group[r];
}

/* Whom r waits for: the leader of the smallest group that r does not lead. */
static int parent_of(const smheap_coll_tree_t * tree, int r, int root)
{
    if (r == root)
        return -1;
    for (int l = 1; l < tree->levels; l++)
        if (leader(tree, l, r, root) == r)
            return leader(tree, l - 1, r, root);
    MPIR_Assert(0);     /* r leads its group of the last level, r alone */
    return -1;
}

/* me's parent (if any) first, then its children, into out; how many. */
static int neighbours(const smheap_coll_tree_t * tree, int me, int root, int *out)
{
    int n = 0, parent = parent_of(tree, me, root);

    if (parent >= 0)
        out[n++] = parent;
    for (int r = 0; r < tree->size; r++)
        if (r != me && parent_of(tree, r, root) == me)
            out[n++] = r;
    return n;
}

void MPIDI_CH3I_Smheap_coll_tree_root(smheap_coll_tree_t * tree, int me, int root,
                                      const int *node_rank)
{
    if (tree->root == root)
        return;
    tree->nneighbours = neighbours(tree, me, root, tree->neighbours);
    tree->parent = parent_of(tree, me, root);
    tree->children = tree->neighbours + (tree->parent >= 0);
    tree->nchildren = tree->nneighbours - (tree->parent >= 0);
    for (int i = 0; i < tree->nneighbours; i++)
        tree->wake[i] = node_rank[tree->neighbours[i]];
    tree->root = root;
}

int MPIDI_CH3I_Smheap_coll_tree_neighbours(smheap_coll_tree_t * tree, int me, int root,
                                           const int **out)
{
    if (root == tree->root) {
        *out = tree->neighbours;
        return tree->nneighbours;
    }
    if (tree->other_root != root) {
        tree->nother = neighbours(tree, me, root, tree->other);
        tree->other_root = root;
    }
    *out = tree->other;
    return tree->nother;
}

/*
 * ch3:smheap -- the node segment: rings and doorbells (see smheap_queue.h).
 *
 * The segment comes from MPICH's MPIDU_Init_shm_alloc, which creates it in the first
 * local rank, hands its name to the others through PMI and removes the backing file as
 * soon as every local rank has it mapped, so nothing is left in /dev/shm however the job
 * ends.
 */

#include "mpidimpl.h"
#include "mpidu_init_shm.h"
#include "smheap_node.h"
#include "smheap_copy.h"
#include <sched.h>
#include <unistd.h>

smheap_queue_t smheap_queue;

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_CH3_SMHEAP_RING_SIZE
      category    : CH3
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        ch3:smheap: bytes of each ring between two local ranks (rounded down to a power of
        two, at least 64 KiB).  Eager messages and large data outside the shared heap are
        staged through the rings, in cells of MPIR_CVAR_CH3_SMHEAP_CELL_SIZE, so a larger
        ring lets the sender run further ahead of the receiver.  0 chooses by the number
        of local ranks: 2 MiB per ring up to 5 ranks, less beyond, so that each rank's
        inbound rings stay within 8 MiB.  The first local rank's value is used by all.

    - name        : MPIR_CVAR_CH3_SMHEAP_CELL_SIZE
      category    : CH3
      type        : int
      default     : -1
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        ch3:smheap: bytes of data each cell of a ring holds (rounded down to a power of
        two, 4 KiB to 1 MiB, at most a quarter of the ring).  A message larger than a cell
        is copied in and out a cell at a time, the receiver copying one cell while the
        sender fills the next, so smaller cells pipeline such a message more finely and
        larger ones cost less per byte.  -1 chooses half the first-level data cache
        (between 8 and 32 KiB).  The first local rank's value is used by all.

    - name        : MPIR_CVAR_CH3_SMHEAP_WARM_SIZE
      category    : CH3
      type        : int
      default     : -1
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        ch3:smheap: bytes of each ring's warm slot, where an eager message's data goes
        when the slot is free, so that messages going back and forth between two ranks
        reuse the same cache lines instead of cycling through the ring's cells.  Only
        data from MPIR_CVAR_CH3_SMHEAP_WARM_MIN to twice that uses it: larger data is
        faster spread through its cell, whose lines come back cold.  -1
        chooses an eighth of the first-level data cache; 0 turns the slot off.  The first
        local rank's value is used by all.

    - name        : MPIR_CVAR_CH3_SMHEAP_WARM_MIN
      category    : CH3
      type        : int
      default     : -1
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        ch3:smheap: smallest eager message data (bytes) that goes into the warm slot.
        -1 chooses the larger of 1 KiB and the size at which the ring's cells hold more
        of such messages than half the first-level data cache.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

#define SMHEAP_MIN_CELL (4 * 1024)
#define SMHEAP_MAX_CELL (1024 * 1024)
#define SMHEAP_MIN_AUTO_CELL (8 * 1024)
#define SMHEAP_MAX_AUTO_CELL (32 * 1024)
#define SMHEAP_MAX_AUTO_RING (2 * 1024 * 1024)
#define SMHEAP_INBOX_BUDGET (8 * 1024 * 1024)   /* per rank, for the automatic size */
#define SMHEAP_MIN_RING (64 * 1024)
#define SMHEAP_DEFAULT_L1 (32 * 1024)   /* where the system does not say */
#define SMHEAP_WARM_MIN_LINES 16
#define SMHEAP_HOT_DATA 512     /* the most data a message in the hot cell carries */

static size_t pow2_floor(size_t x)
{
    size_t p = 1;

    while (p * 2 <= x)
        p *= 2;
    return p;
}

/* Bytes per ring: a deep ring lets the sender of data from outside the heap run ahead
 * instead of waiting for the receiver to empty cells (figures: doc/p2p.md).  Every rank has
 * nranks - 1 inbound rings, backed by tmpfs pages as they are used, so the automatic size
 * shrinks as jobs grow. */
static size_t ring_bytes(int nranks)
{
    size_t want = MPIR_CVAR_CH3_SMHEAP_RING_SIZE;

    if (nranks == 1)
        return SMHEAP_MIN_RING;         /* no peers: the rings are never used */
    if (MPIR_CVAR_CH3_SMHEAP_RING_SIZE <= 0)
        want = MPL_MIN(SMHEAP_MAX_AUTO_RING, SMHEAP_INBOX_BUDGET / (size_t) (nranks - 1));
    return pow2_floor(MPL_MAX(want, SMHEAP_MIN_RING));
}

static size_t l1_data_cache(void)
{
    size_t l1 = smheap_cache_size(1);

    return l1 > 0 ? l1 : SMHEAP_DEFAULT_L1;
}

/* Bytes of data per cell.  A message of a few cells goes through as a pipeline: while
 * the receiver copies one cell out, the sender fills the next, each cell written and read
 * while it is in the first-level cache.  Half that cache per cell leaves room for the user's
 * buffers beside it: cells as big as the cache push those buffers out and slow mid-sized
 * messages down.  Bigger cells would suit long streams through the rings, but such streams
 * from contiguous buffers go through the kernel from 128 KiB (ch3_rndv.c); smaller cells
 * cost more per byte (figures: doc/p2p.md). */
static size_t cell_bytes(void)
{
    if (MPIR_CVAR_CH3_SMHEAP_CELL_SIZE > 0)
        return pow2_floor(MPL_MIN(MPL_MAX((size_t) MPIR_CVAR_CH3_SMHEAP_CELL_SIZE,
                                          SMHEAP_MIN_CELL), SMHEAP_MAX_CELL));
    return pow2_floor(MPL_MIN(MPL_MAX(l1_data_cache() / 2, SMHEAP_MIN_AUTO_CELL),
                              SMHEAP_MAX_AUTO_CELL));
}

/* A message and its reply each take a warm slot, and each is copied from one buffer and
 * into another: an eighth of the first-level cache each keeps all of them in half of it.
 * With a quarter the four fill the cache, and the largest messages then go slower than
 * with no slot at all (figures: doc/p2p.md). */
static size_t warm_bytes(void)
{
    if (MPIR_CVAR_CH3_SMHEAP_WARM_SIZE >= 0)
        return MPL_ROUND_UP_ALIGN((size_t) MPIR_CVAR_CH3_SMHEAP_WARM_SIZE, SMHEAP_CACHELINE);
    return MPL_ROUND_UP_ALIGN(l1_data_cache() / 8, SMHEAP_CACHELINE);
}

/* Each cell has room for a packet header beside its data, so that a message of exactly
 * the cell size (powers of two are common) takes one cell, not two.  One more cache line
 * per cell staggers the cells' first lines, where short messages travel: at a
 * power-of-two stride they would all fall into one set of the L1 cache.  A warm slot
 * larger than a cell's payload could never be used whole. */
static void set_geometry(size_t ring, size_t cell, size_t warm)
{
    size_t data = MPL_MIN(cell, ring / 4);
    size_t header = MPL_ROUND_UP_ALIGN(sizeof(MPIDI_CH3_Pkt_t), SMHEAP_CACHELINE);
    smheap_ring_geometry_t *g = &smheap_queue.geom;

    g->cells = MPL_MIN(ring / data, SMHEAP_RING_MAX_CELLS);
    g->cell_size = offsetof(smheap_cell_t, payload) + header + data + SMHEAP_CACHELINE;
    g->cell_size = MPL_ROUND_UP_ALIGN(g->cell_size, SMHEAP_CACHELINE);
    g->warm_size = MPL_MIN(warm, smheap_cell_payload(g) / SMHEAP_CACHELINE * SMHEAP_CACHELINE);
    /* The hot cell is for short messages: a message and its reply reuse its lines
     * instead of a new cell each.  From 1 KiB (see warm_min) the warm slot serves them
     * better, hence SMHEAP_HOT_DATA (figures: doc/p2p.md). */
    g->hot_size = MPL_ROUND_UP_ALIGN(offsetof(smheap_cell_t, payload) + sizeof(MPIDI_CH3_Pkt_t) +
                                     SMHEAP_HOT_DATA, SMHEAP_CACHELINE);
    /* Below half the L1 cache a ring's worth of messages stays there anyway; below
     * SMHEAP_WARM_MIN_LINES, what the slot keeps warm costs less than the line of the
     * consumer's head that the producer reads to know it is free (figures: doc/p2p.md). */
    if (MPIR_CVAR_CH3_SMHEAP_WARM_MIN >= 0)
        smheap_queue.warm_min = MPL_MAX(MPIR_CVAR_CH3_SMHEAP_WARM_MIN, 1);
    else
        smheap_queue.warm_min = MPL_MAX(l1_data_cache() / 2 / g->cells,
                                        SMHEAP_WARM_MIN_LINES * SMHEAP_CACHELINE);
    /* Data spread into its cell no longer follows the header's lines, so its first line is
     * a miss the prefetcher would otherwise have hidden; against that, its lines come back
     * cold instead of from the other core's cache.  The gain outweighs the miss from twice
     * the warm slot's lower bound, in streams and in ping-pong alike, so data of this size
     * and more is spread even when the slot is free (figures: doc/p2p.md). */
    smheap_queue.spread_min = 2 * MPL_MAX(smheap_queue.warm_min,
                                          SMHEAP_WARM_MIN_LINES * SMHEAP_CACHELINE);
}

/* Every rank must lay the segment out alike: take the first local rank's ring, cell and
 * warm slot sizes (the settings may differ between ranks, and so may the caches of the
 * cores they run on; /dev/shm and the rank count do not).  Its second-level cache too,
 * which the collectives' choices depend on: all ranks must choose alike. */
static int agree_on_ring_size(int nranks, int my_rank, size_t *ring, size_t *cell,
                              size_t *warm)
{
    int mpi_errno = MPI_SUCCESS;
    uint64_t size[4] = { ring_bytes(nranks), cell_bytes(), warm_bytes(), smheap_cache_size(2) };

    if (my_rank == 0) {
        mpi_errno = MPIDU_Init_shm_put(size, sizeof(size));
        MPIR_ERR_CHECK(mpi_errno);
    }
    mpi_errno = MPIDU_Init_shm_barrier();
    MPIR_ERR_CHECK(mpi_errno);
    if (my_rank != 0) {
        mpi_errno = MPIDU_Init_shm_get(0, sizeof(size), size);
        MPIR_ERR_CHECK(mpi_errno);
    }
    mpi_errno = MPIDU_Init_shm_barrier();       /* before anyone reuses the block */
    MPIR_ERR_CHECK(mpi_errno);
    *ring = size[0];
    *cell = size[1];
    *warm = size[2];
    smheap_queue.cache_l2 = size[3];

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* The CPUs this rank may run on, published in its entry of the segment's table; a failure
 * (more CPUs than a cpu_set_t holds) publishes every CPU, so it never looks crowded. */
static void publish_cpus(cpu_set_t * mine)
{
    if (sched_getaffinity(0, sizeof(*mine), mine) != 0)
        memset(mine, 0xff, sizeof(*mine));
}

/* How many CPUs the node's ranks may run on between them (the union of their affinity
 * masks), once every rank has published its own. */
static int count_node_cpus(const cpu_set_t * table, int nranks)
{
    cpu_set_t all;

    CPU_ZERO(&all);
    for (int r = 0; r < nranks; r++)
        CPU_OR(&all, &all, &table[r]);
    return CPU_COUNT(&all);
}

/* Every rank of the node registered for membarrier (smheap_doorbell.h). */
static int all_bells_marked(int nranks)
{
    for (int i = 0; i < nranks; i++)
        if (!smheap_queue.bells[i].owner_membarrier)
            return 0;
    return 1;
}

int MPIDI_CH3I_Smheap_queue_init(int nranks, int my_rank)
{
    int mpi_errno = MPI_SUCCESS;
    size_t bells_len, cpus_len, len, ring, cell, warm;
    cpu_set_t *cpus;

    MPIR_FUNC_ENTER;

    smheap_queue.nranks = nranks;
    smheap_queue.my_rank = my_rank;

    mpi_errno = MPIDU_Init_shm_init();
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = agree_on_ring_size(nranks, my_rank, &ring, &cell, &warm);
    MPIR_ERR_CHECK(mpi_errno);
    set_geometry(ring, cell, warm);

    bells_len = MPL_ROUND_UP_ALIGN((size_t) nranks * sizeof(smheap_doorbell_t), 4096);
    cpus_len = MPL_ROUND_UP_ALIGN((size_t) nranks * sizeof(cpu_set_t), 4096);
    len = bells_len + cpus_len +
        (size_t) nranks * nranks * smheap_ring_size(&smheap_queue.geom);
    mpi_errno = MPIDU_Init_shm_alloc(len, &smheap_queue.segment);
    MPIR_ERR_CHECK(mpi_errno);

    /* A new tmpfs segment reads as zeroes; a one-rank node gets private memory. */
    if (nranks == 1)
        memset(smheap_queue.segment, 0, len);

    smheap_queue.bells = (smheap_doorbell_t *) smheap_queue.segment;
    cpus = (cpu_set_t *) ((char *) smheap_queue.segment + bells_len);
    smheap_queue.rings = (char *) smheap_queue.segment + bells_len + cpus_len;
    publish_cpus(&cpus[my_rank]);
    smheap_queue.bells[my_rank].owner_membarrier = smheap_doorbell_register();

    mpi_errno = MPIDU_Init_shm_barrier();
    MPIR_ERR_CHECK(mpi_errno);
    smheap_queue.node_cpus = count_node_cpus(cpus, nranks);
    /* Waking without fences, where every rank can; not where the ranks outnumber their
     * CPUs: there they sleep at nearly every wait, and each sleep would pay a membarrier,
     * a few microseconds, more than the fences it spares (4 ranks on 2 CPUs, Barrier, 8
     * alternations: 5.0 against 4.2 us).  Every rank of the node comes to the same answer. */
    smheap_doorbell_fenceless = all_bells_marked(nranks) && nranks <= smheap_queue.node_cpus;

  fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

size_t MPIDI_CH3I_Smheap_node_cache_l2(void)
{
    return smheap_queue.cache_l2;
}

void MPIDI_CH3I_Smheap_wake_node_ranks(const int *ranks, int n)
{
    MPIDI_CH3I_Smheap_wake_ranks(ranks, n);
}

int MPIDI_CH3I_Smheap_queue_finalize(void)
{
    int mpi_errno = MPI_SUCCESS;

    MPIR_FUNC_ENTER;

    if (smheap_queue.segment) {
        /* Nobody may still be writing into our inbox: every peer has finished the
         * close protocol with us, and this barrier makes that hold node-wide. */
        mpi_errno = MPIDU_Init_shm_barrier();
        MPIR_ERR_CHECK(mpi_errno);
        mpi_errno = MPIDU_Init_shm_free(smheap_queue.segment);
        MPIR_ERR_CHECK(mpi_errno);
        smheap_queue.segment = NULL;
    }
    mpi_errno = MPIDU_Init_shm_finalize();
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/*
 * ch3:smheap collectives -- what every algorithm of a one-node table shares: the call's
 * synchronization points, waiting for peers, and the views and staging of the data they read
 * (see smheap_coll.h for the control block).  Private to src/coll.
 *
 * Every collective numbers its synchronization points from the communicator's step counter;
 * all ranks pass the same points in the same order.  Each call takes STEPS_PER_CALL of them,
 * whichever it uses, so that a rank that must leave a call early (its staging buffer cannot
 * grow, a datatype fails to pack, the progress engine fails) can mark the call failed in its
 * slot and reach the call's last point at once: its peers pass every wait for it, see the
 * mark, and leave with an error naming it, doing the same; no rank waits forever and the
 * counters stay in step for the next call.  "offer" publishes what a rank lets
 * peers read (and where they may write) and marks a point; "wait" waits for a peer to reach
 * a point.  A rank returns only once every reader of what it offered is past the point that
 * ends the reading.
 *
 * Byte-moving collectives read peers' data as a packed byte stream: contiguous data in the
 * heap is offered in place, anything else is packed into the rank's staging buffer first
 * and unpacked by the reader, so each rank decides alone.  Reductions need the datatype's
 * own layout, so they run here only for contiguous datatypes (every predefined one) and go
 * to MPICH's algorithms otherwise; the datatype of a reduction is the same on every rank.
 */

#ifndef SMHEAP_COLL_CALL_H_INCLUDED
#define SMHEAP_COLL_CALL_H_INCLUDED

#include "smheap_channel.h"
#include "smheap.h"
#include "smheap_coll.h"
#include "smheap_coll_tree.h"

typedef struct {
    void *buf;
    MPI_Aint count;
    MPI_Datatype dt;
    int contig;
    MPI_Aint bytes, lb;
} view_t;

static inline view_t view_of(const void *buf, MPI_Aint count, MPI_Datatype dt)
{
    view_t v = { (void *) buf, count, dt, 1, 0, 0 };
    MPIR_Datatype *dt_ptr;

    MPIDI_Datatype_get_info(count, dt, v.contig, v.bytes, dt_ptr, v.lb);
    (void) dt_ptr;
    return v;
}

static inline int in_heap(const void *p, MPI_Aint len)
{
    return len <= 0 || smheap_holds(p, (size_t) len);
}

static inline smheap_coll_slot_t *slot(smheap_coll_comm_t * cc, int rank)
{
    return &cc->ctrl->slot[rank];
}

/* The shared lines a rank reads and writes in the control block and the doorbells (MPI_T
 * smheap_coll_lines_read and _written): what a collective costs on a big node, where each
 * is a transfer between caches, however many cores there are to measure it. */
static inline void count_lines(unsigned long long read, unsigned long long written)
{
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_coll_lines_read, read);
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_coll_lines_written, written);
}

/* A cell's lines that hold its flag and `bytes` of data (spilled data: their address, on
 * the flag's line; the piece they lie in is bulk data). */
static inline int cell_lines(MPI_Aint bytes)
{
    return bytes <= SMHEAP_COLL_CELL_DATA &&
        offsetof(smheap_coll_cell_t, data) + bytes > SMHEAP_CACHELINE ? 2 : 1;
}

static inline void wake_readers(smheap_coll_comm_t * cc);

static inline void reach(smheap_coll_comm_t * cc, int me, uint64_t step)
{
    atomic_store_explicit(&cc->ctrl->slot[me].step, step, memory_order_release);
    count_lines(0, 1);
    wake_readers(cc);
}

static inline void offer(smheap_coll_comm_t * cc, int me, const void *src, void *dst, uint64_t step)
{
    slot(cc, me)->src = src;
    slot(cc, me)->dst = dst;
    reach(cc, me, step);
}

static inline int failed_in_call(smheap_coll_comm_t * cc, int rank);

/* Wait until `rank` has reached `step`; an error if the progress engine fails, or if the
 * rank left this call early. */
static inline int wait_for(smheap_coll_comm_t * cc, int rank, uint64_t step)
{
    int mpi_errno = MPIDI_CH3I_Smheap_coll_wait(cc, rank, step);

    if (mpi_errno == MPI_SUCCESS && failed_in_call(cc, rank))
        MPIR_ERR_SET1(mpi_errno, MPI_ERR_OTHER, "**smheap_coll_peer", "**smheap_coll_peer %d",
                      rank);
    return mpi_errno;
}

static inline int wait_all(smheap_coll_comm_t * cc, int size, uint64_t step)
{
    int mpi_errno = MPI_SUCCESS;

    for (int r = 0; r < size && mpi_errno == MPI_SUCCESS; r++)
        mpi_errno = wait_for(cc, r, step);
    return mpi_errno;
}

#define STEPS_PER_CALL 4

/* This call's synchronization points: STEPS_PER_CALL from the communicator's counter. */
static inline void begin_call(smheap_coll_comm_t * cc)
{
    cc->call_first = cc->step;
    cc->call_next = cc->step;
    cc->tree_call = 0;
    cc->step += STEPS_PER_CALL;
}

static inline uint64_t next_step(smheap_coll_comm_t * cc)
{
    MPIR_Assert(cc->call_next < cc->call_first + STEPS_PER_CALL);
    return cc->call_next++;
}

/* The current call's number, from 1 (0 in a slot's failed[] is no call). */
static inline uint32_t call_number(smheap_coll_comm_t * cc)
{
    return (uint32_t) (cc->call_first / STEPS_PER_CALL + 1);
}

/* Did `rank` leave this call early?  (Not a later one: a rank that has run ahead into
 * another call and failed there has finished this one.) */
static inline int failed_in_call(smheap_coll_comm_t * cc, int rank)
{
    const smheap_coll_slot_t *s = slot(cc, rank);
    uint32_t call = call_number(cc);

    for (int i = 0; i < SMHEAP_COLL_FAILED_KEPT; i++)
        if (s->failed[i] == call)
            return 1;
    return 0;
}

/* Leaving this call with an error: if this rank has not reached every point it took, mark
 * the call failed and reach its last point, so that no peer waits for it. */
static inline void leave_failed(smheap_coll_comm_t * cc, int me, MPIR_Errflag_t * errflag)
{
    uint64_t reached = atomic_load_explicit(&slot(cc, me)->step, memory_order_relaxed);

    if (*errflag == MPIR_ERR_NONE)
        *errflag = MPIR_ERR_OTHER;
    if (cc->call_next > cc->call_first && reached >= cc->call_next - 1)
        return;         /* every peer is past this rank already */
    slot(cc, me)->failed[slot(cc, me)->nfailed++ % SMHEAP_COLL_FAILED_KEPT] = call_number(cc);
    cc->tree_call = 0;          /* a flat reach: whoever waits for this rank sees it */
    reach(cc, me, cc->call_first + STEPS_PER_CALL - 1);
}

/* Waits whose failure (the progress engine's, or a peer that left the call) ends the call on
 * this rank: the caller has mpi_errno, and fn_fail calls leave_failed.  An error the caller
 * holds in mpi_errno already (a datatype's, reported once the peers are past reading) stays
 * there when the wait works. */
#define CHECK_WAIT(call_)                                                       \
    do {                                                                        \
        int wait_errno_ = (call_);                                              \
        if (wait_errno_ != MPI_SUCCESS) {                                       \
            mpi_errno = wait_errno_;                                            \
            MPIR_ERR_POP(mpi_errno);                                            \
        }                                                                       \
    } while (0)
#define WAIT(cc_, rank_, step_) CHECK_WAIT(wait_for(cc_, rank_, step_))
#define WAIT_ALL(cc_, size_, step_) CHECK_WAIT(wait_all(cc_, size_, step_))

/* Write v's data at dst as packed bytes (a plain copy when v is contiguous: the type
 * engine's call costs more than the copy of a small block). */
static inline int pack_view(view_t v, void *dst)
{
    MPI_Aint actual;

    if (v.contig) {
        smheap_copy(dst, (const char *) v.buf + v.lb, v.bytes);
        return MPI_SUCCESS;
    }
    return MPIR_Typerep_pack(v.buf, v.count, v.dt, 0, dst, v.bytes, &actual);
}

/* Where peers can read v's data as packed bytes: in place, or packed into the staging
 * buffer at `at` (which the caller sized).  `stage` forces the copy (the rank will
 * overwrite the data while peers read it). */
static inline int readable(smheap_coll_comm_t * cc, view_t v, int stage, size_t at, const void **out)
{
    if (v.contig && !stage && in_heap((char *) v.buf + v.lb, v.bytes)) {
        *out = (char *) v.buf + v.lb;
        return MPI_SUCCESS;
    }
    *out = (char *) cc->scratch + at;
    return pack_view(v, (char *) cc->scratch + at);
}

/* Copy `bytes` packed bytes from src into (buf, count, dt), starting at byte `offset` of
 * the packed stream of (buf, count, dt). */
static inline int unpack_into(view_t v, const void *src, MPI_Aint bytes, MPI_Aint offset)
{
    MPI_Aint actual;

    if (bytes == 0)
        return MPI_SUCCESS;
    if (v.contig) {
        smheap_copy((char *) v.buf + v.lb + offset, src, bytes);
        return MPI_SUCCESS;
    }
    return MPIR_Typerep_unpack(src, bytes, v.buf, v.count, v.dt, offset, &actual);
}

/* A rank's own block, from its send buffer straight into its receive buffer (not back out
 * of the cell it has just written for its peers: that line is on its way to them, and
 * reading it stalled the root of an 8-byte Scatter for as long as a copy). */
static inline int copy_view(view_t from, view_t to)
{
    int mpi_errno = MPI_SUCCESS;

    if (from.bytes != to.bytes)
        MPIR_ERR_SET2(mpi_errno, MPI_ERR_OTHER, "**collective_size_mismatch",
                      "**collective_size_mismatch %d %d", (int) from.bytes, (int) to.bytes);
    else if (from.contig)
        mpi_errno = unpack_into(to, (const char *) from.buf + from.lb, from.bytes, 0);
    else if (to.contig)
        mpi_errno = pack_view(from, (char *) to.buf + to.lb);
    else
        mpi_errno = MPIR_Localcopy(from.buf, from.count, from.dt, to.buf, to.count, to.dt);
    return mpi_errno;
}

#define READY_OR_FALL_BACK(comm_, cc_, call_)                                   \
    do {                                                                        \
        int err_ = MPIDI_CH3I_Smheap_coll_ready(comm_, &cc_);                   \
        if (err_ != MPI_SUCCESS)                                                \
            return err_;                                                        \
        if (cc_->unusable) {                                                    \
            MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_FALLBACK);                                    \
            return cc_->prev->call_;                                            \
        }                                                                       \
        begin_call(cc_);                                                        \
    } while (0)

#define NEED_SCRATCH(cc_, len_)                                                 \
    do {                                                                        \
        if ((len_) > 0 && MPIDI_CH3I_Smheap_coll_scratch(cc_, len_) == NULL)    \
            MPIR_ERR_SETANDJUMP(mpi_errno, MPI_ERR_NO_MEM, "**smheap_coll_scratch"); \
    } while (0)


static inline MPI_Aint extent_of(MPI_Datatype dt)
{
    MPI_Aint extent;
    MPIR_Datatype_get_extent_macro(dt, extent);
    return extent;
}

static inline MPI_Aint size_of(MPI_Datatype dt)
{
    MPI_Aint size;
    MPIR_Datatype_get_size_macro(dt, size);
    return size;
}


/* Scatterv and Alltoallv: only the sender knows where each reader's block lies, so it
 * offers a table of their addresses, one per rank; a block is the reader's receive count of
 * packed bytes from there.  Blocks of a contiguous type in the heap are read where they
 * are; otherwise (or with `stage`: the sender will overwrite them while peers read) all
 * are packed after the table. */
static inline int blocks_readable(const void *buf, const MPI_Aint * counts,
                                  const MPI_Aint * displs, MPI_Datatype dt, int n)
{
    MPI_Aint ext = extent_of(dt);

    for (int r = 0; r < n; r++) {
        view_t v = view_of((const char *) buf + displs[r] * ext, counts[r], dt);

        if (counts[r] > 0 && (!v.contig || !in_heap((char *) v.buf + v.lb, v.bytes)))
            return 0;
    }
    return 1;
}

static inline int offer_blocks(smheap_coll_comm_t * cc, const void *sendbuf,
                               const MPI_Aint * counts, const MPI_Aint * displs,
                               MPI_Datatype dt, int n, int stage, const void **out)
{
    int mpi_errno = MPI_SUCCESS;
    MPI_Aint ext = extent_of(dt), size = size_of(dt), total = 0;
    MPI_Aint table = MPL_ROUND_UP_ALIGN(n * sizeof(const char *), SMHEAP_CACHELINE);
    int direct = !stage && blocks_readable(sendbuf, counts, displs, dt, n);
    const char **where;
    char *data;

    for (int r = 0; r < n && !direct; r++)
        total += counts[r] * size;
    if (MPIDI_CH3I_Smheap_coll_scratch(cc, table + total) == NULL)
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_NO_MEM, "**smheap_init", "**smheap_init %s",
                             "the shared heap is full");
    where = cc->scratch;
    data = (char *) cc->scratch + table;
    total = 0;
    for (int r = 0; r < n && mpi_errno == MPI_SUCCESS; r++) {
        view_t v = view_of((const char *) sendbuf + displs[r] * ext, counts[r], dt);

        if (direct) {
            where[r] = (const char *) v.buf + v.lb;
            continue;
        }
        where[r] = data + total;
        if (counts[r] > 0)
            mpi_errno = pack_view(v, data + total);
        total += v.bytes;
    }
    *out = cc->scratch;

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static inline const void *block_for(const void *offered, int reader)
{
    return ((const char *const *) offered)[reader];
}


/* Data inline in cells (smheap_coll.h).  A call whose data fit in a cell takes the same
 * points as the others: `offered` (its first) and a second one that every rank reaches when
 * it is done reading.  A writer publishes its cell instead of reaching `offered`, so that a
 * peer that passed a different amount of data, and took the other way, finds out instead of
 * waiting for ever. */

static inline int fits_inline(MPI_Aint bytes)
{
    return bytes <= SMHEAP_COLL_CELL_DATA;
}

/* The same for the calls that may spill (smheap_coll.h): their data go in the cell's lines
 * or, up to SMHEAP_COLL_SPILL_LEN, in the writer's spill piece of the cell. */
static inline int fits_cell(MPI_Aint bytes)
{
    return bytes <= SMHEAP_COLL_SPILL_LEN;
}

/* Where a cell's data lie: in it, or in the spill piece whose address it holds. */
static inline const char *cell_data(const smheap_coll_cell_t * c)
{
    return fits_inline(c->bytes) ? c->data : *(char *const *) c->data;
}

/* Which of a rank's cells this call uses: its calls take them in turn (tree calls two each:
 * phase 0 and 1).  A mask, not a division: a reader computes this at every poll. */
static inline unsigned cell_turn(smheap_coll_comm_t * cc, int phase)
{
    return ((cc->call_first / STEPS_PER_CALL) * cc->cells_per_call + phase) & (cc->cells - 1);
}

static inline smheap_coll_cell_t *cell_at(smheap_coll_comm_t * cc, int rank, int phase)
{
    smheap_coll_cell_t *cells = (smheap_coll_cell_t *) & cc->ctrl->slot[cc->size];

    return &cells[(size_t) rank * cc->cells + cell_turn(cc, phase)];
}

static inline smheap_coll_cell_t *cell(smheap_coll_comm_t * cc, int rank)
{
    return cell_at(cc, rank, 0);
}

static inline int cell_has_call(smheap_coll_comm_t * cc, int rank, int phase)
{
    return atomic_load_explicit(&cell_at(cc, rank, phase)->call, memory_order_acquire) ==
        cc->call_first;
}

/* Wait until `r` is past `need`, unless this rank has seen it there already.  A rank that
 * must wait waits on until `r` is past `ahead`, a step of a later call that this rank has
 * finished: a writer that runs ahead of its readers then goes that many calls without
 * reading their lines, instead of reading one each call once a ring ahead (and the reader
 * meanwhile stores into a line that no one polls). */
static inline int wait_past(smheap_coll_comm_t * cc, int r, uint64_t need, uint64_t ahead)
{
    int mpi_errno = MPI_SUCCESS;

    if (cc->seen[r] >= need)
        return MPI_SUCCESS;
    /* a peer that left a call early reached that call's last point: no wait for ever */
    mpi_errno = MPIDI_CH3I_Smheap_coll_wait(cc, r, ahead);
    cc->seen[r] = atomic_load_explicit(&slot(cc, r)->step, memory_order_acquire);
    return mpi_errno;
}

/* This rank's cell of this call's `phase`, once every rank that read what this rank last
 * wrote there is done.  The wait is rare (a reader a whole ring of calls behind, and then
 * for half a ring more): the steps seen are remembered, so most calls read no peer's line
 * here.  Those readers were every rank, or in a tree call this rank's parent and children
 * for that call's root. */
static inline int claim_cell_at(smheap_coll_comm_t * cc, int me, int phase,
                                smheap_coll_cell_t ** out)
{
    int mpi_errno = MPI_SUCCESS;
    unsigned turn = cell_turn(cc, phase);
    uint64_t need = cc->cell_read[turn];
    uint64_t ahead = MPL_MIN(need + (uint64_t) (cc->cells / cc->cells_per_call / 2) *
                             STEPS_PER_CALL, cc->call_first - 1);
    int readers_root = cc->cell_root[turn];

    if (readers_root == SMHEAP_COLL_ALL_READ) {
        for (int r = 0; r < cc->size && mpi_errno == MPI_SUCCESS; r++)
            if (r != me)
                mpi_errno = wait_past(cc, r, need, ahead);
    } else {
        const int *readers;
        int n = MPIDI_CH3I_Smheap_coll_tree_neighbours(cc->tree, me, readers_root, &readers);
        for (int i = 0; i < n && mpi_errno == MPI_SUCCESS; i++)
            mpi_errno = wait_past(cc, readers[i], need, ahead);
    }
    cc->cell_read[turn] = cc->call_first + 1;
    cc->cell_root[turn] = cc->tree_call ? cc->tree->root : SMHEAP_COLL_ALL_READ;
    *out = cell_at(cc, me, phase);
    return mpi_errno;
}

static inline int claim_cell(smheap_coll_comm_t * cc, int me, smheap_coll_cell_t ** out)
{
    return claim_cell_at(cc, me, 0, out);
}

/* Where this rank writes `bytes` of data for its cell c (fits_cell): the cell itself, or the
 * cell's piece of its spill area, whose address the cell then holds. */
static inline int cell_space(smheap_coll_comm_t * cc, int me, smheap_coll_cell_t * c,
                             MPI_Aint bytes, char **out)
{
    smheap_coll_cell_t *first = (smheap_coll_cell_t *) & cc->ctrl->slot[cc->size] +
        (size_t) me * cc->cells;
    int mpi_errno = MPI_SUCCESS;

    if (fits_inline(bytes)) {
        *out = c->data;
        goto fn_exit;
    }
    if (MPIDI_CH3I_Smheap_coll_spill(cc) == NULL)
        MPIR_ERR_SETANDJUMP(mpi_errno, MPI_ERR_NO_MEM, "**smheap_coll_scratch");
    *out = cc->spill + (c - first) * SMHEAP_COLL_SPILL_LEN;
    *(char **) c->data = *out;
    cc->spill_read = cc->call_first + 1;
    MPIDI_CH3I_Smheap_coll_count(SMHEAP_COLL_SPILLED);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Write v's data for the cell (v.bytes fits_cell). */
static inline int fill_cell(smheap_coll_comm_t * cc, int me, smheap_coll_cell_t * c, view_t v)
{
    char *data;
    int mpi_errno = cell_space(cc, me, c, v.bytes, &data);

    if (mpi_errno == MPI_SUCCESS)
        mpi_errno = pack_view(v, data);
    return mpi_errno;
}

/* Tell those who wait for this rank that it has moved: every sleeper of the communicator,
 * or in a tree call only its parent and children. */
static inline void wake_readers(smheap_coll_comm_t * cc)
{
    if (cc->tree_call) {
        MPIDI_CH3I_Smheap_wake_node_ranks(cc->tree->wake, cc->tree->nneighbours);
        count_lines(cc->tree->nneighbours, 0);
    } else {
        MPIDI_CH3I_Smheap_wake_node_ranks(cc->node_rank, cc->size);
        count_lines(cc->size, 0);
    }
}

/* Make the cell's data visible to its readers without waking them: for a writer whose next
 * store is its last step of the call (reach), so that one wake-up serves both.  A wake-up's
 * fence waits until the stores before it have left for the readers' caches; a writer that
 * returns at once gets to copy its own block meanwhile instead of waiting twice. */
static inline void store_cell(smheap_coll_comm_t * cc, smheap_coll_cell_t * c, MPI_Aint bytes,
                              int carried)
{
    c->bytes = (uint32_t) bytes;
    c->carried = (int16_t) carried;
    atomic_store_explicit(&c->call, cc->call_first, memory_order_release);
    count_lines(0, cell_lines(bytes));
}

static inline void publish_cell(smheap_coll_comm_t * cc, smheap_coll_cell_t * c, MPI_Aint bytes,
                                int carried)
{
    store_cell(cc, c, bytes, carried);
    wake_readers(cc);
}

/* Claim this rank's cell of this call's `phase` and write v's data there (store_cell: the
 * caller wakes the readers, by reach() or wake_readers(), before it waits or returns). */
static inline int write_cell_at(smheap_coll_comm_t * cc, int me, int phase, view_t v,
                                int carried, smheap_coll_cell_t ** out)
{
    int mpi_errno = claim_cell_at(cc, me, phase, out);

    if (mpi_errno == MPI_SUCCESS)
        mpi_errno = fill_cell(cc, me, *out, v);
    if (mpi_errno == MPI_SUCCESS)
        store_cell(cc, *out, v.bytes, carried);
    return mpi_errno;
}

static inline int write_cell(smheap_coll_comm_t * cc, int me, view_t v, int carried,
                             smheap_coll_cell_t ** out)
{
    return write_cell_at(cc, me, 0, v, carried, out);
}

/* Blocks of (buf, counts, displs, dt), rank r's for rank r, in this rank's cell (or its
 * spill piece) after a table of n + 1 offsets (the last is the end): a Scatterv root's or an
 * Alltoallv rank's whole send buffer but its own block, when it fits.  Returns FALSE,
 * having done nothing, when it does not; else TRUE, with *mpi_errno set (the caller wakes
 * the readers, as after write_cell). */
static inline int write_blocks_cell(smheap_coll_comm_t * cc, int me, const void *buf,
                                    const MPI_Aint * counts, const MPI_Aint * displs,
                                    MPI_Datatype dt, smheap_coll_cell_t ** out, int *mpi_errno)
{
    int n = cc->size;
    MPI_Aint ext = extent_of(dt), size = size_of(dt);
    MPI_Aint table = (n + 1) * (MPI_Aint) sizeof(MPI_Aint), total = table;
    MPI_Aint *offsets;
    char *data;

    for (int r = 0; r < n; r++)
        total += counts[r] * size;
    if (!fits_cell(total))
        return FALSE;
    *mpi_errno = claim_cell(cc, me, out);
    if (*mpi_errno == MPI_SUCCESS)
        *mpi_errno = cell_space(cc, me, *out, total, &data);
    if (*mpi_errno != MPI_SUCCESS)
        return TRUE;
    /* the offsets are summed here, not read back from the cell while its line is in flight */
    offsets = (MPI_Aint *) data;
    offsets[0] = total = table;
    for (int r = 0; r < n && *mpi_errno == MPI_SUCCESS; r++) {
        /* not its own block: it copies that straight from buf */
        if (counts[r] > 0 && r != me)
            *mpi_errno = pack_view(view_of((const char *) buf + displs[r] * ext, counts[r], dt),
                                   data + total);
        total += counts[r] * size;
        offsets[r + 1] = total;
    }
    if (*mpi_errno == MPI_SUCCESS)
        store_cell(cc, *out, total, MPIR_ERR_NONE);
    return TRUE;
}

/* Rank me's block from a cell that write_blocks_cell wrote, into `to`, which must be as
 * long. */
static inline int read_block_cell(const smheap_coll_cell_t * c, int me, view_t to)
{
    const char *data = cell_data(c);
    const MPI_Aint *offsets = (const MPI_Aint *) data;
    int mpi_errno = MPI_SUCCESS;

    if (offsets[me + 1] - offsets[me] != to.bytes)
        MPIR_ERR_SET2(mpi_errno, MPI_ERR_OTHER, "**collective_size_mismatch",
                      "**collective_size_mismatch %d %d",
                      (int) (offsets[me + 1] - offsets[me]), (int) to.bytes);
    else
        mpi_errno = unpack_into(to, data + offsets[me], to.bytes, 0);
    return mpi_errno;
}

/* A reader waiting for an offer polls the line it expects the data on, and the other one
 * only every OFFER_OTHER_EVERY polls: each line it polls is one its writer must take back
 * before the store that answers it, and a reader that has caught up with its writer would
 * otherwise make it take two lines back per call instead of one. */
#define OFFER_OTHER_EVERY 16

struct offer_of {
    smheap_coll_comm_t *cc;
    int rank, phase;
    uint64_t offered;
    int expect_inline;
    unsigned polls;
};

static inline int has_offered(void *arg)
{
    struct offer_of *o = arg;
    int both = o->polls++ % OFFER_OTHER_EVERY == 0;

    if ((o->expect_inline || both) && cell_has_call(o->cc, o->rank, o->phase))
        return TRUE;
    return (!o->expect_inline || both) &&
        atomic_load_explicit(&slot(o->cc, o->rank)->step, memory_order_acquire) >= o->offered;
}

/* Wait until `rank` has offered its data for this call: inline (*c is its cell of `phase`)
 * or in its slot (*c is NULL), the first where the caller expects it.  An error if the
 * progress engine fails, or if the rank left the call early.  (A rank whose data went
 * inline may have run calls ahead since; its slot no longer says anything about this
 * call.) */
static inline int wait_offer_at(smheap_coll_comm_t * cc, int rank, int phase, uint64_t offered,
                                int expect_inline, const smheap_coll_cell_t ** c)
{
    struct offer_of o = { cc, rank, phase, offered, expect_inline, 0 };
    int mpi_errno = MPI_SUCCESS;

    *c = NULL;
    if (!has_offered(&o))
        mpi_errno = MPIDI_CH3I_Progress_wait_for(has_offered, &o);
    if (mpi_errno == MPI_SUCCESS && cell_has_call(cc, rank, phase)) {
        *c = cell_at(cc, rank, phase);
        count_lines(cell_lines((*c)->bytes), 0);
    } else if (mpi_errno == MPI_SUCCESS && failed_in_call(cc, rank)) {
        MPIR_ERR_SET1(mpi_errno, MPI_ERR_OTHER, "**smheap_coll_peer", "**smheap_coll_peer %d",
                      rank);
    } else {
        count_lines(1, 0);
    }
    cc->offers_inline = *c != NULL;
    return mpi_errno;
}

/* The same, where only the writer knows which way its data go (a v-collective's counts):
 * they are expected to go the way the last offer this rank waited for went. */
static inline int wait_offer(smheap_coll_comm_t * cc, int rank, uint64_t offered,
                             const smheap_coll_cell_t ** c)
{
    return wait_offer_at(cc, rank, 0, offered, cc->offers_inline, c);
}

/* The same, for a call that must find the data inline (its own data went there), or in the
 * slot: a peer that chose the other way passed a different amount of data. */
static inline int wait_offer_as(smheap_coll_comm_t * cc, int rank, int phase, uint64_t offered,
                                int want_inline, const smheap_coll_cell_t ** c)
{
    int mpi_errno = wait_offer_at(cc, rank, phase, offered, want_inline, c);

    if (mpi_errno == MPI_SUCCESS && (*c != NULL) != want_inline)
        MPIR_ERR_SET1(mpi_errno, MPI_ERR_OTHER, "**smheap_coll_sizes", "**smheap_coll_sizes %d",
                      rank);
    return mpi_errno;
}

static inline int wait_all_offers(smheap_coll_comm_t * cc, int size, uint64_t offered,
                                  int want_inline)
{
    int mpi_errno = MPI_SUCCESS;
    const smheap_coll_cell_t *c;

    for (int r = 0; r < size && mpi_errno == MPI_SUCCESS; r++)
        mpi_errno = wait_offer_as(cc, r, 0, offered, want_inline, &c);
    return mpi_errno;
}

#define WAIT_INLINE(cc_, rank_, step_, c_) CHECK_WAIT(wait_offer_as(cc_, rank_, 0, step_, 1, c_))
#define WAIT_IN_SLOT(cc_, rank_, step_)                                         \
    do {                                                                        \
        const smheap_coll_cell_t *c_;                                           \
        CHECK_WAIT(wait_offer_as(cc_, rank_, 0, step_, 0, &c_));                   \
    } while (0)
#define WAIT_ALL_INLINE(cc_, size_, step_) CHECK_WAIT(wait_all_offers(cc_, size_, step_, 1))
#define WAIT_ALL_IN_SLOTS(cc_, size_, step_) CHECK_WAIT(wait_all_offers(cc_, size_, step_, 0))

/* The same collectives as trees (smheap_coll_tree.c), on a communicator that has one, with
 * the steps the flat entry point took for its call. */
static inline int use_tree_for(smheap_coll_comm_t * cc, MPI_Aint bytes)
{
    return cc->tree != NULL && fits_inline(bytes);
}

int MPIDI_CH3I_Smheap_coll_tree_barrier(smheap_coll_comm_t * cc, int me, uint64_t arrived,
                                        uint64_t released);
int MPIDI_CH3I_Smheap_coll_tree_bcast(smheap_coll_comm_t * cc, int me, int root, view_t v,
                                      int carried_in, uint64_t offered, uint64_t copied,
                                      uint64_t * sent, int *carried);
int MPIDI_CH3I_Smheap_coll_tree_reduce(smheap_coll_comm_t * cc, int me, int root, int all,
                                       const void *input, MPI_Aint count, MPI_Datatype dt,
                                       MPI_Op op, void *result, uint64_t offered,
                                       uint64_t reduced);

#endif /* SMHEAP_COLL_CALL_H_INCLUDED */

/* One-sided communication on MPI_COMM_WORLD, whose ranks may sit on several nodes (ch3's
 * RMA over whatever path joins each pair: rings and the heap within a node, sockets between
 * nodes):
 *   - MPI_Win_create over a heap buffer and over a static one, and MPI_Win_allocate: in
 *     fence epochs every rank puts a block into each other rank's window, gets one back
 *     and accumulates into a counter of rank 0; passive target: MPI_Win_lock / unlock
 *     (exclusive around puts, shared around MPI_Fetch_and_op and MPI_Compare_and_swap),
 *     and MPI_Win_lock_all with MPI_Win_flush;
 *   - a dynamic window (MPI_Win_attach, addresses as displacements): puts to the next rank;
 *   - blocks of 8 B, 64 KiB and 1 MiB (ch3's eager and rendezvous sizes);
 * and every byte is checked. */
#include <stdlib.h>
#include <string.h>
#include "../include/smheap_test.h"

#define MAXBLOCK (1 << 20)
#define MAXRANKS 8              /* a slot of MAXBLOCK per origin rank */
#define WIN_LEN (MAXRANKS * (size_t) MAXBLOCK + 64)     /* slots, then a long counter */

static char static_win[WIN_LEN];
static const int blocks[] = { 8, 64 * 1024, MAXBLOCK };

static char byte_of(int origin, int target, int block, int i)
{
    return (char) (origin * 31 + target * 7 + block + i % 239);
}

/* Store into this rank's own window memory, as an epoch of its own. */
static void set_local(MPI_Win win, void *p, int c, size_t n)
{
    int rank;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    memset(p, c, n);
    MPI_Win_unlock(rank, win);
}

/* In one fence epoch every rank puts `block` bytes into its own slot of every other rank's
 * window and adds 1 + its rank to rank 0's counter; then each checks what arrived in its
 * window and gets its own slot back from the next rank. */
static int exchange(MPI_Win win, char *base, MPI_Aint disp0, long *counter,
                    MPI_Aint counter_disp, int block, const char *what)
{
    int rank, size, errs = 0;
    char *src, *got;
    long one;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    src = malloc((size_t) size * block);
    got = malloc(block);
    set_local(win, base, 0, (size_t) size * block);
    set_local(win, counter, 0, sizeof(*counter));
    MPI_Win_fence(MPI_MODE_NOPRECEDE, win);     /* epochs of locks come before and after */
    for (int t = 0; t < size; t++) {
        if (t == rank)
            continue;
        for (int i = 0; i < block; i++)
            src[(size_t) t * block + i] = byte_of(rank, t, block, i);
        MPI_Put(src + (size_t) t * block, block, MPI_CHAR, t,
                disp0 + (MPI_Aint) rank * block, block, MPI_CHAR, win);
    }
    one = 1 + rank;
    MPI_Accumulate(&one, 1, MPI_LONG, 0, counter_disp, 1, MPI_LONG, MPI_SUM, win);
    MPI_Win_fence(0, win);
    for (int r = 0; r < size; r++)
        for (int i = 0; r != rank && i < block; i++)
            if (base[(size_t) r * block + i] != byte_of(r, rank, block, i)) {
                printf("%s, %d B: byte %d put by rank %d is wrong\n", what, block, i, r);
                errs++;
                break;
            }
    if (rank == 0 && *counter != (long) size * (size + 1) / 2) {
        printf("%s, %d B: the accumulated counter is %ld, want %ld\n", what, block,
               *counter, (long) size * (size + 1) / 2);
        errs++;
    }
    MPI_Win_fence(0, win);
    if (size > 1)
        MPI_Get(got, block, MPI_CHAR, (rank + 1) % size, disp0 + (MPI_Aint) rank * block,
                block, MPI_CHAR, win);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    for (int i = 0; size > 1 && i < block; i++)
        if (got[i] != byte_of(rank, (rank + 1) % size, block, i)) {
            printf("%s, %d B: byte %d got back from rank %d is wrong\n", what, block, i,
                   (rank + 1) % size);
            errs++;
            break;
        }
    free(src);
    free(got);
    return errs;
}

/* Passive target: under exclusive locks each rank puts a mark byte into every window and,
 * under shared locks, adds 1 to every counter with MPI_Fetch_and_op; then, in rank order,
 * MPI_Compare_and_swap steps rank 0's counter; then lock_all and flush around an
 * accumulate of its rank into every counter. */
static int passive(MPI_Win win, char *base, long *counter, MPI_Aint counter_disp,
                   const char *what)
{
    int rank, size, errs = 0;
    long one = 1, old, want;
    char mark;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    set_local(win, base, 0, MAXRANKS);
    set_local(win, counter, 0, sizeof(*counter));
    MPI_Barrier(MPI_COMM_WORLD);
    mark = (char) ('a' + rank);
    for (int t = 0; t < size; t++) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win);
        MPI_Put(&mark, 1, MPI_CHAR, t, rank, 1, MPI_CHAR, win);
        MPI_Win_unlock(t, win);
        MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win);
        MPI_Fetch_and_op(&one, &old, MPI_LONG, t, counter_disp, MPI_SUM, win);
        MPI_Win_unlock(t, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    if (*counter != size) {
        printf("%s: fetch-and-add counted %ld, want %d\n", what, *counter, size);
        errs++;
    }
    for (int r = 0; r < size; r++)
        if (base[r] != (char) ('a' + r)) {
            printf("%s: the mark of rank %d is missing\n", what, r);
            errs++;
        }
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = 0; r < size; r++) {
        if (r == rank) {
            long next = size + rank + 1, expect = size + rank, found;

            MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
            MPI_Compare_and_swap(&next, &expect, &found, MPI_LONG, 0, counter_disp, win);
            MPI_Win_unlock(0, win);
            if (found != expect) {
                printf("%s: compare-and-swap found %ld, want %ld\n", what, found, expect);
                errs++;
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_lock_all(0, win);
    for (int t = 0; t < size; t++) {
        long mine = rank;

        MPI_Accumulate(&mine, 1, MPI_LONG, t, counter_disp, 1, MPI_LONG, MPI_SUM, win);
        MPI_Win_flush(t, win);
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    want = (rank == 0 ? 2L * size : size) + (long) size * (size - 1) / 2;
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    if (*counter != want) {
        printf("%s: after lock_all the counter of rank %d is %ld, want %ld\n", what, rank,
               *counter, want);
        errs++;
    }
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
    return errs;
}

/* All the exchanges over one window whose memory is base (WIN_LEN bytes). */
static int exercise(MPI_Win win, char *base, MPI_Aint disp0, const char *what)
{
    int errs = 0;
    long *counter = (long *) (base + MAXRANKS * (size_t) MAXBLOCK);
    MPI_Aint counter_disp = disp0 + MAXRANKS * (MPI_Aint) MAXBLOCK;

    for (size_t b = 0; b < sizeof(blocks) / sizeof(blocks[0]); b++)
        errs += exchange(win, base, disp0, counter, counter_disp, blocks[b], what);
    errs += passive(win, base, counter, counter_disp, what);
    return errs;
}

int main(int argc, char **argv)
{
    int errs = 0, nranks;
    size_t len = WIN_LEN;
    MPI_Win win;
    char *heap, *alloc;

    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (nranks > MAXRANKS) {
        printf("onesided: at most %d ranks\n", MAXRANKS);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    heap = malloc(len);
    MPI_Win_create(heap, len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    errs += exercise(win, heap, 0, "Win_create, heap");
    MPI_Win_free(&win);
    free(heap);

    MPI_Win_create(static_win, len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    errs += exercise(win, static_win, 0, "Win_create, static");
    MPI_Win_free(&win);

    MPI_Win_allocate(len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &alloc, &win);
    errs += exercise(win, alloc, 0, "Win_allocate");
    MPI_Win_free(&win);

    {
        /* a dynamic window: displacements are addresses, exchanged first */
        int size;
        MPI_Aint mine, *all;
        char *buf = malloc(len);

        MPI_Comm_size(MPI_COMM_WORLD, &size);
        all = malloc(size * sizeof(*all));
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        MPI_Win_attach(win, buf, len);
        MPI_Get_address(buf, &mine);
        MPI_Allgather(&mine, 1, MPI_AINT, all, 1, MPI_AINT, MPI_COMM_WORLD);
        /* every rank's buffer sits at its own address: exercise() takes one displacement,
         * so the dynamic window gets a put/get of each block to each rank by address */
        for (size_t b = 0; b < sizeof(blocks) / sizeof(blocks[0]); b++) {
            int rank, block = blocks[b];
            char *src = malloc(block);

            MPI_Comm_rank(MPI_COMM_WORLD, &rank);
            memset(buf, 0, len);
            MPI_Win_fence(0, win);
            int t = (rank + 1) % size;
            for (int i = 0; i < block; i++)
                src[i] = byte_of(rank, t, block, i);
            MPI_Put(src, block, MPI_CHAR, t, all[t], block, MPI_CHAR, win);
            MPI_Win_fence(0, win);
            int from = (rank + size - 1) % size;
            for (int i = 0; i < block; i++)
                if (size > 1 && buf[i] != byte_of(from, rank, block, i)) {
                    printf("dynamic window, %d B: byte %d from rank %d is wrong\n", block, i,
                           from);
                    errs++;
                    break;
                }
            MPI_Win_fence(0, win);
            free(src);
        }
        MPI_Win_detach(win, buf);
        MPI_Win_free(&win);
        free(all);
        free(buf);
    }

    smheap_test_report(errs);
    MPI_Finalize();
    return 0;
}

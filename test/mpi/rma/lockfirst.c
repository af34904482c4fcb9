/* Exclusive locks taken the moment a window exists.  Window after window (MPI_Win_create
 * over MPI_Alloc_mem, MPI_Win_allocate), every rank but 0 locks rank 0 right after the
 * creating call returns, with no barrier between, and increments rank 0's counter by a
 * get, a flush, a local add and a put, which only mutual exclusion keeps right: the values
 * the origins read must be consecutive, each read once, and the counter must end one past
 * the last (MPI_Win_allocate's memory is not zeroed, and rank 0 cannot write it before
 * others may lock it).  Where the window spans nodes, an origin of another node may
 * send its lock packet while rank 0 still sets the window up, and the origins of rank 0's
 * node take its lock word in the heap: a grant to the packet before rank 0's lock word
 * serves ch3 would let both in. */
#include "../include/smheap_test.h"

#define WINDOWS 40
#define EPOCHS 8

static int compare_longs(const void *a, const void *b)
{
    long x = *(const long *) a, y = *(const long *) b;

    return x < y ? -1 : x > y;
}

static long increment(MPI_Win win)
{
    long value, seen;

    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    MPI_Get(&value, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win);
    MPI_Win_flush(0, win);
    seen = value++;
    MPI_Put(&value, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win);
    MPI_Win_unlock(0, win);
    return seen;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    long seen[EPOCHS], *all_seen;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    all_seen = malloc((size_t) size * EPOCHS * sizeof(long));

    for (int w = 0; w < 2 * WINDOWS; w++) {
        const char *name = w % 2 ? "MPI_Win_allocate" : "MPI_Win_create";
        long *counter = NULL;
        MPI_Win win;

        if (w % 2) {
            MPI_Win_allocate(rank == 0 ? sizeof(long) : 0, sizeof(long), MPI_INFO_NULL,
                             MPI_COMM_WORLD, &counter, &win);
        } else if (rank == 0) {
            MPI_Alloc_mem(sizeof(long), MPI_INFO_NULL, &counter);
            *counter = 0;
            MPI_Win_create(counter, sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD,
                           &win);
        } else {
            MPI_Win_create(NULL, 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        }
        for (int e = 0; e < EPOCHS; e++)
            seen[e] = rank > 0 ? increment(win) : 0;
        MPI_Gather(seen, EPOCHS, MPI_LONG, all_seen, EPOCHS, MPI_LONG, 0, MPI_COMM_WORLD);
        if (rank == 0 && size > 1) {
            long *v = all_seen + EPOCHS, n = (long) (size - 1) * EPOCHS, final;

            MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
            final = *counter;
            MPI_Win_unlock(0, win);

            qsort(v, n, sizeof(long), compare_longs);
            for (long i = 1; i < n; i++)
                if (v[i] != v[i - 1] + 1) {
                    printf("window %d (%s): origins read %ld, then %ld\n", w, name,
                           v[i - 1], v[i]);
                    errs++;
                }
            if (final != v[0] + n) {
                printf("window %d (%s): the counter ends at %ld, after %ld increments from "
                       "%ld\n", w, name, final, n, v[0]);
                errs++;
            }
        }
        MPI_Win_free(&win);
        if (rank == 0 && w % 2 == 0)
            MPI_Free_mem(counter);
    }
    free(all_seen);
    smheap_test_report(errs);
    MPI_Finalize();
    return 0;
}

/* A flush to a rank on our node of a window with shared memory is done in place, but it
 * must still let our progress engine run: a peer on another node may be waiting for us to
 * answer its own flush.  Rank S calls nothing but MPI_Fetch_and_op and MPI_Win_flush
 * towards T, a rank of its node, until T's flag is set; R, on another node, sets it only
 * after its accumulate to S and its flush to S have completed.  (MPICH's
 * rma/mutex_bench_shm_ordered hung this way on two nodes.)  On one node every operation is
 * in place and the test shows only that the values arrive. */
#include "../include/smheap_test.h"

#define WAIT_LIMIT 60.0         /* seconds: far beyond what a working flush takes */

/* Spin on (target, disp) with MPI_Fetch_and_op and MPI_Win_flush only, until it is set. */
static int spin_until_set(MPI_Win win, int target, int disp)
{
    int rank;
    double start = MPI_Wtime();
    int flag = 0;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    do {
        MPI_Fetch_and_op(NULL, &flag, MPI_INT, target, disp, MPI_NO_OP, win);
        MPI_Win_flush(target, win);
        if (MPI_Wtime() - start > WAIT_LIMIT) {
            printf("rank %d: no flag from rank %d after %.0f s: a flush that does not poll "
                   "keeps a peer's flush to us waiting\n", rank, target, WAIT_LIMIT);
            fflush(stdout);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    } while (flag == 0);
    return flag;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, t = -1, s = -1, r = -1;
    int *base;
    MPI_Info info;
    MPI_Win win;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* T and S: the first two ranks that share a node; R: a rank on another node, else any
     * third rank */
    char (*host)[MPI_MAX_PROCESSOR_NAME] = host_names(MPI_COMM_WORLD);
    for (int a = 0; a < size && s < 0; a++)
        for (int b = a + 1; b < size && s < 0; b++)
            if (strcmp(host[a], host[b]) == 0) {
                t = a;
                s = b;
            }
    for (int c = 0; c < size && s >= 0 && r < 0; c++)
        if (strcmp(host[c], host[t]) != 0)
            r = c;
    for (int c = 0; c < size && s >= 0 && r < 0; c++)
        if (c != t && c != s)
            r = c;
    free(host);

    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shm", "true");
    MPI_Win_allocate(2 * sizeof(int), sizeof(int), info, MPI_COMM_WORLD, &base, &win);
    MPI_Info_free(&info);
    MPI_Win_lock_all(0, win);
    base[0] = base[1] = 0;
    MPI_Win_sync(win);
    MPI_Barrier(MPI_COMM_WORLD);

    if (rank == r) {
        int value = 42, one = 1;

        MPI_Accumulate(&value, 1, MPI_INT, s, 1, 1, MPI_INT, MPI_REPLACE, win);
        MPI_Win_flush(s, win);
        MPI_Accumulate(&one, 1, MPI_INT, t, 0, 1, MPI_INT, MPI_REPLACE, win);
        MPI_Win_flush(t, win);
    } else if (rank == s) {
        int got;

        spin_until_set(win, t, 0);
        MPI_Fetch_and_op(NULL, &got, MPI_INT, s, 1, MPI_NO_OP, win);
        MPI_Win_flush(s, win);
        if (got != 42) {
            printf("rank %d: rank %d's accumulate left %d, not 42\n", s, r, got);
            errs++;
        }
    } else if (rank == t) {
        spin_until_set(win, t, 0);
    }

    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    smheap_test_report(errs);
    MPI_Finalize();
    return 0;
}

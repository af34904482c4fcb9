/* MPI_Win_allocate_shared on the node communicator: every rank writes its segment, then
 * reads its neighbours' segments by plain loads through MPI_Win_shared_query, and all
 * ranks MPI_Accumulate into rank 0's counter. */
#include "../include/smheap_test.h"

#define N 1024

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Comm node;
    MPI_Win win;
    long *mine;

    MPI_Init(&argc, &argv);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &rank);
    MPI_Comm_size(node, &size);
    MPI_Comm host = comm_of_my_host(MPI_COMM_WORLD);
    int host_size, result;
    MPI_Comm_size(host, &host_size);
    MPI_Comm_compare(node, host, &result);
    if (result != MPI_CONGRUENT) {
        printf("shared communicator has %d ranks, not the %d of this node\n", size, host_size);
        errs++;
    }
    MPI_Comm_free(&host);

    MPI_Win_allocate_shared((N + 1) * sizeof(long), sizeof(long), MPI_INFO_NULL, node,
                            &mine, &win);
    MPI_Win_lock_all(0, win);
    for (int i = 0; i < N; i++)
        mine[i] = (long) rank * N + i;
    mine[N] = 0;
    MPI_Win_sync(win);
    MPI_Barrier(node);
    MPI_Win_sync(win);

    for (int d = 1; d < size; d++) {
        int peer = (rank + d) % size, disp;
        MPI_Aint len;
        long *theirs;
        MPI_Win_shared_query(win, peer, &len, &disp, &theirs);
        if (len != (MPI_Aint) ((N + 1) * sizeof(long)) || disp != sizeof(long))
            errs++;
        for (int i = 0; i < N; i++)
            if (theirs[i] != (long) peer * N + i) {
                errs++;
                break;
            }
    }

    long one = 1;
    MPI_Accumulate(&one, 1, MPI_LONG, 0, N, 1, MPI_LONG, MPI_SUM, win);
    MPI_Win_flush_all(win);
    MPI_Win_sync(win);
    MPI_Barrier(node);
    MPI_Win_sync(win);
    if (rank == 0 && mine[N] != size) {
        printf("accumulated %ld, expected %d\n", mine[N], size);
        errs++;
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);

    MPI_Comm_free(&node);
    smheap_test_report(errs);
    MPI_Finalize();
    return 0;
}

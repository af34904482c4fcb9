/* Soak under MPI_THREAD_MULTIPLE, bounded in time: soak [THREADS [SECONDS]] (default 4, 4).
 * Every rank runs THREADS threads at once, each on its own duplicate of MPI_COMM_WORLD:
 *   - collective threads: Allreduce, Bcast from a moving root, Allgather and Barrier on heap
 *     buffers of 8 B, 64 KiB and 1 MiB (the shared-heap collectives on one node);
 *   - point-to-point threads: a ring of Isend/Irecv on heap buffers of 8 B to 4 MiB
 *     (eager, and single-copy rendezvous);
 *   - one churn thread: creates and frees communicators (dup, split) and runs a collective
 *     on each, while the other threads communicate.
 * Every result is checked (SOAK_VERBOSE=1 prints each thread's rounds).  The threads agree when to stop by a vote on their own
 * communicator, so every rank runs the same number of rounds of each. */
#include <pthread.h>
#include <time.h>
#include "../include/smheap_test.h"

static int rank, size, seconds = 4;
static double start;

struct worker {
    pthread_t thread;
    int index;
    MPI_Comm comm;
    long rounds;
    int errs;
};

static const int coll_counts[] = { 2, 16 << 10, 256 << 10 };           /* ints: 8 B..1 MiB */
static const int p2p_counts[] = { 2, 1 << 10, 16 << 10, 1 << 20 };     /* ints: 8 B..4 MiB */

static int time_is_up(MPI_Comm comm)
{
    int up = MPI_Wtime() - start > seconds;

    MPI_Allreduce(MPI_IN_PLACE, &up, 1, MPI_INT, MPI_MAX, comm);
    return up;
}

static int value(int r, long round, int i, int salt)
{
    return (int) ((r + 1) * ((round + i + salt) % 1000));
}

static int collective_round(struct worker *w, int *a, int *b)
{
    int n = coll_counts[w->rounds % 3], root = (int) (w->rounds % size), errs = 0;
    long sum_ranks = (long) size * (size + 1) / 2;

    for (int i = 0; i < n; i++)
        a[i] = value(rank, w->rounds, i, w->index);
    MPI_Allreduce(a, b, n, MPI_INT, MPI_SUM, w->comm);
    for (int i = 0; i < n; i++)
        errs += b[i] != sum_ranks * ((w->rounds + i + w->index) % 1000);

    for (int i = 0; i < n; i++)
        a[i] = rank == root ? value(root, w->rounds, i, 7) : -1;
    MPI_Bcast(a, n, MPI_INT, root, w->comm);
    for (int i = 0; i < n; i++)
        errs += a[i] != value(root, w->rounds, i, 7);

    int part = n / size > 0 ? n / size : 1;
    for (int i = 0; i < part; i++)
        a[i] = value(rank, w->rounds, i, 3);
    MPI_Allgather(a, part, MPI_INT, b, part, MPI_INT, w->comm);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < part; i++)
            errs += b[r * part + i] != value(r, w->rounds, i, 3);

    MPI_Barrier(w->comm);
    return errs;
}

static int p2p_round(struct worker *w, int *a, int *b)
{
    int n = p2p_counts[w->rounds % 4], errs = 0;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Request req[2];
    MPI_Status status[2];

    for (int i = 0; i < n; i++)
        a[i] = value(rank, w->rounds, i, w->index);
    MPI_Irecv(b, n, MPI_INT, left, w->index, w->comm, &req[0]);
    MPI_Isend(a, n, MPI_INT, right, w->index, w->comm, &req[1]);
    MPI_Waitall(2, req, status);
    for (int i = 0; i < n; i++)
        errs += b[i] != value(left, w->rounds, i, w->index);
    return errs;
}

static int churn_round(struct worker *w)
{
    MPI_Comm dup, half;
    int sum, errs = 0, half_size;

    MPI_Comm_dup(w->comm, &dup);
    MPI_Comm_split(dup, rank % 2, rank, &half);
    MPI_Comm_size(half, &half_size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, half);
    /* the ranks of one parity: r, r + 2, ... below size */
    int want = 0;
    for (int r = rank % 2; r < size; r += 2)
        want += r;
    errs += sum != want || half_size != (size + 1 - rank % 2) / 2;
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    return errs;
}

static void *work(void *arg)
{
    struct worker *w = arg;
    size_t bytes = sizeof(int) * p2p_counts[3];  /* the largest count of any round */
    int *a = malloc(bytes), *b = malloc(bytes);
    int churn = w->index == 0, coll = w->index % 2 == 1;

    while (!time_is_up(w->comm)) {
        if (churn)
            w->errs += churn_round(w);
        else if (coll)
            w->errs += collective_round(w, a, b);
        else
            w->errs += p2p_round(w, a, b);
        w->rounds++;
    }
    free(a);
    free(b);
    return NULL;
}

int main(int argc, char **argv)
{
    int prov, nthreads = argc > 1 ? atoi(argv[1]) : 4, errs = 0;
    struct worker *workers;

    if (argc > 2)
        seconds = atoi(argv[2]);
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &prov);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (prov != MPI_THREAD_MULTIPLE || nthreads < 3) {
        printf("needs MPI_THREAD_MULTIPLE (got %d) and 3 or more threads (got %d)\n", prov,
               nthreads);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    workers = calloc(nthreads, sizeof(*workers));
    for (int t = 0; t < nthreads; t++) {
        workers[t].index = t;
        MPI_Comm_dup(MPI_COMM_WORLD, &workers[t].comm);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    start = MPI_Wtime();
    for (int t = 0; t < nthreads; t++)
        pthread_create(&workers[t].thread, NULL, work, &workers[t]);
    for (int t = 0; t < nthreads; t++) {
        pthread_join(workers[t].thread, NULL);
        errs += workers[t].errs;
        if (workers[t].rounds == 0)
            errs++;
        if (workers[t].errs || workers[t].rounds == 0 || getenv("SOAK_VERBOSE"))
            printf("rank %d thread %d (%s): %ld rounds, %d errors\n", rank, t,
                   t == 0 ? "churn" : t % 2 ? "collectives" : "point-to-point",
                   workers[t].rounds, workers[t].errs);
        MPI_Comm_free(&workers[t].comm);
    }
    free(workers);
    smheap_test_report(errs);
    MPI_Finalize();
    return 0;
}

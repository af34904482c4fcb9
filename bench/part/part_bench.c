/* Partitioned send against one MPI_Isend, 2 ranks (MPI_THREAD_MULTIPLE).
 *
 * Rank 0 fills a buffer from the heap (malloc) of SIZE bytes in PARTS partitions with
 * THREADS threads, each filling and readying every THREADS-th partition:
 *   part   MPI_Psend_init once; every iteration MPI_Start, the threads fill and MPI_Pready
 *          each partition as soon as it is filled, MPI_Wait.  Rank 1: MPI_Precv_init,
 *          MPI_Start, MPI_Wait.
 *   isend  the threads fill every partition, then one MPI_Isend of the whole buffer and
 *          MPI_Wait.  Rank 1: MPI_Irecv posted beforehand, MPI_Wait.
 * Each iteration begins with a barrier; both ranks read one clock (CLOCK_MONOTONIC, one
 * machine).  Printed, as medians over the iterations (us):
 *   after_ready  from the last partition being ready (part: the call of its MPI_Pready;
 *                isend: the last thread finished filling) to the receiver's completion
 *   total        from the start of the iteration to the receiver's completion
 *   bench/part/part_bench [-s SIZE] [-p PARTS] [-t THREADS] [-i ITERS] [-w WORK]
 * WORK: nanoseconds of extra work per partition before it is ready (default 0), so that the
 * threads finish at different times as in an application.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long size = 4L << 20;
static int parts = 64, nthreads = 4, iters = 200, work_ns;
static char *buf;
static MPI_Request preq;
static int use_part;
static double last_ready[64];   /* per thread: when its last partition became ready */

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void spin_ns(int ns)
{
    double until = now() + ns / 1e3;

    while (now() < until);
}

static void *filler(void *arg)
{
    int t = (int) (long) arg;
    long per = size / parts;

    for (int k = t; k < parts; k += nthreads) {
        memset(buf + k * per, k + 1, per);
        if (work_ns)
            spin_ns(work_ns);
        last_ready[t] = now();
        if (use_part)
            MPI_Pready(k, preq);
    }
    return NULL;
}

static double fill_all(void)
{
    pthread_t th[64];
    double last = 0;

    for (long t = 0; t < nthreads; t++)
        pthread_create(&th[t], NULL, filler, (void *) t);
    for (int t = 0; t < nthreads; t++) {
        pthread_join(th[t], NULL);
        if (last_ready[t] > last)
            last = last_ready[t];
    }
    return last;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;

    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof(*v), cmp);
    return v[n / 2];
}

static void run(int rank, const char *name)
{
    double *after = malloc(iters * sizeof(double)), *total = malloc(iters * sizeof(double));
    MPI_Request req;
    int warm = iters / 10 + 2;

    use_part = strcmp(name, "part") == 0;
    if (use_part) {
        if (rank == 0)
            MPI_Psend_init(buf, parts, (int) (size / parts), MPI_CHAR, 1, 0, MPI_COMM_WORLD,
                           MPI_INFO_NULL, &preq);
        else
            MPI_Precv_init(buf, parts, (int) (size / parts), MPI_CHAR, 0, 0, MPI_COMM_WORLD,
                           MPI_INFO_NULL, &preq);
    }
    for (int i = -warm; i < iters; i++) {
        double t0, ready = 0, done = 0;

        if (rank == 1) {
            if (use_part)
                MPI_Start(&preq);
            else
                MPI_Irecv(buf, (int) size, MPI_CHAR, 0, 0, MPI_COMM_WORLD, &req);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now();
        if (rank == 0) {
            if (use_part) {
                MPI_Start(&preq);
                ready = fill_all();
                MPI_Wait(&preq, MPI_STATUS_IGNORE);
            } else {
                ready = fill_all();
                MPI_Isend(buf, (int) size, MPI_CHAR, 1, 0, MPI_COMM_WORLD, &req);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
            MPI_Recv(&done, 1, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (i >= 0) {
                after[i] = done - ready;
                total[i] = done - t0;
            }
        } else {
            MPI_Wait(use_part ? &preq : &req, MPI_STATUS_IGNORE);
            done = now();
            MPI_Send(&done, 1, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD);
        }
    }
    if (use_part)
        MPI_Request_free(&preq);
    if (rank == 0)
        printf("test=%s size=%ld parts=%d threads=%d after_ready=%.3f total=%.3f\n", name,
               size, parts, nthreads, median(after, iters), median(total, iters));
    free(after);
    free(total);
}

int main(int argc, char **argv)
{
    int rank, size_w, provided, opt;

    while ((opt = getopt(argc, argv, "s:p:t:i:w:")) != -1) {
        switch (opt) {
        case 's': size = atol(optarg); break;
        case 'p': parts = atoi(optarg); break;
        case 't': nthreads = atoi(optarg); break;
        case 'i': iters = atoi(optarg); break;
        case 'w': work_ns = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: part_bench [-s SIZE] [-p PARTS] [-t THREADS] [-i ITERS] "
                    "[-w WORK_NS]\n");
            return 1;
        }
    }
    if (nthreads < 1 || nthreads > 64 || parts < 1 || size % parts) {
        fprintf(stderr, "part_bench: 1-64 threads, and SIZE a multiple of PARTS\n");
        return 1;
    }
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size_w);
    if (size_w != 2 || provided != MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            fprintf(stderr, "part_bench: 2 ranks and MPI_THREAD_MULTIPLE needed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    buf = malloc(size);
    memset(buf, 0, size);
    if (rank == 0) {
        char v[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;

        MPI_Get_library_version(v, &len);
        printf("# %s\n", strtok(v, "\n"));
    }
    run(rank, "part");
    run(rank, "isend");
    free(buf);
    MPI_Finalize();
    return 0;
}

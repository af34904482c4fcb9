/* One-sided communication between 2 ranks: rank 0 the origin, rank 1 the target.
 *
 *   -t busy  the target computes for BUSY ms without calling MPI while the origin locks
 *            its window, puts SIZE bytes and unlocks; the time of that epoch (us), for
 *            8 B and 1 MiB.  ch3 grants locks in the target's progress engine.
 *   -t lat   latency of one operation (us) completed by MPI_Win_flush inside a
 *            lock_all epoch (sync=flush), or by its own lock/unlock (sync=lock), the
 *            target waiting in MPI_Barrier.
 *   -t bw    bandwidth (MB/s): WINDOW operations, then one MPI_Win_flush.
 *   -t epoch active-target epochs (us): MPI_Win_fence, put, MPI_Win_fence on both ranks
 *            (sync=fence), or MPI_Win_start, put, MPI_Win_complete against MPI_Win_post,
 *            MPI_Win_wait (sync=pscw), with puts of 8 B and 64 KiB.
 * Operations: put, get, acc (MPI_Accumulate of doubles, MPI_SUM).  Windows (-f): create
 * (MPI_Win_create over malloc'd memory), allocate (MPI_Win_allocate), dynamic
 * (MPI_Win_create_dynamic + MPI_Win_attach of malloc'd memory).  Sizes 8 B to 4 MiB.
 * One line per measurement, the median over the repetitions:
 *   test=lat op=put flavor=create sync=flush size=8 usec=0.091
 * and, after each window flavour, where the origin went (ch3:smheap's MPI_T counters,
 * nothing with an MPI that has none):
 *   pvar test=lat flavor=create smheap_rma_ops_in_place=2048 smheap_rma_ops_queued=0 ...
 *   bench/rma/rma_bench -t busy|lat|bw|epoch [-f create|allocate|dynamic] [-q]
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SIZE (4 << 20)
#define WINDOW 32
#define BUSY_MS 300

static int rank, quick;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void compute(double seconds)
{
    volatile double x = 1.0;
    double end = now() + seconds;

    while (now() < end)
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;

    return x < y ? -1 : x > y;
}

/* The sizes measured: 8 B and four times as many each step, then MAX_SIZE itself (8 x 4^k
 * is an odd power of two, 4 MiB an even one). */
static int next_size(int size)
{
    if (size == MAX_SIZE)
        return MAX_SIZE + 1;
    return size * 4 < MAX_SIZE ? size * 4 : MAX_SIZE;
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof(*v), cmp);
    return v[n / 2];
}

struct window {
    MPI_Win win;
    char *mem;
    MPI_Aint disp;              /* of the target's memory, for the origin */
    int flavor;
};

static const char *flavors[] = { "create", "allocate", "dynamic" };

static void open_window(struct window *w, int flavor, MPI_Aint size)
{
    w->flavor = flavor;
    w->disp = 0;
    if (flavor == 0) {
        w->mem = malloc(size);
        MPI_Win_create(w->mem, size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
    } else if (flavor == 1) {
        MPI_Win_allocate(size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->mem, &w->win);
    } else {
        w->mem = malloc(size);
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
        MPI_Win_attach(w->win, w->mem, size);
        MPI_Get_address(w->mem, &w->disp);
        MPI_Bcast(&w->disp, 1, MPI_AINT, 1, MPI_COMM_WORLD);
    }
    memset(w->mem, 0, size);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void close_window(struct window *w)
{
    if (w->flavor == 2)
        MPI_Win_detach(w->win, w->mem);
    MPI_Win_free(&w->win);
    if (w->flavor != 1)
        free(w->mem);
}

static void op(const char *name, char *buf, int size, struct window *w)
{
    if (name[0] == 'p')
        MPI_Put(buf, size, MPI_BYTE, 1, w->disp, size, MPI_BYTE, w->win);
    else if (name[0] == 'g')
        MPI_Get(buf, size, MPI_BYTE, 1, w->disp, size, MPI_BYTE, w->win);
    else
        MPI_Accumulate(buf, size / 8, MPI_DOUBLE, 1, w->disp, size / 8, MPI_DOUBLE, MPI_SUM,
                       w->win);
}

static void busy(int flavor, char *buf)
{
    int sizes[] = { 8, 1 << 20 }, reps = quick ? 2 : 11;
    struct window w;
    double t[11];

    open_window(&w, flavor, 1 << 20);
    for (int s = 0; s < 2; s++) {
        for (int r = 0; r < reps; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 1) {
                compute(BUSY_MS * 1e-3);
            } else {
                double t0 = MPI_Wtime();

                MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, w.win);
                MPI_Put(buf, sizes[s], MPI_BYTE, 1, w.disp, sizes[s], MPI_BYTE, w.win);
                MPI_Win_unlock(1, w.win);
                t[r] = MPI_Wtime() - t0;
            }
        }
        if (rank == 0)
            printf("test=busy op=put flavor=%s sync=lock size=%d usec=%.3f\n",
                   flavors[flavor], sizes[s], median(t, reps) * 1e6);
    }
    close_window(&w);
}

static void latency(int flavor, char *buf, const char *opname, int lock_each)
{
    struct window w;
    double t[16];
    int reps = quick ? 3 : 9;

    open_window(&w, flavor, MAX_SIZE);
    for (int size = 8; size <= MAX_SIZE; size = next_size(size)) {
        int iters = size >= (1 << 18) ? 20 : quick ? 100 : 1000;

        for (int r = 0; r < reps; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                double t0;

                if (!lock_each)
                    MPI_Win_lock_all(0, w.win);
                t0 = MPI_Wtime();
                for (int i = 0; i < iters; i++) {
                    if (lock_each)
                        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w.win);
                    op(opname, buf, size, &w);
                    if (lock_each)
                        MPI_Win_unlock(1, w.win);
                    else
                        MPI_Win_flush(1, w.win);
                }
                t[r] = (MPI_Wtime() - t0) / iters;
                if (!lock_each)
                    MPI_Win_unlock_all(w.win);
            }
        }
        if (rank == 0)
            printf("test=lat op=%s flavor=%s sync=%s size=%d usec=%.3f\n", opname,
                   flavors[flavor], lock_each ? "lock" : "flush", size, median(t, reps) * 1e6);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    close_window(&w);
}

static void bandwidth(int flavor, char *buf, const char *opname)
{
    struct window w;
    double t[16];
    int reps = quick ? 3 : 7;

    open_window(&w, flavor, MAX_SIZE);
    for (int size = 8; size <= MAX_SIZE; size = next_size(size)) {
        int window = size >= (1 << 20) ? 4 : WINDOW, iters = size >= (1 << 18) ? 4 : 50;

        for (int r = 0; r < reps; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                double t0;

                MPI_Win_lock_all(0, w.win);
                t0 = MPI_Wtime();
                for (int i = 0; i < iters; i++) {
                    for (int k = 0; k < window; k++)
                        op(opname, buf, size, &w);
                    MPI_Win_flush(1, w.win);
                }
                t[r] = (MPI_Wtime() - t0) / ((double) iters * window);
                MPI_Win_unlock_all(w.win);
            }
        }
        if (rank == 0)
            printf("test=bw op=%s flavor=%s sync=flush size=%d mbps=%.1f\n", opname,
                   flavors[flavor], size, size / median(t, reps) / 1e6);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    close_window(&w);
}

static void epochs(int flavor, char *buf, int pscw)
{
    int sizes[] = { 8, 64 << 10 }, reps = quick ? 3 : 9, iters = quick ? 100 : 1000;
    struct window w;
    MPI_Group world, peer;
    double t[16];

    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, (int[]) { 1 - rank }, &peer);
    open_window(&w, flavor, 64 << 10);
    for (int s = 0; s < 2; s++) {
        for (int r = 0; r < reps; r++) {
            double t0;

            MPI_Barrier(MPI_COMM_WORLD);
            if (!pscw)
                MPI_Win_fence(0, w.win);
            t0 = MPI_Wtime();
            for (int i = 0; i < iters; i++) {
                if (!pscw) {
                    if (rank == 0)
                        op("put", buf, sizes[s], &w);
                    MPI_Win_fence(0, w.win);
                } else if (rank == 0) {
                    MPI_Win_start(peer, 0, w.win);
                    op("put", buf, sizes[s], &w);
                    MPI_Win_complete(w.win);
                } else {
                    MPI_Win_post(peer, 0, w.win);
                    MPI_Win_wait(w.win);
                }
            }
            t[r] = (MPI_Wtime() - t0) / iters;
            if (!pscw)
                MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win);
        }
        if (rank == 0)
            printf("test=epoch op=put flavor=%s sync=%s size=%d usec=%.3f\n", flavors[flavor],
                   pscw ? "pscw" : "fence", sizes[s], median(t, reps) * 1e6);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    close_window(&w);
    MPI_Group_free(&peer);
    MPI_Group_free(&world);
}

/* ch3:smheap's counters of where one-sided operations and locks went (MPI_T). */
static const char *path_counters[] = { "smheap_rma_ops_in_place", "smheap_rma_ops_queued",
    "smheap_rma_locks_in_place", "smheap_rma_epochs_in_place"
};

#define NCOUNTERS (sizeof(path_counters) / sizeof(path_counters[0]))

/* This rank's value of each counter, or -1 where the MPI has no such counter. */
static void read_path_counters(long long *v)
{
    int n;

    MPI_T_pvar_get_num(&n);
    for (size_t c = 0; c < NCOUNTERS; c++)
        v[c] = -1;
    for (int i = 0; i < n; i++) {
        char name[256], desc[1024];
        int nlen = sizeof(name), dlen = sizeof(desc), verb, cls, bind, ro, cont, atomic, count;
        unsigned long long value;
        MPI_Datatype dt;
        MPI_T_enum en;
        MPI_T_pvar_session ses;
        MPI_T_pvar_handle h;

        if (MPI_T_pvar_get_info(i, name, &nlen, &verb, &cls, &dt, &en, desc, &dlen, &bind,
                                &ro, &cont, &atomic) != MPI_SUCCESS ||
            dt != MPI_UNSIGNED_LONG_LONG)
            continue;
        for (size_t c = 0; c < NCOUNTERS; c++) {
            if (strcmp(name, path_counters[c]) != 0)
                continue;
            MPI_T_pvar_session_create(&ses);
            MPI_T_pvar_handle_alloc(ses, i, NULL, &h, &count);
            MPI_T_pvar_read(ses, h, &value);
            MPI_T_pvar_handle_free(ses, &h);
            MPI_T_pvar_session_free(&ses);
            v[c] = (long long) value;
        }
    }
}

/* The origin's counters since before: one line, nothing if the MPI has none. */
static void print_path_counters(const char *test, int flavor, const long long *before)
{
    long long after[NCOUNTERS];

    read_path_counters(after);
    if (rank != 0 || after[0] < 0)
        return;
    printf("pvar test=%s flavor=%s", test, flavors[flavor]);
    for (size_t c = 0; c < NCOUNTERS; c++)
        printf(" %s=%lld", path_counters[c], after[c] - before[c]);
    printf("\n");
}

int main(int argc, char **argv)
{
    const char *test = "lat", *ops[] = { "put", "get", "acc" };
    int only = -1;
    char *buf;

    int provided;
    long long before[NCOUNTERS];

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc)
            test = argv[++i];
        else if (!strcmp(argv[i], "-f") && i + 1 < argc) {
            i++;
            for (int f = 0; f < 3; f++)
                if (!strcmp(argv[i], flavors[f]))
                    only = f;
        } else if (!strcmp(argv[i], "-q"))
            quick = 1;
    }
    buf = malloc(MAX_SIZE);
    memset(buf, 1, MAX_SIZE);
    for (int f = 0; f < 3; f++) {
        if (only >= 0 && f != only)
            continue;
        read_path_counters(before);
        if (!strcmp(test, "busy"))
            busy(f, buf);
        if (!strcmp(test, "epoch")) {
            epochs(f, buf, 0);
            epochs(f, buf, 1);
        }
        for (int o = 0; o < 3 && strcmp(test, "busy") && strcmp(test, "epoch"); o++) {
            if (!strcmp(test, "lat")) {
                latency(f, buf, ops[o], 0);
                latency(f, buf, ops[o], 1);
            } else {
                bandwidth(f, buf, ops[o]);
            }
        }
        print_path_counters(test, f, before);
    }
    free(buf);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}

/*
 * Point-to-point between two ranks, measured the way the OSU micro-benchmarks do, so that
 * ch3:smheap, ch3:nemesis and Open MPI can be compared with the same binary source.
 *
 *   lat   ping-pong (MPI_Send/MPI_Recv); one-way latency in microseconds = round trip / 2.
 *         Sizes 0 B, 1 B ... 64 KiB; 100000 round trips up to 8 KiB, fewer above (the
 *         small sizes take well under a second each: long enough to average over the
 *         machine's jitter).
 *   bw    rank 0 posts a window of MPI_Isend of one buffer, rank 1 a window of MPI_Irecv
 *         into one buffer; both MPI_Waitall, then rank 1 sends a 4-byte ack.  MB/s
 *         (1e6 bytes/s) = size * window * iterations / time.  Sizes 64 KiB ... 64 MiB.
 *   bibw  both ranks post a window of MPI_Irecv and of MPI_Isend at once, then MPI_Waitall;
 *         MB/s counts the bytes of both directions.
 *
 * The window is 64 messages, smaller for sizes above 2 MiB (at most 128 MiB in flight, at
 * least 2 messages), and the number of windows keeps about 512 MiB per size (at least 3
 * windows), so that one size takes well under a second.  Warm-up rounds come first and a
 * barrier starts every size.  Rank 0 times and prints.
 *
 * With more than 2 ranks (a job across nodes, say), ranks 0 and 1 measure and the others
 * stand by: they test for rank 0's "done" once a millisecond and sleep between tests, so
 * they neither compete for the CPUs nor spin in MPI while the pair is timed.
 *
 * Buffers (one to send from, one to receive into, each of the largest size, touched before
 * timing): -b heap takes them from malloc (posix_memalign; under ch3:smheap that is the
 * shared heap, so large messages take the single copy); -b stack puts them on main's stack
 * (a variable-length array), which under ch3:smheap goes through ch3's rendezvous.  The
 * stack buffers need RLIMIT_STACK above 2 x the largest size (ulimit -s; bench/p2p/run.sh
 * sets it); the program checks and says so.  -b heap+8 is -b heap with the receive buffer
 * 8 bytes past a page (a field after a header, say): a destination 8 bytes past its source
 * modulo 4 KiB, where glibc's memcpy is slow on AMD processors (see the channel's
 * smheap_copy.h).
 *
 * After the run, the ranks that received check the last message's bytes (exit status 1 if
 * wrong).  Output, one line per size:  test=bw buf=heap size=65536 value=1234.5
 * and, at the end, ch3:smheap's MPI_T path counters (every continuous pvar named
 * smheap_..._msgs: smheap_single_copy_msgs, smheap_staged_msgs, ..., which tell the path
 * the messages took, smheap_copy_detours, smheap_sleeps: waits that ended asleep, each
 * woken by a system call, and smheap_ring_slow_spells: times the rings were found slow,
 * which sends mid-sized messages through the kernel), summed over the pair:
 *   pvar smheap_single_copy_msgs=123
 * (nothing with an MPI that has no such counters).
 *
 *   p2p_bench [-t lat|bw|bibw] [-b heap|stack|heap+8] [-s MIN] [-S MAX] [-z S1,S2,...]
 *             [-i ITERS] [-q]
 *   -z: these sizes instead of the powers of two from MIN to MAX;
 *   -i: iterations (round trips, or windows) for every size; -q: about 8x fewer (smoke tests)
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define WINDOW 64
#define IN_FLIGHT (128L << 20)  /* bw/bibw: at most this many bytes in one window */
#define BW_BYTES (512L << 20)   /* bw/bibw: bytes timed per size */
#define BW_WINDOWS 16384        /* bw/bibw: at most this many windows (a million messages) */
#define LAT_ITERS 100000        /* lat: round trips up to LAT_FULL bytes */
#define LAT_FULL 8192
#define STACK_SPARE (8L << 20)  /* stack left for MPI itself below the buffers */
#define MAX_COUNTERS 32
#define MAX_SIZES 64
#define DONE_TAG 999          /* rank 0 to the ranks beyond the pair */
#define RECV_SHIFT 8            /* -b heap+8: the receive buffer's offset into its page */

static int rank, quick, iters_opt;
static MPI_Comm pair;           /* ranks 0 and 1 */
static const char *test = "lat", *buf = "heap";
static long min_size = -1, max_size = -1;
static long sizes[MAX_SIZES];  /* -z */
static int n_sizes;

static void usage(void)
{
    if (rank == 0)
        fprintf(stderr, "usage: p2p_bench [-t lat|bw|bibw] [-b heap|stack|heap+8] [-s MIN]"
                " [-S MAX] [-z S1,S2,...] [-i ITERS] [-q]\n");
}

static int is_pow2(long n)
{
    return n == 0 || (n > 0 && (n & (n - 1)) == 0);
}

static long next_size(long s)
{
    return s ? 2 * s : 1;
}

/* Options into the globals; 0 if they make no sense. */
static int parse(int argc, char **argv)
{
    int c;

    while ((c = getopt(argc, argv, "t:b:s:S:z:i:q")) != -1) {
        switch (c) {
        case 't': test = optarg; break;
        case 'b': buf = optarg; break;
        case 's': min_size = atol(optarg); break;
        case 'S': max_size = atol(optarg); break;
        case 'z':
            for (char *tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
                if (n_sizes == MAX_SIZES || atol(tok) < 0 || atol(tok) > (1L << 30))
                    return 0;
                sizes[n_sizes++] = atol(tok);
            }
            break;
        case 'i': iters_opt = atoi(optarg); break;
        case 'q': quick = 1; break;
        default: return 0;
        }
    }
    if (strcmp(test, "lat") && strcmp(test, "bw") && strcmp(test, "bibw"))
        return 0;
    if (strcmp(buf, "heap") && strcmp(buf, "stack") && strcmp(buf, "heap+8"))
        return 0;
    if (n_sizes > 0) {
        max_size = 0;
        for (int k = 0; k < n_sizes; k++)
            max_size = sizes[k] > max_size ? sizes[k] : max_size;
        return 1;
    }
    if (min_size < 0)
        min_size = strcmp(test, "lat") ? 65536 : 0;
    if (max_size < 0)
        max_size = strcmp(test, "lat") ? 64L << 20 : 65536;
    if (!(is_pow2(min_size) && is_pow2(max_size) && min_size <= max_size &&
          max_size <= (1L << 30)))
        return 0;
    for (long size = min_size; size <= max_size; size = next_size(size))
        sizes[n_sizes++] = size;
    return 1;
}

/* Is the stack limit enough for BYTES of buffers on main's stack?  Rank 0 says why not. */
static int stack_fits(long bytes)
{
    struct rlimit rl;
    long need = bytes + STACK_SPARE;

    if (getrlimit(RLIMIT_STACK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        (long) rl.rlim_cur >= need)
        return 1;
    if (rank == 0)
        fprintf(stderr, "p2p_bench: -b stack with sizes up to %ld bytes needs a stack of at"
                " least %ld KiB (ulimit -s %ld); the limit is %ld KiB\n", max_size,
                need >> 10, need >> 10, (long) (rl.rlim_cur >> 10));
    return 0;
}

/* Write every page, from the top down (a stack grows down), then clear. */
static void touch(char *p, size_t n)
{
    for (size_t i = n; i >= PAGE; i -= PAGE)
        p[i - 1] = 1;
    memset(p, 0, n);
}

/* The bytes rank FROM sends, so that the receiver can check them. */
static char pattern(long i, int from)
{
    return (char) (i % 251 + 17 * from);
}

static int lat_iters(long size)
{
    int n = size <= LAT_FULL ? LAT_ITERS : (int) (LAT_ITERS * (long) LAT_FULL / size);

    if (iters_opt > 0)
        return iters_opt;
    if (quick)
        n /= 8;
    return n < 100 ? 100 : n;
}

static int bw_window(long size)
{
    long w = IN_FLIGHT / (size ? size : 1);

    return w > WINDOW ? WINDOW : w < 2 ? 2 : (int) w;
}

static int bw_iters(long size, int window)
{
    long n = (quick ? BW_BYTES / 8 : BW_BYTES) / (size * window);
    long most = quick ? BW_WINDOWS / 8 : BW_WINDOWS;

    if (iters_opt > 0)
        return iters_opt;
    return n < 3 ? 3 : n > most ? (int) most : (int) n;
}

/* One-way latency in microseconds: ping-pong, round trip / 2. */
static double lat(char *s, char *r, long size)
{
    int iters = lat_iters(size), warm = iters / 10 + 10, peer = 1 - rank;
    double t0 = 0;

    MPI_Barrier(pair);
    for (int i = 0; i < warm + iters; i++) {
        if (i == warm)
            t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(s, (int) size, MPI_CHAR, peer, 1, pair);
            MPI_Recv(r, (int) size, MPI_CHAR, peer, 1, pair, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(r, (int) size, MPI_CHAR, peer, 1, pair, MPI_STATUS_IGNORE);
            MPI_Send(s, (int) size, MPI_CHAR, peer, 1, pair);
        }
    }
    return (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
}

/* One window: rank 0 sends, rank 1 receives and acknowledges. */
static void bw_window_once(char *s, char *r, long size, int window)
{
    MPI_Request req[WINDOW];
    MPI_Status st[WINDOW];
    char ack[4] = { 0 };

    for (int w = 0; w < window; w++) {
        if (rank == 0)
            MPI_Isend(s, (int) size, MPI_CHAR, 1, 100, pair, &req[w]);
        else
            MPI_Irecv(r, (int) size, MPI_CHAR, 0, 100, pair, &req[w]);
    }
    MPI_Waitall(window, req, st);
    if (rank == 0)
        MPI_Recv(ack, 4, MPI_CHAR, 1, 101, pair, MPI_STATUS_IGNORE);
    else
        MPI_Send(ack, 4, MPI_CHAR, 0, 101, pair);
}

/* One window each way at once. */
static void bibw_window_once(char *s, char *r, long size, int window)
{
    MPI_Request req[2 * WINDOW];
    MPI_Status st[2 * WINDOW];
    int peer = 1 - rank;

    for (int w = 0; w < window; w++)
        MPI_Irecv(r, (int) size, MPI_CHAR, peer, 100, pair, &req[w]);
    for (int w = 0; w < window; w++)
        MPI_Isend(s, (int) size, MPI_CHAR, peer, 100, pair, &req[window + w]);
    MPI_Waitall(2 * window, req, st);
}

/* MB/s (1e6 bytes/s) of bw or bibw at one size. */
static double bw(char *s, char *r, long size, int bidir)
{
    int window = bw_window(size), iters = bw_iters(size, window), warm = iters / 10 + 1;
    double t0 = 0, bytes = (double) size * window * iters * (bidir ? 2 : 1);

    MPI_Barrier(pair);
    for (int i = 0; i < warm + iters; i++) {
        if (i == warm)
            t0 = MPI_Wtime();
        if (bidir)
            bibw_window_once(s, r, size, window);
        else
            bw_window_once(s, r, size, window);
    }
    return bytes / (MPI_Wtime() - t0) / 1e6;
}

/* Did the last (largest) message arrive intact?  The ranks that received one check it. */
static int delivered(const char *r)
{
    if (max_size == 0 || (strcmp(test, "bw") == 0 && rank == 0))
        return 1;
    for (long i = 0; i < max_size; i++)
        if (r[i] != pattern(i, 1 - rank)) {
            fprintf(stderr, "p2p_bench: rank %d: byte %ld of the received data is wrong\n",
                    rank, i);
            return 0;
        }
    return 1;
}

static void run(char *s, char *r)
{
    /* Right after start-up, the launcher's processes still share the two cores with us for
     * a while: the first size measured came out slow for every MPI and test.  A quarter of
     * a second of ping-pong first (untimed) lets them settle. */
    if (!quick) {
        double t0 = MPI_Wtime(), elapsed = 0;
        while (elapsed < 0.25) {
            lat(s, r, 0);
            if (rank == 0)
                elapsed = MPI_Wtime() - t0;
            MPI_Bcast(&elapsed, 1, MPI_DOUBLE, 0, pair);
        }
    }
    for (int k = 0; k < n_sizes; k++) {
        long size = sizes[k];
        double v = strcmp(test, "lat") == 0 ? lat(s, r, size) :
            bw(s, r, size, strcmp(test, "bibw") == 0);

        if (rank == 0) {
            printf("test=%s buf=%s size=%ld value=%.3f\n", test, buf, size, v);
            fflush(stdout);
        }
    }
}

/* Is NAME one of ch3:smheap's path counters: a message counter (smheap_..._msgs),
 * smheap_copy_detours (bulk copies that avoided glibc's memcpy, see smheap_copy.h),
 * smheap_sleeps (waits that went to sleep), smheap_ring_slow_spells, or a counter of the
 * path between nodes (smheap_net_...: RDMA reads, registrations)? */
static int smheap_path_counter(const char *name)
{
    size_t n = strlen(name);

    return strncmp(name, "smheap_", 7) == 0 &&
        ((n > 12 && strcmp(name + n - 5, "_msgs") == 0) ||
         strcmp(name, "smheap_copy_detours") == 0 || strcmp(name, "smheap_sleeps") == 0 ||
         strcmp(name, "smheap_ring_lines") == 0 ||
         strcmp(name, "smheap_ring_slow_spells") == 0 || strncmp(name, "smheap_net_", 11) == 0);
}

/* This rank's path counters (continuous, unsigned long long), in index order:
 * their names into NAMES, values into V; returns how many (at most MAX_COUNTERS). */
static int smheap_counters(char names[][256], unsigned long long *v)
{
    int n, found = 0;

    MPI_T_pvar_get_num(&n);
    for (int i = 0; i < n && found < MAX_COUNTERS; i++) {
        char desc[1024];
        int nlen = 256, dlen = sizeof(desc), verb, cls, bind, ro, cont, atomic, count;
        MPI_Datatype dt;
        MPI_T_enum en;
        MPI_T_pvar_session ses;
        MPI_T_pvar_handle h;

        if (MPI_T_pvar_get_info(i, names[found], &nlen, &verb, &cls, &dt, &en, desc, &dlen,
                                &bind, &ro, &cont, &atomic) != MPI_SUCCESS ||
            !smheap_path_counter(names[found]) || dt != MPI_UNSIGNED_LONG_LONG || !cont)
            continue;
        MPI_T_pvar_session_create(&ses);
        MPI_T_pvar_handle_alloc(ses, i, NULL, &h, &count);
        MPI_T_pvar_read(ses, h, &v[found]);
        MPI_T_pvar_handle_free(ses, &h);
        MPI_T_pvar_session_free(&ses);
        found++;
    }
    return found;
}

/* ch3:smheap's message counters (smheap_single_copy_msgs, smheap_rndv_copy_msgs, ...:
 * which path the messages took), summed over both ranks; nothing if the MPI has none. */
static void print_pvars(void)
{
    char names[MAX_COUNTERS][256];
    unsigned long long v[MAX_COUNTERS], sum[MAX_COUNTERS];
    int prov, n = 0, nmin, nmax;

    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &prov) == MPI_SUCCESS)
        n = smheap_counters(names, v);
    MPI_Allreduce(&n, &nmin, 1, MPI_INT, MPI_MIN, pair);
    MPI_Allreduce(&n, &nmax, 1, MPI_INT, MPI_MAX, pair);
    if (nmin == nmax && n > 0) {
        MPI_Reduce(v, sum, n, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, pair);
        for (int k = 0; k < n && rank == 0; k++)
            printf("pvar %s=%llu\n", names[k], sum[k]);
    }
    MPI_T_finalize();
}

static void print_library(void)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;

    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n")] = '\0';
    printf("# test=%s buf=%s library=%s\n", test, buf, lib);
}

/* A rank beyond the pair: wait for rank 0's word that the pair is done, without spinning. */
static void stand_by(void)
{
    MPI_Request req;
    int done = 0;
    struct timespec ms = { 0, 1000000 };

    MPI_Irecv(NULL, 0, MPI_CHAR, 0, DONE_TAG, MPI_COMM_WORLD, &req);
    for (MPI_Test(&req, &done, MPI_STATUS_IGNORE); !done;
         MPI_Test(&req, &done, MPI_STATUS_IGNORE))
        nanosleep(&ms, NULL);
}

int main(int argc, char **argv)
{
    int nranks, ok, all_ok;
    long bufsz;
    char *s = NULL, *r = NULL;
    long shift;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    ok = parse(argc, argv);
    if (!ok)
        usage();
    else if (nranks < 2 && rank == 0)
        fprintf(stderr, "p2p_bench: needs at least 2 ranks, has %d\n", nranks);
    shift = strcmp(buf, "heap+8") ? 0 : RECV_SHIFT;
    bufsz = (max_size + PAGE - 1) / PAGE * PAGE;
    if (bufsz == 0)
        bufsz = PAGE;
    ok = ok && nranks >= 2 && (rank >= 2 || strcmp(buf, "stack") ||
                               stack_fits(2 * bufsz + PAGE));
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        MPI_Finalize();
        return 1;
    }
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : 1, rank, &pair);
    if (rank >= 2) {
        stand_by();
        MPI_Comm_free(&pair);
        MPI_Finalize();
        return 0;
    }

    /* The stack buffers live in main's frame for the whole run. */
    char stack_area[strcmp(buf, "stack") ? 1 : 2 * bufsz + PAGE];

    if (strcmp(buf, "stack") == 0) {
        s = stack_area + (PAGE - (long) ((size_t) stack_area % PAGE)) % PAGE;
        r = s + bufsz;
    } else if (posix_memalign((void **) &s, PAGE, (size_t) bufsz) ||
               posix_memalign((void **) &r, PAGE, (size_t) (bufsz + shift))) {
        fprintf(stderr, "p2p_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    } else {
        r += shift;
    }
    touch(s, (size_t) bufsz);
    touch(r, (size_t) bufsz);
    for (long i = 0; i < max_size; i++)
        s[i] = pattern(i, rank);
    if (rank == 0)
        print_library();
    run(s, r);
    ok = delivered(r);
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, pair);
    print_pvars();
    if (rank == 0)
        for (int i = 2; i < nranks; i++)
            MPI_Send(NULL, 0, MPI_CHAR, i, DONE_TAG, MPI_COMM_WORLD);
    if (strcmp(buf, "stack")) {
        free(s);
        free(r - shift);
    }
    MPI_Comm_free(&pair);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}

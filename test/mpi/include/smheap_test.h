/* Helpers for the project's MPI tests: MPI_T access to the channel's variables, and the
 * usual MPICH test ending (sum the errors, rank 0 prints " No Errors"). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline int pvar_index(const char *want)
{
    int n = 0;          /* stays 0 if MPI_T_init_thread was not called */

    MPI_T_pvar_get_num(&n);
    for (int i = 0; i < n; i++) {
        char name[256], desc[1024];
        int nlen = sizeof(name), dlen = sizeof(desc), verb, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;

        MPI_T_pvar_get_info(i, name, &nlen, &verb, &cls, &dt, &en, desc, &dlen, &bind, &ro,
                            &cont, &atomic);
        if (strcmp(name, want) == 0)
            return i;
    }
    return -1;
}

/* The value of a continuous pvar, or ~0 if it does not exist. */
static inline unsigned long long pvar_value(const char *name)
{
    unsigned long long v = ~0ULL;
    int idx = pvar_index(name), count;
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;

    if (idx < 0)
        return v;
    MPI_T_pvar_session_create(&s);
    MPI_T_pvar_handle_alloc(s, idx, NULL, &h, &count);
    MPI_T_pvar_read(s, h, &v);
    MPI_T_pvar_handle_free(s, &h);
    MPI_T_pvar_session_free(&s);
    return v;
}

/* A buffer's contents as a function of a seed, to tell messages and their bytes apart. */
static inline void fill_pattern(char *p, int n, int seed)
{
    for (int i = 0; i < n; i++)
        p[i] = (char) (seed * 7 + i % 251);
}

/* 0 if p holds fill_pattern(seed)'s n bytes; else 1, saying where it differs. */
static inline int check_pattern(const char *p, int n, int seed, const char *what)
{
    for (int i = 0; i < n; i++)
        if (p[i] != (char) (seed * 7 + i % 251)) {
            printf("%s (seed %d): byte %d of %d differs\n", what, seed, i, n);
            return 1;
        }
    return 0;
}

/* Rank 0 sends n bytes made from seed to rank 1 (tag; synchronously if sync), which checks
 * them and replies with bytes made from seed + 1 (tag + 1), which rank 0 checks.  Returns
 * the number of mismatches. */
static inline int round_trip_checked(int rank, char *buf, int n, int seed, int tag, int sync,
                                     const char *what)
{
    int errs = 0;

    if (rank == 0) {
        fill_pattern(buf, n, seed);
        if (sync)
            MPI_Ssend(buf, n, MPI_CHAR, 1, tag, MPI_COMM_WORLD);
        else
            MPI_Send(buf, n, MPI_CHAR, 1, tag, MPI_COMM_WORLD);
        memset(buf, 0, n);
        MPI_Recv(buf, n, MPI_CHAR, 1, tag + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        errs += check_pattern(buf, n, seed + 1, what);
    } else if (rank == 1) {
        memset(buf, 0, n);
        MPI_Recv(buf, n, MPI_CHAR, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        errs += check_pattern(buf, n, seed, what);
        fill_pattern(buf, n, seed + 1);
        MPI_Send(buf, n, MPI_CHAR, 0, tag + 1, MPI_COMM_WORLD);
    }
    return errs;
}

/* Rank 0 sends count messages of n bytes (made from seed, seed + 1, ...) to rank 1 without
 * waiting; rank 1 receives them only once all were sent (unexpected ones), checking each. */
static inline int stream_unexpected(int rank, int n, int count, int seed, int tag,
                                    const char *what)
{
    int errs = 0;
    char *bufs = (char *) malloc((size_t) count * n);
    MPI_Request *reqs = (MPI_Request *) malloc(count * sizeof(MPI_Request));

    if (rank == 0) {
        for (int i = 0; i < count; i++) {
            fill_pattern(bufs + (size_t) i * n, n, seed + i);
            MPI_Isend(bufs + (size_t) i * n, n, MPI_CHAR, 1, tag, MPI_COMM_WORLD, &reqs[i]);
        }
        MPI_Waitall(count, reqs, MPI_STATUSES_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);    /* every message is sent before we receive */
        for (int i = 0; rank == 1 && i < count; i++) {
            memset(bufs, 0, n);
            MPI_Recv(bufs, n, MPI_CHAR, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            errs += check_pattern(bufs, n, seed + i, what);
        }
    }
    free(bufs);
    free(reqs);
    return errs;
}

/* Every other rank sends per messages of n bytes to rank 0, which receives them from
 * MPI_ANY_SOURCE and checks each sender's come in order.  With reply_every > 0, rank 0
 * answers every reply_every-th message of each sender (tag + 1), which waits for it. */
static inline int any_source_checked(int rank, int size, char *buf, int n, int per, int tag,
                                     int reply_every)
{
    int errs = 0;

    if (rank == 0) {
        int *next = (int *) calloc(size, sizeof(int));
        MPI_Status st;

        for (int i = 0; i < per * (size - 1); i++) {
            MPI_Recv(buf, n, MPI_CHAR, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st);
            errs += check_pattern(buf, n, st.MPI_SOURCE * 1000 + next[st.MPI_SOURCE],
                                  "any source");
            if (reply_every > 0 && next[st.MPI_SOURCE] % reply_every == 0)
                MPI_Send(buf, 0, MPI_CHAR, st.MPI_SOURCE, tag + 1, MPI_COMM_WORLD);
            next[st.MPI_SOURCE]++;
        }
        free(next);
    } else {
        for (int i = 0; i < per; i++) {
            fill_pattern(buf, n, rank * 1000 + i);
            MPI_Send(buf, n, MPI_CHAR, 0, tag, MPI_COMM_WORLD);
            if (reply_every > 0 && i % reply_every == 0)
                MPI_Recv(buf, 0, MPI_CHAR, 0, tag + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    return errs;
}

/* This rank and peer send each other n bytes at once, out filled with fill_pattern(seed +
 * rank) and received into in; 0 if in then holds the peer's pattern, else 1. */
static inline int exchange_both_ways(char *out, char *in, int n, int rank, int peer, int tag,
                                     int seed)
{
    MPI_Request req[2];
    MPI_Status st[2];

    fill_pattern(out, n, seed + rank);
    memset(in, 0, n);
    MPI_Irecv(in, n, MPI_CHAR, peer, tag, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(out, n, MPI_CHAR, peer, tag, MPI_COMM_WORLD, &req[1]);
    MPI_Waitall(2, req, st);
    return check_pattern(in, n, seed + peer, "both ways");
}

/* inout = in x inout for 2x2 integer matrices (row-major): a non-commutative MPI_Op, whose
 * result shows whether a reduction kept rank order. */
static inline void smheap_test_matmul(void *in, void *inout, int *len, MPI_Datatype * dt)
{
    (void) dt;
    for (int k = 0; k < *len; k++) {
        int *a = (int *) in + 4 * k, *b = (int *) inout + 4 * k, c[4];
        c[0] = a[0] * b[0] + a[1] * b[2];
        c[1] = a[0] * b[1] + a[1] * b[3];
        c[2] = a[2] * b[0] + a[3] * b[2];
        c[3] = a[2] * b[1] + a[3] * b[3];
        memcpy(b, c, sizeof(c));
    }
}

/* Does [p, p+len) lie in this job's shared heap?  The heap is a mapping of a file named
 * /dev/shm/smheap-<job> (unlinked once every rank has opened it); read the mappings. */
static inline int in_shared_heap(const void *p, size_t len)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    int yes = 0;

    if (maps == NULL)
        return 0;
    while (!yes && fgets(line, sizeof(line), maps)) {
        unsigned long lo, hi;

        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && strstr(line, "/smheap-") &&
            (unsigned long) p >= lo && (unsigned long) p + len <= hi)
            yes = 1;
    }
    fclose(maps);
    return yes;
}

/* The processor (host) name of every rank of comm, in rank order (free() it): each
 * simulated node of maint/nodes has its own. */
static inline char (*host_names(MPI_Comm comm))[MPI_MAX_PROCESSOR_NAME]
{
    char name[MPI_MAX_PROCESSOR_NAME] = "";
    int len, size;

    MPI_Comm_size(comm, &size);
    MPI_Get_processor_name(name, &len);
    char (*all)[MPI_MAX_PROCESSOR_NAME] =
        (char (*)[MPI_MAX_PROCESSOR_NAME]) calloc(size, sizeof(*all));
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME,
                  MPI_CHAR, comm);
    return all;
}

/* The ranks of comm that run on this rank's node as the launcher placed them, in a new
 * communicator.  The shared heap, rings and shared-heap collectives are per node. */
static inline MPI_Comm comm_of_my_host(MPI_Comm comm)
{
    char (*all)[MPI_MAX_PROCESSOR_NAME] = host_names(comm);
    int rank, color = 0;
    MPI_Comm host;

    MPI_Comm_rank(comm, &rank);
    while (strcmp(all[color], all[rank]) != 0)
        color++;        /* the first rank with this name */
    free(all);
    MPI_Comm_split(comm, color, rank, &host);
    return host;
}

/* Do ranks a and b of comm run on one node?  Collective over comm. */
static inline int same_node(MPI_Comm comm, int a, int b)
{
    char (*all)[MPI_MAX_PROCESSOR_NAME] = host_names(comm);
    int same = strcmp(all[a], all[b]) == 0;

    free(all);
    return same;
}

/* Does comm span more than one node? */
static inline int spans_nodes(MPI_Comm comm)
{
    MPI_Comm host = comm_of_my_host(comm);
    int size, host_size, local_all, all;

    MPI_Comm_size(comm, &size);
    MPI_Comm_size(host, &host_size);
    local_all = host_size == size;
    MPI_Allreduce(&local_all, &all, 1, MPI_INT, MPI_LAND, comm);
    MPI_Comm_free(&host);
    return !all;
}

/* An integer or boolean CVAR as MPICH read it, or -1 if there is no such CVAR. */
static inline int cvar_int(const char *name)
{
    int idx, count, v = -1;
    MPI_T_cvar_handle h;

    if (MPI_T_cvar_get_index(name, &idx) != MPI_SUCCESS)
        return -1;
    MPI_T_cvar_handle_alloc(idx, NULL, &h, &count);
    MPI_T_cvar_read(h, &v);
    MPI_T_cvar_handle_free(&h);
    return v;
}

/* MPIR_CVAR_CH3_SMHEAP_ENABLE as MPICH read it. */
static inline int heap_enabled(void)
{
    return cvar_int("MPIR_CVAR_CH3_SMHEAP_ENABLE");
}

/* Sum the errors of every rank; rank 0 prints what runtests expects. */
/* The ranks that share this node's heap (all of them unless the job spans nodes), and
 * whether the shared-heap collectives answer on them (one Barrier counted in
 * smheap_coll_shared; never on a communicator of one rank).  MPI_T must be initialised. */
static inline int node_comm_coll_on(MPI_Comm * comm, int *rank, int *size)
{
    unsigned long long shared;

    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, comm);
    MPI_Comm_rank(*comm, rank);
    MPI_Comm_size(*comm, size);
    shared = pvar_value("smheap_coll_shared");
    MPI_Barrier(*comm);
    return *size > 1 && pvar_value("smheap_coll_shared") == shared + 1;
}

static inline void smheap_test_report(int errs)
{
    int rank, total;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf(total ? "Found %d errors\n" : " No Errors\n", total);
}

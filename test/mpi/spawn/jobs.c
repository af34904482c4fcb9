/* Messages between jobs go through links (link/smheap_link.c) to processes on the same node and
 * through sockets (net/smheap_net_sock.c) to processes on other nodes, never through the node segment
 * or the shared heap, and links leave nothing behind:
 *   - the parents spawn NCHILD children; every parent rank sends to every child rank and
 *     back (VCs of another job's group, each connected at its first message) 100 B, 4 KiB
 *     of static data and 4 MiB of heap data (ch3's rendezvous), and checks every byte; no
 *     message between the jobs goes single-copy; every process opened and accepted a link
 *     for each process of the other job on its host, and sent through sockets exactly when
 *     some are on other hosts (MPI_T counters);
 *   - the merged intracommunicator spans both jobs: Allreduce, a 1 MiB Bcast from a child
 *     and Allgather are right and do not use the shared-heap collectives;
 *   - after MPI_Comm_disconnect no link segment stays mapped, in either job;
 *   - then CYCLES times: the children connect to a port the parents opened (on another
 *     node, through the listener the port names), the same exchange, disconnect (so the
 *     VCs are closed and made anew each time, and every connection starts from nothing);
 *     again nothing stays mapped after each. */
#include <stdlib.h>
#include <string.h>
#include "../include/smheap_test.h"

#define NCHILD 2
#define CYCLES 5
#define BIG (4 << 20)
#define MEDIUM (64 * 1024)

static char static_buf[MEDIUM];

/* Link segments this process maps now (memfds named smheap-link). */
static int mapped_links(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int n = 0;

    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (strstr(line, "memfd:smheap-link"))
            n++;
    fclose(f);
    return n;
}

/* Send to every remote rank and receive from every remote rank: the three sizes. */
static int exchange(MPI_Comm inter, int seed_base)
{
    int rank, rsize, errs = 0;
    MPI_Request reqs[3 * 16];
    char *heap_send, *heap_recv, *small_send, *small_recv, *static_send;
    static char static_recv[MEDIUM];

    MPI_Comm_rank(inter, &rank);
    MPI_Comm_remote_size(inter, &rsize);
    small_send = malloc(100 * rsize);
    if (rsize > 16)
        MPI_Abort(MPI_COMM_WORLD, 1);
    static_send = static_buf;
    heap_send = malloc((size_t) BIG * rsize);
    small_recv = malloc(100);
    heap_recv = malloc(BIG);
    for (int r = 0; r < rsize; r++) {
        int seed = seed_base + rank * 16 + r;
        fill_pattern(small_send + 100 * r, 100, seed);
        fill_pattern(static_send + MEDIUM / 16 * r, MEDIUM / 16, seed + 1);
        fill_pattern(heap_send + (size_t) BIG * r, BIG, seed + 2);
        MPI_Isend(small_send + 100 * r, 100, MPI_CHAR, r, 1, inter, &reqs[3 * r]);
        MPI_Isend(static_send + MEDIUM / 16 * r, MEDIUM / 16, MPI_CHAR, r, 2, inter,
                  &reqs[3 * r + 1]);
        MPI_Isend(heap_send + (size_t) BIG * r, BIG, MPI_CHAR, r, 3, inter, &reqs[3 * r + 2]);
    }
    for (int r = 0; r < rsize; r++) {
        int seed = seed_base + r * 16 + rank;
        MPI_Recv(small_recv, 100, MPI_CHAR, r, 1, inter, MPI_STATUS_IGNORE);
        errs += check_pattern(small_recv, 100, seed, "100 B");
        MPI_Recv(static_recv, MEDIUM / 16, MPI_CHAR, r, 2, inter, MPI_STATUS_IGNORE);
        errs += check_pattern(static_recv, MEDIUM / 16, seed + 1, "4 KiB static");
        MPI_Recv(heap_recv, BIG, MPI_CHAR, r, 3, inter, MPI_STATUS_IGNORE);
        errs += check_pattern(heap_recv, BIG, seed + 2, "4 MiB heap");
    }
    MPI_Waitall(3 * rsize, reqs, MPI_STATUSES_IGNORE);
    free(small_send);
    free(small_recv);
    free(heap_send);
    free(heap_recv);
    return errs;
}

/* How many processes of the other job run on this process's host. */
static int peers_on_my_host(MPI_Comm inter)
{
    char name[MPI_MAX_PROCESSOR_NAME] = "";
    int len, rsize, n = 0;

    MPI_Get_processor_name(name, &len);
    MPI_Comm_remote_size(inter, &rsize);
    char (*all)[MPI_MAX_PROCESSOR_NAME] = calloc(rsize, sizeof(*all));
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME,
                  MPI_CHAR, inter);
    for (int r = 0; r < rsize; r++)
        n += strcmp(all[r], name) == 0;
    free(all);
    return n;
}

/* The first exchange took links to the other job's processes on our host and sockets to
 * the others. */
static int paths_by_host(int rsize, int local, unsigned long long remote_msgs)
{
    unsigned long long sent_remote = pvar_value("smheap_remote_msgs") - remote_msgs;
    int errs = 0;

    /* our outbox to each process on our host, and its outbox to us */
    if (pvar_value("smheap_links_opened") < (unsigned long long) local ||
        pvar_value("smheap_links_accepted") < (unsigned long long) local) {
        fprintf(stderr, "links opened %llu, accepted %llu; expected at least %d each\n",
                pvar_value("smheap_links_opened"), pvar_value("smheap_links_accepted"), local);
        errs++;
    }
    if (mapped_links() < local) {
        fprintf(stderr, "only %d link segments mapped while connected to %d processes here\n",
                mapped_links(), local);
        errs++;
    }
    /* three messages to every process elsewhere, none through a socket otherwise */
    if (local < rsize ? sent_remote < 3ULL * (rsize - local) : sent_remote != 0) {
        fprintf(stderr, "%llu messages through sockets to %d processes on other hosts\n",
                sent_remote, rsize - local);
        errs++;
    }
    return errs;
}

/* Collectives on the intracommunicator of both jobs. */
static int merged_collectives(MPI_Comm inter, int is_child)
{
    MPI_Comm merged;
    int rank, size, errs = 0, sum, *all;
    char *buf = malloc(1 << 20);
    unsigned long long shared_before;

    /* (the merge itself runs collectives within each job) */
    MPI_Intercomm_merge(inter, is_child, &merged);
    shared_before = pvar_value("smheap_coll_shared");
    MPI_Comm_rank(merged, &rank);
    MPI_Comm_size(merged, &size);

    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, merged);
    if (sum != size * (size - 1) / 2) {
        fprintf(stderr, "Allreduce over both jobs: %d, not %d\n", sum, size * (size - 1) / 2);
        errs++;
    }
    if (rank == size - 1)       /* a child */
        fill_pattern(buf, 1 << 20, 99);
    MPI_Bcast(buf, 1 << 20, MPI_CHAR, size - 1, merged);
    errs += check_pattern(buf, 1 << 20, 99, "Bcast over both jobs");
    all = malloc(size * sizeof(int));
    MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, merged);
    for (int i = 0; i < size; i++)
        if (all[i] != i) {
            fprintf(stderr, "Allgather over both jobs: [%d] = %d\n", i, all[i]);
            errs++;
        }
    if (pvar_value("smheap_coll_shared") != shared_before) {
        fprintf(stderr, "a communicator spanning two jobs used the shared-heap collectives\n");
        errs++;
    }
    MPI_Comm_free(&merged);
    free(all);
    free(buf);
    return errs;
}

/* After a disconnect the close protocol may still be finishing, and the links go at the
 * progress after that: drive progress (locally) until they are gone, for at most 10 s. */
static int no_links_left(const char *when)
{
    double t0 = MPI_Wtime();
    int n, flag;

    while ((n = mapped_links()) != 0 && MPI_Wtime() - t0 < 10.0)
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);
    if (n != 0) {
        fprintf(stderr, "%s: %d link segments still mapped\n", when, n);
        return 1;
    }
    return 0;
}

static int connect_cycles(const char *port, int is_child)
{
    int errs = 0;

    for (int c = 0; c < CYCLES; c++) {
        MPI_Comm conn;

        if (is_child)
            MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &conn);
        else
            MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &conn);
        errs += exchange(conn, 1000 + c);
        MPI_Comm_disconnect(&conn);
        errs += no_links_left("after a connect/accept cycle");
    }
    return errs;
}

int main(int argc, char **argv)
{
    MPI_Comm parent, inter;
    int errs = 0, prov, is_child, wrank, wsize, rsize, local;
    char port[MPI_MAX_PORT_NAME] = "";
    unsigned long long single_before, shared_before, remote_before;

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Comm_get_parent(&parent);
    is_child = parent != MPI_COMM_NULL;
    if (is_child)
        inter = parent;
    else
        MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, NCHILD, MPI_INFO_NULL, 0, MPI_COMM_WORLD,
                       &inter, MPI_ERRCODES_IGNORE);
    MPI_Comm_remote_size(inter, &rsize);
    local = peers_on_my_host(inter);

    single_before = pvar_value("smheap_single_copy_msgs");
    shared_before = pvar_value("smheap_shared_copy_msgs");
    remote_before = pvar_value("smheap_remote_msgs");
    errs += exchange(inter, 0);
    if (pvar_value("smheap_single_copy_msgs") != single_before ||
        pvar_value("smheap_shared_copy_msgs") != shared_before) {
        fprintf(stderr, "a message to another job went single-copy\n");
        errs++;
    }
    errs += paths_by_host(rsize, local, remote_before);
    errs += merged_collectives(inter, is_child);

    /* the parents' port, for the cycles */
    if (!is_child && wrank == 0)
        MPI_Open_port(MPI_INFO_NULL, port);
    if (wrank == 0) {
        if (is_child)
            MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 9, inter, MPI_STATUS_IGNORE);
        else
            MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 9, inter);
    }
    MPI_Comm_disconnect(&inter);
    errs += no_links_left("after disconnecting from the other job");

    errs += connect_cycles(port, is_child);
    if (!is_child && wrank == 0)
        MPI_Close_port(port);

    MPI_T_finalize();
    if (is_child) {
        /* the parents count the children's errors too */
        int total;
        MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        if (wrank == 0 && total)
            printf("Found %d errors in the spawned job\n", total);
        MPI_Finalize();
        return 0;
    }
    smheap_test_report(errs);
    MPI_Finalize();
    return 0;
}

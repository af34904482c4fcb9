/* Point-to-point in a job that may span nodes: every rank sends every other rank messages
 * of every size class (0 B to 4 MiB) from heap and static buffers, received posted and
 * unexpected, by name and with MPI_ANY_SOURCE (so one receive matches local and remote
 * senders alike), and checks every byte and status.  Then the MPI_T counters say which
 * path the messages took: through sockets (smheap_remote_msgs) exactly when a peer sits on
 * another node (by processor name: maint/nodes gives each simulated node its own), and
 * single-copy between ranks of one node all the same. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "../include/smheap_test.h"

#define NSIZES 7
static const int sizes[NSIZES] = { 0, 8, 1000, 64 * 1024, 200 * 1024, 1 << 20, 4 << 20 };

#define MAXSIZE (4 << 20)
static char static_buf[MAXSIZE];

static char fill_byte(int from, int to, int s, int i)
{
    return (char) (from * 7 + to * 13 + s * 3 + i % 251);
}

static int check(const char *buf, int from, int to, int s, int n)
{
    for (int i = 0; i < n; i++)
        if (buf[i] != fill_byte(from, to, s, i))
            return i;
    return -1;
}

/* One round: every rank sends each size to every other rank; `any` receives with
 * MPI_ANY_SOURCE; `heap` picks the buffers (malloc, or mmap and static memory: outside the
 * heap).  Sends are nonblocking, so receives may find
 * messages posted or unexpected. */
static int round_trip(int rank, int size, int heap, int any, int late)
{
    int errs = 0;

    for (int s = 0; s < NSIZES; s++) {
        int n = sizes[s];
        char **out = malloc(size * sizeof(char *));
        MPI_Request *reqs = malloc(size * sizeof(MPI_Request));
        char *in = heap ? malloc(n + 1) : static_buf;

        for (int p = 0; p < size; p++) {
            reqs[p] = MPI_REQUEST_NULL;
            out[p] = NULL;
            if (p == rank)
                continue;
            out[p] = heap ? malloc(n + 1) : mmap(NULL, n + 1, PROT_READ | PROT_WRITE,
                                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            for (int i = 0; i < n; i++)
                out[p][i] = fill_byte(rank, p, s, i);
            MPI_Isend(out[p], n, MPI_CHAR, p, s, MPI_COMM_WORLD, &reqs[p]);
        }
        if (late)
            MPI_Barrier(MPI_COMM_WORLD);        /* the messages arrive before the receives */
        for (int k = 0; k < size - 1; k++) {
            MPI_Status st;
            int from = any ? MPI_ANY_SOURCE : (rank + 1 + k) % size, count, bad;

            MPI_Recv(in, n, MPI_CHAR, from, s, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_CHAR, &count);
            bad = check(in, st.MPI_SOURCE, rank, s, n);
            if (count != n || bad >= 0 || (!any && st.MPI_SOURCE != from)) {
                printf("rank %d: %d B from %d (heap %d, any %d, late %d): count %d, byte %d "
                       "wrong\n", rank, n, st.MPI_SOURCE, heap, any, late, count, bad);
                errs++;
            }
        }
        MPI_Waitall(size, reqs, MPI_STATUSES_IGNORE);
        for (int p = 0; p < size; p++)
            if (out[p] != NULL && heap)
                free(out[p]);
            else if (out[p] != NULL)
                munmap(out[p], n + 1);
        if (heap)
            free(in);
        free(out);
        free(reqs);
    }
    return errs;
}

int main(int argc, char **argv)
{
    int rank, size, prov, errs = 0, host_size;
    unsigned long long remote0, single0;

    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm host = comm_of_my_host(MPI_COMM_WORLD);
    MPI_Comm_size(host, &host_size);

    remote0 = pvar_value("smheap_remote_msgs");
    single0 = pvar_value("smheap_single_copy_msgs") + pvar_value("smheap_shared_copy_msgs");
    for (int heap = 0; heap < 2; heap++)
        for (int any = 0; any < 2; any++)
            for (int late = 0; late < 2; late++)
                errs += round_trip(rank, size, heap, any, late);

    /* the paths: sockets for peers on other nodes only; single-copy between heap
     * buffers of one node whenever the heap is shared */
    unsigned long long remote = pvar_value("smheap_remote_msgs") - remote0;
    unsigned long long single = pvar_value("smheap_single_copy_msgs") +
        pvar_value("smheap_shared_copy_msgs") - single0;
    if ((remote > 0) != (host_size < size)) {
        printf("rank %d: %llu packets over sockets, with %d of %d ranks on this node\n", rank,
               remote, host_size, size);
        errs++;
    }
    if (pvar_value("smheap_heap_shared") == 1 && host_size > 1 && single == 0) {
        printf("rank %d: no single-copy message to the %d other ranks of this node\n", rank,
               host_size - 1);
        errs++;
    }

    MPI_Comm_free(&host);
    smheap_test_report(errs);
    MPI_Finalize();
    MPI_T_finalize();
    return 0;
}

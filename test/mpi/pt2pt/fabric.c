/* Messages between nodes over libfabric (MPIR_CVAR_CH3_SMHEAP_NET=ofi): rank 0 sends a
 * rank on another node a stream of 4 MiB messages between heap buffers, then from and into
 * memory outside the heap, then into a strided receive; every byte is checked, and the
 * MPI_T counters say how the data moved:
 *   - heap to heap: one RDMA read per message, by the receiver, and no registration after
 *     MPI_Init (the heap was registered once, there);
 *   - from outside the heap: one registration per message, by the sender;
 *   - into a strided receive: a read per block.
 * With MPIR_CVAR_CH3_SMHEAP_OFI_REGISTER=message (what a provider that pins memory gets)
 * the heap is not registered and heap data is registered per message, as other data, and
 * the heap keeps its pages: with MPIR_CVAR_CH3_SMHEAP_RETAIN=0, a freed 16 MiB block stays
 * committed, where otherwise it goes back to /dev/shm at once.
 * On one node, or over sockets, nothing of libfabric is opened, and the counters say so. */
#include <stdlib.h>
#include <string.h>
#include "../include/smheap_test.h"

#define MIB (1 << 20)
#define LEN (4 * MIB)
#define STREAM 8
#define BLOCKS 4
#define GAP 4096

static char static_buf[LEN];

static int on_other_node(int peer)
{
    char mine[MPI_MAX_PROCESSOR_NAME], theirs[MPI_MAX_PROCESSOR_NAME];
    int len, rank;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Get_processor_name(mine, &len);
    if (rank == peer)
        memcpy(theirs, mine, sizeof(mine));
    MPI_Bcast(theirs, sizeof(theirs), MPI_CHAR, peer, MPI_COMM_WORLD);
    return strcmp(mine, theirs) != 0;
}

typedef struct counts {
    unsigned long long reads, read_bytes, read_msgs, regs, heap_regs;
} counts_t;

static counts_t read_counts(void)
{
    counts_t c;

    c.reads = pvar_value("smheap_net_ofi_reads");
    c.read_bytes = pvar_value("smheap_net_ofi_read_bytes");
    c.read_msgs = pvar_value("smheap_net_ofi_read_msgs");
    c.regs = pvar_value("smheap_net_registrations");
    c.heap_regs = pvar_value("smheap_net_heap_registrations");
    return c;
}

static int expect(const char *what, unsigned long long got, unsigned long long want)
{
    if (got == want)
        return 0;
    printf("%s: %llu, expected %llu\n", what, got, want);
    return 1;
}

static int env_is(const char *name, const char *value)
{
    const char *v = getenv(name);

    return v != NULL && strcmp(v, value) == 0;
}

/* A freed 16 MiB block leaves /dev/shm (kept: stays committed) with nothing retained. */
static int check_freed_pages(int kept)
{
    size_t len = 16 * MIB;
    char *block = malloc(len);
    unsigned long long before, after;
    MPI_Aint where;

    memset(block, 1, len);
    MPI_Get_address(block, &where);     /* the block escapes: the compiler keeps it */
    before = pvar_value("smheap_heap_bytes_committed");
    free(block);
    after = pvar_value("smheap_heap_bytes_committed");
    if (kept)
        return expect("bytes committed after a 16 MiB free, pages kept", after, before);
    if (before - after >= len)
        return 0;
    printf("bytes committed after a 16 MiB free: %llu -> %llu, expected %zu fewer\n",
           before, after, len);
    return 1;
}

int main(int argc, char **argv)
{
    int rank, size, provided, errs = 0, remote = -1;
    const char *net = getenv("MPIR_CVAR_CH3_SMHEAP_NET");
    unsigned long long ofi;
    int per_message = env_is("MPIR_CVAR_CH3_SMHEAP_OFI_REGISTER", "message");
    counts_t c0, c1;

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int p = 1; p < size; p++) {
        int other = on_other_node(p);

        MPI_Bcast(&other, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (other && remote < 0)
            remote = p;
    }
    ofi = pvar_value("smheap_net_ofi");
    if (remote < 0 || (net && strcmp(net, "sock") == 0))
        errs += expect("smheap_net_ofi (one node, or sockets)", ofi, 0);
    else if (net && strcmp(net, "ofi") == 0)
        errs += expect("smheap_net_ofi (MPIR_CVAR_CH3_SMHEAP_NET=ofi)", ofi, 1);
    per_message = per_message && ofi;
    errs += expect("smheap_net_heap_registrations", pvar_value("smheap_net_heap_registrations"),
                   ofi && !per_message ? 1 : 0);
    if (env_is("MPIR_CVAR_CH3_SMHEAP_RETAIN", "0"))
        errs += check_freed_pages(per_message);

    if (remote > 0 && (rank == 0 || rank == remote)) {
        int peer = rank == 0 ? remote : 0;
        char *bufs[STREAM], *strided = malloc((size_t) BLOCKS * (LEN / BLOCKS + GAP));
        MPI_Datatype vec;

        /* heap to heap */
        for (int i = 0; i < STREAM; i++) {
            bufs[i] = malloc(LEN);
            if (rank == 0)
                fill_pattern(bufs[i], LEN, i);
        }
        c0 = read_counts();
        for (int i = 0; i < STREAM; i++) {
            if (rank == 0)
                MPI_Send(bufs[i], LEN, MPI_CHAR, peer, i, MPI_COMM_WORLD);
            else
                MPI_Recv(bufs[i], LEN, MPI_CHAR, peer, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        c1 = read_counts();
        for (int i = 0; rank != 0 && i < STREAM; i++)
            errs += check_pattern(bufs[i], LEN, i, "heap to heap");
        if (ofi && rank == 0) {
            errs += expect("READ messages sent, heap to heap", c1.read_msgs - c0.read_msgs,
                           STREAM);
            errs += expect(per_message ? "registrations per message, heap to heap" :
                           "registrations after MPI_Init, heap to heap", c1.regs - c0.regs,
                           per_message ? STREAM : 0);
        } else if (ofi) {
            errs += expect("RDMA reads, heap to heap", c1.reads - c0.reads, STREAM);
            errs += expect("bytes read, heap to heap", c1.read_bytes - c0.read_bytes,
                           (unsigned long long) STREAM * LEN);
            errs += expect("registrations by the receiver", c1.regs - c0.regs, 0);
        }

        /* outside the heap, both ends */
        if (rank == 0)
            fill_pattern(static_buf, LEN, 100);
        c0 = read_counts();
        if (rank == 0)
            MPI_Send(static_buf, LEN, MPI_CHAR, peer, 100, MPI_COMM_WORLD);
        else
            MPI_Recv(static_buf, LEN, MPI_CHAR, peer, 100, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        c1 = read_counts();
        if (rank != 0)
            errs += check_pattern(static_buf, LEN, 100, "static to static");
        if (ofi && rank == 0)
            errs += expect("registrations of a static send buffer", c1.regs - c0.regs, 1);
        else if (ofi)
            errs += expect("RDMA reads into a static buffer", c1.reads - c0.reads, 1);

        /* into a strided receive: BLOCKS blocks with gaps between them */
        MPI_Type_vector(BLOCKS, LEN / BLOCKS, LEN / BLOCKS + GAP, MPI_CHAR, &vec);
        MPI_Type_commit(&vec);
        c0 = read_counts();
        if (rank == 0) {
            fill_pattern(bufs[0], LEN, 200);
            MPI_Send(bufs[0], LEN, MPI_CHAR, peer, 200, MPI_COMM_WORLD);
        } else {
            MPI_Recv(strided, 1, vec, peer, 200, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int b = 0; b < BLOCKS; b++)
                for (int i = 0; i < LEN / BLOCKS; i++)
                    if (strided[(size_t) b * (LEN / BLOCKS + GAP) + i] !=
                        (char) (200 * 7 + (b * (LEN / BLOCKS) + i) % 251)) {
                        printf("strided receive: block %d byte %d differs\n", b, i);
                        errs++;
                        break;
                    }
        }
        c1 = read_counts();
        if (ofi && rank != 0)
            errs += expect("RDMA reads into a strided receive", c1.reads - c0.reads, BLOCKS);
        MPI_Type_free(&vec);
        for (int i = 0; i < STREAM; i++)
            free(bufs[i]);
        free(strided);
    }

    smheap_test_report(errs);
    MPI_Finalize();
    MPI_T_finalize();
    return 0;
}

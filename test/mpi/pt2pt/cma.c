/* Large messages outside the shared heap, copied through the kernel (Linux's cross-memory
 * attach), arrive intact on every path, and the MPI_T counters say which path ran:
 *   shared       1 MiB from static memory into static memory, into the heap, truncated,
 *                unexpected and by MPI_Ssend: the sender counts it (smheap_cma_msgs) and the
 *                receiver copies it together with the sender (smheap_shared_copy_msgs)
 *   both ways    1 MiB each way at once, many times over (staged through the rings while
 *                they are fast)
 *   fallback     into a noncontiguous receive type: staged through the rings after all
 *                (smheap_cma_fallbacks)
 *   refused      processes that may not reach each other (not dumpable, and without
 *                CAP_SYS_PTRACE): the first message falls back, later ones are staged
 *                from the start (smheap_staged_msgs)
 * With MPIR_CVAR_CH3_SMHEAP_CMA_MIN=-1 (testlist env), or where the kernel does not allow
 * these copies (smheap_cma 0), every such message is staged instead. */
#define _GNU_SOURCE
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "../include/smheap_test.h"

#define BIG (1 << 20)
static char static_send[BIG], static_recv[2 * BIG];

static int rank, local, cma;

/* Rank 0 sends BIG bytes of static memory; rank 1 receives count of type into buf.
 * Returns the number of errors; *moved gets how much pvar `name` moved on `who`. */
static int exchange(void *buf, int count, MPI_Datatype type, int ssend, int unexpected,
                    int seed, int who, const char *name, unsigned long long *moved)
{
    unsigned long long before = pvar_value(name);
    MPI_Request req;
    MPI_Status st;
    int errs = 0, rc;

    if (rank == 0) {
        fill_pattern(static_send, BIG, seed);
        if (unexpected) {       /* the receive is posted after the barrier */
            MPI_Isend(static_send, BIG, MPI_CHAR, 1, seed, MPI_COMM_WORLD, &req);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
            if (ssend)
                MPI_Ssend(static_send, BIG, MPI_CHAR, 1, seed, MPI_COMM_WORLD);
            else
                MPI_Send(static_send, BIG, MPI_CHAR, 1, seed, MPI_COMM_WORLD);
        }
    } else if (rank == 1) {
        if (unexpected) {
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Probe(0, seed, MPI_COMM_WORLD, &st);
        }
        MPI_Irecv(buf, count, type, 0, seed, MPI_COMM_WORLD, &req);
        if (!unexpected)
            MPI_Barrier(MPI_COMM_WORLD);
        if ((rc = MPI_Wait(&req, &st)) != MPI_SUCCESS) {
            printf("seed %d: error %d\n", seed, rc);
            errs++;
        }
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    *moved = pvar_value(name) - before;
    MPI_Bcast(moved, 1, MPI_UNSIGNED_LONG_LONG, who, MPI_COMM_WORLD);
    return errs;
}

/* Counters are checked where ranks 0 and 1 share a node (between nodes the data moves
 * through sockets, tested in nodes.c). */
static int want(const char *what, unsigned long long got, unsigned long long wanted)
{
    if (!local || got == wanted)
        return 0;
    if (rank == 0)
        printf("%s: counted %llu, want %llu\n", what, got, wanted);
    return 1;
}

/* Contiguous receives: into static memory and the heap, unexpected, synchronous. */
static int contiguous(char *heap_recv)
{
    int errs = 0, seed = 1;
    unsigned long long sent, shared;

    for (int kind = 0; kind < 4; kind++, seed++) {
        char *buf = kind == 1 ? heap_recv : static_recv;
        const char *what[] = { "static", "heap", "unexpected", "ssend" };

        if (rank == 1)
            memset(buf, 0, BIG);
        errs += exchange(buf, BIG, MPI_CHAR, kind == 3, kind == 2, seed, 0,
                         cma ? "smheap_cma_msgs" : "smheap_staged_msgs", &sent);
        errs += want(what[kind], sent, 1);
        if (rank == 1)
            errs += check_pattern(buf, BIG, seed, what[kind]);
        shared = pvar_value("smheap_shared_copy_msgs");
        MPI_Bcast(&shared, 1, MPI_UNSIGNED_LONG_LONG, 1, MPI_COMM_WORLD);
        if (kind == 0 && rank == 0 && cma && shared == 0) {
            printf("static: the receiver never shared the copy with the sender\n");
            errs++;
        }
    }
    return errs;
}

/* A receive buffer of half the message: MPI_ERR_TRUNCATE, and the first half arrives. */
static int truncated(void)
{
    int errs = 0;

    if (rank == 0) {
        fill_pattern(static_send, BIG, 9);
        MPI_Send(static_send, BIG, MPI_CHAR, 1, 9, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Status st;
        int rc, cls;

        memset(static_recv, 0, 2 * BIG);
        rc = MPI_Recv(static_recv, BIG / 2, MPI_CHAR, 0, 9, MPI_COMM_WORLD, &st);
        MPI_Error_class(rc, &cls);
        if (cls != MPI_ERR_TRUNCATE) {
            printf("truncated: error class %d, not MPI_ERR_TRUNCATE\n", cls);
            errs++;
        }
        errs += check_pattern(static_recv, BIG / 2, 9, "truncated");
        errs += static_recv[BIG / 2] != 0;
    }
    return errs;
}

/* Both ways at once, repeatedly: each receiver copies alone while the other is busy, or
 * has the data staged through the rings (smheap_both_ways_staged_msgs) where they are
 * fast, which MPIR_CVAR_CH3_SMHEAP_SLOW_RING_RATE=1 makes them always (testlist), and
 * never with MPIR_CVAR_CH3_SMHEAP_STAGE_BOTH_WAYS_MAX=0. */
static int both_ways(void)
{
    char *out = static_send, *in = static_recv;
    int errs = 0, peer = 1 - rank;
    unsigned long long staged = pvar_value("smheap_both_ways_staged_msgs"), total;

    for (int i = 0; i < 20; i++) {
        if (rank < 2)
            errs += exchange_both_ways(out, in, BIG, rank, peer, i, 100 + 2 * i);
        MPI_Barrier(MPI_COMM_WORLD);    /* before out is refilled */
    }
    staged = rank < 2 ? pvar_value("smheap_both_ways_staged_msgs") - staged : 0;
    MPI_Allreduce(&staged, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (!cma || cvar_int("MPIR_CVAR_CH3_SMHEAP_STAGE_BOTH_WAYS_MAX") == 0)
        errs += want("both ways, staged", total, 0);
    else if (cvar_int("MPIR_CVAR_CH3_SMHEAP_SLOW_RING_RATE") == 1 && total == 0) {
        if (rank == 0)
            printf("both ways: nothing staged though the rings count as fast\n");
        errs++;
    }
    return errs;
}

/* Into a strided type: the receiver cannot copy it in one range, so ch3 stages it. */
static int noncontiguous(void)
{
    MPI_Datatype halves;
    unsigned long long fell_back;
    int errs = 0;

    /* BIG / 512 blocks of 512 bytes, 1024 bytes apart */
    MPI_Type_vector(BIG / 512, 512, 1024, MPI_CHAR, &halves);
    MPI_Type_commit(&halves);
    if (rank == 1)
        memset(static_recv, 0, 2 * BIG);
    errs += exchange(static_recv, 1, halves, 0, 0, 11, 1, "smheap_cma_fallbacks", &fell_back);
    errs += want("noncontiguous receive: fallbacks", fell_back, cma);
    if (rank == 1) {
        char *packed = malloc(BIG);

        for (int b = 0; b < BIG / 512; b++)
            memcpy(packed + b * 512, static_recv + b * 1024, 512);
        errs += check_pattern(packed, BIG, 11, "noncontiguous");
        free(packed);
    }
    MPI_Type_free(&halves);
    return errs;
}

/* Drop CAP_SYS_PTRACE from this process's effective capabilities (root has it, and with it
 * may read any process). */
static void drop_ptrace_capability(void)
{
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3 };
    struct __user_cap_data_struct data[2];

    if (syscall(SYS_capget, &hdr, data) != 0)
        return;
    data[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
    if (syscall(SYS_capset, &hdr, data) != 0)
        perror("capset");
}

/* Make ranks 0 and 1 unreachable by each other (whichever copies the chunks, the sender
 * may get them all); the first message falls back to the rings, and the sender, told so,
 * stages the next from the start.  Done last: it changes both processes. */
static int refused(void)
{
    unsigned long long fell_back, staged;
    int errs = 0;

    if (rank < 2) {
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        drop_ptrace_capability();
    }
    MPI_Barrier(MPI_COMM_WORLD);

    errs += exchange(static_recv, BIG, MPI_CHAR, 0, 0, 21, 1, "smheap_cma_fallbacks",
                     &fell_back);
    errs += want("refused: fallbacks", fell_back, cma);
    if (rank == 1)
        errs += check_pattern(static_recv, BIG, 21, "refused");
    errs += exchange(static_recv, BIG, MPI_CHAR, 0, 0, 22, 0, "smheap_staged_msgs", &staged);
    errs += want("refused, next message: staged", staged, 1);
    if (rank == 1)
        errs += check_pattern(static_recv, BIG, 22, "refused, next");
    return errs;
}

int main(int argc, char **argv)
{
    int prov, errs = 0;
    char *heap_recv;

    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    local = same_node(MPI_COMM_WORLD, 0, 1);
    cma = pvar_value("smheap_cma") == 1 && local;
    MPI_Bcast(&cma, 1, MPI_INT, 0, MPI_COMM_WORLD);
    heap_recv = malloc(BIG);

    errs += contiguous(heap_recv);
    errs += truncated();
    errs += both_ways();
    errs += noncontiguous();
    errs += refused();

    free(heap_recv);
    smheap_test_report(errs);
    MPI_Finalize();
    MPI_T_finalize();
    return 0;
}

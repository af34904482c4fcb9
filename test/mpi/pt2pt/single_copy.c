/* Large messages take the single-copy path when the send buffer is in the shared heap,
 * through the kernel when it is not (smheap_cma), and ch3's rendezvous otherwise; both deliver the same data, into contiguous and derived
 * receive types, expected or unexpected, and truncation is reported.  The MPI_T counters
 * show which path ran (sockets alone when ranks 0 and 1 run on different nodes). */
#include <stdlib.h>
#include <string.h>
#include "../include/smheap_test.h"

#define BIG (1 << 20)
static char static_buf[BIG];

static void fill(char *p, int n, int seed)
{
    for (int i = 0; i < n; i++)
        p[i] = (char) (seed + i % 251);
}

static int check(const char *p, int n, int seed, const char *what)
{
    for (int i = 0; i < n; i++)
        if (p[i] != (char) (seed + i % 251)) {
            printf("%s: byte %d differs\n", what, i);
            return 1;
        }
    return 0;
}

int main(int argc, char **argv)
{
    int rank, prov, errs = 0, shared, local, cma;
    unsigned long long sc0, sc1, rc0, rc1, net0, net1, cm0, cm1;
    char *heap_buf, *recv_buf;

    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    shared = pvar_value("smheap_heap_shared") == 1;
    local = same_node(MPI_COMM_WORLD, 0, 1);
    cma = pvar_value("smheap_cma") == 1;
    heap_buf = malloc(BIG);
    recv_buf = malloc(2 * BIG);

    sc0 = pvar_value("smheap_single_copy_msgs");
    rc0 = pvar_value("smheap_staged_msgs");
    net0 = pvar_value("smheap_remote_msgs");
    cm0 = pvar_value("smheap_cma_msgs");
    if (rank == 0) {
        fill(heap_buf, BIG, 1);
        MPI_Send(heap_buf, BIG, MPI_CHAR, 1, 1, MPI_COMM_WORLD);        /* expected */
        fill(static_buf, BIG, 2);
        MPI_Send(static_buf, BIG, MPI_CHAR, 1, 2, MPI_COMM_WORLD);      /* not in the heap */
        fill(heap_buf, BIG, 3);
        MPI_Send(heap_buf, BIG, MPI_CHAR, 1, 3, MPI_COMM_WORLD);        /* unexpected */
        fill(heap_buf, BIG, 4);
        MPI_Ssend(heap_buf, BIG, MPI_CHAR, 1, 4, MPI_COMM_WORLD);       /* into a vector */
        fill(heap_buf, BIG, 5);
        MPI_Send(heap_buf, BIG, MPI_CHAR, 1, 5, MPI_COMM_WORLD);        /* truncated */
        sc1 = pvar_value("smheap_single_copy_msgs");
        rc1 = pvar_value("smheap_staged_msgs");
        net1 = pvar_value("smheap_remote_msgs");
        cm1 = pvar_value("smheap_cma_msgs");
        if (!local && (sc1 != sc0 || rc1 != rc0 || net1 - net0 < 5)) {
            printf("ranks on two nodes: %llu single-copy, %llu staged (want 0), %llu packets"
                   " over sockets (want 5 or more)\n", sc1 - sc0, rc1 - rc0, net1 - net0);
            errs++;
        }
        if (local && net1 != net0) {
            printf("ranks on one node, yet %llu packets over sockets\n", net1 - net0);
            errs++;
        }
        if (local && shared && (sc1 - sc0 != 4 || rc1 - rc0 != !cma || cm1 - cm0 != cma)) {
            printf("paths: %llu single-copy (want 4), %llu staged (want %d), %llu through "
                   "the kernel (want %d)\n", sc1 - sc0, rc1 - rc0, !cma, cm1 - cm0, cma);
            errs++;
        }
        if (local && !shared && (sc1 != sc0 || rc1 - rc0 != 5)) {
            printf("heap not shared, yet %llu single-copy sends\n", sc1 - sc0);
            errs++;
        }
    } else if (rank == 1) {
        MPI_Status st;
        MPI_Datatype vec;
        int count, rc;

        MPI_Recv(recv_buf, BIG, MPI_CHAR, 0, 1, MPI_COMM_WORLD, &st);
        errs += check(recv_buf, BIG, 1, "heap send");
        MPI_Recv(recv_buf, BIG, MPI_CHAR, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        errs += check(recv_buf, BIG, 2, "static send") + (st.MPI_TAG != 2);
        MPI_Probe(0, 3, MPI_COMM_WORLD, &st);   /* arrives before the receive is posted */
        MPI_Get_count(&st, MPI_CHAR, &count);
        errs += count != BIG;
        MPI_Recv(recv_buf, BIG, MPI_CHAR, 0, 3, MPI_COMM_WORLD, &st);
        errs += check(recv_buf, BIG, 3, "unexpected send");

        /* every other 1 KiB block of a 2 MiB buffer */
        MPI_Type_vector(BIG / 1024, 1024, 2048, MPI_CHAR, &vec);
        MPI_Type_commit(&vec);
        MPI_Recv(recv_buf, 1, vec, 0, 4, MPI_COMM_WORLD, &st);
        for (int b = 0; b < BIG / 1024; b++)
            if (recv_buf[2048 * b] != (char) (4 + (1024 * b) % 251) ||
                recv_buf[2048 * b + 1023] != (char) (4 + (1024 * b + 1023) % 251)) {
                printf("vector receive: block %d differs\n", b);
                errs++;
                break;
            }
        MPI_Type_free(&vec);

        rc = MPI_Recv(recv_buf, BIG / 2, MPI_CHAR, 0, 5, MPI_COMM_WORLD, &st);
        MPI_Error_class(rc, &rc);
        if (rc != MPI_ERR_TRUNCATE) {
            printf("truncated receive returned class %d, not MPI_ERR_TRUNCATE\n", rc);
            errs++;
        }
    }
    free(heap_buf);
    free(recv_buf);

    smheap_test_report(errs);
    MPI_Finalize();
    MPI_T_finalize();
    return 0;
}

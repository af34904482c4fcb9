/* Eager messages through a ring's warm slot (one buffer per ring that holds the data of
 * one message at a time), or spread further into their cell, arrive intact however the
 * receiver takes them:
 *   ping-pong    sizes around the slot's bounds, each reply checked;
 *   spread       600 round trips of 2-20 KB from a buffer outside the heap (heap data of
 *                these sizes goes single-copy), several laps of the ring, so that the
 *                data lands at each of the offsets the ring moves it to;
 *   stream       200 messages sent without waiting, received late (unexpected), so the
 *                slot is reused only after the cell that used it is released;
 *   noncontig    into a vector type (the data is unpacked from the slot);
 *   any source   from every other rank at once, in per-sender order.
 * With ranks 0 and 1 on one node and the slot on, MPI_T's smheap_warm_msgs must count
 * the ping-pong's messages; with MPIR_CVAR_CH3_SMHEAP_WARM_SIZE=0 (testlist env) none;
 * smheap_spread_msgs must count some of the spread part's messages either way. */
#include <stdlib.h>
#include <string.h>
#include "../include/smheap_test.h"

#define MAXSZ 20000
#define STREAM 200

static int ping_pong(int rank, char *buf)
{
    static const size_t sizes[] = { 1, 200, 256, 1000, 1024, 1500, 2047, 2048, 4095, 4096,
        4097, 8192, 12000
    };
    int errs = 0;

    for (int round = 0; round < 20; round++)
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
            errs += round_trip_checked(rank, buf, (int) sizes[s], round * 16 + (int) s, 1, 0,
                                       "ping-pong");
    return errs;
}

static int spread(int rank)
{
    static const int sizes[] = { 2048, 5000, 8192, 12000, 20000 };
    static char buf[MAXSZ];     /* not in the heap */
    int errs = 0;

    for (int i = 0; i < 600; i++)
        errs += round_trip_checked(rank, buf, sizes[i % 5], 5000 + i, 6, 0, "spread");
    return errs;
}

/* 256 blocks of 8 bytes, every other one: 2 KiB of data into 4 KiB of buffer. */
static int noncontig(int rank)
{
    MPI_Datatype vec;
    char *packed = malloc(2048), *spread = malloc(4096);
    int errs = 0;

    MPI_Type_vector(256, 8, 16, MPI_CHAR, &vec);
    MPI_Type_commit(&vec);
    for (int round = 0; round < 10; round++) {
        if (rank == 0) {
            fill_pattern(packed, 2048, 2000 + round);
            MPI_Send(packed, 2048, MPI_CHAR, 1, 4, MPI_COMM_WORLD);
        } else if (rank == 1) {
            memset(spread, 0, 4096);
            MPI_Recv(spread, 1, vec, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int b = 0; b < 256; b++)
                memcpy(packed + b * 8, spread + b * 16, 8);
            errs += check_pattern(packed, 2048, 2000 + round, "noncontig");
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Type_free(&vec);
    free(packed);
    free(spread);
    return errs;
}

int main(int argc, char **argv)
{
    int rank, size, prov, errs = 0, local;
    char *buf;
    unsigned long long before, warm;

    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    buf = malloc(MAXSZ);
    local = same_node(MPI_COMM_WORLD, 0, 1);

    before = pvar_value("smheap_warm_msgs");
    errs += ping_pong(rank, buf);
    warm = pvar_value("smheap_warm_msgs") - before;
    if (rank == 0 && local) {
        int slot = cvar_int("MPIR_CVAR_CH3_SMHEAP_WARM_SIZE");

        if (slot != 0 && warm == 0) {
            printf("ping-pong: no message went through the warm slot\n");
            errs++;
        } else if (slot == 0 && warm != 0) {
            printf("ping-pong: %llu messages through a warm slot that is off\n", warm);
            errs++;
        }
    }
    before = pvar_value("smheap_spread_msgs");
    errs += spread(rank);
    if (local && rank < 2 && pvar_value("smheap_spread_msgs") == before) {
        printf("spread: no message was spread into its cell\n");
        errs++;
    }
    errs += stream_unexpected(rank, 1500, STREAM, 1000, 3, "stream");
    errs += noncontig(rank);
    errs += any_source_checked(rank, size, buf, 3000, 30, 5, 0);

    free(buf);
    smheap_test_report(errs);
    MPI_Finalize();
    MPI_T_finalize();
    return errs != 0;
}

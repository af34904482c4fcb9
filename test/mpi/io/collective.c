/*
 * MPI-IO with ROMIO's collective buffering: every rank writes 4 MiB in 64 KiB pieces
 * interleaved with the other ranks' (write_at_all), through aggregators whose buffer is
 * much smaller than the data (cb_buffer_size 1 MiB, so the two-phase exchange runs many
 * rounds and moves its blocks through the heap), from a heap buffer and from a static one;
 * then reads it back collectively, each rank the pieces of its right neighbour, and checks
 * every byte.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "../include/smheap_test.h"

#define PIECE (64 * 1024)
#define PIECES 64

static char static_buf[PIECE * PIECES];

static unsigned char byte_of(int rank, long piece, long i)
{
    return (unsigned char) (rank * 31 + piece * 7 + i);
}

static int write_and_check(MPI_Comm comm, const char *name, char *buf, MPI_Info info)
{
    int rank, size, errs = 0;
    MPI_File fh;
    MPI_Datatype pieces;
    char *in = malloc(PIECE * PIECES);

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (long p = 0; p < PIECES; p++)
        for (long i = 0; i < PIECE; i++)
            buf[p * PIECE + i] = (char) byte_of(rank, p, i);

    /* Rank r's piece p sits at ((p * size) + r) * PIECE: a strided view per rank. */
    MPI_Type_vector(PIECES, PIECE, PIECE * size, MPI_BYTE, &pieces);
    MPI_Type_commit(&pieces);
    MPI_File_open(comm, name, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
    MPI_File_set_view(fh, (MPI_Offset) rank * PIECE, MPI_BYTE, pieces, "native", info);
    MPI_File_write_at_all(fh, 0, buf, PIECE * PIECES, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_sync(fh);
    MPI_Barrier(comm);

    int right = (rank + 1) % size;
    MPI_File_set_view(fh, (MPI_Offset) right * PIECE, MPI_BYTE, pieces, "native", info);
    MPI_File_read_at_all(fh, 0, in, PIECE * PIECES, MPI_BYTE, MPI_STATUS_IGNORE);
    for (long p = 0; p < PIECES; p++)
        for (long i = 0; i < PIECE; i++)
            if ((unsigned char) in[p * PIECE + i] != byte_of(right, p, i) && errs++ < 5)
                printf("rank %d: %s: byte %ld of piece %ld of rank %d is %d\n", rank, name, i,
                       p, right, in[p * PIECE + i]);
    MPI_File_close(&fh);
    MPI_Type_free(&pieces);
    free(in);
    return errs;
}

int main(int argc, char **argv)
{
    int rank, errs = 0;
    MPI_Info info;
    char *heap_buf;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Info_create(&info);
    MPI_Info_set(info, "romio_cb_write", "enable");
    MPI_Info_set(info, "romio_cb_read", "enable");
    MPI_Info_set(info, "cb_buffer_size", "1048576");
    MPI_Info_set(info, "cb_nodes", "2");

    heap_buf = malloc(PIECE * PIECES);
    errs += write_and_check(MPI_COMM_WORLD, "collective.heap.dat", heap_buf, info);
    errs += write_and_check(MPI_COMM_WORLD, "collective.static.dat", static_buf, info);
    free(heap_buf);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_File_delete("collective.heap.dat", MPI_INFO_NULL);
        MPI_File_delete("collective.static.dat", MPI_INFO_NULL);
    }
    MPI_Info_free(&info);
    smheap_test_report(errs);
    MPI_Finalize();
    return 0;
}

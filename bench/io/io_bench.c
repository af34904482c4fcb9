/*
 * MPI-IO through ROMIO's collective buffering, timed: every rank writes MIB MiB in 64 KiB
 * pieces interleaved with the other ranks' (a strided view, write_at_all) through two
 * aggregators with 4 MiB buffers, reads it back (read_at_all), ROUNDS times; then 200
 * rounds of open, a small write each, close.  Rank 0 prints the seconds of each part.
 *   io_bench [MIB] [ROUNDS] [DIR]          (defaults 64, 5, .)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PIECE (64 * 1024)

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    long mib = argc > 1 ? atol(argv[1]) : 64, rounds = argc > 2 ? atol(argv[2]) : 5;
    const char *dir = argc > 3 ? argv[3] : ".";
    long pieces = mib * (1 << 20) / PIECE;
    char name[4096];
    MPI_Info info;
    MPI_Datatype view;
    MPI_File fh;
    double t0, t_cb, t_oc;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Info_create(&info);
    MPI_Info_set(info, "romio_cb_write", "enable");
    MPI_Info_set(info, "romio_cb_read", "enable");
    MPI_Info_set(info, "cb_buffer_size", "4194304");
    MPI_Info_set(info, "cb_nodes", "2");
    MPI_Type_vector((int) pieces, PIECE, PIECE * size, MPI_BYTE, &view);
    MPI_Type_commit(&view);
    snprintf(name, sizeof(name), "%s/io_bench.%d.dat", dir, (int) getpid());
    MPI_Bcast(name, sizeof(name), MPI_CHAR, 0, MPI_COMM_WORLD);

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (long r = 0; r < rounds; r++) {
        char *out = malloc(pieces * PIECE), *in = malloc(pieces * PIECE);

        memset(out, (int) (rank + r), pieces * PIECE);
        MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
        MPI_File_set_view(fh, (MPI_Offset) rank * PIECE, MPI_BYTE, view, "native", info);
        MPI_File_write_at_all(fh, 0, out, (int) (pieces * PIECE), MPI_BYTE, MPI_STATUS_IGNORE);
        MPI_File_read_at_all(fh, 0, in, (int) (pieces * PIECE), MPI_BYTE, MPI_STATUS_IGNORE);
        MPI_File_close(&fh);
        if (memcmp(in, out, pieces * PIECE) != 0)
            errs++;
        free(out);
        free(in);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t_cb = MPI_Wtime() - t0;

    t0 = MPI_Wtime();
    for (int r = 0; r < 200; r++) {
        MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_WRONLY, info, &fh);
        MPI_File_write_at(fh, (MPI_Offset) rank * 8, &r, 1, MPI_INT, MPI_STATUS_IGNORE);
        MPI_File_close(&fh);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t_oc = MPI_Wtime() - t0;
    if (rank == 0)
        MPI_File_delete(name, MPI_INFO_NULL);
    MPI_Allreduce(MPI_IN_PLACE, &errs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("collective_s %.4f open_close_s %.4f errors %d\n", t_cb, t_oc, errs);
    MPI_Type_free(&view);
    MPI_Info_free(&info);
    MPI_Finalize();
    return errs != 0;
}

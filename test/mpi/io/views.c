/*
 * MPI-IO file views: a 2-D global array of doubles split into column blocks, one per rank,
 * written collectively through a subarray filetype (each rank's rows land interleaved with
 * everyone else's), then read back as a whole by every rank through a second view (a
 * resized contiguous type with a displacement) and checked element by element; and an
 * independent read of one rank's block through a vector view.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "../include/smheap_test.h"

#define ROWS 512
#define COLS_PER_RANK 96

static double value(int row, int col)
{
    return row * 10000.0 + col;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_File fh;
    MPI_Datatype block, column_block;
    const char *name = "views.dat";

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int cols = COLS_PER_RANK * size;
    int gsizes[2] = { ROWS, cols }, lsizes[2] = { ROWS, COLS_PER_RANK };
    int starts[2] = { 0, rank * COLS_PER_RANK };
    double *mine = malloc(sizeof(double) * ROWS * COLS_PER_RANK);
    double *all = malloc(sizeof(double) * ROWS * cols);

    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS_PER_RANK; c++)
            mine[r * COLS_PER_RANK + c] = value(r, rank * COLS_PER_RANK + c);
    MPI_Type_create_subarray(2, gsizes, lsizes, starts, MPI_ORDER_C, MPI_DOUBLE, &block);
    MPI_Type_commit(&block);
    MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_set_size(fh, 0);
    MPI_File_set_view(fh, 0, MPI_DOUBLE, block, "native", MPI_INFO_NULL);
    MPI_File_write_all(fh, mine, ROWS * COLS_PER_RANK, MPI_DOUBLE, MPI_STATUS_IGNORE);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);

    /* The whole array: all rows but the first through a view that starts one row in, then
     * the first row through a view from the start. */
    MPI_File_set_view(fh, (MPI_Offset) sizeof(double) * cols, MPI_DOUBLE, MPI_DOUBLE, "native",
                      MPI_INFO_NULL);
    MPI_File_read_all(fh, all + cols, (ROWS - 1) * cols, MPI_DOUBLE, MPI_STATUS_IGNORE);
    MPI_File_set_view(fh, 0, MPI_DOUBLE, MPI_DOUBLE, "native", MPI_INFO_NULL);
    MPI_File_read_at_all(fh, 0, all, cols, MPI_DOUBLE, MPI_STATUS_IGNORE);
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < cols; c++)
            if (all[(long) r * cols + c] != value(r, c) && errs++ < 5)
                printf("rank %d: element (%d,%d) is %g\n", rank, r, c, all[(long) r * cols + c]);

    /* One rank's block again, independently, through a vector view of its columns. */
    int other = (rank + 1) % size;
    MPI_Type_vector(ROWS, COLS_PER_RANK, cols, MPI_DOUBLE, &column_block);
    MPI_Type_commit(&column_block);
    MPI_File_set_view(fh, (MPI_Offset) sizeof(double) * other * COLS_PER_RANK, MPI_DOUBLE,
                      column_block, "native", MPI_INFO_NULL);
    MPI_File_read(fh, mine, ROWS * COLS_PER_RANK, MPI_DOUBLE, MPI_STATUS_IGNORE);
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS_PER_RANK; c++)
            if (mine[r * COLS_PER_RANK + c] != value(r, other * COLS_PER_RANK + c) && errs++ < 5)
                printf("rank %d: block of rank %d, (%d,%d) is %g\n", rank, other, r, c,
                       mine[r * COLS_PER_RANK + c]);

    MPI_File_close(&fh);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        MPI_File_delete(name, MPI_INFO_NULL);
    MPI_Type_free(&block);
    MPI_Type_free(&column_block);
    free(mine);
    free(all);
    smheap_test_report(errs);
    MPI_Finalize();
    return 0;
}

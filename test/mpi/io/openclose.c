/*
 * Many opens and closes: 300 rounds of a collective open of a new file (each round its
 * own name), a small write per rank at its offset, a close, a reopen for reading with
 * MPI_MODE_DELETE_ON_CLOSE, a check of every rank's record, and a close that deletes it;
 * ROMIO allocates and frees its file structures, hints and buffers every time.  At the
 * end no file of the test is left.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "../include/smheap_test.h"

#define ROUNDS 300
#define RECORD 1000

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    char name[64], *rec = malloc(RECORD), *all;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    all = malloc((size_t) RECORD * size);
    for (int round = 0; round < ROUNDS; round++) {
        MPI_File fh;

        snprintf(name, sizeof(name), "openclose.%d.dat", round);
        for (int i = 0; i < RECORD; i++)
            rec[i] = (char) (rank + round + i);
        MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                      &fh);
        MPI_File_write_at(fh, (MPI_Offset) rank * RECORD, rec, RECORD, MPI_BYTE,
                          MPI_STATUS_IGNORE);
        MPI_File_close(&fh);
        MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY | MPI_MODE_DELETE_ON_CLOSE,
                      MPI_INFO_NULL, &fh);
        MPI_File_read_at_all(fh, 0, all, RECORD * size, MPI_BYTE, MPI_STATUS_IGNORE);
        MPI_File_close(&fh);
        for (int r = 0; r < size; r++)
            for (int i = 0; i < RECORD; i++)
                if (all[r * RECORD + i] != (char) (r + round + i) && errs++ < 5)
                    printf("rank %d: round %d: byte %d of rank %d is %d\n", rank, round, i, r,
                           all[r * RECORD + i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int round = 0; round < ROUNDS; round++) {
        snprintf(name, sizeof(name), "openclose.%d.dat", round);
        if (access(name, F_OK) == 0 && errs++ < 5)
            printf("rank %d: %s is still there\n", rank, name);
    }
    free(rec);
    free(all);
    smheap_test_report(errs);
    MPI_Finalize();
    return 0;
}

/* Messages of every size class (empty, eager, several ring cells, rendezvous) around a
 * ring of ranks; checks every byte. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t sizes[] = {0, 1, 8, 1000, 32768, 65536, 200000, 1<<20, 5<<20};
    for (int s = 0; s < 9; s++) {
        size_t n = sizes[s];
        char *sb = malloc(n+1), *rb = malloc(n+1);
        for (size_t i = 0; i < n; i++) sb[i] = (char)(i * 7 + rank);
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        MPI_Sendrecv(sb, n, MPI_CHAR, to, s, rb, n, MPI_CHAR, from, s, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (size_t i = 0; i < n; i++) if (rb[i] != (char)(i * 7 + from)) { errs++; break; }
        free(sb); free(rb);
    }
    int tot; MPI_Allreduce(&errs, &tot, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(tot ? "Found %d errors\n" : " No Errors\n", tot);
    MPI_Finalize();
    return 0;
}

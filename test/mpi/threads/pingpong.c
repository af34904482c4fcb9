/* MPI_THREAD_MULTIPLE: four threads per rank ping-pong with their twin thread in the
 * neighbouring rank, each on its own tag, with small and ring-sized messages. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define NT 4
#define ITERS 2000
static int rank, size;
static void *worker(void *arg) {
    int t = (int)(long)arg, peer = rank ^ 1, errs = 0;
    int buf[1024];
    for (int i = 0; i < ITERS; i++) {
        int n = (i % 3 == 0) ? 1024 : 4;
        for (int j = 0; j < n; j++) buf[j] = i + j + t;
        if (rank & 1) {
            MPI_Recv(buf, n, MPI_INT, peer, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int j = 0; j < n; j++) if (buf[j] != i + j + t) errs++;
            MPI_Send(buf, n, MPI_INT, peer, t, MPI_COMM_WORLD);
        } else {
            MPI_Send(buf, n, MPI_INT, peer, t, MPI_COMM_WORLD);
            MPI_Recv(buf, n, MPI_INT, peer, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    return (void *)(long)errs;
}
int main(int argc, char **argv) {
    int prov; MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &prov);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (prov != MPI_THREAD_MULTIPLE) { printf("no THREAD_MULTIPLE\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    pthread_t th[NT]; long errs = 0;
    for (long t = 0; t < NT; t++) pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < NT; t++) { void *r; pthread_join(th[t], &r); errs += (long)r; }
    long tot; MPI_Allreduce(&errs, &tot, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(tot ? "Found %ld errors\n" : " No Errors\n", tot);
    MPI_Finalize(); return 0;
}

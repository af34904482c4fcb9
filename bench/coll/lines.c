/* The shared cache lines a collective costs each rank (MPI_T smheap_coll_lines_read and
 * _written: peers' steps and cells, and the doorbells checked to wake sleepers), per call,
 * for Barrier and 8-byte Bcast, Reduce and Allreduce.  Rank 0 prints one line per collective:
 *   <coll> <ranks> <mean read> <max read> <mean written> <max written>
 * Counts, not times: they do not depend on how many cores run the ranks, so a 256-rank node
 * can be modelled on a small machine (bench/coll/lines.sh gives the topology). */
#include "../../test/mpi/include/smheap_test.h"

#define CALLS 200

static MPI_T_pvar_session session;
static MPI_T_pvar_handle lines_read, lines_written;

static void lines(unsigned long long *r, unsigned long long *w)
{
    MPI_T_pvar_read(session, lines_read, r);
    MPI_T_pvar_read(session, lines_written, w);
}

static void one(int which, int rank)
{
    double x = rank, y;

    switch (which) {
        case 0:
            MPI_Barrier(MPI_COMM_WORLD);
            break;
        case 1:
            MPI_Bcast(&x, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            break;
        case 2:
            MPI_Reduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            break;
        case 3:
            MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            break;
    }
}

int main(int argc, char **argv)
{
    static const char *names[] = { "Barrier", "Bcast", "Reduce", "Allreduce" };
    int rank, size, prov, count, ir, iw;

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ir = pvar_index("smheap_coll_lines_read");
    iw = pvar_index("smheap_coll_lines_written");
    if (ir < 0 || iw < 0) {
        if (rank == 0)
            fprintf(stderr, "lines: this MPI has no smheap_coll_lines_read/_written\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_T_pvar_session_create(&session);
    MPI_T_pvar_handle_alloc(session, ir, NULL, &lines_read, &count);
    MPI_T_pvar_handle_alloc(session, iw, NULL, &lines_written, &count);

    for (int c = 0; c < 4; c++) {
        unsigned long long r0, w0, r1, w1;
        double mine[2], sum[2], max[2];

        for (int i = 0; i < 20; i++)    /* the control block, the tree for this root */
            one(c, rank);
        MPI_Barrier(MPI_COMM_WORLD);
        lines(&r0, &w0);
        for (int i = 0; i < CALLS; i++)
            one(c, rank);
        lines(&r1, &w1);
        mine[0] = (double) (r1 - r0) / CALLS;
        mine[1] = (double) (w1 - w0) / CALLS;
        MPI_Reduce(mine, sum, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(mine, max, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0)
            printf("%s %d %.2f %.2f %.2f %.2f\n", names[c], size, sum[0] / size, max[0],
                   sum[1] / size, max[1]);
    }
    MPI_T_pvar_handle_free(session, &lines_read);
    MPI_T_pvar_handle_free(session, &lines_written);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}

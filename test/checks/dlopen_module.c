/*
 * The MPI part of dlopen_mpi: a module built against the install (mpicc -shared), loaded
 * with dlopen by a host program that does not link libmpi, as Python loads mpi4py's
 * extension module.  With libmpi loaded this late, the heap must still serve malloc:
 * every rank shares it, and a large message between blocks malloc'd now moves with a
 * single copy (MPI_T).  A block the host allocated before the load (glibc's) still moves
 * correctly, by another path.  With DLOPEN_MODULE_HEAP=off in the environment (the
 * preload turned off), the heap must be off instead, and every message still right.
 */
#include "smheap_test.h"

#define BIG (4 << 20)

/* Run by the host between MPI_Init and MPI_Finalize, with the host's own checks. */
typedef long host_check_fn(void);

static int single_copy_round_trip(int rank, char *buf, int seed, unsigned long long want)
{
    unsigned long long before = pvar_value("smheap_single_copy_msgs"), sent;
    int errs = round_trip_checked(rank, buf, BIG, seed, 10 * seed, 0, "heap buffer");

    sent = pvar_value("smheap_single_copy_msgs") - before;
    if (rank < 2 && sent != want) {
        printf("rank %d: %llu of its message went with a single copy (want %llu)\n", rank,
               sent, want);
        errs++;
    }
    return errs;
}

/* The errors of all ranks; *rank_out: this one's rank. */
int dlopen_module_run(int argc, char **argv, char *early_block, host_check_fn *host_check,
                      int *rank_out)
{
    int rank, size, provided, errs = 0, total;
    const char *expect = getenv("DLOPEN_MODULE_HEAP");
    int want_shared = expect == NULL || strcmp(expect, "off") != 0;
    char *heap_buf;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        printf("run it on 2 ranks or more\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (pvar_value("smheap_heap_shared") != (unsigned long long) want_shared) {
        printf("rank %d: the shared heap is %sshared by every rank\n", rank,
               want_shared ? "not " : "");
        errs++;
    }
    heap_buf = malloc(BIG);
    errs += single_copy_round_trip(rank, heap_buf, 1, !errs && want_shared);
    errs += single_copy_round_trip(rank, early_block, 2, 0);
    free(heap_buf);
    errs += (int) host_check();
    MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_T_finalize();
    MPI_Finalize();
    *rank_out = rank;
    return total;
}

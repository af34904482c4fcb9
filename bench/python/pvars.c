/* The channel's MPI_T counters for a Python program, through ctypes (mpi4py 3.1 has no
 * MPI_T interface).  Built against the MPI that runs the program; a counter that MPI does
 * not have reads as 2^64 - 1. */
#include "smheap_test.h"

unsigned long long smheap_pvar(const char *name)
{
    static int ready;
    int provided;

    if (!ready) {
        MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided);
        ready = 1;
    }
    return pvar_value(name);
}

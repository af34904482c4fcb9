/* MPI_T has no Fortran binding (MPI-4 defines it for C only), so the Fortran tests read the
 * channel's counters, and ask where an array lives, through these.  gfortran's naming
 * (lower case, trailing underscore, arguments by reference) lets fixed-form mpif.h programs
 * call them as they are; the f08 test declares them with bind(C) under these names.
 *
 * Built as a shared library of its own (Makefile): linked into the program, its calls to
 * libmpi would make libmpi one of the program's own dependencies, which a Fortran program
 * does not have with the linker's --as-needed, and the tests would miss that case. */
#include "../include/smheap_test.h"

/* MPI_T_init_thread once, before the first read (MPI_Init does not initialize MPI_T). */
static void need_mpit(void)
{
    static int done;
    int provided;

    if (!done)
        MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    done = 1;
}

/* A channel performance variable (smheap_single_copy_msgs, ...) by name: the name is a
 * Fortran string of *len characters, not terminated. */
void smheap_pvar_(const char *name, const int *len, long long *value)
{
    char c_name[128];

    need_mpit();
    snprintf(c_name, sizeof(c_name), "%.*s", *len, name);
    *value = (long long) pvar_value(c_name);
}

/* 1 if MPIR_CVAR_CH3_SMHEAP_ENABLE asks for the shared heap. */
void smheap_heap_enabled_(int *on)
{
    need_mpit();
    *on = heap_enabled() == 1;
}

/* 1 if the *bytes bytes at p lie in the job's shared heap, else 0. */
void smheap_in_heap_(const void *p, const long long *bytes, int *yes)
{
    *yes = in_shared_heap(p, (size_t) * bytes);
}

/* 1 if ranks *a and *b of MPI_COMM_WORLD share a node (collective over the world). */
void smheap_same_node_(const int *a, const int *b, int *yes)
{
    *yes = same_node(MPI_COMM_WORLD, *a, *b);
}

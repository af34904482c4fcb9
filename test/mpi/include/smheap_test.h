/* Helpers for the project's MPI tests: MPI_T access to the channel's variables, and the
 * usual MPICH test ending (sum the errors, rank 0 prints " No Errors"). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static inline int pvar_index(const char *want)
{
    int n;

    MPI_T_pvar_get_num(&n);
    for (int i = 0; i < n; i++) {
        char name[256], desc[1024];
        int nlen = sizeof(name), dlen = sizeof(desc), verb, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;

        MPI_T_pvar_get_info(i, name, &nlen, &verb, &cls, &dt, &en, desc, &dlen, &bind, &ro,
                            &cont, &atomic);
        if (strcmp(name, want) == 0)
            return i;
    }
    return -1;
}

/* The value of a continuous pvar, or ~0 if it does not exist. */
static inline unsigned long long pvar_value(const char *name)
{
    unsigned long long v = ~0ULL;
    int idx = pvar_index(name), count;
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;

    if (idx < 0)
        return v;
    MPI_T_pvar_session_create(&s);
    MPI_T_pvar_handle_alloc(s, idx, NULL, &h, &count);
    MPI_T_pvar_read(s, h, &v);
    MPI_T_pvar_handle_free(s, &h);
    MPI_T_pvar_session_free(&s);
    return v;
}

/* MPIR_CVAR_CH3_SMHEAP_ENABLE as MPICH read it. */
static inline int heap_enabled(void)
{
    int idx, count, v = -1;
    MPI_T_cvar_handle h;

    if (MPI_T_cvar_get_index("MPIR_CVAR_CH3_SMHEAP_ENABLE", &idx) != MPI_SUCCESS)
        return -1;
    MPI_T_cvar_handle_alloc(idx, NULL, &h, &count);
    MPI_T_cvar_read(h, &v);
    MPI_T_cvar_handle_free(&h);
    return v;
}

/* Sum the errors of every rank; rank 0 prints what runtests expects. */
static inline void smheap_test_report(int errs)
{
    int rank, total;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf(total ? "Found %d errors\n" : " No Errors\n", total);
}

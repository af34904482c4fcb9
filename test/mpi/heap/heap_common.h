/* Helpers for the shared-heap tests: MPI_T access to the channel's heap variables. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int heap_pvar_index(const char *want)
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
static unsigned long long heap_pvar(const char *name)
{
    unsigned long long v = ~0ULL;
    int idx = heap_pvar_index(name), count;
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
static int heap_enabled(void)
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

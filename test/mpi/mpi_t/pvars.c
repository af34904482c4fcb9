/* The channel's knobs and counters are visible through MPI_T: its CVARs exist, and the
 * count of ring cells received moves when a rank receives messages. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int find_pvar(const char *want)
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

int main(int argc, char **argv)
{
    int rank, prov, errs = 0, idx, cvar;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    if (MPI_T_cvar_get_index("MPIR_CVAR_CH3_SMHEAP_SPIN_POLLS", &cvar) != MPI_SUCCESS) {
        printf("CVAR MPIR_CVAR_CH3_SMHEAP_SPIN_POLLS not found\n");
        errs++;
    }
    idx = find_pvar("smheap_cells_received");
    if (idx < 0) {
        printf("pvar smheap_cells_received not found\n");
        errs++;
    } else {
        MPI_T_pvar_session s;
        MPI_T_pvar_handle h;
        int count;
        unsigned long long before, after;
        char buf[100000];
        MPI_T_pvar_session_create(&s);
        MPI_T_pvar_handle_alloc(s, idx, NULL, &h, &count);
        MPI_T_pvar_read(s, h, &before);
        if (rank == 0)
            MPI_Send(buf, sizeof(buf), MPI_CHAR, 1, 0, MPI_COMM_WORLD);
        else if (rank == 1)
            MPI_Recv(buf, sizeof(buf), MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_T_pvar_read(s, h, &after);
        /* 100 kB travels as several cells */
        if (rank == 1 && after - before < 3) {
            printf("cells received moved by %llu\n", after - before);
            errs++;
        }
        MPI_T_pvar_handle_free(s, &h);
        MPI_T_pvar_session_free(&s);
    }

    int tot;
    MPI_Reduce(&errs, &tot, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf(tot ? "Found %d errors\n" : " No Errors\n", tot);
    MPI_Finalize();
    MPI_T_finalize();
    return 0;
}

/* The channel's knobs and counters are visible through MPI_T: its CVARs exist, and the
 * count of ring cells received moves when a rank receives messages. */
#include "../include/smheap_test.h"

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
    idx = pvar_index("smheap_cells_received");
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

    smheap_test_report(errs);
    MPI_Finalize();
    MPI_T_finalize();
    return 0;
}

/* The channel's knobs and counters are visible through MPI_T: its CVARs exist, and the
 * count of ring cells received moves when a rank receives messages from a rank of its node
 * (the count of bytes sent over sockets, to a rank on another node). */
#include "../include/smheap_test.h"

int main(int argc, char **argv)
{
    int rank, prov, errs = 0, idx, cvar, local;
    const char *counter;
    unsigned long long least;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    local = same_node(MPI_COMM_WORLD, 0, 1);
    counter = local ? "smheap_cells_received" : "smheap_remote_bytes";
    least = local ? 3 : 100000;         /* 100 kB travels as several cells */

    if (MPI_T_cvar_get_index("MPIR_CVAR_CH3_SMHEAP_SPIN_POLLS", &cvar) != MPI_SUCCESS) {
        printf("CVAR MPIR_CVAR_CH3_SMHEAP_SPIN_POLLS not found\n");
        errs++;
    }
    idx = pvar_index(counter);
    if (idx < 0) {
        printf("pvar %s not found\n", counter);
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
        /* rank 0 sends only once rank 1 has read its count: a message sent earlier could
         * arrive while rank 1 still waits in the collectives above, before that read */
        if (rank == 1)
            MPI_Send(NULL, 0, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
        if (rank == 0) {
            MPI_Recv(NULL, 0, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, sizeof(buf), MPI_CHAR, 1, 0, MPI_COMM_WORLD);
        }
        else if (rank == 1)
            MPI_Recv(buf, sizeof(buf), MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_T_pvar_read(s, h, &after);
        if (rank == (local ? 1 : 0) && after - before < least) {
            printf("%s moved by %llu\n", counter, after - before);
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

/* 10,000 communicators created and freed, each with a collective: the number of live
 * smheap collective tables stays bounded (communicators over the same table share one) and
 * the heap does not grow (control blocks and staging buffers are freed). */
#include <stdlib.h>
#include "../include/smheap_test.h"

int main(int argc, char **argv)
{
    int rank, prov, errs = 0, sum;
    unsigned long long live_max = 0, used_after_warmup = 0, used_end;
    int shared;

    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    shared = pvar_value("smheap_heap_shared") == 1;

    for (int i = 0; i < 10000; i++) {
        MPI_Comm c;
        if (i % 2)
            MPI_Comm_dup(MPI_COMM_WORLD, &c);
        else
            MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &c);
        MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, c);
        if (i % 100 == 0) {
            unsigned long long live = pvar_value("smheap_coll_tables_live");
            if (live > live_max)
                live_max = live;
        }
        MPI_Comm_free(&c);
        if (i == 1000)
            used_after_warmup = pvar_value("smheap_heap_bytes_in_use");
    }
    used_end = pvar_value("smheap_heap_bytes_in_use");
    if (shared && (live_max < 1 || live_max > 2)) {
        printf("rank %d: up to %llu live tables (want 1 or 2)\n", rank, live_max);
        errs++;
    }
    if (shared && used_end > used_after_warmup + 256 * 1024) {
        printf("rank %d: heap grew from %llu to %llu bytes\n", rank, used_after_warmup,
               used_end);
        errs++;
    }
    smheap_test_report(errs);
    MPI_Finalize();
    MPI_T_finalize();
    return 0;
}

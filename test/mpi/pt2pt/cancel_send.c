/* Cancelling a send the receiver has not matched works on every path (eager, single copy,
 * shared copy, through the kernel, staged): the request completes as cancelled, the
 * message never arrives, and the buffer may be reused at once.  Then a marker message gets
 * through. */
#include <stdlib.h>
#include <string.h>
#include "../include/smheap_test.h"

#define BIG (1 << 20)
static char static_buf[BIG];

int main(int argc, char **argv)
{
    int rank, errs = 0;
    char *heap_buf;
    struct {
        const char *what;
        int heap, size;
    } cases[] = {
        {"1000 B heap", 1, 1000}, {"16 KiB heap", 1, 16 * 1024}, {"1 MiB heap", 1, BIG},
        {"1 MiB static", 0, BIG}, {"64 KiB static", 0, 64 * 1024},
    };

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    heap_buf = malloc(BIG);

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        if (rank == 0) {
            char *buf = cases[c].heap ? heap_buf : static_buf;
            MPI_Request req;
            MPI_Status st;
            int cancelled = 0;

            memset(buf, 'x', cases[c].size);
            MPI_Isend(buf, cases[c].size, MPI_CHAR, 1, (int) c, MPI_COMM_WORLD, &req);
            MPI_Cancel(&req);
            MPI_Wait(&req, &st);
            MPI_Test_cancelled(&st, &cancelled);
            if (!cancelled) {
                printf("%s: send not cancelled\n", cases[c].what);
                errs++;
            }
            memset(buf, 'y', cases[c].size);   /* ours again */
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* Whatever was cancelled must not arrive: the first message rank 1 gets is the marker. */
    if (rank == 0) {
        MPI_Send(heap_buf, 8, MPI_CHAR, 1, 99, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Status st;
        int flag;
        MPI_Recv(heap_buf, BIG, MPI_CHAR, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        if (st.MPI_TAG != 99) {
            printf("a cancelled message arrived (tag %d)\n", st.MPI_TAG);
            errs++;
        }
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        errs += flag;
    }

    free(heap_buf);
    smheap_test_report(errs);
    MPI_Finalize();
    return 0;
}

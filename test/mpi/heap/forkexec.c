/* fork-then-exec and system() from an MPI program with the shared heap: the children run,
 * the parent's heap blocks are intact afterwards, and MPI still works. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../include/smheap_test.h"

#define N 64

int main(int argc, char **argv)
{
    int rank, errs = 0, status;
    unsigned char *blocks[N];
    char *argv_child[3];
    pid_t pid;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < N; i++) {
        blocks[i] = malloc(4096);
        memset(blocks[i], i + rank, 4096);
    }
    argv_child[0] = strdup("/bin/sh");  /* built on the heap before the fork */
    argv_child[1] = strdup("-c");
    argv_child[2] = NULL;

    if (system("exit 3") != 3 << 8) {
        printf("rank %d: system() failed\n", rank);
        errs++;
    }
    pid = fork();
    if (pid == 0) {
        char *cmd = malloc(64);         /* the child's own allocations come from glibc */

        strcpy(cmd, "exit 7");
        free(blocks[0]);                /* must not reach the parent's heap */
        execl(argv_child[0], argv_child[0], argv_child[1], cmd, (char *) NULL);
        _exit(99);
    }
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 7) {
        printf("rank %d: fork+exec child failed (status %d)\n", rank, status);
        errs++;
    }
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < 4096; j++)
            if (blocks[i][j] != (unsigned char) (i + rank)) {
                printf("rank %d: block %d changed\n", rank, i);
                errs++;
                break;
            }
        free(blocks[i]);
    }
    free(argv_child[0]);
    free(argv_child[1]);

    smheap_test_report(errs);
    MPI_Finalize();
    return 0;
}

/*
 * Unit test for the channel's copies between processes (smheap_cma.h), no MPICH needed: a
 * child reads its parent's buffer and writes into it, at sizes from one byte to several
 * pages and at odd offsets; an unmapped range and a process that is gone give the errno
 * the channel falls back on, never a partial copy reported as done.  Skipped (exit 77)
 * where the kernel does not allow these copies at all.
 */

#define _GNU_SOURCE
#include "smheap_cma.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit_check.h"

enum { AREA = 4 << 20 };

static const size_t sizes[] = { 1, 63, 4096, 4097, 65536 + 17, AREA - 64 };

/* In the child: read every size from the parent's source, write it back to the parent's
 * destination; exits with the number of failures. */
static int child(pid_t parent, const unsigned char *src, unsigned char *dst)
{
    unsigned char *mine = malloc(AREA);

    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k], off = k * 8 + 1;

        if (n + off > AREA)
            off = AREA - n;
        memset(mine, 0, AREA);
        CHECK(smheap_cma_read(parent, mine, src + off, n) == 0);
        for (size_t i = 0; i < n; i++)
            if (mine[i] != (unsigned char) (i + off)) {
                CHECK(!"read the parent's bytes");
                break;
            }
        CHECK(smheap_cma_write(parent, dst + off, mine, n) == 0);
    }
    /* an unmapped range of the parent: EFAULT, not success */
    CHECK(smheap_cma_read(parent, mine, (void *) 16, 64) == EFAULT);
    free(mine);
    return failures;
}

int main(void)
{
    const char *why_not = smheap_cma_init();
    unsigned char *src = malloc(AREA), *dst = malloc(AREA);
    pid_t pid, gone;
    int status;

    if (why_not != NULL) {
        printf("cma_test: skipped: %s\n", why_not);
        return 77;
    }
    for (size_t i = 0; i < AREA; i++)
        src[i] = (unsigned char) i;
    memset(dst, 0, AREA);

    pid = fork();
    if (pid == 0)
        _exit(child(getppid(), src, dst));
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* every range the child wrote holds what it read */
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k], off = k * 8 + 1;

        if (n + off > AREA)
            off = AREA - n;
        CHECK(memcmp(dst + off, src + off, n) == 0);
    }

    /* a process that is gone: ESRCH */
    gone = fork();
    if (gone == 0)
        _exit(0);
    waitpid(gone, &status, 0);
    CHECK(smheap_cma_read(gone, dst, src, 64) == ESRCH);
    CHECK(smheap_cma_write(gone, dst, src, 64) == ESRCH);

    free(src);
    free(dst);
    if (failures == 0)
        printf("cma_test: all checks passed\n");
    return failures != 0;
}

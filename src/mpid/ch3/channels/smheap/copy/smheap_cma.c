/*
 * ch3:smheap -- copies between two processes through the kernel (see smheap_cma.h).
 */

#define _GNU_SOURCE
#include "smheap_cma.h"
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/uio.h>

/* Yama's ptrace_scope: 0 classic (same user), 1 descendants and named tracers only, 2 only
 * with CAP_SYS_PTRACE, 3 never; -1 without Yama. */
static int yama_ptrace_scope(void)
{
    char c = 0;
    int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY);

    if (fd < 0)
        return -1;
    if (read(fd, &c, 1) != 1)
        c = '0';
    close(fd);
    return c - '0';
}

const char *smheap_cma_init(void)
{
    static char probe_src = 1;
    char probe_dst = 0;
    int scope = yama_ptrace_scope();

    /* the call itself (kernels without it, seccomp filters that refuse it) */
    if (smheap_cma_read(getpid(), &probe_dst, &probe_src, 1) != 0 || probe_dst != 1)
        return "process_vm_readv is not available (kernel or seccomp filter)";
    if (scope >= 2)
        return "Yama's kernel.yama.ptrace_scope is 2 or more (set it to 0 or 1)";
#if defined(PR_SET_PTRACER)
    if (scope == 1 && prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) != 0)
        return "Yama's kernel.yama.ptrace_scope is 1 and prctl(PR_SET_PTRACER) failed";
#else
    if (scope == 1)
        return "Yama's kernel.yama.ptrace_scope is 1 (set it to 0)";
#endif
    return NULL;
}

/* Move n bytes between local and remote ranges, repeating the call after partial copies
 * (the kernel stops at a fault or a signal). */
static int move(pid_t pid, char *local, char *remote, size_t n, int to_remote)
{
    while (n > 0) {
        struct iovec l = { local, n }, r = { remote, n };
        ssize_t got = to_remote ? process_vm_writev(pid, &l, 1, &r, 1, 0)
            : process_vm_readv(pid, &l, 1, &r, 1, 0);

        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return got < 0 ? errno : EFAULT;
        local += got, remote += got, n -= (size_t) got;
    }
    return 0;
}

int smheap_cma_read(pid_t pid, void *dst, const void *remote_src, size_t n)
{
    return move(pid, dst, (char *) remote_src, n, 0);
}

int smheap_cma_write(pid_t pid, void *remote_dst, const void *src, size_t n)
{
    return move(pid, (char *) src, remote_dst, n, 1);
}

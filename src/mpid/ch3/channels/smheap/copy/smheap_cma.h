/*
 * ch3:smheap -- copies between two processes' private memory through the kernel (Linux's
 * cross-memory attach: process_vm_readv and process_vm_writev).
 *
 * Data outside the shared heap cannot be reached by address from another process; this
 * lets the receiver read it, and the sender write it into the receiver's buffer, in one
 * copy each.  The kernel allows it where the caller could ptrace the other process: same
 * user, and where Yama restricts ptrace to descendants (ptrace_scope 1), only after the
 * target named its tracers, which smheap_cma_init does for any process of the user, as
 * Open MPI's CMA does.  Independent of MPICH, so that it can be unit-tested alone.
 */

#ifndef SMHEAP_CMA_H_INCLUDED
#define SMHEAP_CMA_H_INCLUDED

#include <stddef.h>
#include <sys/types.h>

/* Can this process use cross-memory attach with its peers?  Returns 0 if so, else a
 * message naming the cause (the system call refused, Yama's ptrace_scope) for the
 * channel to report. */
const char *smheap_cma_init(void);

/* Copy n bytes from remote_src in process pid into dst, or from src into remote_dst in
 * pid.  0 when every byte was copied, else the errno that stopped it (EPERM: ptrace not
 * allowed; ESRCH: no such process; EFAULT: a range not mapped). */
int smheap_cma_read(pid_t pid, void *dst, const void *remote_src, size_t n);
int smheap_cma_write(pid_t pid, void *remote_dst, const void *src, size_t n);

#endif /* SMHEAP_CMA_H_INCLUDED */

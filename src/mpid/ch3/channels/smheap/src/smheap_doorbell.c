/*
 * ch3:smheap -- doorbells on Linux futexes (see smheap_doorbell.h).  Process-shared
 * futexes (no FUTEX_PRIVATE_FLAG): the word lives in memory mapped by several processes.
 */

#include "smheap_doorbell.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void smheap_doorbell_wake(smheap_doorbell_t * b)
{
    atomic_fetch_add_explicit(&b->seq, 1, memory_order_release);
    syscall(SYS_futex, &b->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

int smheap_doorbell_sleep(smheap_doorbell_t * b, int seq, long timeout_ns)
{
    struct timespec ts = { timeout_ns / 1000000000L, timeout_ns % 1000000000L };

    if (syscall(SYS_futex, &b->seq, FUTEX_WAIT, seq, &ts, NULL, 0) == -1 &&
        errno != EAGAIN && errno != EINTR && errno != ETIMEDOUT)
        return errno;
    return 0;
}

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#ifndef FUTEX_32
#define FUTEX_32 2
struct futex_waitv {
    uint64_t val;
    uint64_t uaddr;
    uint32_t flags;
    uint32_t __reserved;
};
#endif

#define NAP_WITHOUT_WAITV_NSEC (1000 * 1000L)

static int waitv_missing;       /* the kernel said ENOSYS (or a filter said EPERM) */

int smheap_doorbell_sleep_any(smheap_doorbell_t * const *bells, const int *seqs, int n,
                              long timeout_ns)
{
    struct futex_waitv w[SMHEAP_DOORBELL_MAX_WAIT];
    struct timespec deadline;

    if (n == 1)
        return smheap_doorbell_sleep(bells[0], seqs[0], timeout_ns);
    if (waitv_missing || n > SMHEAP_DOORBELL_MAX_WAIT)
        goto nap;

    for (int i = 0; i < n; i++) {
        w[i].val = (uint32_t) seqs[i];
        w[i].uaddr = (uintptr_t) & bells[i]->seq;
        w[i].flags = FUTEX_32;  /* shared: the words live in memory other processes map */
        w[i].__reserved = 0;
    }
    /* futex_waitv takes an absolute deadline */
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += timeout_ns / 1000000000L;
    deadline.tv_nsec += timeout_ns % 1000000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    if (syscall(SYS_futex_waitv, w, (unsigned) n, 0, &deadline, CLOCK_MONOTONIC) >= 0)
        return 0;
    if (errno == EAGAIN || errno == EINTR || errno == ETIMEDOUT)
        return 0;
    if (errno != ENOSYS && errno != EPERM)
        return errno;
    waitv_missing = 1;

  nap:
    return smheap_doorbell_sleep(bells[0], seqs[0],
                                 timeout_ns < NAP_WITHOUT_WAITV_NSEC ? timeout_ns :
                                 NAP_WITHOUT_WAITV_NSEC);
}

/*
 * ch3:smheap -- doorbells on Linux futexes (see smheap_doorbell.h).  Process-shared
 * futexes (no FUTEX_PRIVATE_FLAG): the word lives in memory mapped by several processes.
 */

#include "smheap_doorbell.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
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

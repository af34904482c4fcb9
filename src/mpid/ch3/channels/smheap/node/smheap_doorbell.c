/*
 * ch3:smheap -- doorbells on Linux futexes (see smheap_doorbell.h).  Process-shared
 * futexes (no FUTEX_PRIVATE_FLAG): the word lives in memory mapped by several processes.
 */

#include "smheap_doorbell.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

void smheap_doorbell_set_wake_socket(smheap_doorbell_t * b, const char *name)
{
    size_t n = strlen(name);

    if (n >= sizeof(b->wake_socket))
        n = sizeof(b->wake_socket) - 1;
    memcpy(b->wake_socket, name, n);
    b->wake_socket[n] = '\0';
}

/* One socket per process to send wake-ups from, made on first use. */
static int wake_sender(void)
{
    static atomic_int fd = -1;
    int s = atomic_load_explicit(&fd, memory_order_acquire), expected = -1;

    if (s >= 0)
        return s;
    s = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0 || atomic_compare_exchange_strong(&fd, &expected, s))
        return s;
    close(s);   /* another thread made one first */
    return expected;
}

/* A byte to the owner's wake socket.  A full socket already holds a wake-up: the
 * owner's poll() returns anyway, so EAGAIN is not an error. */
static void send_wake_datagram(const char *name)
{
    struct sockaddr_un a;
    size_t n = strlen(name);
    int s = wake_sender();
    char byte = 0;

    if (s < 0)
        return;
    memset(&a, 0, sizeof(a));
    a.sun_family = AF_UNIX;
    memcpy(a.sun_path + 1, name, n);
    sendto(s, &byte, 1, MSG_DONTWAIT, (struct sockaddr *) &a,
           (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + n));
}

int smheap_doorbell_fenceless;

static atomic_ullong wakeups_issued;

size_t smheap_doorbell_wakeups(void)
{
    return (size_t) atomic_load_explicit(&wakeups_issued, memory_order_relaxed);
}

int smheap_doorbell_register(void)
{
    static pid_t asked_by;      /* a forked child asks for itself */
    static int registered;
    long cmds;

    if (asked_by == getpid())
        return registered;
    asked_by = getpid();
    registered = 0;
    smheap_doorbell_fenceless = 0;
    if (RUNNING_ON_VALGRIND)
        return 0;       /* valgrind (3.19) does not know membarrier: it would warn */
    cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds < 0 || !(cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) ||
        !(cmds & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED))
        return 0;
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) != 0)
        return 0;
    registered = 1;
    return 1;
}

int smheap_doorbell_armed(void)
{
    if (smheap_doorbell_fenceless &&
        syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) != 0)
        return errno;
    return 0;
}

void smheap_doorbell_wake(smheap_doorbell_t * b)
{
    int seq = atomic_load_explicit(&b->seq, memory_order_relaxed);

    do {
        if (seq & SMHEAP_DOORBELL_RUNG)
            return;     /* woken already, and not armed since */
    } while (!atomic_compare_exchange_weak_explicit(&b->seq, &seq,
                                                    (int) (((unsigned) seq + 2) |
                                                           SMHEAP_DOORBELL_RUNG),
                                                    memory_order_release, memory_order_relaxed));
    atomic_fetch_add_explicit(&wakeups_issued, 1, memory_order_relaxed);
    syscall(SYS_futex, &b->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
    if (b->wake_socket[0] != '\0')
        send_wake_datagram(b->wake_socket);
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
    if (RUNNING_ON_VALGRIND) {
        /* valgrind (3.19) does not know futex_waitv: it would warn and say ENOSYS */
        waitv_missing = 1;
        goto nap;
    }

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

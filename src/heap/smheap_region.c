/*
 * smheap -- the region: one shared-memory file per node per job, mapped at the same
 * address in every local rank, cut into one slice per rank.
 *
 * The first local rank to start wins an election (binding an abstract UNIX socket named
 * after the job, which vanishes with its process, so nothing is left to clean up), creates
 * the file (O_CREAT|O_EXCL, mode 0600) and removes its name at once: from then on a job that
 * dies any way at all leaves nothing in /dev/shm.  It picks a free address range, maps the
 * file there and publishes the address in the header.  The other ranks find the creator's
 * pid through the socket (SO_PEERCRED), open the file through /proc/<pid>/fd, check that it
 * is this job's, and map it at the published address with MAP_FIXED_NOREPLACE, so nothing
 * already mapped is ever replaced.
 *
 * All of this runs inside the first malloc: no allocator calls here.
 */

#define _GNU_SOURCE
#include "smheap_region.h"
#include "smheap_valgrind.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define REGION_MAGIC UINT64_C(0x736d686561707631)      /* "smheapv1" */
#define REGION_FAILED UINT64_C(0x736d6865617066)       /* the creator gave up */
#define MIN_SLICE ((size_t) 16 << 20)
#define MAX_AUTO_SLICE ((size_t) 64 << 30)
#define SLICE_ALIGN ((size_t) 2 << 20)
#define FIRST_BASE ((uintptr_t) 0x200000000000)        /* 32 TiB: far from brk, libraries, stacks */
#define BASE_STEP ((uintptr_t) 1 << 40)
#define BASE_CANDIDATES 32
#define JOIN_TIMEOUT_S 60

/* The first page of the region. */
struct region_header {
    _Atomic uint64_t magic;     /* stored last by the creator: the header is complete */
    uint64_t base;
    uint64_t size;
    uint64_t slice_size;
    uint32_t nslices;
    uint32_t uid;
    char job_key[64];
};

#define MiB(x) ((unsigned long long) ((x) >> 20))

/* Start time (clock ticks since boot) of process pid, from /proc/<pid>/stat: with the pid
 * it names a process uniquely, even after the pid is reused. */
static unsigned long long start_time(pid_t pid)
{
    char path[64], buf[1024], *p;
    unsigned long long t = 0;
    int fd, field;
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    p = strrchr(buf, ')');      /* the command name may contain spaces */
    for (field = 2; p != NULL && field < 22; field++)
        p = strchr(p + 1, ' ');
    if (p != NULL)
        sscanf(p + 1, "%llu", &t);
    return t;
}

/* The Hydra proxy that started this rank: the process at the other end of the PMI socket
 * (PMI_FD; the proxy made the socket pair), which holds also when a wrapper script stands
 * between them; else the parent. */
static pid_t launching_proxy(void)
{
    const char *fd_text = getenv("PMI_FD");
    struct ucred cred;
    socklen_t len = sizeof(cred);
    char *end;
    long fd;

    if (fd_text != NULL) {
        fd = strtol(fd_text, &end, 10);
        if (end != fd_text && *end == '\0' && fd >= 0 && fd <= INT32_MAX &&
            getsockopt((int) fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.pid > 0)
            return cred.pid;
    }
    return getppid();
}

/* Every rank of a job on a node was started by the same Hydra proxy, so the proxy (pid and
 * start time) names the job; a singleton names itself. */
static void name_region(const struct smheap_config *cfg, struct smheap_region *r)
{
    pid_t owner = cfg->singleton ? getpid() : launching_proxy();

    snprintf(r->job_key, sizeof(r->job_key), "%u-%d-%llu%s", (unsigned) geteuid(),
             (int) owner, start_time(owner), cfg->singleton ? "-s" : "");
    snprintf(r->name, sizeof(r->name), "/smheap-%s", r->job_key);
}

/* Slice size: the configured one, or /dev/shm shared out between the local ranks.  The
 * reservation is virtual; pages are committed as the engine hands them out. */
static int size_region(const struct smheap_config *cfg, struct smheap_region *r,
                       char *why, size_t why_len)
{
    struct statvfs vfs;
    size_t capacity, slice;

    if (statvfs("/dev/shm", &vfs) != 0) {
        snprintf(why, why_len, "/dev/shm is not available (%s); mount a tmpfs there",
                 strerror(errno));
        return -1;
    }
    capacity = (size_t) vfs.f_blocks * vfs.f_frsize;
    slice = (cfg->slice_size + SLICE_ALIGN - 1) & ~(SLICE_ALIGN - 1);
    if (slice == 0 && capacity > SMHEAP_REGION_HEADER_SIZE) {
        slice = (capacity - SMHEAP_REGION_HEADER_SIZE) / (size_t) cfg->local_size;
        slice = slice > MAX_AUTO_SLICE ? MAX_AUTO_SLICE : slice & ~(SLICE_ALIGN - 1);
    }
    if (cfg->slice_size != 0 && slice < MIN_SLICE) {
        snprintf(why, why_len, "MPIR_CVAR_CH3_SMHEAP_SIZE asks for %llu MiB per rank, below "
                 "the minimum of %llu MiB", MiB(slice), MiB(MIN_SLICE));
        return -1;
    }
    if (capacity < SMHEAP_REGION_HEADER_SIZE + MIN_SLICE * (size_t) cfg->local_size) {
        snprintf(why, why_len, "/dev/shm holds %llu MiB, too small for a shared heap of %d "
                 "rank(s) (at least %llu MiB each); enlarge it to at least %llu MiB "
                 "(docker run --shm-size=..., or mount -o remount,size=... /dev/shm)",
                 MiB(capacity), cfg->local_size, MiB(MIN_SLICE),
                 MiB(SMHEAP_REGION_HEADER_SIZE + MIN_SLICE * (size_t) cfg->local_size));
        return -1;
    }
    if (slice > (capacity - SMHEAP_REGION_HEADER_SIZE) / (size_t) cfg->local_size) {
        snprintf(why, why_len, "/dev/shm holds %llu MiB, too small for a shared heap of %d "
                 "rank(s) x %llu MiB; set MPIR_CVAR_CH3_SMHEAP_SIZE between %lluM and %lluM, "
                 "or enlarge /dev/shm", MiB(capacity), cfg->local_size, MiB(slice),
                 MiB(MIN_SLICE),
                 MiB((capacity - SMHEAP_REGION_HEADER_SIZE) / (size_t) cfg->local_size));
        return -1;
    }
    r->nslices = cfg->local_size;
    r->slice_size = slice;
    r->size = SMHEAP_REGION_HEADER_SIZE + slice * (size_t) cfg->local_size;
    return 0;
}

static void *map_at(uintptr_t addr, size_t size, int fd)
{
    void *p = mmap((void *) addr, size, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);

    if (p != MAP_FAILED && (uintptr_t) p != addr) {     /* a kernel without NOREPLACE */
        munmap(p, size);
        errno = EEXIST;
        p = MAP_FAILED;
    }
    return p;
}

static int create_region(struct smheap_region *r, char *why, size_t why_len)
{
    struct region_header *h;
    int i;

    if (ftruncate(r->fd, (off_t) r->size) != 0) {
        snprintf(why, why_len, "cannot size %s (%s)", r->name, strerror(errno));
        return -1;
    }
    for (i = 0; i < BASE_CANDIDATES; i++) {
        uintptr_t base = FIRST_BASE + (uintptr_t) i * BASE_STEP;

        if (map_at(base, r->size, r->fd) != MAP_FAILED) {
            r->base = base;
            break;
        }
    }
    if (r->base == 0) {
        snprintf(why, why_len, "found no free address range of %llu MiB for the shared heap",
                 MiB(r->size));
        h = mmap(NULL, sizeof(*h), PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
        if (h != MAP_FAILED) {  /* so that the other ranks stop waiting */
            atomic_store_explicit(&h->magic, REGION_FAILED, memory_order_release);
            munmap(h, sizeof(*h));
        }
        return -1;
    }
    h = (struct region_header *) r->base;
    h->base = r->base;
    h->size = r->size;
    h->slice_size = r->slice_size;
    h->nslices = (uint32_t) r->nslices;
    h->uid = (uint32_t) geteuid();
    memcpy(h->job_key, r->job_key, sizeof(h->job_key));
    atomic_store_explicit(&h->magic, REGION_MAGIC, memory_order_release);
    return 0;
}

/* Wait for the creator to publish the header, then check it describes this job. */
static struct region_header *read_header(struct smheap_region *r, char *why, size_t why_len)
{
    struct timespec pause = { 0, 1000000 };
    struct region_header *h;
    struct stat st;
    long waited_ms;

    for (waited_ms = 0;; waited_ms++) {
        if (fstat(r->fd, &st) != 0) {
            snprintf(why, why_len, "cannot stat %s (%s)", r->name, strerror(errno));
            return NULL;
        }
        if (st.st_uid != geteuid() || (st.st_mode & 0777) != 0600) {
            snprintf(why, why_len, "/dev/shm%s exists but is not this user's private file; "
                     "remove it", r->name);
            return NULL;
        }
        if ((size_t) st.st_size >= sizeof(*h))
            break;
        if (waited_ms > JOIN_TIMEOUT_S * 1000)
            goto timeout;
        nanosleep(&pause, NULL);
    }
    h = mmap(NULL, sizeof(*h), PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
    if (h == MAP_FAILED) {
        snprintf(why, why_len, "cannot map %s (%s)", r->name, strerror(errno));
        return NULL;
    }
    for (; atomic_load_explicit(&h->magic, memory_order_acquire) != REGION_MAGIC; waited_ms++) {
        uint64_t magic = atomic_load_explicit(&h->magic, memory_order_acquire);

        if (magic == REGION_FAILED) {
            snprintf(why, why_len, "the local rank that creates %s could not map it", r->name);
            munmap(h, sizeof(*h));
            return NULL;
        }
        if (magic != 0) {       /* the creator writes 0 (ftruncate) and then REGION_MAGIC */
            snprintf(why, why_len, "/dev/shm%s exists but is not a shared heap; remove it",
                     r->name);
            munmap(h, sizeof(*h));
            return NULL;
        }
        if (waited_ms > JOIN_TIMEOUT_S * 1000) {
            munmap(h, sizeof(*h));
            goto timeout;
        }
        nanosleep(&pause, NULL);
    }
    if (strncmp(h->job_key, r->job_key, sizeof(h->job_key)) != 0 || h->uid != geteuid() ||
        h->nslices != (uint32_t) r->nslices || h->slice_size != r->slice_size) {
        snprintf(why, why_len, "/dev/shm%s exists but is not this job's shared heap "
                 "(%u ranks x %llu MiB, job %.40s; this rank expects %d x %llu MiB); remove it",
                 r->name, h->nslices, MiB(h->slice_size), h->job_key, r->nslices,
                 MiB(r->slice_size));
        munmap(h, sizeof(*h));
        return NULL;
    }
    return h;

  timeout:
    snprintf(why, why_len, "waited %d s for the local rank that creates %s; it did not finish",
             JOIN_TIMEOUT_S, r->name);
    return NULL;
}

/* The job's rendezvous: an abstract UNIX socket (no file; gone when its process is). */
static socklen_t rendezvous_address(const struct smheap_region *r, struct sockaddr_un *a)
{
    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "smheap-%s", r->job_key);
    return (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + strlen(a->sun_path + 1));
}

/* 1 if this rank creates the region (it keeps the socket bound for its lifetime), 0 if
 * another rank of the job does, -1 on error. */
static int elect_creator(struct smheap_region *r, char *why, size_t why_len)
{
    struct sockaddr_un a;
    socklen_t len = rendezvous_address(r, &a);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (s < 0) {
        snprintf(why, why_len, "cannot create a socket (%s)", strerror(errno));
        return -1;
    }
    if (bind(s, (struct sockaddr *) &a, len) == 0 && listen(s, SOMAXCONN) == 0)
        return 1;       /* s stays open: it names the creator */
    close(s);
    if (errno == EADDRINUSE)
        return 0;
    snprintf(why, why_len, "cannot bind the job's socket @%s (%s)", a.sun_path + 1,
             strerror(errno));
    return -1;
}

/* The creator's pid, from its end of the job's socket.  Each rank connects once and the
 * creator never accepts, so the connections wait in its queue; connecting without
 * blocking means that even a full queue cannot stall a rank. */
static pid_t find_creator(const struct smheap_region *r, char *why, size_t why_len)
{
    struct timespec pause = { 0, 1000000 };
    struct sockaddr_un a;
    socklen_t len = rendezvous_address(r, &a), credlen = sizeof(struct ucred);
    struct ucred cred;
    long waited_ms;
    int s, n;

    for (waited_ms = 0; waited_ms <= JOIN_TIMEOUT_S * 1000; waited_ms++, nanosleep(&pause, NULL)) {
        s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (s < 0) {
            snprintf(why, why_len, "cannot create a socket (%s)", strerror(errno));
            return -1;
        }
        if (connect(s, (struct sockaddr *) &a, len) != 0) {
            close(s);
            continue;   /* the creator has not bound or listened yet */
        }
        n = getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &credlen);
        close(s);
        if (n != 0 || cred.uid != geteuid()) {
            snprintf(why, why_len, "the job's socket @%s belongs to another user; this job "
                     "cannot share a heap", a.sun_path + 1);
            return -1;
        }
        return cred.pid;
    }
    snprintf(why, why_len, "waited %d s for a local rank to start creating the shared heap",
             JOIN_TIMEOUT_S);
    return -1;
}

/* The creator's descriptor for the file, low numbers first; -1 if it has none yet. */
static int open_from_fd_table(pid_t pid, const char *want)
{
    char path[64], link[128];
    int fd, n;

    for (fd = 0; fd < 1024; fd++) {
        snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int) pid, fd);
        n = (int) readlink(path, link, sizeof(link) - 1);
        if (n < 0)
            continue;
        link[n] = '\0';
        if (strcmp(link, want) == 0)
            return open(path, O_RDWR | O_CLOEXEC);
    }
    errno = ENOENT;
    return -1;
}

/* Open the creator's file through /proc/<creator>/fd: its name is already gone. */
static int open_creators_file(struct smheap_region *r, char *why, size_t why_len)
{
    struct timespec pause = { 0, 1000000 };
    char want[128];
    pid_t pid = find_creator(r, why, why_len);
    long waited_ms;

    if (pid < 0)
        return -1;
    snprintf(want, sizeof(want), "/dev/shm%s (deleted)", r->name);
    for (waited_ms = 0; waited_ms <= JOIN_TIMEOUT_S * 1000; waited_ms++, nanosleep(&pause, NULL)) {
        r->fd = open_from_fd_table(pid, want);
        if (r->fd >= 0)
            return 0;
        if (errno != ENOENT) {
            snprintf(why, why_len, "cannot open the shared heap of local rank pid %d "
                     "through /proc (%s)", (int) pid, strerror(errno));
            return -1;
        }
        if (kill(pid, 0) != 0 && errno == ESRCH) {
            snprintf(why, why_len, "the local rank that creates the shared heap (pid %d) "
                     "ended before it finished", (int) pid);
            return -1;
        }
    }
    snprintf(why, why_len, "waited %d s for the local rank that creates the shared heap "
             "(pid %d); it did not finish", JOIN_TIMEOUT_S, (int) pid);
    return -1;
}

static int join_region(struct smheap_region *r, char *why, size_t why_len)
{
    struct region_header *h = read_header(r, why, why_len);
    int rc = 0;

    if (h == NULL)
        return -1;
    r->base = (uintptr_t) h->base;
    if (map_at(r->base, r->size, r->fd) == MAP_FAILED) {
        snprintf(why, why_len, "cannot map the shared heap at %#lx, where the other ranks "
                 "have it (%s)", (unsigned long) r->base, strerror(errno));
        r->base = 0;
        rc = -1;
    }
    munmap(h, sizeof(*h));
    return rc;
}

/* The region stays mapped until the process ends; tell memcheck so before it checks
 * that every disabled error range was re-enabled. */
static struct smheap_region *valgrind_region;

static void __attribute__((destructor)) valgrind_forget_region(void)
{
    struct smheap_region *r = valgrind_region;

    if (r != NULL) {
        VALGRIND_ENABLE_ADDR_ERROR_REPORTING_IN_RANGE((void *) r->base, r->slice - r->base);
        VALGRIND_ENABLE_ADDR_ERROR_REPORTING_IN_RANGE((void *) (r->slice + r->slice_size),
                                                      r->base + r->size - r->slice -
                                                      r->slice_size);
    }
}

int smheap_region_attach(const struct smheap_config *cfg, struct smheap_region *r,
                         char *why, size_t why_len)
{
    int rc;

    memset(r, 0, sizeof(*r));
    r->fd = -1;
    name_region(cfg, r);
    if (size_region(cfg, r, why, why_len) != 0)
        return -1;

    r->created = cfg->singleton ? 1 : elect_creator(r, why, why_len);
    if (r->created < 0)
        return -1;
    if (r->created) {
        r->fd = shm_open(r->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (r->fd < 0 && errno == EEXIST) {
            snprintf(why, why_len, "/dev/shm%s already exists and is not this job's (left "
                     "by a job killed as it started, or someone else's); remove it", r->name);
            return -1;
        }
        if (r->fd < 0) {
            snprintf(why, why_len, "cannot create /dev/shm%s (%s)", r->name, strerror(errno));
            return -1;
        }
        smheap_region_unlink(r);        /* the others open it through /proc */
    } else if (open_creators_file(r, why, why_len) != 0)
        return -1;
    rc = r->created ? create_region(r, why, why_len) : join_region(r, why, why_len);
    if (rc != 0) {
        close(r->fd);
        r->fd = -1;
        return -1;
    }
    r->slice = r->base + SMHEAP_REGION_HEADER_SIZE + (uintptr_t) cfg->local_rank * r->slice_size;
    if (smheap_region_backing_init(r, why, why_len) != 0)
        return -1;
    if (RUNNING_ON_VALGRIND) {  /* see smheap_valgrind.h */
        VALGRIND_MAKE_MEM_NOACCESS((void *) r->base, r->size);
        VALGRIND_DISABLE_ADDR_ERROR_REPORTING_IN_RANGE((void *) r->base, r->slice - r->base);
        VALGRIND_DISABLE_ADDR_ERROR_REPORTING_IN_RANGE((void *) (r->slice + r->slice_size),
                                                       r->base + r->size - r->slice -
                                                       r->slice_size);
        valgrind_region = r;
    }
    return 0;
}

void smheap_region_unlink(const struct smheap_region *r)
{
    if (r->name[0] != '\0')
        shm_unlink(r->name);
}

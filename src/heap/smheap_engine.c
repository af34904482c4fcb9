/*
 * smheap -- the engine: jemalloc, embedded in libmpi under its own prefix, allocating only
 * from this rank's slice of the region.
 *
 * jemalloc (Debian's source package, built by maint/setup.sh with the prefix smheap_je_,
 * hidden symbols and global-dynamic TLS so that a dlopen()ed libmpi still loads) gets a
 * few arenas whose extent hooks hand out the slice with a bump pointer.  Their metadata stays in
 * private memory (metadata_use_hooks = false), so a forked child that runs jemalloc's
 * fork handlers cannot rewrite the parent's arena.  Pages are committed with fallocate
 * before jemalloc touches them (a full tmpfs becomes a NULL here, never a SIGBUS) and
 * decommitted with MADV_REMOVE, which gives them back to tmpfs.  Each thread gets an
 * explicit tcache: the implicit one would mix in blocks from jemalloc's default arenas.
 *
 * A trip through tmpfs (fallocate zero-fills the pages, the first touch maps them, MADV_REMOVE
 * drops them) costs about twice what glibc pays for fresh anonymous pages, so freed blocks of
 * every size stay committed for reuse: up to a bound per rank beyond what is in use, after
 * which everything freed goes back to tmpfs at once, and, within jemalloc's decay time,
 * whatever a rank no longer reuses.
 */

#define _GNU_SOURCE
#include "smheap_engine.h"

#include <jemalloc/jemalloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* jemalloc's options for this embedded copy (a user's MALLOC_CONF is for their own
 * jemalloc, not this one): cache blocks up to 1 MiB per thread (4x the throughput of
 * jemalloc's default on a mix with large blocks), but fewer small blocks per size class
 * (bench/heap: peak RSS 1.08x glibc's instead of 1.11x, same throughput); decommit
 * freed pages once they decay instead of keeping them "muzzy" (MADV_FREE does nothing on
 * shared memory); no automatic arenas beyond the one jemalloc needs itself.  Two more
 * keep big blocks out of tmpfs round trips: no "oversize" arena, whose blocks (8 MiB and
 * up) are decommitted the moment they are freed; and no retained ranges, so that a block
 * that grows past its range asks the hooks for the addresses after it (extent_alloc),
 * which the bump pointer grants when the block is the last one carved out of the slice:
 * realloc grows in place instead of moving at every size class. */
#define STRINGIFY(x) #x
#define VALUE_OF(x) STRINGIFY(x)
const char *smheap_je_malloc_conf = "tcache_max:" VALUE_OF(SMHEAP_ENGINE_CACHED_MAX) ","
    "tcache_nslots_small_max:32,"
    "lg_tcache_nslots_mul:-1,muzzy_decay_ms:0,narenas:1,oversize_threshold:0,retain:false,lg_extent_max_active_fit:63";

/* experimental.arenas_create_ext's argument; jemalloc 5.3.0 keeps this struct in an
 * internal header (include/jemalloc/internal/arena_types.h), so it is repeated here. */
struct arena_config {
    extent_hooks_t *extent_hooks;
    bool metadata_use_hooks;
};

/* Threads spread over a few arenas (one per two CPUs: each arena costs some memory in
 * partly used slabs), so they do not all queue on one arena's locks; all of them take
 * extents from the same slice. */
#define MAX_ARENAS 8

static const struct smheap_region *region;
static unsigned arenas[MAX_ARENAS];
static unsigned narenas;
static atomic_uint next_arena;
static pthread_mutex_t bump_lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t bump, slice_end;
static int tmpfs_full;

static void report_tmpfs_full(void)
{
    static const char msg[] = "smheap: /dev/shm is full; further allocations of this rank "
        "come from the private heap (see the MPI_T variable smheap_glibc_full)\n";

    if (!__atomic_exchange_n(&tmpfs_full, 1, __ATOMIC_RELAXED))
        (void) !write(STDERR_FILENO, msg, sizeof(msg) - 1);
}

/* A fresh range of the slice.  jemalloc asks for new_addr only to grow an extent in
 * place, which the bump pointer allows at its end. */
static void *extent_alloc(extent_hooks_t * hooks, void *new_addr, size_t size,
                          size_t alignment, bool *zero, bool *commit, unsigned arena_ind)
{
    uintptr_t start;

    (void) hooks;
    (void) arena_ind;
    pthread_mutex_lock(&bump_lock);
    start = new_addr ? (uintptr_t) new_addr : (bump + alignment - 1) & ~(uintptr_t) (alignment - 1);
    if ((new_addr && start != bump) || start < bump || size > slice_end - start)
        goto fail;
    if (*commit && smheap_region_commit(region, (void *) start, size) != 0) {
        report_tmpfs_full();
        goto fail;
    }
    bump = start + size;
    pthread_mutex_unlock(&bump_lock);
    *zero = true;               /* never handed out before: the file reads as zeros */
    return (void *) start;

  fail:
    pthread_mutex_unlock(&bump_lock);
    return NULL;
}

/* Decline: jemalloc keeps the range and reuses it. */
static bool extent_dalloc(extent_hooks_t * hooks, void *addr, size_t size, bool committed,
                          unsigned arena_ind)
{
    (void) hooks, (void) addr, (void) size, (void) committed, (void) arena_ind;
    return true;
}

static void extent_destroy(extent_hooks_t * hooks, void *addr, size_t size, bool committed,
                           unsigned arena_ind)
{
    (void) hooks, (void) arena_ind;
    if (committed)
        smheap_region_decommit(region, addr, size);
}

static bool extent_commit(extent_hooks_t * hooks, void *addr, size_t size, size_t offset,
                          size_t length, unsigned arena_ind)
{
    (void) hooks, (void) size, (void) arena_ind;
    if (smheap_region_commit(region, (char *) addr + offset, length) == 0)
        return false;
    report_tmpfs_full();
    return true;
}

static bool extent_decommit(extent_hooks_t * hooks, void *addr, size_t size, size_t offset,
                            size_t length, unsigned arena_ind)
{
    (void) hooks, (void) size, (void) arena_ind;
    smheap_region_decommit(region, (char *) addr + offset, length);
    return false;
}

/* One mapping: any range splits and adjacent ranges merge. */
static bool extent_split(extent_hooks_t * hooks, void *addr, size_t size, size_t size_a,
                         size_t size_b, bool committed, unsigned arena_ind)
{
    (void) hooks, (void) addr, (void) size, (void) size_a, (void) size_b, (void) committed;
    (void) arena_ind;
    return false;
}

static bool extent_merge(extent_hooks_t * hooks, void *addr_a, size_t size_a, void *addr_b,
                         size_t size_b, bool committed, unsigned arena_ind)
{
    (void) hooks, (void) addr_a, (void) size_a, (void) addr_b, (void) size_b, (void) committed;
    (void) arena_ind;
    return false;
}

/* No purge hooks: jemalloc then decommits, so every page it writes was committed first. */
static extent_hooks_t slice_hooks = {
    .alloc = extent_alloc,
    .dalloc = extent_dalloc,
    .destroy = extent_destroy,
    .commit = extent_commit,
    .decommit = extent_decommit,
    .split = extent_split,
    .merge = extent_merge,
};

/*
 * Freed memory kept for reuse.  "Idle" is what the slice has committed beyond the bytes in
 * use.  Above the bound, every arena gives its freed pages back (arena.<i>.purge).  When a
 * block needed fresh pages although freed memory was kept, what was kept did not fit it
 * (a program whose arrays grow from step to step): then a sixteenth of the bound is kept,
 * as glibc unmaps a big block when it is freed.  What a purge cannot give back (blocks in
 * thread caches, partly used slabs) is remembered, so that it does not make every later
 * check purge again.
 */
static size_t retain_bound;
static _Atomic size_t unpurgeable;
static atomic_flag purging = ATOMIC_FLAG_INIT;
static size_t purge_mib[3], decay_mib[3];

static size_t idle_bytes(uint64_t in_use)
{
    size_t committed = smheap_region_committed(region);

    return committed > in_use ? committed - (size_t) in_use : 0;
}

static void for_each_arena(size_t * mib)
{
    unsigned i;

    for (i = 0; i < narenas; i++) {
        mib[1] = arenas[i];
        smheap_je_mallctlbymib(mib, 3, NULL, NULL, NULL, 0);
    }
}

int smheap_engine_bound_idle(uint64_t in_use, int after_fresh_pages)
{
    size_t idle = idle_bytes(in_use);
    size_t floor = atomic_load_explicit(&unpurgeable, memory_order_relaxed);
    size_t bound = after_fresh_pages ? retain_bound / 16 : retain_bound;

    if (idle < floor)           /* the caches drained since the last purge */
        atomic_store_explicit(&unpurgeable, floor = idle, memory_order_relaxed);
    if (idle <= bound + floor || atomic_flag_test_and_set(&purging))
        return 0;
    for_each_arena(purge_mib);
    atomic_store_explicit(&unpurgeable, idle_bytes(in_use), memory_order_relaxed);
    atomic_flag_clear(&purging);
    return 1;
}

void smheap_engine_decay(void)
{
    for_each_arena(decay_mib);
}

size_t smheap_engine_committed(void)
{
    return region ? smheap_region_committed(region) : 0;
}

/* An eighth of the slice (which is /dev/shm shared out between the node's ranks), between
 * 64 MiB and 1 GiB: enough to reuse the big temporary arrays of a time step. */
static size_t auto_retain(size_t slice_size)
{
    const size_t lo = (size_t) 64 << 20, hi = (size_t) 1 << 30;

    return slice_size / 8 < lo ? lo : slice_size / 8 > hi ? hi : slice_size / 8;
}

int smheap_engine_start(const struct smheap_region *r, size_t retain, char *why,
                        size_t why_len)
{
    struct arena_config config = { &slice_hooks, false };
    size_t miblen = 3;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned want = cpus < 4 ? 1 : cpus / 2 > MAX_ARENAS ? MAX_ARENAS : (unsigned) cpus / 2;

    if (smheap_je_mallctlnametomib("arena.0.purge", purge_mib, &miblen) != 0 ||
        (miblen = 3, smheap_je_mallctlnametomib("arena.0.decay", decay_mib, &miblen)) != 0) {
        snprintf(why, why_len, "jemalloc has no arena.<i>.purge or arena.<i>.decay");
        return -1;
    }
    retain_bound = retain != SMHEAP_RETAIN_AUTO ? retain : auto_retain(r->slice_size);
    region = r;
    bump = r->slice;
    slice_end = r->slice + r->slice_size;
    for (narenas = 0; narenas < want; narenas++) {
        size_t len = sizeof(arenas[0]);
        int rc = smheap_je_mallctl("experimental.arenas_create_ext", &arenas[narenas], &len,
                                   &config, sizeof(config));

        if (rc != 0) {
            snprintf(why, why_len, "jemalloc could not create an arena on the slice (%s)",
                     strerror(rc));
            return -1;
        }
    }
    return 0;
}

/*
 * Per-thread state.  A thread's first allocation registers a thread-exit callback, which
 * glibc runs before any pthread key destructor (jemalloc's own cleanup is one); after it,
 * the thread allocates from the private heap and frees without a tcache.
 */
enum thread_phase { THREAD_NEW, THREAD_STARTING, THREAD_READY, THREAD_EXITED };
static __thread struct {
    unsigned char phase;
    unsigned tcache;
    unsigned arena;
} self;

extern int __cxa_thread_atexit_impl(void (*fn)(void *), void *arg, void *dso_handle);
extern void *__dso_handle;

static void thread_exit(void *unused)
{
    (void) unused;
    if (self.phase == THREAD_READY)
        smheap_je_mallctl("tcache.destroy", NULL, NULL, &self.tcache, sizeof(self.tcache));
    self.phase = THREAD_EXITED;
}

static void thread_start(void)
{
    size_t len = sizeof(self.tcache);

    self.arena = arenas[atomic_fetch_add_explicit(&next_arena, 1, memory_order_relaxed) %
                        narenas];
    self.phase = THREAD_STARTING;       /* registering may allocate: no tcache yet */
    __cxa_thread_atexit_impl(thread_exit, NULL, &__dso_handle);
    if (smheap_je_mallctl("tcache.create", &self.tcache, &len, NULL, 0) == 0)
        self.phase = THREAD_READY;
}

static inline int tcache_flag(void)
{
    return self.phase == THREAD_READY ? MALLOCX_TCACHE(self.tcache) : MALLOCX_TCACHE_NONE;
}

void *smheap_engine_alloc(size_t size, size_t alignment, int zero, size_t * usable)
{
    int flags;
    void *p;

    if (__builtin_expect(self.phase != THREAD_READY, 0)) {
        if (self.phase == THREAD_EXITED)
            return NULL;
        if (self.phase == THREAD_NEW)
            thread_start();
    }
    flags = MALLOCX_ARENA(self.arena) | tcache_flag();
    if (alignment)
        flags |= MALLOCX_ALIGN(alignment);
    if (zero)
        flags |= MALLOCX_ZERO;
    p = smheap_je_mallocx(size ? size : 1, flags);
    if (p != NULL)      /* from the size class: no second lookup of the block */
        *usable = smheap_je_nallocx(size ? size : 1, flags);
    return p;
}

void *smheap_engine_resize(void *p, size_t size)
{
    if (self.phase == THREAD_EXITED)
        return NULL;
    if (self.phase == THREAD_NEW)
        thread_start();
    return smheap_je_rallocx(p, size ? size : 1, MALLOCX_ARENA(self.arena) | tcache_flag());
}

size_t smheap_engine_free(void *p)
{
    size_t usable = smheap_je_sallocx(p, 0);

    smheap_je_sdallocx(p, usable, tcache_flag());       /* sized: one lookup, not two */
    return usable;
}

size_t smheap_engine_usable_size(const void *p)
{
    return smheap_je_sallocx(p, 0);
}

int smheap_engine_thread_exited(void)
{
    return self.phase == THREAD_EXITED;
}

/*
 * smheap -- the engine: jemalloc, embedded in libmpi under its own prefix, allocating only
 * from this rank's slice of the region.
 *
 * jemalloc (Debian's source package, built by maint/setup.sh with the prefix smheap_je_,
 * hidden symbols and its thread data behind a pthread key, so that a dlopen()ed libmpi
 * can serve malloc: maint/patches/jemalloc/0001) gets
 * arenas whose extent hooks hand out the slice with bump pointers.  Their metadata stays
 * in private memory (metadata_use_hooks = false), so a forked child that runs jemalloc's
 * fork handlers cannot rewrite the parent's arena.  Pages are committed with fallocate
 * before jemalloc touches them (a full tmpfs becomes a NULL here, never a SIGBUS) and
 * decommitted with MADV_REMOVE, which gives them back to tmpfs.
 *
 * The slice has two parts.  The first quarter serves blocks up to SMHEAP_ENGINE_CACHED_MAX
 * from a few "small" arenas, through jemalloc's own fast paths and thread caches: every
 * thread is bound to one of them.  The rest serves bigger blocks from one "large" arena,
 * where no slab sits between two big blocks: a freed block merges with its free
 * neighbours, and a block that grows finds free addresses after it.  Either part lends
 * to the other when it is full.
 *
 * A trip through tmpfs (fallocate zero-fills the pages, the first touch maps them,
 * MADV_REMOVE drops them) costs more than glibc pays for fresh anonymous pages (figures:
 * doc/heap.md), so freed big blocks stay committed for reuse, up to a bound per rank
 * (smheap_engine_start); jemalloc's background thread gives back whatever has not been
 * reused for 10 s.
 */

#define _GNU_SOURCE
#include "smheap_engine.h"
#include "smheap_stats.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* jemalloc's options for this embedded copy (a user's MALLOC_CONF is for their own
 * jemalloc, not this one):
 * - cache blocks up to 1 MiB per thread (with jemalloc's default, a mix with large blocks
 *   goes to the arena for each of them), but at most 8 small blocks per size class: a
 *   thread that only frees (a consumer) never sweeps its cache, so what it caches is held
 *   from everyone, and the memory fewer slots save outweighs the time they cost small-block
 *   churn; sweep the cache once per 1 MiB allocated, not 64 KiB, since a sweep at every
 *   block of 64 KiB and more slows their malloc+free down (figures: doc/heap.md);
 * - decommit freed pages once they decay instead of keeping them "muzzy" (MADV_FREE does
 *   nothing on shared memory);
 * - no automatic arenas beyond the one jemalloc needs itself, and no "oversize" arena,
 *   whose blocks (8 MiB and up) are decommitted the moment they are freed;
 * - no retained ranges, so that a block that grows past its extent asks the hooks for
 *   the addresses after it, which the bump pointer grants to the last block of its part;
 * - any freed extent may be split for a smaller request (jemalloc caps it at 64x by
 *   default, which leaves big freed blocks unused while fresh pages are committed);
 * - one background thread for the decay, started by smheap_engine_start_background. */
#define STRINGIFY(x) #x
#define VALUE_OF(x) STRINGIFY(x)
const char *smheap_je_malloc_conf = "tcache_max:" VALUE_OF(SMHEAP_ENGINE_CACHED_MAX) ","
    "tcache_nslots_small_max:8,lg_tcache_nslots_mul:-1,"
    "tcache_gc_incr_bytes:" VALUE_OF(SMHEAP_ENGINE_CACHED_MAX) ",muzzy_decay_ms:0,narenas:1,"
    "oversize_threshold:0,retain:false,lg_extent_max_active_fit:63,max_background_threads:1";

/* experimental.arenas_create_ext's argument; jemalloc 5.3.0 keeps this struct in an
 * internal header (include/jemalloc/internal/arena_types.h), so it is repeated here. */
struct arena_config {
    extent_hooks_t *extent_hooks;
    bool metadata_use_hooks;
};

/* Threads spread over a few small arenas (one per two CPUs: each arena costs some memory
 * in partly used slabs), so they do not all queue on one arena's locks. */
#define MAX_SMALL_ARENAS 8
#define SMALL_PART_DIVISOR 4
#define PART_ALIGN ((uintptr_t) 4 << 20)

/* A part of the slice and the bump pointer that hands it out. */
struct part {
    pthread_mutex_t lock;
    uintptr_t bump, end;
};

static const struct smheap_region *region;
static struct part small_part = { PTHREAD_MUTEX_INITIALIZER, 0, 0 };
static struct part large_part = { PTHREAD_MUTEX_INITIALIZER, 0, 0 };
static unsigned small_arenas[MAX_SMALL_ARENAS], nsmall;
static unsigned large_arena;
static atomic_uint next_arena;
static int tmpfs_full;

/* Bytes the large arena has committed, and bytes of its blocks in use. */
static _Atomic size_t large_committed, large_in_use;
static atomic_bool keeping_pages;       /* smheap_engine_keep_pages was called */

static void report_tmpfs_full(void)
{
    static const char msg[] = "smheap: /dev/shm is full; further allocations of this rank "
        "come from the private heap (see the MPI_T variable smheap_glibc_full)\n";

    if (!__atomic_exchange_n(&tmpfs_full, 1, __ATOMIC_RELAXED))
        (void) !write(STDERR_FILENO, msg, sizeof(msg) - 1);
}

static struct part *part_of(unsigned arena_ind)
{
    return arena_ind == large_arena ? &large_part : &small_part;
}

static int commit(unsigned arena_ind, void *addr, size_t len)
{
    if (smheap_region_commit(region, addr, len) != 0) {
        report_tmpfs_full();
        return -1;
    }
    if (arena_ind == large_arena)
        atomic_fetch_add_explicit(&large_committed, len, memory_order_relaxed);
    return 0;
}

static void decommit(unsigned arena_ind, void *addr, size_t len)
{
    smheap_region_decommit(region, addr, len);
    if (arena_ind == large_arena)
        atomic_fetch_sub_explicit(&large_committed, len, memory_order_relaxed);
}

/* A fresh range of the arena's part.  jemalloc asks for new_addr only to grow an extent
 * in place, which the bump pointer allows at its end. */
static void *extent_alloc(extent_hooks_t * hooks, void *new_addr, size_t size,
                          size_t alignment, bool *zero, bool *commit_it, unsigned arena_ind)
{
    struct part *part = part_of(arena_ind);
    uintptr_t start;

    (void) hooks;
    pthread_mutex_lock(&part->lock);
    start = new_addr ? (uintptr_t) new_addr :
        (part->bump + alignment - 1) & ~(uintptr_t) (alignment - 1);
    if ((new_addr && start != part->bump) || start < part->bump || start > part->end ||
        size > part->end - start || (*commit_it && commit(arena_ind, (void *) start, size))) {
        pthread_mutex_unlock(&part->lock);
        return NULL;
    }
    part->bump = start + size;
    pthread_mutex_unlock(&part->lock);
    *zero = true;               /* never handed out before: the file reads as zeros */
    return (void *) start;
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
    (void) hooks;
    if (committed && !atomic_load_explicit(&keeping_pages, memory_order_relaxed))
        decommit(arena_ind, addr, size);
}

static bool extent_commit(extent_hooks_t * hooks, void *addr, size_t size, size_t offset,
                          size_t length, unsigned arena_ind)
{
    (void) hooks, (void) size;
    return commit(arena_ind, (char *) addr + offset, length) != 0;
}

/* Keeping pages, opt out: jemalloc then keeps the range committed and reuses it. */
static bool extent_decommit(extent_hooks_t * hooks, void *addr, size_t size, size_t offset,
                            size_t length, unsigned arena_ind)
{
    (void) hooks, (void) size;
    if (atomic_load_explicit(&keeping_pages, memory_order_relaxed))
        return true;
    decommit(arena_ind, (char *) addr + offset, length);
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
 * Freed big blocks kept for reuse: what the large arena has committed beyond its blocks
 * in use.  Above the bound, it gives its freed pages back (arena.<i>.purge).  When a block
 * needed fresh pages although freed ones were kept, those did not fit it (a program whose
 * arrays grow from step to step): then only a sixteenth of the bound is kept, much as
 * glibc unmaps a big block as soon as it is freed.
 */
static size_t retain_bound;
static atomic_flag purging = ATOMIC_FLAG_INIT;
static size_t purge_mib[3];

uintptr_t smheap_engine_large_start;

static int in_large_part(const void *p)
{
    return (uintptr_t) p >= smheap_engine_large_start;
}

static void bound_idle(int after_fresh_pages)
{
    size_t committed = atomic_load_explicit(&large_committed, memory_order_relaxed);
    size_t in_use = atomic_load_explicit(&large_in_use, memory_order_relaxed);
    size_t bound = after_fresh_pages ? retain_bound / 16 : retain_bound;

    if (committed <= in_use + bound || atomic_load_explicit(&keeping_pages, memory_order_relaxed)
        || atomic_flag_test_and_set(&purging))
        return;
    purge_mib[1] = large_arena;
    smheap_je_mallctlbymib(purge_mib, 3, NULL, NULL, NULL, 0);
    atomic_flag_clear(&purging);
    smheap_count(SMHEAP_PURGES, 1);
}

/* Count a big block of the large part in or out of use. */
static void count_large(const void *p, size_t usable, int sign)
{
    if (usable > SMHEAP_ENGINE_CACHED_MAX && in_large_part(p))
        atomic_fetch_add_explicit(&large_in_use, sign * usable, memory_order_relaxed);
}

/* An eighth of the slice (which is /dev/shm shared out between the node's ranks), between
 * 64 MiB and 1 GiB: enough to reuse the big temporary arrays of a time step. */
static size_t auto_retain(size_t slice_size)
{
    const size_t lo = (size_t) 64 << 20, hi = (size_t) 1 << 30;

    return slice_size / 8 < lo ? lo : slice_size / 8 > hi ? hi : slice_size / 8;
}

static int create_arena(unsigned *ind, char *why, size_t why_len)
{
    struct arena_config config = { &slice_hooks, false };
    size_t len = sizeof(*ind);
    int rc = smheap_je_mallctl("experimental.arenas_create_ext", ind, &len, &config,
                               sizeof(config));

    if (rc != 0)
        snprintf(why, why_len, "jemalloc could not create an arena on the slice (%s)",
                 strerror(rc));
    return rc ? -1 : 0;
}

int smheap_engine_start(const struct smheap_region *r, size_t retain, char *why,
                        size_t why_len)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned want = cpus < 4 ? 1 : cpus / 2 > MAX_SMALL_ARENAS ? MAX_SMALL_ARENAS :
        (unsigned) cpus / 2;
    size_t miblen = 3;

    if (smheap_je_mallctlnametomib("arena.0.purge", purge_mib, &miblen) != 0) {
        snprintf(why, why_len, "jemalloc has no arena.<i>.purge");
        return -1;
    }
    retain_bound = retain != SMHEAP_RETAIN_AUTO ? retain : auto_retain(r->slice_size);
    region = r;
    small_part.bump = r->slice;
    large_part.end = r->slice + r->slice_size;
    small_part.end = large_part.bump = smheap_engine_large_start =
        r->slice + (r->slice_size / SMALL_PART_DIVISOR & ~(PART_ALIGN - 1));
    large_arena = ~0u;          /* until created: extents of the small arenas */
    for (nsmall = 0; nsmall < want; nsmall++)
        if (create_arena(&small_arenas[nsmall], why, why_len) != 0)
            return -1;
    return create_arena(&large_arena, why, why_len);
}

void smheap_engine_start_background(void)
{
    bool on = true;

    smheap_je_mallctl("background_thread", NULL, NULL, &on, sizeof(on));
}

/*
 * A thread's first allocation binds it to one of the small arenas (thread.arena), so that
 * jemalloc's fast paths and its implicit thread cache serve it: every block that cache
 * ever holds comes from, or was freed into, the slice.  It also registers a thread-exit
 * callback, which glibc runs before any pthread key destructor (jemalloc's own cleanup is
 * one); after it, the thread allocates from the private heap and frees without a cache.
 * Until a thread is bound, its calls name the arena and bypass the cache.
 */
extern int __cxa_thread_atexit_impl(void (*fn)(void *), void *arg, void *dso_handle);
extern void *__dso_handle;

static inline struct smheap_engine_thread *me(void)
{
    return &smheap_engine_thread;
}

static void thread_exit(void *unused)
{
    (void) unused;
    if (me()->phase == SMHEAP_THREAD_BOUND ||
        (me()->phase == SMHEAP_THREAD_PRIVATE && me()->phase_outside == SMHEAP_THREAD_BOUND))
        smheap_je_mallctl("thread.tcache.flush", NULL, NULL, NULL, 0);
    me()->phase = SMHEAP_THREAD_EXITED;
}

static void thread_start(void)
{
    unsigned i = atomic_fetch_add_explicit(&next_arena, 1, memory_order_relaxed);

    me()->arena = small_arenas[i % nsmall];
    me()->phase = SMHEAP_THREAD_STARTING;       /* registering may allocate: not bound yet */
    __cxa_thread_atexit_impl(thread_exit, NULL, &__dso_handle);
    if (smheap_je_mallctl("thread.arena", NULL, NULL, &me()->arena, sizeof(me()->arena)) == 0)
        me()->phase = SMHEAP_THREAD_BOUND;
}

/* The cache flag for this thread: its own once bound, none before or after. */
static inline int cache_flag(void)
{
    return me()->phase == SMHEAP_THREAD_BOUND ? 0 : MALLOCX_TCACHE_NONE;
}

/* From the given arena, or from the other part's arena when that part is full. */
static void *alloc_in(unsigned arena, unsigned other, size_t size, int flags)
{
    void *p = smheap_je_mallocx(size, flags | MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE);

    return p ? p : smheap_je_mallocx(size, flags | MALLOCX_ARENA(other) | MALLOCX_TCACHE_NONE);
}

static void *alloc_large(size_t size, int flags)
{
    size_t committed = atomic_load_explicit(&large_committed, memory_order_relaxed);
    void *p = alloc_in(large_arena, me()->arena, size, flags);

    if (p == NULL)
        return NULL;
    count_large(p, smheap_je_sallocx(p, 0), 1);
    if (atomic_load_explicit(&large_committed, memory_order_relaxed) > committed)
        bound_idle(1);
    return p;
}

static void *alloc_slowly(size_t size, int flags)
{
    if (me()->phase == SMHEAP_THREAD_EXITED || me()->phase == SMHEAP_THREAD_PRIVATE)
        return NULL;
    if (me()->phase == SMHEAP_THREAD_NEW)
        thread_start();
    if (size > SMHEAP_ENGINE_CACHED_MAX)
        return alloc_large(size, flags);
    if (me()->phase == SMHEAP_THREAD_BOUND)
        return smheap_je_mallocx(size, flags);
    return alloc_in(me()->arena, large_arena, size, flags);
}

void *smheap_engine_alloc(size_t size, size_t alignment, int zero)
{
    int flags = (alignment ? MALLOCX_ALIGN(alignment) : 0) | (zero ? MALLOCX_ZERO : 0);
    void *p;

    if (size == 0)
        size = 1;
    if (me()->phase != SMHEAP_THREAD_BOUND || size > SMHEAP_ENGINE_CACHED_MAX)
        return alloc_slowly(size, flags);
    p = smheap_je_mallocx(size, flags);
    return p ? p : alloc_in(me()->arena, large_arena, size, flags);
}

void *smheap_engine_resize(void *p, size_t size)
{
    size_t old = smheap_je_sallocx(p, 0);
    unsigned arena;
    void *q;

    if (me()->phase == SMHEAP_THREAD_EXITED || me()->phase == SMHEAP_THREAD_PRIVATE)
        return NULL;
    if (me()->phase == SMHEAP_THREAD_NEW)
        thread_start();
    if (size == 0)
        size = 1;
    arena = size > SMHEAP_ENGINE_CACHED_MAX ? large_arena : me()->arena;
    q = smheap_je_rallocx(p, size, MALLOCX_ARENA(arena) | cache_flag());
    if (q == NULL)
        return NULL;
    count_large(p, old, -1);
    count_large(q, smheap_je_sallocx(q, 0), 1);
    if (q != p && old > SMHEAP_ENGINE_CACHED_MAX)
        bound_idle(0);
    return q;
}

void smheap_engine_free_slowly(void *p)
{
    size_t usable;

    if (!in_large_part(p)) {
        smheap_je_dallocx(p, MALLOCX_TCACHE_NONE);
        return;
    }
    usable = smheap_je_sallocx(p, 0);
    smheap_je_sdallocx(p, usable, cache_flag());
    if (usable > SMHEAP_ENGINE_CACHED_MAX) {
        count_large(p, usable, -1);
        bound_idle(0);
    }
}

size_t smheap_engine_usable_size(const void *p)
{
    return smheap_je_sallocx(p, 0);
}

int smheap_engine_thread_elsewhere(void)
{
    return me()->phase == SMHEAP_THREAD_EXITED || me()->phase == SMHEAP_THREAD_PRIVATE;
}

/* A library's own memory (a network provider's buffer pools) is not the application's and
 * need not be shared: it would only take room in the slice.  Blocks allocated meanwhile are
 * glibc's, and their free() goes there wherever it is called. */
void smheap_engine_private_begin(void)
{
    if (me()->private_depth++ == 0) {
        me()->phase_outside = me()->phase;
        if (me()->phase != SMHEAP_THREAD_EXITED)
            me()->phase = SMHEAP_THREAD_PRIVATE;
    }
}

void smheap_engine_private_end(void)
{
    if (me()->private_depth > 0 && --me()->private_depth == 0 &&
        me()->phase == SMHEAP_THREAD_PRIVATE)
        me()->phase = me()->phase_outside;
}

/* jemalloc's count of active pages in the slice's arenas, refreshed. */
size_t smheap_engine_in_use(void)
{
    uint64_t epoch = 1;
    size_t pages, total = 0, len = sizeof(pages), mib[4], miblen = 4;
    unsigned i;

    if (region == NULL ||
        smheap_je_mallctl("epoch", NULL, NULL, &epoch, sizeof(epoch)) != 0 ||
        smheap_je_mallctlnametomib("stats.arenas.0.pactive", mib, &miblen) != 0)
        return 0;
    for (i = 0; i <= nsmall; i++) {
        mib[2] = i < nsmall ? small_arenas[i] : large_arena;
        if (smheap_je_mallctlbymib(mib, miblen, &pages, &len, NULL, 0) == 0)
            total += pages * (size_t) sysconf(_SC_PAGESIZE);
    }
    return total;
}

size_t smheap_engine_committed(void)
{
    return region ? smheap_region_committed(region) : 0;
}

void smheap_engine_keep_pages(void)
{
    atomic_store(&keeping_pages, true);
}

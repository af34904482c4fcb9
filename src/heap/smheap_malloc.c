/*
 * smheap -- the interposition: malloc, free, calloc, realloc, memalign, posix_memalign,
 * aligned_alloc, valloc, pvalloc and malloc_usable_size.
 *
 * glibc (>= 2.34 has no malloc hooks) documents replacing its allocator by defining these
 * symbols; its own internal calls go through them too.  Blocks are routed by address: a
 * block inside the region goes back to the engine, anything else to glibc's originals
 * (__libc_malloc and friends), so memory from before the heap started, from a full slice or
 * from a time the heap was off is always freed correctly.
 *
 * The heap starts inside the first call.  Calls made while it starts (including the ones
 * it makes itself, through libc) are served by glibc.
 *
 * A forked child shares the region with its parent, so it must neither allocate from nor
 * free into the parent's slice: it allocates from glibc, its free of a shared block does
 * nothing and its realloc of one copies.  That is right for fork-then-exec and system();
 * a long-lived child sees blocks the parent frees and reuses change under it.
 */

#define _GNU_SOURCE
#include "smheap.h"
#include "smheap_config.h"
#include "smheap_engine.h"
#include "smheap_family.h"
#include "smheap_glibc.h"
#include "smheap_region.h"
#include "smheap_valgrind.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PUBLIC __attribute__((visibility("default")))

enum heap_state {
    HEAP_UNSTARTED,
    HEAP_STARTING,              /* one thread is starting it; every call goes to glibc */
    HEAP_ON,
    HEAP_OFF,
    HEAP_FORKED                 /* in a child of fork(): see the top of the file */
};

static _Atomic int state = HEAP_UNSTARTED;
static struct smheap_config config;
static struct smheap_region region;
static uintptr_t region_base;   /* set once, before the heap turns on; never cleared */
static size_t region_size;
static int under_valgrind;      /* RUNNING_ON_VALGRIND, which cannot change, read once */
static _Atomic int heap_fast;   /* on, and no valgrind: malloc and free take the short path */
static char off_reason[SMHEAP_MSG_LEN];

static void say(const char *text)
{
    (void) !write(STDERR_FILENO, text, strlen(text));
}

static void fork_child(void)
{
    atomic_store_explicit(&heap_fast, 0, memory_order_relaxed);
    atomic_store(&state, HEAP_FORKED);
}

static void turn_off(const char *why)
{
    snprintf(off_reason, sizeof(off_reason), "%s", why);
    atomic_store_explicit(&state, HEAP_OFF, memory_order_release);
}

static void start_heap(void)
{
    char why[SMHEAP_MSG_LEN];
    int expected = HEAP_UNSTARTED;

    if (!atomic_compare_exchange_strong(&state, &expected, HEAP_STARTING))
        return;         /* another thread got there first */
    /* glibc initializes its malloc on its first call and gives the calling thread the main
     * arena without counting it, assuming that caller is the only thread.  With the heap on,
     * that first call could come from two threads at once (a full slice, an exiting
     * thread) and glibc's arena count would underflow: make it here, while single-threaded. */
    __libc_free(__libc_malloc(1));
    if (smheap_config_read(&config) != 0) {
        /* MPI_Init stops the job with this message; say it now too, with the value, in
         * case MPICH's own parsing of the variable stops it first. */
        say("smheap: ");
        say(config.error);
        say("\n");
        turn_off(config.error);
        return;
    }
    if (!config.enable) {
        turn_off("turned off by MPIR_CVAR_CH3_SMHEAP_ENABLE");
        return;
    }
    if (smheap_region_attach(&config, &region, why, sizeof(why)) != 0 ||
        smheap_engine_start(&region, config.retain, why, sizeof(why)) != 0) {
        turn_off(why);
        return;
    }
    region_base = region.base;
    region_size = region.size;
    under_valgrind = RUNNING_ON_VALGRIND;
    pthread_atfork(NULL, NULL, fork_child);
    atomic_store_explicit(&state, HEAP_ON, memory_order_release);
    atomic_store_explicit(&heap_fast, !under_valgrind, memory_order_relaxed);
}

/* 1 if this call may allocate from the heap (starting it on the very first call). */
static inline int heap_serves(void)
{
    int s = atomic_load_explicit(&state, memory_order_acquire);

    if (__builtin_expect(s == HEAP_UNSTARTED, 0)) {
        start_heap();
        s = atomic_load_explicit(&state, memory_order_acquire);
    }
    if (__builtin_expect(s == HEAP_ON, 1))
        return 1;
    if (s == HEAP_OFF || s == HEAP_FORKED)
        smheap_count(SMHEAP_GLIBC_OFF, 1);
    return 0;
}

static inline int in_region(const void *p)
{
    return (uintptr_t) p - region_base < region_size;
}

/* From the slice, or NULL (counted) so that the caller falls back to glibc. */
static void *heap_alloc(size_t size, size_t alignment, int zero)
{
    /* Under valgrind, jemalloc must not write into blocks memcheck thinks are free:
     * zero after the block is declared instead. */
    void *p = smheap_engine_alloc(size, alignment, zero && !under_valgrind);

    if (__builtin_expect(p == NULL, 0)) {
        smheap_count(smheap_engine_thread_elsewhere() ? SMHEAP_GLIBC_OFF : SMHEAP_GLIBC_FULL, 1);
        return NULL;
    }
    if (__builtin_expect(under_valgrind, 0)) {
        VALGRIND_MALLOCLIKE_BLOCK(p, size, 0, zero);
        if (zero)
            memset(p, 0, size);
    }
    return p;
}

static void heap_free(void *p)
{
    smheap_engine_free(p);
    if (__builtin_expect(under_valgrind, 0))
        VALGRIND_FREELIKE_BLOCK(p, 0);
}

static __attribute__((noinline)) void *malloc_slowly(size_t size)
{
    void *p;

    if (heap_serves() && (p = heap_alloc(size, 0, 0)) != NULL)
        return p;
    return __libc_malloc(size);
}

PUBLIC void *malloc(size_t size)
{
    void *p;

    if (__builtin_expect(atomic_load_explicit(&heap_fast, memory_order_relaxed), 1) &&
        (p = smheap_engine_malloc(size)) != NULL)
        return p;
    return malloc_slowly(size);
}

PUBLIC void free(void *p)
{
    if (p == NULL)
        return;         /* MPICH frees NULL twice per request */
    if (!in_region(p))
        __libc_free(p);
    else if (__builtin_expect(atomic_load_explicit(&heap_fast, memory_order_relaxed), 1))
        smheap_engine_free(p);
    else if (atomic_load_explicit(&state, memory_order_relaxed) != HEAP_FORKED)
        heap_free(p);
}

PUBLIC void *calloc(size_t n, size_t size)
{
    size_t bytes;
    void *p;

    if (__builtin_mul_overflow(n, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    if (heap_serves() && (p = heap_alloc(bytes, 0, 1)) != NULL)
        return p;
    return __libc_calloc(n, size);
}

/* Move a block of the region into a glibc block (a forked child, or a full slice). */
static void *move_to_glibc(void *p, size_t size, int free_old)
{
    size_t old = smheap_engine_usable_size(p);
    void *q = __libc_malloc(size);

    if (q != NULL) {
        memcpy(q, p, old < size ? old : size);
        if (free_old)
            heap_free(p);
    }
    return q;
}

PUBLIC void *realloc(void *p, size_t size)
{
    void *q;

    if (p == NULL)
        return malloc(size);
    if (!in_region(p))
        return __libc_realloc(p, size);
    if (atomic_load_explicit(&state, memory_order_relaxed) == HEAP_FORKED)
        return move_to_glibc(p, size, 0);
    if (size == 0) {            /* glibc's realloc(p, 0) frees */
        heap_free(p);
        return NULL;
    }
    if (under_valgrind) {       /* a new block, so memcheck sees the move */
        size_t old = smheap_engine_usable_size(p), n;

        q = malloc(size);
        if (q != NULL) {
            /* The old block's size as its caller asked is not known here: copy what the
             * engine gave, past that size too, without memcheck calling it an overrun. */
            n = old < size ? old : size;
            VALGRIND_DISABLE_ADDR_ERROR_REPORTING_IN_RANGE(p, n);
            memcpy(q, p, n);
            VALGRIND_ENABLE_ADDR_ERROR_REPORTING_IN_RANGE(p, n);
            free(p);
        }
        return q;
    }
    q = smheap_engine_resize(p, size);
    if (q != NULL)
        return q;
    smheap_count(smheap_engine_thread_elsewhere() ? SMHEAP_GLIBC_OFF : SMHEAP_GLIBC_FULL, 1);
    return move_to_glibc(p, size, 1);
}

/* glibc's memalign: an alignment that is not a power of two is rounded up to one. */
static void *aligned_block(size_t alignment, size_t size)
{
    void *p;

    if (alignment > SIZE_MAX / 2 + 1) {
        errno = EINVAL;
        return NULL;
    }
    if (alignment & (alignment - 1))
        alignment = (size_t) 1 << (64 - __builtin_clzl(alignment));
    if (alignment < sizeof(void *))
        alignment = sizeof(void *);
    if (heap_serves() && (p = heap_alloc(size, alignment, 0)) != NULL)
        return p;
    return __libc_memalign(alignment, size);
}

PUBLIC void *memalign(size_t alignment, size_t size)
{
    return aligned_block(alignment, size);
}

PUBLIC void *aligned_alloc(size_t alignment, size_t size)
{
    return aligned_block(alignment, size);
}

PUBLIC int posix_memalign(void **result, size_t alignment, size_t size)
{
    void *p;
    int saved = errno;

    if (alignment == 0 || (alignment & (alignment - 1)) || alignment % sizeof(void *))
        return EINVAL;
    p = aligned_block(alignment, size);
    if (p == NULL) {
        errno = saved;
        return ENOMEM;
    }
    *result = p;
    return 0;
}

PUBLIC void *valloc(size_t size)
{
    return aligned_block((size_t) sysconf(_SC_PAGESIZE), size);
}

PUBLIC void *pvalloc(size_t size)
{
    size_t page = (size_t) sysconf(_SC_PAGESIZE);
    size_t rounded = (size + page - 1) & ~(page - 1);

    if (rounded < size) {
        errno = ENOMEM;
        return NULL;
    }
    return aligned_block(page, rounded ? rounded : page);
}

PUBLIC size_t malloc_usable_size(void *p)
{
    if (p == NULL)
        return 0;
    if (in_region(p))
        return smheap_engine_usable_size(p);
    return smheap_glibc_usable_size(p);
}

/* --- what the heap tells its user --- */

int smheap_active(void)
{
    if (atomic_load_explicit(&state, memory_order_acquire) == HEAP_UNSTARTED)
        start_heap();
    return atomic_load_explicit(&state, memory_order_acquire) == HEAP_ON;
}

int smheap_in_region(const void *p)
{
    return in_region(p);
}

int smheap_holds(const void *p, size_t len)
{
    return len == 0 || ((uintptr_t) p - region_base <= region_size - len && len <= region_size);
}

void smheap_peer_wrote(void *p, size_t len)
{
    if (under_valgrind && len > 0)
        VALGRIND_MAKE_MEM_DEFINED(p, len);
}

const char *smheap_off_reason(void)
{
    return atomic_load(&state) == HEAP_OFF ? off_reason : "";
}

void smheap_start_background_purge(void)
{
    if (atomic_load_explicit(&state, memory_order_acquire) == HEAP_ON)
        smheap_engine_start_background();
}

size_t smheap_committed(void)
{
    return smheap_engine_committed();
}

void smheap_keep_pages(void)
{
    smheap_engine_keep_pages();
}

size_t smheap_in_use(void)
{
    return smheap_engine_in_use();
}

const char *smheap_config_error(void)
{
    return config.error[0] ? config.error : NULL;
}

void smheap_disable(void)
{
    int expected = HEAP_ON;

    atomic_store_explicit(&heap_fast, 0, memory_order_relaxed);
    if (atomic_compare_exchange_strong(&state, &expected, HEAP_OFF))
        snprintf(off_reason, sizeof(off_reason), "turned off after it started");
}

void smheap_private_begin(void)
{
    smheap_engine_private_begin();
}

void smheap_private_end(void)
{
    smheap_engine_private_end();
}

int smheap_region_identity(uintptr_t * base, size_t * size, const char **job_key)
{
    if (!smheap_active())
        return -1;
    *base = region.base;
    *size = region.size;
    *job_key = region.job_key;
    return 0;
}

/* The definitions above, bound inside this library. */
#define OWN(name) SMHEAP_BOUND_HERE(smheap_own_##name, name)
OWN(malloc);
OWN(free);
OWN(calloc);
OWN(realloc);
OWN(memalign);
OWN(aligned_alloc);
OWN(posix_memalign);
OWN(valloc);
OWN(pvalloc);
OWN(malloc_usable_size);

/* The family again under names of its own, for a library that forwards to it. */
#define EXPORT_AGAIN(name) \
    extern __typeof(name) smheap_family_##name \
        __attribute__((alias(#name), visibility("default"), copy(name)))
EXPORT_AGAIN(malloc);
EXPORT_AGAIN(free);
EXPORT_AGAIN(calloc);
EXPORT_AGAIN(realloc);
EXPORT_AGAIN(memalign);
EXPORT_AGAIN(aligned_alloc);
EXPORT_AGAIN(posix_memalign);
EXPORT_AGAIN(valloc);
EXPORT_AGAIN(pvalloc);
EXPORT_AGAIN(malloc_usable_size);

/* The forwarding libraries whose definitions the self-test takes for the heap's:
 * libmpifort's and the preloaded one's. */
#define MAX_FORWARDERS 2
static const struct smheap_forwarders *_Atomic forwarders[MAX_FORWARDERS];
static int preload_attached;    /* libsmheap_preload.so took the heap's family */
static int preload_refused;     /* it was there, but another libmpi took it first */

PUBLIC void smheap_family_forwarded(const struct smheap_forwarders *f)
{
    for (int i = 0; i < MAX_FORWARDERS; i++) {
        const struct smheap_forwarders *expected = NULL;

        if (atomic_compare_exchange_strong(&forwarders[i], &expected, f) || expected == f)
            return;
    }
}

/* The preloaded family calls into this library from now on, and blocks of the region stay
 * in the program's hands: a libmpi loaded with dlopen must not be unloaded by dlclose. */
static void stay_loaded(void)
{
    Dl_info self;

    if (dladdr((void *) stay_loaded, &self) && self.dli_fname != NULL)
        (void) dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
}

/* If mpiexec preloaded libsmheap_preload.so, hand it the family: it comes first in every
 * program's load order.  Run as libmpi loads, at start-up or in dlopen. */
static void __attribute__((constructor)) attach_to_preload(void)
{
    static const struct smheap_family heap_family = {
        .malloc_fn = smheap_own_malloc,
        .free_fn = smheap_own_free,
        .calloc_fn = smheap_own_calloc,
        .realloc_fn = smheap_own_realloc,
        .memalign_fn = smheap_own_memalign,
        .aligned_alloc_fn = smheap_own_aligned_alloc,
        .posix_memalign_fn = smheap_own_posix_memalign,
        .valloc_fn = smheap_own_valloc,
        .pvalloc_fn = smheap_own_pvalloc,
        .malloc_usable_size_fn = smheap_own_malloc_usable_size,
    };
    smheap_preload_attach_fn *attach =
        (smheap_preload_attach_fn *) dlsym(RTLD_DEFAULT, SMHEAP_PRELOAD_ATTACH);
    const struct smheap_forwarders *preloaded = attach != NULL ? attach(&heap_family) : NULL;

    if (preloaded != NULL) {
        smheap_family_forwarded(preloaded);
        preload_attached = 1;
        stay_loaded();
    } else if (attach != NULL) {
        preload_refused = 1;
    }
}

/* The family as this library's callers resolve it: through the dynamic linker, so the
 * test fails if another definition (a preloaded allocator, or the program's own libc when
 * libmpi was dlopen()ed) is the one in use.  The definitions of a forwarding library
 * (smheap_family.h) count as the heap's own. */
static void *(*volatile malloc_fn)(size_t) = malloc;
static void *(*volatile realloc_fn)(void *, size_t) = realloc;
static void *(*volatile memalign_fn)(size_t, size_t) = memalign;
static void (*volatile free_fn)(void *) = free;
static void *(*volatile calloc_fn)(size_t, size_t) = calloc;

static int forwarded(const struct smheap_forwarders *f)
{
    return malloc_fn == f->malloc_fn && free_fn == f->free_fn && calloc_fn == f->calloc_fn &&
        realloc_fn == f->realloc_fn && memalign_fn == f->memalign_fn;
}

static int family_is_ours(void)
{
    if (malloc_fn == smheap_own_malloc && free_fn == smheap_own_free &&
        calloc_fn == smheap_own_calloc && realloc_fn == smheap_own_realloc &&
        memalign_fn == smheap_own_memalign)
        return 1;
    for (int i = 0; i < MAX_FORWARDERS; i++) {
        const struct smheap_forwarders *f = atomic_load(&forwarders[i]);

        if (f != NULL && forwarded(f))
            return 1;
    }
    return 0;
}

/* A block of a few MiB from call: it must be the heap's, and freeing it must give its
 * pages back to the heap (blocks that big skip the thread caches). */
static int selftest_block(void *p, const char *call, char *why, size_t why_len)
{
    size_t in_use;

    if (p == NULL || !in_region(p)) {
        snprintf(why, why_len, "%s of a few MiB did not come from the shared heap", call);
        if (p != NULL)
            free_fn(p);         /* it is not ours: give it back to whoever served it */
        return -1;
    }
    in_use = smheap_engine_in_use();
    free_fn(p);
    if (smheap_engine_in_use() >= in_use) {
        snprintf(why, why_len, "free of a block from %s did not reach the shared heap", call);
        return -1;
    }
    return 0;
}

/* A non-PIE executable that takes malloc's address (Debian's python3) makes its own PLT
 * entry the address every library sees, so family_is_ours cannot tell: ask the calls
 * themselves whether a big block comes from the heap. */
static int family_serves_heap(void)
{
    void *p;
    int ours;

    if (!smheap_active())
        return 0;
    p = malloc_fn((size_t) 2 << 20);
    ours = p != NULL && in_region(p);
    free_fn(p);
    return ours;
}

int smheap_selftest(char *why, size_t why_len)
{
    const size_t mib = (size_t) 1 << 20;
    void *p;

    if (!family_is_ours() && !family_serves_heap()) {
        snprintf(why, why_len, "malloc is not the shared heap's here: %s",
                 preload_attached ? "another allocator was preloaded ahead of the heap's" :
                 preload_refused ? "another copy of libmpi in this process holds the "
                 "preloaded family" :
                 "glibc's was bound first (libmpi reached through another library or "
                 "dlopen, or another allocator linked first); run it with this MPICH's "
                 "mpiexec, which preloads the heap's unless MPIR_CVAR_CH3_SMHEAP_PRELOAD=0");
        return -1;
    }
    free_fn(malloc_fn(1));      /* starts the heap if nothing has yet */
    if (!smheap_active()) {
        snprintf(why, why_len, "%s", off_reason[0] ? off_reason : "it never started");
        return -1;
    }
    if (RUNNING_ON_VALGRIND) {  /* memcheck replaces every malloc it finds by default */
        int served;

        p = malloc_fn(mib);
        served = in_region(p);
        free_fn(p);
        if (!served) {
            snprintf(why, why_len, "valgrind replaced malloc; run valgrind with "
                     "--soname-synonyms=somalloc=nouserintercepts to keep the shared heap");
            return -1;
        }
    }
    /* Big enough for the engine's part for big blocks, and no bigger: every rank runs this
     * at MPI_Init, and fresh tmpfs pages are dear (figures: doc/heap.md). */
    if (selftest_block(malloc_fn(2 * mib), "malloc", why, why_len) != 0)
        return -1;
    p = malloc_fn(mib);
    if (p != NULL && !in_region(p)) {
        free_fn(p);
        p = NULL;
    }
    if (selftest_block(p ? realloc_fn(p, 2 * mib) : NULL, "realloc", why, why_len) != 0)
        return -1;
    return selftest_block(memalign_fn(mib, 2 * mib), "memalign", why, why_len);
}

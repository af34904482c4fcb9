/*
 * ch3:smheap -- the channel's bulk copy (see smheap_copy.h).
 */

#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE         /* MAP_ANONYMOUS */
#include "smheap_copy.h"
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

size_t smheap_copy_detour_min, smheap_copy_detour_max;
unsigned long long smheap_copy_detours;
size_t smheap_copy_pieces_min, smheap_copy_pieces_max, smheap_copy_piece;
unsigned long long smheap_copy_pieced;

#define PROBE_BYTES (32 * 1024)

static double seconds(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The best of a few memcpy's of PROBE_BYTES from src to dst. */
static double best_copy_time(char *dst, const char *src)
{
    double best = 1e9;

    for (int i = 0; i < 4; i++) {
        double t = seconds();

        memcpy(dst, src, PROBE_BYTES);
        __asm__ __volatile__("":::"memory");    /* keep every copy */
        t = seconds() - t;
        if (t < best)
            best = t;
    }
    return best;
}

/* Is memcpy much slower with the destination 8 bytes past the source (mod 4 KiB) than
 * 64 bytes past it?  Measured rather than inferred from the processor and the glibc
 * version, since it depends on both (on the processor's `rep movsb`, and on whether glibc
 * uses it for such sizes); the difference, when there is one, is wide enough that a
 * threefold bound tells it from noise (figures: doc/p2p.md). */
static int memcpy_slow_at_short_distance(void)
{
    /* up to 4095 bytes to align src, src, a page, dst and 64 bytes past it */
    char *area = malloc(4095 + PROBE_BYTES + 4096 + PROBE_BYTES + 64);
    char *src, *dst;
    double near, far;

    if (area == NULL)
        return 0;
    src = (char *) (((uintptr_t) area + 4095) & ~(uintptr_t) 4095);
    dst = src + PROBE_BYTES + 4096;     /* at the same page offset as src */
    memset(src, 1, PROBE_BYTES);
    memset(dst, 0, PROBE_BYTES + 64);
    far = best_copy_time(dst + 64, src);
    near = best_copy_time(dst + 8, src);
    free(area);
    return near > 3 * far;
}

/* The best of five copies of n bytes from src to dst, whole or in pieces of `piece`. */
static double best_bulk_time(char *dst, const char *src, size_t n, size_t piece)
{
    double best = 1e9;

    for (int i = 0; i < 5; i++) {
        double t = seconds();

        for (size_t at = 0; at < n; at += piece) {
            memcpy(dst + at, src + at, n - at < piece ? n - at : piece);
            __asm__ __volatile__("":::"memory");
        }
        t = seconds() - t;
        if (t < best)
            best = t;
    }
    return best;
}

/* Is one memcpy of twice the L2 size not faster than the same copy in pieces of a quarter
 * of the L2?  (Alternated, best of fifteen each: about a millisecond.)  The difference, where
 * there is one, is a sixth, too little to tell from noise with a bound; where there is
 * none, either way is as good. */
static int memcpy_whole_not_faster(size_t l2)
{
    size_t n = 2 * l2, area_bytes = 2 * n + 64;
    /* mapped for the probe alone: megabytes through malloc, at MPI_Init, would leave the
     * program's heap (the shared one) in another state than it would be in without them */
    char *area = mmap(NULL, area_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);
    char *src = area, *dst = area + n;
    double whole = 1e9, pieces = 1e9;

    if (area == MAP_FAILED)
        return 0;
    memset(src, 1, n);
    memset(dst, 0, n + 64);
    for (int round = 0; round < 3; round++) {
        double w = best_bulk_time(dst + 64, src, n, n);
        double p = best_bulk_time(dst + 64, src, n, l2 / 4);

        whole = w < whole ? w : whole;
        pieces = p < pieces ? p : pieces;
    }
    munmap(area, area_bytes);
    return pieces <= whole;
}

/* Copy in pieces of smheap_copy_piece bytes, each as smheap_copy. */
void smheap_copy_in_pieces(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;

    __atomic_fetch_add(&smheap_copy_pieced, 1, __ATOMIC_RELAXED);
    for (size_t at = 0; at < n; at += smheap_copy_piece)
        smheap_copy(d + at, s + at, n - at < smheap_copy_piece ? n - at : smheap_copy_piece);
}

/* glibc uses `rep movsb` above x86_rep_movsb_threshold (2112 bytes by default where the
 * processor has FSRM, more otherwise) and, on AMD, below the L2 size. */
void smheap_copy_init(void)
{
#if defined(__x86_64__)
    size_t l2 = smheap_cache_size(2);

    if (memcpy_slow_at_short_distance()) {
        smheap_copy_detour_min = 2048;
        smheap_copy_detour_max = l2 > 0 ? l2 : 1024 * 1024;
    }
    if (l2 >= 64 * 1024 && memcpy_whole_not_faster(l2)) {
        size_t l3 = smheap_cache_size(3);

        smheap_copy_piece = l2 / 4;
        smheap_copy_pieces_min = l2;
        smheap_copy_pieces_max = l3 > 2 * l2 ? l3 / 2 : 8 * l2;
    }
#endif
}

/* Copy the 64-byte blocks from the last to the first, then the head (n % 64 bytes).
 * Written with SSE2 intrinsics so that the compiler cannot turn it back into memcpy. */
void smheap_copy_backward(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
    char *d = dst;
    const char *s = src;

    __atomic_fetch_add(&smheap_copy_detours, 1, __ATOMIC_RELAXED);
    while (n >= 64) {
        __m128i a, b, c, e;

        n -= 64;
        a = _mm_loadu_si128((const __m128i *) (s + n));
        b = _mm_loadu_si128((const __m128i *) (s + n + 16));
        c = _mm_loadu_si128((const __m128i *) (s + n + 32));
        e = _mm_loadu_si128((const __m128i *) (s + n + 48));
        _mm_storeu_si128((__m128i *) (d + n), a);
        _mm_storeu_si128((__m128i *) (d + n + 16), b);
        _mm_storeu_si128((__m128i *) (d + n + 32), c);
        _mm_storeu_si128((__m128i *) (d + n + 48), e);
    }
    memcpy(d, s, n);
#else
    memcpy(dst, src, n);
#endif
}

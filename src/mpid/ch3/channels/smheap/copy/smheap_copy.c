/*
 * ch3:smheap -- the channel's bulk copy (see smheap_copy.h).
 */

#define _POSIX_C_SOURCE 200809L
#include "smheap_copy.h"
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

size_t smheap_copy_detour_min, smheap_copy_detour_max;
unsigned long long smheap_copy_detours;

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

/* glibc uses `rep movsb` above x86_rep_movsb_threshold (2112 bytes by default where the
 * processor has FSRM, more otherwise) and, on AMD, below the L2 size. */
void smheap_copy_init(void)
{
#if defined(__x86_64__)
    if (memcpy_slow_at_short_distance()) {
        size_t l2 = smheap_cache_size(2);

        smheap_copy_detour_min = 2048;
        smheap_copy_detour_max = l2 > 0 ? l2 : 1024 * 1024;
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

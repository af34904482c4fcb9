/*
 * ch3:smheap -- the channel's bulk copy (see smheap_copy.h).
 */

#include "smheap_copy.h"
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <emmintrin.h>
#endif

size_t smheap_copy_detour_min, smheap_copy_detour_max;
unsigned long long smheap_copy_detours;

#if defined(__x86_64__)
static int is_amd(void)
{
    unsigned int max_leaf, vendor[3];

    if (!__get_cpuid(0, &max_leaf, &vendor[0], &vendor[2], &vendor[1]))
        return 0;
    return memcmp(vendor, "AuthenticAMD", 12) == 0;
}
#endif

/* The sizes glibc copies with `rep movsb` on AMD: above x86_rep_movsb_threshold (2112
 * bytes by default where the CPU has FSRM, more otherwise; 2048 is the lowest default) and
 * below the L2 size. */
void smheap_copy_init(void)
{
#if defined(__x86_64__)
    if (is_amd()) {
        long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);

        smheap_copy_detour_min = 2048;
        smheap_copy_detour_max = l2 > 0 ? (size_t) l2 : 1024 * 1024;
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

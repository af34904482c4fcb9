/*
 * ch3:smheap -- the copy mechanisms (copy/), all that the rest of the channel may use of
 * them: the bulk copy below, the copy between processes through the kernel
 * (smheap_cma.h) and the cache sizes copies are cut to (smheap_cache.h).
 *
 * The bulk copy is memcpy, but for the one case where glibc's memcpy is far slower on AMD
 * processors.
 *
 * glibc copies blocks from x86_rep_movsb_threshold (about 2 KiB) up to, on AMD, the size of
 * the L2 cache with `rep movsb`.  AMD Zen 3 and 4 run that many times slower when the
 * destination lies 1 to 15 bytes past the source modulo 4 KiB (glibc bug 30994; figures:
 * doc/p2p.md).  Where the data lies is up to the user and, for the rings, rotates with the
 * cells (a cell is 64 bytes longer than a power of two), so any bulk copy of the channel
 * may meet that distance.  Where smheap_copy_init measures memcpy to be slow there, such
 * copies go backwards in 64-byte blocks instead, which also avoids the 4 KiB aliasing a
 * forward loop suffers at that distance.  Independent of MPICH, so that it can be
 * unit-tested alone.
 */

#ifndef SMHEAP_COPY_H_INCLUDED
#define SMHEAP_COPY_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "smheap_cma.h"         /* copies between processes, through the kernel */
#include "smheap_cache.h"       /* the cache sizes copies are cut to */

/* Sizes (exclusive bounds) for which memcpy is avoided at a bad distance; both 0 where
 * memcpy is not slow there, and before smheap_copy_init. */
extern size_t smheap_copy_detour_min, smheap_copy_detour_max;
extern unsigned long long smheap_copy_detours;  /* copies that went backwards */

void smheap_copy_init(void);
void smheap_copy_backward(void *dst, const void *src, size_t n);

static inline void smheap_copy(void *dst, const void *src, size_t n)
{
    size_t distance = ((uintptr_t) dst - (uintptr_t) src) & 4095;

    if (distance - 1 < 15 && n > smheap_copy_detour_min && n < smheap_copy_detour_max)
        smheap_copy_backward(dst, src, n);
    else
        memcpy(dst, src, n);
}

/* A copy of at most SMHEAP_COPY_SMALL bytes, inlined: at the sizes of the shortest
 * messages a call to memcpy costs as much as the copy.  Two moves of one width, the second
 * ending where the data ends, cover any length from that width to twice it. */
#define SMHEAP_COPY_SMALL 64
static inline void smheap_copy_small(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;

    if (n > 32) {
        memcpy(d, s, 32);
        memcpy(d + n - 32, s + n - 32, 32);
    } else if (n >= 16) {
        memcpy(d, s, 16);
        memcpy(d + n - 16, s + n - 16, 16);
    } else if (n >= 8) {
        memcpy(d, s, 8);
        memcpy(d + n - 8, s + n - 8, 8);
    } else if (n >= 4) {
        memcpy(d, s, 4);
        memcpy(d + n - 4, s + n - 4, 4);
    } else if (n > 0) {
        d[0] = s[0];
        d[n - 1] = s[n - 1];
        d[n / 2] = s[n / 2];
    }
}

#endif /* SMHEAP_COPY_H_INCLUDED */

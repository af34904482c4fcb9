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
 * forward loop suffers at that distance.
 *
 * From the L2 size up, glibc leaves `rep movsb` on AMD for a vector loop; on AMD Zen 5 that
 * copied 1-2 MiB at 55-58 GB/s where the same bytes in pieces of 256 KiB went at 64-72
 * (figures: doc/p2p.md).  Where smheap_copy_init does not find one copy of twice the L2
 * size faster than the same copy in pieces of a quarter of the L2, the copies a core makes
 * alone (smheap_copy_solo) from the L2 size to half the L3 go in such pieces: below half the
 * L3 glibc copies with ordinary stores either way, so pieces cost nothing where they gain
 * nothing; above it glibc may use non-temporal stores, which pieces would forgo.
 * Independent of MPICH, so that it can be unit-tested alone.
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
/* Copies of smheap_copy_pieces_min (0: none) to smheap_copy_pieces_max bytes (exclusive) go
 * in pieces of smheap_copy_piece bytes. */
extern size_t smheap_copy_pieces_min, smheap_copy_pieces_max, smheap_copy_piece;
extern unsigned long long smheap_copy_pieced;   /* copies that went in pieces */

void smheap_copy_init(void);
void smheap_copy_backward(void *dst, const void *src, size_t n);
void smheap_copy_in_pieces(void *dst, const void *src, size_t n);

static inline void smheap_copy(void *dst, const void *src, size_t n)
{
    size_t distance = ((uintptr_t) dst - (uintptr_t) src) & 4095;

    if (distance - 1 < 15 && n > smheap_copy_detour_min && n < smheap_copy_detour_max)
        smheap_copy_backward(dst, src, n);
    else
        memcpy(dst, src, n);
}

/* A bulk copy by a core that copies alone (an RMA operation in place: the target takes
 * no part), in pieces where that is faster.  Not for copies that two cores make at once
 * (messages, collectives): there the pieces were slower, 6 % at 4-8 MiB and 15 % at
 * 16 MiB (figures: doc/p2p.md). */
static inline void smheap_copy_solo(void *dst, const void *src, size_t n)
{
    if (smheap_copy_pieces_min != 0 && n >= smheap_copy_pieces_min &&
        n < smheap_copy_pieces_max)
        smheap_copy_in_pieces(dst, src, n);
    else
        smheap_copy(dst, src, n);
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

/*
 * Unit test for the channel's bulk copy (smheap_copy.h), no MPICH needed: at every
 * source alignment and source-to-destination distance (mod 4 KiB) that matters, and at
 * sizes around the block size and the detour bounds, the copy moves exactly the bytes asked
 * for and nothing else, and goes backwards exactly where it should (distance 1 to 15 with a
 * size between the bounds).  The bounds are forced, so the backward copy is tested on any
 * processor, AMD or not; so are copies in pieces (smheap_copy_solo).  The small copy (up to 64 bytes, inlined) moves exactly every
 * length it takes.
 */

#include "smheap_copy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit_check.h"

enum { AREA = 1 << 20, GUARD = 128 };

static unsigned char *src_area, *dst_area;

/* Copy n bytes from src_area + src_off to a destination `distance` bytes further (mod 4 KiB)
 * from the source; check the copy, the guard bytes around it, and whether it detoured. */
static void check_copy(size_t n, size_t src_off, size_t distance)
{
    unsigned char *src = src_area + src_off;
    size_t dst_off = 4096 + (src_off + distance) % 4096;     /* GUARD bytes free below */
    unsigned char *dst = dst_area + dst_off;
    unsigned long long before = smheap_copy_detours;
    int detour = distance >= 1 && distance <= 15 && n > smheap_copy_detour_min &&
        n < smheap_copy_detour_max;
    size_t i;

    for (i = 0; i < n; i++)
        src[i] = (unsigned char) (i * 7 + src_off + 1);
    memset(dst - GUARD, 0xA5, n + 2 * GUARD);
    smheap_copy(dst, src, n);

    CHECK(memcmp(dst, src, n) == 0);
    for (i = 1; i <= GUARD; i++) {
        if (dst[-(long) i] != 0xA5 || dst[n + i - 1] != 0xA5) {
            fprintf(stderr, "n=%zu src_off=%zu distance=%zu: guard byte overwritten\n", n,
                    src_off, distance);
            failures++;
            break;
        }
    }
    CHECK(((uintptr_t) dst - (uintptr_t) src) % 4096 == distance);
    CHECK(smheap_copy_detours - before == (unsigned long long) detour);
}

/* The small copy, every length it takes at several alignments: exactly those bytes. */
static void check_small_copies(void)
{
    for (size_t n = 0; n <= SMHEAP_COPY_SMALL; n++) {
        for (size_t off = 0; off < 16; off += 5) {
            unsigned char *src = src_area + off, *dst = dst_area + GUARD + 2 * off;
            size_t i;

            for (i = 0; i < n; i++)
                src[i] = (unsigned char) (i * 13 + n + 1);
            memset(dst - GUARD, 0xA5, n + 2 * GUARD);
            smheap_copy_small(dst, src, n);
            CHECK(memcmp(dst, src, n) == 0);
            for (i = 1; i <= GUARD; i++)
                if (dst[-(long) i] != 0xA5 || dst[n + i - 1] != 0xA5)
                    break;
            CHECK(i == GUARD + 1);
        }
    }
}

int main(void)
{
    static const size_t sizes[] = { 0, 1, 15, 63, 64, 65, 127, 2048, 2049, 4096, 4097,
        32768 + 1, 65536 - 8, 200000
    };
    static const size_t distances[] = { 0, 1, 2, 7, 8, 15, 16, 17, 24, 63, 64, 100, 4081,
        4095
    };
    size_t s, d, off;

    src_area = aligned_alloc(4096, AREA);
    dst_area = aligned_alloc(4096, AREA);
    if (!src_area || !dst_area)
        return 2;

    /* as on an AMD processor whose L2 is 128 KiB: 200000 bytes are above the bounds */
    smheap_copy_detour_min = 2048;
    smheap_copy_detour_max = 128 * 1024;
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        for (d = 0; d < sizeof(distances) / sizeof(distances[0]); d++)
            for (off = 0; off < 64; off += 13)
                check_copy(sizes[s], off, distances[d]);

    /* without a detour (not AMD): plain memcpy everywhere */
    smheap_copy_detour_min = smheap_copy_detour_max = 0;
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        check_copy(sizes[s], 3, 8);

    check_small_copies();

    /* in pieces (forced: 1000 bytes, no divisor of any copy, from 4096 to 150000 bytes),
     * with and without the detour: the same bytes, each copy counted once */
    smheap_copy_pieces_min = 4096;
    smheap_copy_pieces_max = 150000;
    smheap_copy_piece = 1000;
    for (int detour = 0; detour < 2; detour++) {
        smheap_copy_detour_min = detour ? 512 : 0;
        smheap_copy_detour_max = detour ? 128 * 1024 : 0;
        for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            unsigned long long before = smheap_copy_pieced;
            unsigned char *src = src_area + 5, *dst = dst_area + GUARD + 5 + (detour ? 8 : 64);

            for (size_t i = 0; i < sizes[s]; i++)
                src[i] = (unsigned char) (i * 11 + s);
            memset(dst - GUARD, 0xA5, sizes[s] + 2 * GUARD);
            smheap_copy_solo(dst, src, sizes[s]);
            CHECK(memcmp(dst, src, sizes[s]) == 0);
            CHECK(dst[-1] == 0xA5 && dst[sizes[s]] == 0xA5);
            CHECK(smheap_copy_pieced - before == (sizes[s] >= 4096 && sizes[s] < 150000));
        }
    }
    smheap_copy_pieces_min = smheap_copy_pieces_max = smheap_copy_piece = 0;
    smheap_copy_detour_min = smheap_copy_detour_max = 0;

    /* what smheap_copy_init chooses here, reported for the log */
    smheap_copy_init();
    printf("this processor: detour for %zu < n < %zu (0, 0: none); pieces of %zu for %zu <= "
           "n < %zu (0: none)\n", smheap_copy_detour_min, smheap_copy_detour_max,
           smheap_copy_piece, smheap_copy_pieces_min, smheap_copy_pieces_max);

    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    else
        printf("copy_test: all checks passed\n");
    free(src_area);
    free(dst_area);
    return failures != 0;
}

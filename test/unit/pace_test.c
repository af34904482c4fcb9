/*
 * Unit test for the channel's watch on the rings' speed (smheap_pace.h), no MPICH needed:
 * which copies are timed, a window of slow copies turning the rings slow and a window with
 * one fast copy turning them back, the probe let through once per interval while slow,
 * messages above the bound left untimed, and the kernel's copy speed it is compared with.
 */

#define _GNU_SOURCE
#include "smheap_pace.h"

#include <time.h>

#include "unit_check.h"

enum { KIB16 = 16384 };

static void sleep_ms(long ms)
{
    struct timespec t = { 0, ms * 1000000L };

    nanosleep(&t, NULL);
}

/* A window of copies of 16 KiB: fast ones take 200 ns (82 bytes per ns), slow ones 20 us. */
static void record_window(int fast_ones)
{
    for (int i = 0; i < SMHEAP_PACE_WINDOW; i++)
        smheap_pace_record(KIB16, i < fast_ones ? 200 : 20000);
}

static void sampling(void)
{
    int timed = 0;

    CHECK(!smheap_pace_sample_due(SMHEAP_PACE_SAMPLE_MIN - 1));
    for (int i = 0; i < 8 * SMHEAP_PACE_SAMPLE_EVERY; i++)
        timed += smheap_pace_sample_due(KIB16);
    CHECK(timed == 8);          /* one in SMHEAP_PACE_SAMPLE_EVERY while fast */
}

static void spells(void)
{
    record_window(SMHEAP_PACE_WINDOW);
    CHECK(!smheap_pace_rings_slow() && smheap_pace.slow_spells == 0);
    CHECK(smheap_pace.last_rate > 80);

    record_window(0);
    CHECK(smheap_pace.slow && smheap_pace.slow_spells == 1);
    CHECK(smheap_pace.last_rate < 1);
    CHECK(smheap_pace_rings_slow());
    for (int i = 0; i < 3; i++)
        CHECK(smheap_pace_sample_due(KIB16));   /* every copy while slow */

    /* a probe once the interval is over, then slow again until the next */
    sleep_ms(30);
    CHECK(!smheap_pace_rings_slow());
    CHECK(smheap_pace_rings_slow());

    /* still slow: no new spell; then one fast copy in a window is enough */
    record_window(0);
    CHECK(smheap_pace.slow && smheap_pace.slow_spells == 1);
    record_window(1);
    CHECK(!smheap_pace.slow && !smheap_pace_rings_slow());
}

static void message_bound(void)
{
    CHECK(smheap_pace_watches(1 << 20));
    CHECK(!smheap_pace_watches((1 << 20) + 1));
}

static void unwatched(void)
{
    smheap_pace_init(0, 0, 0);
    CHECK(!smheap_pace_sample_due(KIB16));
    CHECK(!smheap_pace_rings_slow());
}

int main(void)
{
    double kernel = smheap_pace_kernel_rate(65536);

    /* bytes per ns: between 10 MB/s and 1 TB/s, or 0 where the kernel refuses */
    CHECK(kernel == 0 || (kernel > 0.01 && kernel < 1000));
    printf("kernel copy of 64 KiB: %.0f MB/s\n", kernel * 1000);

    smheap_pace_init(1.0, 20 * 1000 * 1000, 1 << 20);
    sampling();
    spells();
    message_bound();
    unwatched();
    return failures != 0;
}

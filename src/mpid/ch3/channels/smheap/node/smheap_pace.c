/*
 * ch3:smheap -- are the rings slow right now? (see smheap_pace.h)
 */

#define _GNU_SOURCE
#include "smheap_pace.h"
#include "smheap_copy.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

smheap_pace_t smheap_pace;

double smheap_pace_kernel_rate(size_t n)
{
    char *src = malloc(n), *dst = malloc(n);
    uint64_t best = UINT64_MAX;

    if (src != NULL && dst != NULL) {
        memset(src, 1, n);
        memset(dst, 0, n);
        for (int i = 0; i < 4; i++) {
            uint64_t t = smheap_pace_now();

            if (smheap_cma_read(getpid(), dst, src, n) != 0) {
                best = UINT64_MAX;
                break;
            }
            t = smheap_pace_now() - t;
            if (t < best)
                best = t;
        }
    }
    free(src);
    free(dst);
    return best == UINT64_MAX ? 0 : (double) n / (double) (best ? best : 1);
}

void smheap_pace_init(double slow_below, uint64_t probe_ns, size_t message_max)
{
    smheap_pace = (smheap_pace_t) {
    .slow_below = slow_below,.probe_ns = probe_ns,.countdown = SMHEAP_PACE_SAMPLE_EVERY,
            .message_max = message_max};
}

void smheap_pace_record(size_t n, uint64_t ns)
{
    double rate = (double) n / (double) (ns ? ns : 1);

    if (rate > smheap_pace.best)
        smheap_pace.best = rate;
    if (++smheap_pace.samples < SMHEAP_PACE_WINDOW)
        return;
    if (!smheap_pace.slow && smheap_pace.best < smheap_pace.slow_below)
        smheap_pace.slow_spells++;
    smheap_pace.slow = smheap_pace.best < smheap_pace.slow_below;
    smheap_pace.last_rate = smheap_pace.best;
    smheap_pace.best = 0;
    smheap_pace.samples = 0;
    smheap_pace.probed_at = smheap_pace_now();
}

int smheap_pace_rings_slow(void)
{
    uint64_t now;

    if (!smheap_pace.slow)
        return 0;
    now = smheap_pace_now();
    if (now - smheap_pace.probed_at < smheap_pace.probe_ns)
        return 1;
    smheap_pace.probed_at = now;
    return 0;
}

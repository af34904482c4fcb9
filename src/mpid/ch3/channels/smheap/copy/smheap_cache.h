/*
 * ch3:smheap -- the sizes of this processor's caches, as the channel's thresholds use them.
 *
 * The kernel's description (sysfs, what lscpu and hwloc read) comes first: the C library's
 * sysconf works them out from CPUID itself and can be far off under a hypervisor (figures:
 * doc/p2p.md).
 * Independent of MPICH, so that it can be unit-tested alone.
 */

#ifndef SMHEAP_CACHE_H_INCLUDED
#define SMHEAP_CACHE_H_INCLUDED

#include <stddef.h>

/* Bytes in one instance of the data (or unified) cache of the given level (1-3) of the CPU
 * we run on; for level 3, the last level when there is no level 3.  0 if unknown.  sysfs
 * names another directory to read it from, for tests (NULL: /sys/devices/system/cpu). */
size_t smheap_cache_size(int level);
size_t smheap_cache_size_from(const char *sysfs, int level);

#endif /* SMHEAP_CACHE_H_INCLUDED */

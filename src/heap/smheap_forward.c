/*
 * smheap -- the malloc family forwarded to the heap, for a library that loads ahead of it
 * (libmpifort; smheap_family.h says why).  Every definition here calls the heap's, so the
 * routing by address, fork safety and the switch to glibc stay in one place.
 */

#define _GNU_SOURCE
#include "smheap_family.h"

#include <malloc.h>
#include <stdlib.h>

#define PUBLIC __attribute__((visibility("default")))

PUBLIC void *malloc(size_t size)
{
    return smheap_family_malloc(size);
}

PUBLIC void free(void *p)
{
    smheap_family_free(p);
}

PUBLIC void *calloc(size_t n, size_t size)
{
    return smheap_family_calloc(n, size);
}

PUBLIC void *realloc(void *p, size_t size)
{
    return smheap_family_realloc(p, size);
}

PUBLIC void *memalign(size_t alignment, size_t size)
{
    return smheap_family_memalign(alignment, size);
}

PUBLIC void *aligned_alloc(size_t alignment, size_t size)
{
    return smheap_family_aligned_alloc(alignment, size);
}

PUBLIC int posix_memalign(void **result, size_t alignment, size_t size)
{
    return smheap_family_posix_memalign(result, alignment, size);
}

PUBLIC void *valloc(size_t size)
{
    return smheap_family_valloc(size);
}

PUBLIC void *pvalloc(size_t size)
{
    return smheap_family_pvalloc(size);
}

PUBLIC size_t malloc_usable_size(void *p)
{
    return smheap_family_malloc_usable_size(p);
}

/* The definitions above as bound inside this library (a reference to malloc itself could
 * resolve to another library's). */
#define OWN(name) SMHEAP_BOUND_HERE(forwarded_##name, name)
OWN(malloc);
OWN(free);
OWN(calloc);
OWN(realloc);
OWN(memalign);

static void __attribute__((constructor)) announce_forwarders(void)
{
    static const struct smheap_forwarders mine = {
        forwarded_malloc, forwarded_free, forwarded_calloc, forwarded_realloc,
        forwarded_memalign
    };

    smheap_family_forwarded(&mine);
}

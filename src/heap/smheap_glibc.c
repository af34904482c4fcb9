/*
 * smheap -- glibc's malloc_usable_size (smheap_glibc.h).  Compiled into each library that
 * forwards to glibc: libmpi's heap and the preloaded library.
 */

#define _GNU_SOURCE
#include "smheap_glibc.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>

size_t smheap_glibc_usable_size(void *p)
{
    static size_t (*_Atomic libc_fn)(void *);
    size_t (*fn)(void *) = atomic_load_explicit(&libc_fn, memory_order_relaxed);

    if (fn == NULL) {
        void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);

        fn = libc != NULL ? (size_t (*)(void *)) dlsym(libc, "malloc_usable_size") : NULL;
        if (fn == NULL)
            abort();    /* a glibc without it: nothing sensible to return */
        atomic_store_explicit(&libc_fn, fn, memory_order_relaxed);
    }
    return fn(p);
}

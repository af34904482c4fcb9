/*
 * smheap -- the heap's thread variables, in a shared library of their own (libsmheap_tls,
 * which libmpi depends on).
 *
 * malloc and free read them on every call, so they use initial-exec TLS: one load, no call
 * into the dynamic linker.  But glibc places a module's whole TLS block in static TLS as
 * soon as one of its variables is initial-exec, and libmpi's block (jemalloc's 2.6 KiB of
 * thread data) does not fit the small reserve glibc keeps for libraries loaded with
 * dlopen(), as mpi4py loads libmpi.  These few bytes fit, and libmpi's own block stays
 * global-dynamic.
 */

#include "smheap_engine.h"
#include "smheap_stats.h"

#define EXPORTED __attribute__((visibility("default")))

EXPORTED __thread struct smheap_engine_thread smheap_engine_thread;
EXPORTED __thread struct smheap_stat_slot *smheap_stat_mine;
EXPORTED __thread void *smheap_je_tsd_address;  /* maint/patches/jemalloc/0001-... */

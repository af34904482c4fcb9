/*
 * smheap -- the heap's thread variables, in a shared library of their own (libsmheap_tls,
 * which libmpi depends on).
 *
 * malloc and free read them on every call, so they use initial-exec TLS: one load, no call
 * into the dynamic linker.  glibc places a module's whole TLS block in static TLS as soon
 * as one of its variables is initial-exec, and only a small reserve of it is kept for
 * libraries loaded with dlopen(), as Python loads libmpi: these few bytes fit.  They are
 * also never allocated lazily: in a dlopen()ed libmpi, a thread's first access to the
 * library's own (global-dynamic) TLS allocates the block with malloc, that is with the
 * heap, which must not need that block to serve the call.
 */

#include "smheap_engine.h"
#include "smheap_stats.h"

#define EXPORTED __attribute__((visibility("default")))

EXPORTED __thread struct smheap_engine_thread smheap_engine_thread;
EXPORTED __thread struct smheap_stat_slot *smheap_stat_mine;
EXPORTED __thread void *smheap_je_tsd_address;  /* maint/patches/jemalloc/0001-... */

/*
 * smheap -- memcheck client requests, or nothing when valgrind's headers are absent.
 *
 * Under memcheck the region is unaddressable except where this rank has committed pages
 * (so the leak checker scans only those, not gigabytes of reservation), heap blocks are
 * declared with MALLOCLIKE/FREELIKE, and reads of other ranks' slices are not reported
 * (a peer's block is valid there, but this process never allocated it).
 */
#ifndef SMHEAP_VALGRIND_H_INCLUDED
#define SMHEAP_VALGRIND_H_INCLUDED

#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#else
#define RUNNING_ON_VALGRIND 0
#define VALGRIND_MALLOCLIKE_BLOCK(addr, size, redzone, zeroed) ((void) 0)
#define VALGRIND_FREELIKE_BLOCK(addr, redzone) ((void) 0)
#define VALGRIND_MAKE_MEM_NOACCESS(addr, len) ((void) 0)
#define VALGRIND_MAKE_MEM_DEFINED(addr, len) ((void) 0)
#define VALGRIND_DISABLE_ADDR_ERROR_REPORTING_IN_RANGE(addr, len) ((void) 0)
#define VALGRIND_ENABLE_ADDR_ERROR_REPORTING_IN_RANGE(addr, len) ((void) 0)
#endif

#endif /* SMHEAP_VALGRIND_H_INCLUDED */

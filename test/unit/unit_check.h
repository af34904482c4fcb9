/*
 * The unit tests' check: a failed condition is reported with its place and counted; the
 * test's main returns failures != 0.
 */

#ifndef UNIT_CHECK_H_INCLUDED
#define UNIT_CHECK_H_INCLUDED

#include <stdio.h>

static int failures;

#define CHECK(cond) do {                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                    \
        }                                                                  \
    } while (0)

#endif /* UNIT_CHECK_H_INCLUDED */

/*
 * smheap -- run-time settings of the shared heap, read from the environment before main.
 *
 * The heap starts before MPICH can read its CVARs, so it reads the same variables itself,
 * with MPICH's spellings and precedence: MPICH_<NAME>, then MPIR_PARAM_<NAME>, then
 * MPIR_CVAR_<NAME>, the last one set winning.
 */
#ifndef SMHEAP_CONFIG_H_INCLUDED
#define SMHEAP_CONFIG_H_INCLUDED

#include <stddef.h>

#define SMHEAP_MSG_LEN 320

struct smheap_config {
    int enable;                 /* CH3_SMHEAP_ENABLE: serve malloc from the shared heap */
    size_t slice_size;          /* CH3_SMHEAP_SIZE: this rank's slice; 0 = automatic */
    size_t retain;              /* CH3_SMHEAP_RETAIN: freed bytes kept committed, or: */
#define SMHEAP_RETAIN_AUTO ((size_t) -1)        /* chosen from the slice's size */
    int local_rank;             /* this process among the ranks of its node */
    int local_size;             /* ranks of this job on this node */
    int singleton;              /* not started by a launcher */
    char error[SMHEAP_MSG_LEN]; /* set when a value is malformed: names it and the value */
};

/* Fill cfg from the environment.  Returns 0, or -1 with cfg->error set.  Calls no
 * allocator: it runs inside the first malloc. */
int smheap_config_read(struct smheap_config *cfg);

/* "123", "64K", "512M", "4G" (binary units); 0 on success, -1 if malformed. */
int smheap_parse_size(const char *text, size_t * size);

/* MPICH's booleans: 1 yes true on / 0 no false off (either case); 0 on success. */
int smheap_parse_bool(const char *text, int *value);

#endif /* SMHEAP_CONFIG_H_INCLUDED */

/*
 * smheap -- run-time settings of the shared heap, read from the environment before main.
 */

#include "smheap_config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int smheap_parse_size(const char *text, size_t * size)
{
    char *end;
    unsigned long long value;
    int shift = 0;

    if (text == NULL || *text < '0' || *text > '9')
        return -1;
    errno = 0;
    value = strtoull(text, &end, 10);
    if (errno != 0)
        return -1;
    switch (*end) {
        case 'k': case 'K': shift = 10; end++; break;
        case 'm': case 'M': shift = 20; end++; break;
        case 'g': case 'G': shift = 30; end++; break;
        case 't': case 'T': shift = 40; end++; break;
    }
    if (*end == 'i' || *end == 'B')     /* accept "64KiB", "64KB" */
        end += (end[0] == 'i' && end[1] == 'B') ? 2 : 1;
    if (*end != '\0' || (value << shift) >> shift != value || value << shift > SIZE_MAX)
        return -1;
    *size = (size_t) (value << shift);
    return 0;
}

int smheap_parse_bool(const char *text, int *value)
{
    static const char *const yes[] = { "1", "yes", "YES", "true", "TRUE", "on", "ON" };
    static const char *const no[] = { "0", "no", "NO", "false", "FALSE", "off", "OFF" };
    size_t i;

    for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcmp(text, yes[i]) == 0) {
            *value = 1;
            return 0;
        }
        if (strcmp(text, no[i]) == 0) {
            *value = 0;
            return 0;
        }
    }
    return -1;
}

/* The value of NAME under MPICH's spellings, the last one set winning; the spelling found
 * is stored in *spelling (static storage) for messages. */
static const char *lookup(const char *name, const char **spelling)
{
    static const char *const prefixes[] = { "MPICH_", "MPIR_PARAM_", "MPIR_CVAR_" };
    static char names[3][64];
    const char *value = NULL;
    size_t i;

    for (i = 0; i < 3; i++) {
        const char *v;

        snprintf(names[i], sizeof(names[i]), "%s%s", prefixes[i], name);
        v = getenv(names[i]);
        if (v != NULL) {
            value = v;
            *spelling = names[i];
        }
    }
    return value;
}

static int read_int(const char *var, int *out)
{
    const char *v = getenv(var);
    char *end;
    long n;

    if (v == NULL)
        return 0;
    errno = 0;
    n = strtol(v, &end, 10);
    if (errno || end == v || *end != '\0' || n < 0 || n > 1 << 20)
        return -1;
    *out = (int) n;
    return 1;
}

/* A size setting, or auto (which leaves *size alone).  0 with *size set, or -1 with the
 * error in cfg. */
static int read_size(const char *name, const char *example, int zero_ok, size_t * size,
                     struct smheap_config *cfg)
{
    const char *spelling, *v = lookup(name, &spelling);
    size_t n;

    if (v == NULL || strcmp(v, "auto") == 0)
        return 0;
    if (smheap_parse_size(v, &n) != 0 || (n == 0 && !zero_ok)) {
        snprintf(cfg->error, sizeof(cfg->error), "%s=%s is not a size; use bytes with an "
                 "optional K, M or G suffix (for example %s), or auto", spelling, v, example);
        return -1;
    }
    *size = n;
    return 0;
}

int smheap_config_read(struct smheap_config *cfg)
{
    const char *spelling, *v;
    int have_rank, have_size;

    memset(cfg, 0, sizeof(*cfg));
    cfg->enable = 1;
    cfg->local_size = 1;

    v = lookup("CH3_SMHEAP_ENABLE", &spelling);
    if (v != NULL && smheap_parse_bool(v, &cfg->enable) != 0) {
        snprintf(cfg->error, sizeof(cfg->error),
                 "%s=%s is not a boolean; use 1 or 0 (yes/no, true/false, on/off)", spelling, v);
        return -1;
    }
    if (read_size("CH3_SMHEAP_SIZE", "512M or 4G", 0, &cfg->slice_size, cfg) != 0)
        return -1;
    cfg->retain = SMHEAP_RETAIN_AUTO;
    if (read_size("CH3_SMHEAP_RETAIN", "256M, or 0 to keep nothing", 1, &cfg->retain, cfg) != 0)
        return -1;

    /* Hydra tells each rank where it stands on its node before exec. */
    have_rank = read_int("MPI_LOCALRANKID", &cfg->local_rank);
    have_size = read_int("MPI_LOCALNRANKS", &cfg->local_size);
    if (have_rank < 0 || have_size < 0 || have_rank != have_size ||
        (have_size && (cfg->local_size < 1 || cfg->local_rank >= cfg->local_size))) {
        snprintf(cfg->error, sizeof(cfg->error),
                 "MPI_LOCALRANKID=%s and MPI_LOCALNRANKS=%s do not describe a rank of a node; "
                 "launch with MPICH's mpiexec", getenv("MPI_LOCALRANKID") ?: "(unset)",
                 getenv("MPI_LOCALNRANKS") ?: "(unset)");
        return -1;
    }
    cfg->singleton = !have_size;
    return 0;
}

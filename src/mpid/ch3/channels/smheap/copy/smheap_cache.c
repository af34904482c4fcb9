/*
 * ch3:smheap -- cache sizes from sysfs (smheap_cache.h).
 */

#define _GNU_SOURCE
#include "smheap_cache.h"
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SYSFS_CPUS "/sys/devices/system/cpu"

/* The first line of dir/file, without its newline; 0 if there is none. */
static int read_line(const char *dir, const char *file, char *line, size_t size)
{
    char path[512];
    FILE *f;
    int ok;

    snprintf(path, sizeof(path), "%s/%s", dir, file);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    ok = fgets(line, (int) size, f) != NULL;
    fclose(f);
    if (ok)
        line[strcspn(line, "\n")] = '\0';
    return ok;
}

/* "32K", "1024K", "32M": bytes; 0 if unreadable. */
static size_t parse_size(const char *text)
{
    unsigned long long n;
    char unit = '\0';

    if (sscanf(text, "%llu%c", &n, &unit) < 1)
        return 0;
    switch (unit) {
        case 'K':
            return (size_t) n << 10;
        case 'M':
            return (size_t) n << 20;
        case 'G':
            return (size_t) n << 30;
        default:
            return (size_t) n;
    }
}

/* Size of the data or unified cache of each level (index: level) that cpu's sysfs
 * directory lists. */
static void sysfs_levels(const char *sysfs, int cpu, size_t size_of[4])
{
    for (int index = 0; index < 16; index++) {
        char dir[256], line[64];
        int level;

        snprintf(dir, sizeof(dir), "%s/cpu%d/cache/index%d", sysfs, cpu, index);
        if (!read_line(dir, "level", line, sizeof(line)))
            break;
        level = (int) parse_size(line);
        if (level < 1 || level > 3 || !read_line(dir, "type", line, sizeof(line)) ||
            strcmp(line, "Instruction") == 0 || !read_line(dir, "size", line, sizeof(line)))
            continue;
        size_of[level] = parse_size(line);
    }
}

static size_t sysconf_size(int level)
{
    static const int name[4] = { 0, _SC_LEVEL1_DCACHE_SIZE, _SC_LEVEL2_CACHE_SIZE,
        _SC_LEVEL3_CACHE_SIZE
    };
    long n = sysconf(name[level]);

    return n > 0 ? (size_t) n : 0;
}

size_t smheap_cache_size_from(const char *sysfs, int level)
{
    size_t size_of[4] = { 0, 0, 0, 0 };
    int cpu = sched_getcpu();

    if (level < 1 || level > 3)
        return 0;
    sysfs_levels(sysfs, cpu >= 0 ? cpu : 0, size_of);
    if (size_of[1] == 0 && cpu != 0)
        sysfs_levels(sysfs, 0, size_of);
    if (size_of[1] == 0) {      /* no sysfs */
        for (int l = 1; l <= 3; l++)
            size_of[l] = sysconf_size(l);
    }
    if (level == 3 && size_of[3] == 0)
        return size_of[2] ? size_of[2] : size_of[1];
    return size_of[level];
}

size_t smheap_cache_size(int level)
{
    return smheap_cache_size_from(SYSFS_CPUS, level);
}

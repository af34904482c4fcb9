/*
 * Unit test for the cache sizes the channel's thresholds use (smheap_cache.h), no MPICH
 * needed: sizes read from a sysfs tree written here (data and unified caches counted,
 * instruction caches not; the last level standing in for a missing L3), sysconf's answer
 * where sysfs has none, and sane sizes on this machine.
 */

#define _GNU_SOURCE
#include "smheap_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit_check.h"

static char root[] = "/tmp/smheap_cache_test.XXXXXX";

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        exit(1);
    }
    fputs(text, f);
    fclose(f);
}

/* cpu0/cache/index<i> with this level, type and size */
static void add_cache(int index, const char *level, const char *type, const char *size)
{
    char dir[256];

    snprintf(dir, sizeof(dir), "%s/cpu0", root);
    mkdir(dir, 0700);
    snprintf(dir, sizeof(dir), "%s/cpu0/cache", root);
    mkdir(dir, 0700);
    snprintf(dir, sizeof(dir), "%s/cpu0/cache/index%d", root, index);
    mkdir(dir, 0700);
    write_file(dir, "level", level);
    write_file(dir, "type", type);
    write_file(dir, "size", size);
}

static size_t sysconf_l1(void)
{
    long n = sysconf(_SC_LEVEL1_DCACHE_SIZE);

    return n > 0 ? (size_t) n : 0;
}

static void remove_tree(void)
{
    char cmd[512];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", root);
}

int main(void)
{
    size_t l1, l2, l3;

    if (mkdtemp(root) == NULL) {
        perror("mkdtemp");
        return 1;
    }

    /* nothing there: sysconf's sizes */
    CHECK(smheap_cache_size_from(root, 1) == sysconf_l1());

    add_cache(0, "1\n", "Data\n", "48K\n");
    add_cache(1, "1\n", "Instruction\n", "32K\n");
    add_cache(2, "2\n", "Unified\n", "2048K\n");
    CHECK(smheap_cache_size_from(root, 1) == 48 << 10);
    CHECK(smheap_cache_size_from(root, 2) == 2 << 20);
    CHECK(smheap_cache_size_from(root, 3) == 2 << 20);  /* no L3: the last level */
    add_cache(3, "3\n", "Unified\n", "96M\n");
    CHECK(smheap_cache_size_from(root, 3) == (size_t) 96 << 20);
    CHECK(smheap_cache_size_from(root, 0) == 0);
    CHECK(smheap_cache_size_from(root, 4) == 0);
    remove_tree();

    l1 = smheap_cache_size(1);
    l2 = smheap_cache_size(2);
    l3 = smheap_cache_size(3);
    printf("this machine: L1d %zu, L2 %zu, L3 %zu bytes\n", l1, l2, l3);
    CHECK(l1 >= 4096 && l1 <= l2 && l2 <= l3);
    return failures != 0;
}

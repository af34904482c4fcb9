/*
 * ch3:smheap -- libfabric itself, loaded by the jobs that use it.
 *
 * libmpi does not link libfabric: loading it runs the constructors of the provider
 * libraries it links (Debian's links PSM's libinfinipath and libpsm2, which calibrate
 * their clocks by sleeping), 0.2 s at the start of every process on a 2-vCPU AMD EPYC,
 * whether or not the job ever leaves its node.  A job whose ranks span nodes loads it at
 * MPI_Init instead, by the name and the symbol versions that linking against it at build
 * time would have bound (configure reads them off a program it links), and takes from it
 * the few functions that are not reached through the objects they make.
 */

#define _GNU_SOURCE     /* dlvsym */
#include "smheap_ofi.h"
#include <dirent.h>
#include <dlfcn.h>

smheap_ofi_lib_t smheap_ofi_lib;

/* Whether the node has a device for a provider that is not an emulation over the kernel's
 * sockets: verbs (RoCE and iWARP too), efa, usnic, psm, psm2, psm3 and opx find theirs in
 * /sys/class/infiniband, cxi in /sys/class/cxi.  Without one, libfabric could offer only
 * emulations, which `auto` does not take: it need not be loaded to learn that. */
int smheap_ofi_device_present(void)
{
    static const char *const classes[] = { "/sys/class/infiniband", "/sys/class/cxi" };
    int i, found = 0;

    for (i = 0; i < (int) (sizeof(classes) / sizeof(classes[0])) && !found; i++) {
        DIR *d = opendir(classes[i]);
        struct dirent *e;

        if (d == NULL)
            continue;
        while (!found && (e = readdir(d)) != NULL)
            found = e->d_name[0] != '.';
        closedir(d);
    }
    return found;
}

/* A function of the library, or NULL with *why naming it (the first missing one). */
static void *find(void *lib, const char *name, const char *version, char *why, size_t why_len)
{
    void *f = version[0] != '\0' ? dlvsym(lib, name, version) : dlsym(lib, name);

    if (f == NULL && why[0] == '\0')
        snprintf(why, why_len, "%s has no %s%s%s, which ch3:smheap was built for",
                 SMHEAP_OFI_LIBRARY, name, version[0] ? "@" : "", version);
    return f;
}

/* Returns 0, or -1 with *why saying what is missing. */
int smheap_ofi_lib_load(char *why, size_t why_len)
{
    static void *lib;
    smheap_ofi_lib_t l;

    if (lib != NULL)
        return 0;
    why[0] = '\0';
    smheap_private_begin();     /* the loader's memory, and what the constructors take */
    lib = dlopen(SMHEAP_OFI_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        snprintf(why, why_len, "cannot load %s (%s)", SMHEAP_OFI_LIBRARY, dlerror());
        goto fn_fail;
    }
    l.getinfo = (int (*)(uint32_t, const char *, const char *, uint64_t,
                         const struct fi_info *, struct fi_info **))
        find(lib, "fi_getinfo", SMHEAP_OFI_VERSION_FI_GETINFO, why, why_len);
    l.freeinfo = (void (*)(struct fi_info *))
        find(lib, "fi_freeinfo", SMHEAP_OFI_VERSION_FI_FREEINFO, why, why_len);
    l.dupinfo = (struct fi_info * (*)(const struct fi_info *))
        find(lib, "fi_dupinfo", SMHEAP_OFI_VERSION_FI_DUPINFO, why, why_len);
    l.fabric = (int (*)(struct fi_fabric_attr *, struct fid_fabric **, void *))
        find(lib, "fi_fabric", SMHEAP_OFI_VERSION_FI_FABRIC, why, why_len);
    l.strerror = (const char *(*)(int))
        find(lib, "fi_strerror", SMHEAP_OFI_VERSION_FI_STRERROR, why, why_len);
    l.version = (uint32_t(*)(void))
        find(lib, "fi_version", SMHEAP_OFI_VERSION_FI_VERSION, why, why_len);
    if (why[0] != '\0') {
        dlclose(lib);
        lib = NULL;
        goto fn_fail;
    }
    smheap_private_end();
    smheap_ofi_lib = l;
    return 0;

  fn_fail:
    smheap_private_end();
    return -1;
}

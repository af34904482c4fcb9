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
#include <dlfcn.h>

smheap_ofi_lib_t smheap_ofi_lib;

static void *find(void *lib, const char *name, const char *version)
{
    return version[0] != '\0' ? dlvsym(lib, name, version) : dlsym(lib, name);
}

/* Returns 0, or -1 with *why saying what is missing. */
int smheap_ofi_lib_load(char *why, size_t why_len)
{
    static void *lib;
    smheap_ofi_lib_t l;

    if (lib != NULL)
        return 0;
    PRIVATELY(lib = dlopen(SMHEAP_OFI_LIBRARY, RTLD_NOW | RTLD_LOCAL));
    if (lib == NULL) {
        snprintf(why, why_len, "cannot load %s (%s)", SMHEAP_OFI_LIBRARY, dlerror());
        return -1;
    }
    l.getinfo = (int (*)(uint32_t, const char *, const char *, uint64_t,
                         const struct fi_info *, struct fi_info **))
        find(lib, "fi_getinfo", SMHEAP_OFI_VERSION_FI_GETINFO);
    l.freeinfo = (void (*)(struct fi_info *))
        find(lib, "fi_freeinfo", SMHEAP_OFI_VERSION_FI_FREEINFO);
    l.dupinfo = (struct fi_info * (*)(const struct fi_info *))
        find(lib, "fi_dupinfo", SMHEAP_OFI_VERSION_FI_DUPINFO);
    l.fabric = (int (*)(struct fi_fabric_attr *, struct fid_fabric **, void *))
        find(lib, "fi_fabric", SMHEAP_OFI_VERSION_FI_FABRIC);
    l.strerror = (const char *(*)(int)) find(lib, "fi_strerror", SMHEAP_OFI_VERSION_FI_STRERROR);
    l.version = (uint32_t(*)(void)) find(lib, "fi_version", SMHEAP_OFI_VERSION_FI_VERSION);
    if (!l.getinfo || !l.freeinfo || !l.dupinfo || !l.fabric || !l.strerror || !l.version) {
        snprintf(why, why_len, "%s lacks the functions of the libfabric it was built with "
                 "(%s)", SMHEAP_OFI_LIBRARY, dlerror());
        dlclose(lib);
        lib = NULL;
        return -1;
    }
    smheap_ofi_lib = l;
    return 0;
}

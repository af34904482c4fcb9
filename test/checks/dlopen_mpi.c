/* Loads libmpi with dlopen, as mpi4py does, and runs an Allreduce through it.  The shared
 * heap cannot interpose malloc in a library loaded this late, so MPI_Init must carry on
 * without it (with one warning line) rather than fail. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>

#define LOAD(name) __typeof(name) *p##name = (__typeof(name) *) dlsym(lib, #name)

int main(int argc, char **argv)
{
    void *lib = dlopen(LIBMPI, RTLD_NOW | RTLD_GLOBAL);
    int size, sum, one = 1;

    if (lib == NULL) {
        printf("dlopen: %s\n", dlerror());
        return 1;
    }
    LOAD(MPI_Init);
    LOAD(MPI_Comm_size);
    LOAD(MPI_Allreduce);
    LOAD(MPI_Finalize);
    pMPI_Init(&argc, &argv);
    pMPI_Comm_size(MPI_COMM_WORLD, &size);
    pMPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    pMPI_Finalize();
    printf(sum == size ? " No Errors\n" : "Allreduce gave %d, not %d\n", sum, size);
    return sum != size;
}

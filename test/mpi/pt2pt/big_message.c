/* One message of more than 2 GiB (2049 MiB, through a derived datatype) arrives intact on
 * each path: from the shared heap into a contiguous heap buffer (shared single copy) and
 * into a strided vector type (unpacked from the sender's buffer), and from memory outside
 * the heap (through the kernel, in calls the kernel cuts short of 2 GiB). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "../include/smheap_test.h"

#define MIB (1 << 20)
#define NBLOCKS 2049            /* 2049 MiB: more than 2^31 bytes */
#define GAP 4096                /* between the blocks of the vector receive */

static void fill(uint64_t * p, size_t words, uint64_t seed)
{
    for (size_t i = 0; i < words; i++)
        p[i] = seed + i;
}

/* Check NBLOCKS blocks of 1 MiB, `stride` bytes apart; returns the number of bad blocks. */
static int check(const char *base, size_t stride, uint64_t seed)
{
    int bad = 0;

    for (size_t b = 0; b < NBLOCKS; b++) {
        const uint64_t *w = (const uint64_t *) (base + b * stride);
        uint64_t first = seed + b * (MIB / 8);
        for (size_t i = 0; i < MIB / 8; i++)
            if (w[i] != first + i) {
                if (bad++ == 0)
                    printf("block %zu word %zu: %llu, want %llu\n", b, i,
                           (unsigned long long) w[i], (unsigned long long) (first + i));
                break;
            }
    }
    return bad;
}

int main(int argc, char **argv)
{
    int rank, errs = 0;
    size_t bytes = (size_t) NBLOCKS * MIB, stride = MIB + GAP;
    MPI_Datatype mib, vec;
    char *buf;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Type_contiguous(MIB, MPI_BYTE, &mib);
    MPI_Type_commit(&mib);
    MPI_Type_vector(NBLOCKS, MIB, (int) stride, MPI_BYTE, &vec);
    MPI_Type_commit(&vec);

    if (rank == 0) {
        char *outside = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                             -1, 0);
        buf = malloc(bytes);
        if (buf == NULL || outside == MAP_FAILED) {
            printf("cannot allocate 2 x %zu bytes\n", bytes);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        fill((uint64_t *) buf, bytes / 8, 1);
        MPI_Send(buf, NBLOCKS, mib, 1, 0, MPI_COMM_WORLD);
        fill((uint64_t *) buf, bytes / 8, 2);
        MPI_Send(buf, NBLOCKS, mib, 1, 1, MPI_COMM_WORLD);
        fill((uint64_t *) outside, bytes / 8, 3);
        MPI_Send(outside, NBLOCKS, mib, 1, 2, MPI_COMM_WORLD);
        munmap(outside, bytes);
        free(buf);
    } else if (rank == 1) {
        MPI_Status st;
        MPI_Count n;

        buf = malloc((size_t) NBLOCKS * stride);
        if (buf == NULL) {
            printf("cannot allocate %zu bytes\n", (size_t) NBLOCKS * stride);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        MPI_Recv(buf, NBLOCKS, mib, 0, 0, MPI_COMM_WORLD, &st);
        MPI_Get_elements_x(&st, MPI_BYTE, &n);
        errs += (n != (MPI_Count) bytes) + check(buf, MIB, 1);
        MPI_Recv(buf, 1, vec, 0, 1, MPI_COMM_WORLD, &st);
        MPI_Get_elements_x(&st, MPI_BYTE, &n);
        errs += (n != (MPI_Count) bytes) + check(buf, stride, 2);
        MPI_Recv(buf, NBLOCKS, mib, 0, 2, MPI_COMM_WORLD, &st);
        errs += check(buf, MIB, 3);
        free(buf);
    }

    MPI_Type_free(&vec);
    MPI_Type_free(&mib);
    smheap_test_report(errs);
    MPI_Finalize();
    return 0;
}

// C++ programs built with mpicxx: operator new (std::vector, std::string, std::unique_ptr)
// and the aligned operator new of an over-aligned type take their memory from malloc and
// aligned_alloc, so with the heap on containers lie in the shared heap and 4 MiB messages
// between them move by single copy.  Data are checked, through MPI's C API and through
// MPICH's C++ bindings (MPI::).  Under valgrind, operator new is memcheck's own (it replaces
// libstdc++'s whatever --soname-synonyms says), so the containers live in memcheck's heap
// and take the fallback path: expected, and checked as such.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>
#include "../include/smheap_test.h"

struct alignas(256) Cell {
    double v[32];
};

int main(int argc, char **argv)
{
    const int n = 1 << 19, rounds = 3;
    int prov, errs = 0;

    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI::Init(argc, argv);
    const int rank = MPI::COMM_WORLD.Get_rank(), size = MPI::COMM_WORLD.Get_size();
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    const char *preload = std::getenv("LD_PRELOAD");
    const bool memcheck = preload && std::strstr(preload, "vgpreload_memcheck");
    const bool shared = pvar_value("smheap_heap_shared") == 1;
    const bool new_in_heap = shared && !memcheck;
    const bool local = same_node(MPI_COMM_WORLD, rank, right);
    if (pvar_index("smheap_heap_shared") < 0) {
        std::printf("no smheap counters: this MPI is not ch3:smheap\n");
        errs++;
    }

    std::vector<double> send(n), recv(n);
    std::string text(1 << 20, 'a' + rank % 26);
    auto raw = std::make_unique<char[]>(1 << 20);
    std::vector<Cell> cells(n / 32);
    const int placed[] = {
        in_shared_heap(send.data(), n * sizeof(double)),
        in_shared_heap(text.data(), text.size()),
        in_shared_heap(raw.get(), 1 << 20),
        in_shared_heap(cells.data(), cells.size() * sizeof(Cell)),
    };
    for (int i = 0; i < 4; i++)
        if (placed[i] != (int) new_in_heap) {
            std::printf("allocation %d: in the shared heap %d, want %d\n", i, placed[i],
                        new_in_heap);
            errs++;
        }
    if (reinterpret_cast<std::uintptr_t>(cells.data()) % alignof(Cell) != 0) {
        std::printf("over-aligned vector at %p\n", static_cast<void *>(cells.data()));
        errs++;
    }

    unsigned long long sc0 = pvar_value("smheap_single_copy_msgs");
    for (int r = 0; r < rounds; r++) {
        std::iota(send.begin(), send.end(), 1e7 * rank + 1e6 * r);
        std::fill(recv.begin(), recv.end(), -1.0);
        if (r % 2 == 0)
            MPI_Sendrecv(send.data(), n, MPI_DOUBLE, right, r, recv.data(), n, MPI_DOUBLE,
                         left, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else
            MPI::COMM_WORLD.Sendrecv(send.data(), n, MPI::DOUBLE, right, r, recv.data(), n,
                                     MPI::DOUBLE, left, r);
        for (int i = 0; i < n; i++)
            if (recv[i] != 1e7 * left + 1e6 * r + i) {
                std::printf("round %d: element %d is %g\n", r, i, recv[i]);
                errs++;
                break;
            }
    }
    std::string got(text.size(), '\0');
    MPI::COMM_WORLD.Sendrecv(text.data(), text.size(), MPI::CHAR, right, 99, got.data(),
                             got.size(), MPI::CHAR, left, 99);
    if (got != std::string(text.size(), 'a' + left % 26)) {
        std::printf("string from rank %d differs\n", left);
        errs++;
    }
    unsigned long long sc1 = pvar_value("smheap_single_copy_msgs");
    if (local && new_in_heap && sc1 - sc0 != rounds + 1) {
        std::printf("single-copy sends: %llu, want %d\n", sc1 - sc0, rounds + 1);
        errs++;
    }
    if ((!local || !new_in_heap) && sc1 != sc0) {
        std::printf("single-copy sends without a shared heap between the pair: %llu\n",
                    sc1 - sc0);
        errs++;
    }

    smheap_test_report(errs);
    MPI::Finalize();
    MPI_T_finalize();
    return 0;
}

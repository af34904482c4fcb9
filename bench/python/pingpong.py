"""Ping-pong bandwidth between two ranks with numpy arrays, as an mpi4py program moves them:
Send and Recv of the buffer (no pickling), arrays allocated after MPI started.

    mpiexec -n 2 python3 pingpong.py [--quick] [--pvars LIB]

Prints one line per size, "size=N value=MB/s" (MB/s: 10^6 bytes per second, each message
counted once), then "library=..." (the first line of MPI_Get_library_version) and, with
--pvars (bench/python/pvars.c built against this MPI), the channel's counters of the
paths rank 0's messages took.
"""
import ctypes
import sys
import time

import numpy as np
from mpi4py import MPI

SIZES = [1 << s for s in range(16, 27)]        # 64 KiB to 64 MiB


def rounds(size, quick):
    """Round trips per size: about 1 GiB moved each way (an eighth with --quick)."""
    total = (1 << 27 if quick else 1 << 30)
    return max(4, min(2000, total // size))


def pingpong(comm, a, n):
    peer = 1 - comm.rank
    comm.Barrier()
    start = time.perf_counter()
    for _ in range(n):
        if comm.rank == 0:
            comm.Send([a, MPI.BYTE], peer, 1)
            comm.Recv([a, MPI.BYTE], peer, 2)
        else:
            comm.Recv([a, MPI.BYTE], peer, 1)
            comm.Send([a, MPI.BYTE], peer, 2)
    return time.perf_counter() - start


def main():
    quick = "--quick" in sys.argv
    pvars = sys.argv[sys.argv.index("--pvars") + 1] if "--pvars" in sys.argv else None
    comm = MPI.COMM_WORLD
    if comm.size != 2:
        raise SystemExit("pingpong.py: run it on 2 ranks")
    counters = None
    if pvars:
        counters = ctypes.CDLL(pvars)
        counters.smheap_pvar.restype = ctypes.c_ulonglong
        counters.smheap_pvar.argtypes = [ctypes.c_char_p]
        before = {k: counters.smheap_pvar(k.encode()) for k in
                  ("smheap_single_copy_msgs", "smheap_staged_msgs", "smheap_cma_msgs")}
    for size in SIZES:
        a = np.full(size, comm.rank + 1, dtype=np.uint8)
        n = rounds(size, quick)
        pingpong(comm, a, 2)                    # warm-up: first touch, connections
        t = pingpong(comm, a, n)
        if a[0] != 1 or a[-1] != 1:             # rank 0's bytes went there and back
            raise SystemExit("pingpong.py: wrong data at %d bytes" % size)
        if comm.rank == 0:
            print("size=%d value=%.1f" % (size, 2.0 * n * size / t / 1e6), flush=True)
        del a
    if comm.rank == 0:
        print("library=%s" % "_".join(MPI.Get_library_version().split()[:4]))
        if counters:
            print(" ".join("pvar %s=%d" % (k, counters.smheap_pvar(k.encode()) - v)
                           for k, v in before.items()))


main()

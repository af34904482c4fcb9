#!/usr/bin/env python3
"""Tables for bench/python/run.sh, from its raw output.

    report.py RAW

RAW has one line per measurement, as run.sh writes them:
    round=1 mpi=smheap size=65536 value=35446.0
    round=1 mpi=smheap library=MPICH_Version:...
    round=1 mpi=smheap pvar smheap_single_copy_msgs=4070 ...
Prints the median bandwidth (MB/s) over the rounds of every MPI at every size, the ratios of
smheap's median to the others' and the median over the rounds of the ratio within a round,
the library each MPI reported, and smheap's paths (MPI_T) of its last round.
"""
import collections
import os
import statistics
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import machine, human, med, ratio  # noqa: E402

ORDER = ("smheap", "nemesis", "openmpi")


def main(path):
    vals = collections.defaultdict(list)
    by_round = collections.defaultdict(dict)
    libraries, paths = {}, ""
    for line in open(path):
        if line.startswith("#"):
            continue
        kv = dict(w.split("=", 1) for w in line.split() if "=" in w)
        if "value" in kv:
            key = (kv["mpi"], int(kv["size"]))
            vals[key].append(float(kv["value"]))
            by_round[key][int(kv["round"])] = float(kv["value"])
        elif "library" in kv:
            libraries[kv["mpi"]] = kv["library"].replace("_", " ")
        elif "pvar" in line and kv.get("mpi") == "smheap":
            paths = " ".join(w for w in line.split() if w.startswith("smheap_"))
    mpis = [m for m in ORDER if any(k[0] == m for k in vals)]
    sizes = sorted({k[1] for k in vals})
    others = [m for m in mpis if m != "smheap"]
    print("machine: %s" % machine(path))
    print("bandwidth, MB/s (medians of %d rounds); smheap/other: ratio of medians, and in "
          "brackets the median of the ratios within a round" %
          max(len(v) for v in vals.values()))
    head = "%8s" % "size" + "".join("%12s" % m for m in mpis) + \
        "".join("%20s" % ("smheap/" + m) for m in others)
    print(head)
    for s in sizes:
        row = "%8s" % human(s) + "".join(
            "%12.0f" % med(vals, (m, s)) if med(vals, (m, s)) else "%12s" % "-" for m in mpis)
        for m in others:
            a, b = by_round[("smheap", s)], by_round[(m, s)]
            paired = [a[r] / b[r] for r in a if r in b]
            cell = "%s [%.2f]" % (ratio(med(vals, ("smheap", s)), med(vals, (m, s))),
                                 statistics.median(paired)) if paired else "-"
            row += "%20s" % cell
        print(row)
    for m in mpis:
        print("%s: %s" % (m, libraries.get(m, "?")))
    if paths:
        print("smheap's paths in its last round, rank 0 (MPI_T): %s" % paths)


if __name__ == "__main__":
    main(sys.argv[1])

#!/usr/bin/env python3
"""Tables and plot data for bench/coll/run.sh, from its raw output.

    report.py RAW OUTDIR CPUS

RAW has one line per measurement, as run.sh writes them:
    round=1 mpi=smheap run=bcast/4 coll=bcast ranks=4 size=65536 value=12.345
    round=1 mpi=smheap run=bcast/4 # pvar: counted over 24002 calls of bcast (...)
    round=1 mpi=smheap run=bcast/4 pvar smheap_coll_shared=24002 smheap_coll_fallback=0
(other lines with '#' are comments).  Prints, for every collective and rank count, the
median over the rounds of every MPI at every size (microseconds per call, the slowest rank's
average) and the speedups of smheap (the other MPI's time / smheap's time), then the pvar
lines of the last smheap round.  Rank counts above CPUS are marked oversubscribed.  Writes
OUTDIR/coll-<coll>.dat (one column per MPI and rank count; for barrier, one row per rank
count and one column per MPI) and OUTDIR/coll.gp, the gnuplot script that draws
OUTDIR/coll-<coll>.png from them.  Standard library only.
"""
import collections
import os
import re
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import machine, human, med, ratio  # noqa: E402

MACHINE = "unknown processor"  # the raw file's, set by main

COLLS = ("barrier", "bcast", "reduce", "allreduce", "allgather", "gather", "scatter",
         "alltoall", "allgatherv", "gatherv", "scatterv", "alltoallv", "reduce_scatter_block")
BLOCKED = ("allgather", "gather", "scatter", "alltoall", "allgatherv", "gatherv", "scatterv",
           "alltoallv")
ORDER = ("smheap", "nemesis", "openmpi")
COLOR = {"smheap": "#d62728", "nemesis": "#1f77b4", "openmpi": "#2ca02c"}
WHAT = {"barrier": "MPI_Barrier",
        "bcast": "MPI_Bcast from root 0",
        "reduce": "MPI_Reduce of doubles, MPI_SUM, to root 0",
        "allreduce": "MPI_Allreduce of doubles, MPI_SUM",
        "allgather": "MPI_Allgather, size = block per rank",
        "gather": "MPI_Gather to root 0, size = block per rank",
        "scatter": "MPI_Scatter from root 0, size = block per rank",
        "alltoall": "MPI_Alltoall, size = block per rank and peer",
        "allgatherv": "MPI_Allgatherv, size = every count",
        "gatherv": "MPI_Gatherv to root 0, size = every count",
        "scatterv": "MPI_Scatterv from root 0, size = every count",
        "alltoallv": "MPI_Alltoallv, size = every count",
        "reduce_scatter_block": "MPI_Reduce_scatter_block of doubles, MPI_SUM, "
                                "size = block per rank"}
SHORT = {"nemesis": "nem", "openmpi": "ompi"}
CALLS = re.compile(r"# pvar: counted over (\d+) calls")


def read_raw(path):
    """(mpi, coll, ranks, size) -> values; the pvar lines of the last smheap round."""
    vals = collections.defaultdict(list)
    pvars = {}
    calls = {}
    last = 0
    for line in open(path):
        words = line.split()
        kv = dict(w.split("=", 1) for w in words if "=" in w and not w.startswith("#"))
        m = CALLS.search(line)
        if "#" in line and not m:
            continue
        if "value" in kv:
            key = (kv["mpi"], kv["coll"], int(kv["ranks"]), int(kv["size"]))
            vals[key].append(float(kv["value"]))
        elif ("pvar" in words or m) and kv.get("mpi") == "smheap":
            rnd = int(kv["round"])
            if rnd > last:
                last, pvars, calls = rnd, {}, {}
            if rnd == last and m:
                calls[kv["run"]] = int(m.group(1))
            elif rnd == last:
                pvars.setdefault(kv["run"], []).extend(words[words.index("pvar") + 1:])
    return vals, pvars, calls, last


def placement(n, cpus):
    if n > cpus:
        return "%d ranks on %d CPUs, OVERSUBSCRIBED (ranks not bound)" % (n, cpus)
    return "%d ranks, one per core" % n


def table(vals, mpis, coll, n, cpus):
    """Print one collective x rank count table."""
    sizes = sorted({k[3] for k in vals if k[1] == coll and k[2] == n})
    if not sizes:
        return
    others = [m for m in mpis if m != "smheap"] if "smheap" in mpis else []
    counts = [len(v) for k, v in vals.items() if k[1] == coll and k[2] == n]
    print("\n%s, %s: %s;\n  us per call (slowest rank's average), median of %d runs"
          % (coll, placement(n, cpus), WHAT[coll], max(counts)))
    print("  on " + MACHINE)
    if others:
        print("  %s = %s: the speedup of smheap (higher is better)"
              % (", ".join("%s/sm" % SHORT.get(m, m) for m in others),
                 ", ".join("%s time / smheap time" % m for m in others)))
    head = ["size"] + list(mpis) + ["%s/sm" % SHORT.get(m, m) for m in others]
    print(" ".join("%11s" % h for h in head))
    for size in sizes:
        sm = med(vals, ("smheap", coll, n, size))
        row = [human(size)]
        for m in mpis:
            v = med(vals, (m, coll, n, size))
            row.append("%.3f" % v if v is not None else "-")
        row += [ratio(med(vals, (m, coll, n, size)), sm) for m in others]
        print(" ".join("%11s" % c for c in row))


def dash(i):
    return (1, 2, 4, 5)[i % 4]


def point(i):
    return (7, 5, 9, 11, 13)[i % 5]


def write_plot(vals, mpis, coll, cpus, outdir, gp):
    """The .dat of one collective and its lines in coll.gp."""
    keys = [k for k in vals if k[1] == coll]
    if not keys:
        return
    ranks = sorted({k[2] for k in keys})
    sizes = sorted({k[3] for k in keys})
    dat = "coll-%s.dat" % coll
    over = lambda n: " (oversubscribed)" if n > cpus else ""
    if coll == "barrier":
        # size 0 only: time against the rank count, one line per MPI
        cols = [(m, m, COLOR.get(m, "#9467bd"), 1, 7) for m in mpis
                if any(k[0] == m for k in keys)]
        rows = [(n, [med(vals, (m, coll, n, 0)) for m, *_ in cols]) for n in ranks]
        xs = ranks
        gp.append("unset logscale x")
        gp.append("set xrange [%g:%g]" % (ranks[0] - 0.5, ranks[-1] + 0.5))
        gp.append("set xtics (%s)" % ", ".join('"%d%s" %d' % (n, "*" if n > cpus else "", n)
                                                for n in ranks))
        gp.append('set xlabel "ranks%s"'
                  % ("  (* = oversubscribed: more ranks than the %d CPUs)" % cpus
                     if ranks[-1] > cpus else ""))
    else:
        cols = [("%s %d ranks%s" % (m, n, over(n)), (m, n), COLOR.get(m, "#9467bd"),
                 dash(i), point(i)) for m in mpis for i, n in enumerate(ranks)
                if (m, coll, n) in {k[:3] for k in keys}]
        rows = [(s, [med(vals, (c[1][0], coll, c[1][1], s)) for c in cols]) for s in sizes]
        xs = sizes
        gp.append("set logscale x")
        gp.append("set xrange [%g:%g]" % (sizes[0] / 1.5, sizes[-1] * 1.5))
        gp.append("set xtics (%s)" % ", ".join('"%s" %d' % (human(s), s) for s in sizes))
        gp.append('set xlabel "bytes per rank%s"'
                  % (" (block per rank)" if coll in BLOCKED else ""))
    with open(os.path.join(outdir, dat), "w") as f:
        f.write("# x " + " ".join('"%s"' % c[0] for c in cols) + "\n")
        for x, row in rows:
            f.write("%d " % x + " ".join("NaN" if v is None else "%.4g" % v for v in row)
                    + "\n")
    gp.append("set output 'coll-%s.png'" % coll)
    gp.append('set title "%s: %s, medians"' % (coll, WHAT[coll]))
    plots = ["'%s' using 1:%d with linespoints lc rgb \"%s\" dt %d lw 1.5 pt %d title \"%s\""
             % (dat, i + 2, color, dt, pt, title)
             for i, (title, _, color, dt, pt) in enumerate(cols)]
    gp.append("plot " + ", \\\n     ".join(plots))


def main():
    global MACHINE
    raw, outdir, cpus = sys.argv[1], sys.argv[2], int(sys.argv[3])
    MACHINE = machine(raw)
    vals, pvars, calls, last = read_raw(raw)
    present = {k[0] for k in vals}
    mpis = [m for m in ORDER if m in present] + sorted(present - set(ORDER))
    colls = [c for c in COLLS if any(k[1] == c for k in vals)]
    for coll in colls:
        for n in sorted({k[2] for k in vals if k[1] == coll}):
            table(vals, mpis, coll, n, cpus)
    print("\nsmheap's MPI_T collective counters, last smheap round%s: calls that took the "
          "shared-heap\nalgorithms and calls handed to MPICH's, over the timed and verification "
          "calls, all ranks summed:" % (" (%d)" % last if last else ""))
    for run, words in pvars.items():
        print("  %-13s %s%s" % (run, " ".join(words),
                                " (of %d)" % calls[run] if run in calls else ""))
    if not pvars:
        print("  (none: this MPI has no smheap_coll_shared / smheap_coll_fallback)")
    gp = ['set terminal pngcairo noenhanced size 1000,640 font ",10"', "set logscale y", "set grid",
          'set ylabel "us per call (slowest rank, log scale)"', "set key outside right top"]
    for coll in colls:
        write_plot(vals, mpis, coll, cpus, outdir, gp)
    with open(os.path.join(outdir, "coll.gp"), "w") as f:
        f.write("\n".join(gp) + "\n")


if __name__ == "__main__":
    main()

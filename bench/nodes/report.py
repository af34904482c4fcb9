#!/usr/bin/env python3
"""Tables and plot data for bench/nodes/run.sh, from its raw output.

    report.py RAW OUTDIR

RAW has one line per measurement, as run.sh writes them:
    round=1 mpi=smheap case=cross-lat test=lat buf=heap size=8 value=4.1
    round=1 mpi=smheap case=coll-bcast coll=bcast ranks=4 size=65536 value=181.4
    round=1 mpi=smheap case=cross-lat pvar smheap_remote_msgs=137614
(lines with '#' are comments).  Prints, per case, the median over the rounds of every MPI at
every size and smheap's speedup over each other MPI (its time / smheap's for latencies and
collectives, smheap's MB/s / its for bandwidths: above 1, smheap is faster), then the pvar
lines of the last smheap round.  The loopback TCP between simulated nodes runs at two
speeds in spells of tens of seconds (about 2 and 5 GB/s on the 2-CPU AMD EPYC), which hit
either MPI: a further column gives the median over the rounds of each round's speedup, the
two MPIs measured back to back.  Writes OUTDIR/nodes-<case>.dat and OUTDIR/nodes.gp, the
gnuplot script that draws OUTDIR/nodes.png from them.  Standard library only.
"""
import collections
import os
import statistics
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import machine, human, med  # noqa: E402

MACHINE = "unknown processor"  # the raw file's, set by main

CASES = (
    ("cross-lat", "2 nodes x 1 rank: p2p latency, heap buffers (us, lower is better)", "time"),
    ("cross-bw", "2 nodes x 1 rank: p2p bandwidth, heap buffers (MB/s)", "rate"),
    ("onnode-bw", "2 ranks of one node in a job on 2 nodes: p2p bandwidth, heap buffers (MB/s)",
     "rate"),
    ("coll-bcast", "2 nodes x 2 ranks: MPI_Bcast, bytes per rank (us per call)", "time"),
    ("coll-allreduce", "2 nodes x 2 ranks: MPI_Allreduce of doubles, bytes per rank"
     " (us per call)", "time"),
)
ORDER = ("smheap-ofi", "smheap", "nemesis", "debian")
COLOR = {"smheap": "#d62728", "smheap-ofi": "#ff7f0e", "nemesis": "#1f77b4",
         "debian": "#2ca02c"}
REF = os.environ.get("REF", "smheap")      # the MPI whose speedups the tables give
NAME = os.environ.get("NAME", "nodes")     # the output files' stem


def read_raw(path):
    """(mpi, case, size) -> values, and case -> pvar words of the last smheap round."""
    vals = collections.defaultdict(list)
    rounds = collections.defaultdict(dict)
    pvars = {}
    last = {}
    header = []
    for line in open(path):
        if line.startswith("# bench"):
            header.append(line[2:].strip())
        if line.startswith("#"):
            continue
        words = line.split()
        kv = dict(w.split("=", 1) for w in words if "=" in w)
        if "value" in kv:
            key = (kv["mpi"], kv["case"], int(kv["size"]))
            vals[key].append(float(kv["value"]))
            rounds[key][kv["round"]] = float(kv["value"])
        elif "pvar" in words and kv.get("mpi") == REF:
            rnd, case = int(kv["round"]), kv["case"]
            if rnd > last.get(case, 0):
                last[case], pvars[case] = rnd, []
            if rnd == last[case]:
                pvars[case] += words[words.index("pvar") + 1:]
    return vals, rounds, pvars


def speedup_value(sm, other, kind):
    return other / sm if kind == "time" else sm / other


def speedup(sm, other, kind):
    if sm is None or other is None or not sm or not other:
        return "-"
    return "%.2f" % speedup_value(sm, other, kind)


def paired_speedup(rounds, other, case, size, kind):
    """The median over the rounds of each round's speedup of REF over other."""
    sm, them = rounds.get((REF, case, size), {}), rounds.get((other, case, size), {})
    both = [speedup_value(sm[r], them[r], kind) for r in sm if r in them and sm[r] and them[r]]
    return "%.2f" % statistics.median(both) if both else "-"


def rounds_ahead(rounds, other, case, size, kind):
    """In how many rounds REF was faster than other."""
    sm, them = rounds.get((REF, case, size), {}), rounds.get((other, case, size), {})
    both = [speedup_value(sm[r], them[r], kind) for r in sm if r in them and sm[r] and them[r]]
    return "%d/%d" % (sum(x > 1 for x in both), len(both)) if both else "-"


def table(vals, rounds, mpis, case, title, kind):
    sizes = sorted({k[2] for k in vals if k[1] == case})
    if not sizes:
        return
    runs = max(len(vals[k]) for k in vals if k[1] == case)
    others = [m for m in mpis if m != REF]
    print("\n%s, median of %d runs; x<mpi> = %s's speedup (above 1: %s faster),"
          " p<mpi> = the median of each round's speedup, w<mpi> = rounds %s was faster"
          % (title, runs, REF, REF, REF))
    print("  on " + MACHINE)
    print(" ".join("%9s" % h for h in ["size"] + mpis + ["x" + m[:7] for m in others] +
                   ["p" + m[:7] for m in others] + ["w" + m[:7] for m in others]))
    fmt = "%9.3f" if kind == "time" else "%9.0f"
    for size in sizes:
        row = [human(size)]
        for m in mpis:
            v = med(vals, (m, case, size))
            row.append(fmt % v if v is not None else "-")
        sm = med(vals, (REF, case, size))
        row += [speedup(sm, med(vals, (m, case, size)), kind) for m in others]
        row += [paired_speedup(rounds, m, case, size, kind) for m in others]
        row += [rounds_ahead(rounds, m, case, size, kind) for m in others]
        print(" ".join("%9s" % c for c in row))


def gnuplot(vals, mpis, outdir):
    gp = ['set terminal pngcairo size 1200,900 font ",9"', "set output '%s.png'" % NAME,
          'set multiplot layout 2,2 title "jobs across simulated nodes: %s, medians"'
          % ", ".join(mpis), "set logscale xy", "set grid", 'set xlabel "bytes"', "set key top left"]
    panels = [("cross-lat", "2 nodes x 1: latency (us)"),
              ("cross-bw", "2 nodes x 1: bandwidth (MB/s)"),
              ("onnode-bw", "on-node pair in a 2-node job: bandwidth (MB/s)"),
              ("coll", "2 nodes x 2: Bcast, Allreduce (us per call)")]
    for case, title in panels:
        cases = [c for c, _, _ in CASES if c.startswith(case)]
        cols = [(m, c) for c in cases for m in mpis if any(k[:2] == (m, c) for k in vals)]
        if not cols:
            continue
        sizes = sorted({k[2] for k in vals if k[1] in cases})
        dat = "%s-%s.dat" % (NAME, case)
        with open(os.path.join(outdir, dat), "w") as f:
            f.write("# size " + " ".join("%s/%s" % c for c in cols) + "\n")
            for size in sizes:
                row = [med(vals, (m, c, size)) for m, c in cols]
                f.write("%d " % size + " ".join("NaN" if v is None else "%.4g" % v
                                                for v in row) + "\n")
        gp.append('set title "%s"' % title)
        gp.append("set xtics (%s)" % ", ".join('"%s" %d' % (human(s), s) for s in sizes))
        gp.append("set xrange [%g:%g]" % (sizes[0] / 1.3, sizes[-1] * 1.3))
        gp.append("plot " + ", ".join(
            "'%s' using 1:%d with linespoints lc rgb \"%s\" dt %d pt 7 lw 1.5 title \"%s\""
            % (dat, i + 2, COLOR.get(m, "#9467bd"), 1 + cases.index(c), m +
               ("" if len(cases) == 1 else " " + c.split("-", 1)[1]))
            for i, (m, c) in enumerate(cols)))
    gp.append("unset multiplot")
    with open(os.path.join(outdir, NAME + ".gp"), "w") as f:
        f.write("\n".join(gp) + "\n")


def main():
    global MACHINE
    raw, outdir = sys.argv[1], sys.argv[2]
    MACHINE = machine(raw)
    vals, rounds, pvars = read_raw(raw)
    present = {k[0] for k in vals}
    mpis = [m for m in ORDER if m in present] + sorted(present - set(ORDER))
    for case, title, kind in CASES:
        table(vals, rounds, mpis, case, title, kind)
    if any(k[1].startswith("coll") and k[0] == "nemesis" for k in vals):
        print("\n(coll: 4 ranks on this machine's CPUs may be more ranks than cores; then the"
              " times say as much about how an MPI waits as about how it moves data)")
    print("\n%s's MPI_T counters, last round (p2p: the pair summed; coll: rank 0's):" % REF)
    for case, words in pvars.items():
        print("  %-15s %s" % (case, " ".join(words)))
    gnuplot(vals, mpis, outdir)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Tables and plot data for bench/p2p/run.sh, from its raw output.

    report.py RAW OUTDIR

RAW has one line per measurement, as run.sh writes them:
    round=1 mpi=smheap run=bw/heap/2048-65536 test=bw buf=heap size=65536 value=6123.4
    round=1 mpi=smheap run=bw/heap/2048-65536 pvar smheap_single_copy_msgs=1912
    round=1 mpi=memcpy run=memcpy test=memcpy1 size=65536 value=44966.6
(lines with '#' are comments).  Prints, for every test and buffer, the median over the
rounds of every MPI at every size and the ratios of smheap to the others (and to memcpy with
one and two threads, for bandwidths; for latencies also the median over the rounds of the
ratio within a round, where the MPIs ran back to back), then the pvar lines of the last
smheap round.  Writes
OUTDIR/p2p-{lat,bw,bibw}.dat (one column per MPI and buffer) and OUTDIR/p2p.gp, the gnuplot
script that draws OUTDIR/p2p-{lat,bw,bibw}.png from them.  Standard library only.
"""
import collections
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import machine, human, med, ratio  # noqa: E402

MACHINE = "unknown processor"  # the raw file's, set by main

TESTS = ("lat", "bw", "bibw")
BUFS = ("heap", "stack", "heap+8")
DASH = {"heap": 1, "stack": 2, "heap+8": 4}     # gnuplot dash type and point type per buffer
POINT = {"heap": 7, "stack": 6, "heap+8": 5}
ORDER = ("smheap", "nemesis", "openmpi")
COLOR = {"smheap": "#d62728", "nemesis": "#1f77b4", "openmpi": "#2ca02c"}


def read_raw(path):
    """(mpi, test, buf, size) -> values, the same -> {round: value}, and the pvar lines of
    the last smheap round."""
    vals = collections.defaultdict(list)
    by_round = collections.defaultdict(dict)
    pvars = {}
    last = 0
    for line in open(path):
        if "#" in line:
            continue
        words = line.split()
        kv = dict(w.split("=", 1) for w in words if "=" in w)
        if "value" in kv:
            key = (kv["mpi"], kv["test"], kv.get("buf", "-"), int(kv["size"]))
            vals[key].append(float(kv["value"]))
            by_round[key][int(kv.get("round", 0))] = float(kv["value"])
        elif "pvar" in words and kv.get("mpi") == "smheap":
            rnd = int(kv["round"])
            if rnd > last:
                last, pvars = rnd, {}
            if rnd == last:
                pvars.setdefault(kv["run"], []).append(words[words.index("pvar") + 1])
    return vals, by_round, pvars


def paired_ratio(by_round, a, b):
    """Median over the rounds of a / b within each round, as a table cell."""
    both = sorted(set(by_round.get(a, {})) & set(by_round.get(b, {})))
    ratios = sorted(by_round[a][r] / by_round[b][r] for r in both if by_round[b][r])
    if not ratios:
        return "-"
    n = len(ratios)
    mid = ratios[n // 2] if n % 2 else (ratios[n // 2 - 1] + ratios[n // 2]) / 2
    return "%.2f" % mid


def table(vals, by_round, mpis, test, buf):
    """Print one test x buffer table."""
    sizes = sorted({k[3] for k in vals if k[1] == test and k[2] == buf})
    if not sizes:
        return
    others = [m for m in mpis if m != "smheap"]
    counts = [len(vals[k]) for k in vals if k[1] == test and k[2] == buf]
    if test == "lat":
        print("\n%s, buf=%s: one-way latency in us, median of %d runs; sm/x = smheap time / x"
              " time (lower is better); pr/x = median over the runs of that ratio within a"
              " run" % (test, buf, max(counts)))
    else:
        print("\n%s, buf=%s: MB/s (1e6 B/s%s), median of %d runs; sm/x = smheap / x (higher"
              " is better); mc1, mc2 = memcpy with 1, 2 threads%s"
              % (test, buf, ", both directions" if test == "bibw" else "", max(counts),
                 " (bibw: both ranks copy at once, so up to about 2 x mc1)"
                 if test == "bibw" else ""))
    head = ["size"] + list(mpis) + ["sm/" + m[:4] for m in others]
    if test == "lat":
        head += ["pr/" + m[:4] for m in others]
    else:
        head += ["sm/mc1", "sm/mc2"]
    print("  on " + MACHINE)
    print(" ".join("%9s" % h for h in head))
    fmt = "%9.3f" if test == "lat" else "%9.0f"
    for size in sizes:
        sm = med(vals, ("smheap", test, buf, size))
        row = [human(size)]
        for m in mpis:
            v = med(vals, (m, test, buf, size))
            row.append(fmt % v if v is not None else "-")
        row += [ratio(sm, med(vals, (m, test, buf, size))) for m in others]
        if test == "lat":
            row += [paired_ratio(by_round, ("smheap", test, buf, size), (m, test, buf, size))
                    for m in others]
        else:
            row += [ratio(sm, med(vals, ("memcpy", "memcpy%d" % n, "-", size))) for n in (1, 2)]
        print(" ".join("%9s" % c for c in row))


def series(vals, mpis, test):
    """Columns of one plot: (title, key without size, color, dash, point)."""
    cols = [("%s %s" % (m, b), (m, test, b), COLOR.get(m, "#9467bd"), DASH[b], POINT[b])
            for m in mpis for b in BUFS]
    if test != "lat":
        cols += [("memcpy %d thread%s" % (n, "s" if n > 1 else ""), ("memcpy", "memcpy%d" % n, "-"),
                  "#000000" if n == 1 else "#7f7f7f", 3, -1) for n in (1, 2)]
    return [c for c in cols if any(k[:3] == c[1] for k in vals)]


def write_dat(vals, cols, test, path):
    sizes = sorted({k[3] for k in vals if k[1] == test and k[3] > 0})
    with open(path, "w") as f:
        f.write("# size " + " ".join('"%s"' % c[0] for c in cols) + "\n")
        for size in sizes:
            row = [med(vals, c[1] + (size,)) for c in cols]
            f.write("%d " % size + " ".join("NaN" if v is None else "%.4g" % v for v in row) + "\n")
    return sizes


def gnuplot(vals, mpis, outdir):
    """Write the .dat files and p2p.gp."""
    label = {"lat": ("one-way latency (us, log scale)", "p2p latency (ping-pong)"),
             "bw": ("MB/s (1e6 B/s, log scale)", "p2p bandwidth (window of Isend, OSU bw)"),
             "bibw": ("MB/s, both directions (log scale)",
                      "p2p bidirectional bandwidth (OSU bibw)")}
    gp = ['set terminal pngcairo size 1000,640 font ",10"', "set logscale xy", "set grid",
          'set xlabel "message size (bytes)"', "set key outside right top"]
    for test in TESTS:
        cols = series(vals, mpis, test)
        if not cols:
            continue
        sizes = write_dat(vals, cols, test, os.path.join(outdir, "p2p-%s.dat" % test))
        gp.append("set xrange [%g:%g]" % (sizes[0] / 1.2, sizes[-1] * 1.2))
        gp.append("set xtics (%s)" % ", ".join('"%s" %d' % (human(s), s) for s in sizes))
        gp.append("set output 'p2p-%s.png'" % test)
        gp.append('set title "%s, medians"' % label[test][1])
        gp.append('set ylabel "%s"' % label[test][0])
        plots = ["'p2p-%s.dat' using 1:%d with %s lc rgb \"%s\" dt %d lw 1.5 %s title \"%s\""
                 % (test, i + 2, "lines" if pt < 0 else "linespoints", color, dt,
                    "" if pt < 0 else "pt %d" % pt, title)
                 for i, (title, _, color, dt, pt) in enumerate(cols)]
        gp.append("plot " + ", \\\n     ".join(plots))
    with open(os.path.join(outdir, "p2p.gp"), "w") as f:
        f.write("\n".join(gp) + "\n")


def main():
    global MACHINE
    raw, outdir = sys.argv[1], sys.argv[2]
    MACHINE = machine(raw)
    vals, by_round, pvars = read_raw(raw)
    present = {k[0] for k in vals}
    mpis = [m for m in ORDER if m in present] + sorted(present - set(ORDER) - {"memcpy"})
    for test in TESTS:
        for buf in BUFS:
            table(vals, by_round, mpis, test, buf)
    print("\nsmheap's MPI_T path counters (smheap_*_msgs, smheap_copy_detours, smheap_sleeps,"
          " smheap_ring_slow_spells), last round, both ranks summed:")
    for run, words in pvars.items():
        print("  %-24s %s" % (run, " ".join(words)))
    if not pvars:
        print("  (none: this MPI has no smheap path counters)")
    gnuplot(vals, mpis, outdir)


if __name__ == "__main__":
    main()

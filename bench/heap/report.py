#!/usr/bin/env python3
"""Medians of bench/heap/run.sh's raw lines, the table (heap.txt) and the churn plot.

Raw lines: "<round> <allocator> <pattern> <size> ops <n> ns_per_op <t>", and after each
process "<round> <allocator> total <pattern> ns <t> peak_rss_kib <k> shm_peak_kib <p>
shm_left_kib <l>".
"""
import os
import subprocess
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import human, med, ratio  # noqa: E402

ORDER = ["smheap", "glibc", "jemalloc", "mimalloc"]


def read(path):
    ns = defaultdict(list)          # (pattern, size, allocator) -> ns per op, one per round
    mem = defaultdict(lambda: defaultdict(list))   # (pattern, size, allocator) -> field -> vals
    keys = []
    last = {}
    for line in open(path):
        f = line.split()
        if len(f) < 4:
            continue
        rnd, alloc = f[0], f[1]
        if f[2] == "total":
            key = last.get((rnd, alloc))
            if key is not None:
                vals = dict(zip(f[4::2], f[5::2]))
                for field in ("peak_rss_kib", "shm_peak_kib", "shm_left_kib"):
                    mem[key + (alloc,)][field].append(int(vals[field]))
            continue
        key = (f[2], int(f[3]))
        if key not in keys:
            keys.append(key)
        last[(rnd, alloc)] = key
        ns[key + (alloc,)].append(float(f[7]))
    return keys, ns, mem


def label(pattern, size):
    if pattern == "small":
        return "small x%d thr" % size
    if pattern == "producer":
        return "producer/consumer"
    return "%s %s" % (pattern, human(size))


# --limits: the most time per operation the shared heap may take, as a multiple of glibc's.
LIMIT, LIMIT_REALLOC = 1.25, 2.0


def main():
    raw, outdir, cpu, runs = sys.argv[1:5]
    limits = "--limits" in sys.argv[5:]
    keys, ns, mem = read(raw)
    allocs = [a for a in ORDER if any(k[2] == a for k in ns)]
    lines = ["Heap patterns (bench/heap/heap_patterns.c), %s rounds, medians; %s" % (runs, cpu),
             "time per operation in ns (ratio to glibc); peak RSS in MiB (ratio to glibc);",
             "/dev/shm: the shared heap's use at its peak and after everything was freed, MiB",
             ""]
    head = "%-20s" % "pattern" + "".join("%20s" % a for a in allocs) + \
        "%18s%18s%10s%10s" % ("smheap RSS", "glibc RSS", "shm peak", "shm left")
    lines += [head, "-" * len(head)]
    worst, over = (0, None), []
    for key in keys:
        time = {a: med(ns, key + (a,)) for a in allocs}
        g = time.get("glibc")
        row = "%-20s" % label(*key)
        for a in allocs:
            v = time[a]
            row += "%20s" % ("-" if v is None else "%.1f (%s)" % (v, ratio(v, g)) if g else "%.1f" % v)
        rss = {a: med(mem[key + (a,)], "peak_rss_kib") for a in ("smheap", "glibc")}
        if rss["smheap"] and rss["glibc"]:
            row += "%18s%18s" % ("%.1f (%s)" % (rss["smheap"] / 1024, ratio(rss["smheap"], rss["glibc"])),
                                 "%.1f" % (rss["glibc"] / 1024))
        shm_peak = med(mem[key + ("smheap",)], "shm_peak_kib")
        shm_left = med(mem[key + ("smheap",)], "shm_left_kib")
        if shm_peak is not None:
            row += "%10.1f%10.1f" % (shm_peak / 1024, max(shm_left, 0) / 1024)
        if time.get("smheap") and g:
            r = time["smheap"] / g
            if r > worst[0]:
                worst = (r, label(*key))
            limit = LIMIT_REALLOC if key[0] == "realloc" else LIMIT
            if limits and r > limit:
                row += "   over the limit of %.2fx" % limit
                over.append(key)
        lines.append(row)
    lines += ["", "slowest against glibc: %s at %.2fx" % (worst[1], worst[0])]
    if limits:
        lines.append("patterns over the limit (%.2fx, realloc %.2fx): %s" %
                     (LIMIT, LIMIT_REALLOC, ", ".join(label(*k) for k in over) or "none"))
        with open(os.path.join(outdir, "heap.over"), "w") as f:
            f.writelines("%s %d\n" % k for k in over)
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    with open(os.path.join(outdir, "heap.txt"), "w") as f:
        f.write(text)
    plot(keys, ns, allocs, outdir, cpu)
    sys.exit(1 if over else 0)


def plot(keys, ns, allocs, outdir, cpu):
    data = os.path.join(outdir, "heap-churn.dat")
    with open(data, "w") as f:
        for key in keys:
            if key[0] != "churn":
                continue
            vals = [med(ns, key + (a,)) for a in allocs]
            f.write("%d %s\n" % (key[1], " ".join("%g" % v if v else "NaN" for v in vals)))
    script = ["set terminal pngcairo size 1000,640" if has_cairo() else "set terminal png size 1000,640",
              "set output '%s'" % os.path.join(outdir, "heap-churn.png"),
              "set title 'malloc, touch every page, free: time per operation (%s)'" % cpu,
              "set logscale xy", "set xlabel 'block size (bytes)'", "set ylabel 'ns per operation'",
              "set key top left", "set grid",
              "plot " + ", ".join("'%s' using 1:%d with linespoints title '%s'" % (data, i + 2, a)
                                  for i, a in enumerate(allocs))]
    try:
        subprocess.run(["gnuplot"], input="\n".join(script), text=True, check=True,
                       stderr=subprocess.DEVNULL)
    except (OSError, subprocess.CalledProcessError):
        print("bench/heap: no gnuplot (maint/deps.sh --bench): no plot")


def has_cairo():
    try:
        out = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True, text=True)
        return "pngcairo" in out.stdout + out.stderr
    except OSError:
        return False


if __name__ == "__main__":
    main()

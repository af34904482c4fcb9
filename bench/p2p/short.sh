#!/usr/bin/env bash
# Short messages, line by line: ping-pong latency of 0 to 512 bytes between two ranks on two
# cores, heap and stack buffers, ch3:smheap against ch3:nemesis and Open MPI (whichever are
# installed), and optionally against an earlier build of smheap's libraries; and the cache
# lines of ring cells each smheap message was written into (MPI_T smheap_ring_lines over
# smheap_eager_msgs, one run per size).  Rounds interleaved, medians.
#   bench/p2p/short.sh [RUNS]            (default 5)
#   BEFORE=DIR bench/p2p/short.sh 5      DIR: the lib/ of another smheap build of the same
#                                        MPICH (run through LD_LIBRARY_PATH)
# Output: build/results/bench/short.txt (table), short-raw.txt (every measurement).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-5}
before=${BEFORE:-}
sizes=${SIZES:-0,8,16,24,32,40,48,56,64,128,256,512}
exe="$top/build/bench/p2p"
out="$top/build/results/bench"
raw="$out/short-raw.txt"
mkdir -p "$exe" "$out"
ulimit -s 300000 2>/dev/null || { echo "short: cannot raise the stack limit"; exit 1; }

. "$top/bench/benchlib.sh"
build() { bench_build short "$1" "$2" "$top/bench/p2p/p2p_bench.c" "$exe/$1/p2p_bench"; }
build smheap "$top/build/install/bin/mpicc" || { echo "short: smheap is required"; exit 1; }
mpis=(smheap)
[ -n "$before" ] && mpis+=(before)
build nemesis "$top/build/nemesis/install/bin/mpicc" && mpis+=(nemesis)
if command -v mpirun.openmpi >/dev/null 2>&1 && build openmpi mpicc.openmpi; then
    mpis+=(openmpi)
fi

. "$top/bench/p2p/launch.sh"
record() { bench_record short "$raw" "$@"; }

{
    echo "# bench/p2p/short.sh $runs, $(date -Is), $(uname -r)"
    echo "# mpis: ${mpis[*]}${before:+ (before: $before)}"
    echo "# machine: $(bench_machine)"
} >"$raw"
for r in $(seq "$runs"); do
    echo "short: round $r/$runs" >&2
    n=${#mpis[@]}
    for b in heap stack; do
        for i in $(seq 0 $((n - 1))); do
            m=${mpis[$(((i + r) % n))]}
            record "round=$r mpi=$m" p2p_launch "$m" -t lat -b "$b" -z "$sizes"
        done
    done
done
# lines per message: one size per run, so that nothing else is counted
for s in ${sizes//,/ }; do
    for m in smheap $([ -n "$before" ] && echo before); do
        record "lines=$s mpi=$m" p2p_launch "$m" -t lat -b heap -z "$s" -q
    done
done

python3 - "$raw" "$runs" <<'EOF' | tee "$out/short.txt"
import re, statistics, sys
raw, runs = sys.argv[1], sys.argv[2]
vals, lines, machine, mpis = {}, {}, "", []
for l in open(raw):
    if l.startswith("# machine:"):
        machine = l[len("# machine: "):].strip()
    m = re.match(r"round=\d+ mpi=(\S+) test=lat buf=(\S+) size=(\d+) value=([\d.]+)", l)
    if m:
        vals.setdefault((m[1], m[2], int(m[3])), []).append(float(m[4]))
        if m[1] not in mpis:
            mpis.append(m[1])
    m = re.match(r"lines=(\d+) mpi=(\S+) pvar smheap_(ring_lines|eager_msgs)=(\d+)", l)
    if m:
        lines.setdefault((m[2], int(m[1])), {})[m[3]] = int(m[4])
sizes = sorted({k[2] for k in vals})
print(f"bench/p2p/short.sh: ping-pong latency (us), 2 ranks on 2 cores, medians of {runs} "
      f"interleaved rounds; {machine}")
print("ratio: the other's time over smheap's (above 1: smheap faster); lines: cache lines of "
      "ring cells written per message (MPI_T)")
for buf in ("heap", "stack"):
    others = [m for m in mpis if m != "smheap"]
    print(f"\n{buf} buffers\n")
    head = ["size", "smheap"] + others + [f"{o}/smheap" for o in others] + ["lines"]
    if "before" in mpis:
        head.append("lines before")
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for s in sizes:
        med = {m: statistics.median(vals[(m, buf, s)]) for m in mpis if (m, buf, s) in vals}
        row = [str(s), f"{med.get('smheap', float('nan')):.3f}"]
        row += [f"{med[o]:.3f}" if o in med else "-" for o in others]
        row += [f"{med[o] / med['smheap']:.2f}" if o in med and "smheap" in med else "-"
                for o in others]
        for m in ["smheap"] + (["before"] if "before" in mpis else []):
            c = lines.get((m, s), {})
            row.append(f"{c['ring_lines'] / c['eager_msgs']:.2f}"
                       if c.get("eager_msgs") and "ring_lines" in c else "-")
        print("| " + " | ".join(row) + " |")
EOF

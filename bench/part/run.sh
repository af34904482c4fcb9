#!/usr/bin/env bash
# Partitioned communication, 2 ranks on one node: a 4 MiB heap buffer in 64 partitions,
# filled and readied by 4 threads (bench/part/part_bench.c), against the same data sent
# with one MPI_Isend after the threads finish; ch3:smheap against Debian's MPICH 4.0.2
# (ch4, packages mpich and libmpich-dev: maint/deps.sh --bench).  ch3:nemesis is left out:
# ch3 itself has no partitioned communication (its MPI_Psend_init aborts).  Every round runs
# each MPI once, rounds interleaved, order rotating; prints the medians over the rounds of
# each run's medians (us) and the ratios.
#   bench/part/run.sh [RUNS]        (default 5)
#   PART_ARGS="-p 16 -w 2000" ...   other part_bench arguments
# Output in build/results/bench/: part.txt, part-raw.txt.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-5}
args=${PART_ARGS:-}
exe="$top/build/bench/part"
out="$top/build/results/bench"
raw="$out/part-raw.txt"
mkdir -p "$exe" "$out"

. "$top/bench/benchlib.sh"
build() { bench_build part "$1" "$2" "$top/bench/part/part_bench.c" "$exe/$1/part_bench"; }
build smheap "$top/build/install/bin/mpicc" ||
    { echo "part: smheap is required (maint/setup.sh)"; exit 1; }
mpis=(smheap)
build mpich mpicc.mpich && mpis+=(mpich)

launch() {
    local m=$1
    shift
    case $m in
    smheap) timeout 300 "$top/build/install/bin/mpiexec" -n 2 "$exe/smheap/part_bench" "$@" ;;
    mpich)  timeout 300 mpiexec.mpich -n 2 "$exe/mpich/part_bench" "$@" ;;
    esac
}

machine=$(bench_machine)
{
    echo "# bench/part/run.sh $runs $args, $(date -Is), $(uname -r)"
    echo "# machine: $machine"
    echo "# mpis: ${mpis[*]}"
} >"$raw"
for r in $(seq "$runs"); do
    echo "part: round $r/$runs" >&2
    n=${#mpis[@]}
    for i in $(seq 0 $((n - 1))); do
        m=${mpis[$(((i + r) % n))]}
        # shellcheck disable=SC2086
        bench_record part "$raw" "round=$r mpi=$m" launch "$m" $args
    done
done

{
    echo "bench/part: 2 ranks on one node, $runs run(s), $(date -Is)"
    echo "machine: $machine"
    python3 - "$raw" <<'PY'
import re, statistics, sys
vals = {}
for line in open(sys.argv[1]):
    m = re.match(r"round=\d+ mpi=(\S+) test=(\S+) size=(\d+) parts=(\d+) threads=(\d+) "
                 r"after_ready=(\S+) total=(\S+)", line)
    if m:
        mpi, test = m.group(1), m.group(2)
        what = f"{m.group(3)} B in {m.group(4)} partitions, {m.group(5)} threads"
        vals.setdefault((mpi, test), []).append((float(m.group(6)), float(m.group(7))))
print(f"({what}; medians over the runs, us)")
print(f"{'mpi':8} {'test':6} {'after_ready':>12} {'total':>10}")
med = {}
for (mpi, test), v in sorted(vals.items()):
    med[mpi, test] = (statistics.median(a for a, _ in v), statistics.median(t for _, t in v))
    print(f"{mpi:8} {test:6} {med[mpi, test][0]:12.1f} {med[mpi, test][1]:10.1f}")
base = med.get(("smheap", "part"))
if base:
    print("smheap partitioned's speedup (above 1: faster), after_ready and total:")
    for key in sorted(med):
        if key != ("smheap", "part"):
            a, t = med[key]
            print(f"  against {key[0]} {key[1]:6} {a / base[0]:6.2f} {t / base[1]:6.2f}")
PY
} | tee "$out/part.txt"

#!/usr/bin/env bash
# One-sided communication, 2 ranks on one node: ch3:smheap against ch3:nemesis and Open MPI
# (whichever are installed; maint/setup.sh --nemesis, maint/deps.sh --bench).  rma_bench.c
# is built with each MPI's mpicc into build/bench/rma/<mpi>/; every round runs each MPI x
# test once, rounds interleaved and the order rotating, so that drift hits all alike.
# Prints the medians over the rounds and smheap's speedup against each (above 1: smheap is
# faster), with the processor named.
#   bench/rma/run.sh [RUNS]         (default 3)
#   QUICK=1 bench/rma/run.sh 1      a smoke test: fewer repetitions
#   RMA_TESTS="busy lat bw epoch"   the tests to run (rma_bench.c says what each measures)
# Output in build/results/bench/: rma.txt (tables), rma-raw.txt (every measurement).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-3}
quick=${QUICK:-0}
tests=${RMA_TESTS:-busy lat bw epoch}
exe="$top/build/bench/rma"
out="$top/build/results/bench"
raw="$out/rma-raw.txt"
mkdir -p "$exe" "$out"
qflag=()
[ "$quick" = 1 ] && qflag=(-q)

. "$top/bench/benchlib.sh"
build() { bench_build rma "$1" "$2" "$top/bench/rma/rma_bench.c" "$exe/$1/rma_bench"; }
build smheap "$top/build/install/bin/mpicc" ||
    { echo "rma: smheap is required (maint/setup.sh)"; exit 1; }
mpis=(smheap)
build nemesis "$top/build/nemesis/install/bin/mpicc" && mpis+=(nemesis)
if command -v mpirun.openmpi >/dev/null 2>&1; then
    build openmpi mpicc.openmpi && mpis+=(openmpi)
else
    echo "rma: openmpi: no mpirun.openmpi, skipped"
fi

launch() {
    local m=$1
    shift
    case $m in
    smheap)  timeout 600 "$top/build/install/bin/mpiexec" -n 2 -bind-to core \
                 "$exe/smheap/rma_bench" "$@" ;;
    nemesis) timeout 600 "$top/build/nemesis/install/bin/mpiexec" -n 2 -bind-to core \
                 "$exe/nemesis/rma_bench" "$@" ;;
    openmpi) timeout 600 mpirun.openmpi -np 2 --bind-to core --allow-run-as-root \
                 --mca btl self,vader "$exe/openmpi/rma_bench" "$@" ;;
    esac
}

machine=$(bench_machine)
{
    echo "# bench/rma/run.sh $runs QUICK=$quick tests=$tests, $(date -Is), $(uname -r)"
    echo "# machine: $machine"
    echo "# mpis: ${mpis[*]}"
} >"$raw"
for r in $(seq "$runs"); do
    n=${#mpis[@]}
    for t in $tests; do
        echo "rma: round $r/$runs: $t" >&2
        for i in $(seq 0 $((n - 1))); do
            m=${mpis[$(((i + r) % n))]}
            bench_record rma "$raw" "round=$r mpi=$m" launch "$m" -t "$t" "${qflag[@]}"
        done
    done
done

{
    echo "bench/rma: 2 ranks on one node, $runs run(s)$([ "$quick" = 1 ] && echo ", QUICK")," \
        "$(date -Is)"
    echo "machine: $machine"
    PYTHONPATH="$top/bench" python3 - "$raw" "${mpis[@]}" <<'PY'
import re, sys
from benchlib import human, med
raw, mpis = sys.argv[1], sys.argv[2:]
vals = {}
pat = re.compile(r"round=\d+ mpi=(\S+) test=(\S+) op=(\S+) flavor=(\S+) sync=(\S+) "
                 r"size=(\d+) (usec|mbps)=(\S+)")
for line in open(raw):
    m = pat.match(line)
    if m:
        mpi, test, op, flavor, sync, size, unit, v = m.groups()
        vals.setdefault((test, op, flavor, sync, int(size), unit, mpi), []).append(float(v))
rows = sorted({k[:6] for k in vals})
others = [m for m in mpis if m != "smheap"]
print("medians over the runs; 'x' columns: smheap's speedup against that MPI "
      "(above 1: smheap faster)")
head = f"{'test':5} {'op':4} {'window':9} {'sync':5} {'size':>5} " + \
    " ".join(f"{m:>10}" for m in mpis) + " " + " ".join(f"{'x ' + m:>10}" for m in others)
last = None
worst = {}
for row in rows:
    test, op, flavor, sync, size, unit = row
    if (test, unit) != last:
        print(f"\n{test} ({'us, lower is better' if unit == 'usec' else 'MB/s, higher is better'})")
        print(head)
        last = (test, unit)
    got = {m: med(vals, row + (m,)) for m in mpis}
    cells = " ".join(f"{got[m]:10.2f}" if got[m] is not None else f"{'-':>10}" for m in mpis)
    sp = []
    for m in others:
        s = got["smheap"], got[m]
        if None in s or not s[0] or not s[1]:
            sp.append(f"{'-':>10}")
            continue
        x = s[1] / s[0] if unit == "usec" else s[0] / s[1]
        worst[m] = min(worst.get(m, x), x)
        sp.append(f"{x:10.2f}")
    print(f"{test:5} {op:4} {flavor:9} {sync:5} {human(size):>5} {cells} {' '.join(sp)}")
print()
for m in others:
    if m in worst:
        print(f"smheap's smallest speedup against {m}: {worst[m]:.2f}")
# where smheap's origin went, from its MPI_T counters (the last round of each test)
paths = {}
cpat = re.compile(r"round=\d+ mpi=smheap pvar test=(\S+) flavor=(\S+) (.*)")
for line in open(raw):
    m = cpat.match(line)
    if m:
        paths[(m.group(1), m.group(2))] = dict(kv.split("=") for kv in m.group(3).split())
if paths:
    names = next(iter(paths.values())).keys()
    print("\nsmheap's origin, MPI_T (one run of each test and window):")
    print(f"{'test':5} {'window':9} " + " ".join(f"{n.replace('smheap_rma_', ''):>15}"
                                                 for n in names))
    for (test, flavor), c in sorted(paths.items()):
        print(f"{test:5} {flavor:9} " + " ".join(f"{c[n]:>15}" for n in names))
PY
} | tee "$out/rma.txt"

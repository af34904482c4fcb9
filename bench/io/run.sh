#!/usr/bin/env bash
# MPI-IO with the shared heap on and off, in one run: bench/io/io_bench.c (collective
# buffering; many opens and closes) on 2 and 4 ranks, and the wall time of MPICH's own
# test/mpi/io testlist; each heap on, heap off, and heap on with MPICH's collectives
# (MPIR_CVAR_CH3_SMHEAP_COLL=0, which separates the heap from the shared-heap
# collectives), alternating, RUNS rounds; medians and ratios to heap off in
# build/results/bench/io.txt.
#   bench/io/run.sh [RUNS]          (default 5; needs maint/setup.sh's build/install)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-5}
bin="$top/build/install/bin"
out="$top/build/results/bench"
scratch="$top/build/tests/io-bench"
mkdir -p "$out" "$scratch"
exe="$out/io_bench"
"$bin/mpicc" -O2 -o "$exe" "$top/bench/io/io_bench.c"
modes=("heap-on:1:1" "heap-off:0:1" "heap-on,mpich-coll:1:0")
raw="$out/io.raw"
: > "$raw"

suite() {  # MPICH's test/mpi/io, wall seconds
    local t0 t1
    t0=$(date +%s.%N)
    "$top/maint/run-suite.sh" --dirs io --install "$top/build/install" \
        --out "$scratch/suite" > "$scratch/suite.log" 2>&1 || { tail -5 "$scratch/suite.log" >&2; return 1; }
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }'
}
suite > /dev/null       # builds the tests once, untimed
for r in $(seq "$runs"); do
    for i in 0 1 2; do
        m=${modes[$(( (i + r) % 3 ))]}  # a rotating order: no mode always runs first
        IFS=: read -r name heap coll <<< "$m"
        export MPIR_CVAR_CH3_SMHEAP_ENABLE=$heap MPIR_CVAR_CH3_SMHEAP_COLL=$coll
        for n in 2 4; do
            "$bin/mpiexec" -n $n "$exe" 64 3 "$scratch" |
                awk -v m="$name" -v n=$n '{print m, "collective-64MiBx" n, $2; print m, "open-close-x" n, $4}' >> "$raw"
        done
        echo "$name testlist-io $(suite)" >> "$raw"
    done
    echo "bench/io: round $r of $runs done"
done
unset MPIR_CVAR_CH3_SMHEAP_ENABLE MPIR_CVAR_CH3_SMHEAP_COLL
. "$top/bench/benchlib.sh"
{
    echo "MPI-IO, $runs rounds, medians (s) and ratio to heap off; $(bench_machine)"
    awk '{v[$2, $1] = v[$2, $1] " " $3; if (!s[$2]++) t[n++] = $2}
        function med(l,   a, k, i, j, x) { k = split(l, a, " ")
            for (i = 2; i <= k; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
            return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 }
        END { printf "%-20s %16s %16s %24s\n", "test", "heap on", "heap off", "heap on, MPICH coll"
              for (i = 0; i < n; i++) { on = med(v[t[i], "heap-on"]); off = med(v[t[i], "heap-off"]); mc = med(v[t[i], "heap-on,mpich-coll"])
                  printf "%-20s %9.3f (%.2f) %9.3f (1.00) %17.3f (%.2f)\n", t[i], on, on / off, off, mc, mc / off } }' "$raw"
} | tee "$out/io.txt"

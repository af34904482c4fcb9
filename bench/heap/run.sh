#!/usr/bin/env bash
# The shared heap against glibc's malloc on a malloc-heavy program (malloc_bench.c), in one
# run: the same binary with MPIR_CVAR_CH3_SMHEAP_ENABLE=1 and =0, alternating, RUNS times
# each; prints medians of operations per second and peak RSS, and the ratios.
#   bench/heap/run.sh [RUNS]      (default 5; needs maint/setup.sh's build/install)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-5}
bin="$top/build/install/bin"
out="$top/build/results/bench"
mkdir -p "$out"
exe="$out/malloc_bench"
"$bin/mpicc" -O2 -o "$exe" "$top/bench/heap/malloc_bench.c" -lpthread

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

report="$out/heap.txt"
{
echo "malloc_bench, $runs runs each, medians; shared heap (ENABLE=1) vs glibc (ENABLE=0)"
printf '%-14s %14s %14s %7s %12s %12s %7s\n' workload "heap ops/s" "glibc ops/s" ratio \
    "heap RSS KiB" "glibc RSS KiB" ratio
for w in "small 1" "small 2" "mix 1" "mix 2"; do
    set -- $w
    : > "$out/h.ops"; : > "$out/g.ops"; : > "$out/h.rss"; : > "$out/g.rss"
    for i in $(seq "$runs"); do
        for mode in h g; do
            enable=$([ $mode = h ] && echo 1 || echo 0)
            line=$(MPIR_CVAR_CH3_SMHEAP_ENABLE=$enable "$bin/mpiexec" -n 1 "$exe" "$1" "$2")
            echo "$line" | awk '{print $2}' >> "$out/$mode.ops"
            echo "$line" | awk '{print $4}' >> "$out/$mode.rss"
        done
    done
    ho=$(median < "$out/h.ops"); go=$(median < "$out/g.ops")
    hr=$(median < "$out/h.rss"); gr=$(median < "$out/g.rss")
    printf '%-14s %14.0f %14.0f %7.2f %12.0f %12.0f %7.2f\n' "$1 x$2 thr" "$ho" "$go" \
        "$(awk -v a="$ho" -v b="$go" 'BEGIN{print a/b}')" "$hr" "$gr" "$(awk -v a="$hr" -v b="$gr" 'BEGIN{print a/b}')"
done
} | tee "$report"
rm -f "$out"/[hg].ops "$out"/[hg].rss

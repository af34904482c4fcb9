#!/usr/bin/env bash
# The shared heap against other allocators on the allocation patterns of real programs
# (heap_patterns.c), in one run: each pattern, each allocator, RUNS rounds (the allocators
# in a rotating order within a round), one process per pattern and size.
#   smheap    the shared heap (MPIR_CVAR_CH3_SMHEAP_ENABLE=1)
#   glibc     the heap off: glibc's malloc
#   jemalloc  Debian's libjemalloc2 through LD_PRELOAD, heap off
#   mimalloc  Debian's libmimalloc2.0 through LD_PRELOAD, heap off
# Medians of time per operation, peak RSS and /dev/shm use, and the ratios to glibc, in
# build/results/bench/heap.txt; time per operation against block size in heap-churn.png.
#   bench/heap/run.sh [RUNS]      (default 5; needs maint/setup.sh's build/install;
#                                  maint/deps.sh --bench installs jemalloc, mimalloc, gnuplot)
# Settings for a quick check (test/checks/heap_patterns.sh): HEAP_BENCH_QUICK=1 (sizes up
# to 64 MiB, an eighth of the operations), HEAP_BENCH_ALLOCATORS="smheap glibc",
# HEAP_BENCH_OUT=DIR, HEAP_BENCH_LIMITS=1 (fail if the shared heap takes more than 1.25x
# glibc's time on a pattern, 2x on realloc growth; a pattern over it is first measured
# again for twice as many rounds more, and judged on all its rounds).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-5}
bin="$top/build/install/bin"
out=${HEAP_BENCH_OUT:-$top/build/results/bench}
mkdir -p "$out"
exe="$out/heap_patterns"
"$bin/mpicc" -O2 -o "$exe" "$top/bench/heap/heap_patterns.c" -lpthread
libdir=/usr/lib/x86_64-linux-gnu

allocators=(smheap glibc)
for a in jemalloc:libjemalloc.so.2 mimalloc:libmimalloc.so.2; do
    if [ -n "${HEAP_BENCH_ALLOCATORS:-}" ]; then [[ " $HEAP_BENCH_ALLOCATORS " == *" ${a%%:*} "* ]] || continue; fi
    if [ -e "$libdir/${a#*:}" ]; then allocators+=("${a%%:*}")
    else echo "bench/heap: no $libdir/${a#*:} (maint/deps.sh --bench), ${a%%:*} skipped"; fi
done
[ "${HEAP_BENCH_QUICK:-0}" = 1 ] && export HEAP_PATTERNS_SCALE=8

# One pattern per line: the arguments of heap_patterns.
patterns() {
    local max=256M s
    [ "${HEAP_BENCH_QUICK:-0}" = 1 ] && max=64M
    echo "small 1"; echo "small 4"; echo "small 8"
    for s in $(awk -v max="${max%M}" 'BEGIN {
            for (s = 16; s <= max * 1048576; s *= 2) {
                print s; if (s >= 32 && s * 1.5 + 3 <= max * 1048576) print s + s / 2 + 3 } }'); do
        echo "churn $s $s"
    done
    echo "realloc 64M"; [ "$max" = 256M ] && echo "realloc 256M"
    echo "producer"
    for s in 1M 4M 16M 64M 256M; do
        [ "$max" = 64M ] && [ "$s" = 256M ] && continue
        echo "calloc $s $s"
    done
}

run_one() {  # allocator pattern-args...: the pattern's lines, each prefixed by the allocator
    local a=$1 env=(env -u MPICH_CH3_SMHEAP_ENABLE -u MPIR_PARAM_CH3_SMHEAP_ENABLE
                    MPIR_CVAR_CH3_SMHEAP_ENABLE=0)
    shift
    case $a in
        smheap) env=("${env[@]:0:5}" MPIR_CVAR_CH3_SMHEAP_ENABLE=1) ;;
        jemalloc) env+=(LD_PRELOAD="$libdir/libjemalloc.so.2") ;;
        mimalloc) env+=(LD_PRELOAD="$libdir/libmimalloc.so.2") ;;
    esac
    "${env[@]}" "$exe" "$@" | sed "s/^/$a /" || { echo "bench/heap: $a: heap_patterns $* failed" >&2; exit 1; }
}

raw="$out/heap.raw"
keys="$out/heap.keys"      # each pattern's arguments and the key its lines carry
: > "$raw"; : > "$keys"
n=${#allocators[@]}
rounds() {  # first last pattern-lines...: those patterns, rounds first..last, into $raw
    local first=$1 last=$2 r p i a
    shift 2
    for r in $(seq "$first" "$last"); do
        for p in "$@"; do
            for i in $(seq 0 $((n - 1))); do
                a=${allocators[$(( (i + r) % n ))]}
                # shellcheck disable=SC2086
                run_one "$a" $p | sed "s/^/$r /" >> "$raw"
            done
            [ "$r" = 1 ] && echo "$(tail -2 "$raw" | head -1 | cut -d' ' -f3,4)|$p" >> "$keys"
        done
        echo "bench/heap: round $r of $last done"
    done
}
report() {
    python3 "$top/bench/heap/report.py" "$raw" "$out" "$(bench_machine)" \
        "$1" ${HEAP_BENCH_LIMITS:+--limits}
}
. "$top/bench/benchlib.sh"
mapfile -t plist < <(patterns)
rounds 1 "$runs" "${plist[@]}"
report "$runs" && exit 0
[ -n "${HEAP_BENCH_LIMITS:-}" ] || exit 1
# This host's speed can change from one process to the next (a virtual machine's neighbours):
# a pattern over the limit is measured again, twice as many rounds more, and judged on all
# of its rounds together; the limit stays.
mapfile -t again < <(awk -F'|' 'NR == FNR { over[$0] = 1; next } $1 in over { print $2 }' \
                     "$out/heap.over" "$keys")
[ ${#again[@]} -gt 0 ] || exit 1
echo "bench/heap: over the limit after $runs rounds: ${again[*]}; $((2 * runs)) rounds more"
rounds $((runs + 1)) $((3 * runs)) "${again[@]}"
report "$runs to $((3 * runs))"

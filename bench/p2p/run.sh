#!/usr/bin/env bash
# Point-to-point between two ranks on two cores: ch3:smheap against ch3:nemesis and Open MPI
# (whichever are installed), with heap and stack buffers, and memcpy as the ceiling.
# p2p_bench.c (latency, OSU-style bandwidth and bidirectional bandwidth) is built with each
# MPI's mpicc into build/bench/p2p/<mpi>/; every round runs every MPI x test x buffer and
# memcpy_bench once, rounds interleaved so that drift hits all alike (and, within a round,
# the MPIs back to back for each test).  Prints the medians over the rounds and the
# ratios, and plots them (gnuplot).
#   bench/p2p/run.sh [RUNS]      (default 5; smheap from maint/setup.sh's build/install,
#                                 nemesis from maint/setup.sh --nemesis, Open MPI from Debian)
#   QUICK=1 bench/p2p/run.sh 1   a smoke test: about 8x fewer iterations
#   VADER_COPY=none|cma|emulated Open MPI's single-copy mechanism (default cma)
#   LAT_MAX=BYTES BW_MIN=BYTES   the largest latency and the smallest bandwidth size
#                                (default 64 MiB and 1 B: every size 0 B-64 MiB in each
#                                test; 65536 and 65536 for the short run of earlier tables)
#   BENCH_RESULTS=DIR            the output folder (bench/portable's bundles set it)
# Output in build/results/bench/: p2p.txt (tables), p2p-raw.txt (every measurement),
# p2p-{lat,bw,bibw}.png (and the .dat files and p2p.gp that draw them).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-5}
quick=${QUICK:-0}
vader_copy=${VADER_COPY:-cma}
lat_max=${LAT_MAX:-$((64 << 20))}
bw_min=${BW_MIN:-1}
src="$top/bench/p2p"
exe="$top/build/bench/p2p"
out=${BENCH_RESULTS:-$top/build/results/bench}
raw="$out/p2p-raw.txt"
mkdir -p "$exe" "$out"
qflag=()
[ "$quick" = 1 ] && qflag=(-q)

# -b stack keeps a send and a receive buffer of up to 64 MiB each on main's stack.  The
# bandwidth test also runs with -b heap+8: heap buffers, the receive buffer 8 bytes past a
# page, a distance at which glibc's memcpy is slow on AMD (the channel's smheap_copy.h).
bufs="heap stack"
ulimit -s 300000 2>/dev/null || {
    echo "p2p: cannot raise the stack limit to 300000 KiB (hard limit $(ulimit -Hs)):" \
        "stack buffers skipped"
    bufs=heap
}

. "$top/bench/benchlib.sh"
# build LABEL MPICC: p2p_bench for one MPI
build() { bench_build p2p "$1" "$2" "$src/p2p_bench.c" "$exe/$1/p2p_bench"; }
build smheap "$top/build/install/bin/mpicc" ||
    { echo "p2p: smheap is required (maint/setup.sh)"; exit 1; }
mpis=(smheap)
build nemesis "$top/build/nemesis/install/bin/mpicc" && mpis+=(nemesis)
if command -v mpirun.openmpi >/dev/null 2>&1; then
    build openmpi mpicc.openmpi && mpis+=(openmpi)
else
    echo "p2p: openmpi: no mpirun.openmpi, skipped"
fi
[ "${BENCH_PREBUILT:-0}" = 1 ] ||
    gcc -O2 -std=c99 -o "$exe/memcpy_bench" "$src/memcpy_bench.c" -lpthread

. "$top/bench/p2p/launch.sh"

# size_parts LO HI: the sizes LO..HI (powers of two, or 0) as parts LO-1K, 2K-64K, 128K-HI,
# so that each launch is short and the MPIs take turns every few seconds: this machine's
# speed drifts over tens of seconds, and a whole sweep of one MPI can fall into one spell.
size_parts() {
    local lo=$1 hi=$2 cut
    for cut in 1024 65536; do
        if [ "$lo" -le "$cut" ] && [ "$hi" -gt "$cut" ]; then
            echo "$lo-$cut"
            lo=$((2 * cut))
        fi
    done
    echo "$lo-$hi"
}

# record LABEL CMD...: one run into the raw file (benchlib.sh)
record() { bench_record p2p "$raw" "$@"; }

{
    echo "# bench/p2p/run.sh $runs QUICK=$quick, $(date -Is), $(uname -r), $(nproc) CPUs"
    echo "# mpis: ${mpis[*]}; Open MPI single copy: $vader_copy; ulimit -s $(ulimit -s)"
    echo "# machine: $(bench_machine)"
} >"$raw"
# Within a round the MPIs run back to back for each test and buffer, in an order that
# rotates from round to round: this machine's speed drifts over seconds (other tenants), so
# measurements that are compared are taken as close together as possible.
for r in $(seq "$runs"); do
    echo "p2p: round $r/$runs" >&2
    n=${#mpis[@]}
    order=()
    for i in $(seq 0 $((n - 1))); do order+=("${mpis[$(((i + r) % n))]}"); done
    for t in lat bw bibw; do
        tbufs=$bufs
        [ "$t" = bw ] && tbufs="$bufs heap+8"
        lo=$bw_min hi=$((64 << 20))
        [ "$t" = lat ] && lo=0 hi=$lat_max
        for b in $tbufs; do
            for part in $(size_parts "$lo" "$hi"); do
                for m in "${order[@]}"; do
                    record "round=$r mpi=$m run=$t/$b/$part" p2p_launch "$m" -t "$t" -b "$b" \
                        -s "${part%-*}" -S "${part#*-}" "${qflag[@]}"
                done
            done
        done
    done
    echo "p2p: round $r/$runs: memcpy" >&2
    record "round=$r mpi=memcpy run=memcpy" timeout 300 "$exe/memcpy_bench" "${qflag[@]}"
done

{
    echo "bench/p2p: 2 ranks on 2 cores, $runs run(s)$([ "$quick" = 1 ] && echo ", QUICK")," \
        "$(date -Is)"
    echo "MPIs: ${mpis[*]} (Open MPI: btl self,vader, single copy $vader_copy)"
    python3 "$src/report.py" "$raw" "$out"
} | tee "$out/p2p.txt"

bench_plot p2p "$out"

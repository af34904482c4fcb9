#!/usr/bin/env bash
# The benchmarks of a bundle (bench/portable/bundle.sh) on the machine it is on: smheap
# against ch3:nemesis and Open MPI 4.1, with the project's own run scripts, so the tables
# are those of bench/p2p/run.sh and bench/coll/run.sh (medians of interleaved rounds).
#   OUT=DIR bash run.sh [p2p|coll|all] [RUNS]    (default all, 3 rounds; OUT default
#                                                 results/ beside this script)
#   p2p   2 ranks, latency, bandwidth and bidirectional bandwidth, 0 B - 64 MiB, heap and
#         stack buffers, and memcpy as the ceiling
#   coll  every collective smheap overrides (COLLS), at 8 B, 64 KiB and 1 MiB (SIZES), on
#         RANKS (default 2 4 8 16): one rank per CPU up to nproc, above it oversubscribed
#   QUICK=1 fewer iterations per size (about 8x for p2p, 6x for coll), for machines lent by
#         the quarter hour: run p2p and coll as two calls (on 2 CPUs, p2p took 1 minute a
#         round, coll at 4-16 ranks 6 minutes a round)
# Writes DIR/machine.txt, DIR/log.txt and the suites' files (p2p.txt, coll.txt: the tables;
# *-raw.txt: every measurement; plots where gnuplot is installed).
set -euo pipefail
D=$(cd "$(dirname "$0")" && pwd)
what=${1:-all}
runs=${2:-3}
case $what in
p2p | coll | all) ;;
*) echo "run.sh: $what: expected p2p, coll or all"; exit 2 ;;
esac
export BENCH_PREBUILT=1 BENCH_RESULTS=${OUT:-$D/results}
mkdir -p "$BENCH_RESULTS"
exec > >(tee -a "$BENCH_RESULTS/log.txt") 2>&1

. "$D/ompi-env.sh"
{
    echo "bundle $(cat "$D/VERSION"), run $(date -Is): run.sh $what $runs QUICK=${QUICK:-0}"
    lscpu
    echo "/dev/shm: $(df -h /dev/shm | tail -n 1)"
    echo "ptrace_scope: $(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo none)"
    grep PRETTY_NAME /etc/os-release || true
    uname -r
} >"$BENCH_RESULTS/machine.txt"
head -n 1 "$BENCH_RESULTS/machine.txt"

start=$SECONDS
if [ "$what" != coll ]; then
    bash "$D/bench/p2p/run.sh" "$runs"
    echo "run.sh: p2p took $((SECONDS - start)) s"
fi
if [ "$what" != p2p ]; then
    start=$SECONDS
    RANKS=${RANKS:-2 4 8 16} COLLS=${COLLS:-barrier bcast reduce allreduce allgather \
allgatherv alltoall alltoallv gather gatherv scatter scatterv reduce_scatter_block} \
        bash "$D/bench/coll/run.sh" "$runs"
    echo "run.sh: coll took $((SECONDS - start)) s"
fi

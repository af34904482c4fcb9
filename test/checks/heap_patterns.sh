#!/usr/bin/env bash
# The shared heap keeps up with glibc's malloc on the allocation patterns of real programs:
# bench/heap/run.sh's patterns with sizes up to 64 MiB and an eighth of the operations,
# heap on and off in alternation, ROUNDS rounds, medians; fails if a pattern takes more
# than 1.25x glibc's time per operation (realloc growth: 2x).  Then: freed big blocks
# beyond the bound go back to /dev/shm at once, and the rest once the program has made no
# allocation for 12 s (jemalloc's decay, run by its background thread).
#   test/checks/heap_patterns.sh WORKDIR [ROUNDS]      (run by maint/test.sh)
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$1 rounds=${2:-5}
unset MPIR_CVAR_CH3_SMHEAP_RETAIN MPICH_CH3_SMHEAP_RETAIN MPIR_PARAM_CH3_SMHEAP_RETAIN
failed=0

HEAP_BENCH_QUICK=1 HEAP_BENCH_ALLOCATORS="smheap glibc" HEAP_BENCH_OUT="$work" \
    HEAP_BENCH_LIMITS=1 "$top/bench/heap/run.sh" "$rounds" || failed=1

heap_on=(env -u MPICH_CH3_SMHEAP_ENABLE -u MPIR_PARAM_CH3_SMHEAP_ENABLE
         MPIR_CVAR_CH3_SMHEAP_ENABLE=1)
exe="$work/heap_patterns"       # built by run.sh
value() { echo "$1" | sed -n "s/.*$2 //p"; }

out=$("${heap_on[@]}" MPIR_CVAR_CH3_SMHEAP_RETAIN=16M "$exe" idle 16M 0)
echo "with a 16 MiB bound: $(echo "$out" | head -1)"
if [ "$(value "$out" shm_after_free_kib)" -gt $((16 * 1024 + 4096)) ]; then
    echo "  128 MiB freed with a 16 MiB bound stayed in /dev/shm"; failed=1
fi
out=$("${heap_on[@]}" "$exe" idle 16M 12)
echo "with the default bound: $(echo "$out" | head -2 | tr '\n' ' ')"
if [ "$(value "$out" shm_after_free_kib)" -lt $((128 * 1024)) ]; then
    echo "  128 MiB freed with the default bound were not kept for reuse"; failed=1
fi
if [ "$(value "$out" shm_after_idle_kib)" -gt 4096 ]; then
    echo "  still in /dev/shm after 12 s without allocations"; failed=1
fi
exit $failed

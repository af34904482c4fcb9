#!/usr/bin/env bash
# The shared heap's unit tests (no MPICH): every case of heap_test, with the settings it
# needs, and the messages for bad settings, as TAP for automake's TAP driver ("make check"
# in build/project reports each case).
set -u
t=${HEAP_TEST:-./test/unit/heap_test}
unset MPI_LOCALRANKID MPI_LOCALNRANKS MPICH_CH3_SMHEAP_ENABLE MPIR_CVAR_CH3_SMHEAP_ENABLE \
      MPICH_CH3_SMHEAP_SIZE MPIR_CVAR_CH3_SMHEAP_SIZE MPIR_PARAM_CH3_SMHEAP_SIZE \
      MPICH_CH3_SMHEAP_RETAIN MPIR_CVAR_CH3_SMHEAP_RETAIN MPIR_PARAM_CH3_SMHEAP_RETAIN
n=0
shm_before=$(ls /dev/shm | grep -c '^smheap-' || true)

run() {  # name expected-output-regex env... -- case
    local name=$1 want=$2 out rc
    shift 2
    n=$((n + 1))
    out=$(env "$@" 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && { [ -z "$want" ] || grep -qE "$want" <<< "$out"; }; then
        echo "ok $n - $name"
    else
        echo "not ok $n - $name (exit $rc)"
        sed 's/^/# /' <<< "$out" | head -20
    fi
}

run family "" "$t" family
run alignments-16B-to-64MiB "" "$t" alignments
run 8-threads-cross-frees "" "$t" threads
run thread-exit "" "$t" thread-exit
run private-scope-from-glibc "" "$t" private
run fork-policy "" "$t" fork
run exhaustion-16MiB-slice "" MPIR_CVAR_CH3_SMHEAP_SIZE=16M "$t" exhaustion
run big-blocks-reuse-grow-bound "" MPIR_CVAR_CH3_SMHEAP_SIZE=4G MPIR_CVAR_CH3_SMHEAP_RETAIN=256M "$t" big-blocks
run malformed-retain "MPIR_CVAR_CH3_SMHEAP_RETAIN=lots is not a size" \
    MPIR_CVAR_CH3_SMHEAP_RETAIN=lots "$t" off
run selftest "" "$t" selftest
run two-ranks-share "" "$t" two-ranks
run slow-creator-one-connection "" "$t" slow-creator
run enable-0 "turned off by MPIR_CVAR_CH3_SMHEAP_ENABLE" MPIR_CVAR_CH3_SMHEAP_ENABLE=0 "$t" off
run enable-no-mpich-spelling "turned off" MPICH_CH3_SMHEAP_ENABLE=no "$t" off
run cvar-spelling-wins "" MPICH_CH3_SMHEAP_ENABLE=0 MPIR_CVAR_CH3_SMHEAP_ENABLE=1 "$t" family
run malformed-enable "MPIR_CVAR_CH3_SMHEAP_ENABLE=maybe is not a boolean" \
    MPIR_CVAR_CH3_SMHEAP_ENABLE=maybe "$t" off
run malformed-size "MPICH_CH3_SMHEAP_SIZE=12X is not a size" MPICH_CH3_SMHEAP_SIZE=12X "$t" off
run malformed-size-empty "MPIR_CVAR_CH3_SMHEAP_SIZE= is not a size" \
    MPIR_CVAR_CH3_SMHEAP_SIZE= "$t" off
run malformed-local-rank "MPI_LOCALRANKID=x and MPI_LOCALNRANKS=2" \
    MPI_LOCALRANKID=x MPI_LOCALNRANKS=2 "$t" off
foreign="already exists and is not this job's"
run foreign-file-singleton "$foreign" "$t" foreign-file singleton
run foreign-file-garbage "$foreign" "$t" foreign-file joiner-junk
run foreign-file-other-mode "$foreign" "$t" foreign-file joiner-mode
run size-below-minimum "asks for 8 MiB per rank, below the minimum of 16 MiB" \
    MPIR_CVAR_CH3_SMHEAP_SIZE=8M "$t" off
run shm-too-small "/dev/shm holds [0-9]+ MiB, too small .*MPIR_CVAR_CH3_SMHEAP_SIZE" \
    MPIR_CVAR_CH3_SMHEAP_SIZE=1T "$t" off

n=$((n + 1))
shm_after=$(ls /dev/shm | grep -c '^smheap-' || true)
if [ "$shm_after" -le "$shm_before" ]; then
    echo "ok $n - nothing left in /dev/shm"
else
    echo "not ok $n - /dev/shm has $shm_after smheap files (had $shm_before)"
fi
echo "1..$n"

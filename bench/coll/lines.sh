#!/usr/bin/env bash
# The model of a big node (issue 18): shared cache lines each rank reads and writes per call
# of Barrier and 8-byte Bcast, Reduce and Allreduce, flat against the topology tree, at 8, 64
# and 256 ranks on synthetic hwloc topologies of 2 packages (bench/coll/lines.c counts them
# through MPI_T).  Counts, not times: more ranks than cores change nothing but how long it
# takes.  Prints a markdown table (also in build/results/bench/coll-lines.md).
#   bench/coll/lines.sh            (ch3:smheap from maint/setup.sh's build/install)
#   SHAPES="8:pack:2_numa:2_core:2 ..."   ranks:topology ('_' for ' ') to run
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
prefix="$top/build/install"
exe="$top/build/bench/coll/lines"
out="$top/build/results/bench/coll-lines.md"
shapes=${SHAPES:-8:pack:2_numa:2_core:2_pu:1 64:pack:2_numa:2_l3:2_core:8_pu:1 256:pack:2_numa:4_l3:4_core:8_pu:1}
mkdir -p "$(dirname "$exe")" "$(dirname "$out")"
"$prefix/bin/mpicc" -O2 -o "$exe" "$top/bench/coll/lines.c"

declare -A res
for shape in $shapes; do
    n=${shape%%:*}
    topo=${shape#*:}
    for kind in flat tree; do
        min=0
        [ $kind = tree ] && min=2
        while read -r coll ranks rmean rmax wmean wmax; do
            res[$coll,$n,$kind]="$rmean $rmax $wmean $wmax"
        done < <(HWLOC_SYNTHETIC="${topo//_/ }" MPIR_CVAR_CH3_SMHEAP_COLL_TREE_MIN=$min \
                 "$prefix/bin/mpiexec" -n "$n" "$exe")
    done
done

{
    echo "Shared cache lines per rank per call (mean / max over ranks), flat against tree."
    echo "Topologies: $(echo $shapes | tr '_' ' ')"
    echo
    echo "| call | ranks | flat read | tree read | flat written | tree written | tree read max / log2(ranks) |"
    echo "| --- | --- | --- | --- | --- | --- | --- |"
    for coll in Barrier Bcast Reduce Allreduce; do
        for shape in $shapes; do
            n=${shape%%:*}
            read -r fr frm fw fwm <<< "${res[$coll,$n,flat]}"
            read -r tr trm tw twm <<< "${res[$coll,$n,tree]}"
            per=$(awk -v m="$trm" -v n="$n" 'BEGIN { printf "%.2f", m / (log(n) / log(2)) }')
            echo "| $coll | $n | $fr / $frm | $tr / $trm | $fw / $fwm | $tw / $twm | $per |"
        done
    done
} | tee "$out"

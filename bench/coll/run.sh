#!/usr/bin/env bash
# Collectives on 2 and 4 ranks: ch3:smheap against ch3:nemesis (MPICH's own algorithms over
# point-to-point) and Open MPI, whichever are installed.  coll_bench.c (time per call, OSU
# style: the slowest rank's average) is built with each MPI's mpicc into
# build/bench/coll/<mpi>/; every round runs every MPI x rank count x collective once, at
# 8 B, 64 KiB and 1 MiB per rank, rounds interleaved so that drift hits all alike.  Prints
# the medians over the rounds and the speedups of smheap, and plots them (gnuplot).
#   bench/coll/run.sh [RUNS]      (default 5; smheap from maint/setup.sh's build/install,
#                                  nemesis from maint/setup.sh --nemesis, Open MPI from Debian)
#   QUICK=1 bench/coll/run.sh 1   a smoke test: about 0.05 s per size instead of 0.3 s
#   RANKS="2 4"                   rank counts; above the number of CPUs the ranks are not
#                                 bound (MPICH: plain mpiexec -n N; Open MPI: --oversubscribe
#                                 --bind-to none) and the tables say "oversubscribed"
#   COLLS="barrier bcast reduce allreduce allgather"   (coll_bench also has gather, scatter,
#                                 alltoall, allgatherv, gatherv, scatterv, alltoallv,
#                                 reduce_scatter_block)
#   SIZES="8 65536 1048576"       bytes per rank (per block for the gathers, scatters,
#                                 alltoalls and reduce_scatter_block; multiples of 8 for
#                                 the reductions)
#   MPIS="smheap nemesis openmpi" which to run (smheap is required when listed)
#   VADER_COPY=none|cma|emulated  Open MPI's single-copy mechanism (default cma)
#   BENCH_RESULTS=DIR             the output folder (bench/portable's bundles set it)
# Output in build/results/bench/: coll.txt (tables), coll-raw.txt (every measurement),
# coll-<coll>.png (and the .dat files and coll.gp that draw them).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-5}
quick=${QUICK:-0}
ranks=${RANKS:-2 4}
colls=${COLLS:-barrier bcast reduce allreduce allgather}
sizes=${SIZES:-8 65536 1048576}
want=${MPIS:-smheap nemesis openmpi}
vader_copy=${VADER_COPY:-cma}
cpus=$(nproc)
src="$top/bench/coll"
exe="$top/build/bench/coll"
out=${BENCH_RESULTS:-$top/build/results/bench}
raw="$out/coll-raw.txt"
mkdir -p "$exe" "$out"
qflag=()
[ "$quick" = 1 ] && qflag=(-q)
list=$(echo $sizes | tr ' ' ,)

. "$top/bench/benchlib.sh"
# build LABEL MPICC: coll_bench for one MPI
build() { bench_build coll "$1" "$2" "$src/coll_bench.c" "$exe/$1/coll_bench"; }
mpis=()
for m in $want; do
    case $m in
    smheap)
        build smheap "$top/build/install/bin/mpicc" ||
            { echo "coll: smheap is required (maint/setup.sh), or leave it out of MPIS"; exit 1; }
        ;;
    nemesis)
        build nemesis "$top/build/nemesis/install/bin/mpicc" || continue ;;
    openmpi)
        command -v mpirun.openmpi >/dev/null 2>&1 ||
            { echo "coll: openmpi: no mpirun.openmpi, skipped"; continue; }
        build openmpi mpicc.openmpi || continue ;;
    *)
        echo "coll: unknown MPI $m (smheap, nemesis, openmpi)"; exit 1 ;;
    esac
    mpis+=("$m")
done
[ ${#mpis[@]} -gt 0 ] || { echo "coll: no MPI to run"; exit 1; }

# launch MPI N ARGS...: coll_bench of that MPI on N ranks, one per CPU when there are enough
# (benchlib.sh's bench_bind), else unbound (5 minutes at most)
bench_bind
launch() {
    local m=$1 n=$2 bind=() obind=("${bench_ompi_bind[@]}")
    shift 2
    if [ "$n" -le "$cpus" ]; then
        bind=(-bind-to "$bench_hydra_bind")
    else
        obind=(--oversubscribe --bind-to none)
    fi
    case $m in
    smheap)  LD_LIBRARY_PATH=$(bench_ldpath "$top/build/install") timeout 300 \
                 "$top/build/install/bin/mpiexec" -n "$n" "${bind[@]}" \
                 "$exe/smheap/coll_bench" "$@" ;;
    nemesis) LD_LIBRARY_PATH=$(bench_ldpath "$top/build/nemesis/install") timeout 300 \
                 "$top/build/nemesis/install/bin/mpiexec" -n "$n" "${bind[@]}" \
                 "$exe/nemesis/coll_bench" "$@" ;;
    openmpi) timeout 300 mpirun.openmpi -np "$n" "${obind[@]}" --allow-run-as-root \
                 --mca btl self,vader --mca btl_vader_single_copy_mechanism "$vader_copy" \
                 "$exe/openmpi/coll_bench" "$@" ;;
    esac
}

# record LABEL CMD...: one run into the raw file (benchlib.sh)
record() { bench_record coll "$raw" "$@"; }

{
    echo "# bench/coll/run.sh $runs QUICK=$quick, $(date -Is), $(uname -r), $cpus CPUs"
    echo "# machine: $(bench_machine)"
    echo "# mpis: ${mpis[*]}; ranks: $ranks; colls: $colls; sizes: $sizes;" \
        "Open MPI single copy: $vader_copy"
} >"$raw"
for r in $(seq "$runs"); do
    for m in "${mpis[@]}"; do
        for n in $ranks; do
            echo "coll: round $r/$runs: $m, $n ranks" >&2
            for c in $colls; do
                record "round=$r mpi=$m run=$c/$n" launch "$m" "$n" -c "$c" -l "$list" \
                    "${qflag[@]}"
            done
        done
    done
done

{
    echo "bench/coll: ranks $ranks on $cpus CPUs, $runs run(s)$([ "$quick" = 1 ] &&
        echo ", QUICK"), $(date -Is)"
    echo "MPIs: ${mpis[*]} (Open MPI: btl self,vader, single copy $vader_copy, coll as its" \
        "defaults)"
    python3 "$src/report.py" "$raw" "$out" "$cpus"
} | tee "$out/coll.txt"

bench_plot coll "$out"

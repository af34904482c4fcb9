#!/usr/bin/env bash
# Jobs across (simulated) nodes: ch3:smheap against ch3:nemesis (its tcp module between nodes)
# on the same layouts, each node a Hydra proxy of maint/nodes/mpiexec-nodes with its own
# /dev/shm, so that between nodes both MPIs talk over loopback TCP:
#   cross    2 nodes x 1 rank:  p2p latency 8 B - 64 KiB and bandwidth 64 KiB - 16 MiB
#   onnode   2 ranks on one node and 1 on the other: p2p bandwidth between the two on one
#            node (the third rank stands by, sleeping), a pair inside a job that spans nodes;
#            here both nodes may use every CPU, so that the pair has a CPU each
# (mpiexec-nodes otherwise gives each node CPUs of its own: one each on a 2-CPU machine).
#   coll     2 nodes x 2 ranks: Bcast and Allreduce, 8 B, 64 KiB and 1 MiB per rank
# with bench/p2p/p2p_bench.c and bench/coll/coll_bench.c.  Every round runs every case with
# each MPI back to back (order rotating), rounds interleaved so that drift hits all alike;
# prints medians and ratios, and plots them (gnuplot).
#   bench/nodes/run.sh [RUNS]     (default 5; smheap from maint/setup.sh, nemesis from
#                                  maint/setup.sh --nemesis)
#   QUICK=1 bench/nodes/run.sh 1  a smoke test: fewer iterations
#   MPIS="smheap-ofi smheap nemesis debian" REF=smheap-ofi NAME=fabric bench/nodes/run.sh
#                                  the libfabric path (issue 46) against the others, into
#                                  fabric.txt, fabric.png
#   CASES="cross-bw" bench/nodes/run.sh 15   only these cases (of cross-lat cross-bw
#                                  onnode-bw coll-bcast coll-allreduce), e.g. many rounds
#                                  of one where the host's spells make 5 too few
# Four ranks on a 2-CPU machine are more ranks than cores: the coll case then measures how
# each MPI waits as much as how it moves data (the report says so).
# Output in build/results/bench/: nodes.txt, nodes-raw.txt, nodes.png (nodes.gp, nodes-*.dat).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-5}
quick=${QUICK:-0}
cases=${CASES:-cross-lat cross-bw onnode-bw coll-bcast coll-allreduce}
exe="$top/build/bench/nodes"
out="$top/build/results/bench"
raw="$out/${NAME:-nodes}-raw.txt"
mkdir -p "$exe" "$out"
qflag=()
[ "$quick" = 1 ] && qflag=(-q)

. "$top/bench/benchlib.sh"
# The MPIs (MPIS): smheap (its default between nodes: libfabric only with a real NIC's
# provider, else TCP sockets), smheap-ofi (the same install over libfabric with
# FABRIC_PROVIDER, default tcp), nemesis (its tcp module), debian (Debian's MPICH 4.0.2,
# ch4:ucx, with its own mpiexec; UCX over TCP only: with its shared-memory transports it
# reaches across simulated nodes, which share one kernel).  REF: the one the
# speedups are of (default smheap).
declare -A prefix=([smheap]="$top/build/install" [smheap-ofi]="$top/build/install"
                   [nemesis]="$top/build/nemesis/install" [debian]=/usr)
declare -A cc=([debian]=mpicc.mpich) runner=([debian]=mpiexec.mpich)
declare -A menv=([smheap]="MPIR_CVAR_CH3_SMHEAP_NET=sock"
                 [smheap-ofi]="MPIR_CVAR_CH3_SMHEAP_NET=ofi FI_PROVIDER=${FABRIC_PROVIDER:-tcp}"
                 [debian]="UCX_TLS=tcp,self")
ref=${REF:-smheap}
name=${NAME:-nodes}
mpis=()
for m in ${MPIS:-smheap nemesis}; do
    c=${cc[$m]:-${prefix[$m]}/bin/mpicc}
    bench_build nodes "$m" "$c" "$top/bench/p2p/p2p_bench.c" "$exe/$m/p2p_bench" &&
        bench_build nodes "$m" "$c" "$top/bench/coll/coll_bench.c" "$exe/$m/coll_bench" &&
        mpis+=("$m")
done
[[ " ${mpis[*]} " == *" $ref "* ]] || { echo "nodes: $ref did not build"; exit 1; }
[ ${#mpis[@]} -gt 1 ] || echo "nodes: $ref alone"

# launch MPI HOSTS N PROGRAM ARGS...: one job on the simulated nodes (5 minutes at most)
launch() {
    local m=$1 hosts=$2 n=$3 prog=$4 run
    shift 4
    run=${runner[$m]:-${prefix[$m]}/bin/mpiexec}
    env ${menv[$m]:-} MPIEXEC="$run" timeout 300 "$top/maint/nodes/mpiexec-nodes" \
        -hosts "$hosts" -n "$n" "$exe/$m/$prog" "$@"
}

# record LABEL CMD...: one run into the raw file (benchlib.sh)
record() { bench_record nodes "$raw" "$@"; }

{
    echo "# bench/nodes/run.sh $runs QUICK=$quick CASES=\"$cases\", $(date -Is), $(uname -r)"
    echo "# machine: $(bench_machine)"
    echo "# mpis: ${mpis[*]}"
} >"$raw"
a=127.0.0.2 b=127.0.0.3
all=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
for r in $(seq "$runs"); do
    echo "nodes: round $r/$runs" >&2
    n=${#mpis[@]}
    order=()
    for i in $(seq 0 $((n - 1))); do order+=("${mpis[$(((i + r) % n))]}"); done
    for c in $cases; do
        for m in "${order[@]}"; do
            label="round=$r mpi=$m case=$c"
            case $c in
            cross-lat) record "$label" launch "$m" "$a:1,$b:1" 2 p2p_bench -t lat -s 8 \
                           -S 65536 "${qflag[@]}" ;;
            cross-bw)  record "$label" launch "$m" "$a:1,$b:1" 2 p2p_bench -t bw \
                           -S 16777216 "${qflag[@]}" ;;
            onnode-bw) SMHEAP_NODE_CPUS="$a=$all $b=$all" record "$label" launch "$m" \
                           "$a:2,$b:1" 3 p2p_bench -t bw -S 4194304 "${qflag[@]}" ;;
            coll-*)    record "$label" launch "$m" "$a:2,$b:2" 4 coll_bench -c "${c#coll-}" \
                           -l 8,65536,1048576 "${qflag[@]}" ;;
            *) echo "nodes: unknown case '$c' in CASES" >&2; exit 1 ;;
            esac
        done
    done
done

{
    echo "bench/nodes: simulated nodes on one machine, $runs run(s)$([ "$quick" = 1 ] &&
        echo ", QUICK"), $(date -Is)"
    echo "MPIs: ${mpis[*]} (between nodes: smheap ch3:sock's socket code, smheap-ofi" \
        "libfabric ${FABRIC_PROVIDER:-tcp}, nemesis its tcp module, debian UCX's tcp; all over" \
        "loopback TCP)"
    REF=$ref NAME=$name python3 "$top/bench/nodes/report.py" "$raw" "$out"
} | tee "$out/$name.txt"

bench_plot "$name" "$out"

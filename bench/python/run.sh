#!/usr/bin/env bash
# mpi4py ping-pong bandwidth with numpy arrays of 64 KiB-64 MiB between two ranks
# (pingpong.py): ch3:smheap against ch3:nemesis, each with mpi4py built from its source
# against that install, and Debian's python3-mpi4py (Open MPI).  Rounds interleaved, the
# order of the MPIs rotating from round to round; medians and the ratios of smheap to the
# others.  smheap's runs also print the paths its messages took (MPI_T, through pvars.c).
#   bench/python/run.sh [RUNS]     (default 5)
#   QUICK=1 bench/python/run.sh 1  an eighth of the round trips
# Needs maint/setup.sh (and --nemesis), maint/deps.sh --python (mpi4py's source, Cython,
# numpy, python3-mpi4py) and maint/mpi4py.sh, which builds mpi4py against both installs.
# Output: build/results/bench/python.txt (tables), python-raw.txt (every measurement).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-5}
quick=${QUICK:-0}
out="$top/build/results/bench"
raw="$out/python-raw.txt"
py=/usr/bin/python3           # Debian's, with numpy
mkdir -p "$out"
. "$top/bench/benchlib.sh"
qflag=()
[ "$quick" = 1 ] && qflag=(--quick)

mpi4py_lib() { echo "$top/build/mpi4py/build-$1/lib.linux-x86_64-cpython-311"; }
mpis=()
for m in smheap nemesis; do
    if [ -e "$(mpi4py_lib $m)/mpi4py/MPI.cpython-311-x86_64-linux-gnu.so" ]; then mpis+=("$m")
    else echo "python: $m: no mpi4py built against it (maint/mpi4py.sh), skipped"; fi
done
[ "${mpis[0]:-}" = smheap ] || { echo "python: smheap's mpi4py is required"; exit 1; }
if "$py" -c 'import mpi4py' 2>/dev/null && command -v mpirun.openmpi >/dev/null; then
    mpis+=(openmpi)
else
    echo "python: openmpi: no python3-mpi4py, skipped"
fi
"$top/build/install/bin/mpicc" -shared -fPIC -I"$top/test/mpi/include" \
    -o "$out/libsmheap_pvars.so" "$top/bench/python/pvars.c"

# launch MPI: pingpong.py on 2 ranks, one per core (10 minutes at most)
launch() {
    local prog="$top/bench/python/pingpong.py"
    case $1 in
    smheap)  PYTHONPATH=$(mpi4py_lib smheap) timeout 600 "$top/build/install/bin/mpiexec" \
                 -n 2 -bind-to core "$py" "$prog" "${qflag[@]}" --pvars "$out/libsmheap_pvars.so" ;;
    nemesis) PYTHONPATH=$(mpi4py_lib nemesis) timeout 600 \
                 "$top/build/nemesis/install/bin/mpiexec" -n 2 -bind-to core "$py" "$prog" \
                 "${qflag[@]}" ;;
    openmpi) timeout 600 mpirun.openmpi -np 2 --bind-to core --allow-run-as-root \
                 --mca btl self,vader "$py" "$prog" "${qflag[@]}" ;;
    esac
}

{
    echo "# bench/python/run.sh $runs QUICK=$quick, $(date -Is), $(uname -r)"
    echo "# mpis: ${mpis[*]}"
    echo "# machine: $(bench_machine)"
} >"$raw"
for r in $(seq "$runs"); do
    echo "python: round $r/$runs" >&2
    n=${#mpis[@]}
    for i in $(seq 0 $((n - 1))); do
        m=${mpis[$(((i + r) % n))]}
        bench_record python "$raw" "round=$r mpi=$m" launch "$m"
    done
done

{
    echo "bench/python: mpi4py ping-pong, numpy arrays, 2 ranks on 2 cores, $runs round(s)$(
        [ "$quick" = 1 ] && echo ", QUICK"), $(date -Is)"
    "$py" "$top/bench/python/report.py" "$raw"
} | tee "$out/python.txt"

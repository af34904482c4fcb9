# p2p_launch MPI ARGS...: p2p_bench of that MPI (built in $exe/<MPI>/) on 2 ranks, one per
# core (benchlib.sh's bench_bind), 5 minutes at most; sourced by bench/p2p's run scripts,
# which set top and exe and source benchlib.sh.
#   smheap, nemesis: the builds of maint/setup.sh; openmpi: Debian's, single copy
#   $vader_copy (default cma); before: smheap's binary on the libraries in $before
bench_bind
p2p_launch() {
    local m=$1
    shift
    case $m in
    smheap)  LD_LIBRARY_PATH=$(bench_ldpath "$top/build/install") timeout 300 \
                 "$top/build/install/bin/mpiexec" -n 2 -bind-to "$bench_hydra_bind" \
                 "$exe/smheap/p2p_bench" "$@" ;;
    before)  timeout 300 "$top/build/install/bin/mpiexec" -n 2 -bind-to "$bench_hydra_bind" \
                 -genv LD_LIBRARY_PATH "$before" "$exe/smheap/p2p_bench" "$@" ;;
    nemesis) LD_LIBRARY_PATH=$(bench_ldpath "$top/build/nemesis/install") timeout 300 \
                 "$top/build/nemesis/install/bin/mpiexec" -n 2 -bind-to "$bench_hydra_bind" \
                 "$exe/nemesis/p2p_bench" "$@" ;;
    openmpi) timeout 300 mpirun.openmpi -np 2 "${bench_ompi_bind[@]}" --allow-run-as-root \
                 --mca btl self,vader --mca btl_vader_single_copy_mechanism \
                 "${vader_copy:-cma}" "$exe/openmpi/p2p_bench" "$@" ;;
    esac
}

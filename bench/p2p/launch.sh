# p2p_launch MPI ARGS...: p2p_bench of that MPI (built in $exe/<MPI>/) on 2 ranks, one per
# core, 5 minutes at most; sourced by bench/p2p's run scripts, which set top and exe.
#   smheap, nemesis: the builds of maint/setup.sh; openmpi: Debian's, single copy
#   $vader_copy (default cma); before: smheap's binary on the libraries in $before
p2p_launch() {
    local m=$1
    shift
    case $m in
    smheap)  timeout 300 "$top/build/install/bin/mpiexec" -n 2 -bind-to core \
                 "$exe/smheap/p2p_bench" "$@" ;;
    before)  timeout 300 "$top/build/install/bin/mpiexec" -n 2 -bind-to core \
                 -genv LD_LIBRARY_PATH "$before" "$exe/smheap/p2p_bench" "$@" ;;
    nemesis) timeout 300 "$top/build/nemesis/install/bin/mpiexec" -n 2 -bind-to core \
                 "$exe/nemesis/p2p_bench" "$@" ;;
    openmpi) timeout 300 mpirun.openmpi -np 2 --bind-to core --allow-run-as-root \
                 --mca btl self,vader --mca btl_vader_single_copy_mechanism \
                 "${vader_copy:-cma}" "$exe/openmpi/p2p_bench" "$@" ;;
    esac
}

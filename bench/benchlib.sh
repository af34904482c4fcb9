# Shell helpers shared by the benchmarks' run scripts (bench/p2p, bench/coll, bench/nodes,
# bench/part; bench/heap and bench/io for bench_machine); sourced.

# bench_machine: the processor, its CPU count and its caches (size of one instance of each),
# on one line; every table carries it, since which choices win depends on them.
bench_machine() {
    local model caches
    model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
    caches=$(lscpu -C 2>/dev/null |
        awk 'NR > 1 && $1 != "L1i" { printf "%s%s %s", sep, $1, $2; sep = ", " }')
    echo "${model:-unknown processor}, $(nproc) CPUs${caches:+, caches $caches}"
}

# bench_build TAG LABEL MPICC SRC EXE: compile SRC with one MPI's MPICC into EXE; one line
# and a failure if that MPI is not there or the compile fails.  With BENCH_PREBUILT=1 (a
# bundle of bench/portable, run where there is no compiler) EXE was built with the bundle.
bench_build() {
    local tag=$1 label=$2 cc=$3 src=$4 exe=$5
    if [ "${BENCH_PREBUILT:-0}" = 1 ]; then
        [ -x "$exe" ] && return 0
        echo "$tag: $label: not in this bundle ($exe), skipped"
        return 1
    fi
    if ! command -v "$cc" >/dev/null 2>&1; then
        echo "$tag: $label: no $cc, skipped"
        return 1
    fi
    mkdir -p "$(dirname "$exe")"
    "$cc" -O2 -std=c99 -o "$exe" "$src" || { echo "$tag: $label: $cc failed, skipped"; return 1; }
}

# bench_record TAG RAW LABEL CMD...: run CMD once, its output lines prefixed with LABEL into
# the file RAW (its stderr as comments); a failed run is tried again once after a pause (the
# install may be being replaced), then reported on one line and left out.
bench_record() {
    local tag=$1 raw=$2 label=$3 tmp="$2.run" rc why
    shift 3
    for attempt in 1 2; do
        rc=0
        "$@" >"$tmp" 2>"$tmp.err" || rc=$?
        if [ "$rc" = 0 ]; then
            sed "s|^|$label |" "$tmp" >>"$raw"
            sed "s|^|# stderr $label: |" "$tmp.err" >>"$raw"
            rm -f "$tmp" "$tmp.err"
            return 0
        fi
        [ "$attempt" = 1 ] && sleep 10
    done
    why=$(grep -v '^[= ]*$' "$tmp.err" | tail -n 1)
    [ "$rc" = 124 ] && why="timed out"
    echo "$tag: $label failed twice (exit status $rc), left out: ${why:-see $raw}" >&2
    sed "s|^|# failed $label: |" "$tmp" "$tmp.err" >>"$raw"
    rm -f "$tmp" "$tmp.err"
}

# bench_plot NAME OUT: draw OUT/NAME.gp with gnuplot, if it is installed, and name the plots
# it drew (OUT/NAME*.png; those of earlier runs are removed first).
bench_plot() {
    local name=$1 out=$2
    if ! command -v gnuplot >/dev/null 2>&1; then
        echo "$name: no gnuplot (apt-get install gnuplot-nox), no plots"
        return 0
    fi
    rm -f "$out/$name"*.png
    (cd "$out" && gnuplot "$name.gp")
    echo "plots:" "$out/$name"*.png
}

# bench_bind: what each rank is bound to when there is a CPU per rank, into bench_hydra_bind
# (mpiexec's -bind-to) and bench_ompi_bind (Open MPI's options): a core, or a hardware thread
# where cores have several (nproc then counts threads, and a rank per core would leave half
# the ranks sharing).
bench_bind() {
    local per_core
    per_core=$(lscpu 2>/dev/null | sed -n 's/^Thread(s) per core: *//p' | head -n 1)
    if [ "${per_core:-1}" -gt 1 ]; then
        bench_hydra_bind=hwthread
        bench_ompi_bind=(--bind-to hwthread --use-hwthread-cpus)
    else
        bench_hydra_bind=core
        bench_ompi_bind=(--bind-to core)
    fi
}

# bench_ldpath PREFIX: LD_LIBRARY_PATH for the programs of the MPICH installed at PREFIX: its
# lib first (a bundle moved to another machine no longer has the install its programs were
# linked against), then what the caller had (a bundle's copies of system libraries).
bench_ldpath() {
    echo "$1/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

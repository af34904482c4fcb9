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
# and a failure if that MPI is not there or the compile fails.
bench_build() {
    local tag=$1 label=$2 cc=$3 src=$4 exe=$5
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

# Shell helpers shared by the benchmarks' run scripts (bench/p2p, bench/coll); sourced.

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

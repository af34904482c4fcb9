#!/usr/bin/env bash
# Run MPICH's own test/mpi suite (from the same MPICH source), or with --project the
# project's tests in test/mpi, through MPICH's runtests against an installed MPICH.
#
#   maint/run-suite.sh [--install DIR] [--out DIR] [--dirs "attr coll ..."|ci|all]
#                        [--expected FILE] [--project] [--nodes N[:PPN]] [--valgrind]
#                        [--variants]
#
# --install  the MPICH to test (default build/install, i.e. ch3:smheap)
# --dirs     which testlist directories: "ci" (the CI subset, default), "all" (every
#            directory of test/mpi/testlist), or an explicit list
# --expected a file of tests expected to fail ("dir/test nprocs  reason"); such failures
#            are reported but not counted as failures
# --nodes    run every test on N simulated nodes (maint/nodes/mpiexec-nodes), PPN ranks
#            per node in blocks (default 2; 1 places ranks round-robin)
# --valgrind (with --project) run the tests of 2 ranks only, each rank under valgrind's
#            memcheck with the shared heap kept (its errors fail the test)
# --variants also MPICH's datatype and CVAR variant lists (testlist.dtp, testlist.cvar:
#            about 1,160 more runs)
# Writes DIR/summary.tap, DIR/summary.txt (one line per test) and prints
# "N passed, N failed"; exits non-zero if any unexpected failure.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/maint/config.sh"

prefix="$BUILD_DIR/install"
out=""
dirs=ci
expected=""
project=no
nodes=""
valgrind=no
testlists=testlist
while [ $# -gt 0 ]; do
    case "$1" in
        --install) prefix=$(cd "$2" && pwd); shift ;;
        --out) out=$2; shift ;;
        --dirs) dirs=$2; shift ;;
        --expected) expected=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift ;;
        --project) project=yes ;;
        --nodes) nodes=$2; shift ;;
        --valgrind) valgrind=yes ;;
        --variants) testlists=testlist,testlist.dtp,testlist.cvar ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        *) echo "run-suite.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
    shift
done

src="$BUILD_DIR/mpich-$MPICH_VERSION"
[ "$valgrind" = no ] || [ "$project" = yes ] || { echo "run-suite.sh: --valgrind needs --project" >&2; exit 2; }
[ -x "$prefix/bin/mpiexec" ] || { echo "run-suite.sh: no MPICH in $prefix (run maint/setup.sh)" >&2; exit 2; }
[ -d "$src/test/mpi" ] || { echo "run-suite.sh: no MPICH source in $src (run maint/setup.sh)" >&2; exit 2; }

device=$("$prefix/bin/mpichversion" | sed -n 's/^MPICH Device:[[:space:]]*//p' | tr ':' '-')
obj="$BUILD_DIR/tests/mpich-$device"
suite=mpich
[ "$project" = yes ] && suite=project
layout=""
[ -n "$nodes" ] && layout="-nodes-${nodes/:/x}"
[ -n "${MPIR_CVAR_CH3_SMHEAP_NET:-}" ] && layout="$layout-net-$MPIR_CVAR_CH3_SMHEAP_NET"
[ "$valgrind" = yes ] && layout="$layout-valgrind"
out=${out:-$BUILD_DIR/results/$suite-$device$layout}
mkdir -p "$obj" "$out"
out=$(cd "$out" && pwd)

# The launcher runtests calls: Hydra's mpiexec, or one that spreads the ranks over
# simulated nodes (loopback aliases 127.0.0.2, 127.0.0.3, ...).
mpiexec="$prefix/bin/mpiexec"
if [ -n "$nodes" ]; then
    n_nodes=${nodes%%:*}
    ppn=2
    [ "$nodes" != "$n_nodes" ] && ppn=${nodes#*:}
    hosts=$(for i in $(seq 2 $((n_nodes + 1))); do printf '127.0.0.%d:%d,' "$i" "$ppn"; done)
    mpiexec="$out/mpiexec"
    printf '#!/bin/sh\nMPIEXEC=%s exec %s -hosts %s "$@"\n' "$prefix/bin/mpiexec" \
        "$top/maint/nodes/mpiexec-nodes" "${hosts%,}" > "$mpiexec"
    chmod +x "$mpiexec"
fi

# Fortran (f77, f90, f08) and C++ directories as the MPICH under test has the bindings.
test_config=(--with-mpi="$prefix" --enable-threads=multiple)
if [ -x "$prefix/bin/mpifort" ]; then
    test_config+=(--enable-fortran=all)
else
    test_config+=(--disable-fortran)
fi
[ -x "$prefix/bin/mpicxx" ] || test_config+=(--disable-cxx)
# Configured again for other options or a new MPICH source (maint/setup.sh unpacks it again
# when the patches change; make would then rerun configure itself, without the F08 switch).
configured="${test_config[*]} $(stat -c %Y "$src/test/mpi/configure")"
if [ ! -f "$obj/Makefile" ] || [ "$(cat "$obj/.configured" 2>/dev/null)" != "$configured" ]
then
    echo "== configuring MPICH's test/mpi against $prefix"
    rm -rf "$obj" && mkdir -p "$obj"
    (cd "$obj" && "$src/test/mpi/configure" "${test_config[@]}" > configure.log 2>&1) ||
        { tail -20 "$obj/configure.log"; exit 2; }
    # MPICH's test configure turns its Fortran 2008 tests on only when MPICH's own configure
    # runs it (FROM_MPICH; its FIXME: "if $FROM_MPICH is no, we should test build an MPI F08
    # program"), though it has checked the compiler's Fortran 2008 support.  Turn them on
    # when it found that support and the MPICH under test has the mpi_f08 module.
    if [ -f "$prefix/include/mpi_f08.mod" ] &&
       grep -q "checking for Fortran 2008 support... yes" "$obj/configure.log"; then
        (cd "$obj" && sed -i -e 's/^S\["HAS_F08_TRUE"\]="#"$/S["HAS_F08_TRUE"]=""/' \
            -e 's/^S\["HAS_F08_FALSE"\]=""$/S["HAS_F08_FALSE"]="#"/' \
            -e 's/^S\["f08dir"\]="#"$/S["f08dir"]="f08"/' config.status &&
            ./config.status > config.status.log 2>&1) || { echo "cannot turn f08 on" >&2; exit 2; }
    fi
    echo "$configured" > "$obj/.configured"
fi

runtests="$obj/runtests"
testsrc="$src/test/mpi"
if [ "$project" = yes ]; then
    # The project's tests run in a scratch copy, built with the MPICH under test.
    testsrc="$top/test/mpi"
    rundir="$BUILD_DIR/tests/project-$device$layout"
    rm -rf "$rundir" && mkdir -p "$rundir" && cp -r "$testsrc"/. "$rundir"/
    export MPICC="$prefix/bin/mpicc" MPIFORT="$prefix/bin/mpifort" MPICXX="$prefix/bin/mpicxx"
    [ "$dirs" = ci ] && dirs=all
else
    rundir="$obj"
    # Programs kept from an earlier run are built again for a new mpi.h (MPICH configured
    # again).
    [ "$prefix/include/mpi.h" -nt "$obj/.programs-built" ] && (cd "$obj" && make -s clean > /dev/null 2>&1)
    # The helper library every MPICH test links with.
    (cd "$obj/util" && make -s > /dev/null 2>&1) || { echo "cannot build test/mpi/util" >&2; exit 2; }
fi
case "$dirs" in
    ci) dirs="attr coll comm datatype errhan group info init pt2pt rma topo spawn part threads/part
              f77/pt2pt f77/io f90/pt2pt f08/pt2pt cxx/pt2pt cxx/coll" ;;
    all) dirs=$(grep -v '^#' "$rundir/testlist" | grep -v '^ *$' | tr '\n' ' ') ;;
esac

if [ "$valgrind" = yes ]; then
    # Only the tests of 2 ranks (a copy of the testlists keeps their lines); memcheck keeps
    # the shared heap (test.sh's valgrind checks say why) and an error fails the rank.
    for d in $dirs; do
        [ -f "$rundir/$d/testlist" ] || continue
        awk '/^[^#]/ && $2 == 2' "$rundir/$d/testlist" > "$rundir/$d/testlist.2" &&
            mv "$rundir/$d/testlist.2" "$rundir/$d/testlist"
    done
    export HWLOC_COMPONENTS=-x86        # hwloc's CPUID probe cannot run under valgrind
    export MPITEST_PROGRAM_WRAPPER="valgrind -q --error-exitcode=1 --soname-synonyms=somalloc=nouserintercepts --suppressions=$top/test/valgrind/mpich.supp"
    export MPITEST_TIMEOUT=${MPITEST_TIMEOUT:-600}
fi

echo "== $suite test/mpi ($dirs) against $prefix${nodes:+ on $nodes simulated nodes}${MPIR_CVAR_CH3_SMHEAP_NET:+ (MPIR_CVAR_CH3_SMHEAP_NET=$MPIR_CVAR_CH3_SMHEAP_NET)}${MPITEST_PROGRAM_WRAPPER:+ under $MPITEST_PROGRAM_WRAPPER}"
start=$(date +%s)

# The programs are built before the run, as many at once as there are CPUs, and kept
# (MPITEST_CLEANUP=0): runtests otherwise compiles each alone just before its run and
# removes it after, so every run of the suite built them all again, one at a time (7 of the
# 16 minutes of MPICH's CI subset here).
for d in $dirs; do
    programs=$(for list in ${testlists//,/ }; do
                   [ -f "$rundir/$d/$list" ] && awk '/^[^#]/ && NF { print $1 }' "$rundir/$d/$list"
               done | sort -u | while read -r p; do [ -d "$rundir/$d/$p" ] || echo "$p"; done)
    # A program that does not build is reported by runtests as the test's failure.
    [ -z "$programs" ] || (cd "$rundir/$d" && make -k -j"$(nproc)" $programs > /dev/null 2>&1)
done
[ "$project" = yes ] || touch "$obj/.programs-built"
export MPITEST_CLEANUP=0

(cd "$rundir" && MPITEST_TIMEOUT=${MPITEST_TIMEOUT:-180} "$runtests" -srcdir="$testsrc" \
    -tests="$testlists" -testdirs="$(echo $dirs | tr ' ' ',')" -mpiexec="$mpiexec" \
    -tapfile="$out/summary.tap" -xmlfile="$out/summary.xml" > "$out/runtests.log" 2>&1)
end=$(date +%s)

# One line per test: "ok|not ok - ./dir/test nprocs seconds", as in the nemesis baseline.
awk '/^(ok|not ok) / { line = $0; sub(/ *#.*/, "", line); t = ""
                        if (match($0, /time=[0-9.]+/)) t = sprintf(" %ds", substr($0, RSTART + 5) + 0.5)
                        print line t }' "$out/summary.tap" > "$out/summary.txt"

# The first lines of the k-th failed test's output, as runtests kept them in the TAP file.
failure_output() {
    awk -v k="$1" '/^not ok/ { n++; next } /^ok/ { if (n == k) exit }
                   n == k && /^## / && shown++ < 12 { sub(/^## /, "    "); print }' "$out/summary.tap"
}

passed=0; failed=0; xfailed=0; k=0
while read -r line; do
    case "$line" in
        "ok "*) passed=$((passed + 1)) ;;
        "not ok"*)
            k=$((k + 1))
            t=$(echo "$line" | sed -E 's/^not ok +[0-9]* *- *\.\/([^ ]+) ([0-9]+).*/\1 \2/')
            if [ -n "$expected" ] && grep -qE "^${t}([[:space:]]|$)" "$expected"; then
                xfailed=$((xfailed + 1)); echo "expected failure: $t"
            else
                failed=$((failed + 1)); echo "FAIL: $t"; failure_output "$k"
            fi ;;
    esac
done < "$out/summary.txt"
echo "$suite test/mpi on $device${nodes:+ ($nodes nodes${MPIR_CVAR_CH3_SMHEAP_NET:+, net $MPIR_CVAR_CH3_SMHEAP_NET})}: $passed passed, $failed failed, $xfailed expected failures, $(( (end - start) / 60 )) min" | tee "$out/totals.txt"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

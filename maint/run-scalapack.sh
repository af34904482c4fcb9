#!/usr/bin/env bash
# Run Debian's ScaLAPACK testers (package scalapack-mpi-test: ScaLAPACK 2.2.1's testing
# programs, PBLAS's and BLACS's, built by Debian against libmpich12) on an installed MPICH,
# as programs built with Debian's MPICH run: through its libmpich.so.12.
#
#   maint/run-scalapack.sh [--install DIR] [--out DIR] [--nodes N[:PPN]] [--limit S]
#                          [--only "xsllt xslu ..."]
#
# --install  the MPICH to test (default build/install, i.e. ch3:smheap)
# --nodes    run on N simulated nodes (maint/nodes/mpiexec-nodes), PPN ranks per node
# --limit    seconds a tester may take before it counts as hung (default 300)
# --only     these testers only (names as in the package: xsllt, PBLAS/spb1tst, ...)
#
# Every tester runs on 4 ranks, as Debian's CTest file runs them, with
# test/scalapack/lacon_est_fix.c preloaded: ScaLAPACK 2.2.1's P?LACON decides on its
# caller's uninitialised EST, so without it the testers hang or fail by what earlier calls
# left on the stack, on any MPI (that file and test/scalapack/lacon_est.c say how).  The
# first two checks show that bug and the fix on this MPICH: lacon_est reports the columns'
# divergence with Debian's library alone, and none with the fix.
# xssyevr and xdsyevr run with test/scalapack/pdsyevr_guard.c preloaded too: their own
# uninitialised VL and VU make them report checks failed (syevr_false_alarms, below).
# The x?sep testers run with test/scalapack/blacs_repeatable.c preloaded as well: BLACS adds
# the parts of a '1-tree' sum in the order they arrive unless told to repeat, and xdsep's
# orthogonality check passes or fails with that order (that file says how).
# A tester passes if it exits by itself within the limit, prints its closing line, and
# reports no failed check and no illegal argument; on ch3:smheap, also if no rank says the
# shared heap is off (unless MPIR_CVAR_CH3_SMHEAP_ENABLE=0).  Last, xdlu runs again on
# matrices big enough for messages of the single-copy sizes (test/scalapack/LU-heap.dat),
# with test/scalapack/path_counters.c preloaded to print the channel's MPI_T counters:
# on ch3:smheap with the heap on, some messages must have moved with a single copy.  Prints one line per tester and
# "N passed, N failed"; the output of each is kept in DIR (default build/results/scalapack).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/maint/config.sh"

prefix="$BUILD_DIR/install"
out=""
nodes=""
limit=300
only=""
while [ $# -gt 0 ]; do
    case "$1" in
        --install) prefix=$(cd "$2" && pwd); shift ;;
        --out) out=$2; shift ;;
        --nodes) nodes=$2; shift ;;
        --limit) limit=$2; shift ;;
        --only) only=$2; shift ;;
        -h|--help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "run-scalapack.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
    shift
done

testers=/usr/lib/x86_64-linux-gnu/scalapack/mpich-tests
scalapack_lib=/usr/lib/x86_64-linux-gnu/libscalapack-mpich.so.2.2
[ -x "$prefix/bin/mpiexec" ] || { echo "run-scalapack.sh: no MPICH in $prefix (run maint/setup.sh)" >&2; exit 2; }
[ -d "$testers" ] && [ -f "$scalapack_lib" ] ||
    { echo "run-scalapack.sh: no $testers (Debian's scalapack-mpi-test: maint/deps.sh installs it)" >&2; exit 2; }
device=$("$prefix/bin/mpichversion" | sed -n 's/^MPICH Device:[[:space:]]*//p' | tr ':' '-')
[ -n "$out" ] || out="$BUILD_DIR/results/scalapack-$device${nodes:+-nodes-${nodes/:/x}}"
mkdir -p "$out"
out=$(cd "$out" && pwd)

# The testers load libmpich.so.12 (Debian's name): this install's comes first.  ch3:smheap
# installs that name; another device (the reference ch3:nemesis) gets links here.
work="$BUILD_DIR/tests/scalapack-$device"
mkdir -p "$work/lib"
for pair in mpich:mpi mpichfort:mpifort mpichcxx:mpicxx; do
    [ -e "$prefix/lib/lib${pair%%:*}.so.12" ] || [ ! -e "$prefix/lib/lib${pair#*:}.so.12" ] ||
        ln -sf "$prefix/lib/lib${pair#*:}.so.12" "$work/lib/lib${pair%%:*}.so.12"
done
export LD_LIBRARY_PATH="$work/lib:$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
launch=("$prefix/bin/mpiexec")
if [ -n "$nodes" ]; then
    n=${nodes%%:*}; ppn=2
    [[ "$nodes" == *:* ]] && ppn=${nodes#*:}
    hosts=""
    for i in $(seq 2 $((n + 1))); do hosts="${hosts:+$hosts,}127.0.0.$i:$ppn"; done
    export MPIEXEC="$prefix/bin/mpiexec"
    launch=("$top/maint/nodes/mpiexec-nodes" -hosts "$hosts")
fi

passed=0
failed=0
report() {  # name ok|"not ok" [why]
    if [ "$2" = ok ]; then
        passed=$((passed + 1)); echo "ok - scalapack/$1"
    else
        failed=$((failed + 1)); echo "not ok - scalapack/$1: $3 (see $out/${1//\//_}.out)"
    fi
}

# The fix and the reproducer, built against this install and Debian's library.
fix="$work/lacon_est_fix.so"
gcc -O2 -fPIC -shared -o "$fix" "$top/test/scalapack/lacon_est_fix.c" || exit 1
guard="$work/pdsyevr_guard.so"
gcc -O2 -fPIC -shared -o "$guard" "$top/test/scalapack/pdsyevr_guard.c" -lm || exit 1
repeatable="$work/blacs_repeatable.so"
gcc -O2 -fPIC -shared -o "$repeatable" "$top/test/scalapack/blacs_repeatable.c" || exit 1
"$prefix/bin/mpicc" -O2 -o "$work/lacon_est" "$top/test/scalapack/lacon_est.c" \
    "$scalapack_lib" || exit 1
"$prefix/bin/mpicc" -O2 -fPIC -shared -o "$work/path_counters.so" \
    "$top/test/scalapack/path_counters.c" || exit 1
heap_expected=no
case "$device" in
    ch3-smheap) [ "${MPIR_CVAR_CH3_SMHEAP_ENABLE:-1}" != 0 ] && heap_expected=yes ;;
esac
heap_off_line='ch3:smheap: the shared heap is off'

lacon_est() {   # name expect-divergence [mpiexec options]
    local name=$1 diverge=$2 rc
    shift 2
    timeout "$limit" "${launch[@]}" -n 2 "$@" "$work/lacon_est" > "$out/$name.out" 2>&1
    rc=$?
    if [ "$diverge" = yes ]; then
        grep -q '^p[sd]lacon_: the two columns went different ways' "$out/$name.out" &&
            report "$name" ok || report "$name" "not ok" "no divergence (exit $rc)"
    else
        [ $rc = 0 ] && grep -q '^ No Errors' "$out/$name.out" &&
            report "$name" ok || report "$name" "not ok" "exit $rc"
    fi
}
lacon_est lacon_est-unfixed yes
lacon_est lacon_est-fixed no -genv LD_PRELOAD "$fix"

# name: the tester's path under $testers.  BLACS's two testers run from BLACS/, where
# their input is (the copies beside the others are the same programs).
if [ -n "$only" ]; then
    list=$only
else
    list=$(cd "$testers" && { ls x* | grep -v 'btest$'; ls BLACS/x*btest PBLAS/*tst \
        PBLAS/TIMING/*tim; } | sort)
fi

failed_checks() {   # the tester's output: why it failed, or nothing
    local f=$1
    [ "$heap_expected" = yes ] && grep -q "$heap_off_line" "$f" &&
        { echo "the shared heap is off"; return; }
    grep -qi 'end of tests\|BLACS_ABORT' "$f" || grep -Eq ' PASSED *$' "$f" ||
        { echo "no closing line"; return; }
    grep -q 'had an illegal value' "$f" && { echo "an illegal argument"; return; }
    # "N tests completed and failed", a check or result marked FAILED (not a table's
    # header, nor "0 FAILED"), a PBLAS summary row with failed tests
    grep -Eq '(^|[^0-9])[1-9][0-9]* tests? completed and failed' "$f" &&
        { echo "failed checks"; return; }
    grep -Ev 'PASSED.*FAILED|(^|[^0-9])0 FAILED' "$f" | grep -q '\bFAILED\b' &&
        { echo "a check FAILED"; return; }
    awk '/^ *\| *P[SDCZ][A-Z0-9_]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+/ && $5 != 0 { bad = 1 }
         END { exit !bad }' "$f" && { echo "a PBLAS routine failed tests"; return; }
}

# x[sd]syevr report "IL, IU, VL or VU altered" whenever their own VL and VU, never set
# for RANGE='A', hold a NaN from the stack (test/scalapack/pdsyevr_guard.c).  Accepted:
# results failed by that alone, that is as many as the guard counted NaN calls on all
# ranks at most, each with both residuals (CHK, QTQ) under the threshold SEPR.dat gives
# its TEST (the tester's own rule for PASSED), and no call that changed the four values.
# What was accepted goes to OUTPUT.accepted.
syevr_false_alarms() {  # output: why it failed, or nothing
    local f=$1 fails nans over
    fails=$(grep -Ec ' FAILED +$' "$f")
    nans=$(sed -n "s/^pdsyevr_guard: rank [0-9?]*: \([0-9]*\) of .*/\1/p" "$f" |
        awk '{ s += $1 } END { print s + 0 }')
    grep -Eq "^pdsyevr_guard: .* [1-9][0-9]* changed them" "$f" &&
        { echo "P?SYEVR changed VL, VU, IL or IU"; return; }
    [ "$fails" -le "$nans" ] || { echo "$fails results failed, $nans NaN calls"; return; }
    # SEPR.dat: "'TEST n - ...'" opens a test, "THRESH  Threshold ..." ends it; the
    # output repeats the "'TEST n - ...'" line before that test's results.
    over=$(awk -v q="'" -v num='^[0-9]*\.?[0-9]*([EeDd][-+]?[0-9]+)?$' '
        FNR == NR && index($0, q "TEST ") == 1 { t = $2 }
        FNR == NR && /Threshold/ { thresh[t] = $1 + 0 }
        FNR == NR { next }
        index($0, q "TEST ") == 1 { t = $2 }
        / FAILED +$/ && !(t in thresh) { print "TEST " t " has no threshold in SEPR.dat"; exit }
        / FAILED +$/ && !($9 ~ num && $10 ~ num && $9 + 0 < thresh[t] && $10 + 0 < thresh[t]) {
            sub(/^ +/, ""); sub(/ +$/, ""); gsub(/ +/, " "); print "TEST " t " (threshold " thresh[t] "): " $0; exit }
        ' "$testers/SEPR.dat" "$f")
    [ -z "$over" ] || { echo "a residual over the threshold: $over"; return; }
    sed -e '/tests\? completed and failed/d' -e '/ FAILED *$/d' -e '/altered by P.SYEVR/d' \
        "$f" > "$f.checked"
    failed_checks "$f.checked"
    [ "$fails" = 0 ] ||
        echo "accepted $fails results failed by the tester's NaN VL/VU alone ($nans NaN calls)" > "$f.accepted"
}

for t in $list; do
    [ -x "$testers/$t" ] || { report "$t" "not ok" "no such tester"; continue; }
    name=${t//\//_}
    rm -f "$out/$name.out.accepted"
    preload="$fix:$guard"
    [[ "$t" == x[sdcz]sep ]] && preload="$preload:$repeatable"
    start=$SECONDS
    # Each reads its input (.dat) from its own directory.
    (cd "$testers/$(dirname "$t")" &&
        timeout "$limit" "${launch[@]}" -n 4 -genv LD_PRELOAD "$preload" \
            "./$(basename "$t")") > "$out/$name.out" 2>&1
    rc=$?
    took=$((SECONDS - start))
    why=""
    if [ $rc = 124 ] || [ $rc = 137 ]; then
        why="still running after ${limit} s (hung)"
    elif [[ "$t" == *btest ]]; then
        # BLACS's testers end by testing BLACS_ABORT: every process is killed on purpose.
        why=$(failed_checks "$out/$name.out")
    elif [ $rc != 0 ]; then
        why="exit $rc"
    elif [[ "$t" == x[sd]syevr ]]; then
        why=$(syevr_false_alarms "$out/$name.out")
    else
        why=$(failed_checks "$out/$name.out")
    fi
    if [ -z "$why" ]; then
        report "$t" ok
        [ -s "$out/$name.out.accepted" ] && sed 's/^/    /' "$out/$name.out.accepted"
    else
        report "$t" "not ok" "$why, ${took} s"
    fi
done
# xdlu on bigger matrices, and which paths its messages took.
if [ -z "$only" ]; then
    mkdir -p "$work/xdlu-heap"
    cp "$top/test/scalapack/LU-heap.dat" "$work/xdlu-heap/LU.dat"
    (cd "$work/xdlu-heap" && timeout "$limit" "${launch[@]}" -n 4 \
        -genv LD_PRELOAD "$fix:$work/path_counters.so" "$testers/xdlu") > "$out/xdlu-heap.out" 2>&1
    rc=$?
    single=$(sed -n 's/^smheap paths: rank [0-9]* single_copy_msgs \([0-9-]*\) .*/\1/p' \
        "$out/xdlu-heap.out" | awk '{ s += $1 } END { print s + 0 }')
    why=""
    if [ $rc != 0 ]; then
        why="exit $rc"
    else
        why=$(failed_checks "$out/xdlu-heap.out")
        [ -z "$why" ] && [ "$(grep -c '^smheap paths: rank' "$out/xdlu-heap.out")" != 4 ] &&
            why="not every rank printed its counters"
        [ -z "$why" ] && [ "$heap_expected" = yes ] && [ "$single" -le 0 ] &&
            why="no message moved with a single copy"
    fi
    if [ -z "$why" ]; then
        report xdlu-heap ok
        echo "    xdlu-heap: $single single-copy messages (MPI_T smheap_single_copy_msgs)"
    else
        report xdlu-heap "not ok" "$why"
    fi
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]

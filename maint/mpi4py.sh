#!/usr/bin/env bash
# Build mpi4py from its source against this project's installs, as a user of the install
# would (MPICC=.../mpicc python3 setup.py build), and optionally run mpi4py's own test suite.
#   maint/mpi4py.sh SRC [--test]
# SRC: an mpi4py source tree or release tarball (mpi4py 3.1.x; Debian's `apt-get source
# mpi4py` gives 3.1.4).  Builds into build/mpi4py/build-smheap (and build-nemesis when
# maint/setup.sh --nemesis was run), for Debian's python3 (/usr/bin/python3, with numpy):
# run a program with
#   PYTHONPATH=build/mpi4py/build-smheap/lib.linux-x86_64-cpython-311 \
#       build/install/bin/mpiexec -n 4 python3 prog.py
# --test runs mpi4py's test/runtests.py on 1, 2, 3 and 4 ranks on each install (10 minutes
# at most each) and prints, per run, the tests run, skipped and failed; the logs are in
# build/results/mpi4py/.  MPI4PY_ONLY=smheap (or nemesis) takes one install only.
# Needs maint/deps.sh --python.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
src=${1:?usage: maint/mpi4py.sh SRC [--test]}
py=/usr/bin/python3
work="$top/build/mpi4py"
results="$top/build/results/mpi4py"
mkdir -p "$work" "$results"
if [ -f "$src" ]; then
    rm -rf "$work/src" && mkdir -p "$work/src"
    tar -xf "$src" -C "$work/src" --strip-components=1
    src="$work/src"
fi
[ -f "$src/setup.py" ] || { echo "mpi4py.sh: $src is not an mpi4py source tree"; exit 1; }
"$py" -c 'import numpy' 2>/dev/null || { echo "mpi4py.sh: no numpy (maint/deps.sh --python)"; exit 1; }

installs=(smheap:"$top/build/install")
[ -x "$top/build/nemesis/install/bin/mpicc" ] && installs+=(nemesis:"$top/build/nemesis/install")
if [ -n "${MPI4PY_ONLY:-}" ]; then
    for i in "${installs[@]}"; do [ "${i%%:*}" = "$MPI4PY_ONLY" ] && installs=("$i"); done
    [ "${installs[0]%%:*}" = "$MPI4PY_ONLY" ] || { echo "mpi4py.sh: no install $MPI4PY_ONLY"; exit 1; }
fi
for i in "${installs[@]}"; do
    name=${i%%:*} prefix=${i#*:}
    echo "== mpi4py against $name ($prefix)"
    # setup.py build writes into the source tree too: a build of its own for each install
    (cd "$src" && rm -rf build && env PATH=/usr/bin:/bin MPICC="$prefix/bin/mpicc" \
        "$py" setup.py build --build-base "$work/build-$name" > "$work/build-$name.log" 2>&1) ||
        { tail -20 "$work/build-$name.log"; exit 1; }
done
[ "${2:-}" = --test ] || exit 0

for i in "${installs[@]}"; do
    name=${i%%:*} prefix=${i#*:}
    for n in 1 2 3 4; do
        log="$results/$name-$n.log"
        rc=0
        (cd "$src" && PYTHONPATH="$work/build-$name/lib.linux-x86_64-cpython-311" timeout 600 \
            "$prefix/bin/mpiexec" -n "$n" "$py" test/runtests.py -q > "$log" 2>&1) || rc=$?
        ran=$(grep -o 'Ran [0-9]* tests' "$log" | head -1 | grep -o '[0-9]*' || true)
        skipped=$(grep -o 'skipped=[0-9]*' "$log" | head -1 | cut -d= -f2 || true)
        ok=$(grep -o 'OK' "$log" | wc -l)  # ranks' lines may interleave
        failed=$(grep -o 'failures=[0-9]*\|errors=[0-9]*' "$log" | cut -d= -f2 | paste -sd+ | bc 2>/dev/null || true)
        echo "$name, $n rank(s): ${ran:-?} tests, ${skipped:-?} skipped, ${failed:-0} failed, $ok of $n ranks OK, exit $rc$([ $rc = 124 ] && echo ' (timed out: a hang)')$(grep -q 'shared heap is off' "$log" && echo ', heap off')"
    done
done

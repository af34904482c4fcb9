#!/usr/bin/env bash
# Pack what bench/p2p/run.sh and bench/coll/run.sh need into one folder that runs on another
# x86-64 Linux machine (glibc 2.34 or later) without building there: the smheap and nemesis
# installs, a relocatable copy of Debian's Open MPI 4.1 and the libraries it and MPICH load
# (hwloc, udev, ...), the benchmark programs built with each MPI, and the run scripts
# themselves, laid out as in the project so that they run unchanged (BENCH_PREBUILT=1).
#   bench/portable/bundle.sh [DIR]     (default build/portable; after maint/setup.sh,
#                                       maint/setup.sh --nemesis and maint/deps.sh --bench)
# then, on the other machine:  OUT=DIR bash DIR/run.sh [p2p|coll|all] [RUNS]   (run.sh)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
dest=${1:-$top/build/portable}
here="$top/bench/portable"

for need in "$top/build/install/bin/mpicc" "$top/build/nemesis/install/bin/mpicc" \
            /usr/bin/mpicc.openmpi; do
    [ -x "$need" ] || { echo "bundle: no $need (maint/setup.sh, maint/setup.sh --nemesis," \
                             "maint/deps.sh --bench)"; exit 1; }
done
rm -rf "$dest"
mkdir -p "$dest/ompi" "$dest/bench" "$dest/build"

# Open MPI's packages and the shared libraries its launcher, its components and MPICH load,
# as installed here, under ompi/ (ompi-env.sh points Open MPI there with OPAL_PREFIX); no
# headers, static libraries or documentation.
pkgs=(libopenmpi3 openmpi-bin openmpi-common libpmix2 libevent-core-2.1-7
      libevent-pthreads-2.1-7 libhwloc15 libudev1 libltdl7 libnuma1 libcap2 zlib1g)
dpkg -L "${pkgs[@]}" |
    grep -v -E 'share/(doc|man|lintian)|/include/|\.a$|pkgconfig' |
    sed 's#^/lib/#/usr/lib/#; s#^/bin/#/usr/bin/#' | sort -u |
    while read -r f; do
        if [ -f "$f" ] || [ -L "$f" ]; then
            mkdir -p "$dest/ompi$(dirname "$f")"
            cp -a "$f" "$dest/ompi$f"
        fi
    done

# The MPICH installs, their programs and libraries only (the C benchmarks need no Fortran
# or C++ bindings), stripped.
for inst in install nemesis/install; do
    mkdir -p "$dest/build/$inst/lib"
    cp -a "$top/build/$inst/bin" "$dest/build/$inst/"
    find "$top/build/$inst/lib" -maxdepth 1 -name '*.so*' ! -name 'libmpifort*' \
        ! -name 'libmpicxx*' -exec cp -a {} "$dest/build/$inst/lib/" \;
    find "$dest/build/$inst/lib" -type f -name '*.so*' -exec strip --strip-unneeded {} +
done

# The scripts, laid out as in the project (each finds the project root two levels up).
cp "$top/bench/benchlib.sh" "$top/bench/benchlib.py" "$dest/bench/"
for suite in p2p coll; do
    mkdir -p "$dest/bench/$suite"
    cp "$top/bench/$suite/"*.sh "$top/bench/$suite/"*.py "$top/bench/$suite/"*.c \
        "$dest/bench/$suite/"
done
cp "$here/run.sh" "$here/ompi-env.sh" "$dest/"

# The programs, where the run scripts look for them.
. "$top/bench/benchlib.sh"
declare -A mpicc=([smheap]="$top/build/install/bin/mpicc"
                  [nemesis]="$top/build/nemesis/install/bin/mpicc" [openmpi]=mpicc.openmpi)
for m in smheap nemesis openmpi; do
    for suite in p2p coll; do
        bench_build bundle "$m" "${mpicc[$m]}" "$top/bench/$suite/${suite}_bench.c" \
            "$dest/build/bench/$suite/$m/${suite}_bench"
    done
done
gcc -O2 -std=c99 -o "$dest/build/bench/p2p/memcpy_bench" "$top/bench/p2p/memcpy_bench.c" \
    -lpthread
git -C "$top" describe --always --dirty >"$dest/VERSION" 2>/dev/null || echo unknown >"$dest/VERSION"
echo "bundle: $dest, $(du -sh "$dest" | cut -f1)"

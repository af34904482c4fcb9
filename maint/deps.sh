#!/usr/bin/env bash
# Install what building smheap and MPICH needs, and fetch the sources of MPICH 4.0.2 and of
# jemalloc (the shared heap's engine) from Debian's source packages (the deb-src entry is derived from the machine's own apt sources, so no host
# name is written here).  Idempotent: a second run does nothing it does not have to.
#   maint/deps.sh           what the build and the tests need (Debian's libmpich-dev: the test
#                           that a program built with Debian's MPICH runs on smheap;
#                           scalapack-mpi-test: Debian's ScaLAPACK testers, built with it;
#                           libfabric-dev and libfabric-bin: the path between nodes, fi_info;
#                           mpich, and the packages of environment-modules and Lmod with what
#                           they run on: the check of the .deb beside Debian's MPICH)
#   maint/deps.sh --bench   only what the benchmarks add: Open MPI, Debian's MPICH (ch4),
#                           gnuplot, Debian's jemalloc and mimalloc (bench/p2p, bench/coll,
#                           bench/heap, bench/part)
#   maint/deps.sh --python  only what Python programs add: numpy, Cython (to build mpi4py
#                           from its source, maint/mpi4py.sh) and Debian's python3-mpi4py
#                           (Open MPI's, for bench/python)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/maint/config.sh"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

need_pkgs=(build-essential gfortran autoconf automake libtool pkg-config perl python3 xz-utils
           dpkg-dev bzip2 libhwloc-dev hwloc valgrind ccache libmpich-dev scalapack-mpi-test
           libfabric-dev libfabric-bin mpich tcl lua5.3 lua-posix lua-filesystem lua-term
           lua-json)
bench_only=no
if [ "${1:-}" = --bench ]; then
    need_pkgs=(openmpi-bin libopenmpi-dev mpich libmpich-dev gnuplot-nox libjemalloc2
               libmimalloc2.0)
    bench_only=yes
elif [ "${1:-}" = --python ]; then
    need_pkgs=(python3-dev python3-numpy cython3 python3-mpi4py openmpi-bin)
    bench_only=yes
fi
missing=()
for p in "${need_pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    as_root apt-get update -q
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
[ "$bench_only" = yes ] && exit 0

src_list=/etc/apt/sources.list.d/smheap-deb-src.sources
if ! grep -rqs '^Types:.*deb-src\|^deb-src ' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    # Turn every "Types: deb" stanza of the existing sources into a deb-src one.
    tmp=$(mktemp)
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -e "$f" ] || continue
        sed -n 's/^Types:[[:space:]]*deb[[:space:]]*$/Types: deb-src/;p' "$f" >> "$tmp"
        echo >> "$tmp"
    done
    if [ -f /etc/apt/sources.list ]; then
        sed -n 's/^deb[[:space:]]/deb-src /p' /etc/apt/sources.list > "${tmp}.list"
        as_root install -m 0644 "${tmp}.list" /etc/apt/sources.list.d/smheap-deb-src.list
    fi
    as_root install -m 0644 "$tmp" "$src_list"
    rm -f "$tmp" "${tmp}.list"
    as_root apt-get update -q
fi

mkdir -p "$DL_DIR"
tarball="$DL_DIR/mpich_${MPICH_VERSION}.orig.tar.xz"
if [ ! -f "$tarball" ] || ! echo "$MPICH_SHA256  $tarball" | sha256sum -c --quiet - 2>/dev/null; then
    (cd "$DL_DIR" && apt-get source --download-only "mpich=${MPICH_DEB_VERSION}" ) ||
    (cd "$DL_DIR" && apt-get source --download-only mpich)
fi
echo "$MPICH_SHA256  $tarball" | sha256sum -c - || {
    echo "smheap: $tarball does not have the expected sha256; delete it and rerun" >&2; exit 1; }

# The shared heap's engine, built from source (setup.sh) because it is embedded in libmpi
# under its own prefix, with TLS a dlopen()ed libmpi can load.
je_dsc="$DL_DIR/jemalloc_${JEMALLOC_DEB_VERSION}.dsc"
je_tarball="$DL_DIR/jemalloc_${JEMALLOC_VERSION}.orig.tar.bz2"
if [ ! -f "$je_dsc" ] || [ ! -f "$je_tarball" ]; then
    (cd "$DL_DIR" && apt-get source --download-only "jemalloc=${JEMALLOC_DEB_VERSION}")
fi
echo "$JEMALLOC_SHA256  $je_tarball" | sha256sum -c - || {
    echo "smheap: $je_tarball does not have the expected sha256; delete it and rerun" >&2; exit 1; }

# The two module systems, as packages only: they conflict with each other, so the check of
# maint/deb.sh unpacks both into build/ instead of installing one on the machine.
for p in environment-modules lmod; do
    ls "$DL_DIR"/${p}_*.deb > /dev/null 2>&1 ||
        (cd "$DL_DIR" && apt-get download -q -o APT::Sandbox::User=root "$p")
done

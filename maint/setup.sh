#!/usr/bin/env bash
# Build MPICH 4.0.2 with the ch3:smheap channel grafted in, and install it to build/install.
#
#   maint/setup.sh              build (or incrementally rebuild) ch3:smheap
#   maint/setup.sh --nemesis    also build the reference ch3:nemesis from the same source and
#                               flags into build/nemesis/install
#   maint/setup.sh --nemesis-yield
#                               also build ch3:nemesis configured --enable-yield=sched_yield
#                               into build/nemesis-yield/install: on Linux MPICH's waits
#                               never yield the processor by default, so with more ranks than
#                               cores nemesis spins through its time slices (a ScaLAPACK
#                               tester of 4 ranks on 2 cores: 10 min against 4 s)
#   maint/setup.sh --prefix DIR [--destdir STAGE]
#                               build ch3:smheap for DIR instead (in build/prefix-obj/) and
#                               install it there, with an environment-module file in
#                               DIR/share/modulefiles; --destdir stages the install under STAGE
#                               (as "make install DESTDIR=STAGE": maint/deb.sh packs it)
#
# The MPICH source tree (build/mpich-4.0.2) is generated: unpacked from Debian's orig tarball,
# patched with maint/patches/*.patch, with the project's channel linked in.  It is regenerated
# only when the patches or the channel's subconfigure.m4 change; builds are out of tree
# (build/smheap-obj, build/nemesis/obj), so a channel edit rebuilds just that file and relinks.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/maint/config.sh"

with_nemesis=no
with_nemesis_yield=no
install_prefix=""
destdir=""
absolute_dir() {    # option value: an absolute directory, or a message naming the option
    case "$2" in
        /) echo "setup.sh: $1 /: MPICH's files would mix with the system's; name a directory" >&2
           exit 2 ;;
        /*) echo "${2%/}" ;;
        "") echo "setup.sh: $1 needs a directory" >&2; exit 2 ;;
        *) echo "setup.sh: $1 $2: give an absolute path (an install is found by its prefix)" >&2
           exit 2 ;;
    esac
}
while [ $# -gt 0 ]; do
    case "$1" in
        --nemesis) with_nemesis=yes ;;
        --nemesis-yield) with_nemesis_yield=yes ;;
        --prefix|--destdir)
            [ $# -ge 2 ] || { echo "setup.sh: $1 needs a directory" >&2; exit 2; }
            if [ "$1" = --prefix ]; then install_prefix=$(absolute_dir "$1" "$2") || exit 2
            else destdir=$(absolute_dir "$1" "$2") || exit 2; fi
            shift ;;
        --prefix=*) install_prefix=$(absolute_dir --prefix "${1#*=}") || exit 2 ;;
        --destdir=*) destdir=$(absolute_dir --destdir "${1#*=}") || exit 2 ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        *) echo "setup.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
    esac
    shift
done
if [ -n "$destdir" ] && [ -z "$install_prefix" ]; then
    echo "setup.sh: --destdir stages an install for --prefix DIR; give both" >&2; exit 2
fi
if [ -n "$install_prefix" ] && [ "$with_nemesis$with_nemesis_yield" != nono ]; then
    echo "setup.sh: --prefix builds only ch3:smheap;" \
        "run --nemesis and --nemesis-yield on their own" >&2
    exit 2
fi

step() { echo "== [$(date -u -d "@$SECONDS" +%M:%S)] $*"; }    # minutes:seconds so far

step "packages and sources (maint/deps.sh)"
"$top/maint/deps.sh"

src="$BUILD_DIR/mpich-$MPICH_VERSION"
graft_dirs=(src/mpid/ch3/channels/smheap src/heap src/coll)

# Copy the project's sources into the MPICH tree, touching only files whose content changed
# (so make rebuilds just those) and dropping files the project no longer has.
sync_graft() {
    local d f
    for d in "${graft_dirs[@]}"; do
        [ -L "$src/$d" ] && rm "$src/$d"
        mkdir -p "$src/$d"
        (cd "$top/$d" && find . -type f ! -name '*~') | while read -r f; do
            if ! cmp -s "$top/$d/$f" "$src/$d/$f"; then
                mkdir -p "$(dirname "$src/$d/$f")"
                cp "$top/$d/$f" "$src/$d/$f"
            fi
        done
        (cd "$src/$d" && find . -type f) | while read -r f; do
            [ -e "$top/$d/$f" ] || rm -f "$src/$d/$f"
        done
    done
}

# What autogen extracts from the sources (error messages, CVARs): redone when the
# project's contributions to them change, without rerunning all of autogen.
extract_inputs() {
    local d
    for d in "${graft_dirs[@]}"; do
        find "$top/$d" -name errnames.txt -exec cat {} +
        find "$top/$d" \( -name '*.c' -o -name '*.h' \) -exec grep -ho '"\*\*[a-z_|]*' {} + |
            sort -u || true     # a graft dir may have no error keys
        find "$top/$d" \( -name '*.c' -o -name '*.h' \) -exec \
            sed -n '/BEGIN_MPI_T_CVAR_INFO_BLOCK/,/END_MPI_T_CVAR_INFO_BLOCK/p' {} +
    done | sha256sum | cut -d' ' -f1
}
regen_extracted() {
    step "extracting error messages and CVARs"
    # CVARs first: the code they generate uses error messages (patch 0013), which the
    # extraction of messages then finds in use and keeps.
    (cd "$src" &&
        ./maint/extractcvars --dirs="$(cat maint/cvardirs)" > /dev/null &&
        maint/extracterrmsgs -careful=unusederr.txt -skip=src/util/multichannel/mpi.c \
            $(cat maint/errmsgdirs) > .tmp 2> .err &&
        ! grep -v "Warning:" .err &&
        mv .tmp src/mpi/errhan/defmsg.h) ||
        { echo "smheap: extracting error messages/CVARs failed" >&2; exit 1; }
}

graft_inputs() {
    cat "$top"/maint/patches/*.patch "$top/src/mpid/ch3/channels/smheap/subconfigure.m4" \
        "$top/maint/config.sh" | sha256sum | cut -d' ' -f1
}
stamp="$src/.smheap-graft"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$(graft_inputs)" ]; then
    # Preparing the source again discards every build of it; an install for another prefix
    # (maint/deb.sh, run by the tests among others) must not pull build/install away.
    if [ -n "$install_prefix" ] && [ -d "$BUILD_DIR/smheap-obj" ]; then
        echo "setup.sh: the patches changed since build/install was built; run maint/setup.sh" \
             "first, then --prefix" >&2
        exit 1
    fi
    step "preparing MPICH $MPICH_VERSION source in $src"
    rm -rf "$src"
    tar -C "$BUILD_DIR" -xf "$DL_DIR/mpich_${MPICH_VERSION}.orig.tar.xz"
    for p in "$top"/maint/patches/*.patch; do
        echo "   patch: $(basename "$p")"
        patch -s -d "$src" -p1 < "$p"
    done
    sync_graft
    # Regenerate only what the graft changes: the top-level configure (subsys_include.m4
    # lists the channel's subconfigure.m4) and Makefile.in (the channel's Makefile.mk).  The
    # release tarball already holds the generated bindings and the bundled packages'
    # configure scripts; error messages and CVARs are extracted below.
    step "autogen.sh, top level only"
    (cd "$src" && ./autogen.sh -quick -without-bindings -without-geterrmsgs \
        -without-getcvars -without-test -without-hydra -without-hwloc -without-json \
        > "$BUILD_DIR/autogen.log" 2>&1) ||
        { tail -30 "$BUILD_DIR/autogen.log"; exit 1; }
    grep -q "channels/smheap/subconfigure.m4" "$src/subsys_include.m4"
    rm -f "$src/.smheap-extract"        # extracted again below, with the graft's CVARs
    rm -rf "$BUILD_DIR/smheap-obj" "$BUILD_DIR/nemesis/obj" "$BUILD_DIR/nemesis-yield/obj" \
        "$BUILD_DIR/prefix-obj"
    graft_inputs > "$stamp"     # last: a failed preparation is redone next time
fi
sync_graft
# CVARs and error messages are declared next to their code; MPICH extracts them only from
# the directories autogen listed, which hold the channel but not the collectives.
grep -q " $src/src/coll\$" "$src/maint/cvardirs" ||
    { echo "$(cat "$src/maint/cvardirs") $src/src/coll" > "$src/maint/cvardirs"
      rm -f "$src/.smheap-extract"; }
grep -q " src/coll\$" "$src/maint/errmsgdirs" ||
    { echo "$(cat "$src/maint/errmsgdirs") src/coll" > "$src/maint/errmsgdirs"
      rm -f "$src/.smheap-extract"; }
if [ "$(cat "$src/.smheap-extract" 2>/dev/null)" != "$(extract_inputs)" ]; then
    regen_extracted
    extract_inputs > "$src/.smheap-extract"
fi

export CCACHE_DIR="${CCACHE_DIR:-$BUILD_DIR/ccache}"
# ccache through its masquerade directory, so the installed wrappers (mpicc, mpicxx) name
# the plain compilers.
[ -d /usr/lib/ccache ] && export PATH="/usr/lib/ccache:$PATH"
compilers="CC=gcc CXX=g++ FC=gfortran"     # part of a build's configuration (below)

# jemalloc for the shared heap, from Debian's source package (with Debian's patches):
# public API renamed to smheap_je_* and hidden, so it never competes with any other malloc;
# no TLS (force_tls=0, jemalloc's own switch for platforms without it: its thread data go
# behind a pthread key, which a libmpi loaded with dlopen needs), with the patches in
# maint/patches/jemalloc (each says why); a static PIC archive linked into libmpi and into
# the heap's unit tests.
jemalloc="$BUILD_DIR/jemalloc"
jemalloc_flags=(--with-jemalloc-prefix=smheap_je_ --with-private-namespace=smheap_je_int_
                --without-export force_tls=0 --disable-cxx --disable-stats
                --disable-prof --disable-fill --disable-utrace --disable-libdl --disable-doc
                --disable-shared --with-lg-page=12 --with-lg-hugepage=21
                --with-version="${JEMALLOC_VERSION}-0-g0000000000000000000000000000000000000000")
jemalloc_stamp="$( (echo "$JEMALLOC_DEB_VERSION ${jemalloc_flags[*]}";
                    cat "$top"/maint/patches/jemalloc/*.patch) | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$jemalloc/.smheap-stamp" 2>/dev/null)" != "$jemalloc_stamp" ]; then
    step "jemalloc $JEMALLOC_DEB_VERSION for the shared heap"
    rm -rf "$jemalloc" "$BUILD_DIR/jemalloc-src"
    dpkg-source --no-check -x "$DL_DIR/jemalloc_${JEMALLOC_DEB_VERSION}.dsc" \
        "$BUILD_DIR/jemalloc-src" > /dev/null
    for p in "$top"/maint/patches/jemalloc/*.patch; do
        echo "   patch: $(basename "$p")"
        patch -s -d "$BUILD_DIR/jemalloc-src" -p1 < "$p"
    done
    mkdir -p "$jemalloc"
    (cd "$jemalloc" && CC=gcc "$BUILD_DIR/jemalloc-src/configure" "${jemalloc_flags[@]}" \
        > configure.log 2>&1 && make -j"$(nproc)" build_lib_static > make.log 2>&1) ||
        { tail -30 "$jemalloc"/*.log; exit 1; }
    echo "$jemalloc_stamp" > "$jemalloc/.smheap-stamp"
fi
common_flags=(--enable-fortran=all --enable-cxx --with-hwloc=/usr --enable-fast=O2
              --enable-threads=multiple --disable-static)

build_one() {  # device objdir prefix [configure options]
    local device=$1 obj=$2 prefix=$3
    local args=(--prefix="$prefix" --with-device="$device" "${common_flags[@]}" "${@:4}")
    mkdir -p "$obj"
    if [ ! -f "$obj/Makefile" ] ||
       [ "$(cat "$obj/.smheap-configured" 2>/dev/null)" != "$compilers ${args[*]}" ]
    then
        step "configure $device -> $prefix"
        rm -f "$obj/.smheap-configured"
        # gfortran >= 10 rejects mpif.h-style calls with differently typed buffers unless
        # told to allow them (Debian builds its MPICH the same way).
        (cd "$obj" && env $compilers F77=gfortran \
            FFLAGS=-fallow-argument-mismatch FCFLAGS=-fallow-argument-mismatch \
            "$src/configure" "${args[@]}" > configure.log 2>&1) ||
            { tail -40 "$obj/configure.log"; exit 1; }
        echo "$compilers ${args[*]}" > "$obj/.smheap-configured"
    fi
    step "make $device"
    (cd "$obj" && make -j"$(nproc)" > make.log 2>&1) ||
        { grep -B5 -A5 -m5 -E "error|Error" "$obj/make.log" | tail -60; exit 1; }
    (cd "$obj" && make install DESTDIR="$destdir" > install.log 2>&1) ||
        { tail -20 "$obj/install.log"; exit 1; }
}

# An install for another prefix (a cluster's shared directory, a package): its own build,
# since MPICH compiles its prefix into the wrappers, libraries' run paths and Hydra; and
# the module file that puts it in a user's environment.
install_module_file() {     # prefix: its module file, in DIR/share/modulefiles
    local dir="$destdir$1/share/modulefiles/mpich-smheap"
    mkdir -p "$dir"
    sed -e "s|@PREFIX@|$(printf '%s' "$1" | sed 's/[\\|&]/\\&/g')|g" \
        -e "s|@MPICH_VERSION@|$MPICH_VERSION|g" \
        "$top/maint/deploy/mpich-smheap.module.in" > "$dir/$MPICH_VERSION"
}
if [ -n "$install_prefix" ]; then
    # one build per prefix, so a test install and the package's do not undo each other
    build_one ch3:smheap "$BUILD_DIR/prefix-obj/$(echo "${install_prefix#/}" | tr / _)" \
        "$install_prefix" \
        --with-smheap-jemalloc="$jemalloc"
    install_module_file "$install_prefix"
    # (a staged install's libraries are not yet where their run path points)
    LD_LIBRARY_PATH="$destdir$install_prefix/lib" "$destdir$install_prefix/bin/mpichversion" |
        grep -i device
    echo "installed in $destdir$install_prefix; to use it:"
    echo "    module use $install_prefix/share/modulefiles; module load mpich-smheap"
    exit 0
fi
build_one ch3:smheap "$BUILD_DIR/smheap-obj" "$BUILD_DIR/install" --with-smheap-jemalloc="$jemalloc"
if [ "$with_nemesis" = yes ]; then
    build_one ch3:nemesis "$BUILD_DIR/nemesis/obj" "$BUILD_DIR/nemesis/install"
fi
if [ "$with_nemesis_yield" = yes ]; then
    build_one ch3:nemesis "$BUILD_DIR/nemesis-yield/obj" "$BUILD_DIR/nemesis-yield/install" \
        --enable-yield=sched_yield
fi
# The project's own build (unit tests), out of tree in build/project.
step "the project's unit tests (build/project)"
if [ ! -f "$top/configure" ] || [ "$top/configure.ac" -nt "$top/configure" ] ||
   [ "$top/Makefile.am" -nt "$top/Makefile.in" ]; then
    (cd "$top" && autoreconf -i > "$BUILD_DIR/autoreconf.log" 2>&1) ||
        { cat "$BUILD_DIR/autoreconf.log"; exit 1; }
fi
mkdir -p "$BUILD_DIR/project"
project_args=(--with-jemalloc="$jemalloc" --with-mpl="$src/src/mpl/include"
              --with-mpl-config="$BUILD_DIR/smheap-obj/src/mpl/include")
if [ ! -f "$BUILD_DIR/project/Makefile" ] ||
   [ "$(cat "$BUILD_DIR/project/.configured" 2>/dev/null)" != "${project_args[*]}" ]; then
    (cd "$BUILD_DIR/project" && "$top/configure" -q "${project_args[@]}") || exit 1
    echo "${project_args[*]}" > "$BUILD_DIR/project/.configured"
fi
make -s -C "$BUILD_DIR/project" > /dev/null

"$BUILD_DIR/install/bin/mpichversion" | grep -i device
step "done"

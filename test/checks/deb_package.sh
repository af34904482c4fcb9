#!/usr/bin/env bash
# The Debian package of maint/deb.sh, as a cluster's administrator and user meet it:
#   - it builds, and installs with dpkg beside Debian's mpich, libmpich12 and libmpich-dev
#     (dpkg refuses a package that would overwrite their files), leaving their mpicc and
#     libmpich.so.12 as they were;
#   - `module load mpich-smheap`, with environment-modules and with Lmod (Debian's packages;
#     they conflict with each other, so both are unpacked into build/ and run from there, the
#     way their shell functions run them, with the MODULEPATH their start-up files make of
#     their modulespath files), finds the module file without configuration and
#     sets PATH, LD_LIBRARY_PATH, MANPATH, PKG_CONFIG_PATH and MPI_HOME; C and Fortran
#     programs compiled then run on ch3:smheap with the heap on and a large message moved
#     with one copy (their own MPI_T checks); `module unload` takes it all back;
#   - `dpkg --purge` leaves no file or directory behind that was not there before.
# Usage: deb_package.sh WORKDIR
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/maint/config.sh"
work=$(mkdir -p "${1:?usage: deb_package.sh WORKDIR}" && cd "$1" && pwd) || exit 1
pkg=mpich-smheap
prefix=/usr/lib/$pkg
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }
fail() { echo "FAIL: $*" >&2; exit 1; }

as_root true 2> /dev/null ||
    { echo "skipped: installing a package needs root (or sudo without a password)"; exit 0; }
for p in mpich libmpich12 libmpich-dev; do
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2> /dev/null)" = installed ] ||
        fail "Debian's $p is not installed (maint/deps.sh installs it)"
done
debian_mpicc=$(readlink -f /usr/bin/mpicc)
debian_lib=$(readlink -f "/usr/lib/$multiarch/libmpich.so.12")

"$top/maint/deb.sh" > "$work/deb.log" 2>&1 || { tail -30 "$work/deb.log"; fail "maint/deb.sh"; }
deb=$(tail -1 "$work/deb.log")
[ -f "$deb" ] || { tail -30 "$work/deb.log"; fail "maint/deb.sh made no package"; }
echo "package: $deb ($(du -h "$deb" | cut -f1))"
dpkg-deb --info "$deb" | sed -n '/Package:/,/Description:/p'

# What the package holds outside its prefix: exactly its documents and the module file's links.
outside=$(dpkg-deb --contents "$deb" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./|/|' |
    grep -v "^$prefix/" | sort)
echo "outside $prefix:"; echo "$outside" | sed 's/^/    /'
expected=$(printf '%s\n' /usr/share/doc/$pkg/copyright /usr/share/doc/$pkg/changelog.Debian.gz \
    /usr/share/modules/modulefiles/$pkg/$MPICH_VERSION /etc/lmod/modules/$pkg/$MPICH_VERSION | sort)
[ "$outside" = "$expected" ] || fail "files outside $prefix other than $expected"

# The machine's state before: a package left by a run that was cut short goes first.
as_root dpkg --purge "$pkg" > /dev/null 2>&1
snapshot() { find /usr /etc /opt /var/lib/dpkg/alternatives -xdev 2> /dev/null | sort; }
before=$(snapshot)

trap 'as_root dpkg --purge "$pkg" > /dev/null 2>&1' EXIT
as_root dpkg -i "$deb" || fail "dpkg -i"
[ "$(readlink -f /usr/bin/mpicc)" = "$debian_mpicc" ] || fail "/usr/bin/mpicc changed"
[ "$(readlink -f "/usr/lib/$multiarch/libmpich.so.12")" = "$debian_lib" ] ||
    fail "Debian's libmpich.so.12 changed"
dpkg --verify "$pkg" || fail "dpkg --verify"

# The module systems, unpacked from their packages (the newest downloaded), once per package.
mods="$work/module-systems"
mkdir -p "$mods"
unpacked() {    # package: the directory it is unpacked in
    local file dir
    file=$(ls "$DL_DIR"/"$1"_*.deb 2> /dev/null | sort -V | tail -1)
    [ -n "$file" ] || fail "no $1 package in $DL_DIR (maint/deps.sh downloads it)"
    dir="$mods/$(basename "$file" .deb)"
    if [ ! -d "$dir" ]; then
        rm -rf "$dir.tmp" && dpkg-deb -x "$file" "$dir.tmp" && mv "$dir.tmp" "$dir" ||
            fail "unpacking $file"
    fi
    echo "$dir"
}
modulepath() {  # modulespath file: the MODULEPATH a start-up file makes of it
    sed 's/#.*//' "$1" | tr -s ' \t' '\n' | grep -v '^$' | grep -v '\$' |
        while read -r d; do [ -d "$d" ] && echo "${d%/}"; done | paste -sd:
}
em=$(unpacked environment-modules) && lmod=$(unpacked lmod) || exit 1
em_path=$(modulepath "$em/etc/environment-modules/modulespath")
lmod_path=$(modulepath "$lmod/etc/lmod/modulespath")

mkdir -p "$work/deb-programs"
cp "$top/test/mpi/pt2pt/single_copy.c" "$top/test/checks/library_version.c" \
    "$top/test/mpi/fortran/alloc90.f90" "$top/test/mpi/fortran/counters.c" "$work/deb-programs/"
mkdir -p "$work/include" && cp "$top/test/mpi/include/smheap_test.h" "$work/include/"

session() {     # module system name, its command, its default MODULEPATH
    echo "== $1 (MODULEPATH=$3)"
    env -i HOME="$HOME" PATH=/usr/local/bin:/usr/bin:/bin TERM=dumb PROGRAMS="$work/deb-programs" \
        MODCMD="$2" MODULEPATH="$3" PREFIX="$prefix" bash -c '
        set -u
        module() { eval "$($MODCMD bash "$@")"; }
        fail() { echo "FAIL: $*"; exit 1; }
        before_path=$PATH
        [ -z "${MPI_HOME:-}${LD_LIBRARY_PATH:-}${PKG_CONFIG_PATH:-}${MANPATH:-}" ] || fail "not clean"
        module load mpich-smheap || fail "module load"
        module list 2>&1
        echo "MPI_HOME=$MPI_HOME"; echo "PATH=$PATH"; echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
        echo "MANPATH=$MANPATH"; echo "PKG_CONFIG_PATH=$PKG_CONFIG_PATH"
        [ "$MPI_HOME" = "$PREFIX" ] || fail MPI_HOME
        [ "$(command -v mpicc)" = "$PREFIX/bin/mpicc" ] || fail "mpicc is $(command -v mpicc)"
        [ "$(command -v mpiexec)" = "$PREFIX/bin/mpiexec" ] || fail mpiexec
        [ "${LD_LIBRARY_PATH%%:*}" = "$PREFIX/lib" ] || fail LD_LIBRARY_PATH
        [ "$(pkg-config --variable=prefix mpich)" = "$PREFIX" ] || fail PKG_CONFIG_PATH
        [ -f "$PREFIX/share/man/man3/MPI_Send.3" ] || fail "no manual page MPI_Send.3"
        if command -v man > /dev/null; then
            case "$(man -w MPI_Send 2>&1)" in "$PREFIX"/share/man/*) ;; *) fail "man MPI_Send";; esac
        fi
        # an empty element: man still searches its own path after ours
        case ":$MANPATH:" in *":$PREFIX/share/man:"*) ;; *) fail "MANPATH lacks ours" ;; esac
        case ":$MANPATH:" in *::*) ;; *) fail "MANPATH hides the system manual pages" ;; esac
        cd "$PROGRAMS" || exit 1
        mpicc -I../include -o single_copy single_copy.c || fail "mpicc"
        mpicc -o library_version library_version.c || fail "mpicc"
        mpicc -shared -fPIC -o libcounters.so counters.c || fail "mpicc -shared"
        mpifort -o alloc90 alloc90.f90 ./libcounters.so -Wl,-rpath,"$PWD" || fail "mpifort"
        out=$(timeout 120 mpiexec -n 2 ./library_version 2>&1)
        echo "$out" | grep "MPICH Device:"
        echo "$out" | grep "MPICH Device:" | grep -q "ch3:smheap" || fail "not ch3:smheap"
        for p in single_copy alloc90; do
            out=$(timeout 120 mpiexec -n 2 ./$p 2>&1)
            echo "$p: $out"
            echo "$out" | grep -q "No Errors" || fail "$p"
            ! echo "$out" | grep -q "shared heap is off" || fail "$p: the heap is off"
        done
        module unload mpich-smheap || fail "module unload"
        [ "$PATH" = "$before_path" ] &&
            [ -z "${MPI_HOME:-}${LD_LIBRARY_PATH:-}${PKG_CONFIG_PATH:-}${MANPATH:-}" ] ||
            fail "module unload left PATH=$PATH MPI_HOME=${MPI_HOME:-}" \
                "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-} PKG_CONFIG_PATH=${PKG_CONFIG_PATH:-}" \
                "MANPATH=${MANPATH:-}"
        echo "module unload: environment restored"'
}
session environment-modules "tclsh $em/usr/lib/$multiarch/modulecmd.tcl" "$em_path" || exit 1
session Lmod "$lmod/usr/share/lmod/lmod/libexec/lmod" "$lmod_path" || exit 1

as_root dpkg --purge "$pkg" || fail "dpkg --purge"
trap - EXIT
after=$(snapshot)
left=$(comm -13 <(echo "$before") <(echo "$after"))
gone=$(comm -23 <(echo "$before") <(echo "$after"))
[ -z "$left" ] || fail "left behind after dpkg --purge: $left"
[ -z "$gone" ] || fail "gone after install and purge: $gone"
[ ! -e "$prefix" ] || fail "$prefix is still there"
echo "dpkg --purge: nothing left behind"

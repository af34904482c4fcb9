#!/usr/bin/env bash
# Build a Debian package of MPICH with the ch3:smheap channel, for a cluster's package manager:
#
#   maint/deb.sh        -> build/mpich-smheap_<version>_<arch>.deb (its path: the last line)
#
# The package installs under /usr/lib/mpich-smheap, beside Debian's mpich, libmpich12 and
# libmpich-dev: no alternative, no ld.so path, so Debian's mpicc and libmpich.so.12 stay
# what they were.  Outside its prefix: its copyright and changelog, and links to its module
# file where environment-modules and Lmod look by default (the first directories of their
# modulespath files), so users take it with `module load mpich-smheap`.
# The install is built by `maint/setup.sh --prefix /usr/lib/mpich-smheap --destdir STAGE`
# (in build/prefix-obj/; a rebuild recompiles only what changed).
set -euo pipefail
umask 022       # the modes the package installs with
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/maint/config.sh"

pkg=mpich-smheap
maintainer="smheap maintainers <maintainers@users.noreply.a-seed-621177c0.example>"
prefix=/usr/lib/$pkg
work="$BUILD_DIR/deb"
stage="$work/root"
arch=$(dpkg --print-architecture)
# MPICH's version, then the commit it was built from (by its date in UTC, so a later commit's
# package upgrades an earlier one); ".modified" where the tree differs from the commit.
commit_date=$(TZ=UTC git -C "$top" log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S \
    2>/dev/null || echo 0)
commit=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)
version="$MPICH_VERSION+smheap.$commit_date.$commit"
[ -z "$(git -C "$top" status --porcelain 2>/dev/null)" ] || version="$version.modified"
deb="$BUILD_DIR/${pkg}_${version}_${arch}.deb"

rm -rf "$stage"
"$top/maint/setup.sh" --prefix "$prefix" --destdir "$stage"

# Debian ships no libtool archives (ours would name the build's paths), and strips its
# binaries as dh_strip does.
find "$stage$prefix/lib" -name '*.la' -delete
mapfile -t elf < <(find "$stage$prefix" -type f \( -perm -u+x -o -name '*.so*' \) \
    -exec sh -c 'head -c4 "$1" | grep -q ELF' _ {} \; -print)
for f in "${elf[@]}"; do
    case "$f" in
        *.so*) strip --remove-section=.comment --remove-section=.note --strip-unneeded "$f" ;;
        *) strip --remove-section=.comment --remove-section=.note "$f" ;;
    esac
done

# The module file, found without configuration by both module systems: linked from the first
# directory of each one's modulespath (Lmod's /usr/share/lmod/lmod is a link of its package,
# into its versioned directory: nothing may go under it).
for dir in usr/share/modules/modulefiles etc/lmod/modules; do
    mkdir -p "$stage/$dir/$pkg"
    ln -sr "$stage$prefix/share/modulefiles/$pkg/$MPICH_VERSION" "$stage/$dir/$pkg/$MPICH_VERSION"
done

doc="$stage/usr/share/doc/$pkg"
mkdir -p "$doc"
{
    echo "MPICH $MPICH_VERSION with the ch3:smheap channel, built from its source (Debian's"
    echo "mpich_$MPICH_DEB_VERSION) with the channel's and the shared heap's sources."
    echo "libmpi embeds jemalloc $JEMALLOC_VERSION as the shared heap's allocator engine."
    echo; echo "MPICH:"; echo
    cat "$BUILD_DIR/mpich-$MPICH_VERSION/COPYRIGHT"
    echo; echo "jemalloc:"; echo
    cat "$BUILD_DIR/jemalloc-src/COPYING"
} > "$doc/copyright"
printf '%s (%s) unstable; urgency=medium\n\n  * Built from commit %s.\n\n -- %s  %s\n' \
    "$pkg" "$version" "$commit" "$maintainer" "$(date -R -u)" | gzip -9n > "$doc/changelog.Debian.gz"

# The libraries and programs' dependencies, as Debian computes them (dpkg-shlibdeps reads a
# debian/control naming the package); the package's own libraries are found in the stage.
mkdir -p "$work/src/debian" "$stage/DEBIAN"
printf 'Source: %s\n\nPackage: %s\nArchitecture: any\n' "$pkg" "$pkg" > "$work/src/debian/control"
depends=$(cd "$work/src" && dpkg-shlibdeps -O -l"$stage$prefix/lib" --ignore-missing-info \
    "${elf[@]}" 2>"$work/shlibdeps.log" | sed -n 's/^shlibs:Depends=//p') ||
    { cat "$work/shlibdeps.log"; exit 1; }
cat > "$stage/DEBIAN/control" <<EOF
Package: $pkg
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)
Depends: $depends
Recommends: libfabric1, gcc, g++, gfortran, environment-modules | lmod
Section: devel
Priority: optional
Description: MPICH $MPICH_VERSION with the ch3:smheap channel (shared-heap messaging)
 MPICH's ch3 device with the smheap channel: every rank's malloc heap lives in
 one shared-memory region mapped at the same address in all ranks of a node, so
 large messages, collectives and one-sided operations move data with one copy.
 .
 Installed in $prefix beside Debian's MPICH; take it with
 "module load $pkg" (environment-modules or Lmod).  Programs built with
 Debian's MPICH run on it unchanged under its mpiexec.
EOF
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | xargs -0 md5sum) \
    > "$stage/DEBIAN/md5sums"
rm -f "$BUILD_DIR/${pkg}"_*.deb
dpkg-deb --root-owner-group -Zxz -z1 --build "$stage" "$deb" > /dev/null
echo "$deb"

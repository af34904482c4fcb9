# Shared settings for the maint/ scripts (sourced, not run).
MPICH_VERSION=4.0.2
MPICH_DEB_VERSION=4.0.2-3
MPICH_SHA256=b27039f964afeb6b8a3e009c56b441cbe368c26d6d6476ad3bb7190996875860
BUILD_DIR="$top/build"
DL_DIR="$BUILD_DIR/downloads"
# The shared heap's engine: jemalloc from Debian's source package, built by setup.sh under
# its own symbol prefix (see src/heap/smheap_engine.c).
JEMALLOC_VERSION=5.3.0
JEMALLOC_DEB_VERSION=5.3.0-1
JEMALLOC_SHA256=2db82d1e7119df3e71b7640219b6dfe84789bc0537983c3b7ac4f7189aecfeaa

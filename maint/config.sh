# Shared settings for the maint/ scripts (sourced, not run).
MPICH_VERSION=4.0.2
MPICH_DEB_VERSION=4.0.2-3
MPICH_SHA256=b27039f964afeb6b8a3e009c56b441cbe368c26d6d6476ad3bb7190996875860
BUILD_DIR="$top/build"
DL_DIR="$BUILD_DIR/downloads"

# Debian's Open MPI from the bundle's ompi/ folder; sourced by run.sh, with D the bundle.
# OPAL_PREFIX and PMIX_INSTALL_PREFIX move its install (components, help files, pmix);
# LD_LIBRARY_PATH also serves MPICH's launcher and libmpi (hwloc, udev), as run.sh's
# MPICH runs put their own lib first.
ompi_lib=$D/ompi/usr/lib/x86_64-linux-gnu
export OPAL_PREFIX=$D/ompi/usr
export PMIX_INSTALL_PREFIX=$ompi_lib/pmix2
export LD_LIBRARY_PATH=$ompi_lib:$ompi_lib/openmpi/lib:$ompi_lib/pmix2/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$D/ompi/usr/bin:$PATH
# The transports of the figures taken here (bench/p2p, bench/coll: btl self,vader), and no
# attempt at components whose libraries (UCX, libfabric, PSM, hcoll) are not in the bundle.
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_mtl=^ofi,psm,psm2 \
    OMPI_MCA_osc=^ucx OMPI_MCA_coll_hcoll_enable=0

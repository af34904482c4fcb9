##
## ch3:smheap channel.  Included from src/mpid/ch3/channels/Makefile.mk by the
## project's graft (see maint/patches/).
##

errnames_txt_files += src/mpid/ch3/channels/smheap/src/errnames.txt

if BUILD_CH3_SMHEAP

# One folder per mechanism, each behind one header (doc/architecture.md): the ch3 layer
# (include/, src/), partitioned communication (part/), one-sided communication (rma/),
# links to other jobs (link/), other nodes (net/), ch3's packets (packet/), the node's
# rings and doorbells (node/), the copies (copy/), the reduction kernels (reduce/) and the
# MPI_T counters (mpit/).
smheap_dir = src/mpid/ch3/channels/smheap

AM_CPPFLAGS +=                                             \
    -I$(top_srcdir)/$(smheap_dir)/include                  \
    -I$(top_builddir)/$(smheap_dir)/include                \
    -I$(top_srcdir)/$(smheap_dir)/part                     \
    -I$(top_srcdir)/$(smheap_dir)/rma                      \
    -I$(top_srcdir)/$(smheap_dir)/link                     \
    -I$(top_srcdir)/$(smheap_dir)/net                      \
    -I$(top_srcdir)/$(smheap_dir)/packet                   \
    -I$(top_srcdir)/$(smheap_dir)/node                     \
    -I$(top_srcdir)/$(smheap_dir)/copy                     \
    -I$(top_srcdir)/$(smheap_dir)/reduce                   \
    -I$(top_srcdir)/$(smheap_dir)/mpit

# ch3:sock's socket layer (mpidu_sock.h), for the paths between nodes.  Listed after our
# own include directory: ch3:sock's also holds its mpidi_ch3_*.h, which must not be found.
AM_CPPFLAGS += -I$(top_srcdir)/src/mpid/ch3/channels/sock/include

noinst_HEADERS +=                                          \
    $(smheap_dir)/include/mpidi_ch3_pre.h                  \
    $(smheap_dir)/include/mpidi_ch3_post.h                 \
    $(smheap_dir)/include/mpidi_ch3_impl.h                 \
    $(smheap_dir)/include/mpid_nem_impl.h                  \
    $(smheap_dir)/include/smheap_channel.h                 \
    $(smheap_dir)/part/smheap_part.h                       \
    $(smheap_dir)/part/smheap_part_impl.h                  \
    $(smheap_dir)/rma/smheap_rma.h                         \
    $(smheap_dir)/rma/smheap_rma_impl.h                    \
    $(smheap_dir)/link/smheap_link.h                       \
    $(smheap_dir)/net/smheap_net.h                         \
    $(smheap_dir)/net/smheap_net_impl.h                    \
    $(smheap_dir)/net/smheap_ofi.h                         \
    $(smheap_dir)/packet/smheap_packet.h                   \
    $(smheap_dir)/node/smheap_node.h                       \
    $(smheap_dir)/node/smheap_queue.h                      \
    $(smheap_dir)/node/smheap_ring.h                       \
    $(smheap_dir)/node/smheap_doorbell.h                   \
    $(smheap_dir)/node/smheap_pace.h                       \
    $(smheap_dir)/copy/smheap_copy.h                       \
    $(smheap_dir)/copy/smheap_cma.h                        \
    $(smheap_dir)/copy/smheap_cache.h                      \
    $(smheap_dir)/reduce/smheap_reduce.h                   \
    $(smheap_dir)/mpit/smheap_mpit.h

mpi_core_sources +=                                        \
    $(smheap_dir)/src/ch3_init.c                           \
    $(smheap_dir)/src/ch3_finalize.c                       \
    $(smheap_dir)/src/ch3_mpit.c                           \
    $(smheap_dir)/src/ch3_rndv.c                           \
    $(smheap_dir)/src/ch3_progress.c                       \
    $(smheap_dir)/src/ch3_isend.c                          \
    $(smheap_dir)/src/ch3_heap.c                           \
    $(smheap_dir)/part/smheap_part.c                       \
    $(smheap_dir)/part/smheap_part_data.c                  \
    $(smheap_dir)/part/smheap_part_active.c                \
    $(smheap_dir)/rma/smheap_rma_window.c                  \
    $(smheap_dir)/rma/smheap_rma_epoch.c                   \
    $(smheap_dir)/rma/smheap_rma_hold.c                    \
    $(smheap_dir)/rma/smheap_rma_lock.c                    \
    $(smheap_dir)/link/smheap_link.c                       \
    $(smheap_dir)/net/smheap_net.c                         \
    $(smheap_dir)/net/smheap_net_sock.c                    \
    $(smheap_dir)/net/smheap_net_ofi.c                     \
    $(smheap_dir)/net/smheap_ofi_recv.c                    \
    $(smheap_dir)/net/smheap_ofi_send.c                    \
    $(smheap_dir)/net/smheap_ofi_fabric.c                  \
    $(smheap_dir)/net/smheap_ofi_lib.c                     \
    $(smheap_dir)/packet/smheap_packet.c                   \
    $(smheap_dir)/node/smheap_queue.c                      \
    $(smheap_dir)/node/smheap_doorbell.c                   \
    $(smheap_dir)/node/smheap_pace.c                       \
    $(smheap_dir)/copy/smheap_copy.c                       \
    $(smheap_dir)/copy/smheap_cma.c                        \
    $(smheap_dir)/copy/smheap_cache.c                      \
    $(smheap_dir)/reduce/smheap_reduce.c                   \
    $(smheap_dir)/mpit/smheap_counters.c

# Between nodes: ch3:sock's poll()-based socket layer, compiled here unchanged (ch3's
# socket utilities, util/sock, come with build_ch3u_sock in subconfigure.m4).
mpi_core_sources += src/mpid/ch3/channels/sock/src/sock.c

# Shared-memory windows: ch3:nemesis's implementation is channel-neutral apart
# from its header, so it is compiled here unchanged against the small
# compatibility header include/mpid_nem_impl.h instead of being copied.
mpi_core_sources +=                                        \
    src/mpid/ch3/channels/nemesis/src/ch3_win_fns.c        \
    src/mpid/ch3/channels/nemesis/src/ch3_rma_shm.c

# The shared heap (the project's src/heap, grafted at the same place) and its engine.
include $(top_srcdir)/src/heap/sources.mk
AM_CPPFLAGS += -I$(top_srcdir)/src/heap
noinst_HEADERS += $(smheap_heap_headers)
mpi_core_sources += $(smheap_heap_sources)

# The shared-heap collectives (the project's src/coll, grafted at the same place).
AM_CPPFLAGS += -I$(top_srcdir)/src/coll

noinst_HEADERS +=                                          \
    src/coll/smheap_coll.h                                 \
    src/coll/smheap_coll_call.h                            \
    src/coll/smheap_coll_tables.h                          \
    src/coll/smheap_coll_tree.h

mpi_core_sources +=                                        \
    src/coll/smheap_coll_comm.c                            \
    src/coll/smheap_coll_block.c                           \
    src/coll/smheap_coll_rooted.c                          \
    src/coll/smheap_coll_reduce.c                          \
    src/coll/smheap_coll_exchange.c                        \
    src/coll/smheap_coll_topology.c                        \
    src/coll/smheap_coll_tree.c                            \
    src/coll/smheap_coll_nodes.c

# (as the embedded ucx and ofi netmods of ch4 add their libraries)
pmpi_convenience_libs += $(SMHEAP_JEMALLOC_LIB)

# The heap's initial-exec thread variables, in a library of their own so that libmpi's
# TLS block stays global-dynamic and libmpi can still be loaded with dlopen() (see
# src/heap/smheap_tls.c).  Listed before libmpi, which links against it.
lib_LTLIBRARIES += lib/libsmheap_tls.la
lib_libsmheap_tls_la_SOURCES = src/heap/smheap_tls.c
lib_libsmheap_tls_la_LDFLAGS = -version-info 0:0:0
pmpi_convenience_libs += lib/libsmheap_tls.la

# The malloc family for processes whose load order puts libc's ahead of libmpi (a program
# that reaches MPI through another library, or loads libmpi with dlopen): mpiexec preloads
# it (maint/patches/0008), and the heap attaches to it when libmpi loads
# (src/heap/smheap_preload.c).  Unversioned: the proxy names the file.  It must depend on
# libc alone, since it is preloaded into every process mpiexec starts.
lib_LTLIBRARIES += lib/libsmheap_preload.la
lib_libsmheap_preload_la_SOURCES = src/heap/smheap_preload.c src/heap/smheap_glibc.c
lib_libsmheap_preload_la_LDFLAGS = -avoid-version -Wl,--as-needed

# libmpifort carries the malloc family too, forwarded to the heap: a Fortran program that
# calls only libmpifort loads libmpi after libc (src/heap/smheap_family.h says why).  Not
# with a separate profiling library, which compiles the F77 sources in as well.
if BUILD_F77_BINDING
if !BUILD_PROFILING_LIB
mpi_f77_sources += src/heap/smheap_forward.c
endif !BUILD_PROFILING_LIB
endif BUILD_F77_BINDING

# Debian's MPICH 4.0.2 (libmpich12) has this ABI under its own library names: a program built
# with Debian's libmpich-dev loads libmpich.so.12 (libmpichfort.so.12, libmpichcxx.so.12 for
# Fortran and C++), so these names let it run on this MPICH without relinking.
INSTALL_DATA_LOCAL_TARGETS += smheap-install-debian-names
smheap-install-debian-names:
	$(MKDIR_P) $(DESTDIR)$(libdir)
	cd $(DESTDIR)$(libdir) && $(LN_S) -f lib@MPILIBNAME@.so.12 libmpich.so.12
if BUILD_F77_BINDING
	cd $(DESTDIR)$(libdir) && $(LN_S) -f lib@MPIFCLIBNAME@.so.12 libmpichfort.so.12
endif BUILD_F77_BINDING
if BUILD_CXX_BINDING
	cd $(DESTDIR)$(libdir) && $(LN_S) -f lib@MPICXXLIBNAME@.so.12 libmpichcxx.so.12
endif BUILD_CXX_BINDING

endif BUILD_CH3_SMHEAP

[#] start of __file__
dnl ch3:smheap -- a shared-heap channel for ch3 (single-copy inside a node, libfabric or
dnl sockets between nodes).  It reuses MPICH's node-wide shared-memory helpers (src/mpid/common/shm), ch3's
dnl socket utilities (src/mpid/ch3/util/sock) and ch3:sock's socket layer.
dnl MPICH_SUBCFG_BEFORE=src/mpid/common/shm
dnl MPICH_SUBCFG_BEFORE=src/mpid/ch3/util/sock

AC_DEFUN([PAC_SUBCFG_PREREQ_]PAC_SUBCFG_AUTO_SUFFIX,[
    AM_CONDITIONAL([BUILD_CH3_SMHEAP],[test "X$device_name" = "Xch3" -a "X$channel_name" = "Xsmheap"])
    AM_COND_IF([BUILD_CH3_SMHEAP],[
        AC_MSG_NOTICE([RUNNING PREREQ FOR ch3:smheap])
        MPID_MAX_THREAD_LEVEL=MPI_THREAD_MULTIPLE
        build_mpid_common_shm=yes
        build_ch3u_sock=yes
    ])
])dnl

AC_DEFUN([PAC_SUBCFG_BODY_]PAC_SUBCFG_AUTO_SUFFIX,[
    AC_SUBST([SMHEAP_JEMALLOC_LIB])
    AM_COND_IF([BUILD_CH3_SMHEAP],[
        AC_MSG_NOTICE([RUNNING CONFIGURE FOR ch3:smheap])
        AC_CHECK_HEADERS([linux/futex.h sys/syscall.h],[],
                         [AC_MSG_ERROR([ch3:smheap needs Linux futexes (linux/futex.h)])])
        dnl what ch3:sock's socket layer (sock.c) looks for
        AC_CHECK_HEADERS([poll.h sys/poll.h netinet/in.h netinet/tcp.h netdb.h sys/uio.h])
        dnl The shared heap's engine: jemalloc built with the prefix smheap_je_ (the
        dnl project's maint/setup.sh builds it from Debian's source package).
        AC_ARG_WITH([smheap-jemalloc],
            [AS_HELP_STRING([--with-smheap-jemalloc=DIR],
                [jemalloc build directory (configured --with-jemalloc-prefix=smheap_je_) for ch3:smheap's shared heap])],
            [], [with_smheap_jemalloc=no])
        AS_IF([test ! -f "$with_smheap_jemalloc/lib/libjemalloc_pic.a"],
              [AC_MSG_ERROR([ch3:smheap needs --with-smheap-jemalloc=DIR, a jemalloc build configured with --with-jemalloc-prefix=smheap_je_ (maint/setup.sh makes one)])])
        dnl Between nodes: libfabric (Debian's libfabric-dev) beside ch3's sockets, found
        dnl as ch3:nemesis's ofi netmod finds it (--with-ofi=DIR for another install).
        PAC_CHECK_HEADER_LIB_FATAL(ofi, rdma/fabric.h, fabric, fi_getinfo)
        PAC_APPEND_FLAG([-I$with_smheap_jemalloc/include], [CPPFLAGS])
        SMHEAP_JEMALLOC_LIB="$with_smheap_jemalloc/lib/libjemalloc_pic.a"
    ])
])dnl

[#] end of __file__

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

dnl SMHEAP_OFI_SYMVER(function): the version of libfabric's function that the program just
dnl linked binds (empty for a library without symbol versions), as SMHEAP_OFI_VERSION_<FUNCTION>.
AC_DEFUN([SMHEAP_OFI_SYMVER],[
    smheap_ofi_version_$1=`${READELF:-readelf} -W --dyn-syms conftest$ac_exeext |
        sed -n '/ $1@/{s/.* $1@\(@<:@^ @:>@*\).*/\1/p;q}'`
    AS_IF([test -n "$smheap_ofi_version_fi_getinfo" -a -z "$smheap_ofi_version_$1"],
          [AC_MSG_ERROR([cannot read the symbol version of libfabric's $1 with ${READELF:-readelf}])])
    AC_DEFINE_UNQUOTED(AS_TR_CPP([SMHEAP_OFI_VERSION_$1]), ["$smheap_ofi_version_$1"],
                       [the symbol version of libfabric's $1 that ch3:smheap loads])
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
        dnl libmpi does not link it: jobs that span nodes load it (net/smheap_ofi_lib.c says
        dnl why) by the name and the symbol versions a program linked here binds.
        PAC_SET_HEADER_LIB_PATH(ofi)
        AC_SEARCH_LIBS([dlvsym], [dl])
        PAC_CHECK_HEADER_LIB([rdma/fabric.h], [fabric], [fi_getinfo], [:],
            [AC_MSG_ERROR([rdma/fabric.h or libfabric not found (Debian: libfabric-dev); --with-ofi=DIR names another install])])
        AC_MSG_CHECKING([for the name and symbol versions of libfabric])
        smheap_save_LIBS=$LIBS
        LIBS="-lfabric $LIBS"
        AC_LINK_IFELSE([AC_LANG_PROGRAM([#include <rdma/fabric.h>],
                [[fi_getinfo(0, 0, 0, 0, 0, 0); fi_freeinfo(0); fi_dupinfo(0);
                  fi_fabric(0, 0, 0); fi_strerror(0); return (int) fi_version();]])],
            [smheap_ofi_library=`${OBJDUMP:-objdump} -p conftest$ac_exeext | sed -n 's/^ *NEEDED *\(libfabric\..*\)$/\1/p'`
             SMHEAP_OFI_SYMVER([fi_getinfo])
             SMHEAP_OFI_SYMVER([fi_freeinfo])
             SMHEAP_OFI_SYMVER([fi_dupinfo])
             SMHEAP_OFI_SYMVER([fi_fabric])
             SMHEAP_OFI_SYMVER([fi_strerror])
             SMHEAP_OFI_SYMVER([fi_version])],
            [smheap_ofi_library=""])
        LIBS=$smheap_save_LIBS
        AS_IF([test -z "$smheap_ofi_library"],
              [AC_MSG_ERROR([cannot link a program with libfabric, or read its name with ${OBJDUMP:-objdump} -p])])
        AC_MSG_RESULT([$smheap_ofi_library, fi_getinfo@$smheap_ofi_version_fi_getinfo])
        AC_DEFINE_UNQUOTED([SMHEAP_OFI_LIBRARY], ["$smheap_ofi_library"],
                           [the libfabric that ch3:smheap loads for jobs that span nodes])
        PAC_APPEND_FLAG([-I$with_smheap_jemalloc/include], [CPPFLAGS])
        SMHEAP_JEMALLOC_LIB="$with_smheap_jemalloc/lib/libjemalloc_pic.a"
    ])
])dnl

[#] end of __file__

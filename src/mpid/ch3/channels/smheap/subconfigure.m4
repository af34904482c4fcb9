[#] start of __file__
dnl ch3:smheap -- a shared-heap channel for ch3 (one node, single-copy).
dnl It reuses MPICH's node-wide shared-memory helpers (src/mpid/common/shm).
dnl MPICH_SUBCFG_BEFORE=src/mpid/common/shm

AC_DEFUN([PAC_SUBCFG_PREREQ_]PAC_SUBCFG_AUTO_SUFFIX,[
    AM_CONDITIONAL([BUILD_CH3_SMHEAP],[test "X$device_name" = "Xch3" -a "X$channel_name" = "Xsmheap"])
    AM_COND_IF([BUILD_CH3_SMHEAP],[
        AC_MSG_NOTICE([RUNNING PREREQ FOR ch3:smheap])
        MPID_MAX_THREAD_LEVEL=MPI_THREAD_MULTIPLE
        build_mpid_common_shm=yes
    ])
])dnl

AC_DEFUN([PAC_SUBCFG_BODY_]PAC_SUBCFG_AUTO_SUFFIX,[
    AM_COND_IF([BUILD_CH3_SMHEAP],[
        AC_MSG_NOTICE([RUNNING CONFIGURE FOR ch3:smheap])
        AC_CHECK_HEADERS([linux/futex.h sys/syscall.h],[],
                         [AC_MSG_ERROR([ch3:smheap needs Linux futexes (linux/futex.h)])])
    ])
])dnl

[#] end of __file__

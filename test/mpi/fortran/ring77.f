C     Fixed-form Fortran with mpif.h: a ring of 4 MiB messages between static arrays, which
C     lie outside the shared heap.  The data arrive intact, and the channel's counters show
C     the fallback for such buffers on one node: through the kernel (staged through the rings
C     where it does not allow that), never single-copy from the heap.
C     The program calls only libmpifort, the case where libmpi loads after libc: the shared
C     heap must still serve malloc.
      program ring77
      implicit none
      include 'mpif.h'
      integer n, rounds
      parameter (n = 524288, rounds = 3)
      double precision sbuf(n), rbuf(n)
      integer rank, nranks, left, right, ierr, i, r, errs, total
      integer status(MPI_STATUS_SIZE), local, enabled
      integer*8 shared, sc0, sc1, st0, st1, cm0, cm1
      save sbuf, rbuf

      call mpi_init(ierr)
      call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
      call mpi_comm_size(MPI_COMM_WORLD, nranks, ierr)
      right = mod(rank + 1, nranks)
      left = mod(rank + nranks - 1, nranks)
      errs = 0
      call smheap_same_node(rank, right, local)
      call smheap_heap_enabled(enabled)
      call smheap_pvar('smheap_heap_shared', 18, shared)
      if (enabled .eq. 1 .and. shared .ne. 1) then
         errs = errs + 1
         print *, 'the shared heap is enabled but does not serve malloc'
      end if
      call smheap_pvar('smheap_single_copy_msgs', 23, sc0)
      if (sc0 .lt. 0) then
         errs = errs + 1
         print *, 'no smheap counters: this MPI is not ch3:smheap'
      end if
      call smheap_pvar('smheap_staged_msgs', 18, st0)
      call smheap_pvar('smheap_cma_msgs', 15, cm0)

      do r = 1, rounds
         do i = 1, n
            sbuf(i) = dble(rank) * 1.0d7 + dble(r) * 1.0d6 + dble(i)
            rbuf(i) = -1.0d0
         end do
         call mpi_sendrecv(sbuf, n, MPI_DOUBLE_PRECISION, right, r,
     &                     rbuf, n, MPI_DOUBLE_PRECISION, left, r,
     &                     MPI_COMM_WORLD, status, ierr)
         do i = 1, n
            if (rbuf(i) .ne. dble(left) * 1.0d7 + dble(r) * 1.0d6
     &                       + dble(i)) then
               errs = errs + 1
               print *, 'round', r, 'element', i, 'is', rbuf(i)
               goto 10
            end if
         end do
 10      continue
      end do

      call smheap_pvar('smheap_single_copy_msgs', 23, sc1)
      call smheap_pvar('smheap_staged_msgs', 18, st1)
      call smheap_pvar('smheap_cma_msgs', 15, cm1)
      if (sc1 .ne. sc0) then
         errs = errs + 1
         print *, 'static arrays went single-copy', sc1 - sc0, 'times'
      end if
      if (local .eq. 1 .and. st1 - st0 + cm1 - cm0 .ne. rounds) then
         errs = errs + 1
         print *, 'staged', st1 - st0, 'and through the kernel',
     &            cm1 - cm0, 'of', rounds, 'sends on one node'
      end if

      call mpi_reduce(errs, total, 1, MPI_INTEGER, MPI_SUM, 0,
     &                MPI_COMM_WORLD, ierr)
      if (rank .eq. 0) then
         if (total .eq. 0) then
            print *, 'No Errors'
         else
            print *, 'Found', total, 'errors'
         end if
      end if
      call mpi_finalize(ierr)
      end

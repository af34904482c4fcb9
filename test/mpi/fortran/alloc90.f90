! Free-form Fortran with the mpi module: gfortran's ALLOCATE and the reallocation of an
! array on assignment (array = [array, more]) take their memory from malloc and realloc, so
! with the heap on the arrays lie in the shared heap and 4 MiB messages between them move by
! single copy; the data arrive intact through blocking and nonblocking calls and into a
! strided receive.  The channel's counters are read through counters.c.
program alloc90
  use mpi
  implicit none
  integer, parameter :: n = 524288, rounds = 3
  double precision, allocatable :: sbuf(:), rbuf(:), grown(:), wide(:)
  integer :: rank, nranks, left, right, ierr, r, i, errs, total, local, vec
  integer :: reqs(2), inheap(4), enabled
  integer(8) :: shared, sc0, sc1, bytes

  call mpi_init(ierr)
  call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
  call mpi_comm_size(MPI_COMM_WORLD, nranks, ierr)
  right = mod(rank + 1, nranks)
  left = mod(rank + nranks - 1, nranks)
  errs = 0
  call smheap_same_node(rank, right, local)
  call smheap_pvar('smheap_heap_shared', 18, shared)
  if (shared < 0) then
    errs = errs + 1
    print *, 'no smheap counters: this MPI is not ch3:smheap'
  end if
  call smheap_heap_enabled(enabled)
  if (enabled == 1 .and. shared /= 1) then
    errs = errs + 1
    print *, 'the shared heap is enabled but does not serve malloc'
  end if

  allocate(sbuf(n), rbuf(n), wide(2 * n))
  allocate(grown(0))
  do r = 1, 16                          ! grown by reallocation on assignment to n elements
    grown = [grown, (dble(rank) + dble(i), i = (r - 1) * (n / 16) + 1, r * (n / 16))]
  end do
  bytes = 8_8 * n
  call smheap_in_heap(sbuf, bytes, inheap(1))
  call smheap_in_heap(rbuf, bytes, inheap(2))
  call smheap_in_heap(grown, bytes, inheap(3))
  call smheap_in_heap(wide, 2 * bytes, inheap(4))
  if (shared == 1 .and. any(inheap == 0)) then
    errs = errs + 1
    print *, 'allocatable arrays outside the shared heap:', inheap
  end if
  if (shared /= 1 .and. any(inheap == 1)) then
    errs = errs + 1
    print *, 'heap off, yet arrays in a shared heap:', inheap
  end if

  call smheap_pvar('smheap_single_copy_msgs', 23, sc0)
  do r = 1, rounds
    sbuf = [(dble(rank) * 1.0d7 + dble(r) * 1.0d6 + dble(i), i = 1, n)]
    rbuf = -1
    if (mod(r, 2) == 1) then
      call mpi_sendrecv(sbuf, n, MPI_DOUBLE_PRECISION, right, r, rbuf, n, &
                        MPI_DOUBLE_PRECISION, left, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    else
      call mpi_irecv(rbuf, n, MPI_DOUBLE_PRECISION, left, r, MPI_COMM_WORLD, reqs(1), ierr)
      call mpi_isend(sbuf, n, MPI_DOUBLE_PRECISION, right, r, MPI_COMM_WORLD, reqs(2), ierr)
      call mpi_waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
    end if
    do i = 1, n
      if (rbuf(i) /= dble(left) * 1.0d7 + dble(r) * 1.0d6 + dble(i)) then
        errs = errs + 1
        print *, 'round', r, 'element', i, 'is', rbuf(i)
        exit
      end if
    end do
  end do

  ! The grown array, into every other element of a wider one.
  call mpi_type_vector(n, 1, 2, MPI_DOUBLE_PRECISION, vec, ierr)
  call mpi_type_commit(vec, ierr)
  wide = -1
  call mpi_sendrecv(grown, n, MPI_DOUBLE_PRECISION, right, 99, wide, 1, vec, left, 99, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call mpi_type_free(vec, ierr)
  if (any(wide(1:2*n:2) /= [(dble(left) + dble(i), i = 1, n)]) .or. any(wide(2:2*n:2) /= -1)) then
    errs = errs + 1
    print *, 'strided receive of the grown array differs'
  end if

  call smheap_pvar('smheap_single_copy_msgs', 23, sc1)
  if (local == 1 .and. shared == 1 .and. sc1 - sc0 /= rounds + 1) then
    errs = errs + 1
    print *, 'single-copy sends:', sc1 - sc0, 'want', rounds + 1
  end if
  if ((local /= 1 .or. shared /= 1) .and. sc1 /= sc0) then
    errs = errs + 1
    print *, 'single-copy sends without a shared heap between the pair:', sc1 - sc0
  end if

  deallocate(sbuf, rbuf, grown, wide)
  call mpi_reduce(errs, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (total == 0) then
      print *, 'No Errors'
    else
      print *, 'Found', total, 'errors'
    end if
  end if
  call mpi_finalize(ierr)
end program alloc90

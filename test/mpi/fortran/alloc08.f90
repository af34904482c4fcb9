! Fortran 2008 with the mpi_f08 module: allocatable arrays move by single copy between ranks
! that share the heap (nonblocking ring), and a 1 MiB Allreduce of allocatable arrays runs
! the shared-heap collective when the world is on one node.  The channel's counters are read
! through counters.c, declared here with bind(C).
program alloc08
  use mpi_f08
  use, intrinsic :: iso_c_binding
  implicit none
  interface
    subroutine smheap_pvar(name, length, val) bind(C, name='smheap_pvar_')
      import :: c_char, c_int, c_long_long
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int), intent(in) :: length
      integer(c_long_long), intent(out) :: val
    end subroutine
    subroutine smheap_in_heap(p, bytes, yes) bind(C, name='smheap_in_heap_')
      import :: c_ptr, c_long_long, c_int
      type(c_ptr), value :: p
      integer(c_long_long), intent(in) :: bytes
      integer(c_int), intent(out) :: yes
    end subroutine
    subroutine smheap_heap_enabled(on) bind(C, name='smheap_heap_enabled_')
      import :: c_int
      integer(c_int), intent(out) :: on
    end subroutine
    subroutine smheap_same_node(a, b, yes) bind(C, name='smheap_same_node_')
      import :: c_int
      integer(c_int), intent(in) :: a, b
      integer(c_int), intent(out) :: yes
    end subroutine
  end interface
  integer, parameter :: n = 524288, rounds = 4, m = 131072
  real(c_double), allocatable, target :: sbuf(:), rbuf(:), part(:), sums(:)
  integer :: rank, nranks, left, right, r, i, errs, total
  integer(c_int) :: local, with_root, all_local, inheap(2), enabled
  integer(c_long_long) :: shared, sc0, sc1, coll0, coll1
  type(MPI_Request) :: reqs(2)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  right = mod(rank + 1, nranks)
  left = mod(rank + nranks - 1, nranks)
  errs = 0
  call smheap_same_node(int(rank, c_int), int(right, c_int), local)
  call smheap_same_node(int(rank, c_int), 0_c_int, with_root)
  call MPI_Allreduce(with_root, all_local, 1, MPI_INTEGER, MPI_LAND, MPI_COMM_WORLD)
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

  allocate(sbuf(n), rbuf(n), part(m), sums(m))
  call smheap_in_heap(c_loc(sbuf), 8_c_long_long * n, inheap(1))
  call smheap_in_heap(c_loc(sums), 8_c_long_long * m, inheap(2))
  if ((shared == 1) .neqv. all(inheap == 1)) then
    errs = errs + 1
    print *, 'heap shared:', shared, 'arrays in it:', inheap
  end if

  call smheap_pvar('smheap_single_copy_msgs', 23, sc0)
  do r = 1, rounds
    sbuf = [(real(rank, c_double) * 1.0d7 + r * 1.0d6 + i, i = 1, n)]
    rbuf = -1
    call MPI_Irecv(rbuf, n, MPI_DOUBLE_PRECISION, left, r, MPI_COMM_WORLD, reqs(1))
    call MPI_Isend(sbuf, n, MPI_DOUBLE_PRECISION, right, r, MPI_COMM_WORLD, reqs(2))
    call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
    if (any(rbuf /= [(real(left, c_double) * 1.0d7 + r * 1.0d6 + i, i = 1, n)])) then
      errs = errs + 1
      print *, 'round', r, 'data differ'
    end if
  end do
  call smheap_pvar('smheap_single_copy_msgs', 23, sc1)
  if (local == 1 .and. shared == 1 .and. sc1 - sc0 /= rounds) then
    errs = errs + 1
    print *, 'single-copy sends:', sc1 - sc0, 'want', rounds
  end if
  if ((local /= 1 .or. shared /= 1) .and. sc1 /= sc0) then
    errs = errs + 1
    print *, 'single-copy sends without a shared heap between the pair:', sc1 - sc0
  end if

  call smheap_pvar('smheap_coll_shared', 18, coll0)
  part = [(real(rank + i, c_double), i = 1, m)]
  call MPI_Allreduce(part, sums, m, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  call smheap_pvar('smheap_coll_shared', 18, coll1)
  if (any(sums /= [(real(nranks * (nranks - 1) / 2 + nranks * i, c_double), i = 1, m)])) then
    errs = errs + 1
    print *, 'Allreduce of allocatable arrays differs'
  end if
  if (all_local == 1 .and. shared == 1 .and. coll1 - coll0 /= 1) then
    errs = errs + 1
    print *, 'shared-heap collectives run:', coll1 - coll0, 'want 1'
  end if

  deallocate(sbuf, rbuf, part, sums)
  call MPI_Reduce(errs, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
  if (rank == 0) then
    if (total == 0) then
      print *, 'No Errors'
    else
      print *, 'Found', total, 'errors'
    end if
  end if
  call MPI_Finalize()
end program alloc08

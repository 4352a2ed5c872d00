! fortran_compress.f90 -- a Fortran program (use mpi_f08) sums REAL and
! DOUBLE PRECISION gradients with MPI_IN_PLACE, as a training loop does.
! Run with SPARCML_COMPRESS, SPARCML_COMPRESS_MIN_BYTES=4096 and
! SPARCML_COMPRESS_DENSITY=1 (tests/scripts/fortran.sh): every entry is
! sent, so each sum is exact (small integers), and SPARCML_VERBOSE shows
! the calls were compressed.  Prints failures=N on rank 0.
program fortran_compress
  use mpi_f08
  implicit none
  integer, parameter :: n = 4096
  real :: g(n)
  double precision :: h(n)
  integer :: rank, nranks, i, step, failures, total
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  failures = 0
  do step = 1, 3
    do i = 1, n
      g(i) = real(mod(i * (rank + 1) + step, 7) - 3)
      h(i) = dble(g(i))
    end do
    call MPI_Allreduce(MPI_IN_PLACE, g, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD)
    call MPI_Allreduce(MPI_IN_PLACE, h, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
    do i = 1, n
      if (g(i) /= expected(i, step) .or. h(i) /= dble(expected(i, step))) failures = failures + 1
    end do
  end do
  call MPI_Reduce(failures, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
  if (rank == 0) print '(a,i0)', 'failures=', total
  call MPI_Finalize()
contains
  real function expected(i, step)
    integer, intent(in) :: i, step
    integer :: r
    expected = 0
    do r = 0, nranks - 1
      expected = expected + real(mod(i * (r + 1) + step, 7) - 3)
    end do
  end function expected
end program fortran_compress

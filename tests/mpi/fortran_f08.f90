! fortran_f08.f90 -- the same as fortran_inplace.f90 through the mpi_f08
! module: tag a datatype with MPI_Type_set_name, MPI_Allreduce with
! MPI_IN_PLACE on a dense float stream written by hand (sparcml-stream(7)).
! Under Open MPI the module calls the library's ompi_*_f functions, which
! the shim takes over (src/shim/fortran_openmpi.c); under MPICH the C functions.
program fortran_f08
  use mpi_f08
  implicit none
  integer, parameter :: n = 10
  integer :: ierr, rank, nprocs, i, nwords
  type(MPI_Datatype) :: stype
  integer(8) :: bad(1)
  integer(8), allocatable :: buf(:)
  real(4) :: vals(n), expect

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  call MPI_Type_contiguous(8, MPI_BYTE, stype, ierr)
  call MPI_Type_commit(stype, ierr)
  call MPI_Type_set_name(stype, 'sparcml:v1:float', ierr)

  nwords = (32 + n * 4 + 8 + 7) / 8
  allocate(buf(nwords))
  ! magic "SPCM", version 1, value type 1 (float), index width 4, format 1 (dense)
  buf(1) = int(z'4d435053', 8) + ishft(1_8, 32) + ishft(1_8, 40) + ishft(4_8, 48) + ishft(1_8, 56)
  buf(2) = n
  buf(3) = n
  buf(4) = 0
  do i = 1, n
    vals(i) = real(rank + i, 4)
  end do
  buf(5:nwords) = 0
  buf(5:4 + (n + 1) / 2) = transfer(vals, buf(5:5), (n + 1) / 2)

  call MPI_Allreduce(MPI_IN_PLACE, buf, nwords, stype, MPI_SUM, MPI_COMM_WORLD, ierr)

  vals = transfer(buf(5:4 + (n + 1) / 2), vals, n)
  bad = 0
  if (ierr /= MPI_SUCCESS) bad = 1
  if (buf(2) /= n .or. buf(3) /= n) bad = 1
  do i = 1, n
    expect = real(nprocs * i + nprocs * (nprocs - 1) / 2, 4)
    if (vals(i) /= expect) bad = 1
  end do
  call MPI_Allreduce(MPI_IN_PLACE, bad, 1, MPI_INTEGER8, MPI_MAX, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,i0,a,i0)', 'fortran_f08: P=', nprocs, ' failures=', bad(1)
  call MPI_Type_free(stype, ierr)
  call MPI_Finalize(ierr)
  if (bad(1) /= 0) stop 1
end program fortran_f08

! A user's Fortran program: `use mpi` plus the mpicast module of the installed package
! (its include directory holds mpicast.mod). Every rank checks its data, and with
! TC_EXPECT=mcast that its broadcasts and barriers went by multicast.
program consumer_f
  use mpi
  use mpicast
  implicit none
  integer, parameter :: N = 20000
  integer :: a(N), ierr, rank, nprocs, root, i, bad
  type(MPICAST_Stats) :: s
  character(len=16) :: expect
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  bad = 0
  do root = 0, nprocs - 1
    a = 0
    if (rank == root) a = [(i * 7 + root, i = 1, N)]
    call MPI_Bcast(a, N, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    do i = 1, N
      if (a(i) /= i * 7 + root) bad = bad + 1
    end do
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
  end do
  if (MPICAST_Get_stats(s) /= MPICAST_OK) bad = bad + 1
  call get_environment_variable('TC_EXPECT', expect)
  if (trim(expect) == 'mcast' .and. (s%bcast_mcast < nprocs .or. s%barrier_mcast < nprocs)) then
    print '(a, i0, a)', 'rank ', rank, ': TC_EXPECT=mcast but not every call was multicast'
    bad = bad + 1
  end if
  if (bad /= 0) call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  if (rank == 0) print '(a, i0, a, i0)', 'consumer_f: ok, bcast_mcast=', s%bcast_mcast, &
      ' barrier_mcast=', s%barrier_mcast
  call MPI_Finalize(ierr)
end program consumer_f

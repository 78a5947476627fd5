! MPICAST_Mmcast from Fortran (`use mpi` or, with -DTC_F08, `use mpi_f08`; linked builds, the
! `mpicast` module gives the call). Each round every rank multicasts NI integers to the ranks
! k+1 .. k+m after it (wrapping, m = 1 + mod(round, nprocs - 1)) and receives from the m ranks
! before it, at displacements that leave a gap of one integer; every element and every gap
! is checked against the sender's pattern.
#ifdef TC_F08
#define COMM_T type(MPI_Comm)
#define HVAL(h) h%MPI_VAL
#else
#define COMM_T integer
#define HVAL(h) h
#endif
program f_mmcast
#if defined(TC_F08)
  use mpi_f08
#else
  use mpi
#endif
  use tc_fortran
  use mpicast
  use, intrinsic :: iso_c_binding
  implicit none
  integer, parameter :: NI = 300, ROUNDS = 12
  integer :: ierr, rank, nprocs, round, m, k, i, src
  COMM_T :: comm
  integer(c_intptr_t) :: ccomm, cint
  integer(c_int), allocatable, target :: sendbuf(:), recvbuf(:)
  integer(c_int), allocatable :: dests(:), sources(:), counts(:), displs(:)
  integer(c_int) :: rc
  character(len=160) :: msg

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  if (nprocs < 2) then
    if (rank == 0) print '(a)', 'f_mmcast: needs 2 ranks or more'
    call MPI_Finalize(ierr)
    stop 77
  end if
  call MPI_Comm_dup(MPI_COMM_WORLD, comm, ierr)
  ccomm = MPICAST_Comm_f2c(HVAL(comm))
  cint = MPICAST_Type_f2c(HVAL(MPI_INTEGER))
  allocate(sendbuf(NI), recvbuf((NI + 1) * nprocs))
  allocate(dests(nprocs), sources(nprocs), counts(nprocs), displs(nprocs))
  do round = 0, ROUNDS - 1
    m = 1 + mod(round, nprocs - 1)
    do i = 1, NI
      sendbuf(i) = rank * 100000 + round * 1000 + i
    end do
    do k = 1, m
      dests(k) = mod(rank + k, nprocs)
      sources(k) = mod(rank - k + nprocs, nprocs)
      counts(k) = NI
      displs(k) = (k - 1) * (NI + 1)
    end do
    recvbuf = -1
    rc = MPICAST_Mmcast(c_loc(sendbuf), NI, cint, dests, m, c_loc(recvbuf), counts, displs, &
                        cint, sources, m, ccomm)
    if (rc /= MPICAST_OK) then
      write (msg, '(a, i0, a, i0)') 'f_mmcast: MPICAST_Mmcast returned ', rc, ' in round ', round
      call tc_fail(trim(msg))
    end if
    do k = 1, m
      src = sources(k)
      do i = 1, NI
        if (recvbuf(displs(k) + i) /= src * 100000 + round * 1000 + i) then
          write (msg, '(a, i0, a, i0, a, i0)') 'f_mmcast: round ', round, ' from ', src, &
            ' element ', i
          call tc_fail(trim(msg))
        end if
      end do
      if (recvbuf(displs(k) + NI + 1) /= -1) call tc_fail('f_mmcast: a gap was written')
    end do
  end do
  call MPI_Comm_free(comm, ierr)
  if (rank == 0) print '(a, i0, a)', 'f_mmcast: ', ROUNDS, ' rounds checked'
  call MPI_Finalize(ierr)
end program f_mmcast

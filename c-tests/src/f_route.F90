! One Fortran call, named by the first argument (bcast, barrier, bcast_large, init,
! init_thread: the program initialises with MPI_Init_thread instead of MPI_Init; finalize:
! MPI_Init and MPI_Finalize only, which every run makes), through
! mpif.h (-DTC_MPIF_H), `use mpi` (default) or `use mpi_f08` (-DTC_F08). Run by
! scripts/fortran_route.sh with route_probe.c preloaded: which C entry points does the
! host's binding reach?
program f_route
#if defined(TC_F08)
  use mpi_f08
#elif !defined(TC_MPIF_H)
  use mpi
#endif
  implicit none
#ifdef TC_MPIF_H
  include 'mpif.h'
#endif
  integer :: ierr, a(1000), provided
  character(len=32) :: what
#ifdef TC_LARGE_COUNT
  integer(kind=MPI_COUNT_KIND) :: n
#endif
  call get_command_argument(1, what)
  if (trim(what) == 'init_thread') then
    call MPI_Init_thread(MPI_THREAD_FUNNELED, provided, ierr)
  else
    call MPI_Init(ierr)
  end if
  a = 7
  select case (trim(what))
  case ('init', 'init_thread', 'finalize')
  case ('bcast')
    call MPI_Bcast(a, 1000, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  case ('barrier')
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
#ifdef TC_LARGE_COUNT
  case ('bcast_large')
    n = 1000
    call MPI_Bcast(a, n, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
#endif
  case default
    print '(a)', 'f_route: unknown call ' // trim(what)
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end select
  call MPI_Finalize(ierr)
end program f_route

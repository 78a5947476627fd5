! One Fortran call, named by the first argument (bcast, barrier, bcast_large, init,
! init_thread: the program initialises with MPI_Init_thread instead of MPI_Init; finalize:
! MPI_Init and MPI_Finalize only, which every run makes; the receive, completion and probe
! calls of dynamic broadcast: recv, irecv, wait, test, waitall, testall, waitany, testany,
! waitsome, testsome, iprobe, probe, cancel, request_free, request_get_status, where rank 1
! sends rank 0 one message that rank 0 receives through the call), through
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
  integer :: ierr, a(1000), provided, rank, idx, outc, ids(2)
  logical :: flag
#ifdef TC_F08
  type(MPI_Request) :: r, rs(2)
  type(MPI_Status) :: st, sts(2)
#else
  integer :: r, rs(2), st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 2)
#endif
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
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
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
  case ('recv', 'irecv', 'wait', 'test', 'waitall', 'testall', 'waitany', 'testany', &
        'waitsome', 'testsome', 'iprobe', 'probe', 'cancel', 'request_free', &
        'request_get_status')
    if (rank == 1) call MPI_Send(a, 10, MPI_INTEGER, 0, 1, MPI_COMM_WORLD, ierr)
    if (rank == 0) call receive(trim(what))
  case default
    print '(a)', 'f_route: unknown call ' // trim(what)
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end select
  call MPI_Finalize(ierr)

contains

  ! Rank 0 receives rank 1's message (tag 1) through `call`.
  subroutine receive(call)
    character(*), intent(in) :: call
    select case (call)
    case ('recv')
      call MPI_Recv(a, 10, MPI_INTEGER, 1, 1, MPI_COMM_WORLD, st, ierr)
    case ('irecv', 'wait')
      call MPI_Irecv(a, 10, MPI_INTEGER, 1, 1, MPI_COMM_WORLD, r, ierr)
      call MPI_Wait(r, st, ierr)
    case ('test')
      call MPI_Irecv(a, 10, MPI_INTEGER, 1, 1, MPI_COMM_WORLD, r, ierr)
      flag = .false.
      do while (.not. flag)
        call MPI_Test(r, flag, st, ierr)
      end do
    case ('iprobe')
      flag = .false.
      do while (.not. flag)
        call MPI_Iprobe(1, 1, MPI_COMM_WORLD, flag, st, ierr)
      end do
      call MPI_Recv(a, 10, MPI_INTEGER, 1, 1, MPI_COMM_WORLD, st, ierr)
    case ('probe')
      call MPI_Probe(1, 1, MPI_COMM_WORLD, st, ierr)
      call MPI_Recv(a, 10, MPI_INTEGER, 1, 1, MPI_COMM_WORLD, st, ierr)
    case ('cancel')
      call MPI_Irecv(a, 10, MPI_INTEGER, 1, 2, MPI_COMM_WORLD, r, ierr)
      call MPI_Cancel(r, ierr)
      call MPI_Wait(r, st, ierr)
      call MPI_Recv(a, 10, MPI_INTEGER, 1, 1, MPI_COMM_WORLD, st, ierr)
    case ('request_free', 'request_get_status')
      call MPI_Irecv(a, 10, MPI_INTEGER, 1, 1, MPI_COMM_WORLD, r, ierr)
      flag = .false.
      do while (.not. flag)
        call MPI_Request_get_status(r, flag, st, ierr)
      end do
      call MPI_Request_free(r, ierr)
    case default
      call MPI_Irecv(a, 10, MPI_INTEGER, 1, 1, MPI_COMM_WORLD, rs(1), ierr)
      rs(2) = MPI_REQUEST_NULL
      flag = .false.
      outc = 0
      select case (call)
      case ('waitall')
        call MPI_Waitall(2, rs, sts, ierr)
      case ('testall')
        do while (.not. flag)
          call MPI_Testall(2, rs, flag, sts, ierr)
        end do
      case ('waitany')
        call MPI_Waitany(2, rs, idx, st, ierr)
      case ('testany')
        do while (.not. flag)
          call MPI_Testany(2, rs, idx, flag, st, ierr)
        end do
      case ('waitsome')
        call MPI_Waitsome(2, rs, outc, ids, sts, ierr)
      case ('testsome')
        do while (outc == 0)
          call MPI_Testsome(2, rs, outc, ids, sts, ierr)
        end do
      end select
    end select
  end subroutine
end program f_route

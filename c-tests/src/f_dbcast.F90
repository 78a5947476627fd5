! Dynamic broadcast received from Fortran through mpif.h (-DTC_MPIF_H), `use mpi`, or
! `use mpi_f08` (-DTC_F08). Linked builds only (the `mpicast` module gives MPICAST_Dbcast).
! After MPICAST_Dbcast_enable on a duplicate of MPI_COMM_WORLD, a rotating root sends
! MPICAST_Dbcast to every other rank, which receive it with the plain Fortran calls:
! MPI_Recv; MPI_Irecv + MPI_Wait / an MPI_Test loop / MPI_Waitall / MPI_Waitany / an
! MPI_Testsome loop / an MPI_Testall loop; MPI_Iprobe loop or MPI_Probe, then MPI_Recv of what
! the probe saw; MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE. Every element is checked, and
! every status: MPI_SOURCE, MPI_TAG, MPI_Get_count, 1-based indices. The broadcasts are the
! only messages on that communicator, so every receive was completed by one.
#ifdef TC_F08
#define COMM_T type(MPI_Comm)
#define REQ_T type(MPI_Request)
#define STATUS_DECL(s) type(MPI_Status) :: s
#define STATUSES_DECL(s, n) type(MPI_Status) :: s(n)
#define SRC(s) s%MPI_SOURCE
#define TAG(s) s%MPI_TAG
#define SRCA(s, k) s(k)%MPI_SOURCE
#define TAGA(s, k) s(k)%MPI_TAG
#define HVAL(h) h%MPI_VAL
#else
#define COMM_T integer
#define REQ_T integer
#define STATUS_DECL(s) integer :: s(MPI_STATUS_SIZE)
#define STATUSES_DECL(s, n) integer :: s(MPI_STATUS_SIZE, n)
#define SRC(s) s(MPI_SOURCE)
#define TAG(s) s(MPI_TAG)
#define SRCA(s, k) s(MPI_SOURCE, k)
#define TAGA(s, k) s(MPI_TAG, k)
#define HVAL(h) h
#endif
program f_dbcast
#if defined(TC_F08)
  use mpi_f08
#elif !defined(TC_MPIF_H)
  use mpi
#endif
  use tc_fortran
  use mpicast
  use, intrinsic :: iso_c_binding
  implicit none
#ifdef TC_MPIF_H
  include 'mpif.h'
#endif
  integer, parameter :: NI = 1000
#if defined(TC_F08)
  character(*), parameter :: WHAT = 'f_dbcast_f08'
#elif defined(TC_MPIF_H)
  character(*), parameter :: WHAT = 'f_dbcast_mpif'
#else
  character(*), parameter :: WHAT = 'f_dbcast_usempi'
#endif
  integer :: ierr, rank, nprocs, round, root
  COMM_T :: comm
  integer(c_intptr_t) :: ccomm, cint

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  if (nprocs < 2) then
    if (rank == 0) print '(a, ": needs 2 ranks or more")', WHAT
    call MPI_Finalize(ierr)
    stop 77
  end if
  call MPI_Comm_dup(MPI_COMM_WORLD, comm, ierr)
  ccomm = MPICAST_Comm_f2c(HVAL(comm))
  cint = MPICAST_Type_f2c(HVAL(MPI_INTEGER))
  if (MPICAST_Dbcast_enable(ccomm) /= MPICAST_OK) call tc_fail('MPICAST_Dbcast_enable failed')

  do round = 0, 2 * nprocs - 1
    root = mod(round, nprocs)
    call recv_plain(root, 10 * round)
    call irecv_wait(root, 10 * round + 1)
    call irecv_test(root, 10 * round + 2)
    call irecv_waitall(root, 10 * round + 3)
    call irecv_waitany(root, 10 * round + 5)
    call irecv_testsome(root, 10 * round + 7)
    call iprobe_recv(root, 10 * round + 9)
    call probe_recv(root, 10 * round + 10)
    call irecv_testall(root, 10 * round + 11)
    call ignored_statuses(root, 10 * round + 13)
  end do

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Comm_free(comm, ierr)
  call MPI_Finalize(ierr)
  if (rank == 0) print '(a, ": ok")', WHAT

contains

  subroutine check_ierr(what)
    character(*), intent(in) :: what
    if (ierr /= MPI_SUCCESS) call tc_fail(WHAT // ': ' // what // ': ierror is not MPI_SUCCESS')
  end subroutine

  ! The root's MPICAST_Dbcast of NI integers (seed `tag`) with `tag` to every other rank; its
  ! request completes at once (the data is copied).
  subroutine send(root, tag)
    integer, intent(in) :: root, tag
    integer(c_int), target :: a(NI)
    integer(c_int) :: recips(nprocs)
    type(c_ptr) :: req
    integer :: i, k
    if (rank /= root) return
    a = [(tc_ival(tag, i), i = 1, NI)]
    k = 0
    do i = 0, nprocs - 1
      if (i /= root) then
        k = k + 1
        recips(k) = i
      end if
    end do
    if (MPICAST_Dbcast(c_loc(a), NI, cint, recips, c_null_ptr, k, tag, ccomm, req) &
        /= MPICAST_OK) call tc_fail(WHAT // ': MPICAST_Dbcast failed')
    if (MPICAST_Wait(req, c_null_ptr) /= MPICAST_OK) call tc_fail(WHAT // ': MPICAST_Wait failed')
  end subroutine

  subroutine check_data(b, tag, what)
    integer, intent(in) :: b(NI), tag
    character(*), intent(in) :: what
    integer :: i
    do i = 1, NI
      if (b(i) /= tc_ival(tag, i)) call tc_fail(WHAT // ': ' // what // ': wrong element')
    end do
  end subroutine

  ! A status says the root, the tag, and NI integers.
  subroutine check_status(src, tg, cnt, root, tag, what)
    integer, intent(in) :: src, tg, cnt, root, tag
    character(*), intent(in) :: what
    if (src /= root) call tc_fail(WHAT // ': ' // what // ': status MPI_SOURCE is not the root')
    if (tg /= tag) call tc_fail(WHAT // ': ' // what // ': status MPI_TAG is not the tag')
    if (cnt /= NI) call tc_fail(WHAT // ': ' // what // ': MPI_Get_count is not the length')
  end subroutine

  ! Both ranks' part of a round ends in a barrier on MPI_COMM_WORLD (not enabled).
  subroutine done()
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
  end subroutine

  subroutine recv_plain(root, tag)
    integer, intent(in) :: root, tag
    integer :: b(NI), cnt
    STATUS_DECL(st)
    call send(root, tag)
    if (rank /= root) then
      b = -1
      ierr = -12345
      call MPI_Recv(b, NI, MPI_INTEGER, root, tag, comm, st, ierr)
      call check_ierr('MPI_Recv')
      call MPI_Get_count(st, MPI_INTEGER, cnt, ierr)
      call check_status(SRC(st), TAG(st), cnt, root, tag, 'MPI_Recv')
      call check_data(b, tag, 'MPI_Recv')
    end if
    call done()
  end subroutine

  subroutine irecv_wait(root, tag)
    integer, intent(in) :: root, tag
    integer :: b(NI), cnt
    REQ_T :: req
    STATUS_DECL(st)
    if (rank /= root) then
      b = -1
      call MPI_Irecv(b, NI, MPI_INTEGER, MPI_ANY_SOURCE, tag, comm, req, ierr)
      call check_ierr('MPI_Irecv')
    end if
    call send(root, tag)
    if (rank /= root) then
      ierr = -12345
      call MPI_Wait(req, st, ierr)
      call check_ierr('MPI_Wait')
      if (req /= MPI_REQUEST_NULL) call tc_fail(WHAT // ': MPI_Wait left the request')
      call MPI_Get_count(st, MPI_INTEGER, cnt, ierr)
      call check_status(SRC(st), TAG(st), cnt, root, tag, 'MPI_Irecv + MPI_Wait')
      call check_data(b, tag, 'MPI_Irecv + MPI_Wait')
    end if
    call done()
  end subroutine

  subroutine irecv_test(root, tag)
    integer, intent(in) :: root, tag
    integer :: b(NI), cnt
    REQ_T :: req
    STATUS_DECL(st)
    logical :: flag
    call send(root, tag)
    if (rank /= root) then
      b = -1
      call MPI_Irecv(b, NI, MPI_INTEGER, root, MPI_ANY_TAG, comm, req, ierr)
      flag = .false.
      do while (.not. flag)
#ifdef TC_F08
        ! Without the optional ierror.
        call MPI_Test(req, flag, st)
#else
        call MPI_Test(req, flag, st, ierr)
        call check_ierr('MPI_Test')
#endif
      end do
      if (req /= MPI_REQUEST_NULL) call tc_fail(WHAT // ': MPI_Test left the request')
      call MPI_Get_count(st, MPI_INTEGER, cnt, ierr)
      call check_status(SRC(st), TAG(st), cnt, root, tag, 'MPI_Irecv + MPI_Test')
      call check_data(b, tag, 'MPI_Irecv + MPI_Test')
    end if
    call done()
  end subroutine

  ! Two broadcasts (tag, tag + 1), both receives posted first.
  subroutine irecv_waitall(root, tag)
    integer, intent(in) :: root, tag
    integer :: b(NI, 2), cnt, k
    REQ_T :: reqs(2)
    STATUSES_DECL(sts, 2)
    if (rank /= root) then
      b = -1
      do k = 1, 2
        call MPI_Irecv(b(1, k), NI, MPI_INTEGER, root, tag + k - 1, comm, reqs(k), ierr)
      end do
    end if
    call send(root, tag)
    call send(root, tag + 1)
    if (rank /= root) then
      ierr = -12345
      call MPI_Waitall(2, reqs, sts, ierr)
      call check_ierr('MPI_Waitall')
      do k = 1, 2
        if (reqs(k) /= MPI_REQUEST_NULL) call tc_fail(WHAT // ': MPI_Waitall left a request')
#ifdef TC_F08
        call MPI_Get_count(sts(k), MPI_INTEGER, cnt, ierr)
#else
        call MPI_Get_count(sts(:, k), MPI_INTEGER, cnt, ierr)
#endif
        call check_status(SRCA(sts, k), TAGA(sts, k), cnt, root, tag + k - 1, 'MPI_Waitall')
        call check_data(b(:, k), tag + k - 1, 'MPI_Waitall')
      end do
    end if
    call done()
  end subroutine

  subroutine irecv_waitany(root, tag)
    integer, intent(in) :: root, tag
    integer :: b(NI, 2), cnt, k, idx, seen
    REQ_T :: reqs(2)
    STATUS_DECL(st)
    if (rank /= root) then
      b = -1
      do k = 1, 2
        call MPI_Irecv(b(1, k), NI, MPI_INTEGER, root, tag + k - 1, comm, reqs(k), ierr)
      end do
    end if
    call send(root, tag)
    call send(root, tag + 1)
    if (rank /= root) then
      seen = 0
      do k = 1, 2
        call MPI_Waitany(2, reqs, idx, st, ierr)
        call check_ierr('MPI_Waitany')
        if (idx < 1 .or. idx > 2) call tc_fail(WHAT // ': MPI_Waitany: index not 1 or 2')
        if (reqs(idx) /= MPI_REQUEST_NULL) call tc_fail(WHAT // ': MPI_Waitany left the request')
        seen = seen + idx
        call MPI_Get_count(st, MPI_INTEGER, cnt, ierr)
        call check_status(SRC(st), TAG(st), cnt, root, tag + idx - 1, 'MPI_Waitany')
        call check_data(b(:, idx), tag + idx - 1, 'MPI_Waitany')
      end do
      if (seen /= 3) call tc_fail(WHAT // ': MPI_Waitany gave one index twice')
      ! No active request: MPI_UNDEFINED (MPICH 4.0's own mpif.h / `use mpi` binding gives
      ! MPI_UNDEFINED + 1, with or without mpicast).
      call MPI_Waitany(2, reqs, idx, st, ierr)
      if (idx /= MPI_UNDEFINED .and. idx /= MPI_UNDEFINED + 1) &
        call tc_fail(WHAT // ': MPI_Waitany of no active request')
    end if
    call done()
  end subroutine

  subroutine irecv_testsome(root, tag)
    integer, intent(in) :: root, tag
    integer :: b(NI, 2), cnt, k, j, outc, ids(2), got
    REQ_T :: reqs(2)
    STATUSES_DECL(sts, 2)
    if (rank /= root) then
      b = -1
      do k = 1, 2
        call MPI_Irecv(b(1, k), NI, MPI_INTEGER, root, tag + k - 1, comm, reqs(k), ierr)
      end do
    end if
    call send(root, tag)
    call send(root, tag + 1)
    if (rank /= root) then
      got = 0
      do while (got < 2)
        call MPI_Testsome(2, reqs, outc, ids, sts, ierr)
        call check_ierr('MPI_Testsome')
        do j = 1, outc
          k = ids(j)
          if (k < 1 .or. k > 2) call tc_fail(WHAT // ': MPI_Testsome: index not 1 or 2')
#ifdef TC_F08
          call MPI_Get_count(sts(j), MPI_INTEGER, cnt, ierr)
#else
          call MPI_Get_count(sts(:, j), MPI_INTEGER, cnt, ierr)
#endif
          call check_status(SRCA(sts, j), TAGA(sts, j), cnt, root, tag + k - 1, 'MPI_Testsome')
          call check_data(b(:, k), tag + k - 1, 'MPI_Testsome')
          got = got + 1
        end do
      end do
    end if
    call done()
  end subroutine

  subroutine irecv_testall(root, tag)
    integer, intent(in) :: root, tag
    integer :: b(NI, 2), k
    REQ_T :: reqs(2)
    STATUSES_DECL(sts, 2)
    logical :: flag
    if (rank /= root) then
      b = -1
      do k = 1, 2
        call MPI_Irecv(b(1, k), NI, MPI_INTEGER, root, tag + k - 1, comm, reqs(k), ierr)
      end do
    end if
    call send(root, tag)
    call send(root, tag + 1)
    if (rank /= root) then
      flag = .false.
      do while (.not. flag)
        call MPI_Testall(2, reqs, flag, sts, ierr)
        call check_ierr('MPI_Testall')
      end do
      do k = 1, 2
        if (SRCA(sts, k) /= root .or. TAGA(sts, k) /= tag + k - 1) &
          call tc_fail(WHAT // ': MPI_Testall: wrong status')
        call check_data(b(:, k), tag + k - 1, 'MPI_Testall')
      end do
    end if
    call done()
  end subroutine

  subroutine iprobe_recv(root, tag)
    integer, intent(in) :: root, tag
    integer :: b(NI), cnt
    STATUS_DECL(st)
    logical :: flag
    call send(root, tag)
    if (rank /= root) then
      flag = .false.
      do while (.not. flag)
        call MPI_Iprobe(root, tag, comm, flag, st, ierr)
        call check_ierr('MPI_Iprobe')
      end do
      call MPI_Get_count(st, MPI_INTEGER, cnt, ierr)
      call check_status(SRC(st), TAG(st), cnt, root, tag, 'MPI_Iprobe')
      b = -1
      call MPI_Recv(b, cnt, MPI_INTEGER, SRC(st), TAG(st), comm, st, ierr)
      call check_data(b, tag, 'MPI_Iprobe + MPI_Recv')
    end if
    call done()
  end subroutine

  subroutine probe_recv(root, tag)
    integer, intent(in) :: root, tag
    integer :: b(NI), cnt
    STATUS_DECL(st)
    call send(root, tag)
    if (rank /= root) then
      call MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, st, ierr)
      call check_ierr('MPI_Probe')
      call MPI_Get_count(st, MPI_INTEGER, cnt, ierr)
      call check_status(SRC(st), TAG(st), cnt, root, tag, 'MPI_Probe')
      b = -1
      call MPI_Recv(b, cnt, MPI_INTEGER, SRC(st), TAG(st), comm, st, ierr)
      call MPI_Get_count(st, MPI_INTEGER, cnt, ierr)
      call check_status(SRC(st), TAG(st), cnt, root, tag, 'MPI_Probe + MPI_Recv')
      call check_data(b, tag, 'MPI_Probe + MPI_Recv')
    end if
    call done()
  end subroutine

  ! MPI_STATUS_IGNORE (MPI_Recv, MPI_Wait) and MPI_STATUSES_IGNORE (MPI_Waitall).
  subroutine ignored_statuses(root, tag)
    integer, intent(in) :: root, tag
    integer :: b(NI, 3), k
    REQ_T :: reqs(2)
    if (rank /= root) then
      b = -1
      call MPI_Irecv(b(1, 2), NI, MPI_INTEGER, root, tag + 1, comm, reqs(1), ierr)
      call MPI_Irecv(b(1, 3), NI, MPI_INTEGER, root, tag + 2, comm, reqs(2), ierr)
    end if
    call send(root, tag)
    call send(root, tag + 1)
    call send(root, tag + 2)
    if (rank /= root) then
      call MPI_Recv(b(1, 1), NI, MPI_INTEGER, root, tag, comm, MPI_STATUS_IGNORE, ierr)
      call check_ierr('MPI_Recv with MPI_STATUS_IGNORE')
      call MPI_Wait(reqs(1), MPI_STATUS_IGNORE, ierr)
      call check_ierr('MPI_Wait with MPI_STATUS_IGNORE')
      call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
      call check_ierr('MPI_Waitall with MPI_STATUSES_IGNORE')
      do k = 1, 3
        call check_data(b(:, k), tag + k - 1, 'MPI_STATUS_IGNORE')
      end do
    end if
    call done()
  end subroutine

end program f_dbcast

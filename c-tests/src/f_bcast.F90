! MPI_Bcast and MPI_Barrier from Fortran through mpif.h (-DTC_MPIF_H), `use mpi`, or
! `use mpi_f08` (-DTC_F08: there with and without the optional ierror, and with
! -DTC_LARGE_COUNT the MPI-4 large-count form, integer(MPI_COUNT_KIND) counts, where the MPI
! has it):
! integer, real(8), character and derived-type data from every root, array sections
! (strided and 2-D), several communicators, MPI_BOTTOM with absolute addresses, a
! barrier nobody leaves before a late rank entered it, and MPI_IN_PLACE giving the same
! error code as the host's own PMPI_Bcast. Every received element is checked, and the
! stats show which path each call took (TC_EXPECT, see tc_fortran.f90). Linked builds
! (-DTC_LINKED) also read the counters through the `mpicast` Fortran module.
#ifdef TC_F08
#define COMM_T type(MPI_Comm)
#define DTYPE_T type(MPI_Datatype)
#define HVAL(h) h%MPI_VAL
#else
#define COMM_T integer
#define DTYPE_T integer
#define HVAL(h) h
#endif
program f_bcast
#if defined(TC_F08)
  use mpi_f08
#elif !defined(TC_MPIF_H)
  use mpi
#endif
  use tc_fortran
  use, intrinsic :: iso_c_binding, only: c_int64_t
#ifdef TC_LINKED
  use mpicast
#endif
  implicit none
#ifdef TC_MPIF_H
  include 'mpif.h'
#endif
  integer, parameter :: NI = 1000, NR = 5000, NC = 3000, NP = 100
#if defined(TC_F08)
  character(*), parameter :: WHAT = 'f_f08'
#elif defined(TC_MPIF_H)
  character(*), parameter :: WHAT = 'f_mpif'
#else
  character(*), parameter :: WHAT = 'f_usempi'
#endif
  type, bind(C) :: particle
    integer :: id
    real(8) :: x(3)
    character :: tag(5)
  end type particle
  integer :: ierr, rank, nprocs, root, nbcast, nplain, nbarrier
  COMM_T :: comms(3)
  integer :: ncomms, k, level
  character(len=16) :: progress
  integer(c_int64_t) :: before(10)
  logical :: found

  call MPI_Init(ierr)
  ! MPICAST_PROGRESS=thread: mpicast made the init ask for MPI_THREAD_MULTIPLE.
  call get_environment_variable('MPICAST_PROGRESS', progress)
  if (trim(progress) == 'thread') then
    call MPI_Query_thread(level, ierr)
    if (level /= MPI_THREAD_MULTIPLE) then
      print '(a,i0)', 'f_bcast: MPICAST_PROGRESS=thread, but MPI_Query_thread gives ', level
      call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    end if
  end if
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  nbcast = 0
  nplain = 0
  nbarrier = 0
  call tc_stats(before, found)

  do root = 0, nprocs - 1
    call bcast_integers(MPI_COMM_WORLD, root, 1)
    call bcast_reals(MPI_COMM_WORLD, root, 2)
    call bcast_chars(MPI_COMM_WORLD, root, 3)
    call bcast_particles(MPI_COMM_WORLD, root, 4)
    call bcast_sections(MPI_COMM_WORLD, root, 5)
  end do

  ! Several communicators, used in turn: a duplicate, the halves, and the reversed world.
  call MPI_Comm_dup(MPI_COMM_WORLD, comms(1), ierr)
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, comms(2), ierr)
  call MPI_Comm_split(MPI_COMM_WORLD, 0, nprocs - rank, comms(3), ierr)
  ncomms = 3
  do k = 1, 2
    do root = 0, ncomms - 1
      call bcast_integers(comms(root + 1), 0, 10 + k)
      call bcast_reals(comms(1 + mod(root + 1, ncomms)), 0, 20 + k)
      call bcast_particles(comms(1 + mod(root + 2, ncomms)), 0, 30 + k)
    end do
  end do
  call late_barrier(comms(3))
  do k = 1, ncomms
    call MPI_Comm_free(comms(k), ierr)
  end do

  call late_barrier(MPI_COMM_WORLD)
#ifdef TC_LARGE_COUNT
  do root = 0, nprocs - 1
    call bcast_large_count(MPI_COMM_WORLD, root, 50)
  end do
#endif
  call bcast_bottom(MPI_COMM_WORLD, nprocs - 1, 40)
  call in_place_as_host()

  call tc_check_stats(WHAT, rank, before, nbcast, nplain, nbarrier)
#ifdef TC_LINKED
  call check_module()
#endif
  call MPI_Finalize(ierr)
  if (rank == 0) print '(a, ": ok")', WHAT

contains

  subroutine counted(plain)
    logical, intent(in) :: plain
    nbcast = nbcast + 1
    if (plain) nplain = nplain + 1
  end subroutine

  subroutine check_ierr(what)
    character(*), intent(in) :: what
    if (ierr /= MPI_SUCCESS) call tc_fail(what // ': ierror is not MPI_SUCCESS')
  end subroutine

  subroutine bcast_integers(comm, root, seed)
    COMM_T, intent(in) :: comm
    integer, intent(in) :: root, seed
    integer :: a(NI), i, me
    call MPI_Comm_rank(comm, me, ierr)
    do i = 1, NI
      a(i) = merge(tc_ival(seed + root, i), -1, me == root)
    end do
#ifdef TC_F08
    ! Without the optional ierror (the entry point gets NULL for it).
    call MPI_Bcast(a, NI, MPI_INTEGER, root, comm)
#else
    ierr = -12345
    call MPI_Bcast(a, NI, MPI_INTEGER, root, comm, ierr)
    call check_ierr('integer broadcast')
#endif
    call counted(.true.)
    do i = 1, NI
      if (a(i) /= tc_ival(seed + root, i)) call tc_fail('integer broadcast: wrong element')
    end do
  end subroutine

  subroutine bcast_reals(comm, root, seed)
    COMM_T, intent(in) :: comm
    integer, intent(in) :: root, seed
    real(8) :: a(NR)
    integer :: i, me
    call MPI_Comm_rank(comm, me, ierr)
    do i = 1, NR
      a(i) = merge(tc_rval(seed + root, i), -1d0, me == root)
    end do
    call MPI_Bcast(a, NR, MPI_DOUBLE_PRECISION, root, comm, ierr)
    call check_ierr('real(8) broadcast')
    call counted(.true.)
    do i = 1, NR
      if (a(i) /= tc_rval(seed + root, i)) call tc_fail('real(8) broadcast: wrong element')
    end do
  end subroutine

  subroutine bcast_chars(comm, root, seed)
    COMM_T, intent(in) :: comm
    integer, intent(in) :: root, seed
    character(len=NC) :: s
    integer :: i, me
    call MPI_Comm_rank(comm, me, ierr)
    do i = 1, NC
      s(i:i) = merge(tc_cval(seed + root, i), ' ', me == root)
    end do
    call MPI_Bcast(s, NC, MPI_CHARACTER, root, comm, ierr)
    call check_ierr('character broadcast')
    call counted(.true.)
    do i = 1, NC
      if (s(i:i) /= tc_cval(seed + root, i)) call tc_fail('character broadcast: wrong char')
    end do
  end subroutine

  ! An array of a derived type, described by a struct datatype resized to its extent.
  subroutine bcast_particles(comm, root, seed)
    COMM_T, intent(in) :: comm
    integer, intent(in) :: root, seed
    type(particle) :: p(NP)
    integer :: i, j, me
    DTYPE_T :: ptype, tmp, types(3)
    integer :: blocks(3)
    integer(kind=MPI_ADDRESS_KIND) :: disp(3), base, lb, extent
    call MPI_Comm_rank(comm, me, ierr)
    call MPI_Get_address(p(1), base, ierr)
    call MPI_Get_address(p(1)%id, disp(1), ierr)
    call MPI_Get_address(p(1)%x, disp(2), ierr)
    call MPI_Get_address(p(1)%tag, disp(3), ierr)
    disp = disp - base
    blocks = [1, 3, 5]
    types = [MPI_INTEGER, MPI_DOUBLE_PRECISION, MPI_CHARACTER]
    call MPI_Type_create_struct(3, blocks, disp, types, tmp, ierr)
    call MPI_Get_address(p(2), extent, ierr)
    extent = extent - base
    lb = 0
    call MPI_Type_create_resized(tmp, lb, extent, ptype, ierr)
    call MPI_Type_commit(ptype, ierr)
    call MPI_Type_free(tmp, ierr)
    do i = 1, NP
      if (me == root) then
        p(i)%id = tc_ival(seed + root, i)
        p(i)%x = [(tc_rval(seed + root, 10 * i + j), j = 1, 3)]
        p(i)%tag = [(tc_cval(seed + root, 10 * i + j), j = 1, 5)]
      else
        p(i)%id = -1
        p(i)%x = -1d0
        p(i)%tag = ' '
      end if
    end do
    call MPI_Bcast(p, NP, ptype, root, comm, ierr)
    call check_ierr('derived-type broadcast')
    call counted(.true.)
    do i = 1, NP
      if (p(i)%id /= tc_ival(seed + root, i)) call tc_fail('derived type: wrong id')
      do j = 1, 3
        if (p(i)%x(j) /= tc_rval(seed + root, 10 * i + j)) call tc_fail('derived type: wrong x')
      end do
      do j = 1, 5
        if (p(i)%tag(j) /= tc_cval(seed + root, 10 * i + j)) call tc_fail('derived type: wrong tag')
      end do
    end do
    call MPI_Type_free(ptype, ierr)
  end subroutine

  ! Non-contiguous sections: every other element, and a block of rows of a 2-D array.
  ! The elements outside the section must stay as they were.
  subroutine bcast_sections(comm, root, seed)
    COMM_T, intent(in) :: comm
    integer, intent(in) :: root, seed
    integer :: a(2 * NI), i, me
    real(8) :: m(40, 30)
    integer :: r, c
    call MPI_Comm_rank(comm, me, ierr)
    do i = 1, 2 * NI
      a(i) = -i
    end do
    if (me == root) then
      do i = 1, NI
        a(2 * i - 1) = tc_ival(seed + root, i)
      end do
    end if
    call MPI_Bcast(a(1:2 * NI:2), NI, MPI_INTEGER, root, comm, ierr)
    call check_ierr('strided section broadcast')
    call counted(.true.)
    do i = 1, NI
      if (a(2 * i - 1) /= tc_ival(seed + root, i)) call tc_fail('strided section: wrong element')
      if (a(2 * i) /= -2 * i) call tc_fail('strided section: an element outside it changed')
    end do
    m = -1d0
    if (me == root) then
      do c = 1, 30
        do r = 5, 12
          m(r, c) = tc_rval(seed + root, 100 * c + r)
        end do
      end do
    end if
    call MPI_Bcast(m(5:12, :), 8 * 30, MPI_DOUBLE_PRECISION, root, comm, ierr)
    call check_ierr('2-D section broadcast')
    call counted(.true.)
    do c = 1, 30
      do r = 1, 40
        if (r >= 5 .and. r <= 12) then
          if (m(r, c) /= tc_rval(seed + root, 100 * c + r)) call tc_fail('2-D section: wrong element')
        else if (m(r, c) /= -1d0) then
          call tc_fail('2-D section: an element outside it changed')
        end if
      end do
    end do
  end subroutine

#ifdef TC_LARGE_COUNT
  ! The MPI-4 large-count form: an integer(MPI_COUNT_KIND) count picks MPI_Bcast_c's
  ! binding, which mpicast must see as well.
  subroutine bcast_large_count(comm, root, seed)
    type(MPI_Comm), intent(in) :: comm
    integer, intent(in) :: root, seed
    real(8) :: a(NR)
    integer(kind=MPI_COUNT_KIND) :: n
    integer :: i, me
    call MPI_Comm_rank(comm, me, ierr)
    do i = 1, NR
      a(i) = merge(tc_rval(seed + root, i), -1d0, me == root)
    end do
    n = NR
    call MPI_Bcast(a, n, MPI_DOUBLE_PRECISION, root, comm, ierr)
    call check_ierr('large-count broadcast')
    call counted(.true.)
    do i = 1, NR
      if (a(i) /= tc_rval(seed + root, i)) call tc_fail('large-count broadcast: wrong element')
    end do
  end subroutine
#endif

  ! MPI_BOTTOM with a datatype of absolute addresses: two separate arrays in one call.
  subroutine bcast_bottom(comm, root, seed)
    COMM_T, intent(in) :: comm
    integer, intent(in) :: root, seed
    integer :: a(NI), me, i
    DTYPE_T :: btype, types(2)
    real(8) :: b(NI)
    integer :: blocks(2)
    integer(kind=MPI_ADDRESS_KIND) :: disp(2)
    call MPI_Comm_rank(comm, me, ierr)
    do i = 1, NI
      a(i) = merge(tc_ival(seed, i), 0, me == root)
      b(i) = merge(tc_rval(seed, i), 0d0, me == root)
    end do
    call MPI_Get_address(a, disp(1), ierr)
    call MPI_Get_address(b, disp(2), ierr)
    blocks = [NI, NI]
    types = [MPI_INTEGER, MPI_DOUBLE_PRECISION]
    call MPI_Type_create_struct(2, blocks, disp, types, btype, ierr)
    call MPI_Type_commit(btype, ierr)
    call MPI_Bcast(MPI_BOTTOM, 1, btype, root, comm, ierr)
    call check_ierr('MPI_BOTTOM broadcast')
    call counted(.false.)
    do i = 1, NI
      if (a(i) /= tc_ival(seed, i) .or. b(i) /= tc_rval(seed, i)) &
        call tc_fail('MPI_BOTTOM broadcast: wrong element')
    end do
    call MPI_Type_free(btype, ierr)
  end subroutine

  ! MPI_IN_PLACE is not an argument MPI_Bcast knows: whatever the host makes of it, the
  ! error code must be the one the host's own PMPI_Bcast gives.
  subroutine in_place_as_host()
    COMM_T :: c
    integer :: ierr_mpi, ierr_host
    integer(c_int64_t) :: v0(10), v1(10)
    call MPI_Comm_dup(MPI_COMM_WORLD, c, ierr)
    call MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN, ierr)
    call MPI_Bcast(MPI_IN_PLACE, 0, MPI_INTEGER, 0, c, ierr_mpi)
    call counted(.false.)
    ! MPICH's Fortran PMPI_Bcast calls the C MPI_Bcast (so mpicast sees it); Open MPI's
    ! does not. Count what mpicast saw.
    call tc_stats(v0, found)
    call PMPI_Bcast(MPI_IN_PLACE, 0, MPI_INTEGER, 0, c, ierr_host)
    call tc_stats(v1, found)
    if ((v1(1) + v1(2)) - (v0(1) + v0(2)) > 1) call tc_fail('PMPI_Bcast: counted twice')
    nbcast = nbcast + int((v1(1) + v1(2)) - (v0(1) + v0(2)))
    if (ierr_mpi /= ierr_host) call tc_fail('MPI_IN_PLACE: ierror differs from the host''s')
    call MPI_Comm_free(c, ierr)
  end subroutine

  ! The last rank enters 300 ms late; nobody may leave before it entered.
  subroutine late_barrier(comm)
    COMM_T, intent(in) :: comm
    integer :: me, n
    double precision :: t(1), entered(1), left
    call MPI_Comm_rank(comm, me, ierr)
    call MPI_Comm_size(comm, n, ierr)
    if (me == n - 1) call tc_sleep_ms(300)
    t(1) = tc_now()
    ierr = -12345
#ifdef TC_F08
    if (mod(nbarrier, 2) == 0) then
      call MPI_Barrier(comm, ierr)
    else
      call MPI_Barrier(comm)
      ierr = MPI_SUCCESS
    end if
#else
    call MPI_Barrier(comm, ierr)
#endif
    left = tc_now()
    call check_ierr('barrier')
    nbarrier = nbarrier + 1
    if (me /= n - 1) t(1) = 0d0
    call MPI_Allreduce(t, entered, 1, MPI_DOUBLE_PRECISION, MPI_MAX, comm, ierr)
    if (left < entered(1)) call tc_fail('left the barrier before the late rank entered it')
  end subroutine

#ifdef TC_LINKED
  ! The `mpicast` module: the same counters as the C helper reads, a version string.
  subroutine check_module()
    use, intrinsic :: iso_c_binding
    type(MPICAST_Stats) :: s
    integer(c_int64_t) :: v(10)
    character(kind=c_char), pointer :: txt(:)
    if (MPICAST_Get_stats(s) /= MPICAST_OK) call tc_fail('MPICAST_Get_stats failed')
    call tc_stats(v, found)
    if (.not. found) call tc_fail('linked, but no MPICAST_Get_stats found')
    if (s%bcast_mcast /= v(1) .or. s%bcast_pmpi /= v(2) .or. s%barrier_mcast /= v(3) &
        .or. s%fallbacks /= v(10)) call tc_fail('the mpicast module reads other counters')
    call c_f_pointer(MPICAST_Version(), txt, [2])
    if (txt(1) == c_null_char) call tc_fail('MPICAST_Version is empty')
    call c_f_pointer(MPICAST_Status_string(MPICAST_ERR_NULL_ARG), txt, [2])
    if (txt(1) == c_null_char) call tc_fail('MPICAST_Status_string is empty')
    call check_imcast()
  end subroutine

  ! The multicast calls through the module: every rank multicasts 100 integers to the next
  ! two ranks (one when there are two) and receives from the two before it, by source.
  subroutine check_imcast()
    use, intrinsic :: iso_c_binding
    integer(c_intptr_t) :: ccomm, cint
    integer(c_int), target :: out(100), got(100, 2)
    integer(c_int) :: dests(2), nd
    type(c_ptr) :: reqs(3)
    integer :: i, k, from
    if (nprocs < 2) return
    ccomm = MPICAST_Comm_f2c(HVAL(MPI_COMM_WORLD))
    cint = MPICAST_Type_f2c(HVAL(MPI_INTEGER))
    if (MPICAST_Mcast_enable(MPICAST_Comm_f2c(HVAL(MPI_COMM_NULL))) /= MPICAST_ERR_ARG) &
      call tc_fail('MPICAST_Mcast_enable(MPI_COMM_NULL) is not MPICAST_ERR_ARG')
    if (MPICAST_Mcast_enable(ccomm) /= MPICAST_OK) call tc_fail('MPICAST_Mcast_enable failed')
    nd = min(2, nprocs - 1)
    do k = 1, nd
      dests(k) = mod(rank + k, nprocs)
    end do
    out = [(rank * 1000 + i, i = 1, 100)]
    got = -1
    if (MPICAST_Imcast(c_loc(out), 100, cint, dests, nd, 7, ccomm, reqs(1)) /= MPICAST_OK) &
      call tc_fail('MPICAST_Imcast failed')
    do k = 1, nd
      from = mod(rank - k + nprocs, nprocs)
      if (MPICAST_Mcast_irecv(c_loc(got(1, k)), 100, cint, from, 7, ccomm, reqs(1 + k)) &
          /= MPICAST_OK) call tc_fail('MPICAST_Mcast_irecv failed')
    end do
    if (MPICAST_Waitall(nd + 1, reqs, c_null_ptr) /= MPICAST_OK) &
      call tc_fail('MPICAST_Waitall failed')
    do k = 1, nd
      if (c_associated(reqs(1 + k))) call tc_fail('MPICAST_Waitall left a request')
      from = mod(rank - k + nprocs, nprocs)
      do i = 1, 100
        if (got(i, k) /= from * 1000 + i) call tc_fail('MPICAST_Imcast: wrong data')
      end do
    end do
  end subroutine
#endif

end program f_bcast

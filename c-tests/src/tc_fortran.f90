! Helpers shared by the Fortran test programs: the data pattern every broadcast is checked
! against, failure reporting that aborts the whole job (tc_fail of common.c), and the
! stats check that proves which path (multicast or the host MPI) each call took. It uses
! no MPI module, so mpif.h, `use mpi` and `use mpi_f08` programs can all use it.
module tc_fortran
  use, intrinsic :: iso_c_binding
  implicit none
  private
  public :: tc_ival, tc_rval, tc_cval, tc_fail, tc_now, tc_sleep_ms, tc_stats, tc_expect, &
            tc_check_stats

  interface
    integer(c_int) function tc_f_stats(out) bind(C, name="tc_f_stats")
      import :: c_int, c_int64_t
      integer(c_int64_t), intent(out) :: out(10)
    end function
    integer(c_int) function tc_f_expect() bind(C, name="tc_f_expect")
      import :: c_int
    end function
    subroutine tc_f_fail(msg) bind(C, name="tc_f_fail")
      import :: c_char
      character(kind=c_char), intent(in) :: msg(*)
    end subroutine
    real(c_double) function tc_now() bind(C, name="tc_now")
      import :: c_double
    end function
    subroutine tc_sleep_ms(ms) bind(C, name="tc_sleep_ms")
      import :: c_int
      integer(c_int), value :: ms
    end subroutine
  end interface

contains

  ! Element i of the payload for seed: depends on both, so stale data from another
  ! broadcast, root or offset never passes.
  integer function tc_ival(seed, i)
    integer, intent(in) :: seed, i
    tc_ival = int(modulo(int(i, 8) * 2654435761_8 + int(seed, 8) * 40503_8 + 17_8, &
                         2147483647_8))
  end function

  real(8) function tc_rval(seed, i)
    integer, intent(in) :: seed, i
    tc_rval = dble(tc_ival(seed, i)) * 0.5d0 + 0.25d0
  end function

  character function tc_cval(seed, i)
    integer, intent(in) :: seed, i
    tc_cval = achar(33 + modulo(tc_ival(seed, i), 94))
  end function

  subroutine tc_fail(msg)
    character(*), intent(in) :: msg
    call tc_f_fail(trim(msg) // c_null_char)
  end subroutine

  ! This rank's counters (MPICAST_Stats order); found = .false. without mpicast.
  subroutine tc_stats(v, found)
    integer(c_int64_t), intent(out) :: v(10)
    logical, intent(out) :: found
    found = tc_f_stats(v) == 1
  end subroutine

  ! TC_EXPECT: 0 report only, 1 mcast, 2 pmpi.
  integer function tc_expect()
    tc_expect = tc_f_expect()
  end function

  ! Checks this rank's counters since `before` against what the program did: nbcast
  ! broadcasts, of which nplain with ordinary buffers (the others used the host's
  ! MPI_BOTTOM or MPI_IN_PLACE, which may go either way), and nbarrier barriers.
  ! mcast: every ordinary broadcast and every barrier multicast, and every broadcast seen
  ! by mpicast (counted on one path or the other); pmpi: not one multicast.
  subroutine tc_check_stats(what, rank, before, nbcast, nplain, nbarrier)
    character(*), intent(in) :: what
    integer, intent(in) :: rank, nbcast, nplain, nbarrier
    integer(c_int64_t), intent(in) :: before(10)
    integer(c_int64_t) :: after(10), d(10)
    logical :: found
    character(len=400) :: line
    integer :: mode
    call tc_stats(after, found)
    d = after - before
    mode = tc_expect()
    write (line, '(a, ": rank ", i0, " bcast_mcast=", i0, " bcast_pmpi=", i0, &
         & " barrier_mcast=", i0, " barrier_pmpi=", i0, " bytes_mcast=", i0, &
         & " (ran ", i0, " broadcasts, ", i0, " plain, ", i0, " barriers)")') &
         what, rank, d(1), d(2), d(3), d(4), d(5), nbcast, nplain, nbarrier
    if (rank == 0) print '(a)', trim(line)
    if (mode == 0) return
    if (.not. found) call tc_fail(what // ': TC_EXPECT set but MPICAST_Get_stats not loaded')
    if (mode == 1) then
      if (d(1) < nplain) call tc_fail('TC_EXPECT=mcast: too few multicast broadcasts: ' // line)
      if (d(1) + d(2) /= nbcast) &
        call tc_fail('TC_EXPECT=mcast: mpicast did not see every broadcast: ' // line)
      if (d(3) /= nbarrier .or. d(4) /= 0) &
        call tc_fail('TC_EXPECT=mcast: barriers not all multicast: ' // line)
    else
      if (d(1) /= 0 .or. d(3) /= 0 .or. d(5) /= 0) &
        call tc_fail('TC_EXPECT=pmpi: something was multicast: ' // line)
      if (d(2) /= nbcast .or. d(4) /= nbarrier) &
        call tc_fail('TC_EXPECT=pmpi: mpicast did not see every call: ' // line)
    end if
  end subroutine

end module tc_fortran

! mpicast: the Fortran interfaces of the extension API (include/mpicast.h), through
! iso_c_binding. Written by hand, beside the generated C header: every MPICAST_* call,
! type and status value of the header has its counterpart here, and `cargo test --test
! fortran_module` fails when one is missing (docs/architecture.md, "Extension calls").
!
! The module holds interfaces, types and constants only (no procedures), so `use mpicast`
! needs the compiled .mod and no object file. MPI_Bcast and MPI_Barrier themselves come from
! your MPI's mpif.h, `use mpi` or `use mpi_f08` as usual.
!
! Conventions are the C ones: functions return an MPICAST_Status (0 = MPICAST_OK); results
! are written through the trailing *_out argument only on success. Strings come back as
! type(c_ptr) to static NUL-terminated text (never to be freed); to print one:
!   character(kind=c_char), pointer :: s(:)
!   call c_f_pointer(MPICAST_Version(), s, [64])
!   do i = 1, 64; if (s(i) == c_null_char) exit; end do
!   print *, s(1:i-1)
module mpicast
  use, intrinsic :: iso_c_binding, only: c_int, c_int64_t, c_ptr, c_intptr_t, c_size_t, c_char, &
    c_funptr
  implicit none
  private

  ! MPICAST_Status: values are stable and never reused.
  integer(c_int), parameter, public :: MPICAST_OK = 0
  integer(c_int), parameter, public :: MPICAST_ERR_NULL_ARG = 1
  integer(c_int), parameter, public :: MPICAST_ERR_INTERNAL = 2
  integer(c_int), parameter, public :: MPICAST_ERR_MPI = 3
  integer(c_int), parameter, public :: MPICAST_ERR_GOAL_INVALID = 4
  integer(c_int), parameter, public :: MPICAST_ERR_GOAL_STATE = 5
  integer(c_int), parameter, public :: MPICAST_ERR_ARG = 6
  integer(c_int), parameter, public :: MPICAST_ERR_NOT_ENABLED = 7
  integer(c_int), parameter, public :: MPICAST_ERR_TRUNCATE = 8
  integer(c_int), parameter, public :: MPICAST_ERR_NO_THREAD = 9
  integer(c_int), parameter, public :: MPICAST_ERR_UNKNOWN_KEY = 10
  integer(c_int), parameter, public :: MPICAST_ERR_TOPOLOGY = 11
  integer(c_int), parameter, public :: MPICAST_ERR_NO_MPI = 12

  ! MPICAST_Stats: this process's counters (not summed over ranks). The C fields are
  ! uint64_t; Fortran has no unsigned kind, and the counts stay far below 2**63.
  type, bind(C), public :: MPICAST_Stats
    integer(c_int64_t) :: bcast_mcast    ! MPI_Bcast calls that took the multicast path
    integer(c_int64_t) :: bcast_pmpi     ! MPI_Bcast calls handed to the host MPI
    integer(c_int64_t) :: barrier_mcast  ! MPI_Barrier calls that took the multicast path
    integer(c_int64_t) :: barrier_pmpi   ! MPI_Barrier calls handed to the host MPI
    integer(c_int64_t) :: bytes_mcast    ! bytes this process multicast as a broadcast root
    integer(c_int64_t) :: dgrams_sent    ! datagrams sent (data, retransmissions, releases)
    integer(c_int64_t) :: dgrams_recv    ! datagrams accepted
    integer(c_int64_t) :: repairs        ! fragments retransmitted, release queries sent
    integer(c_int64_t) :: rejected       ! datagrams failing authentication or malformed
    integer(c_int64_t) :: fallbacks      ! communicators that fell back to the host MPI
  end type MPICAST_Stats

  public :: MPICAST_Get_stats, MPICAST_Version, MPICAST_Status_string, MPICAST_Last_error
  public :: MPICAST_Goal_create, MPICAST_Goal_load_text, MPICAST_Goal_bind_buffer
  public :: MPICAST_Goal_start, MPICAST_Goal_wait, MPICAST_Goal_test, MPICAST_Goal_error
  public :: MPICAST_Goal_free, MPICAST_Goal_load_file, MPICAST_Goal_load_binary
  public :: MPICAST_Goal_reg_func, MPICAST_Goal_send, MPICAST_Goal_recv, MPICAST_Goal_exec
  public :: MPICAST_Goal_requ, MPICAST_Goal_compile, MPICAST_Goal_function
  public :: MPICAST_Goal_mcast_send, MPICAST_Goal_mcast_recv
  public :: MPICAST_Mcast_enable, MPICAST_Imcast, MPICAST_Mcast_irecv, MPICAST_Mcast_iprobe
  public :: MPICAST_Wait, MPICAST_Test, MPICAST_Waitall, MPICAST_Testany, MPICAST_Testsome
  public :: MPICAST_Request_free, MPICAST_Request_mpi
  public :: MPICAST_Comm_f2c, MPICAST_Type_f2c
  public :: MPICAST_Dbcast_enable, MPICAST_Dbcast, MPICAST_Send_defer, MPICAST_Send_release
  public :: MPICAST_Doctor, MPICAST_Mmcast

  ! The shape of a user function for GOAL exec actions (MPICAST_Goal_reg_func takes
  ! c_funloc of a bind(C) function like this): dst = f(src, dst), returns 0 on success.
  abstract interface
    function MPICAST_Goal_function(src, src_len, dst, dst_len, ctx) bind(C) result(status)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: src
      integer(c_size_t), value :: src_len
      type(c_ptr), value :: dst
      integer(c_size_t), value :: dst_len
      type(c_ptr), value :: ctx
      integer(c_int) :: status
    end function MPICAST_Goal_function
  end interface

  interface
    ! Copies this process's counters into stats_out. Thread-safe; callable at any time,
    ! also before MPI_Init.
    function MPICAST_Get_stats(stats_out) bind(C, name="MPICAST_Get_stats") result(status)
      import :: c_int, MPICAST_Stats
      type(MPICAST_Stats), intent(out) :: stats_out
      integer(c_int) :: status
    end function MPICAST_Get_stats

    ! The library version ("0.1.0"), static NUL-terminated text.
    function MPICAST_Version() bind(C, name="MPICAST_Version") result(text)
      import :: c_ptr
      type(c_ptr) :: text
    end function MPICAST_Version

    ! A static NUL-terminated description of a status value ("unknown status" for others).
    function MPICAST_Status_string(status) bind(C, name="MPICAST_Status_string") result(text)
      import :: c_int, c_ptr
      integer(c_int), value :: status
      type(c_ptr) :: text
    end function MPICAST_Status_string

    ! Why this thread's last refused call was refused, naming the call and the argument
    ! (static NUL-terminated text until the next refusal; empty when none was).
    function MPICAST_Last_error() bind(C, name="MPICAST_Last_error") result(text)
      import :: c_ptr
      type(c_ptr) :: text
    end function MPICAST_Last_error

    ! The job-wide checks of `mpicast doctor -n N` over comm (collective; comm is the C handle,
    ! MPICAST_Comm_f2c of the Fortran one): rank 0 prints the report on standard output, and
    ! problems_out becomes 1 on every rank when a problem was found, else 0. options is text
    ! ended by c_null_char: "" for the defaults, or words such as json, long=SECONDS, count=K.
    function MPICAST_Doctor(comm, options, problems_out) bind(C, name="MPICAST_Doctor") &
        result(status)
      import :: c_int, c_intptr_t, c_char
      integer(c_intptr_t), value :: comm
      character(kind=c_char), dimension(*), intent(in) :: options
      integer(c_int), intent(out) :: problems_out
      integer(c_int) :: status
    end function MPICAST_Doctor

    ! The C handle of a Fortran communicator or datatype, as the comm and datatype arguments
    ! below take it (an integer of pointer width); in mpi_f08 pass comm%MPI_VAL. An unknown
    ! handle gives the C MPI_COMM_NULL / MPI_DATATYPE_NULL.
    function MPICAST_Comm_f2c(fcomm) bind(C, name="MPICAST_Comm_f2c") result(c)
      import :: c_int, c_intptr_t
      integer(c_int), value :: fcomm
      integer(c_intptr_t) :: c
    end function MPICAST_Comm_f2c

    function MPICAST_Type_f2c(ftype) bind(C, name="MPICAST_Type_f2c") result(c)
      import :: c_int, c_intptr_t
      integer(c_int), value :: ftype
      integer(c_intptr_t) :: c
    end function MPICAST_Type_f2c

    ! GOAL handles (docs/goal.md). Handles are type(c_ptr); strings must end in c_null_char.
    ! comm is the C handle of the communicator (MPICAST_Comm_f2c of the Fortran one), passed
    ! as an integer of pointer width: Open MPI's handles are pointers, MPICH's are ints.
    function MPICAST_Goal_create(comm, goal_out) bind(C, name="MPICAST_Goal_create") &
        result(status)
      import :: c_int, c_intptr_t, c_ptr
      integer(c_intptr_t), value :: comm
      type(c_ptr), intent(out) :: goal_out
      integer(c_int) :: status
    end function MPICAST_Goal_create

    function MPICAST_Goal_load_text(goal, text) bind(C, name="MPICAST_Goal_load_text") &
        result(status)
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: goal
      character(kind=c_char), dimension(*), intent(in) :: text
      integer(c_int) :: status
    end function MPICAST_Goal_load_text

    function MPICAST_Goal_bind_buffer(goal, name, ptr, len) &
        bind(C, name="MPICAST_Goal_bind_buffer") result(status)
      import :: c_int, c_ptr, c_char, c_size_t
      type(c_ptr), value :: goal
      character(kind=c_char), dimension(*), intent(in) :: name
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: len
      integer(c_int) :: status
    end function MPICAST_Goal_bind_buffer

    function MPICAST_Goal_start(goal, request_out) bind(C, name="MPICAST_Goal_start") &
        result(status)
      import :: c_int, c_ptr
      type(c_ptr), value :: goal
      type(c_ptr), intent(out) :: request_out
      integer(c_int) :: status
    end function MPICAST_Goal_start

    function MPICAST_Goal_wait(request) bind(C, name="MPICAST_Goal_wait") result(status)
      import :: c_int, c_ptr
      type(c_ptr), value :: request
      integer(c_int) :: status
    end function MPICAST_Goal_wait

    function MPICAST_Goal_test(request, done_out) bind(C, name="MPICAST_Goal_test") &
        result(status)
      import :: c_int, c_ptr
      type(c_ptr), value :: request
      integer(c_int), intent(out) :: done_out
      integer(c_int) :: status
    end function MPICAST_Goal_test

    ! The last error message, NUL-terminated text owned by the handle.
    function MPICAST_Goal_error(goal) bind(C, name="MPICAST_Goal_error") result(text)
      import :: c_ptr
      type(c_ptr), value :: goal
      type(c_ptr) :: text
    end function MPICAST_Goal_error

    ! Like load_text, from a file (text of either dialect, or a binary schedule).
    function MPICAST_Goal_load_file(goal, path) bind(C, name="MPICAST_Goal_load_file") &
        result(status)
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: goal
      character(kind=c_char), dimension(*), intent(in) :: path
      integer(c_int) :: status
    end function MPICAST_Goal_load_file

    ! Like load_text, from len bytes at bytes (a binary schedule, or text).
    function MPICAST_Goal_load_binary(goal, bytes, len) &
        bind(C, name="MPICAST_Goal_load_binary") result(status)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: goal
      type(c_ptr), value :: bytes
      integer(c_size_t), value :: len
      integer(c_int) :: status
    end function MPICAST_Goal_load_binary

    ! Registers c_funloc(f) (an MPICAST_Goal_function) as user function id_out (0, 1, ...).
    function MPICAST_Goal_reg_func(goal, func, ctx, id_out) &
        bind(C, name="MPICAST_Goal_reg_func") result(status)
      import :: c_int, c_ptr, c_funptr
      type(c_ptr), value :: goal
      type(c_funptr), value :: func
      type(c_ptr), value :: ctx
      integer(c_int), intent(out) :: id_out
      integer(c_int) :: status
    end function MPICAST_Goal_reg_func

    ! Builder calls: buffers are c_loc of memory that stays valid (target attribute) for the
    ! life of the program; len in bytes; action_out numbers the action for MPICAST_Goal_requ.
    function MPICAST_Goal_send(goal, buf, len, dest, tag, action_out) &
        bind(C, name="MPICAST_Goal_send") result(status)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: goal
      type(c_ptr), value :: buf
      integer(c_size_t), value :: len
      integer(c_int), value :: dest
      integer(c_int), value :: tag
      integer(c_int), intent(out) :: action_out
      integer(c_int) :: status
    end function MPICAST_Goal_send

    function MPICAST_Goal_recv(goal, buf, len, source, tag, action_out) &
        bind(C, name="MPICAST_Goal_recv") result(status)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: goal
      type(c_ptr), value :: buf
      integer(c_size_t), value :: len
      integer(c_int), value :: source
      integer(c_int), value :: tag
      integer(c_int), intent(out) :: action_out
      integer(c_int) :: status
    end function MPICAST_Goal_recv

    ! A multicast to every other rank; each adds MPICAST_Goal_mcast_recv naming this root.
    function MPICAST_Goal_mcast_send(goal, buf, len, action_out) &
        bind(C, name="MPICAST_Goal_mcast_send") result(status)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: goal
      type(c_ptr), value :: buf
      integer(c_size_t), value :: len
      integer(c_int), intent(out) :: action_out
      integer(c_int) :: status
    end function MPICAST_Goal_mcast_send

    function MPICAST_Goal_mcast_recv(goal, buf, len, root, action_out) &
        bind(C, name="MPICAST_Goal_mcast_recv") result(status)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: goal
      type(c_ptr), value :: buf
      integer(c_size_t), value :: len
      integer(c_int), value :: root
      integer(c_int), intent(out) :: action_out
      integer(c_int) :: status
    end function MPICAST_Goal_mcast_recv

    ! function: "sumInt32", "maxFloat64", ... or "user N", ending in c_null_char.
    function MPICAST_Goal_exec(goal, function, src, src_len, dst, dst_len, action_out) &
        bind(C, name="MPICAST_Goal_exec") result(status)
      import :: c_int, c_ptr, c_size_t, c_char
      type(c_ptr), value :: goal
      character(kind=c_char), dimension(*), intent(in) :: function
      type(c_ptr), value :: src
      integer(c_size_t), value :: src_len
      type(c_ptr), value :: dst
      integer(c_size_t), value :: dst_len
      integer(c_int), intent(out) :: action_out
      integer(c_int) :: status
    end function MPICAST_Goal_exec

    ! action waits for required to complete.
    function MPICAST_Goal_requ(goal, action, required) bind(C, name="MPICAST_Goal_requ") &
        result(status)
      import :: c_int, c_ptr
      type(c_ptr), value :: goal
      integer(c_int), value :: action
      integer(c_int), value :: required
      integer(c_int) :: status
    end function MPICAST_Goal_requ

    function MPICAST_Goal_compile(goal) bind(C, name="MPICAST_Goal_compile") result(status)
      import :: c_int, c_ptr
      type(c_ptr), value :: goal
      integer(c_int) :: status
    end function MPICAST_Goal_compile

    subroutine MPICAST_Goal_free(goal) bind(C, name="MPICAST_Goal_free")
      import :: c_ptr
      type(c_ptr), value :: goal
    end subroutine MPICAST_Goal_free

    ! Dynamic broadcast (include/mpicast.h). comm and datatype are C handles as above. After
    ! MPICAST_Dbcast_enable (collective) on a communicator, the recipients receive a dynamic
    ! broadcast with their ordinary MPI_Recv / MPI_Irecv naming the root (or MPI_ANY_SOURCE)
    ! and the tag, through mpif.h, `use mpi` or `use mpi_f08`. recipients holds n ranks;
    ! priorities is c_loc of n integer(c_int), or c_null_ptr. The request completes at the
    ! first MPICAST_Test (the data is copied when MPICAST_Dbcast returns).
    function MPICAST_Dbcast_enable(comm) bind(C, name="MPICAST_Dbcast_enable") result(status)
      import :: c_int, c_intptr_t
      integer(c_intptr_t), value :: comm
      integer(c_int) :: status
    end function MPICAST_Dbcast_enable

    function MPICAST_Dbcast(buf, count, datatype, recipients, priorities, n, tag, comm, &
        request_out) bind(C, name="MPICAST_Dbcast") result(status)
      import :: c_int, c_intptr_t, c_ptr
      type(c_ptr), value :: buf
      integer(c_int), value :: count
      integer(c_intptr_t), value :: datatype
      integer(c_int), dimension(*), intent(in) :: recipients
      type(c_ptr), value :: priorities
      integer(c_int), value :: n
      integer(c_int), value :: tag
      integer(c_intptr_t), value :: comm
      type(c_ptr), intent(out) :: request_out
      integer(c_int) :: status
    end function MPICAST_Dbcast

    ! Registers a send of datum key to dest before the datum is ready; nothing is sent until
    ! MPICAST_Send_release(key, ...), which sends every registered send of the key (buf must
    ! stay valid until its request completes).
    function MPICAST_Send_defer(key, dest, tag, priority, comm) &
        bind(C, name="MPICAST_Send_defer") result(status)
      import :: c_int, c_int64_t, c_intptr_t
      integer(c_int64_t), value :: key
      integer(c_int), value :: dest
      integer(c_int), value :: tag
      integer(c_int), value :: priority
      integer(c_intptr_t), value :: comm
      integer(c_int) :: status
    end function MPICAST_Send_defer

    function MPICAST_Send_release(key, buf, count, datatype, request_out) &
        bind(C, name="MPICAST_Send_release") result(status)
      import :: c_int, c_int64_t, c_intptr_t, c_ptr
      integer(c_int64_t), value :: key
      type(c_ptr), value :: buf
      integer(c_int), value :: count
      integer(c_intptr_t), value :: datatype
      type(c_ptr), intent(out) :: request_out
      integer(c_int) :: status
    end function MPICAST_Send_release

    ! The non-blocking multicast to any set of ranks (docs/imcast.md). comm and datatype are
    ! C handles (MPICAST_Comm_f2c, MPICAST_Type_f2c) of pointer width, as for MPICAST_Goal_create;
    ! buffers are c_loc of the data; requests are type(c_ptr), c_null_ptr once completed;
    ! statuses are c_loc of a C MPI_Status, or c_null_ptr to ignore them.
    function MPICAST_Mcast_enable(comm) bind(C, name="MPICAST_Mcast_enable") result(status)
      import :: c_int, c_intptr_t
      integer(c_intptr_t), value :: comm
      integer(c_int) :: status
    end function MPICAST_Mcast_enable

    function MPICAST_Imcast(buf, count, datatype, dests, ndests, tag, comm, request_out) &
        bind(C, name="MPICAST_Imcast") result(status)
      import :: c_int, c_intptr_t, c_ptr
      type(c_ptr), value :: buf
      integer(c_int), value :: count
      integer(c_intptr_t), value :: datatype
      integer(c_int), dimension(*), intent(in) :: dests
      integer(c_int), value :: ndests
      integer(c_int), value :: tag
      integer(c_intptr_t), value :: comm
      type(c_ptr), intent(out) :: request_out
      integer(c_int) :: status
    end function MPICAST_Imcast

    ! Collective: multicasts sendcount elements of sendtype at sendbuf to the ndests ranks
    ! in dests, and receives from each of the nsources ranks in sources recvcounts(i)
    ! elements of recvtype at recvbuf + displs(i) extents (see mpicast.h; docs/agents.md).
    ! Handles are C handles (MPICAST_Comm_f2c, MPICAST_Type_f2c).
    function MPICAST_Mmcast(sendbuf, sendcount, sendtype, dests, ndests, recvbuf, &
        recvcounts, displs, recvtype, sources, nsources, comm) &
        bind(C, name="MPICAST_Mmcast") result(status)
      import :: c_int, c_intptr_t, c_ptr
      type(c_ptr), value :: sendbuf
      integer(c_int), value :: sendcount
      integer(c_intptr_t), value :: sendtype
      integer(c_int), dimension(*), intent(in) :: dests
      integer(c_int), value :: ndests
      type(c_ptr), value :: recvbuf
      integer(c_int), dimension(*), intent(in) :: recvcounts
      integer(c_int), dimension(*), intent(in) :: displs
      integer(c_intptr_t), value :: recvtype
      integer(c_int), dimension(*), intent(in) :: sources
      integer(c_int), value :: nsources
      integer(c_intptr_t), value :: comm
      integer(c_int) :: status
    end function MPICAST_Mmcast

    function MPICAST_Mcast_irecv(buf, count, datatype, source, tag, comm, request_out) &
        bind(C, name="MPICAST_Mcast_irecv") result(status)
      import :: c_int, c_intptr_t, c_ptr
      type(c_ptr), value :: buf
      integer(c_int), value :: count
      integer(c_intptr_t), value :: datatype
      integer(c_int), value :: source
      integer(c_int), value :: tag
      integer(c_intptr_t), value :: comm
      type(c_ptr), intent(out) :: request_out
      integer(c_int) :: status
    end function MPICAST_Mcast_irecv

    function MPICAST_Mcast_iprobe(source, tag, comm, flag_out, c_status) &
        bind(C, name="MPICAST_Mcast_iprobe") result(status)
      import :: c_int, c_intptr_t, c_ptr
      integer(c_int), value :: source
      integer(c_int), value :: tag
      integer(c_intptr_t), value :: comm
      integer(c_int), intent(out) :: flag_out
      type(c_ptr), value :: c_status
      integer(c_int) :: status
    end function MPICAST_Mcast_iprobe

    function MPICAST_Wait(request, c_status) bind(C, name="MPICAST_Wait") result(status)
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: request
      type(c_ptr), value :: c_status
      integer(c_int) :: status
    end function MPICAST_Wait

    function MPICAST_Test(request, flag_out, c_status) bind(C, name="MPICAST_Test") &
        result(status)
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: request
      integer(c_int), intent(out) :: flag_out
      type(c_ptr), value :: c_status
      integer(c_int) :: status
    end function MPICAST_Test

    function MPICAST_Waitall(count, requests, c_statuses) bind(C, name="MPICAST_Waitall") &
        result(status)
      import :: c_int, c_ptr
      integer(c_int), value :: count
      type(c_ptr), dimension(*), intent(inout) :: requests
      type(c_ptr), value :: c_statuses
      integer(c_int) :: status
    end function MPICAST_Waitall

    function MPICAST_Testany(count, requests, index_out, flag_out, c_status) &
        bind(C, name="MPICAST_Testany") result(status)
      import :: c_int, c_ptr
      integer(c_int), value :: count
      type(c_ptr), dimension(*), intent(inout) :: requests
      integer(c_int), intent(out) :: index_out
      integer(c_int), intent(out) :: flag_out
      type(c_ptr), value :: c_status
      integer(c_int) :: status
    end function MPICAST_Testany

    function MPICAST_Testsome(count, requests, outcount_out, indices, c_statuses) &
        bind(C, name="MPICAST_Testsome") result(status)
      import :: c_int, c_ptr
      integer(c_int), value :: count
      type(c_ptr), dimension(*), intent(inout) :: requests
      integer(c_int), intent(out) :: outcount_out
      integer(c_int), dimension(*), intent(out) :: indices
      type(c_ptr), value :: c_statuses
      integer(c_int) :: status
    end function MPICAST_Testsome

    ! mpi_request_out is the C MPI_Request (MPI_Request_f2c/c2f convert it).
    function MPICAST_Request_mpi(request, mpi_request_out) bind(C, name="MPICAST_Request_mpi") &
        result(status)
      import :: c_int, c_intptr_t, c_ptr
      type(c_ptr), intent(inout) :: request
      integer(c_intptr_t), intent(out) :: mpi_request_out
      integer(c_int) :: status
    end function MPICAST_Request_mpi

    function MPICAST_Request_free(request) bind(C, name="MPICAST_Request_free") &
        result(status)
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: request
      integer(c_int) :: status
    end function MPICAST_Request_free
  end interface
end module mpicast

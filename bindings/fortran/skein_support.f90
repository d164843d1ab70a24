! SPDX-License-Identifier: BSD-3-Clause
! Module skein_support: what every part of the module `skein` shares: the handle types, the
! strings between Fortran and C, and the error convention.
!
! Errors follow mpi_f08's optional ierror: every procedure of `skein` takes an optional
! `integer, intent(out) :: ierr`. Present, it receives SKEIN_SUCCESS (0) or the failing call's
! skein_status, and the program goes on; absent, a failure prints the message to error_unit and
! ends the program with `error stop`. Either way the message stays available from
! skein_error_message() until the next failure.
module skein_support
  use, intrinsic :: iso_c_binding, only: c_int, c_size_t, c_ptr, c_char, c_null_char, c_null_ptr, &
                                         c_associated, c_f_pointer, c_loc
  use, intrinsic :: iso_fortran_env, only: error_unit
  use skein_c_types
  use skein_c_api, only: c_skein_last_error_message, c_strlen, c_skein_dtype_name
  implicit none
  private

  ! The handles: each holds the C API's opaque pointer (`handle`, c_null_ptr until created and
  ! after destroyed), which a call of skein_c_api takes as it is.
  type, public :: skein_runtime
    type(c_ptr) :: handle = c_null_ptr
  end type
  type, public :: skein_queue
    type(c_ptr) :: handle = c_null_ptr
  end type
  type, public :: skein_array
    type(c_ptr) :: handle = c_null_ptr
  end type
  type, public :: skein_communicator
    type(c_ptr) :: handle = c_null_ptr
  end type
  type, public :: skein_grid
    type(c_ptr) :: handle = c_null_ptr
  end type
  type, public :: skein_kernel
    type(c_ptr) :: handle = c_null_ptr
  end type
  type, public :: skein_hdf5_file
    type(c_ptr) :: handle = c_null_ptr
  end type
  type, public :: skein_checkpoint
    type(c_ptr) :: handle = c_null_ptr
  end type

  ! The Fortran kinds a host array may have, by the dtypes whose elements they hold (the first
  ! dtype named is the kind's own; the others share its storage: unsigned integers, float16 and
  ! bfloat16 as 16-bit patterns).
  integer, parameter, public :: HOST_INT8 = 1      ! integer(c_int8_t): int8, uint8
  integer, parameter, public :: HOST_INT16 = 2     ! integer(c_int16_t): int16, uint16, float16, bfloat16
  integer, parameter, public :: HOST_INT32 = 3     ! integer(c_int32_t): int32, uint32
  integer, parameter, public :: HOST_INT64 = 4     ! integer(c_int64_t): int64, uint64
  integer, parameter, public :: HOST_FLOAT32 = 5   ! real(c_float): float32
  integer, parameter, public :: HOST_FLOAT64 = 6   ! real(c_double): float64
  integer, parameter, public :: HOST_COMPLEX64 = 7 ! complex(c_float_complex): complex64
  integer, parameter, public :: HOST_COMPLEX128 = 8 ! complex(c_double_complex): complex128
  integer, parameter :: host_bytes(8) = [1, 2, 4, 8, 4, 8, 8, 16]
  character(len=*), parameter :: host_names(8) = [character(len=25) :: "integer(c_int8_t)", &
    "integer(c_int16_t)", "integer(c_int32_t)", "integer(c_int64_t)", "real(c_float)", &
    "real(c_double)", "complex(c_float_complex)", "complex(c_double_complex)"]

  public :: skein_error_message, skein_check, skein_fail, skein_c_string, skein_f_string
  public :: skein_host_address, skein_host_nbytes, skein_check_host_kind, skein_sizes
  public :: skein_order, skein_itoa

  ! The message of the last failure (from C, or from a check made here). One per thread under
  ! OpenMP, as the C API's.
  character(len=:), allocatable, save :: last_message
  !$omp threadprivate(last_message)

contains

  ! The message of the last failing call: what was wrong, the C function that failed, rank and
  ! device where known, and what to do ("" when none failed).
  function skein_error_message() result(message)
    character(len=:), allocatable :: message
    if (allocated(last_message)) then
      message = last_message
    else
      message = ""
    end if
  end function

  ! After a C call: nothing when it succeeded (ierr = 0 if present), else the C API's message is
  ! kept and the failure reported by the convention above.
  subroutine skein_check(status, ierr)
    integer(c_int), intent(in) :: status
    integer, intent(out), optional :: ierr
    if (status == SKEIN_SUCCESS) then
      if (present(ierr)) ierr = SKEIN_SUCCESS
      return
    end if
    call skein_fail(status, skein_f_string(c_skein_last_error_message()), ierr)
  end subroutine

  ! A failure found on the Fortran side (a wrong kind or size of array, arrays of unequal
  ! lengths): `message` should name the C function the procedure wraps, as the C API's do.
  subroutine skein_fail(status, message, ierr)
    integer(c_int), intent(in) :: status
    character(len=*), intent(in) :: message
    integer, intent(out), optional :: ierr
    last_message = message
    if (present(ierr)) then
      ierr = status
      return
    end if
    write (error_unit, '(a)') "skein: error: " // message
    write (error_unit, '(a)') "skein: (pass ierr= to handle errors in the program instead)"
    error stop status
  end subroutine

  ! A Fortran string as C needs it: without trailing blanks (those of a fixed-length variable),
  ! NUL-terminated. Passed where C takes a const char*.
  pure function skein_c_string(text) result(c_text)
    character(len=*), intent(in) :: text
    character(kind=c_char, len=:), allocatable :: c_text
    c_text = trim(text) // c_null_char
  end function

  ! A NUL-terminated C string as a Fortran string ("" for NULL).
  function skein_f_string(c_text) result(text)
    type(c_ptr), intent(in) :: c_text
    character(len=:), allocatable :: text
    character(kind=c_char), pointer :: chars(:)
    integer :: n, i
    if (.not. c_associated(c_text)) then
      text = ""
      return
    end if
    n = int(c_strlen(c_text))
    call c_f_pointer(c_text, chars, [n])
    allocate (character(len=n) :: text)
    do i = 1, n
      text(i:i) = chars(i)
    end do
  end function

  ! The address of a host array's first element for C (c_null_ptr for an empty one, which C_LOC
  ! need not accept). The array is contiguous here: the wrappers' dummies are, so a section was
  ! copied in before they run, and the address stays valid while they do.
  function skein_host_address(host) result(address)
    type(*), target, contiguous :: host(..)
    type(c_ptr) :: address
    address = c_null_ptr
    if (size(host) > 0) address = c_loc(host)
  end function

  ! Bytes of `elements` elements of a host kind (HOST_*).
  pure function skein_host_nbytes(elements, host_kind) result(nbytes)
    integer(c_size_t), intent(in) :: elements
    integer, intent(in) :: host_kind
    integer(c_size_t) :: nbytes
    nbytes = elements * int(host_bytes(host_kind), c_size_t)
  end function

  ! Whether a host array of kind `host_kind` holds the elements of `dtype`; else a failure with
  ! INVALID_ARGUMENT naming the C function `call` (ierr as above). `ok` says which.
  subroutine skein_check_host_kind(call, dtype, host_kind, ok, ierr)
    character(len=*), intent(in) :: call
    integer(c_int), intent(in) :: dtype
    integer, intent(in) :: host_kind
    logical, intent(out) :: ok
    integer, intent(out), optional :: ierr
    ok = host_kind_of(dtype) == host_kind
    if (ok) return
    call skein_fail(SKEIN_ERROR_INVALID_ARGUMENT, call // ": the host array is " // &
                    trim(host_names(host_kind)) // " but the data are " // &
                    skein_f_string(c_skein_dtype_name(dtype)) // ": pass an array of " // &
                    trim(host_names(host_kind_of(dtype))) // " (the kind that holds " // &
                    skein_f_string(c_skein_dtype_name(dtype)) // ")", ierr)
  end subroutine

  ! The host kind holding `dtype`'s elements (HOST_*).
  pure function host_kind_of(dtype) result(host_kind)
    integer(c_int), intent(in) :: dtype
    integer :: host_kind
    select case (dtype)
    case (SKEIN_INT8, SKEIN_UINT8)
      host_kind = HOST_INT8
    case (SKEIN_INT16, SKEIN_UINT16, SKEIN_FLOAT16, SKEIN_BFLOAT16)
      host_kind = HOST_INT16
    case (SKEIN_INT32, SKEIN_UINT32)
      host_kind = HOST_INT32
    case (SKEIN_INT64, SKEIN_UINT64)
      host_kind = HOST_INT64
    case (SKEIN_FLOAT32)
      host_kind = HOST_FLOAT32
    case (SKEIN_COMPLEX64)
      host_kind = HOST_COMPLEX64
    case (SKEIN_COMPLEX128)
      host_kind = HOST_COMPLEX128
    case default
      host_kind = HOST_FLOAT64
    end select
  end function

  ! Default integers as C's size_t (per-axis values: shapes, halos, process grids). A negative
  ! value would wrap around to a huge size: C then refuses it as too large, naming the call.
  pure function skein_sizes(values) result(sizes)
    integer, intent(in) :: values(:)
    integer(c_size_t) :: sizes(size(values))
    sizes = int(values, c_size_t)
  end function

  ! `order` when present, else Fortran order (the default of every procedure here).
  pure integer(c_int) function skein_order(order)
    integer(c_int), intent(in), optional :: order
    skein_order = SKEIN_ORDER_FORTRAN
    if (present(order)) skein_order = order
  end function

  ! An integer as text, for messages.
  pure function skein_itoa(value) result(text)
    integer, intent(in) :: value
    character(len=:), allocatable :: text
    character(len=24) :: buffer
    write (buffer, '(i0)') value
    text = trim(buffer)
  end function
end module skein_support

! SPDX-License-Identifier: BSD-3-Clause
! What the Fortran module's tests share: the failure count (combined over the ranks at the end by
! the main program, so that a failure anywhere fails every rank), checks that report rank and what
! failed, and the conversions between small integers and every dtype's host storage, so that one
! reference computed in integer(int64) on the host checks a collective in any dtype.
module fortran_test_support
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: error_unit, int64
  use skein
  implicit none
  private

  public :: check, check_equal, failures, my_rank, set_rank, upload, download, all_dtypes
  public :: contains_text, check_error

  integer, save :: failures = 0
  integer, save :: my_rank = 0

  ! Every dtype, in skein_dtype's order.
  integer(c_int), parameter :: all_dtypes(14) = [SKEIN_INT8, SKEIN_INT16, SKEIN_INT32, &
    SKEIN_INT64, SKEIN_UINT8, SKEIN_UINT16, SKEIN_UINT32, SKEIN_UINT64, SKEIN_FLOAT16, &
    SKEIN_BFLOAT16, SKEIN_FLOAT32, SKEIN_FLOAT64, SKEIN_COMPLEX64, SKEIN_COMPLEX128]

contains

  subroutine set_rank(rank)
    integer, intent(in) :: rank
    my_rank = rank
  end subroutine

  subroutine check(condition, what)
    logical, intent(in) :: condition
    character(len=*), intent(in) :: what
    if (condition) return
    failures = failures + 1
    write (error_unit, '(a, i0, a)') "FAILED on rank ", my_rank, ": " // what
  end subroutine

  ! Integer arrays, equal element by element; the first difference is reported.
  subroutine check_equal(got, expected, what)
    integer(int64), intent(in) :: got(:), expected(:)
    character(len=*), intent(in) :: what
    integer :: i
    if (size(got) /= size(expected)) then
      call check(.false., what // ": sizes differ")
      return
    end if
    do i = 1, size(got)
      if (got(i) /= expected(i)) then
        failures = failures + 1
        write (error_unit, '(a, i0, a, i0, a, i0, a, i0)') "FAILED on rank ", my_rank, ": " // &
          what // ": element ", i, " is ", got(i), ", expected ", expected(i)
        return
      end if
    end do
  end subroutine

  logical function contains_text(text, part)
    character(len=*), intent(in) :: text, part
    contains_text = index(text, part) > 0
  end function

  ! A call that must have failed with `status`, its message naming `call`.
  subroutine check_error(ierr, status, call, what)
    integer, intent(in) :: ierr
    integer(c_int), intent(in) :: status
    character(len=*), intent(in) :: call, what
    character(len=:), allocatable :: message
    message = skein_error_message()
    call check(ierr == status, what // ": ierr is " // skein_status_name(ierr) // ", expected " // &
               skein_status_name(int(status)) // " (" // message // ")")
    call check(contains_text(message, call), what // ": the message does not name " // call // &
               ": '" // message // "'")
  end subroutine

  ! The bits of a small whole number (|v| < 2048) as float16 and as bfloat16 (|v| < 256).
  integer(c_int16_t) function half_bits(v)
    integer(int64), intent(in) :: v
    integer :: e, bits
    integer(int64) :: a
    a = abs(v)
    if (a == 0) then
      half_bits = 0
      return
    end if
    e = 0
    do while (ishft(a, -(e + 1)) > 0)
      e = e + 1
    end do
    bits = ior(ishft(e + 15, 10), int(ishft(a - ishft(1_int64, e), 10 - e)))
    if (v < 0) bits = ior(bits, 32768)
    half_bits = int(bits - merge(65536, 0, bits > 32767), c_int16_t)
  end function

  integer(int64) function from_half(bits16)
    integer(c_int16_t), intent(in) :: bits16
    integer :: bits, e
    bits = iand(int(bits16), 65535)
    if (iand(bits, 32767) == 0) then
      from_half = 0
      return
    end if
    e = iand(ishft(bits, -10), 31) - 15
    from_half = ishft(int(ior(iand(bits, 1023), 1024), int64), e) / 1024
    if (e >= 10) from_half = ishft(int(ior(iand(bits, 1023), 1024), int64), e - 10)
    if (iand(bits, 32768) /= 0) from_half = -from_half
  end function

  integer(c_int16_t) function bfloat_bits(v)
    integer(int64), intent(in) :: v
    integer(c_int32_t) :: word
    word = transfer(real(v, c_float), word)
    bfloat_bits = int(ishft(word, -16) - merge(65536, 0, ishft(word, -16) > 32767), c_int16_t)
  end function

  integer(int64) function from_bfloat(bits16)
    integer(c_int16_t), intent(in) :: bits16
    integer(c_int32_t) :: word
    word = ishft(int(iand(int(bits16), 65535), c_int32_t), 16)
    from_bfloat = nint(transfer(word, 1.0_c_float), int64)
  end function

  ! values(:) into the array (its dtype's storage; unsigned values as their bit patterns,
  ! complex as (v, -2 v)).
  subroutine upload(array, dtype, values)
    type(skein_array), intent(in) :: array
    integer(c_int), intent(in) :: dtype
    integer(int64), intent(in) :: values(:)
    integer :: i
    select case (dtype)
    case (SKEIN_INT8, SKEIN_UINT8)
      call skein_array_from_host(array, int(values - merge(256, 0, values > 127), c_int8_t))
    case (SKEIN_INT16, SKEIN_UINT16)
      call skein_array_from_host(array, int(values - merge(65536, 0, values > 32767), c_int16_t))
    case (SKEIN_FLOAT16)
      call skein_array_from_host(array, [(half_bits(values(i)), i = 1, size(values))])
    case (SKEIN_BFLOAT16)
      call skein_array_from_host(array, [(bfloat_bits(values(i)), i = 1, size(values))])
    case (SKEIN_INT32, SKEIN_UINT32)
      call skein_array_from_host(array, int(values - merge(2_int64**32, 0_int64, &
                                                             values > 2_int64**31 - 1), c_int32_t))
    case (SKEIN_INT64, SKEIN_UINT64)
      call skein_array_from_host(array, int(values, c_int64_t))
    case (SKEIN_FLOAT32)
      call skein_array_from_host(array, real(values, c_float))
    case (SKEIN_FLOAT64)
      call skein_array_from_host(array, real(values, c_double))
    case (SKEIN_COMPLEX64)
      call skein_array_from_host(array, cmplx(values, -2 * values, c_float_complex))
    case default
      call skein_array_from_host(array, cmplx(values, -2 * values, c_double_complex))
    end select
  end subroutine

  ! The array's n values back as integers (unsigned read as unsigned; a complex value whose
  ! imaginary part is not -2 times its real part comes back as huge(1_int64), so it fails).
  function download(array, dtype, n) result(values)
    type(skein_array), intent(in) :: array
    integer(c_int), intent(in) :: dtype
    integer, intent(in) :: n
    integer(int64) :: values(n)
    integer(c_int8_t) :: i8(n)
    integer(c_int16_t) :: i16(n)
    integer(c_int32_t) :: i32(n)
    integer(c_int64_t) :: i64(n)
    real(c_float) :: r32(n)
    real(c_double) :: r64(n)
    complex(c_float_complex) :: c64(n)
    complex(c_double_complex) :: c128(n)
    integer :: i
    select case (dtype)
    case (SKEIN_INT8, SKEIN_UINT8)
      call skein_array_to_host(array, i8)
      values = i8
      if (dtype == SKEIN_UINT8) values = iand(values, 255_int64)
    case (SKEIN_INT16, SKEIN_UINT16, SKEIN_FLOAT16, SKEIN_BFLOAT16)
      call skein_array_to_host(array, i16)
      values = i16
      if (dtype == SKEIN_UINT16) values = iand(values, 65535_int64)
      if (dtype == SKEIN_FLOAT16) values = [(from_half(i16(i)), i = 1, n)]
      if (dtype == SKEIN_BFLOAT16) values = [(from_bfloat(i16(i)), i = 1, n)]
    case (SKEIN_INT32, SKEIN_UINT32)
      call skein_array_to_host(array, i32)
      values = i32
      if (dtype == SKEIN_UINT32) values = iand(values, 4294967295_int64)
    case (SKEIN_INT64, SKEIN_UINT64)
      call skein_array_to_host(array, i64)
      values = i64
    case (SKEIN_FLOAT32)
      call skein_array_to_host(array, r32)
      values = nint(r32, int64)
    case (SKEIN_FLOAT64)
      call skein_array_to_host(array, r64)
      values = nint(r64, int64)
    case (SKEIN_COMPLEX64)
      call skein_array_to_host(array, c64)
      values = nint(real(c64), int64)
      where (nint(aimag(c64), int64) /= -2 * values) values = huge(1_int64)
    case default
      call skein_array_to_host(array, c128)
      values = nint(real(c128), int64)
      where (nint(aimag(c128), int64) /= -2 * values) values = huge(1_int64)
    end select
  end function
end module fortran_test_support

! SPDX-License-Identifier: BSD-3-Clause
! Module skein_host_copies: the copies between Fortran arrays on the host and Skein's grids and
! arrays, as generic procedures over the kinds that hold Skein's dtypes:
!   integer(c_int8_t)   int8, uint8         real(c_float)             float32
!   integer(c_int16_t)  int16, uint16,      real(c_double)            float64
!                       float16, bfloat16   complex(c_float_complex)  complex64
!   integer(c_int32_t)  int32, uint32       complex(c_double_complex) complex128
!   integer(c_int64_t)  int64, uint64
! (unsigned values, float16 and bfloat16 as the bit patterns of their storage). A host array of
! another kind than the data's is refused (INVALID_ARGUMENT, naming the call and the kind to
! pass); one of another size is refused by the C API. The host array may have any rank (u(nx, ny)
! for a grid of shape [nx, ny], or a flat or scalar buffer of the same elements) and may be a
! section: it is then copied into a contiguous temporary and back, as for any contiguous dummy.
!
!   call skein_grid_scatter(grid, host [, root] [, ierr])        collective; host read on root
!   call skein_grid_gather(grid, host [, root] [, ierr])         collective; host written on root
!   call skein_grid_local_to_host(grid, local, host [, ierr])    local block `local` (0-based),
!   call skein_grid_local_from_host(grid, local, host [, ierr])  its points without halo
!   call skein_array_to_host(array, host [, ierr])               the whole array
!   call skein_array_from_host(array, host [, ierr])
!
! root is a rank of the runtime (default 0). The grids' host data are the whole global array (for
! scatter and gather) or the block's points, in the grid's order, components first in Fortran
! order. Each specific procedure below only hands its kind on to one worker (copy_grid,
! copy_array): they are alike by design, one per kind.
module skein_host_copies
  use, intrinsic :: iso_c_binding, only: c_int, c_size_t, c_ptr, c_int8_t, c_int16_t, c_int32_t, &
                                         c_int64_t, c_float, c_double, c_float_complex, &
                                         c_double_complex
  use skein_c_types
  use skein_c_api
  use skein_support
  implicit none
  private

  public :: skein_grid_scatter
  public :: skein_grid_gather
  public :: skein_grid_local_to_host
  public :: skein_grid_local_from_host
  public :: skein_array_to_host
  public :: skein_array_from_host

  integer, parameter :: OP_SCATTER = 1, OP_GATHER = 2, OP_LOCAL_TO_HOST = 3
  integer, parameter :: OP_LOCAL_FROM_HOST = 4, OP_ARRAY_TO_HOST = 5, OP_ARRAY_FROM_HOST = 6

  interface skein_grid_scatter
    module procedure scatter_i8, scatter_i16, scatter_i32, scatter_i64
    module procedure scatter_r32, scatter_r64, scatter_c64, scatter_c128
  end interface
  interface skein_grid_gather
    module procedure gather_i8, gather_i16, gather_i32, gather_i64
    module procedure gather_r32, gather_r64, gather_c64, gather_c128
  end interface
  interface skein_grid_local_to_host
    module procedure local_to_host_i8, local_to_host_i16, local_to_host_i32, local_to_host_i64
    module procedure local_to_host_r32, local_to_host_r64, local_to_host_c64, local_to_host_c128
  end interface
  interface skein_grid_local_from_host
    module procedure local_from_host_i8, local_from_host_i16, local_from_host_i32, local_from_host_i64
    module procedure local_from_host_r32, local_from_host_r64, local_from_host_c64, local_from_host_c128
  end interface
  interface skein_array_to_host
    module procedure array_to_host_i8, array_to_host_i16, array_to_host_i32, array_to_host_i64
    module procedure array_to_host_r32, array_to_host_r64, array_to_host_c64, array_to_host_c128
  end interface
  interface skein_array_from_host
    module procedure array_from_host_i8, array_from_host_i16, array_from_host_i32, array_from_host_i64
    module procedure array_from_host_r32, array_from_host_r64, array_from_host_c64, array_from_host_c128
  end interface

contains

  subroutine scatter_i8(grid, host, root, ierr)
    type(skein_grid), intent(in) :: grid
    integer(c_int8_t), intent(in), target, contiguous :: host(..)
    integer, intent(in), optional :: root
    integer, intent(out), optional :: ierr
    call copy_grid(OP_SCATTER, grid, root_or_0(root), skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_INT8, ierr)
  end subroutine

  subroutine scatter_i16(grid, host, root, ierr)
    type(skein_grid), intent(in) :: grid
    integer(c_int16_t), intent(in), target, contiguous :: host(..)
    integer, intent(in), optional :: root
    integer, intent(out), optional :: ierr
    call copy_grid(OP_SCATTER, grid, root_or_0(root), skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_INT16, ierr)
  end subroutine

  subroutine scatter_i32(grid, host, root, ierr)
    type(skein_grid), intent(in) :: grid
    integer(c_int32_t), intent(in), target, contiguous :: host(..)
    integer, intent(in), optional :: root
    integer, intent(out), optional :: ierr
    call copy_grid(OP_SCATTER, grid, root_or_0(root), skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_INT32, ierr)
  end subroutine

  subroutine scatter_i64(grid, host, root, ierr)
    type(skein_grid), intent(in) :: grid
    integer(c_int64_t), intent(in), target, contiguous :: host(..)
    integer, intent(in), optional :: root
    integer, intent(out), optional :: ierr
    call copy_grid(OP_SCATTER, grid, root_or_0(root), skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_INT64, ierr)
  end subroutine

  subroutine scatter_r32(grid, host, root, ierr)
    type(skein_grid), intent(in) :: grid
    real(c_float), intent(in), target, contiguous :: host(..)
    integer, intent(in), optional :: root
    integer, intent(out), optional :: ierr
    call copy_grid(OP_SCATTER, grid, root_or_0(root), skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_FLOAT32, ierr)
  end subroutine

  subroutine scatter_r64(grid, host, root, ierr)
    type(skein_grid), intent(in) :: grid
    real(c_double), intent(in), target, contiguous :: host(..)
    integer, intent(in), optional :: root
    integer, intent(out), optional :: ierr
    call copy_grid(OP_SCATTER, grid, root_or_0(root), skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_FLOAT64, ierr)
  end subroutine

  subroutine scatter_c64(grid, host, root, ierr)
    type(skein_grid), intent(in) :: grid
    complex(c_float_complex), intent(in), target, contiguous :: host(..)
    integer, intent(in), optional :: root
    integer, intent(out), optional :: ierr
    call copy_grid(OP_SCATTER, grid, root_or_0(root), skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_COMPLEX64, ierr)
  end subroutine

  subroutine scatter_c128(grid, host, root, ierr)
    type(skein_grid), intent(in) :: grid
    complex(c_double_complex), intent(in), target, contiguous :: host(..)
    integer, intent(in), optional :: root
    integer, intent(out), optional :: ierr
    call copy_grid(OP_SCATTER, grid, root_or_0(root), skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_COMPLEX128, ierr)
  end subroutine

  subroutine gather_i8(grid, host, root, ierr)
    type(skein_grid), intent(in) :: grid
    integer(c_int8_t), intent(inout), target, contiguous :: host(..)
    integer, intent(in), optional :: root
    integer, intent(out), optional :: ierr
    call copy_grid(OP_GATHER, grid, root_or_0(root), skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_INT8, ierr)
  end subroutine

  subroutine gather_i16(grid, host, root, ierr)
    type(skein_grid), intent(in) :: grid
    integer(c_int16_t), intent(inout), target, contiguous :: host(..)
    integer, intent(in), optional :: root
    integer, intent(out), optional :: ierr
    call copy_grid(OP_GATHER, grid, root_or_0(root), skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_INT16, ierr)
  end subroutine

  subroutine gather_i32(grid, host, root, ierr)
    type(skein_grid), intent(in) :: grid
    integer(c_int32_t), intent(inout), target, contiguous :: host(..)
    integer, intent(in), optional :: root
    integer, intent(out), optional :: ierr
    call copy_grid(OP_GATHER, grid, root_or_0(root), skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_INT32, ierr)
  end subroutine

  subroutine gather_i64(grid, host, root, ierr)
    type(skein_grid), intent(in) :: grid
    integer(c_int64_t), intent(inout), target, contiguous :: host(..)
    integer, intent(in), optional :: root
    integer, intent(out), optional :: ierr
    call copy_grid(OP_GATHER, grid, root_or_0(root), skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_INT64, ierr)
  end subroutine

  subroutine gather_r32(grid, host, root, ierr)
    type(skein_grid), intent(in) :: grid
    real(c_float), intent(inout), target, contiguous :: host(..)
    integer, intent(in), optional :: root
    integer, intent(out), optional :: ierr
    call copy_grid(OP_GATHER, grid, root_or_0(root), skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_FLOAT32, ierr)
  end subroutine

  subroutine gather_r64(grid, host, root, ierr)
    type(skein_grid), intent(in) :: grid
    real(c_double), intent(inout), target, contiguous :: host(..)
    integer, intent(in), optional :: root
    integer, intent(out), optional :: ierr
    call copy_grid(OP_GATHER, grid, root_or_0(root), skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_FLOAT64, ierr)
  end subroutine

  subroutine gather_c64(grid, host, root, ierr)
    type(skein_grid), intent(in) :: grid
    complex(c_float_complex), intent(inout), target, contiguous :: host(..)
    integer, intent(in), optional :: root
    integer, intent(out), optional :: ierr
    call copy_grid(OP_GATHER, grid, root_or_0(root), skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_COMPLEX64, ierr)
  end subroutine

  subroutine gather_c128(grid, host, root, ierr)
    type(skein_grid), intent(in) :: grid
    complex(c_double_complex), intent(inout), target, contiguous :: host(..)
    integer, intent(in), optional :: root
    integer, intent(out), optional :: ierr
    call copy_grid(OP_GATHER, grid, root_or_0(root), skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_COMPLEX128, ierr)
  end subroutine

  subroutine local_to_host_i8(grid, local, host, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(in) :: local
    integer(c_int8_t), intent(out), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_grid(OP_LOCAL_TO_HOST, grid, local, skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_INT8, ierr)
  end subroutine

  subroutine local_to_host_i16(grid, local, host, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(in) :: local
    integer(c_int16_t), intent(out), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_grid(OP_LOCAL_TO_HOST, grid, local, skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_INT16, ierr)
  end subroutine

  subroutine local_to_host_i32(grid, local, host, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(in) :: local
    integer(c_int32_t), intent(out), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_grid(OP_LOCAL_TO_HOST, grid, local, skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_INT32, ierr)
  end subroutine

  subroutine local_to_host_i64(grid, local, host, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(in) :: local
    integer(c_int64_t), intent(out), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_grid(OP_LOCAL_TO_HOST, grid, local, skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_INT64, ierr)
  end subroutine

  subroutine local_to_host_r32(grid, local, host, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(in) :: local
    real(c_float), intent(out), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_grid(OP_LOCAL_TO_HOST, grid, local, skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_FLOAT32, ierr)
  end subroutine

  subroutine local_to_host_r64(grid, local, host, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(in) :: local
    real(c_double), intent(out), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_grid(OP_LOCAL_TO_HOST, grid, local, skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_FLOAT64, ierr)
  end subroutine

  subroutine local_to_host_c64(grid, local, host, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(in) :: local
    complex(c_float_complex), intent(out), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_grid(OP_LOCAL_TO_HOST, grid, local, skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_COMPLEX64, ierr)
  end subroutine

  subroutine local_to_host_c128(grid, local, host, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(in) :: local
    complex(c_double_complex), intent(out), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_grid(OP_LOCAL_TO_HOST, grid, local, skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_COMPLEX128, ierr)
  end subroutine

  subroutine local_from_host_i8(grid, local, host, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(in) :: local
    integer(c_int8_t), intent(in), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_grid(OP_LOCAL_FROM_HOST, grid, local, skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_INT8, ierr)
  end subroutine

  subroutine local_from_host_i16(grid, local, host, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(in) :: local
    integer(c_int16_t), intent(in), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_grid(OP_LOCAL_FROM_HOST, grid, local, skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_INT16, ierr)
  end subroutine

  subroutine local_from_host_i32(grid, local, host, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(in) :: local
    integer(c_int32_t), intent(in), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_grid(OP_LOCAL_FROM_HOST, grid, local, skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_INT32, ierr)
  end subroutine

  subroutine local_from_host_i64(grid, local, host, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(in) :: local
    integer(c_int64_t), intent(in), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_grid(OP_LOCAL_FROM_HOST, grid, local, skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_INT64, ierr)
  end subroutine

  subroutine local_from_host_r32(grid, local, host, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(in) :: local
    real(c_float), intent(in), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_grid(OP_LOCAL_FROM_HOST, grid, local, skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_FLOAT32, ierr)
  end subroutine

  subroutine local_from_host_r64(grid, local, host, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(in) :: local
    real(c_double), intent(in), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_grid(OP_LOCAL_FROM_HOST, grid, local, skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_FLOAT64, ierr)
  end subroutine

  subroutine local_from_host_c64(grid, local, host, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(in) :: local
    complex(c_float_complex), intent(in), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_grid(OP_LOCAL_FROM_HOST, grid, local, skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_COMPLEX64, ierr)
  end subroutine

  subroutine local_from_host_c128(grid, local, host, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(in) :: local
    complex(c_double_complex), intent(in), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_grid(OP_LOCAL_FROM_HOST, grid, local, skein_host_address(host), &
                   size(host, kind=c_size_t), HOST_COMPLEX128, ierr)
  end subroutine

  subroutine array_to_host_i8(array, host, ierr)
    type(skein_array), intent(in) :: array
    integer(c_int8_t), intent(out), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_array(OP_ARRAY_TO_HOST, array, skein_host_address(host), size(host, kind=c_size_t), &
                    HOST_INT8, ierr)
  end subroutine

  subroutine array_to_host_i16(array, host, ierr)
    type(skein_array), intent(in) :: array
    integer(c_int16_t), intent(out), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_array(OP_ARRAY_TO_HOST, array, skein_host_address(host), size(host, kind=c_size_t), &
                    HOST_INT16, ierr)
  end subroutine

  subroutine array_to_host_i32(array, host, ierr)
    type(skein_array), intent(in) :: array
    integer(c_int32_t), intent(out), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_array(OP_ARRAY_TO_HOST, array, skein_host_address(host), size(host, kind=c_size_t), &
                    HOST_INT32, ierr)
  end subroutine

  subroutine array_to_host_i64(array, host, ierr)
    type(skein_array), intent(in) :: array
    integer(c_int64_t), intent(out), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_array(OP_ARRAY_TO_HOST, array, skein_host_address(host), size(host, kind=c_size_t), &
                    HOST_INT64, ierr)
  end subroutine

  subroutine array_to_host_r32(array, host, ierr)
    type(skein_array), intent(in) :: array
    real(c_float), intent(out), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_array(OP_ARRAY_TO_HOST, array, skein_host_address(host), size(host, kind=c_size_t), &
                    HOST_FLOAT32, ierr)
  end subroutine

  subroutine array_to_host_r64(array, host, ierr)
    type(skein_array), intent(in) :: array
    real(c_double), intent(out), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_array(OP_ARRAY_TO_HOST, array, skein_host_address(host), size(host, kind=c_size_t), &
                    HOST_FLOAT64, ierr)
  end subroutine

  subroutine array_to_host_c64(array, host, ierr)
    type(skein_array), intent(in) :: array
    complex(c_float_complex), intent(out), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_array(OP_ARRAY_TO_HOST, array, skein_host_address(host), size(host, kind=c_size_t), &
                    HOST_COMPLEX64, ierr)
  end subroutine

  subroutine array_to_host_c128(array, host, ierr)
    type(skein_array), intent(in) :: array
    complex(c_double_complex), intent(out), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_array(OP_ARRAY_TO_HOST, array, skein_host_address(host), size(host, kind=c_size_t), &
                    HOST_COMPLEX128, ierr)
  end subroutine

  subroutine array_from_host_i8(array, host, ierr)
    type(skein_array), intent(in) :: array
    integer(c_int8_t), intent(in), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_array(OP_ARRAY_FROM_HOST, array, skein_host_address(host), size(host, kind=c_size_t), &
                    HOST_INT8, ierr)
  end subroutine

  subroutine array_from_host_i16(array, host, ierr)
    type(skein_array), intent(in) :: array
    integer(c_int16_t), intent(in), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_array(OP_ARRAY_FROM_HOST, array, skein_host_address(host), size(host, kind=c_size_t), &
                    HOST_INT16, ierr)
  end subroutine

  subroutine array_from_host_i32(array, host, ierr)
    type(skein_array), intent(in) :: array
    integer(c_int32_t), intent(in), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_array(OP_ARRAY_FROM_HOST, array, skein_host_address(host), size(host, kind=c_size_t), &
                    HOST_INT32, ierr)
  end subroutine

  subroutine array_from_host_i64(array, host, ierr)
    type(skein_array), intent(in) :: array
    integer(c_int64_t), intent(in), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_array(OP_ARRAY_FROM_HOST, array, skein_host_address(host), size(host, kind=c_size_t), &
                    HOST_INT64, ierr)
  end subroutine

  subroutine array_from_host_r32(array, host, ierr)
    type(skein_array), intent(in) :: array
    real(c_float), intent(in), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_array(OP_ARRAY_FROM_HOST, array, skein_host_address(host), size(host, kind=c_size_t), &
                    HOST_FLOAT32, ierr)
  end subroutine

  subroutine array_from_host_r64(array, host, ierr)
    type(skein_array), intent(in) :: array
    real(c_double), intent(in), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_array(OP_ARRAY_FROM_HOST, array, skein_host_address(host), size(host, kind=c_size_t), &
                    HOST_FLOAT64, ierr)
  end subroutine

  subroutine array_from_host_c64(array, host, ierr)
    type(skein_array), intent(in) :: array
    complex(c_float_complex), intent(in), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_array(OP_ARRAY_FROM_HOST, array, skein_host_address(host), size(host, kind=c_size_t), &
                    HOST_COMPLEX64, ierr)
  end subroutine

  subroutine array_from_host_c128(array, host, ierr)
    type(skein_array), intent(in) :: array
    complex(c_double_complex), intent(in), target, contiguous :: host(..)
    integer, intent(out), optional :: ierr
    call copy_array(OP_ARRAY_FROM_HOST, array, skein_host_address(host), size(host, kind=c_size_t), &
                    HOST_COMPLEX128, ierr)
  end subroutine

  ! A grid's copy: the kind checked against the grid's dtype, then the C call with the bytes.
  subroutine copy_grid(op, grid, index, host, elements, host_kind, ierr)
    integer, intent(in) :: op, index, host_kind
    type(skein_grid), intent(in) :: grid
    type(c_ptr), intent(in) :: host
    integer(c_size_t), intent(in) :: elements
    integer, intent(out), optional :: ierr
    character(len=*), parameter :: calls(4) = [character(len=26) :: "skein_grid_scatter", &
      "skein_grid_gather", "skein_grid_local_to_host", "skein_grid_local_from_host"]
    integer(c_int) :: dtype, status
    integer(c_size_t) :: nbytes
    logical :: ok
    dtype = -1
    status = c_skein_grid_dtype(grid%handle, dtype)
    if (status /= SKEIN_SUCCESS) then
      call skein_check(status, ierr)
      return
    end if
    call skein_check_host_kind(trim(calls(op)), dtype, host_kind, ok, ierr)
    if (.not. ok) return
    nbytes = skein_host_nbytes(elements, host_kind)
    select case (op)
    case (OP_SCATTER)
      status = c_skein_grid_scatter(grid%handle, host, nbytes, int(index, c_int))
    case (OP_GATHER)
      status = c_skein_grid_gather(grid%handle, host, nbytes, int(index, c_int))
    case (OP_LOCAL_TO_HOST)
      status = c_skein_grid_local_to_host(grid%handle, int(index, c_size_t), host, nbytes)
    case default
      status = c_skein_grid_local_from_host(grid%handle, int(index, c_size_t), host, nbytes)
    end select
    call skein_check(status, ierr)
  end subroutine

  ! An array's copy, likewise.
  subroutine copy_array(op, array, host, elements, host_kind, ierr)
    integer, intent(in) :: op, host_kind
    type(skein_array), intent(in) :: array
    type(c_ptr), intent(in) :: host
    integer(c_size_t), intent(in) :: elements
    integer, intent(out), optional :: ierr
    integer(c_int) :: dtype, status
    logical :: ok
    dtype = -1
    status = c_skein_array_dtype(array%handle, dtype)
    if (status /= SKEIN_SUCCESS) then
      call skein_check(status, ierr)
      return
    end if
    if (op == OP_ARRAY_TO_HOST) then
      call skein_check_host_kind("skein_array_to_host", dtype, host_kind, ok, ierr)
      if (.not. ok) return
      status = c_skein_array_to_host(array%handle, host, skein_host_nbytes(elements, host_kind))
    else
      call skein_check_host_kind("skein_array_from_host", dtype, host_kind, ok, ierr)
      if (.not. ok) return
      status = c_skein_array_from_host(array%handle, host, skein_host_nbytes(elements, host_kind))
    end if
    call skein_check(status, ierr)
  end subroutine

  pure integer function root_or_0(root)
    integer, intent(in), optional :: root
    root_or_0 = 0
    if (present(root)) root_or_0 = root
  end function
end module skein_host_copies

! SPDX-License-Identifier: BSD-3-Clause
! Module skein_c_types: the enumerators of Skein's C API (bindings/c/include/skein/skein.h) as
! integer(c_int) parameters under their C names, and its option and argument structs as bind(C)
! types of the same names and fields. Both skein_c_api (the bind(C) interfaces) and the user-facing
! module `skein` give them to their users.
module skein_c_types
  use, intrinsic :: iso_c_binding, only: c_int, c_size_t, c_int64_t, c_double, c_ptr, c_null_ptr
  implicit none
  private

  ! ---- skein_status ----
  integer(c_int), parameter, public :: SKEIN_SUCCESS = 0
  integer(c_int), parameter, public :: SKEIN_ERROR_INVALID_ARGUMENT = 1
  integer(c_int), parameter, public :: SKEIN_ERROR_RUNTIME = 2
  integer(c_int), parameter, public :: SKEIN_ERROR_API_UNAVAILABLE = 3
  integer(c_int), parameter, public :: SKEIN_ERROR_OUT_OF_MEMORY = 4
  integer(c_int), parameter, public :: SKEIN_ERROR_LAUNCH = 5
  integer(c_int), parameter, public :: SKEIN_ERROR_COMPILE = 6
  integer(c_int), parameter, public :: SKEIN_ERROR_TIMEOUT = 7
  integer(c_int), parameter, public :: SKEIN_ERROR_CHECKPOINT = 8
  integer(c_int), parameter, public :: SKEIN_ERROR_UNSUPPORTED = 9
  integer(c_int), parameter, public :: SKEIN_ERROR_INTERNAL = 99

  ! ---- skein_dtype ----
  integer(c_int), parameter, public :: SKEIN_INT8 = 0
  integer(c_int), parameter, public :: SKEIN_INT16 = 1
  integer(c_int), parameter, public :: SKEIN_INT32 = 2
  integer(c_int), parameter, public :: SKEIN_INT64 = 3
  integer(c_int), parameter, public :: SKEIN_UINT8 = 4
  integer(c_int), parameter, public :: SKEIN_UINT16 = 5
  integer(c_int), parameter, public :: SKEIN_UINT32 = 6
  integer(c_int), parameter, public :: SKEIN_UINT64 = 7
  integer(c_int), parameter, public :: SKEIN_FLOAT16 = 8
  integer(c_int), parameter, public :: SKEIN_BFLOAT16 = 9
  integer(c_int), parameter, public :: SKEIN_FLOAT32 = 10
  integer(c_int), parameter, public :: SKEIN_FLOAT64 = 11
  integer(c_int), parameter, public :: SKEIN_COMPLEX64 = 12
  integer(c_int), parameter, public :: SKEIN_COMPLEX128 = 13

  ! ---- skein_order, skein_api, skein_reduce_op, skein_backend ----
  integer(c_int), parameter, public :: SKEIN_ORDER_C = 0
  integer(c_int), parameter, public :: SKEIN_ORDER_FORTRAN = 1
  integer(c_int), parameter, public :: SKEIN_API_DEFAULT = 0
  integer(c_int), parameter, public :: SKEIN_API_CUDA = 1
  integer(c_int), parameter, public :: SKEIN_API_OPENCL = 2
  integer(c_int), parameter, public :: SKEIN_SUM = 0
  integer(c_int), parameter, public :: SKEIN_PROD = 1
  integer(c_int), parameter, public :: SKEIN_MIN = 2
  integer(c_int), parameter, public :: SKEIN_MAX = 3
  integer(c_int), parameter, public :: SKEIN_AVG = 4
  integer(c_int), parameter, public :: SKEIN_BACKEND_DEFAULT = 0
  integer(c_int), parameter, public :: SKEIN_BACKEND_NCCL = 1
  integer(c_int), parameter, public :: SKEIN_BACKEND_MPI = 2

  ! ---- skein_boundary_kind, skein_stencil_shape, skein_region, skein_operand_kind ----
  integer(c_int), parameter, public :: SKEIN_BOUNDARY_OPEN = 0
  integer(c_int), parameter, public :: SKEIN_BOUNDARY_PERIODIC = 1
  integer(c_int), parameter, public :: SKEIN_BOUNDARY_REFLECT = 2
  integer(c_int), parameter, public :: SKEIN_BOUNDARY_CONSTANT = 3
  integer(c_int), parameter, public :: SKEIN_STENCIL_STAR = 0
  integer(c_int), parameter, public :: SKEIN_STENCIL_BOX = 1
  integer(c_int), parameter, public :: SKEIN_REGION_ALL = 0
  integer(c_int), parameter, public :: SKEIN_REGION_INTERIOR = 1
  integer(c_int), parameter, public :: SKEIN_REGION_EDGES = 2
  integer(c_int), parameter, public :: SKEIN_OPERAND_GRID = 0
  integer(c_int), parameter, public :: SKEIN_OPERAND_FLOAT64 = 1
  integer(c_int), parameter, public :: SKEIN_OPERAND_FLOAT32 = 2
  integer(c_int), parameter, public :: SKEIN_OPERAND_INT64 = 3
  integer(c_int), parameter, public :: SKEIN_OPERAND_INT32 = 4

  ! ---- the C structs ----
  ! C's enums are int-sized on the ABIs Skein supports (GCC, Clang, NVHPC, Intel on x86-64 and
  ! AArch64), hence integer(c_int) for the enum fields.
  type, bind(C), public :: skein_runtime_options
    integer(c_int) :: api = SKEIN_API_DEFAULT
    integer(c_size_t) :: devices_per_rank = 0
    integer(c_int64_t) :: device_index = -1
    integer(c_int) :: share_devices = -1
    type(c_ptr) :: device_masks = c_null_ptr
  end type

  type, bind(C), public :: skein_communicator_options
    integer(c_int) :: backend = SKEIN_BACKEND_DEFAULT
    real(c_double) :: timeout_seconds = -1
    integer(c_int) :: check_agreement = -1
  end type

  type, bind(C), public :: skein_boundary
    integer(c_int) :: kind = SKEIN_BOUNDARY_OPEN
    real(c_double) :: value = 0
  end type

  type, bind(C), public :: skein_grid_options
    integer(c_int) :: order = SKEIN_ORDER_C
    integer(c_size_t) :: components = 1
    type(c_ptr) :: process_grid = c_null_ptr
    type(c_ptr) :: halo = c_null_ptr
    integer(c_int) :: stencil = SKEIN_STENCIL_STAR
    type(c_ptr) :: lower = c_null_ptr
    type(c_ptr) :: upper = c_null_ptr
  end type

  type, bind(C), public :: skein_operand
    integer(c_int) :: kind = SKEIN_OPERAND_GRID
    type(c_ptr) :: grid = c_null_ptr
    real(c_double) :: real_value = 0
    integer(c_int64_t) :: int_value = 0
  end type
end module skein_c_types

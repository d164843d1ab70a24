! SPDX-License-Identifier: BSD-3-Clause
! Module skein_kernels: kernels written once for CUDA and OpenCL (C-like source in Fortran
! strings), compiled at run time and cached, and run over the local blocks of grids.
!
! The kernels' source is C: it sees the grids in C order. A stencil's operation reads neighbours
! as u(dz, dy, dx), the slowest axis first, which for a Fortran grid u(nx, ny) is u(dy, dx), and
! the point's global index as gidx[a] and the domain's extent as gshape[a], a = 0 the slowest axis
! (gidx[1] is x - 1 and gidx[0] is y - 1 for the Fortran point u(x, y)). E.g. the 5-point heat step
! on u(nx, ny):
!   call skein_kernel_create_stencil(step, "T u, T rx, T ry", "T v", &
!        "v = u + rx * (u(0, -1) + u(0, 1) - 2 * u) + ry * (u(-1, 0) + u(1, 0) - 2 * u)", &
!        name="heat_step")
! Arguments are given as a list of skein_arg(...): a grid, or a scalar of real(c_double),
! real(c_float), integer(c_int64_t) or integer(c_int32_t), in the order of the parameters (the
! inputs, then the outputs, for a stencil).
module skein_kernels
  use, intrinsic :: iso_c_binding, only: c_int, c_size_t, c_int32_t, c_int64_t, c_float, c_double, &
                                         c_ptr, c_loc, c_null_ptr
  use skein_c_types
  use skein_c_api
  use skein_support
  implicit none
  private

  public :: skein_kernel_create_elementwise, skein_kernel_create_stencil, skein_kernel_destroy
  public :: skein_arg, skein_grid_elementwise, skein_grid_stencil, skein_grid_stencil_reduce

  ! An argument of a kernel: a grid or a scalar.
  interface skein_arg
    module procedure arg_grid, arg_float64, arg_float32, arg_int64, arg_int32
  end interface

contains

  ! An elementwise kernel: `params` as "T x, T y, double a" (T: the arguments' dtype), and
  ! `operation` on element i, e.g. "y[i] = a * x[i] + y[i]".
  subroutine skein_kernel_create_elementwise(kernel, params, operation, name, ierr)
    type(skein_kernel), intent(out) :: kernel
    character(len=*), intent(in) :: params, operation
    character(len=*), intent(in), optional :: name
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_kernel_create_elementwise(skein_c_string(params), &
                                                       skein_c_string(operation), &
                                                       skein_c_string(name_or(name, &
                                                                      "fortran_elementwise")), &
                                                       kernel%handle), ierr)
  end subroutine

  ! A stencil kernel: inputs, outputs and the operation on one point (see above). With `map`, it
  ! also reduces `map` (a double expression of the operation's names, e.g. "fabs(v - u)") by
  ! `reduce` (of a and b, e.g. "fmax(a, b)") from `identity` (e.g. "0"): skein_grid_stencil_reduce.
  subroutine skein_kernel_create_stencil(kernel, in_params, out_params, operation, map, reduce, &
                                         identity, name, ierr)
    type(skein_kernel), intent(out) :: kernel
    character(len=*), intent(in) :: in_params, out_params, operation
    character(len=*), intent(in), optional :: map, reduce, identity, name
    integer, intent(out), optional :: ierr
    character(len=:), allocatable, target :: c_map, c_reduce, c_identity
    type(c_ptr) :: map_ptr, reduce_ptr, identity_ptr
    map_ptr = c_null_ptr
    reduce_ptr = c_null_ptr
    identity_ptr = c_null_ptr
    if (present(map)) then
      c_map = skein_c_string(map)
      map_ptr = c_loc(c_map)
    end if
    if (present(reduce)) then
      c_reduce = skein_c_string(reduce)
      reduce_ptr = c_loc(c_reduce)
    end if
    if (present(identity)) then
      c_identity = skein_c_string(identity)
      identity_ptr = c_loc(c_identity)
    end if
    call skein_check(c_skein_kernel_create_stencil(skein_c_string(in_params), &
                                                   skein_c_string(out_params), &
                                                   skein_c_string(operation), map_ptr, &
                                                   reduce_ptr, identity_ptr, &
                                                   skein_c_string(name_or(name, &
                                                                  "fortran_stencil")), &
                                                   kernel%handle), ierr)
  end subroutine

  subroutine skein_kernel_destroy(kernel, ierr)
    type(skein_kernel), intent(inout) :: kernel
    integer, intent(out), optional :: ierr
    integer(c_int) :: status
    status = c_skein_kernel_destroy(kernel%handle)
    kernel%handle = c_null_ptr
    call skein_check(status, ierr)
  end subroutine

  ! Runs an elementwise kernel over the points of every local block of the grids among args.
  subroutine skein_grid_elementwise(kernel, args, ierr)
    type(skein_kernel), intent(in) :: kernel
    type(skein_operand), intent(in) :: args(:)
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_grid_elementwise(kernel%handle, args, int(size(args), c_size_t)), &
                     ierr)
  end subroutine

  ! Runs a stencil kernel over `region` (default SKEIN_REGION_ALL) of every local block; the input
  ! grids' halos must be current (skein_grid_exchange_halos). Enqueued.
  subroutine skein_grid_stencil(kernel, args, region, ierr)
    type(skein_kernel), intent(in) :: kernel
    type(skein_operand), intent(in) :: args(:)
    integer(c_int), intent(in), optional :: region
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_grid_stencil(kernel%handle, args, int(size(args), c_size_t), &
                                          region_or_all(region)), ierr)
  end subroutine

  ! The same with the kernel's reduction: each local block's value into element 1 of partials(l)
  ! (an array of one float64 element on local device l - 1; one per local block), enqueued.
  ! Combine them across ranks with skein_all_reduce.
  subroutine skein_grid_stencil_reduce(kernel, args, partials, region, ierr)
    type(skein_kernel), intent(in) :: kernel
    type(skein_operand), intent(in) :: args(:)
    type(skein_array), intent(in) :: partials(:)
    integer(c_int), intent(in), optional :: region
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_grid_stencil_reduce(kernel%handle, args, int(size(args), c_size_t), &
                                                 region_or_all(region), partials%handle, &
                                                 int(size(partials), c_size_t)), ierr)
  end subroutine

  type(skein_operand) function arg_grid(grid) result(arg)
    type(skein_grid), intent(in) :: grid
    arg = skein_operand(kind=SKEIN_OPERAND_GRID, grid=grid%handle)
  end function

  type(skein_operand) function arg_float64(value) result(arg)
    real(c_double), intent(in) :: value
    arg = skein_operand(kind=SKEIN_OPERAND_FLOAT64, real_value=value)
  end function

  type(skein_operand) function arg_float32(value) result(arg)
    real(c_float), intent(in) :: value
    arg = skein_operand(kind=SKEIN_OPERAND_FLOAT32, real_value=real(value, c_double))
  end function

  type(skein_operand) function arg_int64(value) result(arg)
    integer(c_int64_t), intent(in) :: value
    arg = skein_operand(kind=SKEIN_OPERAND_INT64, int_value=value)
  end function

  type(skein_operand) function arg_int32(value) result(arg)
    integer(c_int32_t), intent(in) :: value
    arg = skein_operand(kind=SKEIN_OPERAND_INT32, int_value=int(value, c_int64_t))
  end function

  pure function name_or(name, default) result(text)
    character(len=*), intent(in), optional :: name
    character(len=*), intent(in) :: default
    character(len=:), allocatable :: text
    text = default
    if (present(name)) text = name
  end function

  pure integer(c_int) function region_or_all(region)
    integer(c_int), intent(in), optional :: region
    region_or_all = SKEIN_REGION_ALL
    if (present(region)) region_or_all = region
  end function
end module skein_kernels

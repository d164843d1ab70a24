! SPDX-License-Identifier: BSD-3-Clause
! Module skein_grids: distributed arrays over process grids (skein_grid_* of the C API), in
! Fortran order by default: a field u(nx, ny) is a grid of shape [nx, ny], and per-axis values
! (halo, process grid, boundaries, block offsets and extents) are given x first. With components,
! a point's values are the first index: u(c, x, y).
!
! The host copies (scatter, gather, local_to_host, local_from_host) take Fortran arrays of any
! supported kind: skein_host_copies.f90.
module skein_grids
  use, intrinsic :: iso_c_binding, only: c_int, c_size_t, c_double, c_ptr, c_loc, c_null_ptr
  use skein_c_types
  use skein_c_api
  use skein_support
  implicit none
  private

  public :: skein_grid_create, skein_grid_destroy, skein_grid_dtype, skein_grid_ndim
  public :: skein_grid_process_grid, skein_grid_local_count, skein_grid_local_block
  public :: skein_grid_local_array, skein_grid_exchange_halos, skein_grid_exchange_halos_many
  public :: skein_grid_fill, skein_grid_copy, skein_grid_axpy, skein_grid_scale
  public :: skein_grid_sum, skein_grid_min, skein_grid_max, skein_grid_dot, skein_grid_nrm2

contains

  ! A grid of global `shape` (1 to 3 axes, points without components) and `dtype` over the
  ! communicator's members. Collective. Optional, per axis in `order` (default Fortran):
  !   halo          width (default 0)
  !   lower, upper  the boundary on the side of index 1 and on the other (default open), e.g.
  !                 [(skein_boundary(SKEIN_BOUNDARY_CONSTANT, 0d0), i = 1, 2)]
  !   process_grid  members along the axis (0: chosen; default all chosen)
  ! and components (values per point, default 1), stencil (SKEIN_STENCIL_STAR or _BOX), queue
  ! (default: one on the communicator's devices).
  subroutine skein_grid_create(grid, comm, shape, dtype, halo, lower, upper, process_grid, &
                               components, stencil, queue, order, ierr)
    type(skein_grid), intent(out) :: grid
    type(skein_communicator), intent(in) :: comm
    integer, intent(in) :: shape(:)
    integer(c_int), intent(in) :: dtype
    integer, intent(in), optional :: halo(:), process_grid(:), components
    type(skein_boundary), intent(in), optional :: lower(:), upper(:)
    integer(c_int), intent(in), optional :: stencil, order
    type(skein_queue), intent(in), optional :: queue
    integer, intent(out), optional :: ierr
    type(skein_grid_options) :: options
    ! Arrays of at least one element, so that C_LOC takes them for a shape of 0 axes too (which C
    ! refuses, naming the call).
    integer(c_size_t), target :: c_shape(max(size(shape), 1)), c_halo(max(size(shape), 1))
    integer(c_size_t), target :: c_process_grid(max(size(shape), 1))
    type(skein_boundary), target :: c_lower(max(size(shape), 1)), c_upper(max(size(shape), 1))
    type(c_ptr) :: queue_handle
    integer :: ndim
    ndim = size(shape)
    if (.not. per_axis_ok(ndim, "halo", halo, ierr)) return
    if (.not. per_axis_ok(ndim, "process_grid", process_grid, ierr)) return
    if (.not. boundaries_ok(ndim, "lower", lower, ierr)) return
    if (.not. boundaries_ok(ndim, "upper", upper, ierr)) return
    if (any(shape < 0)) then
      call skein_fail(SKEIN_ERROR_INVALID_ARGUMENT, "skein_grid_create: a negative extent in " // &
                      "shape: give the points along each axis", ierr)
      return
    end if
    call c_skein_grid_options_init(options)
    options%order = skein_order(order)
    if (present(components)) options%components = int(max(components, 0), c_size_t)
    if (present(stencil)) options%stencil = stencil
    c_shape = 0
    c_shape(1:ndim) = skein_sizes(shape)
    if (present(halo)) then
      c_halo(1:ndim) = skein_sizes(halo)
      options%halo = c_loc(c_halo)
    end if
    if (present(process_grid)) then
      c_process_grid(1:ndim) = skein_sizes(process_grid)
      options%process_grid = c_loc(c_process_grid)
    end if
    if (present(lower)) then
      c_lower(1:ndim) = lower
      options%lower = c_loc(c_lower)
    end if
    if (present(upper)) then
      c_upper(1:ndim) = upper
      options%upper = c_loc(c_upper)
    end if
    queue_handle = c_null_ptr
    if (present(queue)) queue_handle = queue%handle
    call skein_check(c_skein_grid_create(comm%handle, queue_handle, int(ndim, c_size_t), c_shape, &
                                         dtype, options, grid%handle), ierr)
  end subroutine

  subroutine skein_grid_destroy(grid, ierr)
    type(skein_grid), intent(inout) :: grid
    integer, intent(out), optional :: ierr
    integer(c_int) :: status
    status = c_skein_grid_destroy(grid%handle)
    grid%handle = c_null_ptr
    call skein_check(status, ierr)
  end subroutine

  subroutine skein_grid_dtype(grid, dtype, ierr)
    type(skein_grid), intent(in) :: grid
    integer(c_int), intent(out) :: dtype
    integer, intent(out), optional :: ierr
    dtype = -1
    call skein_check(c_skein_grid_dtype(grid%handle, dtype), ierr)
  end subroutine

  subroutine skein_grid_ndim(grid, ndim, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(out) :: ndim
    integer, intent(out), optional :: ierr
    integer(c_size_t) :: value
    value = 0
    call skein_check(c_skein_grid_ndim(grid%handle, value), ierr)
    ndim = int(value)
  end subroutine

  ! Members along each axis, in `order` (default Fortran); the entries past ndim are set to 1.
  subroutine skein_grid_process_grid(grid, process_grid, order, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(out) :: process_grid(3)
    integer(c_int), intent(in), optional :: order
    integer, intent(out), optional :: ierr
    integer(c_size_t) :: values(3)
    values = 1
    call skein_check(c_skein_grid_process_grid(grid%handle, skein_order(order), values), ierr)
    process_grid = int(values)
  end subroutine

  ! This rank's blocks (one per local device).
  subroutine skein_grid_local_count(grid, count, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(out) :: count
    integer, intent(out), optional :: ierr
    integer(c_size_t) :: value
    value = 0
    call skein_check(c_skein_grid_local_count(grid%handle, value), ierr)
    count = int(value)
  end subroutine

  ! Local block `local` (0-based): its first point's global index, counted from 0 (a Fortran array
  ! u(1:nx, ...) holds the block's points at u(offset(1) + 1 : offset(1) + extent(1), ...)), and
  ! its points per axis, in `order` (default Fortran); entries past ndim are set to 0 and 1.
  subroutine skein_grid_local_block(grid, local, offset, extent, order, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(in) :: local
    integer, intent(out), optional :: offset(3), extent(3)
    integer(c_int), intent(in), optional :: order
    integer, intent(out), optional :: ierr
    integer(c_size_t) :: c_offset(3), c_extent(3)
    c_offset = 0
    c_extent = 1
    call skein_check(c_skein_grid_local_block(grid%handle, int(local, c_size_t), &
                                              skein_order(order), c_offset, c_extent), ierr)
    if (present(offset)) offset = int(c_offset)
    if (present(extent)) extent = int(c_extent)
  end subroutine

  ! Local block `local` (0-based) as an array: a view of the grid's memory, its points
  ! (with_halo absent or false) or its points and halo (with_halo true). Destroy it when done.
  subroutine skein_grid_local_array(grid, local, array, with_halo, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(in) :: local
    type(skein_array), intent(out) :: array
    logical, intent(in), optional :: with_halo
    integer, intent(out), optional :: ierr
    integer(c_int) :: halo
    halo = 0
    if (present(with_halo)) halo = merge(1_c_int, 0_c_int, with_halo)
    call skein_check(c_skein_grid_local_array(grid%handle, int(local, c_size_t), halo, &
                                              array%handle), ierr)
  end subroutine

  ! Collective: every block's halo from its neighbours, and the boundaries' halos.
  subroutine skein_grid_exchange_halos(grid, ierr)
    type(skein_grid), intent(in) :: grid
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_grid_exchange_halos(grid%handle), ierr)
  end subroutine

  ! The same for several grids of one communicator (one message per neighbour).
  subroutine skein_grid_exchange_halos_many(grids, ierr)
    type(skein_grid), intent(in) :: grids(:)
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_grid_exchange_halos_many(grids%handle, int(size(grids), c_size_t)), &
                     ierr)
  end subroutine

  ! Elementwise over the points (not the halos); enqueued.
  subroutine skein_grid_fill(grid, value, ierr)
    type(skein_grid), intent(in) :: grid
    real(c_double), intent(in) :: value
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_grid_fill(grid%handle, value), ierr)
  end subroutine

  subroutine skein_grid_copy(src, dst, ierr)
    type(skein_grid), intent(in) :: src, dst
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_grid_copy(src%handle, dst%handle), ierr)
  end subroutine

  ! out = a x + y
  subroutine skein_grid_axpy(a, x, y, out, ierr)
    real(c_double), intent(in) :: a
    type(skein_grid), intent(in) :: x, y, out
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_grid_axpy(a, x%handle, y%handle, out%handle), ierr)
  end subroutine

  ! out = a x
  subroutine skein_grid_scale(a, x, out, ierr)
    real(c_double), intent(in) :: a
    type(skein_grid), intent(in) :: x, out
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_grid_scale(a, x%handle, out%handle), ierr)
  end subroutine

  ! Collective reductions over every point, the same value on every rank.
  real(c_double) function skein_grid_sum(x, ierr) result(value)
    type(skein_grid), intent(in) :: x
    integer, intent(out), optional :: ierr
    value = 0
    call skein_check(c_skein_grid_sum(x%handle, value), ierr)
  end function

  real(c_double) function skein_grid_min(x, ierr) result(value)
    type(skein_grid), intent(in) :: x
    integer, intent(out), optional :: ierr
    value = 0
    call skein_check(c_skein_grid_min(x%handle, value), ierr)
  end function

  real(c_double) function skein_grid_max(x, ierr) result(value)
    type(skein_grid), intent(in) :: x
    integer, intent(out), optional :: ierr
    value = 0
    call skein_check(c_skein_grid_max(x%handle, value), ierr)
  end function

  real(c_double) function skein_grid_dot(x, y, ierr) result(value)
    type(skein_grid), intent(in) :: x, y
    integer, intent(out), optional :: ierr
    value = 0
    call skein_check(c_skein_grid_dot(x%handle, y%handle, value), ierr)
  end function

  real(c_double) function skein_grid_nrm2(x, ierr) result(value)
    type(skein_grid), intent(in) :: x
    integer, intent(out), optional :: ierr
    value = 0
    call skein_check(c_skein_grid_nrm2(x%handle, value), ierr)
  end function

  ! A per-axis argument, when given, has a value per axis of the shape.
  logical function per_axis_ok(ndim, name, values, ierr)
    integer, intent(in) :: ndim
    character(len=*), intent(in) :: name
    integer, intent(in), optional :: values(:)
    integer, intent(out), optional :: ierr
    per_axis_ok = .true.
    if (.not. present(values)) return
    if (size(values) == ndim .and. all(values >= 0)) return
    per_axis_ok = .false.
    call skein_fail(SKEIN_ERROR_INVALID_ARGUMENT, "skein_grid_create: " // name // " has " // &
                    skein_itoa(size(values)) // " values for a shape of " // skein_itoa(ndim) // &
                    " axes, or a negative one: give one value >= 0 per axis", ierr)
  end function

  logical function boundaries_ok(ndim, name, values, ierr)
    integer, intent(in) :: ndim
    character(len=*), intent(in) :: name
    type(skein_boundary), intent(in), optional :: values(:)
    integer, intent(out), optional :: ierr
    boundaries_ok = .true.
    if (.not. present(values)) return
    if (size(values) == ndim) return
    boundaries_ok = .false.
    call skein_fail(SKEIN_ERROR_INVALID_ARGUMENT, "skein_grid_create: " // name // " has " // &
                    skein_itoa(size(values)) // " boundaries for a shape of " // &
                    skein_itoa(ndim) // " axes: give one per axis", ierr)
  end function

end module skein_grids

! SPDX-License-Identifier: BSD-3-Clause
! Grids through the Fortran module, in Fortran order: a field g(c, x, y) of nx x ny points and nc
! components, periodic along x and a constant (Dirichlet) value beyond y, halo 1. Scatter and
! gather, each local block's points (local_to_host, local_from_host) against the host's copy, the
! blocks tiling the domain, the halos after an exchange against the host's neighbours, the
! elementwise operations and reductions, and kernels: elementwise, a 5-point stencil, the global
! indices a stencil sees, and a stencil's reduction combined by all_reduce. float64 and int32.
module fortran_grids_test
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64
  use mpi
  use skein
  use fortran_test_support
  implicit none
  private

  public :: test_grids, make_grid, field

  integer, parameter :: nx = 9, ny = 7
  real(c_double), parameter :: wall = -3  ! the constant beyond y

contains

  ! The global field's value at component c, point (x, y), 1-based.
  pure real(c_double) function field(c, x, y)
    integer, intent(in) :: c, x, y
    field = 1000 * c + 10 * x + y
  end function

  ! g's value at (x, y) as a halo sees it: wrapped along x, the wall beyond y.
  pure real(c_double) function seen(c, x, y)
    integer, intent(in) :: c, x, y
    if (y < 1 .or. y > ny) then
      seen = wall
    else
      seen = field(c, modulo(x - 1, nx) + 1, y)
    end if
  end function

  subroutine make_grid(grid, comm, dtype, nc)
    type(skein_grid), intent(out) :: grid
    type(skein_communicator), intent(in) :: comm
    integer(c_int), intent(in) :: dtype
    integer, intent(in) :: nc
    type(skein_boundary) :: sides(2)
    sides(1) = skein_boundary(SKEIN_BOUNDARY_PERIODIC, 0)
    sides(2) = skein_boundary(SKEIN_BOUNDARY_CONSTANT, wall)
    call skein_grid_create(grid, comm, [nx, ny], dtype, halo=[1, 1], lower=sides, upper=sides, &
                           components=nc)
  end subroutine

  subroutine test_grids(runtime)
    type(skein_runtime), intent(in) :: runtime
    type(skein_communicator) :: comm
    type(skein_queue) :: queue
    call skein_communicator_create(comm, runtime)
    call skein_queue_create(queue, runtime)
    call float64_grid(runtime, comm, 1)
    call float64_grid(runtime, comm, 2)
    call int32_grid(runtime, comm)
    call kernels(runtime, comm, queue)
    call skein_destroy(queue)
    call skein_destroy(comm)
  end subroutine

  subroutine float64_grid(runtime, comm, nc)
    type(skein_runtime), intent(in) :: runtime
    type(skein_communicator), intent(in) :: comm
    integer, intent(in) :: nc
    type(skein_grid) :: grid, other, out
    real(c_double) :: g(nc, nx, ny), back(nc, nx, ny), none(0)
    integer :: rank, c, x, y, count, l, offset(3), extent(3), points, total, ierror
    call skein_runtime_rank(runtime, rank)
    g = reshape([(((field(c, x, y), c = 1, nc), x = 1, nx), y = 1, ny)], [nc, nx, ny])
    call make_grid(grid, comm, SKEIN_FLOAT64, nc)
    if (rank == 0) then
      call skein_grid_scatter(grid, g)
    else
      call skein_grid_scatter(grid, none)
    end if
    back = 0
    call skein_grid_gather(grid, back, root=0)
    if (rank == 0) call check(all(back == g), "scatter then gather (float64)")
    call skein_grid_exchange_halos(grid)
    call skein_grid_local_count(grid, count)
    points = 0
    do l = 0, count - 1
      call skein_grid_local_block(grid, l, offset, extent)
      points = points + extent(1) * extent(2)
      call check(extent(3) == 1, "local_block: a 2-D grid's third extent is 1")
      call check_block(grid, l, g, offset, extent)
      call check_halo(grid, l, nc, offset, extent)
      ! The block's new values, written from the host: 2 g + 1.
      call skein_grid_local_from_host(grid, l, 2 * g(:, offset(1) + 1:offset(1) + extent(1), &
                                                       offset(2) + 1:offset(2) + extent(2)) + 1)
    end do
    call MPI_Allreduce(points, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierror)
    call check(total == nx * ny, "the local blocks of all ranks tile the domain")
    call skein_grid_gather(grid, back)
    if (rank == 0) call check(all(back == 2 * g + 1), "local_from_host then gather")
    ! Elementwise operations: other = grid; out = 2 grid + other; other = -out; grid = 5.
    call make_grid(other, comm, SKEIN_FLOAT64, nc)
    call make_grid(out, comm, SKEIN_FLOAT64, nc)
    call skein_grid_copy(grid, other)
    call skein_grid_axpy(2.0_c_double, grid, other, out)
    call skein_grid_scale(-1.0_c_double, out, other)
    call check(abs(skein_grid_sum(out) - 3 * sum(2 * g + 1)) < 1e-9_c_double, "grid_sum")
    call check(skein_grid_min(other) == -3 * maxval(2 * g + 1), "grid_min")
    call check(skein_grid_max(out) == 3 * maxval(2 * g + 1), "grid_max")
    call check(abs(skein_grid_dot(out, other) + sum((3 * (2 * g + 1))**2)) < 1e-6_c_double, &
               "grid_dot")
    call check(abs(skein_grid_nrm2(out) - sqrt(sum((3 * (2 * g + 1))**2))) < 1e-9_c_double, &
               "grid_nrm2")
    call skein_grid_fill(grid, 5.0_c_double)
    call skein_grid_gather(grid, back)
    if (rank == 0) call check(all(back == 5), "grid_fill")
    call skein_destroy(out)
    call skein_destroy(other)
    call skein_destroy(grid)
  end subroutine

  ! A block's points from local_to_host, against the host's copy of the global field.
  subroutine check_block(grid, l, g, offset, extent)
    type(skein_grid), intent(in) :: grid
    integer, intent(in) :: l, offset(3), extent(3)
    real(c_double), intent(in) :: g(:, :, :)
    real(c_double) :: block(size(g, 1), extent(1), extent(2))
    call skein_grid_local_to_host(grid, l, block)
    call check(all(block == g(:, offset(1) + 1:offset(1) + extent(1), &
                                 offset(2) + 1:offset(2) + extent(2))), "local_to_host")
  end subroutine

  ! The block with its halo (a view of the grid's memory), after the exchange: its faces hold the
  ! neighbours' points (wrapped along x) or the wall (beyond y). Corners are not a star stencil's.
  subroutine check_halo(grid, l, nc, offset, extent)
    type(skein_grid), intent(in) :: grid
    integer, intent(in) :: l, nc, offset(3), extent(3)
    type(skein_array) :: view
    real(c_double) :: h(nc, 0:extent(1) + 1, 0:extent(2) + 1)
    integer :: shape(3), ndim, c, i, j
    logical :: ok
    call skein_grid_local_array(grid, l, view, with_halo=.true.)
    call skein_array_ndim(view, ndim)
    shape = 0
    call skein_array_shape(view, shape)
    ! One component: the view has no components axis (C++'s GridArray blocks), the same memory.
    if (nc == 1 .and. ndim == 2) shape = [1, shape(1), shape(2)]
    call check(all(shape == [nc, extent(1) + 2, extent(2) + 2]), &
               "local_array with halo: the shape (c, x, y) in Fortran order")
    call skein_array_to_host(view, h)
    ok = .true.
    do c = 1, nc
      do j = 1, extent(2)
        ok = ok .and. h(c, 0, j) == seen(c, offset(1), offset(2) + j)
        ok = ok .and. h(c, extent(1) + 1, j) == seen(c, offset(1) + extent(1) + 1, offset(2) + j)
      end do
      do i = 1, extent(1)
        ok = ok .and. h(c, i, 0) == seen(c, offset(1) + i, offset(2))
        ok = ok .and. h(c, i, extent(2) + 1) == seen(c, offset(1) + i, offset(2) + extent(2) + 1)
      end do
    end do
    call check(ok, "halo faces after exchange_halos")
    call skein_destroy(view)
  end subroutine

  ! The same field in int32 (integer(c_int32_t) host arrays), with the halo exchange.
  subroutine int32_grid(runtime, comm)
    type(skein_runtime), intent(in) :: runtime
    type(skein_communicator), intent(in) :: comm
    type(skein_grid) :: grid
    integer(c_int32_t) :: g(nx, ny), back(nx, ny), none(0)
    integer :: rank, x, y, l, count, offset(3), extent(3)
    call skein_runtime_rank(runtime, rank)
    g = reshape([((int(field(1, x, y), c_int32_t), x = 1, nx), y = 1, ny)], [nx, ny])
    call make_grid(grid, comm, SKEIN_INT32, 1)
    if (rank == 0) then
      call skein_grid_scatter(grid, g, 0)
    else
      call skein_grid_scatter(grid, none, 0)
    end if
    call skein_grid_local_count(grid, count)
    do l = 0, count - 1
      call skein_grid_local_block(grid, l, offset, extent)
      block
        integer(c_int32_t) :: mine(extent(1), extent(2))
        call skein_grid_local_to_host(grid, l, mine)
        call check(all(mine == g(offset(1) + 1:offset(1) + extent(1), &
                                 offset(2) + 1:offset(2) + extent(2))), "local_to_host (int32)")
      end block
    end do
    back = 0
    call skein_grid_gather(grid, back)
    if (rank == 0) call check(all(back == g), "scatter then gather (int32)")
    call check(nint(skein_grid_sum(grid)) == sum(g), "grid_sum (int32)")
    call skein_destroy(grid)
  end subroutine

  ! Kernels over float64 grids of one component (the field's component 1).
  subroutine kernels(runtime, comm, queue)
    type(skein_runtime), intent(in) :: runtime
    type(skein_communicator), intent(in) :: comm
    type(skein_queue), intent(in) :: queue
    type(skein_grid) :: u, v
    type(skein_kernel) :: axpy, step, where_am_i
    type(skein_array), allocatable :: partials(:)
    real(c_double) :: g(nx, ny), expected(nx, ny), back(nx, ny), partial(1)
    real(c_double), parameter :: r = 0.125
    integer :: rank, x, y, l, count
    call skein_runtime_rank(runtime, rank)
    g = reshape([((field(1, x, y), x = 1, nx), y = 1, ny)], [nx, ny])
    call make_grid(u, comm, SKEIN_FLOAT64, 1)
    call make_grid(v, comm, SKEIN_FLOAT64, 1)
    call skein_grid_scatter(u, g)
    call skein_grid_fill(v, 1.0_c_double)
    ! Elementwise: v = 0.5 u + v.
    call skein_kernel_create_elementwise(axpy, "double a, double x, double y", &
                                         "y[i] = a * x[i] + y[i]", name="fortran_axpy")
    call skein_grid_elementwise(axpy, [skein_arg(0.5_c_double), skein_arg(u), skein_arg(v)])
    call skein_grid_gather(v, back)
    if (rank == 0) call check(all(back == 0.5_c_double * g + 1), "elementwise kernel")
    ! The 5-point stencil, offsets in C order: u(dy, dx). Its reduction: max |v - u|.
    call skein_kernel_create_stencil(step, "double u, double r", "double v", &
                                     "v = u + r * (u(0, -1) + u(0, 1) + u(-1, 0) + u(1, 0) - 4 * u)", &
                                     map="fabs(v - u)", reduce="fmax(a, b)", identity="0", &
                                     name="fortran_heat5")
    call skein_grid_exchange_halos(u)
    call skein_grid_local_count(u, count)
    allocate (partials(count))
    do l = 1, count
      call skein_array_create(partials(l), queue, l - 1, SKEIN_FLOAT64, [1])
    end do
    call skein_grid_stencil_reduce(step, [skein_arg(u), skein_arg(r), skein_arg(v)], partials)
    call skein_all_reduce(comm, queue, partials, partials, SKEIN_MAX)
    call skein_queue_synchronize(queue)
    do y = 1, ny
      do x = 1, nx
        expected(x, y) = g(x, y) + r * (seen(1, x - 1, y) + seen(1, x + 1, y) + &
                                        seen(1, x, y - 1) + seen(1, x, y + 1) - 4 * g(x, y))
      end do
    end do
    call skein_grid_gather(v, back)
    if (rank == 0) call check(all(abs(back - expected) <= 1e-12_c_double * abs(expected)), &
                              "stencil kernel")
    do l = 1, count
      call skein_array_to_host(partials(l), partial)
      call check(abs(partial(1) - maxval(abs(expected - g))) <= 1e-9_c_double, &
                 "stencil_reduce + all_reduce: max |v - u|")
    end do
    ! The global indices a stencil sees (C order: gidx[0] is y - 1, gidx[1] is x - 1).
    call skein_kernel_create_stencil(where_am_i, "double s", "double w", &
                                     "w = s * (1000 * gidx[0] + gidx[1])", name="fortran_gidx")
    call skein_grid_stencil(where_am_i, [skein_arg(1.0_c_double), skein_arg(v)], SKEIN_REGION_ALL)
    call skein_grid_gather(v, back)
    expected = reshape([((1000.0_c_double * (y - 1) + (x - 1), x = 1, nx), y = 1, ny)], [nx, ny])
    if (rank == 0) call check(all(back == expected), "stencil kernel: gidx in C order")
    do l = 1, count
      call skein_destroy(partials(l))
    end do
    call skein_destroy(where_am_i)
    call skein_destroy(step)
    call skein_destroy(axpy)
    call skein_destroy(v)
    call skein_destroy(u)
  end subroutine
end module fortran_grids_test

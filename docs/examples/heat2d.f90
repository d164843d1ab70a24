! SPDX-License-Identifier: BSD-3-Clause
! A 2-D heat equation in Fortran with Skein: u_t = alpha (u_xx + u_yy) on the unit square, u = 0 on
! the boundary, u0 = sin(kx pi x) sin(ky pi y), on a process grid over every device of every MPI
! rank. The field is u(nx, ny) in Fortran order, each rank sets the initial values of its own
! blocks, the explicit step (FTCS, 5 points) is a Skein stencil kernel (one source for CUDA and
! OpenCL) after a halo exchange, every few steps the kernel also gives max |v - u| per block,
! combined over the ranks by all_reduce, and the final field goes to an HDF5 file. The result is
! checked against the exact discrete solution, as skein-heat does (apps/skein-heat/heat_solver.hpp):
! each step multiplies the mode by lambda = c0 + 2 rx cos(kx pi hx) + 2 ry cos(ky pi hy).
! Built and run by ctest (fortran.heat2d.np2, tests/bindings/fortran); quoted in docs/guide.md.
! Run with
!   POCL_DEVICES="pthread pthread pthread pthread" mpirun -n 2 ./heat2d [heat2d.h5]
program heat2d
  use, intrinsic :: iso_c_binding, only: c_double
  use skein
  implicit none
  integer, parameter :: nx = 64, ny = 48, kx = 1, ky = 1, steps = 100, every = 25
  real(c_double), parameter :: alpha = 1, pi = acos(-1.0_c_double)
  real(c_double) :: hx, hy, dt, rx, ry, c0, lambda, error, tolerance, change(1)
  type(skein_runtime) :: runtime
  type(skein_communicator) :: comm
  type(skein_queue) :: queue
  type(skein_grid) :: u, v, swap
  type(skein_kernel) :: step
  type(skein_hdf5_file) :: file
  type(skein_array), allocatable :: partials(:)
  type(skein_boundary) :: zero(2)
  character(len=256) :: path
  integer :: rank, blocks, l, n, offset(3), extent(3)

  call skein_init(runtime)  ! starts MPI
  call skein_runtime_rank(runtime, rank)
  call skein_communicator_create(comm, runtime)
  call skein_queue_create(queue, runtime)
  path = "heat2d.h5"
  if (command_argument_count() > 0) call get_command_argument(1, path)

  hx = 1.0_c_double / (nx + 1)
  hy = 1.0_c_double / (ny + 1)
  dt = 0.2_c_double * min(hx, hy)**2 / alpha
  rx = alpha * dt / hx**2
  ry = alpha * dt / hy**2
  c0 = 1 - 2 * rx - 2 * ry
  lambda = c0 + 2 * rx * cos(kx * pi * hx) + 2 * ry * cos(ky * pi * hy)

  ! Two fields with one halo point per side, 0 beyond the boundary (the Dirichlet condition).
  zero = skein_boundary(SKEIN_BOUNDARY_CONSTANT, 0)
  call skein_grid_create(u, comm, [nx, ny], SKEIN_FLOAT64, halo=[1, 1], lower=zero, upper=zero)
  call skein_grid_create(v, comm, [nx, ny], SKEIN_FLOAT64, halo=[1, 1], lower=zero, upper=zero)

  ! Each rank sets its own blocks: points offset + 1 .. offset + extent of the global grid.
  call skein_grid_local_count(u, blocks)
  do l = 0, blocks - 1
    call skein_grid_local_block(u, l, offset, extent)
    call skein_grid_local_from_host(u, l, initial(offset, extent))
  end do

  ! The step, with max |v - u| over the points for the residual. Neighbours are read in C order,
  ! u(dy, dx): u(0, -1) is u(x - 1, y).
  call skein_kernel_create_stencil(step, "double u, double c0, double rx, double ry", "double v", &
      "v = c0 * u + rx * (u(0, -1) + u(0, 1)) + ry * (u(-1, 0) + u(1, 0))", &
      map="fabs(v - u)", reduce="fmax(a, b)", identity="0", name="heat2d_step")
  allocate (partials(blocks))
  do l = 1, blocks
    call skein_array_create(partials(l), queue, l - 1, SKEIN_FLOAT64, [1])
  end do

  do n = 1, steps
    call skein_grid_exchange_halos(u)
    if (mod(n, every) == 0) then
      call skein_grid_stencil_reduce(step, [skein_arg(u), skein_arg(c0), skein_arg(rx), &
                                            skein_arg(ry), skein_arg(v)], partials)
      call skein_all_reduce(comm, queue, partials, partials, SKEIN_MAX)
      call skein_array_to_host(partials(1), change)
      if (rank == 0) print '(a, i4, a, es10.3)', "step", n, ": max |u_new - u| = ", change(1)
    else
      call skein_grid_stencil(step, [skein_arg(u), skein_arg(c0), skein_arg(rx), skein_arg(ry), &
                                     skein_arg(v)])
    end if
    swap = u
    u = v
    v = swap
  end do

  ! The error against lambda**steps u0, block by block on the host, then the largest over all
  ! blocks of all ranks (the same value on every rank).
  do l = 0, blocks - 1
    call skein_grid_local_block(u, l, offset, extent)
    call skein_array_fill(partials(l + 1), block_error(l, offset, extent))
  end do
  call skein_all_reduce(comm, queue, partials, partials, SKEIN_MAX)
  call skein_array_to_host(partials(1), change)
  error = change(1)
  ! Rounding alone (skein-heat's bound): 8 eps (2 + sum of |lambda|**k), for |u0| <= 1.
  tolerance = 8 * epsilon(1.0_c_double) / 2 * (2 + (1 - abs(lambda)**steps) / (1 - abs(lambda)))

  if (skein_has_hdf5()) then
    call skein_hdf5_create(file, comm, trim(path))
    call skein_hdf5_write_grid(file, "u", u)
    call skein_hdf5_set_attribute(file, "u", "time", steps * dt)
    call skein_hdf5_set_attribute(file, "u", "lambda", lambda)
    call skein_hdf5_set_attribute(file, "/", "steps", real(steps, c_double))
    call skein_hdf5_set_attribute(file, "/", "max_error", error)
    call skein_destroy(file)
  end if
  if (rank == 0) then
    print '(a, i0, a, i0, a, i0, a, es10.3, a, es10.3, a)', "heat2d: ", nx, " x ", ny, ", ", &
      steps, " steps, max error ", error, " (tolerance ", tolerance, ")"
    print '(a)', merge("PASS", "FAIL", error <= tolerance)
  end if

  do l = 1, blocks
    call skein_destroy(partials(l))
  end do
  call skein_destroy(step)
  call skein_destroy(v)
  call skein_destroy(u)
  call skein_destroy(queue)
  call skein_destroy(comm)
  call skein_destroy(runtime)  ! ends MPI
  if (error > tolerance) error stop 1

contains

  ! u0 on a block: sin(kx pi x) sin(ky pi y) at x = i hx, y = j hy.
  function initial(offset, extent) result(block)
    integer, intent(in) :: offset(3), extent(3)
    real(c_double) :: block(extent(1), extent(2))
    integer :: i, j
    do j = 1, extent(2)
      do i = 1, extent(1)
        block(i, j) = sin(kx * pi * (offset(1) + i) * hx) * sin(ky * pi * (offset(2) + j) * hy)
      end do
    end do
  end function

  ! max |u - lambda**steps u0| on local block l.
  real(c_double) function block_error(l, offset, extent)
    integer, intent(in) :: l, offset(3), extent(3)
    real(c_double) :: block(extent(1), extent(2))
    call skein_grid_local_to_host(u, l, block)
    block_error = maxval(abs(block - lambda**steps * initial(offset, extent)))
  end function
end program heat2d

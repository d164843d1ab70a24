! SPDX-License-Identifier: BSD-3-Clause
! HDF5 and checkpoints through the Fortran module (a grid written with attributes, read back into
! a grid of another process grid; a checkpoint of two grids restored into fresh ones, and none
! found in an empty directory), and the errors: for each kind of bad input the call returns the
! right status in ierr, skein_error_message() names the C function, and the same objects still
! work after it.
module fortran_io_errors_test
  use, intrinsic :: iso_c_binding
  use skein
  use fortran_test_support
  use fortran_grids_test, only: make_grid, field
  implicit none
  private

  public :: test_io, test_errors

  integer, parameter :: nx = 9, ny = 7

contains

  ! The global field (component 1) as a host array.
  function host_field(scale) result(g)
    real(c_double), intent(in) :: scale
    real(c_double) :: g(nx, ny)
    integer :: x, y
    g = reshape([((scale * field(1, x, y), x = 1, nx), y = 1, ny)], [nx, ny])
  end function

  subroutine test_io(runtime, directory)
    type(skein_runtime), intent(in) :: runtime
    character(len=*), intent(in) :: directory
    type(skein_communicator) :: comm
    type(skein_grid) :: u, w, again, other
    type(skein_hdf5_file) :: file
    type(skein_checkpoint) :: checkpoints
    real(c_double) :: back(nx, ny), value, time
    integer :: rank, step
    logical :: restored
    call skein_runtime_rank(runtime, rank)
    call skein_communicator_create(comm, runtime)
    call make_grid(u, comm, SKEIN_FLOAT64, 1)
    call make_grid(w, comm, SKEIN_FLOAT64, 1)
    call skein_grid_scatter(u, host_field(1.0_c_double))
    call skein_grid_scatter(w, host_field(-2.0_c_double))

    call skein_hdf5_create(file, comm, directory // "/fortran_io.h5")
    call skein_hdf5_write_grid(file, "u", u)
    call skein_hdf5_set_attribute(file, "u", "time", 0.25_c_double)
    call skein_hdf5_set_attribute(file, "/", "steps", 12.0_c_double)
    call skein_destroy(file)
    ! Read into a grid over another process grid (every member along y).
    call skein_grid_create(again, comm, [nx, ny], SKEIN_FLOAT64, process_grid=[1, 0])
    call skein_hdf5_open(file, comm, directory // "/fortran_io.h5")
    call skein_hdf5_read_grid(file, "u", again)
    call skein_hdf5_get_attribute(file, "u", "time", value)
    call check(value == 0.25_c_double, "hdf5 attribute of a dataset")
    call skein_hdf5_get_attribute(file, "/", "steps", value)
    call check(value == 12.0_c_double, "hdf5 attribute of the file")
    call skein_hdf5_close(file)
    back = 0
    call skein_grid_gather(again, back)
    if (rank == 0) call check(all(back == host_field(1.0_c_double)), "hdf5 write then read")

    ! Checkpoints: none yet, then one of step 7 restored into fresh grids.
    call skein_checkpoint_create(checkpoints, comm, directory // "/checkpoints", keep=2)
    call make_grid(other, comm, SKEIN_FLOAT64, 1)
    call skein_checkpoint_restore_latest(checkpoints, ["u"], [other], restored)
    call check(.not. restored, "checkpoint: none in an empty directory")
    call skein_checkpoint_write(checkpoints, 7, 0.5_c_double, ["u", "w"], [u, w])
    call skein_grid_fill(again, 0.0_c_double)
    call skein_grid_fill(other, 0.0_c_double)
    call skein_checkpoint_restore_latest(checkpoints, ["u", "w"], [again, other], restored, &
                                         step, time)
    call check(restored .and. step == 7 .and. time == 0.5_c_double, &
               "checkpoint restored with its step and time")
    call skein_grid_gather(again, back)
    if (rank == 0) call check(all(back == host_field(1.0_c_double)), "checkpoint: grid u")
    call skein_grid_gather(other, back)
    if (rank == 0) call check(all(back == host_field(-2.0_c_double)), "checkpoint: grid w")
    call skein_destroy(checkpoints)
    call skein_destroy(other)
    call skein_destroy(again)
    call skein_destroy(w)
    call skein_destroy(u)
    call skein_destroy(comm)
  end subroutine

  subroutine test_errors(runtime, directory)
    type(skein_runtime), intent(in) :: runtime
    character(len=*), intent(in) :: directory
    type(skein_communicator) :: comm
    type(skein_queue) :: queue
    type(skein_grid) :: grid, bad
    type(skein_array) :: arrays(8), one(1)
    type(skein_kernel) :: kernel
    type(skein_hdf5_file) :: file
    type(skein_checkpoint) :: checkpoints
    real(c_double) :: back(nx, ny), small(3)
    real(c_float) :: wrong_kind(nx, ny)
    integer :: ierr, rank, local, l
    call skein_runtime_rank(runtime, rank)
    call skein_communicator_create(comm, runtime)
    call skein_queue_create(queue, runtime)
    call skein_communicator_local_size(comm, local)
    call make_grid(grid, comm, SKEIN_FLOAT64, 1)
    call skein_grid_scatter(grid, host_field(1.0_c_double))

    ! Per-axis values of the wrong length (checked in Fortran), and a shape C refuses.
    call skein_grid_create(bad, comm, [nx, ny], SKEIN_FLOAT64, halo=[1, 1, 1], ierr=ierr)
    call check_error(ierr, SKEIN_ERROR_INVALID_ARGUMENT, "skein_grid_create", "halo of 3 values")
    call skein_grid_create(bad, comm, [nx, ny], 77_c_int, ierr=ierr)
    call check_error(ierr, SKEIN_ERROR_INVALID_ARGUMENT, "skein_grid_create", "dtype 77")
    call skein_grid_create(bad, comm, [nx, ny, 2, 2], SKEIN_FLOAT64, ierr=ierr)
    call check_error(ierr, SKEIN_ERROR_INVALID_ARGUMENT, "skein_grid_create", "4 axes")
    ! A host array of the wrong kind, and of the wrong size.
    wrong_kind = 0
    call skein_grid_gather(grid, wrong_kind, ierr=ierr)
    call check_error(ierr, SKEIN_ERROR_INVALID_ARGUMENT, "skein_grid_gather", "real(c_float) host")
    call skein_grid_local_from_host(grid, 0, small, ierr=ierr)
    call check_error(ierr, SKEIN_ERROR_INVALID_ARGUMENT, "skein_grid_local_from_host", &
                     "a host array of 3 elements")
    call skein_grid_local_to_host(grid, 99, small, ierr=ierr)
    call check_error(ierr, SKEIN_ERROR_INVALID_ARGUMENT, "skein_grid_local_to_host", &
                     "local block 99")
    ! An array on a device the runtime does not have; collectives of mismatched lists.
    call skein_array_create(one(1), queue, 99, SKEIN_FLOAT64, [4], ierr=ierr)
    call check_error(ierr, SKEIN_ERROR_INVALID_ARGUMENT, "skein_array_create", "device 99")
    do l = 1, local + 1
      call skein_array_create(arrays(l), queue, min(l, local) - 1, SKEIN_FLOAT64, [4])
    end do
    call skein_all_reduce(comm, queue, arrays(1:local), arrays(1:local + 1), SKEIN_SUM, ierr=ierr)
    call check_error(ierr, SKEIN_ERROR_INVALID_ARGUMENT, "skein_all_reduce", "send/recv lengths")
    call skein_all_reduce(comm, queue, arrays(1:local + 1), arrays(1:local + 1), SKEIN_SUM, &
                          ierr=ierr)
    call check_error(ierr, SKEIN_ERROR_INVALID_ARGUMENT, "skein_all_reduce", &
                     "one array more than local devices")
    call skein_array_to_host(arrays(1), small, ierr=ierr)
    call check_error(ierr, SKEIN_ERROR_INVALID_ARGUMENT, "skein_array_to_host", "3 of 4 elements")
    ! A kernel that does not compile (when it is made or at its first run).
    call skein_kernel_create_stencil(kernel, "double u", "double v", "v = u +* ;", &
                                     name="fortran_broken", ierr=ierr)
    if (ierr == SKEIN_SUCCESS) then
      call make_grid(bad, comm, SKEIN_FLOAT64, 1)
      call skein_grid_stencil(kernel, [skein_arg(grid), skein_arg(bad)], ierr=ierr)
      call skein_destroy(bad)
      call check_error(ierr, SKEIN_ERROR_COMPILE, "skein_grid_stencil", "a broken kernel")
    else
      call check_error(ierr, SKEIN_ERROR_COMPILE, "skein_kernel_create_stencil", "a broken kernel")
    end if
    ! Files: a missing HDF5 file, a missing dataset, names and grids of unequal counts.
    call skein_hdf5_open(file, comm, directory // "/no_such_file.h5", ierr=ierr)
    call check(ierr /= SKEIN_SUCCESS, "hdf5_open of a missing file fails")
    call check(contains_text(skein_error_message(), "skein_hdf5_open"), &
               "hdf5_open's message names it: " // skein_error_message())
    call skein_checkpoint_create(checkpoints, comm, directory // "/checkpoints_errors")
    call skein_checkpoint_write(checkpoints, 1, 0.0_c_double, ["u", "v"], [grid], ierr=ierr)
    call check_error(ierr, SKEIN_ERROR_INVALID_ARGUMENT, "skein_checkpoint_write", &
                     "2 names for 1 grid")
    call check(skein_status_name(SKEIN_ERROR_TIMEOUT) == "SKEIN_ERROR_TIMEOUT", "status names")

    ! The grid still works after all that.
    back = 0
    call skein_grid_exchange_halos(grid, ierr)
    call check(ierr == SKEIN_SUCCESS, "exchange_halos after the errors")
    call skein_grid_gather(grid, back, ierr=ierr)
    call check(ierr == SKEIN_SUCCESS, "gather after the errors")
    if (rank == 0) call check(all(back == host_field(1.0_c_double)), "the grid after the errors")
    call skein_destroy(checkpoints)
    call skein_destroy(kernel)
    do l = 1, local + 1
      call skein_destroy(arrays(l))
    end do
    call skein_destroy(grid)
    call skein_destroy(queue)
    call skein_destroy(comm)
  end subroutine
end module fortran_io_errors_test

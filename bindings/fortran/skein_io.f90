! SPDX-License-Identifier: BSD-3-Clause
! Module skein_io: HDF5 files of grids (parallel HDF5 where Skein has it, else through rank 0) and
! checkpoints of several grids. All collective over the communicator's ranks.
!
! A grid is written as one dataset of its global shape in C order, as HDF5 stores it: a grid
! u(nx, ny) is a dataset of dimensions [ny, nx] (h5py and h5dump show it so), which a Fortran HDF5
! reader sees as (nx, ny) again.
module skein_io
  use, intrinsic :: iso_c_binding, only: c_int, c_size_t, c_int64_t, c_double, c_ptr, c_char, &
                                         c_loc, c_null_ptr
  use skein_c_types
  use skein_c_api
  use skein_support
  implicit none
  private

  public :: skein_hdf5_create, skein_hdf5_open, skein_hdf5_close, skein_hdf5_write_grid
  public :: skein_hdf5_read_grid, skein_hdf5_set_attribute, skein_hdf5_get_attribute
  public :: skein_checkpoint_create, skein_checkpoint_destroy, skein_checkpoint_write
  public :: skein_checkpoint_restore_latest

  ! Names as NUL-terminated C strings, each kept alive while C reads it.
  type :: c_names
    character(kind=c_char, len=:), allocatable :: text
  end type

contains

  ! Creates (truncates) the file.
  subroutine skein_hdf5_create(file, comm, path, ierr)
    type(skein_hdf5_file), intent(out) :: file
    type(skein_communicator), intent(in) :: comm
    character(len=*), intent(in) :: path
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_hdf5_create(comm%handle, skein_c_string(path), file%handle), ierr)
  end subroutine

  ! Opens an existing file, read-only unless read_write is true.
  subroutine skein_hdf5_open(file, comm, path, read_write, ierr)
    type(skein_hdf5_file), intent(out) :: file
    type(skein_communicator), intent(in) :: comm
    character(len=*), intent(in) :: path
    logical, intent(in), optional :: read_write
    integer, intent(out), optional :: ierr
    integer(c_int) :: mode
    mode = 0
    if (present(read_write)) mode = merge(1_c_int, 0_c_int, read_write)
    call skein_check(c_skein_hdf5_open(comm%handle, skein_c_string(path), mode, file%handle), ierr)
  end subroutine

  ! Closes the file: everything written is on disk when it returns.
  subroutine skein_hdf5_close(file, ierr)
    type(skein_hdf5_file), intent(inout) :: file
    integer, intent(out), optional :: ierr
    integer(c_int) :: status
    status = c_skein_hdf5_close(file%handle)
    file%handle = c_null_ptr
    call skein_check(status, ierr)
  end subroutine

  ! The grid's points (not its halos) as dataset `name`.
  subroutine skein_hdf5_write_grid(file, name, grid, ierr)
    type(skein_hdf5_file), intent(in) :: file
    character(len=*), intent(in) :: name
    type(skein_grid), intent(in) :: grid
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_hdf5_write_grid(file%handle, skein_c_string(name), grid%handle), ierr)
  end subroutine

  ! Dataset `name`, of the grid's global shape and dtype, into the grid (any process grid).
  subroutine skein_hdf5_read_grid(file, name, grid, ierr)
    type(skein_hdf5_file), intent(in) :: file
    character(len=*), intent(in) :: name
    type(skein_grid), intent(in) :: grid
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_hdf5_read_grid(file%handle, skein_c_string(name), grid%handle), ierr)
  end subroutine

  ! A double attribute `name` of `object` (a dataset's name, or "/").
  subroutine skein_hdf5_set_attribute(file, object, name, value, ierr)
    type(skein_hdf5_file), intent(in) :: file
    character(len=*), intent(in) :: object, name
    real(c_double), intent(in) :: value
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_hdf5_set_attribute(file%handle, skein_c_string(object), &
                                                skein_c_string(name), value), ierr)
  end subroutine

  subroutine skein_hdf5_get_attribute(file, object, name, value, ierr)
    type(skein_hdf5_file), intent(in) :: file
    character(len=*), intent(in) :: object, name
    real(c_double), intent(out) :: value
    integer, intent(out), optional :: ierr
    value = 0
    call skein_check(c_skein_hdf5_get_attribute(file%handle, skein_c_string(object), &
                                                skein_c_string(name), value), ierr)
  end subroutine

  ! Checkpoints in `directory`, the newest `keep` kept (absent or 0: all).
  subroutine skein_checkpoint_create(checkpoints, comm, directory, keep, ierr)
    type(skein_checkpoint), intent(out) :: checkpoints
    type(skein_communicator), intent(in) :: comm
    character(len=*), intent(in) :: directory
    integer, intent(in), optional :: keep
    integer, intent(out), optional :: ierr
    integer(c_size_t) :: c_keep
    c_keep = 0
    if (present(keep)) c_keep = int(max(keep, 0), c_size_t)
    call skein_check(c_skein_checkpoint_create(comm%handle, skein_c_string(directory), c_keep, &
                                               checkpoints%handle), ierr)
  end subroutine

  subroutine skein_checkpoint_destroy(checkpoints, ierr)
    type(skein_checkpoint), intent(inout) :: checkpoints
    integer, intent(out), optional :: ierr
    integer(c_int) :: status
    status = c_skein_checkpoint_destroy(checkpoints%handle)
    checkpoints%handle = c_null_ptr
    call skein_check(status, ierr)
  end subroutine

  ! A checkpoint of step `step` at time `time` holding grids(i) under names(i).
  subroutine skein_checkpoint_write(checkpoints, step, time, names, grids, ierr)
    type(skein_checkpoint), intent(in) :: checkpoints
    integer, intent(in) :: step
    real(c_double), intent(in) :: time
    character(len=*), intent(in) :: names(:)
    type(skein_grid), intent(in) :: grids(:)
    integer, intent(out), optional :: ierr
    type(c_names), allocatable, target :: texts(:)
    type(c_ptr), allocatable :: pointers(:)
    if (.not. same_count("skein_checkpoint_write", size(names), size(grids), ierr)) return
    call to_c_names(names, texts, pointers)
    call skein_check(c_skein_checkpoint_write(checkpoints%handle, int(step, c_int64_t), time, &
                                              pointers, grids%handle, &
                                              int(size(grids), c_size_t)), ierr)
  end subroutine

  ! Restores the newest complete checkpoint into the grids (restored true, with its step and
  ! time), or finds none (restored false). The grids' halos are not restored: exchange them after.
  subroutine skein_checkpoint_restore_latest(checkpoints, names, grids, restored, step, time, ierr)
    type(skein_checkpoint), intent(in) :: checkpoints
    character(len=*), intent(in) :: names(:)
    type(skein_grid), intent(in) :: grids(:)
    logical, intent(out) :: restored
    integer, intent(out), optional :: step
    real(c_double), intent(out), optional :: time
    integer, intent(out), optional :: ierr
    type(c_names), allocatable, target :: texts(:)
    type(c_ptr), allocatable :: pointers(:)
    integer(c_int) :: c_restored
    integer(c_int64_t) :: c_step
    real(c_double) :: c_time
    restored = .false.
    c_restored = 0
    c_step = 0
    c_time = 0
    if (present(step)) step = 0
    if (present(time)) time = 0
    if (.not. same_count("skein_checkpoint_restore_latest", size(names), size(grids), ierr)) return
    call to_c_names(names, texts, pointers)
    call skein_check(c_skein_checkpoint_restore_latest(checkpoints%handle, pointers, &
                                                       grids%handle, int(size(grids), c_size_t), &
                                                       c_restored, c_step, c_time), ierr)
    restored = c_restored /= 0
    if (present(step)) step = int(c_step)
    if (present(time)) time = c_time
  end subroutine

  subroutine to_c_names(names, texts, pointers)
    character(len=*), intent(in) :: names(:)
    type(c_names), allocatable, target, intent(out) :: texts(:)
    type(c_ptr), allocatable, intent(out) :: pointers(:)
    integer :: i
    allocate (texts(size(names)), pointers(size(names)))
    do i = 1, size(names)
      texts(i)%text = skein_c_string(names(i))
      pointers(i) = c_loc(texts(i)%text)
    end do
  end subroutine

  logical function same_count(call, names, grids, ierr)
    character(len=*), intent(in) :: call
    integer, intent(in) :: names, grids
    integer, intent(out), optional :: ierr
    same_count = names == grids
    if (same_count) return
    call skein_fail(SKEIN_ERROR_INVALID_ARGUMENT, call // ": " // skein_itoa(names) // &
                    " names for " // skein_itoa(grids) // " grids: give one name per grid", ierr)
  end function
end module skein_io

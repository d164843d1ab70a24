! SPDX-License-Identifier: BSD-3-Clause
! The Fortran module's test program (ctest -L fortran): run under mpirun on 1 to 3 ranks with
! four PoCL devices shared out among them. It starts MPI itself and gives Skein its communicator
! (skein_init's comm=), runs every part, then adds up the failures of all ranks with
! MPI_Allreduce: a failure on any rank fails the run on every rank (non-zero exit status).
!   fortran_tests SCRATCH_DIRECTORY
program fortran_tests
  use, intrinsic :: iso_c_binding
  use mpi
  use skein
  use fortran_test_support
  use fortran_collectives_test, only: test_collectives
  use fortran_grids_test, only: test_grids
  use fortran_io_errors_test, only: test_io, test_errors
  implicit none
  type(skein_runtime) :: runtime
  character(len=512) :: directory
  integer :: ierror, rank, size, total, major, minor, patch, comm
  logical :: hdf5

  call MPI_Init(ierror)
  call get_command_argument(1, directory)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierror)
  if (rank == 0) call execute_command_line("rm -rf '" // trim(directory) // "' && mkdir -p '" // &
                                           trim(directory) // "'")
  call MPI_Barrier(MPI_COMM_WORLD, ierror)
  call set_rank(rank)

  call skein_init(runtime, comm=MPI_COMM_WORLD)
  call skein_runtime_size(runtime, size)
  call skein_runtime_fortran_comm(runtime, comm)
  call check(comm /= MPI_COMM_WORLD, "the runtime works on its own duplicate of the communicator")
  call skein_version_numbers(major, minor, patch)
  call check(skein_version() == itoa(major) // "." // itoa(minor) // "." // itoa(patch), &
             "version and version numbers agree")
  call check(skein_has_mpi(), "this build has MPI")
  call check(skein_dtype_size(SKEIN_COMPLEX128) == 16, "dtype sizes")
  call check(skein_dtype_name(SKEIN_BFLOAT16) == "bfloat16", "dtype names")

  call test_collectives(runtime)
  call test_grids(runtime)
  hdf5 = skein_has_hdf5()
  if (hdf5) call test_io(runtime, trim(directory))
  call test_errors(runtime, trim(directory))

  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierror)
  call skein_destroy(runtime)
  if (rank == 0 .and. total == 0) print '(a, i0, a, l1, a)', "fortran_tests: PASS on ", size, &
    " ranks (HDF5 parts run: ", hdf5, ")"
  if (rank == 0 .and. total > 0) print '(a, i0, a)', "fortran_tests: FAIL: ", total, &
    " failed checks over all ranks"
  call MPI_Finalize(ierror)
  if (total > 0) error stop 1

contains

  function itoa(value) result(text)
    integer, intent(in) :: value
    character(len=:), allocatable :: text
    character(len=16) :: buffer
    write (buffer, '(i0)') value
    text = trim(buffer)
  end function
end program fortran_tests

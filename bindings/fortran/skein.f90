! SPDX-License-Identifier: BSD-3-Clause
! Module skein: Skein for Fortran programs (`use skein`). It wraps the C API
! (bindings/c/include/skein/skein.h; its raw bind(C) interfaces are module skein_c_api) in Fortran
! types and procedures:
!   - a derived type per handle: type(skein_runtime), skein_queue, skein_array,
!     skein_communicator, skein_grid, skein_kernel, skein_hdf5_file, skein_checkpoint, released by
!     `call skein_destroy(x)` (or the C name, e.g. skein_grid_destroy; skein_hdf5_close for files);
!   - the C enumerators as integer(c_int) parameters of the same names (SKEIN_FLOAT64, SKEIN_SUM,
!     SKEIN_BOUNDARY_CONSTANT, ...) and the C structs as bind(C) types (skein_boundary, ...);
!   - procedures of the C names, in Fortran form: Fortran order and Fortran arrays by default
!     (skein_grids.f90, skein_host_copies.f90), Fortran strings, logical flags, optional
!     arguments for the options, and an optional `ierr` on every procedure (skein_support.f90:
!     without it a failure prints Skein's message and stops the program).
! The parts: skein_base.f90 (runtime, queues, arrays, communicators, the library),
! skein_collectives.f90, skein_grids.f90, skein_host_copies.f90, skein_kernels.f90, skein_io.f90.
! docs/guide.md, "Fortran", has the whole picture and docs/examples/heat2d.f90 a complete program.
module skein
  use skein_c_types
  use skein_support, only: skein_runtime, skein_queue, skein_array, skein_communicator, &
                           skein_grid, skein_kernel, skein_hdf5_file, skein_checkpoint, &
                           skein_error_message
  use skein_base
  use skein_collectives
  use skein_grids
  use skein_host_copies
  use skein_kernels
  use skein_io
  implicit none
  public

  ! Releases any of Skein's objects (collective where its creation was). A released or never
  ! created handle is accepted and left as it is.
  interface skein_destroy
    module procedure skein_runtime_destroy, skein_queue_destroy, skein_array_destroy
    module procedure skein_communicator_destroy, skein_grid_destroy, skein_kernel_destroy
    module procedure skein_hdf5_close, skein_checkpoint_destroy
  end interface
end module skein

! SPDX-License-Identifier: BSD-3-Clause
! Module skein_c_api: Skein's C API (bindings/c/include/skein/skein.h) as Fortran sees it, with
! nothing added: the enumerators and structs of skein_c_types (skein_c_types.f90), and a bind(C)
! interface for every C function. The interfaces' Fortran names are
! the C names with a c_ in front (c_skein_grid_create is skein_grid_create), so that this module and
! the user-facing module `skein`, whose procedures take the C names, can be used together.
!
! Module `skein` (skein.f90) is what a program uses; this one is for calls that it does not wrap
! and for code that wants the C API's exact form. Handles are type(c_ptr) here; a pointer argument
! that C accepts as NULL is an optional argument (absent: NULL) when it is passed by reference, and
! a type(c_ptr) (c_null_ptr: NULL) when it is passed by value. Strings go to C NUL-terminated
! (skein_c_string in skein_support.f90 makes them).
module skein_c_api
  use, intrinsic :: iso_c_binding, only: c_int, c_size_t, c_int64_t, c_double, c_ptr, c_char
  use skein_c_types
  implicit none
  ! Everything here is public, skein_c_types' enumerators and structs too, but iso_c_binding's names.
  private :: c_int, c_size_t, c_int64_t, c_double, c_ptr, c_char

  ! ---- errors, version, enumerations ----
  interface
    type(c_ptr) function c_skein_last_error_message() bind(C, name="skein_last_error_message")
      import :: c_ptr
    end function
    integer(c_int) function c_skein_last_error_status() bind(C, name="skein_last_error_status")
      import :: c_int
    end function
    subroutine c_skein_clear_error() bind(C, name="skein_clear_error")
    end subroutine
    type(c_ptr) function c_skein_status_name(status) bind(C, name="skein_status_name")
      import :: c_ptr, c_int
      integer(c_int), value :: status
    end function
    type(c_ptr) function c_skein_version() bind(C, name="skein_version")
      import :: c_ptr
    end function
    subroutine c_skein_version_numbers(major, minor, patch) bind(C, name="skein_version_numbers")
      import :: c_int
      integer(c_int), intent(out) :: major, minor, patch
    end subroutine
    integer(c_int) function c_skein_has_mpi() bind(C, name="skein_has_mpi")
      import :: c_int
    end function
    integer(c_int) function c_skein_has_hdf5() bind(C, name="skein_has_hdf5")
      import :: c_int
    end function
    integer(c_int) function c_skein_has_cuda() bind(C, name="skein_has_cuda")
      import :: c_int
    end function
    integer(c_int) function c_skein_has_opencl() bind(C, name="skein_has_opencl")
      import :: c_int
    end function
    integer(c_int) function c_skein_has_nccl() bind(C, name="skein_has_nccl")
      import :: c_int
    end function
    integer(c_size_t) function c_skein_dtype_size(dtype) bind(C, name="skein_dtype_size")
      import :: c_size_t, c_int
      integer(c_int), value :: dtype
    end function
    type(c_ptr) function c_skein_dtype_name(dtype) bind(C, name="skein_dtype_name")
      import :: c_ptr, c_int
      integer(c_int), value :: dtype
    end function
    ! The C library's strlen, for the strings the C API returns.
    integer(c_size_t) function c_strlen(s) bind(C, name="strlen")
      import :: c_size_t, c_ptr
      type(c_ptr), value :: s
    end function
  end interface

  ! ---- runtime ----
  interface
    subroutine c_skein_runtime_options_init(options) bind(C, name="skein_runtime_options_init")
      import :: skein_runtime_options
      type(skein_runtime_options), intent(out) :: options
    end subroutine
    integer(c_int) function c_skein_runtime_create(argc, argv, options, runtime) &
        bind(C, name="skein_runtime_create")
      import :: c_int, c_ptr, skein_runtime_options
      type(c_ptr), value :: argc, argv
      type(skein_runtime_options), intent(in), optional :: options
      type(c_ptr), intent(out) :: runtime
    end function
    integer(c_int) function c_skein_runtime_adopt_fortran(fortran_comm, options, runtime) &
        bind(C, name="skein_runtime_adopt_fortran")
      import :: c_int, c_ptr, skein_runtime_options
      integer(c_int), value :: fortran_comm
      type(skein_runtime_options), intent(in), optional :: options
      type(c_ptr), intent(out) :: runtime
    end function
    integer(c_int) function c_skein_runtime_create_serial(options, runtime) &
        bind(C, name="skein_runtime_create_serial")
      import :: c_int, c_ptr, skein_runtime_options
      type(skein_runtime_options), intent(in), optional :: options
      type(c_ptr), intent(out) :: runtime
    end function
    integer(c_int) function c_skein_runtime_destroy(runtime) bind(C, name="skein_runtime_destroy")
      import :: c_int, c_ptr
      type(c_ptr), value :: runtime
    end function
    integer(c_int) function c_skein_runtime_rank(runtime, rank) bind(C, name="skein_runtime_rank")
      import :: c_int, c_ptr
      type(c_ptr), value :: runtime
      integer(c_int), intent(out) :: rank
    end function
    integer(c_int) function c_skein_runtime_size(runtime, size) bind(C, name="skein_runtime_size")
      import :: c_int, c_ptr
      type(c_ptr), value :: runtime
      integer(c_int), intent(out) :: size
    end function
    integer(c_int) function c_skein_runtime_local_rank(runtime, local_rank) &
        bind(C, name="skein_runtime_local_rank")
      import :: c_int, c_ptr
      type(c_ptr), value :: runtime
      integer(c_int), intent(out) :: local_rank
    end function
    integer(c_int) function c_skein_runtime_fortran_comm(runtime, fortran_comm) &
        bind(C, name="skein_runtime_fortran_comm")
      import :: c_int, c_ptr
      type(c_ptr), value :: runtime
      integer(c_int), intent(out) :: fortran_comm
    end function
    integer(c_int) function c_skein_runtime_api(runtime, api) bind(C, name="skein_runtime_api")
      import :: c_int, c_ptr
      type(c_ptr), value :: runtime
      integer(c_int), intent(out) :: api
    end function
    integer(c_int) function c_skein_runtime_device_count(runtime, count) &
        bind(C, name="skein_runtime_device_count")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: runtime
      integer(c_size_t), intent(out) :: count
    end function
    integer(c_int) function c_skein_runtime_device_name(runtime, device, name, size) &
        bind(C, name="skein_runtime_device_name")
      import :: c_int, c_ptr, c_size_t, c_char
      type(c_ptr), value :: runtime
      integer(c_size_t), value :: device
      character(kind=c_char), intent(out) :: name(*)
      integer(c_size_t), value :: size
    end function
  end interface

  ! ---- queues ----
  interface
    integer(c_int) function c_skein_queue_create(runtime, queue) bind(C, name="skein_queue_create")
      import :: c_int, c_ptr
      type(c_ptr), value :: runtime
      type(c_ptr), intent(out) :: queue
    end function
    integer(c_int) function c_skein_queue_from_native(runtime, streams, count, queue) &
        bind(C, name="skein_queue_from_native")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: runtime
      type(c_ptr), intent(in) :: streams(*)
      integer(c_size_t), value :: count
      type(c_ptr), intent(out) :: queue
    end function
    integer(c_int) function c_skein_queue_destroy(queue) bind(C, name="skein_queue_destroy")
      import :: c_int, c_ptr
      type(c_ptr), value :: queue
    end function
    integer(c_int) function c_skein_queue_synchronize(queue) bind(C, name="skein_queue_synchronize")
      import :: c_int, c_ptr
      type(c_ptr), value :: queue
    end function
  end interface

  ! ---- arrays ----
  interface
    integer(c_int) function c_skein_array_create(queue, device, dtype, ndim, shape, order, array) &
        bind(C, name="skein_array_create")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: queue
      integer(c_size_t), value :: device
      integer(c_int), value :: dtype
      integer(c_size_t), value :: ndim
      integer(c_size_t), intent(in) :: shape(*)
      integer(c_int), value :: order
      type(c_ptr), intent(out) :: array
    end function
    integer(c_int) function c_skein_array_from_native(queue, device, native, nbytes, dtype, ndim, &
                                                      shape, order, array) &
        bind(C, name="skein_array_from_native")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: queue
      integer(c_size_t), value :: device
      type(c_ptr), value :: native
      integer(c_size_t), value :: nbytes
      integer(c_int), value :: dtype
      integer(c_size_t), value :: ndim
      integer(c_size_t), intent(in) :: shape(*)
      integer(c_int), value :: order
      type(c_ptr), intent(out) :: array
    end function
    integer(c_int) function c_skein_array_destroy(array) bind(C, name="skein_array_destroy")
      import :: c_int, c_ptr
      type(c_ptr), value :: array
    end function
    integer(c_int) function c_skein_array_dtype(array, dtype) bind(C, name="skein_array_dtype")
      import :: c_int, c_ptr
      type(c_ptr), value :: array
      integer(c_int), intent(out) :: dtype
    end function
    integer(c_int) function c_skein_array_size(array, size) bind(C, name="skein_array_size")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: array
      integer(c_size_t), intent(out) :: size
    end function
    integer(c_int) function c_skein_array_ndim(array, ndim) bind(C, name="skein_array_ndim")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: array
      integer(c_size_t), intent(out) :: ndim
    end function
    integer(c_int) function c_skein_array_shape(array, order, shape) &
        bind(C, name="skein_array_shape")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: array
      integer(c_int), value :: order
      integer(c_size_t), intent(out) :: shape(*)
    end function
    integer(c_int) function c_skein_array_device(array, device) bind(C, name="skein_array_device")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: array
      integer(c_size_t), intent(out) :: device
    end function
    integer(c_int) function c_skein_array_native(array, native, offset) &
        bind(C, name="skein_array_native")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: array
      type(c_ptr), intent(out) :: native
      integer(c_size_t), intent(out) :: offset
    end function
    integer(c_int) function c_skein_array_to_host(array, host, nbytes) &
        bind(C, name="skein_array_to_host")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: array, host
      integer(c_size_t), value :: nbytes
    end function
    integer(c_int) function c_skein_array_from_host(array, host, nbytes) &
        bind(C, name="skein_array_from_host")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: array, host
      integer(c_size_t), value :: nbytes
    end function
    integer(c_int) function c_skein_array_fill(array, value) bind(C, name="skein_array_fill")
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: array
      real(c_double), value :: value
    end function
  end interface

  ! ---- communicators and collectives ----
  interface
    subroutine c_skein_communicator_options_init(options) &
        bind(C, name="skein_communicator_options_init")
      import :: skein_communicator_options
      type(skein_communicator_options), intent(out) :: options
    end subroutine
    integer(c_int) function c_skein_communicator_create(runtime, options, comm) &
        bind(C, name="skein_communicator_create")
      import :: c_int, c_ptr, skein_communicator_options
      type(c_ptr), value :: runtime
      type(skein_communicator_options), intent(in), optional :: options
      type(c_ptr), intent(out) :: comm
    end function
    integer(c_int) function c_skein_communicator_destroy(comm) &
        bind(C, name="skein_communicator_destroy")
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
    end function
    integer(c_int) function c_skein_communicator_size(comm, size) &
        bind(C, name="skein_communicator_size")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: comm
      integer(c_size_t), intent(out) :: size
    end function
    integer(c_int) function c_skein_communicator_local_size(comm, local_size) &
        bind(C, name="skein_communicator_local_size")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: comm
      integer(c_size_t), intent(out) :: local_size
    end function
    integer(c_int) function c_skein_communicator_member(comm, local_device, member) &
        bind(C, name="skein_communicator_member")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: comm
      integer(c_size_t), value :: local_device
      integer(c_int), intent(out) :: member
    end function
    integer(c_int) function c_skein_communicator_backend(comm, backend) &
        bind(C, name="skein_communicator_backend")
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
      integer(c_int), intent(out) :: backend
    end function
    integer(c_int) function c_skein_all_reduce(comm, queue, send, recv, count, op) &
        bind(C, name="skein_all_reduce")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: comm, queue
      type(c_ptr), intent(in) :: send(*), recv(*)
      integer(c_size_t), value :: count
      integer(c_int), value :: op
    end function
    integer(c_int) function c_skein_all_gather(comm, queue, send, recv, count) &
        bind(C, name="skein_all_gather")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: comm, queue
      type(c_ptr), intent(in) :: send(*), recv(*)
      integer(c_size_t), value :: count
    end function
    integer(c_int) function c_skein_broadcast(comm, queue, data, count, root) &
        bind(C, name="skein_broadcast")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: comm, queue
      type(c_ptr), intent(in) :: data(*)
      integer(c_size_t), value :: count
      integer(c_int), value :: root
    end function
    integer(c_int) function c_skein_reduce(comm, queue, send, recv, count, op, root) &
        bind(C, name="skein_reduce")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: comm, queue
      type(c_ptr), intent(in) :: send(*), recv(*)
      integer(c_size_t), value :: count
      integer(c_int), value :: op, root
    end function
    integer(c_int) function c_skein_reduce_scatter(comm, queue, send, recv, count, op) &
        bind(C, name="skein_reduce_scatter")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: comm, queue
      type(c_ptr), intent(in) :: send(*), recv(*)
      integer(c_size_t), value :: count
      integer(c_int), value :: op
    end function
    integer(c_int) function c_skein_all_to_all(comm, queue, send, recv, count) &
        bind(C, name="skein_all_to_all")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: comm, queue
      type(c_ptr), intent(in) :: send(*), recv(*)
      integer(c_size_t), value :: count
    end function
    integer(c_int) function c_skein_send(comm, queue, local_device, data, peer) &
        bind(C, name="skein_send")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: comm, queue
      integer(c_size_t), value :: local_device
      type(c_ptr), value :: data
      integer(c_int), value :: peer
    end function
    integer(c_int) function c_skein_recv(comm, queue, local_device, data, peer) &
        bind(C, name="skein_recv")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: comm, queue
      integer(c_size_t), value :: local_device
      type(c_ptr), value :: data
      integer(c_int), value :: peer
    end function
    integer(c_int) function c_skein_barrier(comm, queue) bind(C, name="skein_barrier")
      import :: c_int, c_ptr
      type(c_ptr), value :: comm, queue
    end function
    integer(c_int) function c_skein_group_start(comm) bind(C, name="skein_group_start")
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
    end function
    integer(c_int) function c_skein_group_end(comm) bind(C, name="skein_group_end")
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
    end function
    integer(c_int) function c_skein_all_reduce_native(comm, queue, send, recv, count, elements, &
                                                      dtype, op) &
        bind(C, name="skein_all_reduce_native")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: comm, queue
      type(c_ptr), intent(in) :: send(*), recv(*)
      integer(c_size_t), value :: count, elements
      integer(c_int), value :: dtype, op
    end function
    integer(c_int) function c_skein_all_gather_native(comm, queue, send, recv, count, elements, &
                                                      dtype) &
        bind(C, name="skein_all_gather_native")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: comm, queue
      type(c_ptr), intent(in) :: send(*), recv(*)
      integer(c_size_t), value :: count, elements
      integer(c_int), value :: dtype
    end function
    integer(c_int) function c_skein_broadcast_native(comm, queue, data, count, elements, dtype, &
                                                     root) &
        bind(C, name="skein_broadcast_native")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: comm, queue
      type(c_ptr), intent(in) :: data(*)
      integer(c_size_t), value :: count, elements
      integer(c_int), value :: dtype, root
    end function
    integer(c_int) function c_skein_reduce_native(comm, queue, send, recv, count, elements, &
                                                  dtype, op, root) &
        bind(C, name="skein_reduce_native")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: comm, queue
      type(c_ptr), intent(in) :: send(*), recv(*)
      integer(c_size_t), value :: count, elements
      integer(c_int), value :: dtype, op, root
    end function
    integer(c_int) function c_skein_reduce_scatter_native(comm, queue, send, recv, count, &
                                                          elements, dtype, op) &
        bind(C, name="skein_reduce_scatter_native")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: comm, queue
      type(c_ptr), intent(in) :: send(*), recv(*)
      integer(c_size_t), value :: count, elements
      integer(c_int), value :: dtype, op
    end function
  end interface

  ! ---- grids ----
  interface
    subroutine c_skein_grid_options_init(options) bind(C, name="skein_grid_options_init")
      import :: skein_grid_options
      type(skein_grid_options), intent(out) :: options
    end subroutine
    integer(c_int) function c_skein_grid_create(comm, queue, ndim, shape, dtype, options, grid) &
        bind(C, name="skein_grid_create")
      import :: c_int, c_ptr, c_size_t, skein_grid_options
      type(c_ptr), value :: comm, queue
      integer(c_size_t), value :: ndim
      integer(c_size_t), intent(in) :: shape(*)
      integer(c_int), value :: dtype
      type(skein_grid_options), intent(in), optional :: options
      type(c_ptr), intent(out) :: grid
    end function
    integer(c_int) function c_skein_grid_destroy(grid) bind(C, name="skein_grid_destroy")
      import :: c_int, c_ptr
      type(c_ptr), value :: grid
    end function
    integer(c_int) function c_skein_grid_dtype(grid, dtype) bind(C, name="skein_grid_dtype")
      import :: c_int, c_ptr
      type(c_ptr), value :: grid
      integer(c_int), intent(out) :: dtype
    end function
    integer(c_int) function c_skein_grid_ndim(grid, ndim) bind(C, name="skein_grid_ndim")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: grid
      integer(c_size_t), intent(out) :: ndim
    end function
    integer(c_int) function c_skein_grid_process_grid(grid, order, process_grid) &
        bind(C, name="skein_grid_process_grid")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: grid
      integer(c_int), value :: order
      integer(c_size_t), intent(out) :: process_grid(*)
    end function
    integer(c_int) function c_skein_grid_local_count(grid, count) &
        bind(C, name="skein_grid_local_count")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: grid
      integer(c_size_t), intent(out) :: count
    end function
    integer(c_int) function c_skein_grid_local_block(grid, local, order, offset, extent) &
        bind(C, name="skein_grid_local_block")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: grid
      integer(c_size_t), value :: local
      integer(c_int), value :: order
      integer(c_size_t), intent(out), optional :: offset(*), extent(*)
    end function
    integer(c_int) function c_skein_grid_local_array(grid, local, with_halo, array) &
        bind(C, name="skein_grid_local_array")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: grid
      integer(c_size_t), value :: local
      integer(c_int), value :: with_halo
      type(c_ptr), intent(out) :: array
    end function
    integer(c_int) function c_skein_grid_local_to_host(grid, local, host, nbytes) &
        bind(C, name="skein_grid_local_to_host")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: grid
      integer(c_size_t), value :: local
      type(c_ptr), value :: host
      integer(c_size_t), value :: nbytes
    end function
    integer(c_int) function c_skein_grid_local_from_host(grid, local, host, nbytes) &
        bind(C, name="skein_grid_local_from_host")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: grid
      integer(c_size_t), value :: local
      type(c_ptr), value :: host
      integer(c_size_t), value :: nbytes
    end function
    integer(c_int) function c_skein_grid_scatter(grid, host, nbytes, root_rank) &
        bind(C, name="skein_grid_scatter")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: grid, host
      integer(c_size_t), value :: nbytes
      integer(c_int), value :: root_rank
    end function
    integer(c_int) function c_skein_grid_gather(grid, host, nbytes, root_rank) &
        bind(C, name="skein_grid_gather")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: grid, host
      integer(c_size_t), value :: nbytes
      integer(c_int), value :: root_rank
    end function
    integer(c_int) function c_skein_grid_exchange_halos(grid) &
        bind(C, name="skein_grid_exchange_halos")
      import :: c_int, c_ptr
      type(c_ptr), value :: grid
    end function
    integer(c_int) function c_skein_grid_exchange_halos_many(grids, count) &
        bind(C, name="skein_grid_exchange_halos_many")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), intent(in) :: grids(*)
      integer(c_size_t), value :: count
    end function
    integer(c_int) function c_skein_grid_fill(out, value) bind(C, name="skein_grid_fill")
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: out
      real(c_double), value :: value
    end function
    integer(c_int) function c_skein_grid_copy(src, dst) bind(C, name="skein_grid_copy")
      import :: c_int, c_ptr
      type(c_ptr), value :: src, dst
    end function
    integer(c_int) function c_skein_grid_axpy(a, x, y, out) bind(C, name="skein_grid_axpy")
      import :: c_int, c_ptr, c_double
      real(c_double), value :: a
      type(c_ptr), value :: x, y, out
    end function
    integer(c_int) function c_skein_grid_scale(a, x, out) bind(C, name="skein_grid_scale")
      import :: c_int, c_ptr, c_double
      real(c_double), value :: a
      type(c_ptr), value :: x, out
    end function
    integer(c_int) function c_skein_grid_sum(x, result) bind(C, name="skein_grid_sum")
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: x
      real(c_double), intent(out) :: result
    end function
    integer(c_int) function c_skein_grid_min(x, result) bind(C, name="skein_grid_min")
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: x
      real(c_double), intent(out) :: result
    end function
    integer(c_int) function c_skein_grid_max(x, result) bind(C, name="skein_grid_max")
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: x
      real(c_double), intent(out) :: result
    end function
    integer(c_int) function c_skein_grid_dot(x, y, result) bind(C, name="skein_grid_dot")
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: x, y
      real(c_double), intent(out) :: result
    end function
    integer(c_int) function c_skein_grid_nrm2(x, result) bind(C, name="skein_grid_nrm2")
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: x
      real(c_double), intent(out) :: result
    end function
  end interface

  ! ---- kernels ----
  interface
    integer(c_int) function c_skein_kernel_create_elementwise(params, operation, name, kernel) &
        bind(C, name="skein_kernel_create_elementwise")
      import :: c_int, c_ptr, c_char
      character(kind=c_char), intent(in) :: params(*), operation(*), name(*)
      type(c_ptr), intent(out) :: kernel
    end function
    ! map, reduce and identity may be NULL (a stencil without a reduction): type(c_ptr) by value.
    integer(c_int) function c_skein_kernel_create_stencil(in_params, out_params, operation, map, &
                                                          reduce, identity, name, kernel) &
        bind(C, name="skein_kernel_create_stencil")
      import :: c_int, c_ptr, c_char
      character(kind=c_char), intent(in) :: in_params(*), out_params(*), operation(*)
      type(c_ptr), value :: map, reduce, identity
      character(kind=c_char), intent(in) :: name(*)
      type(c_ptr), intent(out) :: kernel
    end function
    integer(c_int) function c_skein_kernel_destroy(kernel) bind(C, name="skein_kernel_destroy")
      import :: c_int, c_ptr
      type(c_ptr), value :: kernel
    end function
    integer(c_int) function c_skein_grid_elementwise(kernel, args, count) &
        bind(C, name="skein_grid_elementwise")
      import :: c_int, c_ptr, c_size_t, skein_operand
      type(c_ptr), value :: kernel
      type(skein_operand), intent(in) :: args(*)
      integer(c_size_t), value :: count
    end function
    integer(c_int) function c_skein_grid_stencil(kernel, args, count, region) &
        bind(C, name="skein_grid_stencil")
      import :: c_int, c_ptr, c_size_t, skein_operand
      type(c_ptr), value :: kernel
      type(skein_operand), intent(in) :: args(*)
      integer(c_size_t), value :: count
      integer(c_int), value :: region
    end function
    integer(c_int) function c_skein_grid_stencil_reduce(kernel, args, count, region, partials, &
                                                        partials_count) &
        bind(C, name="skein_grid_stencil_reduce")
      import :: c_int, c_ptr, c_size_t, skein_operand
      type(c_ptr), value :: kernel
      type(skein_operand), intent(in) :: args(*)
      integer(c_size_t), value :: count
      integer(c_int), value :: region
      type(c_ptr), intent(in) :: partials(*)
      integer(c_size_t), value :: partials_count
    end function
  end interface

  ! ---- HDF5 files and checkpoints ----
  interface
    integer(c_int) function c_skein_hdf5_create(comm, path, file) bind(C, name="skein_hdf5_create")
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: comm
      character(kind=c_char), intent(in) :: path(*)
      type(c_ptr), intent(out) :: file
    end function
    integer(c_int) function c_skein_hdf5_open(comm, path, read_write, file) &
        bind(C, name="skein_hdf5_open")
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: comm
      character(kind=c_char), intent(in) :: path(*)
      integer(c_int), value :: read_write
      type(c_ptr), intent(out) :: file
    end function
    integer(c_int) function c_skein_hdf5_close(file) bind(C, name="skein_hdf5_close")
      import :: c_int, c_ptr
      type(c_ptr), value :: file
    end function
    integer(c_int) function c_skein_hdf5_write_grid(file, name, grid) &
        bind(C, name="skein_hdf5_write_grid")
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: file
      character(kind=c_char), intent(in) :: name(*)
      type(c_ptr), value :: grid
    end function
    integer(c_int) function c_skein_hdf5_read_grid(file, name, grid) &
        bind(C, name="skein_hdf5_read_grid")
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: file
      character(kind=c_char), intent(in) :: name(*)
      type(c_ptr), value :: grid
    end function
    integer(c_int) function c_skein_hdf5_set_attribute(file, object, name, value) &
        bind(C, name="skein_hdf5_set_attribute")
      import :: c_int, c_ptr, c_char, c_double
      type(c_ptr), value :: file
      character(kind=c_char), intent(in) :: object(*), name(*)
      real(c_double), value :: value
    end function
    integer(c_int) function c_skein_hdf5_get_attribute(file, object, name, value) &
        bind(C, name="skein_hdf5_get_attribute")
      import :: c_int, c_ptr, c_char, c_double
      type(c_ptr), value :: file
      character(kind=c_char), intent(in) :: object(*), name(*)
      real(c_double), intent(out) :: value
    end function
    integer(c_int) function c_skein_checkpoint_create(comm, directory, keep, checkpoints) &
        bind(C, name="skein_checkpoint_create")
      import :: c_int, c_ptr, c_char, c_size_t
      type(c_ptr), value :: comm
      character(kind=c_char), intent(in) :: directory(*)
      integer(c_size_t), value :: keep
      type(c_ptr), intent(out) :: checkpoints
    end function
    integer(c_int) function c_skein_checkpoint_destroy(checkpoints) &
        bind(C, name="skein_checkpoint_destroy")
      import :: c_int, c_ptr
      type(c_ptr), value :: checkpoints
    end function
    integer(c_int) function c_skein_checkpoint_write(checkpoints, step, time, names, grids, count) &
        bind(C, name="skein_checkpoint_write")
      import :: c_int, c_ptr, c_int64_t, c_double, c_size_t
      type(c_ptr), value :: checkpoints
      integer(c_int64_t), value :: step
      real(c_double), value :: time
      type(c_ptr), intent(in) :: names(*), grids(*)
      integer(c_size_t), value :: count
    end function
    integer(c_int) function c_skein_checkpoint_restore_latest(checkpoints, names, grids, count, &
                                                              restored, step, time) &
        bind(C, name="skein_checkpoint_restore_latest")
      import :: c_int, c_ptr, c_int64_t, c_double, c_size_t
      type(c_ptr), value :: checkpoints
      type(c_ptr), intent(in) :: names(*), grids(*)
      integer(c_size_t), value :: count
      integer(c_int), intent(out) :: restored
      integer(c_int64_t), intent(out) :: step
      real(c_double), intent(out) :: time
    end function
  end interface
end module skein_c_api

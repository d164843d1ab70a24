! SPDX-License-Identifier: BSD-3-Clause
! Module skein_base: the runtime (MPI and this rank's devices), queues, arrays on one device and
! communicators, in Fortran form, and what the library says about itself (version, what it was
! built with, the names of statuses and dtypes).
!
! Numbering: ranks, devices, members and local blocks are numbered from 0, as MPI's ranks and the C
! API's indices are. Per-axis values are in Fortran order unless an `order` argument says otherwise.
module skein_base
  use, intrinsic :: iso_c_binding, only: c_int, c_size_t, c_int64_t, c_double, c_ptr, c_char, &
                                         c_null_ptr, c_null_char, c_loc
  use skein_c_types
  use skein_c_api
  use skein_support
  implicit none
  private

  public :: skein_init, skein_runtime_destroy, skein_runtime_rank, skein_runtime_size
  public :: skein_runtime_local_rank, skein_runtime_fortran_comm, skein_runtime_api
  public :: skein_runtime_device_count, skein_runtime_device_name
  public :: skein_queue_create, skein_queue_from_native, skein_queue_destroy
  public :: skein_queue_synchronize
  public :: skein_array_create, skein_array_from_native, skein_array_destroy, skein_array_dtype
  public :: skein_array_size, skein_array_ndim, skein_array_shape, skein_array_device
  public :: skein_array_native, skein_array_fill
  public :: skein_communicator_create, skein_communicator_destroy, skein_communicator_size
  public :: skein_communicator_local_size, skein_communicator_member, skein_communicator_backend
  public :: skein_version, skein_version_numbers, skein_has_mpi, skein_has_hdf5, skein_has_cuda
  public :: skein_has_opencl, skein_has_nccl, skein_status_name, skein_dtype_size, skein_dtype_name

contains

  ! ---- runtime ----

  ! Starts Skein on this rank. With `comm` (a Fortran MPI communicator: an integer, or mpi_f08's
  ! comm%mpi_val), Skein adopts the program's MPI, already initialised, over that communicator and
  ! leaves MPI to the program. Without it, Skein initialises MPI unless it already is, works on
  ! MPI_COMM_WORLD and finalises MPI when the runtime is destroyed if it initialised it. With
  ! serial=.true., a single-rank runtime without MPI. Collective. The device options are those of
  ! skein_runtime_options (absent: from the environment, docs/guide.md).
  subroutine skein_init(runtime, comm, api, devices_per_rank, device_index, share_devices, &
                        device_masks, serial, ierr)
    type(skein_runtime), intent(out) :: runtime
    integer, intent(in), optional :: comm
    integer(c_int), intent(in), optional :: api
    integer, intent(in), optional :: devices_per_rank, device_index
    logical, intent(in), optional :: share_devices, serial
    character(len=*), intent(in), optional :: device_masks
    integer, intent(out), optional :: ierr
    type(skein_runtime_options) :: options
    character(kind=c_char, len=:), allocatable, target :: masks
    integer(c_int) :: status
    call c_skein_runtime_options_init(options)
    if (present(api)) options%api = api
    if (present(devices_per_rank)) options%devices_per_rank = int(devices_per_rank, c_size_t)
    if (present(device_index)) options%device_index = int(device_index, c_int64_t)
    if (present(share_devices)) options%share_devices = merge(1_c_int, 0_c_int, share_devices)
    if (present(device_masks)) then
      masks = skein_c_string(device_masks)
      options%device_masks = c_loc(masks)
    end if
    if (present(comm)) then
      status = c_skein_runtime_adopt_fortran(int(comm, c_int), options, runtime%handle)
    else if (present(serial)) then
      if (serial) then
        status = c_skein_runtime_create_serial(options, runtime%handle)
      else
        status = c_skein_runtime_create(c_null_ptr, c_null_ptr, options, runtime%handle)
      end if
    else
      status = c_skein_runtime_create(c_null_ptr, c_null_ptr, options, runtime%handle)
    end if
    call skein_check(status, ierr)
  end subroutine

  ! Collective when the runtime uses MPI. Destroy every object made over the runtime first.
  subroutine skein_runtime_destroy(runtime, ierr)
    type(skein_runtime), intent(inout) :: runtime
    integer, intent(out), optional :: ierr
    integer(c_int) :: status
    status = c_skein_runtime_destroy(runtime%handle)
    runtime%handle = c_null_ptr
    call skein_check(status, ierr)
  end subroutine

  subroutine skein_runtime_rank(runtime, rank, ierr)
    type(skein_runtime), intent(in) :: runtime
    integer, intent(out) :: rank
    integer, intent(out), optional :: ierr
    integer(c_int) :: value
    value = 0
    call skein_check(c_skein_runtime_rank(runtime%handle, value), ierr)
    rank = int(value)
  end subroutine

  subroutine skein_runtime_size(runtime, size, ierr)
    type(skein_runtime), intent(in) :: runtime
    integer, intent(out) :: size
    integer, intent(out), optional :: ierr
    integer(c_int) :: value
    value = 0
    call skein_check(c_skein_runtime_size(runtime%handle, value), ierr)
    size = int(value)
  end subroutine

  subroutine skein_runtime_local_rank(runtime, local_rank, ierr)
    type(skein_runtime), intent(in) :: runtime
    integer, intent(out) :: local_rank
    integer, intent(out), optional :: ierr
    integer(c_int) :: value
    value = 0
    call skein_check(c_skein_runtime_local_rank(runtime%handle, value), ierr)
    local_rank = int(value)
  end subroutine

  ! Skein's own duplicate of the runtime's communicator, as a Fortran MPI communicator.
  subroutine skein_runtime_fortran_comm(runtime, comm, ierr)
    type(skein_runtime), intent(in) :: runtime
    integer, intent(out) :: comm
    integer, intent(out), optional :: ierr
    integer(c_int) :: value
    value = 0
    call skein_check(c_skein_runtime_fortran_comm(runtime%handle, value), ierr)
    comm = int(value)
  end subroutine

  ! SKEIN_API_CUDA or SKEIN_API_OPENCL.
  subroutine skein_runtime_api(runtime, api, ierr)
    type(skein_runtime), intent(in) :: runtime
    integer(c_int), intent(out) :: api
    integer, intent(out), optional :: ierr
    api = SKEIN_API_DEFAULT
    call skein_check(c_skein_runtime_api(runtime%handle, api), ierr)
  end subroutine

  subroutine skein_runtime_device_count(runtime, count, ierr)
    type(skein_runtime), intent(in) :: runtime
    integer, intent(out) :: count
    integer, intent(out), optional :: ierr
    integer(c_size_t) :: value
    value = 0
    call skein_check(c_skein_runtime_device_count(runtime%handle, value), ierr)
    count = int(value)
  end subroutine

  ! The description of device `device` (0-based), cut to fit `name` and padded with blanks.
  subroutine skein_runtime_device_name(runtime, device, name, ierr)
    type(skein_runtime), intent(in) :: runtime
    integer, intent(in) :: device
    character(len=*), intent(out) :: name
    integer, intent(out), optional :: ierr
    character(kind=c_char) :: buffer(len(name) + 1)
    integer :: i
    name = ""
    buffer = c_null_char
    call skein_check(c_skein_runtime_device_name(runtime%handle, int(device, c_size_t), buffer, &
                                                 int(size(buffer), c_size_t)), ierr)
    do i = 1, len(name)
      if (buffer(i) == c_null_char) exit
      name(i:i) = buffer(i)
    end do
  end subroutine

  ! ---- queues ----

  ! A queue on every device of the runtime.
  subroutine skein_queue_create(queue, runtime, ierr)
    type(skein_queue), intent(out) :: queue
    type(skein_runtime), intent(in) :: runtime
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_queue_create(runtime%handle, queue%handle), ierr)
  end subroutine

  ! A queue over the program's own streams (CUstream or cl_command_queue), one per device of the
  ! runtime in device order.
  subroutine skein_queue_from_native(queue, runtime, streams, ierr)
    type(skein_queue), intent(out) :: queue
    type(skein_runtime), intent(in) :: runtime
    type(c_ptr), intent(in) :: streams(:)
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_queue_from_native(runtime%handle, streams, &
                                               int(size(streams), c_size_t), queue%handle), ierr)
  end subroutine

  subroutine skein_queue_destroy(queue, ierr)
    type(skein_queue), intent(inout) :: queue
    integer, intent(out), optional :: ierr
    integer(c_int) :: status
    status = c_skein_queue_destroy(queue%handle)
    queue%handle = c_null_ptr
    call skein_check(status, ierr)
  end subroutine

  ! Waits for everything enqueued on the queue.
  subroutine skein_queue_synchronize(queue, ierr)
    type(skein_queue), intent(in) :: queue
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_queue_synchronize(queue%handle), ierr)
  end subroutine

  ! ---- arrays on one device ----

  ! A new array of `shape` (in `order`, default Fortran: shape [m, n] holds a(m, n)) on device
  ! `device` (0-based) of the queue's runtime, uninitialised.
  subroutine skein_array_create(array, queue, device, dtype, shape, order, ierr)
    type(skein_array), intent(out) :: array
    type(skein_queue), intent(in) :: queue
    integer, intent(in) :: device
    integer(c_int), intent(in) :: dtype
    integer, intent(in) :: shape(:)
    integer(c_int), intent(in), optional :: order
    integer, intent(out), optional :: ierr
    integer(c_size_t) :: c_shape(max(size(shape), 1))
    c_shape = 0
    c_shape(1:size(shape)) = skein_sizes(shape)
    call skein_check(c_skein_array_create(queue%handle, int(device, c_size_t), dtype, &
                                          int(size(shape), c_size_t), c_shape, &
                                          skein_order(order), array%handle), ierr)
  end subroutine

  ! An array over the program's device memory (`native`: a CUdeviceptr as type(c_ptr), or a
  ! cl_mem) of `nbytes` bytes, which the program keeps alive while the array exists.
  subroutine skein_array_from_native(array, queue, device, native, nbytes, dtype, shape, order, &
                                     ierr)
    type(skein_array), intent(out) :: array
    type(skein_queue), intent(in) :: queue
    integer, intent(in) :: device
    type(c_ptr), intent(in) :: native
    integer(c_size_t), intent(in) :: nbytes
    integer(c_int), intent(in) :: dtype
    integer, intent(in) :: shape(:)
    integer(c_int), intent(in), optional :: order
    integer, intent(out), optional :: ierr
    integer(c_size_t) :: c_shape(max(size(shape), 1))
    c_shape = 0
    c_shape(1:size(shape)) = skein_sizes(shape)
    call skein_check(c_skein_array_from_native(queue%handle, int(device, c_size_t), native, &
                                               nbytes, dtype, int(size(shape), c_size_t), c_shape, &
                                               skein_order(order), array%handle), ierr)
  end subroutine

  subroutine skein_array_destroy(array, ierr)
    type(skein_array), intent(inout) :: array
    integer, intent(out), optional :: ierr
    integer(c_int) :: status
    status = c_skein_array_destroy(array%handle)
    array%handle = c_null_ptr
    call skein_check(status, ierr)
  end subroutine

  subroutine skein_array_dtype(array, dtype, ierr)
    type(skein_array), intent(in) :: array
    integer(c_int), intent(out) :: dtype
    integer, intent(out), optional :: ierr
    dtype = -1
    call skein_check(c_skein_array_dtype(array%handle, dtype), ierr)
  end subroutine

  ! Elements (the product of the shape).
  subroutine skein_array_size(array, size, ierr)
    type(skein_array), intent(in) :: array
    integer(c_size_t), intent(out) :: size
    integer, intent(out), optional :: ierr
    size = 0
    call skein_check(c_skein_array_size(array%handle, size), ierr)
  end subroutine

  subroutine skein_array_ndim(array, ndim, ierr)
    type(skein_array), intent(in) :: array
    integer, intent(out) :: ndim
    integer, intent(out), optional :: ierr
    integer(c_size_t) :: value
    value = 0
    call skein_check(c_skein_array_ndim(array%handle, value), ierr)
    ndim = int(value)
  end subroutine

  ! The shape in `order` (default Fortran); `shape` must have room for ndim values (the rest are
  ! left at 0).
  subroutine skein_array_shape(array, shape, order, ierr)
    type(skein_array), intent(in) :: array
    integer, intent(out) :: shape(:)
    integer(c_int), intent(in), optional :: order
    integer, intent(out), optional :: ierr
    integer(c_size_t) :: ndim, values(8)
    integer :: status
    shape = 0
    ndim = 0
    call skein_check(c_skein_array_ndim(array%handle, ndim), status)
    if (status == SKEIN_SUCCESS .and. int(ndim) > size(shape)) then
      call skein_fail(SKEIN_ERROR_INVALID_ARGUMENT, "skein_array_shape: the array has " // &
                      skein_itoa(int(ndim)) // " axes but `shape` has room for " // skein_itoa(size(shape)) // &
                      ": pass an array of at least ndim elements", ierr)
      return
    end if
    if (status == SKEIN_SUCCESS) then
      values = 0
      call skein_check(c_skein_array_shape(array%handle, skein_order(order), values), status)
      shape(1:int(ndim)) = int(values(1:int(ndim)))
    end if
    if (status /= SKEIN_SUCCESS) then
      call skein_fail(status, skein_error_message(), ierr)
    else if (present(ierr)) then
      ierr = SKEIN_SUCCESS
    end if
  end subroutine

  subroutine skein_array_device(array, device, ierr)
    type(skein_array), intent(in) :: array
    integer, intent(out) :: device
    integer, intent(out), optional :: ierr
    integer(c_size_t) :: value
    value = 0
    call skein_check(c_skein_array_device(array%handle, value), ierr)
    device = int(value)
  end subroutine

  ! The memory of element 0 (CUdeviceptr or cl_mem) and its byte offset in that allocation.
  subroutine skein_array_native(array, native, offset, ierr)
    type(skein_array), intent(in) :: array
    type(c_ptr), intent(out) :: native
    integer(c_size_t), intent(out), optional :: offset
    integer, intent(out), optional :: ierr
    integer(c_size_t) :: value
    native = c_null_ptr
    value = 0
    call skein_check(c_skein_array_native(array%handle, native, value), ierr)
    if (present(offset)) offset = value
  end subroutine

  ! Every element set to `value` (converted to the dtype). Enqueued.
  subroutine skein_array_fill(array, value, ierr)
    type(skein_array), intent(in) :: array
    real(c_double), intent(in) :: value
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_array_fill(array%handle, value), ierr)
  end subroutine

  ! ---- communicators ----

  ! Over every rank of the runtime and every device of each. Collective. Absent options take
  ! their variables' values (SKEIN_BACKEND, SKEIN_COLLECTIVE_TIMEOUT, SKEIN_CHECK_COLLECTIVES).
  subroutine skein_communicator_create(comm, runtime, backend, timeout_seconds, check_agreement, &
                                       ierr)
    type(skein_communicator), intent(out) :: comm
    type(skein_runtime), intent(in) :: runtime
    integer(c_int), intent(in), optional :: backend
    real(c_double), intent(in), optional :: timeout_seconds
    logical, intent(in), optional :: check_agreement
    integer, intent(out), optional :: ierr
    type(skein_communicator_options) :: options
    call c_skein_communicator_options_init(options)
    if (present(backend)) options%backend = backend
    if (present(timeout_seconds)) options%timeout_seconds = timeout_seconds
    if (present(check_agreement)) options%check_agreement = merge(1_c_int, 0_c_int, check_agreement)
    call skein_check(c_skein_communicator_create(runtime%handle, options, comm%handle), ierr)
  end subroutine

  subroutine skein_communicator_destroy(comm, ierr)
    type(skein_communicator), intent(inout) :: comm
    integer, intent(out), optional :: ierr
    integer(c_int) :: status
    status = c_skein_communicator_destroy(comm%handle)
    comm%handle = c_null_ptr
    call skein_check(status, ierr)
  end subroutine

  ! Members: (rank, device) pairs over all ranks.
  subroutine skein_communicator_size(comm, size, ierr)
    type(skein_communicator), intent(in) :: comm
    integer, intent(out) :: size
    integer, intent(out), optional :: ierr
    integer(c_size_t) :: value
    value = 0
    call skein_check(c_skein_communicator_size(comm%handle, value), ierr)
    size = int(value)
  end subroutine

  ! This rank's members (its devices).
  subroutine skein_communicator_local_size(comm, local_size, ierr)
    type(skein_communicator), intent(in) :: comm
    integer, intent(out) :: local_size
    integer, intent(out), optional :: ierr
    integer(c_size_t) :: value
    value = 0
    call skein_check(c_skein_communicator_local_size(comm%handle, value), ierr)
    local_size = int(value)
  end subroutine

  ! The member (0-based) of this rank's local device `local_device` (0-based).
  subroutine skein_communicator_member(comm, local_device, member, ierr)
    type(skein_communicator), intent(in) :: comm
    integer, intent(in) :: local_device
    integer, intent(out) :: member
    integer, intent(out), optional :: ierr
    integer(c_int) :: value
    value = 0
    call skein_check(c_skein_communicator_member(comm%handle, int(local_device, c_size_t), value), &
                     ierr)
    member = int(value)
  end subroutine

  ! SKEIN_BACKEND_NCCL or SKEIN_BACKEND_MPI.
  subroutine skein_communicator_backend(comm, backend, ierr)
    type(skein_communicator), intent(in) :: comm
    integer(c_int), intent(out) :: backend
    integer, intent(out), optional :: ierr
    backend = SKEIN_BACKEND_DEFAULT
    call skein_check(c_skein_communicator_backend(comm%handle, backend), ierr)
  end subroutine

  ! ---- the library ----

  ! The library's version at run time, e.g. "0.1.0".
  function skein_version() result(version)
    character(len=:), allocatable :: version
    version = skein_f_string(c_skein_version())
  end function

  subroutine skein_version_numbers(major, minor, patch)
    integer, intent(out) :: major, minor, patch
    integer(c_int) :: values(3)
    call c_skein_version_numbers(values(1), values(2), values(3))
    major = int(values(1))
    minor = int(values(2))
    patch = int(values(3))
  end subroutine

  ! What the library was built with.
  logical function skein_has_mpi()
    skein_has_mpi = c_skein_has_mpi() /= 0
  end function
  logical function skein_has_hdf5()
    skein_has_hdf5 = c_skein_has_hdf5() /= 0
  end function
  logical function skein_has_cuda()
    skein_has_cuda = c_skein_has_cuda() /= 0
  end function
  logical function skein_has_opencl()
    skein_has_opencl = c_skein_has_opencl() /= 0
  end function
  logical function skein_has_nccl()
    skein_has_nccl = c_skein_has_nccl() /= 0
  end function

  ! E.g. "SKEIN_ERROR_TIMEOUT" for SKEIN_ERROR_TIMEOUT.
  function skein_status_name(status) result(name)
    integer, intent(in) :: status
    character(len=:), allocatable :: name
    name = skein_f_string(c_skein_status_name(int(status, c_int)))
  end function

  ! Bytes per element (0 for a value that is not a dtype).
  integer function skein_dtype_size(dtype)
    integer(c_int), intent(in) :: dtype
    skein_dtype_size = int(c_skein_dtype_size(dtype))
  end function

  ! NumPy's name, e.g. "float64".
  function skein_dtype_name(dtype) result(name)
    integer(c_int), intent(in) :: dtype
    character(len=:), allocatable :: name
    name = skein_f_string(c_skein_dtype_name(dtype))
  end function
end module skein_base

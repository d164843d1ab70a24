! SPDX-License-Identifier: BSD-3-Clause
! The collectives through the Fortran module: all_reduce in every dtype (sum; min of negative
! values for the signed integers, max of values above the signed range for the unsigned ones,
! every operation for float64 and int32), all_gather, broadcast and all_to_all in every dtype,
! reduce and reduce_scatter, send/recv between ranks, barrier, and the native forms on the arrays'
! device memory; each checked against a reference computed on the host from every member's
! values (v(member, i), known to every rank).
module fortran_collectives_test
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64
  use mpi
  use skein
  use fortran_test_support
  implicit none
  private

  public :: test_collectives

  integer, parameter :: n = 5  ! elements per member

contains

  ! A member's values: small, so that sums over 4 members fit every dtype exactly.
  pure integer(int64) function v(member, i)
    integer, intent(in) :: member, i
    v = 1 + mod(3 * member + 5 * i, 17)
  end function

  subroutine test_collectives(runtime)
    type(skein_runtime), intent(in) :: runtime
    type(skein_communicator) :: comm
    type(skein_queue) :: queue
    integer :: members, local, l, d
    integer, allocatable :: member(:)
    call skein_communicator_create(comm, runtime)
    call skein_queue_create(queue, runtime)
    call skein_communicator_size(comm, members)
    call skein_communicator_local_size(comm, local)
    allocate (member(local))
    do l = 1, local
      call skein_communicator_member(comm, l - 1, member(l))
    end do
    do d = 1, size(all_dtypes)
      call all_reduce_case(comm, queue, member, members, all_dtypes(d), SKEIN_SUM)
      call movement_cases(comm, queue, member, members, all_dtypes(d))
    end do
    do d = SKEIN_INT8, SKEIN_INT64
      call all_reduce_case(comm, queue, member, members, d, SKEIN_MIN)
    end do
    do d = SKEIN_UINT8, SKEIN_UINT32
      call all_reduce_case(comm, queue, member, members, d, SKEIN_MAX)
    end do
    do d = SKEIN_PROD, SKEIN_AVG
      call all_reduce_case(comm, queue, member, members, SKEIN_FLOAT64, d)
      call all_reduce_case(comm, queue, member, members, SKEIN_INT32, d)
    end do
    call rooted_cases(comm, queue, member, members)
    call point_to_point(runtime, comm, queue, member)
    call ring_in_a_group(comm, queue, member, members)
    call native_cases(comm, queue, member, members)
    call skein_barrier(comm, queue)
    call skein_destroy(queue)
    call skein_destroy(comm)
  end subroutine

  ! The values member m sends for an operation: signed minima of negative values, unsigned maxima
  ! of values above the signed range, products of 1s and 2s, averages of multiples of the count.
  integer(int64) function operand(m, i, dtype, op, members)
    integer, intent(in) :: m, i, members
    integer(c_int), intent(in) :: dtype, op
    operand = v(m, i)
    if (op == SKEIN_MIN) operand = -v(m, i)
    if (op == SKEIN_MAX .and. dtype == SKEIN_UINT8) operand = 200 + v(m, i)
    if (op == SKEIN_MAX .and. dtype == SKEIN_UINT16) operand = 40000 + v(m, i)
    if (op == SKEIN_MAX .and. dtype == SKEIN_UINT32) operand = 3000000000_int64 + v(m, i)
    if (op == SKEIN_PROD) operand = 1 + mod(m + i, 2)
    if (op == SKEIN_AVG) operand = members * v(m, i)
  end function

  subroutine all_reduce_case(comm, queue, member, members, dtype, op)
    type(skein_communicator), intent(in) :: comm
    type(skein_queue), intent(in) :: queue
    integer, intent(in) :: member(:), members
    integer(c_int), intent(in) :: dtype, op
    type(skein_array) :: send(size(member)), recv(size(member))
    integer(int64) :: expected(n), values(0:members - 1, n)
    integer :: l, m, i, ierr
    integer(c_int) :: backend
    character(len=64) :: what
    do m = 0, members - 1
      values(m, :) = [(operand(m, i, dtype, op, members), i = 1, n)]
    end do
    select case (op)
    case (SKEIN_SUM)
      expected = sum(values, dim=1)
    case (SKEIN_PROD)
      expected = product(values, dim=1)
    case (SKEIN_MIN)
      expected = minval(values, dim=1)
    case (SKEIN_MAX)
      expected = maxval(values, dim=1)
    case default
      expected = sum(values, dim=1) / members
    end select
    do l = 1, size(member)
      call skein_array_create(send(l), queue, l - 1, dtype, [n])
      call skein_array_create(recv(l), queue, l - 1, dtype, [n])
      call upload(send(l), dtype, values(member(l), :))
    end do
    write (what, '(a, a, a, i0)') "all_reduce ", skein_dtype_name(dtype), " op ", op
    call skein_communicator_backend(comm, backend)
    if (backend == SKEIN_BACKEND_NCCL .and. (dtype == SKEIN_INT16 .or. dtype == SKEIN_UINT16 .or. &
        dtype == SKEIN_COMPLEX64 .or. dtype == SKEIN_COMPLEX128)) then
      ! NCCL reduces no 16-bit integers, and Skein refuses complex reductions there rather than
      ! half-support them: refused on every rank, with the reason.
      call skein_all_reduce(comm, queue, send, recv, op, ierr)
      call check_error(ierr, SKEIN_ERROR_INVALID_ARGUMENT, "does not support", trim(what))
    else
      call skein_all_reduce(comm, queue, send, recv, op)
      call skein_queue_synchronize(queue)
      do l = 1, size(member)
        call check_equal(download(recv(l), dtype, n), expected, trim(what))
      end do
    end if
    do l = 1, size(member)
      call skein_destroy(send(l))
      call skein_destroy(recv(l))
    end do
  end subroutine

  ! all_gather, broadcast (from the last member) and all_to_all: data movement in every dtype.
  subroutine movement_cases(comm, queue, member, members, dtype)
    type(skein_communicator), intent(in) :: comm
    type(skein_queue), intent(in) :: queue
    integer, intent(in) :: member(:), members
    integer(c_int), intent(in) :: dtype
    type(skein_array) :: send(size(member)), recv(size(member)), pieces(size(member))
    integer :: l, k, i
    character(len=:), allocatable :: name
    name = skein_dtype_name(dtype)
    do l = 1, size(member)
      call skein_array_create(send(l), queue, l - 1, dtype, [n])
      call skein_array_create(recv(l), queue, l - 1, dtype, [n * members])
      call skein_array_create(pieces(l), queue, l - 1, dtype, [n * members])
      call upload(send(l), dtype, [(v(member(l), i), i = 1, n)])
      ! all_to_all: member m's piece k is v(10 m + k, i).
      call upload(pieces(l), dtype, [((v(10 * member(l) + k, i), i = 1, n), k = 0, members - 1)])
    end do
    call skein_all_gather(comm, queue, send, recv)
    do l = 1, size(member)
      call check_equal(download(recv(l), dtype, n * members), &
                       [((v(k, i), i = 1, n), k = 0, members - 1)], "all_gather " // name)
    end do
    call skein_all_to_all(comm, queue, pieces, recv)
    do l = 1, size(member)
      call check_equal(download(recv(l), dtype, n * members), &
                       [((v(10 * k + member(l), i), i = 1, n), k = 0, members - 1)], &
                       "all_to_all " // name)
    end do
    call skein_broadcast(comm, queue, send, members - 1)
    do l = 1, size(member)
      call check_equal(download(send(l), dtype, n), [(v(members - 1, i), i = 1, n)], &
                       "broadcast " // name)
      call skein_destroy(send(l))
      call skein_destroy(recv(l))
      call skein_destroy(pieces(l))
    end do
  end subroutine

  ! reduce (sum to member 0, float64) and reduce_scatter (sum, int32: member m receives the sum
  ! of every member's piece m).
  subroutine rooted_cases(comm, queue, member, members)
    type(skein_communicator), intent(in) :: comm
    type(skein_queue), intent(in) :: queue
    integer, intent(in) :: member(:), members
    type(skein_array) :: send(size(member)), recv(size(member))
    type(skein_array) :: pieces(size(member)), mine(size(member))
    integer(int64) :: total(n)
    integer :: l, m, k, i
    total = 0
    do m = 0, members - 1
      total = total + [(v(m, i), i = 1, n)]
    end do
    do l = 1, size(member)
      call skein_array_create(send(l), queue, l - 1, SKEIN_FLOAT64, [n])
      call skein_array_create(recv(l), queue, l - 1, SKEIN_FLOAT64, [n])
      call skein_array_fill(recv(l), -1.0_c_double)
      call upload(send(l), SKEIN_FLOAT64, [(v(member(l), i), i = 1, n)])
      call skein_array_create(pieces(l), queue, l - 1, SKEIN_INT32, [n * members])
      call skein_array_create(mine(l), queue, l - 1, SKEIN_INT32, [n])
      call upload(pieces(l), SKEIN_INT32, [((v(member(l) + 7 * k, i), i = 1, n), k = 0, members - 1)])
    end do
    call skein_reduce(comm, queue, send, recv, SKEIN_SUM, 0)
    call skein_reduce_scatter(comm, queue, pieces, mine, SKEIN_SUM)
    do l = 1, size(member)
      if (member(l) == 0) call check_equal(download(recv(l), SKEIN_FLOAT64, n), total, "reduce")
      total = 0
      do m = 0, members - 1
        total = total + [(v(m + 7 * member(l), i), i = 1, n)]
      end do
      call check_equal(download(mine(l), SKEIN_INT32, n), total, "reduce_scatter")
      call skein_destroy(send(l))
      call skein_destroy(recv(l))
      call skein_destroy(pieces(l))
      call skein_destroy(mine(l))
    end do
  end subroutine

  ! Rank 0's first device sends to rank 1's first device (members found with MPI_Allgather), in
  ! complex128. Only between ranks: two devices of one rank would need a group of the two calls,
  ! which the C API does not have.
  subroutine point_to_point(runtime, comm, queue, member)
    type(skein_runtime), intent(in) :: runtime
    type(skein_communicator), intent(in) :: comm
    type(skein_queue), intent(in) :: queue
    integer, intent(in) :: member(:)
    type(skein_array) :: data
    integer :: ranks, rank, ierror, i
    integer, allocatable :: first(:)
    call skein_runtime_size(runtime, ranks)
    call skein_runtime_rank(runtime, rank)
    if (ranks < 2) return
    allocate (first(ranks))
    call MPI_Allgather(member(1), 1, MPI_INTEGER, first, 1, MPI_INTEGER, MPI_COMM_WORLD, ierror)
    if (rank > 1) return
    call skein_array_create(data, queue, 0, SKEIN_COMPLEX128, [n])
    if (rank == 0) then
      call upload(data, SKEIN_COMPLEX128, [(v(99, i), i = 1, n)])
      call skein_send(comm, queue, 0, data, first(2))
    else
      call upload(data, SKEIN_COMPLEX128, [(0_int64, i = 1, n)])
      call skein_recv(comm, queue, 0, data, first(1))
      call check_equal(download(data, SKEIN_COMPLEX128, n), [(v(99, i), i = 1, n)], "send/recv")
    end if
    call skein_queue_synchronize(queue)
    call skein_destroy(data)
  end subroutine

  ! A ring inside a group: each member sends its block to the next member and receives the
  ! previous one's, devices of one rank included.
  subroutine ring_in_a_group(comm, queue, member, members)
    type(skein_communicator), intent(in) :: comm
    type(skein_queue), intent(in) :: queue
    integer, intent(in) :: member(:), members
    type(skein_array) :: out(size(member)), in(size(member))
    integer :: l, i
    if (members < 2) return
    do l = 1, size(member)
      call skein_array_create(out(l), queue, l - 1, SKEIN_INT32, [n])
      call skein_array_create(in(l), queue, l - 1, SKEIN_INT32, [n])
      call upload(out(l), SKEIN_INT32, [(v(member(l), i), i = 1, n)])
    end do
    call skein_group_start(comm)
    do l = 1, size(member)
      call skein_send(comm, queue, l - 1, out(l), mod(member(l) + 1, members))
      call skein_recv(comm, queue, l - 1, in(l), mod(member(l) + members - 1, members))
    end do
    call skein_group_end(comm)
    do l = 1, size(member)
      call check_equal(download(in(l), SKEIN_INT32, n), &
                       [(v(mod(member(l) + members - 1, members), i), i = 1, n)], "ring in a group")
      call skein_destroy(out(l))
      call skein_destroy(in(l))
    end do
  end subroutine

  ! The native forms on Skein's own arrays' device memory (skein_array_native), float32.
  subroutine native_cases(comm, queue, member, members)
    type(skein_communicator), intent(in) :: comm
    type(skein_queue), intent(in) :: queue
    integer, intent(in) :: member(:), members
    type(skein_array) :: send(size(member)), recv(size(member)), wide(size(member))
    type(c_ptr) :: send_ptr(size(member)), recv_ptr(size(member)), wide_ptr(size(member))
    integer(c_size_t) :: offset, elements
    integer(int64) :: total(n)
    integer :: l, m, k, i
    elements = n
    do l = 1, size(member)
      call skein_array_create(send(l), queue, l - 1, SKEIN_FLOAT32, [n])
      call skein_array_create(recv(l), queue, l - 1, SKEIN_FLOAT32, [n])
      call skein_array_create(wide(l), queue, l - 1, SKEIN_FLOAT32, [n * members])
      call upload(send(l), SKEIN_FLOAT32, [(v(member(l), i), i = 1, n)])
      call skein_array_native(send(l), send_ptr(l), offset)
      call check(offset == 0, "native: a whole array starts at offset 0")
      call skein_array_native(recv(l), recv_ptr(l))
      call skein_array_native(wide(l), wide_ptr(l))
    end do
    total = 0
    do m = 0, members - 1
      total = total + [(v(m, i), i = 1, n)]
    end do
    call skein_all_reduce_native(comm, queue, send_ptr, recv_ptr, elements, SKEIN_FLOAT32, SKEIN_SUM)
    call skein_all_gather_native(comm, queue, send_ptr, wide_ptr, elements, SKEIN_FLOAT32)
    call skein_queue_synchronize(queue)
    do l = 1, size(member)
      call check_equal(download(recv(l), SKEIN_FLOAT32, n), total, "all_reduce_native")
      call check_equal(download(wide(l), SKEIN_FLOAT32, n * members), &
                       [((v(k, i), i = 1, n), k = 0, members - 1)], "all_gather_native")
    end do
    call skein_reduce_native(comm, queue, send_ptr, recv_ptr, elements, SKEIN_FLOAT32, SKEIN_MAX, 0)
    call skein_reduce_scatter_native(comm, queue, wide_ptr, send_ptr, elements, SKEIN_FLOAT32, &
                                     SKEIN_SUM)
    call skein_broadcast_native(comm, queue, recv_ptr, elements, SKEIN_FLOAT32, 0)
    call skein_queue_synchronize(queue)
    do l = 1, size(member)
      ! Every member's wide array is the same gather, so piece m's sum is members * v(m, i).
      call check_equal(download(send(l), SKEIN_FLOAT32, n), &
                       [(members * v(member(l), i), i = 1, n)], "reduce_scatter_native")
      ! recv of member 0 held the max of the v's, then was broadcast.
      call check_equal(download(recv(l), SKEIN_FLOAT32, n), &
                       [(maxval([(v(m, i), m = 0, members - 1)]), i = 1, n)], &
                       "reduce_native + broadcast_native")
      call skein_destroy(send(l))
      call skein_destroy(recv(l))
      call skein_destroy(wide(l))
    end do
  end subroutine
end module fortran_collectives_test

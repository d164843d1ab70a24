! SPDX-License-Identifier: BSD-3-Clause
! Module skein_collectives: the communicator's collectives, on Skein's arrays and on the program's
! own device memory (the _native forms, one type(c_ptr) per local device: a CUdeviceptr, or a
! cl_mem).
!
! As in C, each takes one array per local device (skein_communicator_local_size of them, in local
! device order) and is enqueued on the queue; send and recv may be the same arrays (in place).
! Counts, dtypes and the order of calls must agree across ranks (docs/guide.md). Roots and peers
! are members, numbered from 0.
module skein_collectives
  use, intrinsic :: iso_c_binding, only: c_int, c_size_t, c_ptr
  use skein_c_types
  use skein_c_api
  use skein_support
  implicit none
  private

  public :: skein_all_reduce, skein_all_gather, skein_broadcast, skein_reduce
  public :: skein_reduce_scatter, skein_all_to_all, skein_send, skein_recv, skein_barrier
  public :: skein_group_start, skein_group_end
  public :: skein_all_reduce_native, skein_all_gather_native, skein_broadcast_native
  public :: skein_reduce_native, skein_reduce_scatter_native

contains

  subroutine skein_all_reduce(comm, queue, send, recv, op, ierr)
    type(skein_communicator), intent(in) :: comm
    type(skein_queue), intent(in) :: queue
    type(skein_array), intent(in) :: send(:), recv(:)
    integer(c_int), intent(in) :: op
    integer, intent(out), optional :: ierr
    if (.not. same_count("skein_all_reduce", size(send), size(recv), ierr)) return
    call skein_check(c_skein_all_reduce(comm%handle, queue%handle, send%handle, recv%handle, &
                                        int(size(send), c_size_t), op), ierr)
  end subroutine

  ! recv(l) holds the members' send arrays one after the other (size * the send's elements).
  subroutine skein_all_gather(comm, queue, send, recv, ierr)
    type(skein_communicator), intent(in) :: comm
    type(skein_queue), intent(in) :: queue
    type(skein_array), intent(in) :: send(:), recv(:)
    integer, intent(out), optional :: ierr
    if (.not. same_count("skein_all_gather", size(send), size(recv), ierr)) return
    call skein_check(c_skein_all_gather(comm%handle, queue%handle, send%handle, recv%handle, &
                                        int(size(send), c_size_t)), ierr)
  end subroutine

  subroutine skein_broadcast(comm, queue, data, root, ierr)
    type(skein_communicator), intent(in) :: comm
    type(skein_queue), intent(in) :: queue
    type(skein_array), intent(in) :: data(:)
    integer, intent(in) :: root
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_broadcast(comm%handle, queue%handle, data%handle, &
                                       int(size(data), c_size_t), int(root, c_int)), ierr)
  end subroutine

  ! The result in recv of member `root`; the other members' recv arrays are not written.
  subroutine skein_reduce(comm, queue, send, recv, op, root, ierr)
    type(skein_communicator), intent(in) :: comm
    type(skein_queue), intent(in) :: queue
    type(skein_array), intent(in) :: send(:), recv(:)
    integer(c_int), intent(in) :: op
    integer, intent(in) :: root
    integer, intent(out), optional :: ierr
    if (.not. same_count("skein_reduce", size(send), size(recv), ierr)) return
    call skein_check(c_skein_reduce(comm%handle, queue%handle, send%handle, recv%handle, &
                                    int(size(send), c_size_t), op, int(root, c_int)), ierr)
  end subroutine

  ! send(l) holds size pieces of recv's elements; member m receives the reduction of piece m.
  subroutine skein_reduce_scatter(comm, queue, send, recv, op, ierr)
    type(skein_communicator), intent(in) :: comm
    type(skein_queue), intent(in) :: queue
    type(skein_array), intent(in) :: send(:), recv(:)
    integer(c_int), intent(in) :: op
    integer, intent(out), optional :: ierr
    if (.not. same_count("skein_reduce_scatter", size(send), size(recv), ierr)) return
    call skein_check(c_skein_reduce_scatter(comm%handle, queue%handle, send%handle, recv%handle, &
                                            int(size(send), c_size_t), op), ierr)
  end subroutine

  ! Piece m of every member's send goes to member m, in the senders' order.
  subroutine skein_all_to_all(comm, queue, send, recv, ierr)
    type(skein_communicator), intent(in) :: comm
    type(skein_queue), intent(in) :: queue
    type(skein_array), intent(in) :: send(:), recv(:)
    integer, intent(out), optional :: ierr
    if (.not. same_count("skein_all_to_all", size(send), size(recv), ierr)) return
    call skein_check(c_skein_all_to_all(comm%handle, queue%handle, send%handle, recv%handle, &
                                        int(size(send), c_size_t)), ierr)
  end subroutine

  ! Point to point between this rank's local device `local_device` and member `peer`.
  subroutine skein_send(comm, queue, local_device, data, peer, ierr)
    type(skein_communicator), intent(in) :: comm
    type(skein_queue), intent(in) :: queue
    integer, intent(in) :: local_device
    type(skein_array), intent(in) :: data
    integer, intent(in) :: peer
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_send(comm%handle, queue%handle, int(local_device, c_size_t), &
                                  data%handle, int(peer, c_int)), ierr)
  end subroutine

  subroutine skein_recv(comm, queue, local_device, data, peer, ierr)
    type(skein_communicator), intent(in) :: comm
    type(skein_queue), intent(in) :: queue
    integer, intent(in) :: local_device
    type(skein_array), intent(in) :: data
    integer, intent(in) :: peer
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_recv(comm%handle, queue%handle, int(local_device, c_size_t), &
                                  data%handle, int(peer, c_int)), ierr)
  end subroutine

  subroutine skein_barrier(comm, queue, ierr)
    type(skein_communicator), intent(in) :: comm
    type(skein_queue), intent(in) :: queue
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_barrier(comm%handle, queue%handle), ierr)
  end subroutine

  ! The operations between the two are launched together (a send and a recv between two devices
  ! of one rank, a ring).
  subroutine skein_group_start(comm, ierr)
    type(skein_communicator), intent(in) :: comm
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_group_start(comm%handle), ierr)
  end subroutine

  subroutine skein_group_end(comm, ierr)
    type(skein_communicator), intent(in) :: comm
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_group_end(comm%handle), ierr)
  end subroutine

  ! ---- on the program's device memory: `elements` elements of `dtype` per pointer ----

  subroutine skein_all_reduce_native(comm, queue, send, recv, elements, dtype, op, ierr)
    type(skein_communicator), intent(in) :: comm
    type(skein_queue), intent(in) :: queue
    type(c_ptr), intent(in) :: send(:), recv(:)
    integer(c_size_t), intent(in) :: elements
    integer(c_int), intent(in) :: dtype, op
    integer, intent(out), optional :: ierr
    if (.not. same_count("skein_all_reduce_native", size(send), size(recv), ierr)) return
    call skein_check(c_skein_all_reduce_native(comm%handle, queue%handle, send, recv, &
                                               int(size(send), c_size_t), elements, dtype, op), &
                     ierr)
  end subroutine

  ! recv holds size * elements.
  subroutine skein_all_gather_native(comm, queue, send, recv, elements, dtype, ierr)
    type(skein_communicator), intent(in) :: comm
    type(skein_queue), intent(in) :: queue
    type(c_ptr), intent(in) :: send(:), recv(:)
    integer(c_size_t), intent(in) :: elements
    integer(c_int), intent(in) :: dtype
    integer, intent(out), optional :: ierr
    if (.not. same_count("skein_all_gather_native", size(send), size(recv), ierr)) return
    call skein_check(c_skein_all_gather_native(comm%handle, queue%handle, send, recv, &
                                               int(size(send), c_size_t), elements, dtype), ierr)
  end subroutine

  subroutine skein_broadcast_native(comm, queue, data, elements, dtype, root, ierr)
    type(skein_communicator), intent(in) :: comm
    type(skein_queue), intent(in) :: queue
    type(c_ptr), intent(in) :: data(:)
    integer(c_size_t), intent(in) :: elements
    integer(c_int), intent(in) :: dtype
    integer, intent(in) :: root
    integer, intent(out), optional :: ierr
    call skein_check(c_skein_broadcast_native(comm%handle, queue%handle, data, &
                                              int(size(data), c_size_t), elements, dtype, &
                                              int(root, c_int)), ierr)
  end subroutine

  subroutine skein_reduce_native(comm, queue, send, recv, elements, dtype, op, root, ierr)
    type(skein_communicator), intent(in) :: comm
    type(skein_queue), intent(in) :: queue
    type(c_ptr), intent(in) :: send(:), recv(:)
    integer(c_size_t), intent(in) :: elements
    integer(c_int), intent(in) :: dtype, op
    integer, intent(in) :: root
    integer, intent(out), optional :: ierr
    if (.not. same_count("skein_reduce_native", size(send), size(recv), ierr)) return
    call skein_check(c_skein_reduce_native(comm%handle, queue%handle, send, recv, &
                                           int(size(send), c_size_t), elements, dtype, op, &
                                           int(root, c_int)), ierr)
  end subroutine

  ! send holds size * elements.
  subroutine skein_reduce_scatter_native(comm, queue, send, recv, elements, dtype, op, ierr)
    type(skein_communicator), intent(in) :: comm
    type(skein_queue), intent(in) :: queue
    type(c_ptr), intent(in) :: send(:), recv(:)
    integer(c_size_t), intent(in) :: elements
    integer(c_int), intent(in) :: dtype, op
    integer, intent(out), optional :: ierr
    if (.not. same_count("skein_reduce_scatter_native", size(send), size(recv), ierr)) return
    call skein_check(c_skein_reduce_scatter_native(comm%handle, queue%handle, send, recv, &
                                                   int(size(send), c_size_t), elements, dtype, &
                                                   op), ierr)
  end subroutine

  ! C takes one count for both lists: send and recv of unequal lengths are refused here, naming
  ! the call.
  logical function same_count(call, sends, recvs, ierr)
    character(len=*), intent(in) :: call
    integer, intent(in) :: sends, recvs
    integer, intent(out), optional :: ierr
    same_count = sends == recvs
    if (same_count) return
    call skein_fail(SKEIN_ERROR_INVALID_ARGUMENT, call // ": send has " // skein_itoa(sends) // &
                    " arrays but recv has " // skein_itoa(recvs) // &
                    ": pass one of each per local device", ierr)
  end function
end module skein_collectives

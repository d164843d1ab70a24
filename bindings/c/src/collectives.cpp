// SPDX-License-Identifier: BSD-3-Clause
// The collectives of skein::Communicator on array handles, one per local device.
#include <string>
#include <vector>

#include "collectives.hpp"
#include "errors.hpp"

namespace skein::capi {

Communicator& checked(skein_communicator* comm, const skein_queue* queue) {
  require(comm, "comm");
  require(queue, "queue");
  return *comm->comm;
}

void check_member(const Communicator& comm, int member, const char* parameter) {
  if (member < 0 || static_cast<std::size_t>(member) >= comm.size()) {
    invalid(std::string(parameter) + " is " + std::to_string(member) + ", not a member of the " +
                std::to_string(comm.size()) + "-member communicator",
            "Pass a member's communicator rank, 0 .. skein_communicator_size() - 1.");
  }
}

namespace {

std::size_t local_device(const Communicator& comm, std::size_t device) {
  if (device >= comm.local_size()) {
    invalid("local_device " + std::to_string(device) + " is not one of this rank's " +
                std::to_string(comm.local_size()) + " members",
            "Pass an index below skein_communicator_local_size().");
  }
  return device;
}

}  // namespace

}  // namespace skein::capi

using namespace skein::capi;

extern "C" {

skein_status skein_all_reduce(skein_communicator* comm, const skein_queue* queue,
                              skein_array* const* send, skein_array* const* recv, size_t count,
                              skein_reduce_op op) {
  return guard("skein_all_reduce", [&] {
    skein::Communicator& c = checked(comm, queue);
    const skein::ReduceOp o = reduce_op(op);
    const auto s = arrays(send, count, c.local_size(), "send");
    const auto r = arrays(recv, count, c.local_size(), "recv");
    c.all_reduce(queue->queue, s, r, o);
  });
}

skein_status skein_all_gather(skein_communicator* comm, const skein_queue* queue,
                              skein_array* const* send, skein_array* const* recv, size_t count) {
  return guard("skein_all_gather", [&] {
    skein::Communicator& c = checked(comm, queue);
    const auto s = arrays(send, count, c.local_size(), "send");
    const auto r = arrays(recv, count, c.local_size(), "recv");
    c.all_gather(queue->queue, s, r);
  });
}

skein_status skein_broadcast(skein_communicator* comm, const skein_queue* queue,
                             skein_array* const* data, size_t count, int root) {
  return guard("skein_broadcast", [&] {
    skein::Communicator& c = checked(comm, queue);
    check_member(c, root, "root");
    const auto d = arrays(data, count, c.local_size(), "data");
    c.broadcast(queue->queue, d, root);
  });
}

skein_status skein_reduce(skein_communicator* comm, const skein_queue* queue,
                          skein_array* const* send, skein_array* const* recv, size_t count,
                          skein_reduce_op op, int root) {
  return guard("skein_reduce", [&] {
    skein::Communicator& c = checked(comm, queue);
    const skein::ReduceOp o = reduce_op(op);
    check_member(c, root, "root");
    const auto s = arrays(send, count, c.local_size(), "send");
    const auto r = arrays(recv, count, c.local_size(), "recv");
    c.reduce(queue->queue, s, r, o, root);
  });
}

skein_status skein_reduce_scatter(skein_communicator* comm, const skein_queue* queue,
                                  skein_array* const* send, skein_array* const* recv, size_t count,
                                  skein_reduce_op op) {
  return guard("skein_reduce_scatter", [&] {
    skein::Communicator& c = checked(comm, queue);
    const skein::ReduceOp o = reduce_op(op);
    const auto s = arrays(send, count, c.local_size(), "send");
    const auto r = arrays(recv, count, c.local_size(), "recv");
    c.reduce_scatter(queue->queue, s, r, o);
  });
}

skein_status skein_all_to_all(skein_communicator* comm, const skein_queue* queue,
                              skein_array* const* send, skein_array* const* recv, size_t count) {
  return guard("skein_all_to_all", [&] {
    skein::Communicator& c = checked(comm, queue);
    const auto s = arrays(send, count, c.local_size(), "send");
    const auto r = arrays(recv, count, c.local_size(), "recv");
    c.all_to_all(queue->queue, s, r);
  });
}

skein_status skein_send(skein_communicator* comm, const skein_queue* queue, size_t local_device,
                        const skein_array* data, int peer) {
  return guard("skein_send", [&] {
    skein::Communicator& c = checked(comm, queue);
    require(data, "data");
    check_member(c, peer, "peer");
    c.send(queue->queue, skein::capi::local_device(c, local_device), data->array, peer);
  });
}

skein_status skein_recv(skein_communicator* comm, const skein_queue* queue, size_t local_device,
                        const skein_array* data, int peer) {
  return guard("skein_recv", [&] {
    skein::Communicator& c = checked(comm, queue);
    require(data, "data");
    check_member(c, peer, "peer");
    c.recv(queue->queue, skein::capi::local_device(c, local_device), data->array, peer);
  });
}

skein_status skein_barrier(skein_communicator* comm, const skein_queue* queue) {
  return guard("skein_barrier", [&] { checked(comm, queue).barrier(queue->queue); });
}

skein_status skein_group_start(skein_communicator* comm) {
  return guard("skein_group_start", [&] {
    require(comm, "comm");
    comm->comm->group_start();
  });
}

skein_status skein_group_end(skein_communicator* comm) {
  return guard("skein_group_end", [&] {
    require(comm, "comm");
    comm->comm->group_end();
  });
}

}  // extern "C"

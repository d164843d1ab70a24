// SPDX-License-Identifier: BSD-3-Clause
// The collectives on the application's device memory: each native pointer (CUdeviceptr or
// cl_mem) wrapped as a one-dimensional Array on its member's device, without a copy, then the
// Communicator's call as on array handles.
#include <string>
#include <vector>

#include "collectives.hpp"
#include "errors.hpp"
#include "native.hpp"

namespace skein::capi {

namespace {

// Arrays of `elements` elements over the pointers, one per local member. Where `same` (the other
// list of the call) has the same pointer, the same Array, so that the call runs in place.
std::vector<Array> wrap(const Communicator& comm, const Queue& queue, void* const* pointers,
                        std::size_t count, std::size_t elements, Dtype type, const char* parameter,
                        void* const* same = nullptr, const std::vector<Array>* same_arrays = nullptr) {
  if (count != comm.local_size()) {
    invalid("count is " + std::to_string(count) + ", but the communicator has " +
                std::to_string(comm.local_size()) + " local devices",
            std::string("Pass one pointer per local device in ") + parameter +
                " (count = skein_communicator_local_size()).");
  }
  if (count > 0) require(pointers, parameter);
  std::vector<Array> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (same != nullptr && same_arrays != nullptr && same[i] == pointers[i] &&
        (*same_arrays)[i].size() == elements) {
      out.push_back((*same_arrays)[i]);
      continue;
    }
    if (pointers[i] == nullptr) {
      invalid(std::string(parameter) + "[" + std::to_string(i) + "] is NULL",
              "Pass device memory of local device " + std::to_string(i) +
                  " (CUdeviceptr as void*, or cl_mem).");
    }
    const std::size_t device = comm.device_idx(i);
    Buffer buffer = buffer_from_native(queue.context(), device, pointers[i], elements * itemsize(type));
    out.emplace_back(queue, std::move(buffer), Shape{elements}, type);
  }
  return out;
}

}  // namespace

}  // namespace skein::capi

using namespace skein::capi;

extern "C" {

skein_status skein_all_reduce_native(skein_communicator* comm, const skein_queue* queue,
                                     void* const* send, void* const* recv, size_t count,
                                     size_t elements, skein_dtype dtype, skein_reduce_op op) {
  return guard("skein_all_reduce_native", [&] {
    skein::Communicator& c = checked(comm, queue);
    const skein::Dtype type = skein::capi::dtype(dtype);
    const skein::ReduceOp o = reduce_op(op);
    const auto s = wrap(c, queue->queue, send, count, elements, type, "send");
    const auto r = wrap(c, queue->queue, recv, count, elements, type, "recv", send, &s);
    c.all_reduce(queue->queue, s, r, o);
  });
}

skein_status skein_all_gather_native(skein_communicator* comm, const skein_queue* queue,
                                     void* const* send, void* const* recv, size_t count,
                                     size_t elements, skein_dtype dtype) {
  return guard("skein_all_gather_native", [&] {
    skein::Communicator& c = checked(comm, queue);
    const skein::Dtype type = skein::capi::dtype(dtype);
    const auto s = wrap(c, queue->queue, send, count, elements, type, "send");
    const auto r = wrap(c, queue->queue, recv, count, c.size() * elements, type, "recv");
    c.all_gather(queue->queue, s, r);
  });
}

skein_status skein_broadcast_native(skein_communicator* comm, const skein_queue* queue,
                                    void* const* data, size_t count, size_t elements,
                                    skein_dtype dtype, int root) {
  return guard("skein_broadcast_native", [&] {
    skein::Communicator& c = checked(comm, queue);
    const skein::Dtype type = skein::capi::dtype(dtype);
    check_member(c, root, "root");
    const auto d = wrap(c, queue->queue, data, count, elements, type, "data");
    c.broadcast(queue->queue, d, root);
  });
}

skein_status skein_reduce_native(skein_communicator* comm, const skein_queue* queue,
                                 void* const* send, void* const* recv, size_t count,
                                 size_t elements, skein_dtype dtype, skein_reduce_op op,
                                 int root) {
  return guard("skein_reduce_native", [&] {
    skein::Communicator& c = checked(comm, queue);
    const skein::Dtype type = skein::capi::dtype(dtype);
    const skein::ReduceOp o = reduce_op(op);
    check_member(c, root, "root");
    const auto s = wrap(c, queue->queue, send, count, elements, type, "send");
    const auto r = wrap(c, queue->queue, recv, count, elements, type, "recv", send, &s);
    c.reduce(queue->queue, s, r, o, root);
  });
}

skein_status skein_reduce_scatter_native(skein_communicator* comm, const skein_queue* queue,
                                         void* const* send, void* const* recv, size_t count,
                                         size_t elements, skein_dtype dtype, skein_reduce_op op) {
  return guard("skein_reduce_scatter_native", [&] {
    skein::Communicator& c = checked(comm, queue);
    const skein::Dtype type = skein::capi::dtype(dtype);
    const skein::ReduceOp o = reduce_op(op);
    const auto s = wrap(c, queue->queue, send, count, c.size() * elements, type, "send");
    const auto r = wrap(c, queue->queue, recv, count, elements, type, "recv");
    c.reduce_scatter(queue->queue, s, r, o);
  });
}

}  // extern "C"

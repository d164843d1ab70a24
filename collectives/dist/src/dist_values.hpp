// SPDX-License-Identifier: BSD-3-Clause
// The reductions to one host value that dist::sum, min, max and dot share between the row blocks
// (DistArray, dist_ops.cpp) and the blocks of a process grid (GridArray, grid_ops.cpp). Templates
// over the array type: both have communicator(), queue(), rank(), local_size(), local(i) (the
// points of local member i, a view) and block(i).device_idx.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "skein/communicator.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/host_collectives.hpp"
#include "skein/detail/host_values.hpp"
#include "skein/dtype.hpp"
#include "skein/memory_pool.hpp"
#include "skein/reduction.hpp"

namespace skein::dist::values {

// Temporaries come from the queue's pool (temporaries_pool()), so that a time loop allocates
// nothing after its first step.
inline Allocator temporaries(const Queue& queue) { return temporaries_pool(queue).allocator(); }

// One element of `dtype` at `bytes`, as a double (a complex value's real part).
inline double as_double(Dtype dtype, const std::byte* bytes) {
  double v = 0;
  visit_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    T x;
    std::memcpy(&x, bytes, sizeof(T));
    if constexpr (requires { static_cast<double>(x); }) {
      v = static_cast<double>(x);
    } else if constexpr (requires { x.real(); }) {
      v = static_cast<double>(x.real());
    } else {
      v = static_cast<double>(static_cast<float>(x));
    }
  });
  return v;
}

// The value of a one-element array on the host, as a double.
inline double host_value(const Array& a) {
  std::vector<std::byte> bytes(a.itemsize());
  a.get(std::span<std::byte>(bytes));
  return as_double(a.dtype(), bytes.data());
}

// Room for `n` values of `item` bytes each, for HostValues::read: inline up to four values of 16
// bytes (a rank's devices), else on the heap.
class ValueBytes {
 public:
  ValueBytes(std::size_t n, std::size_t item) : size_(n * item) {
    if (size_ > sizeof inline_) heap_.resize(size_);
  }
  std::span<std::byte> span() { return {heap_.empty() ? inline_ : heap_.data(), size_}; }

 private:
  std::byte inline_[4 * 16];
  std::vector<std::byte> heap_;
  std::size_t size_;
};

// The context devices of this rank's blocks.
template <class Distributed>
std::vector<std::size_t> local_devices(const Distributed& x) {
  std::vector<std::size_t> devices;
  for (const auto& b : x.blocks()) devices.push_back(b.device_idx);
  return devices;
}

// A collective's result read on the host, once the communicator is known not to have been ended
// while the read waited (an aborted NCCL call leaves the result unwritten and lets the wait end).
template <class Distributed>
double checked_value(const Distributed& x, const Array& a, const char* call) {
  const double v = host_value(a);
  detail::require_usable(x.communicator(), call);
  return v;
}

// One-element arrays of `dtype`, one per local device of `x`.
template <class Distributed>
std::vector<Array> scalars(const Distributed& x, Dtype dtype) {
  std::vector<Array> out;
  for (std::size_t i = 0; i < x.local_size(); ++i) {
    out.push_back(
        Array::empty(x.queue(), {1}, dtype, x.block(i).device_idx, temporaries(x.queue())));
  }
  return out;
}

// min and max have no identity: an empty array has no minimum (as skein::min). The global size
// is the same on every rank, so every rank raises.
template <class Distributed>
void require_nonempty(const Distributed& x, const char* call) {
  if (x.size() == 0) {
    detail::raise_in(SKEIN_HERE, call, "Reduce a non-empty array (min and max have no identity).",
                     "rank {}: {} of an empty array (shape {})", x.rank(), call,
                     to_string(x.shape()));
  }
}

// Whether the reductions to one value combine the per-device values on the devices (an all_reduce
// of them, its result written into host memory or read) rather than on the host (HostValues, then
// one MPI exchange). Measured on 4 H200s (docs/performance.md, "Distributed sums on 4 x H200" and
// the section of 2026-11-27): over four ranks with NCCL the all_reduce ended 7-23 us sooner than
// the host's way in each of three runs (the GPUs meet each other directly, where the host waits
// for each GPU before exchanging), and 11-12 us sooner again with its result written into
// page-locked host memory instead of read from the device; one rank driving the four GPUs has
// nothing to exchange, and the host's way ended 7-26 us sooner there; the MPI backend's
// all_reduce is staged through the host anyway (on PoCL, 2 ranks: 46 against 98 us a call).
inline bool combine_on_devices(const Communicator& comm) {
  return comm.backend() == CollectiveBackend::nccl && comm.size() > comm.local_size();
}

// The fast (non-deterministic) reductions to one value: `launch(i, out)` enqueues local device
// i's reduction into the one-element array `out`, of `dtype`; the values are then combined over
// the devices and the ranks with `across`. Every rank has a device (the layouts refuse a rank
// without members).
template <class Distributed, class Launch>
double combine_values(const Distributed& x, Dtype dtype, ReduceOp across, const char* call,
                      Launch&& launch) {
  Communicator& comm = x.communicator();
  // The values the host reads (HostValues: on CUDA page-locked host memory the devices write, so
  // the read is the wait for the devices; elsewhere small device arrays read by transfers).
  detail::HostValues host(x.queue(), local_devices(x), dtype);
  ValueBytes room(x.local_size(), itemsize(dtype));
  const std::span<std::byte> bytes = room.span();
  if (combine_on_devices(comm)) {
    // Each device's value, then their all_reduce straight into the host values (NCCL accepts any
    // pointer the device can reach: its user guide, "Data Pointers"), then the read. An all_reduce
    // the watchdog aborted lets the read return with the values unwritten: require_usable raises.
    std::vector<Array> values = scalars(x, dtype);
    for (std::size_t i = 0; i < x.local_size(); ++i) launch(i, values[i]);
    comm.all_reduce(x.queue(), values, host.arrays(), across);
    host.read(bytes);
    detail::require_usable(comm, call);
  } else {
    // Each device's value into the host values, read, then combined over this rank's devices and
    // over the ranks (detail::all_reduce_host: one MPI exchange), as PETSc reduces its dot
    // products.
    for (std::size_t i = 0; i < x.local_size(); ++i) launch(i, host.arrays()[i]);
    host.read(bytes);
    detail::all_reduce_host(comm, bytes, 1, dtype, across, call);
  }
  return as_double(dtype, bytes.data());
}

// One value per local device of `kernel` over its points (a block without points gives the
// identity), all_reduced over every member with `across`: the fast path of dist::reduce.
template <class Distributed>
std::vector<Array> reduce_fast(const ReductionKernel& kernel, const Distributed& x,
                               ReduceOp across) {
  std::vector<Array> results;
  if (x.local_size() > 0) {
    const Operand first(x.local(0));
    results = scalars(x, kernel.out_dtype(std::span<const Operand>(&first, 1)));
  }
  for (std::size_t i = 0; i < x.local_size(); ++i) {
    const Operand in(x.local(i));
    kernel(x.queue(), std::span<const Operand>(&in, 1), {.out = results[i]});
  }
  x.communicator().all_reduce(x.queue(), results, results, across);
  return results;
}

// The deterministic reduction: every member's records of the canonical tree (a fixed number of
// slots each, unused ones marked), gathered to every member and combined there in canonical
// order. Local block i must be the range of global C-order indices starting at first_index(i).
// Waits for the device (the gathered records are temporaries).
template <class Distributed, class FirstIndex>
std::vector<Array> reduce_canonical(const ReductionKernel& kernel, const Distributed& x,
                                    FirstIndex&& first_index) {
  Communicator& comm = x.communicator();
  const Queue& queue = x.queue();
  const std::uint64_t total = x.size();
  const std::size_t capacity = ReductionKernel::record_capacity(total);
  std::vector<Array> mine, all, results;
  for (std::size_t i = 0; i < x.local_size(); ++i) {
    const Operand in(x.local(i));
    const std::size_t piece = capacity * kernel.record_size(std::span<const Operand>(&in, 1));
    Array records = kernel.records(queue, std::span<const Operand>(&in, 1), first_index(i), total);
    mine.push_back(records.reshape({piece}));
    all.push_back(Array::empty(queue, {piece * comm.size()}, Dtype::uint8, x.block(i).device_idx,
                               temporaries(queue)));
  }
  comm.all_gather(queue, mine, all);
  for (std::size_t i = 0; i < x.local_size(); ++i) {
    const Operand in(x.local(i));
    results.push_back(kernel.combine(queue, std::span<const Operand>(&in, 1), all[i], total));
  }
  // The gathered records are temporaries: the combine kernels reading them must be done.
  queue.synchronize();
  return results;
}

}  // namespace skein::dist::values

// SPDX-License-Identifier: BSD-3-Clause
// One-element arrays whose values the host reads as soon as the devices are done: the reductions
// of dist::sum, min, max and dot write their per-device values into them, or, over NCCL ranks, the
// all_reduce of those values its result.
//
// CUDA: the arrays are page-locked host memory mapped into the devices' address space (zero-copy),
// so a kernel's write goes straight to the host and reading a value is the wait for the queue and
// a memcpy, where an Array::get() is a transfer after the kernel and then the wait (16 GiB summed
// by one rank driving 4 H200s, skein-bench sum: 1002.1-1020.8 us against 1026.7-1056.5 with a
// get() per device, three runs; docs/performance.md).
// OpenCL (whose kernels may not use mapped host memory in 1.2) and CUDA devices that cannot map
// host memory: device arrays, read by one non-blocking transfer each into page-locked memory,
// then one wait per device, so that several devices' reads overlap.
//
// The page-locked memory is kept by the queue from call to call (a free list of slot sets under
// a lock), so that a call allocates nothing but the Array handles.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "skein/array.hpp"
#include "skein/dtype.hpp"
#include "skein/event.hpp"
#include "skein/export.hpp"
#include "skein/queue.hpp"

namespace skein::detail {

struct HostValueSlots;

class SKEIN_EXPORT HostValues {
 public:
  // One array of `count` elements of `dtype` per entry of `devices` (device indices of the
  // queue's context, each in the queue), in that order. At most kMaxBytes per device.
  HostValues(const Queue& queue, std::span<const std::size_t> devices, Dtype dtype,
             std::size_t count = 1);
  static constexpr std::size_t kMaxBytes = 64;
  // Without a read(), waits for the devices first (work may still write the memory), so that the
  // memory is never handed out while a kernel writes it.
  ~HostValues();
  HostValues(const HostValues&) = delete;
  HostValues& operator=(const HostValues&) = delete;

  const std::vector<Array>& arrays() const { return arrays_; }
  // Waits for the queue's work on the devices and copies the values into `out`, count x itemsize
  // bytes each, in the order of `devices` (out.size() == devices * count * itemsize). After
  // start_read(), waits only for the work enqueued before start_read().
  void read(std::span<std::byte> out);
  // Enqueues the reads now (transfers where the memory is not mapped) and marks the point the
  // values are complete at, so that work enqueued later is not waited for by read() (the
  // split-phase reductions, which let kernels be enqueued between the two).
  void start_read();
  // Whether the kernels write the host memory directly (CUDA) rather than being read by transfers.
  bool mapped() const { return mapped_; }

 private:
  void enqueue_reads();

  Queue queue_;
  std::vector<std::size_t> devices_;
  std::size_t item_;          // bytes of one device's values (count x itemsize)
  std::vector<Event> marks_;  // after start_read(): one per device, where the values are complete
  std::shared_ptr<HostValueSlots> slots_;
  std::vector<Array> arrays_;
  bool mapped_ = false;
  bool read_ = false;
};

}  // namespace skein::detail

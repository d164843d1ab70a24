// SPDX-License-Identifier: BSD-3-Clause
// Where the memory of arrays made without an allocator comes from (the queue's pool, or plain
// allocations when the context's array pool is off), and how the pools give memory back when a
// device is full (memory_pool.cpp).
#pragma once

#include <cstddef>
#include <memory>

#include "skein/array.hpp"
#include "skein/buffer.hpp"
#include "skein/context.hpp"
#include "skein/export.hpp"
#include "skein/queue.hpp"

namespace skein::detail {

class BufferAdapter;

// The memory of a new array of `nbytes` on `device_idx` of the queue, made without an allocator
// (Array::empty and every call that makes its result): a block of the queue's pool
// (temporaries_pool()) when the context's array pool is on, else Buffer::allocate. When the
// pool's rounded-up block does not fit, and the pool has no limit on that device, an allocation
// of exactly `nbytes` is tried before MemoryError.
SKEIN_EXPORT Buffer allocate_array_memory(const Queue& queue, std::size_t device_idx,
                                          std::size_t nbytes);

// Frees the blocks that the pools of the context's queues hold on `device_idx`, each after its
// queue's work on that device is done (so that the memory is free when this returns: OpenCL
// releases a buffer only once the commands that use it are done). Returns the bytes freed.
// Never throws.
SKEIN_EXPORT std::size_t trim_pools(const Context& context, std::size_t device_idx) noexcept;

// The backend's allocation of `size` bytes; when the device is full (MemoryError), the context's
// queue pools are trimmed (trim_pools) and it is tried once more. Buffer::allocate's path.
SKEIN_EXPORT std::shared_ptr<BufferAdapter> allocate_or_trim(const Context& context,
                                                             std::size_t device_idx,
                                                             std::size_t size);

// A copy enqueued on `work` that reads `source`, an array made on another queue (transfer(),
// Array::set(const Array&)): the copy first waits for what the source's queue holds on its device
// (so that it reads what that queue wrote), and afterwards that queue's later work, which may
// reuse the source's memory once its last handle goes, waits for the copy (device-side markers;
// the host does not block). Nothing when `source` is `work`'s.
class CrossQueueRead {
 public:
  CrossQueueRead(const Queue& work, const Array& source)
      : work_(work), source_(source.queue()), device_(source.device_idx()) {
    // Arrays the copy will refuse (another context, a device `work` lacks) are left to it.
    cross_ = !(source_ == work_) && source_.context() == work_.context() &&
             source_.has_device(device_) && work_.has_device(device_);
    if (cross_) work_.wait_for(source_.record_marker(device_), device_);
  }
  // After the copy is enqueued.
  void release() const {
    if (cross_) source_.wait_for(work_.record_marker(device_), device_);
  }

 private:
  const Queue& work_;
  Queue source_;
  std::size_t device_;
  bool cross_ = false;
};

}  // namespace skein::detail

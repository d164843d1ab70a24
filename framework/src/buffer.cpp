// SPDX-License-Identifier: BSD-3-Clause
#include "skein/buffer.hpp"

#include "skein/detail/array_pool.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"

namespace skein {

Buffer::Buffer(const Context& context, std::shared_ptr<detail::BufferAdapter> adapter,
               std::size_t device_idx, std::size_t offset, std::size_t size)
    : context_(detail::impl_of(context)),
      adapter_(std::move(adapter)),
      device_idx_(device_idx),
      offset_(offset),
      size_(size) {}

Buffer Buffer::allocate(const Context& context, std::size_t device_idx, std::size_t size) {
  detail::check_device_idx(context, device_idx, "Buffer::allocate");
  // When the device is full, the queues' pools give back what they hold there and it is tried
  // again (memory_pool.hpp).
  auto adapter = detail::allocate_or_trim(context, device_idx, size);
  return Buffer(context, std::move(adapter), device_idx, 0, size);
}

Context Buffer::context() const {
  if (!context_) {
    detail::raise_in(SKEIN_HERE, "Buffer::context", "Allocate it with Buffer::allocate().",
                     "the buffer is empty");
  }
  return Context(context_);
}

Buffer Buffer::get_sub_region(std::size_t origin, std::size_t size) const {
  if (origin > size_ || size > size_ - origin) {
    detail::raise_in(SKEIN_HERE, "Buffer::get_sub_region", "The region must lie inside the buffer.",
                     "region [{}, {}) does not fit in a buffer of {} bytes", origin, origin + size,
                     size_);
  }
  return Buffer(Context(context_), adapter_, device_idx_, offset_ + origin, size);
}

namespace {
void check_same_size(std::size_t expected, std::size_t got, const char* call, const char* what) {
  if (expected != got) {
    detail::raise_in(SKEIN_HERE, call, "Sizes must be equal; use get_sub_region() for a part.",
                     "{} has {} bytes but the buffer has {}", what, got, expected);
  }
}

void check_queue(const Buffer& buffer, const Queue& queue, std::size_t device_idx,
                 const char* call) {
  if (!(queue.context() == buffer.context())) {
    detail::raise_in(SKEIN_HERE, call, "Use a queue of the buffer's context.",
                     "the queue belongs to another context than the buffer");
  }
  if (!queue.has_device(device_idx)) {
    detail::raise_in(SKEIN_HERE, call, "Use a queue that includes the buffer's device.",
                     "the buffer is on device {}, which is not in the queue", device_idx);
  }
}
}  // namespace

void Buffer::set(const Queue& queue, std::span<const std::byte> host, Sync sync) const {
  check_same_size(size_, host.size(), "Buffer::set", "the host data");
  if (size_ == 0) return;
  check_queue(*this, queue, device_idx_, "Buffer::set");
  queue.device_queue(device_idx_)
      .write(*adapter_, offset_, host.data(), size_, sync == Sync::blocking);
}

void Buffer::get(const Queue& queue, std::span<std::byte> host, Sync sync) const {
  check_same_size(size_, host.size(), "Buffer::get", "the host destination");
  if (size_ == 0) return;
  check_queue(*this, queue, device_idx_, "Buffer::get");
  // A blocking read is a host completion: what the queue's work must confirm first is confirmed
  // (skein/detail/pending_results.hpp). An asynchronous one is completed by a later wait, which
  // confirms then.
  if (sync == Sync::blocking) detail::confirm_results(queue, device_idx_, "Buffer::get");
  queue.device_queue(device_idx_)
      .read(host.data(), *adapter_, offset_, size_, sync == Sync::blocking);
}

void Buffer::set(const Queue& queue, const Buffer& source, Sync sync) const {
  check_same_size(size_, source.size_, "Buffer::set", "the source buffer");
  if (size_ == 0) return;
  check_queue(*this, queue, device_idx_, "Buffer::set");
  check_queue(source, queue, source.device_idx_, "Buffer::set");
  auto& dst_queue = queue.device_queue(device_idx_);
  if (source.device_idx_ == device_idx_) {
    dst_queue.copy(*adapter_, offset_, *source.adapter_, source.offset_, size_);
  } else {
    // The copy runs on the destination's queue, after the work enqueued so far on the source's;
    // later work on the source's queue (which may overwrite the source) waits for the copy.
    auto& src_queue = queue.device_queue(source.device_idx_);
    dst_queue.wait_for_queue(src_queue);
    detail::pass_results(queue, source.device_idx_, device_idx_);
    dst_queue.copy(*adapter_, offset_, *source.adapter_, source.offset_, size_);
    src_queue.wait_for_queue(dst_queue);
  }
  if (sync == Sync::blocking) dst_queue.synchronize();
}

HostBuffer HostBuffer::allocate(const Context& context, std::size_t size, HostMemoryFlags flags) {
  HostBuffer result;
  result.adapter_ = detail::impl_of(context)->adapter->allocate_host(size, flags);
  return result;
}

HostBuffer HostBuffer::register_memory(const Context& context, void* data, std::size_t size,
                                       HostMemoryFlags flags) {
  constexpr const char* call = "HostBuffer::register_memory";
  if (data == nullptr) {
    detail::raise_in(SKEIN_HERE, call, "Pass the address of memory the program owns.",
                     "the pointer is null ({} bytes asked)", size);
  }
  if (size == 0) {
    detail::raise_in(SKEIN_HERE, call,
                     "Register at least one byte; for empty data, skip the registration.",
                     "the size is 0 (pointer {})", data);
  }
  if (flags.write_combined) {
    detail::raise_in(SKEIN_HERE, call,
                     "Write-combining is a property of new allocations: use HostBuffer::allocate "
                     "with write_combined, or register without it.",
                     "memory that already exists cannot be made write-combined");
  }
  HostBuffer result;
  result.adapter_ = detail::impl_of(context)->adapter->register_host(data, size, flags);
  return result;
}

std::byte* HostBuffer::data() const { return adapter_ ? adapter_->data() : nullptr; }
std::size_t HostBuffer::size() const { return adapter_ ? adapter_->size() : 0; }
HostMemoryFlags HostBuffer::flags() const {
  return adapter_ ? adapter_->flags() : HostMemoryFlags{};
}
bool HostBuffer::registered() const { return adapter_ && adapter_->registered(); }

Buffer HostBuffer::device_buffer(const Context& context, std::size_t device_idx) const {
  constexpr const char* call = "HostBuffer::device_buffer";
  detail::check_device_idx(context, device_idx, call);
  const auto& adapter = detail::impl_of(context)->adapter;
  if (!adapter_ || adapter_->size() == 0) {
    detail::raise_in(SKEIN_HERE, call, "Allocate or register the memory first.",
                     "the host buffer is empty");
  }
  if (adapter_->owner() != adapter.get()) {
    detail::raise_in(SKEIN_HERE, call,
                     "Pass the context the memory was allocated or registered with.",
                     "the host memory belongs to another context than the one given ({})",
                     context.device(device_idx).description());
  }
  if (!adapter_->flags().device_mapped) {
    detail::raise_in(SKEIN_HERE, call,
                     "Allocate or register it with HostMemoryFlags{.device_mapped = true}.",
                     "the host memory of {} bytes is not mapped into the devices' address space",
                     adapter_->size());
  }
  return Buffer(context, adapter->mapped_device_buffer(adapter_, device_idx), device_idx, 0,
                adapter_->size());
}

}  // namespace skein

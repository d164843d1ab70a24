// SPDX-License-Identifier: BSD-3-Clause
// detail::HostValues: one-element arrays the host reads without a transfer where it can (see
// skein/detail/host_values.hpp).
#include "skein/detail/host_values.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "skein/detail/errors.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"

namespace skein::detail {

namespace {
// Bytes per device in a slot set: the largest itemsize (complex128), rounded up to a line so
// that two devices' values never share one.
constexpr std::size_t kSlotBytes = 64;
}  // namespace

// The page-locked memory of one call's values: one slot per device index of the context. Mapped:
// kernels on device d write slot d through device[d]. Not mapped: device[d] is a small device
// buffer that kernels write, read into slot d by a non-blocking transfer.
struct HostValueSlots {
  HostBuffer host;
  bool mapped = false;
  std::vector<Buffer> device;  // per device index; made on first use
};

HostValues::HostValues(const Queue& queue, std::span<const std::size_t> devices, Dtype dtype,
                       std::size_t count)
    : queue_(queue), devices_(devices.begin(), devices.end()), item_(itemsize(dtype) * count) {
  static_assert(kMaxBytes <= kSlotBytes);
  if (count == 0 || item_ > kMaxBytes) {
    raise_in(SKEIN_HERE, "HostValues", "This is a bug in Skein.",
             "{} values of {} bytes per device", count, itemsize(dtype));
  }
  const Context& context = queue.context();
  const std::size_t n = context.devices().size();
  const auto& in_queue = queue.device_idxs();
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    const std::size_t d = devices_[i];
    // One slot per device: a device listed twice would have its two values share it.
    if (d >= n || std::find(in_queue.begin(), in_queue.end(), d) == in_queue.end() ||
        std::find(devices_.begin(), devices_.begin() + i, d) != devices_.begin() + i) {
      raise_in(SKEIN_HERE, "HostValues", "This is a bug in Skein.",
               "device {} is not one of the queue's, or is listed twice", d);
    }
  }
  auto& impl = *impl_of(queue);
  {
    std::lock_guard lock(impl.host_values_mutex);
    if (!impl.host_values_free.empty()) {
      slots_ = std::move(impl.host_values_free.back());
      impl.host_values_free.pop_back();
    }
  }
  if (!slots_) {
    slots_ = std::make_shared<HostValueSlots>();
    slots_->device.resize(n);
    bool unmappable = false;
    {
      std::lock_guard lock(impl.host_values_mutex);
      unmappable = impl.host_values_unmappable;
    }
    if (context.api().id() == ApiId::cuda && !unmappable) {
      try {
        slots_->host = HostBuffer::allocate(context, kSlotBytes * n, {.device_mapped = true});
        slots_->mapped = true;
      } catch (const Error&) {
        // A device that cannot map host memory: transfers then, for this queue from now on.
        std::lock_guard lock(impl.host_values_mutex);
        impl.host_values_unmappable = true;
      }
    }
    if (!slots_->mapped) slots_->host = HostBuffer::allocate(context, kSlotBytes * n);
  }
  mapped_ = slots_->mapped;
  arrays_.reserve(devices_.size());
  for (std::size_t d : devices_) {
    Buffer& b = slots_->device[d];
    if (b.empty()) {
      b = mapped_
              ? slots_->host.device_buffer(context, d).get_sub_region(kSlotBytes * d, kSlotBytes)
              : Buffer::allocate(context, d, kSlotBytes);
    }
    arrays_.emplace_back(queue, b, Shape{count}, dtype);
  }
}

HostValues::~HostValues() {
  if (!slots_) return;
  if (!read_) {
    // Work enqueued for these arrays may still write them: wait for it before anyone else can
    // have the memory. A failed wait leaves the slots to the process (never handed out again).
    try {
      for (std::size_t d : devices_) queue_.synchronize(d);
    } catch (...) {
      static std::mutex mutex;
      static auto* kept = new std::vector<std::shared_ptr<HostValueSlots>>;
      std::lock_guard lock(mutex);
      kept->push_back(std::move(slots_));
      return;
    }
  }
  arrays_.clear();
  auto& impl = *impl_of(queue_);
  std::lock_guard lock(impl.host_values_mutex);
  impl.host_values_free.push_back(std::move(slots_));
}

void HostValues::read(std::span<std::byte> out) {
  if (out.size() != devices_.size() * item_) {
    raise_in(SKEIN_HERE, "HostValues::read", "This is a bug in Skein.",
             "{} bytes for {} values of {} bytes", out.size(), devices_.size(), item_);
  }
  std::byte* host = slots_->host.data();
  if (marks_.empty()) {
    enqueue_reads();
    for (std::size_t d : devices_) queue_.synchronize(d);
  } else {
    for (auto& m : marks_) m.wait();
  }
  read_ = true;
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    std::memcpy(out.data() + i * item_, host + kSlotBytes * devices_[i], item_);
  }
}

void HostValues::enqueue_reads() {
  if (mapped_) return;
  // Every device's transfer first, then the waits: the devices' reads overlap.
  std::byte* host = slots_->host.data();
  for (std::size_t d : devices_) {
    slots_->device[d].get(queue_, std::span<std::byte>(host + kSlotBytes * d, kSlotBytes),
                          Sync::async);
  }
}

void HostValues::start_read() {
  if (!marks_.empty() || read_) return;
  enqueue_reads();
  for (std::size_t d : devices_) marks_.push_back(queue_.record_marker(d));
}

}  // namespace skein::detail

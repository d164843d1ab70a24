// SPDX-License-Identifier: BSD-3-Clause
// PyCUDA's calling conveniences on a PreparedKernel: host memory as arguments (In, Out, InOut,
// copied through device temporaries) and launches that report their device time (TimedLaunch).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "kernel_impl.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/impl_access.hpp"

namespace skein {

void PreparedKernel::refuse_host_args(std::size_t devices) const {
  detail::raise_in(SKEIN_HERE, "PreparedKernel",
                   "Launch on one device (PreparedKernel::on_devices, or a queue of one device), "
                   "or pass Arrays, one per device (MultiDevice<Array>).",
                   "kernel '{}': In, Out and InOut arguments take a launch on one device; this one "
                   "is on {} devices",
                   impl_->kernel.name(), devices);
}

Event PreparedKernel::start_timing(std::size_t device_idx) const {
  return impl_->queue.record_event(device_idx);
}

double TimedLaunch::seconds(std::size_t device_idx) const {
  const auto it = std::find(device_idxs_.begin(), device_idxs_.end(), device_idx);
  if (it == device_idxs_.end()) {
    detail::raise_in(SKEIN_HERE, "TimedLaunch::seconds", "Ask for a device the kernel ran on.",
                     "the launch was not on device {} (devices: {})", device_idx,
                     fmt::join(device_idxs_, ", "));
  }
  const auto i = static_cast<std::size_t>(it - device_idxs_.begin());
  ends_[i].wait();
  return ends_[i].time_since(starts_[i]) * 1e-3;
}

double TimedLaunch::seconds() const {
  double longest = 0;
  for (std::size_t d : device_idxs_) longest = std::max(longest, seconds(d));
  return longest;
}

namespace detail {

void launch_with_host_args(const PreparedKernel& prepared, std::size_t device_idx,
                           std::span<const KernelArg> args, std::vector<Event>* events) {
  const auto& impl = *impl_of(prepared);
  const Queue& queue = impl.queue;
  const Context context = queue.context();
  const auto& devices = impl.device_idxs;
  if (std::find(devices.begin(), devices.end(), device_idx) == devices.end()) {
    raise_in(SKEIN_HERE, "PreparedKernel",
             "Launch on devices of the queue the kernel was prepared with.",
             "device {} is not one kernel '{}' was prepared for (devices: {})", device_idx,
             impl.kernel.name(), fmt::join(devices, ", "));
  }
  // The temporaries first, all of them (a MemoryError leaves nothing done), then the copies in,
  // the launch (which checks the arguments) and the copies back. The copies wait, so that a
  // refused launch leaves no copy reading the host memory after the call.
  std::vector<Buffer> temporaries(args.size());
  std::vector<KernelArg> packed(args.begin(), args.end());
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].kind == KernelArg::Kind::buffer || args[i].kind == KernelArg::Kind::scalar)
      continue;
    temporaries[i] = Buffer::allocate(context, device_idx, std::max<std::size_t>(args[i].size, 1));
    packed[i] = make_kernel_arg(temporaries[i]);
  }
  const auto host = [&](std::size_t i) {
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): Out and InOut hold writable memory
    return std::span(const_cast<std::byte*>(static_cast<const std::byte*>(args[i].value)),
                     args[i].size);
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].size > 0 &&
        (args[i].kind == KernelArg::Kind::host_in || args[i].kind == KernelArg::Kind::host_inout)) {
      temporaries[i]
          .get_sub_region(0, args[i].size)
          .set(queue, std::span<const std::byte>(host(i)), Sync::blocking);
    }
  }
  prepared.launch_packed(device_idx, packed, events);
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].size > 0 && (args[i].kind == KernelArg::Kind::host_out ||
                             args[i].kind == KernelArg::Kind::host_inout)) {
      temporaries[i].get_sub_region(0, args[i].size).get(queue, host(i), Sync::blocking);
    }
  }
  // The temporaries outlive the kernel: it is done before they go.
  queue.synchronize(device_idx);
}

}  // namespace detail

}  // namespace skein

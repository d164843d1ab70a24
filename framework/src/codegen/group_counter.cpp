// SPDX-License-Identifier: BSD-3-Clause
#include "codegen/group_counter.hpp"

#include <algorithm>
#include <mutex>
#include <utility>

#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"

namespace skein::detail::codegen {

Buffer group_counter(const Queue& queue, std::size_t device_idx) {
  auto& impl = *detail::impl_of(queue);
  std::lock_guard lock(impl.group_counters_mutex);
  if (impl.group_counters.size() <= device_idx) impl.group_counters.resize(device_idx + 1);
  Buffer& counter = impl.group_counters[device_idx];
  if (!counter.adapter()) {
    Buffer fresh = Buffer::allocate(queue.context(), device_idx, sizeof(std::uint32_t));
    // On the queue: its kernels come after the fill.
    queue.device_queue(device_idx)
        .fill_zero(*fresh.adapter(), fresh.offset(), sizeof(std::uint32_t));
    counter = std::move(fresh);
  }
  return counter;
}

void drop_group_counter(const Queue& queue, std::size_t device_idx, const Buffer& counter) {
  auto& impl = *detail::impl_of(queue);
  std::lock_guard lock(impl.group_counters_mutex);
  if (device_idx < impl.group_counters.size() &&
      impl.group_counters[device_idx].adapter() == counter.adapter()) {
    impl.group_counters[device_idx] = Buffer();
  }
}

std::optional<std::string> opencl_device_fence_std(const DeviceParameters& params) {
  const auto& versions = params.opencl_c_versions;
  const auto has_version = [&](int major, int minor) {
    return std::find(versions.begin(), versions.end(), std::pair{major, minor}) != versions.end();
  };
  const auto has_feature = [&](std::string_view name) {
    return std::find(params.opencl_c_features.begin(), params.opencl_c_features.end(), name) !=
           params.opencl_c_features.end();
  };
  // OpenCL C 2.0 has them without conditions (a 3.0 device lists 2.0 only with all of it).
  if (has_version(2, 0)) return "CL2.0";
  if (has_version(3, 0) && has_feature("__opencl_c_atomic_order_acq_rel") &&
      has_feature("__opencl_c_atomic_scope_device")) {
    return "CL3.0";
  }
  return std::nullopt;
}

}  // namespace skein::detail::codegen

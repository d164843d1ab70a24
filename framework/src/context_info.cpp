// SPDX-License-Identifier: BSD-3-Clause
// pygpu's GpuContext attributes largest_memblock and bin_id (skein/context.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "skein/context.hpp"
#include "skein/detail/errors.hpp"
#include "skein/driver.hpp"

namespace skein {

std::size_t largest_allocation(const Context& context, std::size_t device_idx) {
  const MemoryInfo info = memory_info(context, device_idx);  // checks the index
  const std::size_t max_alloc = context.device(device_idx).params().max_alloc_size;
  return max_alloc == 0 ? info.free : std::min(info.free, max_alloc);
}

std::string binary_id(const Device& device) {
  const auto& p = device.params();
  const Platform platform = device.platform();
  if (platform.api().id() == ApiId::cuda) {
    if (!p.compute_capability) {
      detail::raise_in<RuntimeError>(SKEIN_HERE, "binary_id", "This is a bug in Skein.",
                                     "{} reports no compute capability", device.description());
    }
    return fmt::format("sm_{}{}", p.compute_capability->first, p.compute_capability->second);
  }
  return fmt::format("{} {} / {} / {}", platform.name(), platform.version(), p.name,
                     p.driver_version);
}

}  // namespace skein

// SPDX-License-Identifier: BSD-3-Clause
#include "skein/context.hpp"

#include <algorithm>

#include "skein/detail/env.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"
#include "skein/detail/log.hpp"

namespace skein {

Context Context::from_devices(std::span<const Device> devices) {
  if (devices.empty()) {
    detail::raise_in(SKEIN_HERE, "Context::from_devices",
                     "Pass at least one device (see select_devices()).", "no devices given");
  }
  const Platform platform = devices.front().platform();
  std::vector<std::shared_ptr<detail::DeviceAdapter>> adapters;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (!(devices[i].platform() == platform)) {
      detail::raise_in(SKEIN_HERE, "Context::from_devices",
                       "A context holds devices of one platform; make one context per platform.",
                       "device {} ({}) is not on platform '{}'", i, devices[i].description(),
                       platform.name());
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (devices[j] == devices[i]) {
        detail::raise_in(SKEIN_HERE, "Context::from_devices", "List each device once.",
                         "{} is given twice (positions {} and {})", devices[i].description(), j, i);
      }
    }
    adapters.push_back(devices[i].adapter());
  }
  auto adapter = platform.api().id() == ApiId::cuda ? detail::make_cuda_context(adapters)
                                                    : detail::make_opencl_context(adapters);
  return detail::wrap_context(std::move(adapter));
}

Context Context::from_criteria(const Api& api, std::size_t devices_num,
                               const DeviceFilter& filter) {
  const auto devices = select_devices(api, devices_num, filter);
  return from_devices(devices);
}

Api Context::api() const { return impl_->devices.front().platform().api(); }
Platform Context::platform() const { return impl_->devices.front().platform(); }
const std::vector<Device>& Context::devices() const { return impl_->devices; }

const Device& Context::device(std::size_t device_idx) const {
  detail::check_device_idx(*this, device_idx, "Context::device");
  return impl_->devices[device_idx];
}

void Context::deactivate() const { impl_->adapter->deactivate(); }

void Context::set_array_pool(bool on) const {
  impl_->array_pool.store(on, std::memory_order_relaxed);
}
bool Context::array_pool() const { return impl_->array_pool.load(std::memory_order_relaxed); }

namespace detail {

Context wrap_context(std::shared_ptr<ContextAdapter> adapter) {
  // The Context's variables are read (and a bad value refused) when any Context is made, whatever
  // its backend, so that a wrong setting fails where it is made rather than later, or never (not
  // on a call that makes an array).
  (void)env_flag("SKEIN_CUDA_GRAPH_LAUNCH", true, "Context",
                 "launch kernels called again on a queue through one-kernel CUDA graphs");
  const bool array_pool =
      env_flag("SKEIN_ARRAY_POOL", true, "Context",
               "arrays made without an allocator come from their queue's pool (0: plain "
               "allocations)");
  // The log's level too: a program of the framework alone has no Runtime to read it.
  (void)read_log_level_from_environment("Context");
  auto impl = std::make_shared<Context::Impl>();
  impl->array_pool.store(array_pool, std::memory_order_relaxed);
  for (const auto& d : adapter->devices()) impl->devices.emplace_back(d);
  impl->adapter = std::move(adapter);
  register_context(impl);
  return Context(std::move(impl));
}

void check_device_idx(const Context& context, std::size_t device_idx, const char* call) {
  if (device_idx >= detail::impl_of(context)->devices.size()) {
    raise_in(SKEIN_HERE, call, "Device indices count the context's devices from 0.",
             "device index {} is out of range: the context has {} device(s)", device_idx,
             detail::impl_of(context)->devices.size());
  }
}

}  // namespace detail
}  // namespace skein

// SPDX-License-Identifier: BSD-3-Clause
#include "skein/device.hpp"

#include <set>

#include "skein/detail/adapter.hpp"
#include "skein/detail/errors.hpp"
#include "masks.hpp"

namespace skein {

std::string_view name(DeviceType type) {
  switch (type) {
    case DeviceType::cpu: return "CPU";
    case DeviceType::gpu: return "GPU";
    default: return "other";
  }
}

std::vector<Device> Device::all(const Platform& platform) {
  std::vector<Device> result;
  for (const auto& d : platform.adapter()->devices()) result.emplace_back(d);
  return result;
}

std::vector<Device> Device::all_by_masks(const Platform& platform,
                                         const std::vector<std::string>& include_masks,
                                         const std::vector<std::string>& exclude_masks,
                                         bool unique_only, bool include_pure_parallel_devices) {
  const detail::NameMasks masks(include_masks, exclude_masks, "Device::all_by_masks");
  std::vector<Device> result;
  std::set<std::string> seen;
  for (const auto& d : all(platform)) {
    if (!masks.matches(d.name())) continue;
    if (!include_pure_parallel_devices && d.params().max_total_local_size == 1) continue;
    if (unique_only && !seen.insert(d.name()).second) continue;
    result.push_back(d);
  }
  return result;
}

Device Device::from_index(const Platform& platform, std::size_t device_idx) {
  const auto& devices = platform.adapter()->devices();
  if (device_idx >= devices.size()) {
    detail::raise_in(SKEIN_HERE, "Device::from_index", "Run skein-info to list the devices.",
                     "device index {} is out of range: platform '{}' of {} has {} device(s)",
                     device_idx, platform.name(), platform.api().name(), devices.size());
  }
  return Device(devices[device_idx]);
}

Platform Device::platform() const { return Platform(adapter_->platform()); }
std::size_t Device::index() const { return adapter_->index(); }
const std::string& Device::name() const { return adapter_->params().name; }
const DeviceParameters& Device::params() const { return adapter_->params(); }
std::string Device::description() const { return detail::describe(*adapter_); }

std::vector<std::pair<Platform, std::vector<Device>>> platforms_and_devices_by_mask(
    const Api& api, std::size_t quantity, const DeviceFilter& filter) {
  std::vector<std::pair<Platform, std::vector<Device>>> result;
  for (const auto& platform :
       Platform::all_by_masks(api, filter.platform_include_masks, filter.platform_exclude_masks)) {
    auto devices =
        Device::all_by_masks(platform, filter.device_include_masks, filter.device_exclude_masks,
                             filter.unique_devices_only, filter.include_pure_parallel_devices);
    if (!devices.empty() && devices.size() >= quantity) {
      result.emplace_back(platform, std::move(devices));
    }
  }
  return result;
}

std::vector<Device> select_devices(const Api& api, std::size_t quantity,
                                   const DeviceFilter& filter) {
  if (quantity == 0) {
    detail::raise_in(SKEIN_HERE, "select_devices", "Ask for at least one device.",
                     "quantity must be positive");
  }
  auto found = platforms_and_devices_by_mask(api, quantity, filter);
  if (found.empty()) {
    std::size_t total = 0;
    for (const auto& p : Platform::all(api)) total += p.devices().size();
    detail::raise_in(SKEIN_HERE, "select_devices",
                     "Relax the masks, ask for fewer devices, or run skein-info to see what is "
                     "there.",
                     "no {} platform has {} device(s) matching the filter ({} device(s) in all)",
                     api.name(), quantity, total);
  }
  auto& devices = found.front().second;
  devices.erase(devices.begin() + static_cast<std::ptrdiff_t>(quantity), devices.end());
  return devices;
}

}  // namespace skein

// SPDX-License-Identifier: BSD-3-Clause
#include "skein/device.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <optional>
#include <set>
#include <string_view>

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

// --- PCI bus ids (PyCUDA's Device.pci_bus_id() and Device(pci_bus_id)) -----------------------

namespace {

// "dddd:bb:dd.f" from the forms cuDeviceGetByPCIBusId takes; nullopt for a malformed id.
std::optional<std::string> normalized_pci_bus_id(std::string_view id) {
  std::vector<unsigned long> parts;
  std::vector<char> separators;
  std::size_t i = 0;
  while (i < id.size()) {
    std::size_t j = i;
    unsigned long value = 0;
    while (j < id.size() && std::isxdigit(static_cast<unsigned char>(id[j])) && j - i < 8) {
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(id[j])));
      value = value * 16 + static_cast<unsigned long>(c <= '9' ? c - '0' : c - 'a' + 10);
      ++j;
    }
    if (j == i) return std::nullopt;
    parts.push_back(value);
    if (j == id.size()) break;
    if (id[j] != ':' && id[j] != '.') return std::nullopt;
    separators.push_back(id[j]);
    i = j + 1;
    if (i == id.size()) return std::nullopt;
  }
  const std::string seps(separators.begin(), separators.end());
  unsigned long domain = 0, bus = 0, device = 0, function = 0;
  if (seps == "::.") {
    domain = parts[0], bus = parts[1], device = parts[2], function = parts[3];
  } else if (seps == ":.") {
    bus = parts[0], device = parts[1], function = parts[2];
  } else if (seps == "::") {
    domain = parts[0], bus = parts[1], device = parts[2];
  } else {
    return std::nullopt;
  }
  if (domain > 0xffff || bus > 0xff || device > 0x1f || function > 0x7) return std::nullopt;
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain, bus, device, function);
}

}  // namespace

std::string Device::pci_bus_id() const {
  const auto& id = params().pci_bus_id;
  if (!id) {
    detail::raise_in(SKEIN_HERE, "Device::pci_bus_id",
                     "Name the device by index (Device::from_index) or by name masks; PCI bus ids "
                     "come from CUDA, and on OpenCL from cl_khr_pci_bus_info or NVIDIA's "
                     "cl_nv_device_attribute_query.",
                     "{}: its driver tells no PCI bus id", description());
  }
  return *id;
}

Device Device::from_pci_bus_id(const Api& api, std::string_view pci_bus_id) {
  constexpr const char* call = "Device::from_pci_bus_id";
  const auto wanted = normalized_pci_bus_id(pci_bus_id);
  if (!wanted) {
    detail::raise_in(SKEIN_HERE, call,
                     "Write it as domain:bus:device.function in hex, e.g. \"0000:65:00.0\" "
                     "(or bus:device.function, or domain:bus:device).",
                     "\"{}\" is no PCI bus id", pci_bus_id);
  }
  std::vector<std::string> known, unknown;
  for (const Platform& platform : Platform::all(api)) {
    for (const Device& device : Device::all(platform)) {
      const auto& id = device.params().pci_bus_id;
      if (id && normalized_pci_bus_id(*id) == wanted) return device;
      if (id) known.push_back(fmt::format("{} ({})", *id, device.description()));
      if (!id) unknown.push_back(device.description());
    }
  }
  detail::raise_in(SKEIN_HERE, call,
                   "Pick one of the ids there are (skein-info lists the devices), or select the "
                   "device by index or name.",
                   "no {} device has PCI bus id {} (the ids there are: {}{})", api.name(), *wanted,
                   known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", ")),
                   unknown.empty() ? ""
                                   : fmt::format("; devices whose driver tells none: {}",
                                                 fmt::join(unknown, ", ")));
}

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

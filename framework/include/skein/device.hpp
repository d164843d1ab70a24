// SPDX-License-Identifier: BSD-3-Clause
// Devices and device selection.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "skein/device_parameters.hpp"
#include "skein/export.hpp"
#include "skein/platform.hpp"

namespace skein {

namespace detail {
class DeviceAdapter;
}

// One device of a platform, with its parameters.
// Threads: immutable once discovered (its parameters are read when it is found), so a Device and
// its copies may be used from any number of threads at once.
class SKEIN_EXPORT Device {
 public:
  static std::vector<Device> all(const Platform& platform);
  // Devices whose name matches one of the include regexes (all, if none given) and none of the
  // exclude ones. unique_only keeps the first device of each name; devices with
  // max_total_local_size == 1 are left out unless include_pure_parallel_devices.
  static std::vector<Device> all_by_masks(const Platform& platform,
                                          const std::vector<std::string>& include_masks = {},
                                          const std::vector<std::string>& exclude_masks = {},
                                          bool unique_only = false,
                                          bool include_pure_parallel_devices = false);
  static Device from_index(const Platform& platform, std::size_t device_idx);

  Platform platform() const;
  std::size_t index() const;  // in its platform
  const std::string& name() const;
  const DeviceParameters& params() const;
  // "CUDA device 0 (NVIDIA H100 80GB HBM3)": for messages.
  std::string description() const;

  // PyCUDA's Device.pci_bus_id(): "dddd:bb:dd.f", lower-case hex (the form of Linux's
  // /sys/bus/pci/devices): CUDA's cuDeviceGetPCIBusId; OpenCL's cl_khr_pci_bus_info
  // (CL_DEVICE_PCI_BUS_INFO_KHR) or NVIDIA's cl_nv_device_attribute_query. LogicError for a
  // device whose driver tells none (PoCL's CPU devices): params().pci_bus_id is empty then.
  std::string pci_bus_id() const;
  // PyCUDA's Device(pci_bus_id) (cuDeviceGetByPCIBusId): the device of the API with this id, in
  // any of the forms "dddd:bb:dd.f", "bb:dd.f" (domain 0) or "dddd:bb:dd" (function 0), hex in
  // either case. LogicError for a malformed id, and for one no device has (naming the ids there
  // are, and the devices whose driver tells none).
  static Device from_pci_bus_id(const Api& api, std::string_view pci_bus_id);

  friend bool operator==(const Device& a, const Device& b) { return a.adapter_ == b.adapter_; }

  const std::shared_ptr<detail::DeviceAdapter>& adapter() const { return adapter_; }
  explicit Device(std::shared_ptr<detail::DeviceAdapter> adapter) : adapter_(std::move(adapter)) {}

 private:
  std::shared_ptr<detail::DeviceAdapter> adapter_;
};

// Criteria for picking platforms and devices; masks are ECMAScript regular expressions, searched
// anywhere in the name.
struct DeviceFilter {
  std::vector<std::string> platform_include_masks{};
  std::vector<std::string> platform_exclude_masks{};
  std::vector<std::string> device_include_masks{};
  std::vector<std::string> device_exclude_masks{};
  bool unique_devices_only = false;
  bool include_pure_parallel_devices = false;
};

// Every (platform, matching devices) pair with at least `quantity` matching devices.
SKEIN_EXPORT std::vector<std::pair<Platform, std::vector<Device>>> platforms_and_devices_by_mask(
    const Api& api, std::size_t quantity = 1, const DeviceFilter& filter = {});

// The first `quantity` matching devices of the first platform that has that many.
// Throws LogicError naming the filter when none has.
SKEIN_EXPORT std::vector<Device> select_devices(const Api& api, std::size_t quantity = 1,
                                                const DeviceFilter& filter = {});

}  // namespace skein

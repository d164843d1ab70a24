// SPDX-License-Identifier: BSD-3-Clause
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "adapters.hpp"

namespace skein::detail {

namespace {

class CudaDeviceAdapter final : public DeviceAdapter {
 public:
  CudaDeviceAdapter(std::weak_ptr<PlatformAdapter> platform, std::size_t index, CUdevice device,
                    int driver_version)
      : platform_(std::move(platform)), index_(index), device_(device) {
    read_params(driver_version);
  }

  std::shared_ptr<PlatformAdapter> platform() const override { return platform_.lock(); }
  std::size_t index() const override { return index_; }
  const DeviceParameters& params() const override { return params_; }
  std::uintptr_t native() const override { return static_cast<std::uintptr_t>(device_); }

 private:
  void read_params(int driver_version) {
    // The device is not described yet; name it by index in messages of failed queries.
    const std::string where = fmt::format("CUDA device {}", index_);
    auto attribute = [&](CUdevice_attribute which) {
      int value = 0;
      SKEIN_CU_CHECK(cuDeviceGetAttribute, (&value, which, device_), where);
      return static_cast<std::size_t>(value);
    };

    DeviceParameters& p = params_;
    p.type = DeviceType::gpu;
    p.compute_units = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    p.local_mem_size = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    // 32 banks of 4 bytes on every architecture since Fermi.
    p.local_mem_banks = 32;
    p.max_local_sizes = {attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
                         attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
                         attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)};
    p.max_num_groups = {attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
                        attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
                        attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)};
    p.max_total_local_size = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    p.warp_size = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE);

    std::size_t total = 0;
    SKEIN_CU_CHECK(cuDeviceTotalMem, (&total, device_), where);
    p.global_mem_size = total;
    // CUDA has no per-allocation limit below the device's memory.
    p.max_alloc_size = total;
    p.base_address_align =
        std::max<std::size_t>(attribute(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT), 256);

    char name[256] = {};
    SKEIN_CU_CHECK(cuDeviceGetName, (name, static_cast<int>(sizeof(name)) - 1, device_), where);
    p.name = name;
    p.vendor = "NVIDIA Corporation";
    p.driver_version = cuda_version_string(driver_version);

    const int major = static_cast<int>(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR));
    const int minor = static_cast<int>(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
    p.compute_capability = std::pair{major, minor};
    p.supports_float16 = std::pair{major, minor} >= std::pair{5, 3};
    p.supports_float64 = true;

    // The driver writes "0000:1B:00.0"; lower-case it to the form of the public documentation,
    // of Linux's /sys/bus/pci/devices and of the OpenCL backend, so that ids compare equal.
    char bus_id[64] = {};
    SKEIN_CU_CHECK(cuDeviceGetPCIBusId, (bus_id, static_cast<int>(sizeof(bus_id)), device_), where);
    std::string id = bus_id;
    std::transform(id.begin(), id.end(), id.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    p.pci_bus_id = std::move(id);

    // What the occupancy calculation needs (skein/occupancy.hpp).
    p.max_threads_per_compute_unit = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    p.max_groups_per_compute_unit = attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
    p.registers_per_compute_unit = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    p.local_mem_per_compute_unit =
        attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    p.registers_per_group = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    p.local_mem_per_group_optin = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  }

  std::weak_ptr<PlatformAdapter> platform_;
  std::size_t index_;
  CUdevice device_;
  DeviceParameters params_;
};

}  // namespace

std::shared_ptr<DeviceAdapter> make_cuda_device(std::weak_ptr<PlatformAdapter> platform,
                                                std::size_t index, CUdevice device,
                                                int driver_version) {
  return std::make_shared<CudaDeviceAdapter>(std::move(platform), index, device, driver_version);
}

}  // namespace skein::detail

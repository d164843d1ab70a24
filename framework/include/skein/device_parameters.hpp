// SPDX-License-Identifier: BSD-3-Clause
// What a device can do, read from its backend's own queries.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "skein/export.hpp"

namespace skein {

enum class DeviceType { cpu = 1, gpu = 2, other = 3 };
SKEIN_EXPORT std::string_view name(DeviceType type);

struct DeviceParameters {
  DeviceType type = DeviceType::other;
  // Multiprocessors (CUDA) or compute units (OpenCL).
  std::size_t compute_units = 0;
  // Shared (CUDA) or local (OpenCL) memory per block / work group, in bytes.
  std::size_t local_mem_size = 0;
  // Independent banks of local memory one warp can use without serialising.
  std::size_t local_mem_banks = 0;
  // Largest block / work group size in each dimension.
  std::vector<std::size_t> max_local_sizes{};
  // Largest number of blocks / work groups in each dimension.
  std::vector<std::size_t> max_num_groups{};
  // Largest total block / work group size.
  std::size_t max_total_local_size = 0;
  // Threads that run in lockstep (warp, wavefront; 1 on CPUs).
  std::size_t warp_size = 0;

  std::size_t global_mem_size = 0;
  std::size_t max_alloc_size = 0;  // largest single allocation
  // Alignment (bytes) that a sub-buffer's origin needs to be usable as a kernel argument.
  std::size_t base_address_align = 1;
  std::string name{};
  std::string vendor{};
  std::string driver_version{};
  bool supports_float16 = false;
  bool supports_float64 = false;

  // OpenCL: the OpenCL C versions the device's compiler takes (-cl-std), as (major, minor) in
  // ascending order: CL_DEVICE_OPENCL_C_ALL_VERSIONS where the device has OpenCL 3.0, else 1.0
  // up to CL_DEVICE_OPENCL_C_VERSION. And the optional OpenCL C 3.0 features it supports
  // (CL_DEVICE_OPENCL_C_FEATURES: "__opencl_c_atomic_scope_device", ...; empty before 3.0).
  // Both empty on CUDA.
  std::vector<std::pair<int, int>> opencl_c_versions{};
  std::vector<std::string> opencl_c_features{};

  // CUDA devices (and NVIDIA's OpenCL devices, which report them too).
  std::optional<std::pair<int, int>> compute_capability{};
  std::optional<std::string> pci_bus_id{};  // "0000:1b:00.0"

  // Per multiprocessor / compute unit, for occupancy (see skein/occupancy.hpp). Only the CUDA
  // backend reads them (OpenCL has no queries for them); 0 where unknown.
  std::size_t max_threads_per_compute_unit = 0;  // resident threads
  std::size_t max_groups_per_compute_unit = 0;   // resident blocks
  std::size_t registers_per_compute_unit = 0;    // 32-bit registers
  std::size_t local_mem_per_compute_unit = 0;    // shared memory, bytes
  // Per block: 32-bit registers, and the shared memory a block can have when the kernel opts in
  // to more than local_mem_size (bytes).
  std::size_t registers_per_group = 0;
  std::size_t local_mem_per_group_optin = 0;
};

}  // namespace skein

// SPDX-License-Identifier: BSD-3-Clause
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <utility>
#include <vector>

#include "adapters.hpp"
#include "check.hpp"

#include <CL/cl_ext.h>

namespace skein::detail::opencl {

namespace {
bool has_extension(const std::string& extensions, const char* name) {
  // Extensions are space-separated; match whole words.
  const std::string padded = " " + extensions + " ";
  return padded.find(std::string(" ") + name + " ") != std::string::npos;
}

// OpenCL 3.0's cl_name_version.
struct NameVersion {
  cl_uint version;
  char name[64];
};

// An OpenCL 3.0 list query; empty where the device does not answer it.
std::vector<NameVersion> name_versions(cl_device_id id, cl_device_info what) {
  std::size_t size = 0;
  if (clGetDeviceInfo(id, what, 0, nullptr, &size) != CL_SUCCESS) return {};
  std::vector<NameVersion> out(size / sizeof(NameVersion));
  if (out.empty() || clGetDeviceInfo(id, what, out.size() * sizeof(NameVersion), out.data(),
                                     nullptr) != CL_SUCCESS) {
    return {};
  }
  return out;
}

// "<prefix><major>.<minor>..." (CL_DEVICE_VERSION, CL_DEVICE_OPENCL_C_VERSION); (0, 0) otherwise.
std::pair<int, int> version_after(const std::string& text, const std::string& prefix) {
  int major = 0, minor = 0;
  if (text.rfind(prefix, 0) != 0 ||
      std::sscanf(text.c_str() + prefix.size(), "%d.%d", &major, &minor) != 2) {
    return {0, 0};
  }
  return {major, minor};
}

// The OpenCL C versions the compiler takes, ascending, and OpenCL C 3.0's optional features.
void read_opencl_c(cl_device_id id, DeviceParameters& p) {
  std::vector<std::pair<int, int>> versions;
  if (version_after(device_string(id, CL_DEVICE_VERSION), "OpenCL ") >= std::pair{3, 0}) {
    for (const auto& v : name_versions(id, SKEIN_CL_DEVICE_OPENCL_C_ALL_VERSIONS)) {
      versions.emplace_back(static_cast<int>(v.version >> 22),
                            static_cast<int>((v.version >> 12) & 0x3ff));
    }
    for (const auto& f : name_versions(id, SKEIN_CL_DEVICE_OPENCL_C_FEATURES)) {
      p.opencl_c_features.emplace_back(f.name, std::find(f.name, f.name + sizeof(f.name), '\0'));
    }
  }
  if (versions.empty()) {
    // Before 3.0 a compiler takes every version up to the one it reports.
    const auto top = version_after(device_string(id, CL_DEVICE_OPENCL_C_VERSION), "OpenCL C ");
    for (const auto& v : {std::pair{1, 0}, std::pair{1, 1}, std::pair{1, 2}, std::pair{2, 0}}) {
      if (v <= top) versions.push_back(v);
    }
    if (top > std::pair{2, 0}) versions.push_back(top);
  }
  std::sort(versions.begin(), versions.end());
  versions.erase(std::unique(versions.begin(), versions.end()), versions.end());
  p.opencl_c_versions = std::move(versions);
}
}  // namespace

OclDevice::OclDevice(const std::shared_ptr<PlatformAdapter>& platform, cl_device_id id,
                     std::size_t index)
    : platform_(platform), id_(id), index_(index) {
  auto& p = params_;
  const auto type = device_value<cl_device_type>(id, CL_DEVICE_TYPE);
  p.type = (type & CL_DEVICE_TYPE_GPU)   ? DeviceType::gpu
           : (type & CL_DEVICE_TYPE_CPU) ? DeviceType::cpu
                                         : DeviceType::other;
  p.name = device_string(id, CL_DEVICE_NAME);
  p.vendor = device_string(id, CL_DEVICE_VENDOR);
  p.driver_version = device_string(id, CL_DRIVER_VERSION);
  p.compute_units = device_value<cl_uint>(id, CL_DEVICE_MAX_COMPUTE_UNITS);
  p.local_mem_size = device_value<cl_ulong>(id, CL_DEVICE_LOCAL_MEM_SIZE);
  p.max_total_local_size = device_value<std::size_t>(id, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  p.max_local_sizes = device_sizes(id, CL_DEVICE_MAX_WORK_ITEM_SIZES);
  p.global_mem_size = device_value<cl_ulong>(id, CL_DEVICE_GLOBAL_MEM_SIZE);
  p.max_alloc_size = device_value<cl_ulong>(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  p.base_address_align = std::max<std::size_t>(
      1, device_value<cl_uint>(id, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8);  // reported in bits
  p.supports_float64 = device_value<cl_device_fp_config>(id, CL_DEVICE_DOUBLE_FP_CONFIG) != 0;
  const std::string extensions = device_string(id, CL_DEVICE_EXTENSIONS);
  p.supports_float16 = has_extension(extensions, "cl_khr_fp16");
  read_opencl_c(id, p);

  // OpenCL has no query for the number of work groups: the global size is bounded only by the
  // device's address space, so a dimension can hold that many groups of its largest size.
  const cl_uint address_bits = device_value<cl_uint>(id, CL_DEVICE_ADDRESS_BITS);
  const std::size_t max_global = address_bits >= 64 ? std::numeric_limits<std::size_t>::max()
                                                    : (std::size_t{1} << address_bits) - 1;
  for (std::size_t s : p.max_local_sizes)
    p.max_num_groups.push_back(max_global / std::max<std::size_t>(s, 1));

    // cl_khr_pci_bus_info (the standard query), else NVIDIA's own below.
#ifdef CL_DEVICE_PCI_BUS_INFO_KHR
  if (has_extension(extensions, "cl_khr_pci_bus_info")) {
    cl_device_pci_bus_info_khr info{};
    if (clGetDeviceInfo(id, CL_DEVICE_PCI_BUS_INFO_KHR, sizeof(info), &info, nullptr) ==
        CL_SUCCESS) {
      p.pci_bus_id = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", info.pci_domain, info.pci_bus,
                                 info.pci_device, info.pci_function);
    }
  }
#endif
  const bool nvidia = has_extension(extensions, "cl_nv_device_attribute_query");
  if (nvidia) {
    p.warp_size = device_value<cl_uint>(id, SKEIN_CL_DEVICE_WARP_SIZE_NV);
    p.compute_capability = std::pair<int, int>(
        static_cast<int>(device_value<cl_uint>(id, SKEIN_CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV)),
        static_cast<int>(device_value<cl_uint>(id, SKEIN_CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV)));
    bool ok_bus = false, ok_slot = false, ok_domain = false;
    const auto bus = device_value<cl_uint>(id, SKEIN_CL_DEVICE_PCI_BUS_ID_NV, &ok_bus);
    const auto slot = device_value<cl_uint>(id, SKEIN_CL_DEVICE_PCI_SLOT_ID_NV, &ok_slot);
    const auto domain = device_value<cl_uint>(id, SKEIN_CL_DEVICE_PCI_DOMAIN_ID_NV, &ok_domain);
    if (ok_bus && ok_slot && !p.pci_bus_id) {
      // NVIDIA reports the PCI device number as the slot; GPUs are function 0. Same form as the
      // CUDA backend's ids (lower-case hex), so the two APIs' views of one GPU compare equal.
      p.pci_bus_id = fmt::format("{:04x}:{:02x}:{:02x}.0", ok_domain ? domain : 0u, bus, slot);
    }
  } else if (has_extension(extensions, "cl_amd_device_attribute_query")) {
    p.warp_size = device_value<cl_uint>(id, SKEIN_CL_DEVICE_WAVEFRONT_WIDTH_AMD);
  } else {
    // CPUs run work items one at a time per lane of a loop; there is no lockstep group to use.
    p.warp_size = 1;
  }
  if (p.warp_size == 0) p.warp_size = 1;
  // Banks of local memory: 32 on current NVIDIA and AMD GPUs; on CPUs local memory is ordinary
  // cache-backed memory with no bank conflicts.
  p.local_mem_banks = p.type == DeviceType::gpu ? 32 : 1;
}

}  // namespace skein::detail::opencl

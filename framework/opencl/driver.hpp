// SPDX-License-Identifier: BSD-3-Clause
// The OpenCL API as Skein uses it: headers, and typed helpers for clGet*Info queries.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <string>
#include <vector>

// Vendor queries not in every header (cl_nv_device_attribute_query, cl_amd_device_attribute_query).
#define SKEIN_CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000
#define SKEIN_CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV 0x4001
#define SKEIN_CL_DEVICE_WARP_SIZE_NV 0x4003
#define SKEIN_CL_DEVICE_PCI_BUS_ID_NV 0x4008
#define SKEIN_CL_DEVICE_PCI_SLOT_ID_NV 0x4009
#define SKEIN_CL_DEVICE_PCI_DOMAIN_ID_NV 0x400A
#define SKEIN_CL_DEVICE_WAVEFRONT_WIDTH_AMD 0x4043
// OpenCL 3.0 queries (the headers are used at 1.2, CL_TARGET_OPENCL_VERSION): arrays of
// cl_name_version, whose version packs major << 22 | minor << 12 | patch.
#define SKEIN_CL_DEVICE_OPENCL_C_ALL_VERSIONS 0x1066
#define SKEIN_CL_DEVICE_OPENCL_C_FEATURES 0x106F

namespace skein::detail::opencl {

std::string platform_string(cl_platform_id platform, cl_platform_info what);
std::string device_string(cl_device_id device, cl_device_info what);

// A fixed-size device query; `ok` is false where the device does not answer it.
template <class T>
T device_value(cl_device_id device, cl_device_info what, bool* ok = nullptr) {
  T value{};
  const cl_int err = clGetDeviceInfo(device, what, sizeof(T), &value, nullptr);
  if (ok) *ok = err == CL_SUCCESS;
  return err == CL_SUCCESS ? value : T{};
}

std::vector<std::size_t> device_sizes(cl_device_id device, cl_device_info what);

// Keeps the ICD loader's variables (OCL_ICD_FILENAMES, OCL_ICD_VENDORS) as they were. Seen on a
// GPU machine (Ubuntu 24.04, PoCL and NVIDIA's ICD): after the first clGetPlatformIDs the
// process's OCL_ICD_FILENAMES was cut at its first ':', so that processes started afterwards (an
// mpirun, a child of the simulation code) no longer saw NVIDIA's platform. Put around the calls
// that load and initialise drivers.
class IcdEnvironmentGuard {
 public:
  IcdEnvironmentGuard();
  ~IcdEnvironmentGuard();
  IcdEnvironmentGuard(const IcdEnvironmentGuard&) = delete;
  IcdEnvironmentGuard& operator=(const IcdEnvironmentGuard&) = delete;

 private:
  struct Saved {
    const char* name;
    bool set = false;
    std::string value;
  };
  Saved saved_[2] = {{"OCL_ICD_FILENAMES"}, {"OCL_ICD_VENDORS"}};
};

}  // namespace skein::detail::opencl

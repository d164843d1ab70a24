// SPDX-License-Identifier: BSD-3-Clause
// DeviceParameters must equal what the vendor's own query reports: OpenCL's clGetDeviceInfo, and
// for CUDA the runtime API (an independent path from Skein's dlopen'ed driver API).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <skein/skein.hpp>

#include "backends.hpp"

#if SKEIN_HAS_OPENCL
#include <skein/opencl.hpp>
#endif
#if SKEIN_HAS_CUDA
#include <cuda_runtime_api.h>
#endif

namespace skein::test {
namespace {
namespace device_parameters_test {

class DeviceParams : public BackendTest {};

#if SKEIN_HAS_OPENCL
template <class T>
T cl_value(cl_device_id id, cl_device_info what) {
  T value{};
  EXPECT_EQ(clGetDeviceInfo(id, what, sizeof(T), &value, nullptr), CL_SUCCESS);
  return value;
}

void check_opencl(const Device& device) {
  // Find the cl_device_id independently: the same index in clGetDeviceIDs of the same platform.
  cl_uint nplat = 0;
  ASSERT_EQ(clGetPlatformIDs(0, nullptr, &nplat), CL_SUCCESS);
  std::vector<cl_platform_id> plats(nplat);
  ASSERT_EQ(clGetPlatformIDs(nplat, plats.data(), nullptr), CL_SUCCESS);
  const auto plat = plats.at(device.platform().index());
  cl_uint ndev = 0;
  ASSERT_EQ(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 0, nullptr, &ndev), CL_SUCCESS);
  std::vector<cl_device_id> devs(ndev);
  ASSERT_EQ(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, ndev, devs.data(), nullptr), CL_SUCCESS);
  const cl_device_id dev = devs.at(device.index());

  const auto& p = device.params();
  char name[1024] = {};
  ASSERT_EQ(clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(name), name, nullptr), CL_SUCCESS);
  EXPECT_EQ(p.name, std::string(name));
  EXPECT_EQ(p.compute_units, cl_value<cl_uint>(dev, CL_DEVICE_MAX_COMPUTE_UNITS));
  EXPECT_EQ(p.local_mem_size, cl_value<cl_ulong>(dev, CL_DEVICE_LOCAL_MEM_SIZE));
  EXPECT_EQ(p.max_total_local_size, cl_value<std::size_t>(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  EXPECT_EQ(p.global_mem_size, cl_value<cl_ulong>(dev, CL_DEVICE_GLOBAL_MEM_SIZE));
  EXPECT_EQ(p.max_alloc_size, cl_value<cl_ulong>(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE));
  const auto dims = cl_value<cl_uint>(dev, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS);
  std::vector<std::size_t> sizes(dims);
  ASSERT_EQ(clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_ITEM_SIZES, dims * sizeof(std::size_t),
                            sizes.data(), nullptr),
            CL_SUCCESS);
  EXPECT_EQ(p.max_local_sizes, sizes);
  EXPECT_EQ(p.max_num_groups.size(), dims);
  const auto type = cl_value<cl_device_type>(dev, CL_DEVICE_TYPE);
  EXPECT_EQ(p.type == DeviceType::gpu, (type & CL_DEVICE_TYPE_GPU) != 0);
  EXPECT_EQ(p.type == DeviceType::cpu, (type & CL_DEVICE_TYPE_CPU) != 0);
  EXPECT_EQ(p.supports_float64,
            cl_value<cl_device_fp_config>(dev, CL_DEVICE_DOUBLE_FP_CONFIG) != 0);
  EXPECT_EQ(p.base_address_align, cl_value<cl_uint>(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8);
  if (p.type == DeviceType::cpu) {
    EXPECT_EQ(p.warp_size, 1u);
  }
  // OpenCL C: the version the device reports is among the versions (ascending, no repeats); on
  // OpenCL 3.0 the versions and features are those of CL_DEVICE_OPENCL_C_ALL_VERSIONS and
  // CL_DEVICE_OPENCL_C_FEATURES.
  const auto text = [&](cl_device_info what) {
    std::size_t size = 0;
    EXPECT_EQ(clGetDeviceInfo(dev, what, 0, nullptr, &size), CL_SUCCESS);
    std::string s(size, '\0');
    EXPECT_EQ(clGetDeviceInfo(dev, what, size, s.data(), nullptr), CL_SUCCESS);
    return s;
  };
  int c_major = 0, c_minor = 0, major = 0, minor = 0;
  ASSERT_EQ(
      std::sscanf(text(CL_DEVICE_OPENCL_C_VERSION).c_str(), "OpenCL C %d.%d", &c_major, &c_minor),
      2);
  ASSERT_EQ(std::sscanf(text(CL_DEVICE_VERSION).c_str(), "OpenCL %d.%d", &major, &minor), 2);
  EXPECT_TRUE(std::is_sorted(p.opencl_c_versions.begin(), p.opencl_c_versions.end()));
  EXPECT_EQ(std::adjacent_find(p.opencl_c_versions.begin(), p.opencl_c_versions.end()),
            p.opencl_c_versions.end());
  EXPECT_NE(std::find(p.opencl_c_versions.begin(), p.opencl_c_versions.end(),
                      std::pair{c_major, c_minor}),
            p.opencl_c_versions.end());
  if (major >= 3) {
    struct NameVersion {
      cl_uint version;
      char name[64];
    };
    const auto list = [&](cl_device_info what) {
      std::size_t size = 0;
      EXPECT_EQ(clGetDeviceInfo(dev, what, 0, nullptr, &size), CL_SUCCESS);
      std::vector<NameVersion> out(size / sizeof(NameVersion));
      EXPECT_EQ(clGetDeviceInfo(dev, what, out.size() * sizeof(NameVersion), out.data(), nullptr),
                CL_SUCCESS);
      return out;
    };
    std::set<std::pair<int, int>> versions;
    for (const auto& v : list(0x1066 /* CL_DEVICE_OPENCL_C_ALL_VERSIONS */)) {
      versions.emplace(static_cast<int>(v.version >> 22),
                       static_cast<int>((v.version >> 12) & 0x3ff));
    }
    const std::vector<std::pair<int, int>> expected(versions.begin(), versions.end());
    EXPECT_EQ(p.opencl_c_versions, expected);
    std::vector<std::string> features;
    for (const auto& f : list(0x106F /* CL_DEVICE_OPENCL_C_FEATURES */))
      features.emplace_back(f.name);
    EXPECT_EQ(p.opencl_c_features, features);
  } else {
    EXPECT_TRUE(p.opencl_c_features.empty());
  }
  if (p.vendor.find("NVIDIA") != std::string::npos) {
    EXPECT_EQ(p.warp_size, 32u);
    EXPECT_TRUE(p.compute_capability.has_value());
    EXPECT_TRUE(p.pci_bus_id.has_value());
  }
}
#endif

#if SKEIN_HAS_CUDA
int cuda_attr(cudaDeviceAttr attr, int dev) {
  int value = -1;
  EXPECT_EQ(cudaDeviceGetAttribute(&value, attr, dev), cudaSuccess);
  return value;
}

void check_cuda(const Device& device) {
  const auto& p = device.params();
  ASSERT_TRUE(p.pci_bus_id.has_value());
  int dev = -1;
  ASSERT_EQ(cudaDeviceGetByPCIBusId(&dev, p.pci_bus_id->c_str()), cudaSuccess) << *p.pci_bus_id;
  EXPECT_EQ(p.type, DeviceType::gpu);
  EXPECT_EQ(p.compute_units, std::size_t(cuda_attr(cudaDevAttrMultiProcessorCount, dev)));
  EXPECT_EQ(p.local_mem_size, std::size_t(cuda_attr(cudaDevAttrMaxSharedMemoryPerBlock, dev)));
  EXPECT_EQ(p.max_total_local_size, std::size_t(cuda_attr(cudaDevAttrMaxThreadsPerBlock, dev)));
  EXPECT_EQ(p.warp_size, std::size_t(cuda_attr(cudaDevAttrWarpSize, dev)));
  EXPECT_EQ(p.max_local_sizes,
            (std::vector<std::size_t>{std::size_t(cuda_attr(cudaDevAttrMaxBlockDimX, dev)),
                                      std::size_t(cuda_attr(cudaDevAttrMaxBlockDimY, dev)),
                                      std::size_t(cuda_attr(cudaDevAttrMaxBlockDimZ, dev))}));
  EXPECT_EQ(p.max_num_groups,
            (std::vector<std::size_t>{std::size_t(cuda_attr(cudaDevAttrMaxGridDimX, dev)),
                                      std::size_t(cuda_attr(cudaDevAttrMaxGridDimY, dev)),
                                      std::size_t(cuda_attr(cudaDevAttrMaxGridDimZ, dev))}));
  ASSERT_TRUE(p.compute_capability.has_value());
  EXPECT_EQ(p.compute_capability->first, cuda_attr(cudaDevAttrComputeCapabilityMajor, dev));
  EXPECT_EQ(p.compute_capability->second, cuda_attr(cudaDevAttrComputeCapabilityMinor, dev));
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, dev), cudaSuccess);
  EXPECT_EQ(p.name, std::string(prop.name));
  EXPECT_EQ(p.global_mem_size, prop.totalGlobalMem);
  EXPECT_EQ(p.local_mem_banks, 32u);
  EXPECT_TRUE(p.opencl_c_versions.empty());
  EXPECT_TRUE(p.opencl_c_features.empty());
}
#endif

TEST_P(DeviceParams, EqualTheVendorsOwnQuery) {
  for (const auto& device : devices()) {
    SCOPED_TRACE(device.description());
    const auto& p = device.params();
    EXPECT_GT(p.compute_units, 0u);
    EXPECT_GT(p.max_total_local_size, 0u);
    EXPECT_GT(p.global_mem_size, 0u);
    EXPECT_GT(p.local_mem_banks, 0u);
    EXPECT_FALSE(p.max_local_sizes.empty());
#if SKEIN_HAS_OPENCL
    if (GetParam().api == ApiId::opencl) check_opencl(device);
#endif
#if SKEIN_HAS_CUDA
    if (GetParam().api == ApiId::cuda) check_cuda(device);
#endif
  }
}

// Where CUDA and NVIDIA's OpenCL both see the GPUs, they name each one by the same PCI bus id.
TEST(DeviceParams, CudaAndNvidiaOpenclAgreeOnPciBusIds) {
  std::set<std::string> cuda_ids, opencl_ids;
  for (const auto& b : backends()) {
    auto api = Api::from_id(b.api);
    for (const auto& d : Platform::from_index(api, b.platform_idx).devices()) {
      if (!d.params().pci_bus_id) continue;
      (b.api == ApiId::cuda ? cuda_ids : opencl_ids).insert(*d.params().pci_bus_id);
    }
  }
  if (cuda_ids.empty() || opencl_ids.empty()) {
    GTEST_SKIP() << "needs CUDA and NVIDIA's OpenCL on one machine";
  }
  EXPECT_EQ(cuda_ids, opencl_ids);
}

SKEIN_INSTANTIATE_BACKENDS(DeviceParams);

}  // namespace device_parameters_test
}  // namespace
}  // namespace skein::test

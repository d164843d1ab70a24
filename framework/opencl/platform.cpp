// SPDX-License-Identifier: BSD-3-Clause
#include "adapters.hpp"
#include "check.hpp"

namespace skein::detail::opencl {

OclPlatform::OclPlatform(std::shared_ptr<ApiAdapter> api, cl_platform_id id, std::size_t index)
    : api_(std::move(api)),
      id_(id),
      index_(index),
      name_(platform_string(id, CL_PLATFORM_NAME)),
      vendor_(platform_string(id, CL_PLATFORM_VENDOR)),
      version_(platform_string(id, CL_PLATFORM_VERSION)) {}

const std::vector<std::shared_ptr<DeviceAdapter>>& OclPlatform::devices() {
  std::call_once(once_, [this] {
    IcdEnvironmentGuard keep_environment;
    cl_uint count = 0;
    const cl_int err = clGetDeviceIDs(id_, CL_DEVICE_TYPE_ALL, 0, nullptr, &count);
    if (err == CL_DEVICE_NOT_FOUND || count == 0) return;
    SKEIN_CL_CHECK_RESULT(err, "clGetDeviceIDs", "OpenCL platform " + name_);
    std::vector<cl_device_id> ids(count);
    SKEIN_CL_CHECK(clGetDeviceIDs(id_, CL_DEVICE_TYPE_ALL, count, ids.data(), nullptr),
                   "OpenCL platform " + name_);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      devices_.push_back(std::make_shared<OclDevice>(shared_from_this(), ids[i], i));
    }
  });
  return devices_;
}

}  // namespace skein::detail::opencl

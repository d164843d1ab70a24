// SPDX-License-Identifier: BSD-3-Clause
#include "driver.hpp"

#include <cstdlib>

#include "check.hpp"

namespace skein::detail::opencl {

std::string platform_string(cl_platform_id platform, cl_platform_info what) {
  std::size_t size = 0;
  SKEIN_CL_CHECK(clGetPlatformInfo(platform, what, 0, nullptr, &size), "OpenCL platform");
  std::string value(size, '\0');
  SKEIN_CL_CHECK(clGetPlatformInfo(platform, what, size, value.data(), nullptr), "OpenCL platform");
  while (!value.empty() && value.back() == '\0') value.pop_back();
  return value;
}

std::string device_string(cl_device_id device, cl_device_info what) {
  std::size_t size = 0;
  SKEIN_CL_CHECK(clGetDeviceInfo(device, what, 0, nullptr, &size), "OpenCL device");
  std::string value(size, '\0');
  SKEIN_CL_CHECK(clGetDeviceInfo(device, what, size, value.data(), nullptr), "OpenCL device");
  while (!value.empty() && value.back() == '\0') value.pop_back();
  return value;
}

std::vector<std::size_t> device_sizes(cl_device_id device, cl_device_info what) {
  std::size_t size = 0;
  SKEIN_CL_CHECK(clGetDeviceInfo(device, what, 0, nullptr, &size), "OpenCL device");
  std::vector<std::size_t> values(size / sizeof(std::size_t));
  SKEIN_CL_CHECK(clGetDeviceInfo(device, what, size, values.data(), nullptr), "OpenCL device");
  return values;
}

IcdEnvironmentGuard::IcdEnvironmentGuard() {
  for (auto& s : saved_) {
    if (const char* v = std::getenv(s.name)) {
      s.set = true;
      s.value = v;  // a copy: the loader may write into the environment's own string
    }
  }
}

IcdEnvironmentGuard::~IcdEnvironmentGuard() {
  for (const auto& s : saved_) {
    const char* now = std::getenv(s.name);
    if (s.set && (!now || s.value != now)) setenv(s.name, s.value.c_str(), 1);
  }
}

}  // namespace skein::detail::opencl

// SPDX-License-Identifier: BSD-3-Clause
#include <fmt/format.h>

#include "adapters.hpp"
#include "check.hpp"

namespace skein::detail {

namespace opencl {

OclApi::OclApi() {
  IcdEnvironmentGuard keep_environment;
  cl_uint count = 0;
  const cl_int err = clGetPlatformIDs(0, nullptr, &count);
  if (err != CL_SUCCESS || count == 0) {
    reason_ = fmt::format(
        "no OpenCL platform is installed (clGetPlatformIDs returned {} = {}); install a driver, "
        "e.g. Debian's pocl-opencl-icd, and check /etc/OpenCL/vendors",
        error_name(err), err);
    return;
  }
  ids_.resize(count);
  if (const cl_int e = clGetPlatformIDs(count, ids_.data(), nullptr); e != CL_SUCCESS) {
    reason_ = fmt::format("clGetPlatformIDs returned {} = {}", error_name(e), e);
    return;
  }
  available_ = true;
  version_ = platform_string(ids_.front(), CL_PLATFORM_VERSION);
}

const std::vector<std::shared_ptr<PlatformAdapter>>& OclApi::platforms() {
  std::call_once(once_, [this] {
    for (std::size_t i = 0; i < ids_.size(); ++i) {
      platforms_.push_back(std::make_shared<OclPlatform>(shared_from_this(), ids_[i], i));
    }
  });
  return platforms_;
}

}  // namespace opencl

std::shared_ptr<ApiAdapter> make_opencl_api_adapter() { return std::make_shared<opencl::OclApi>(); }

}  // namespace skein::detail

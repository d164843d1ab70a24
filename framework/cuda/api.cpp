// SPDX-License-Identifier: BSD-3-Clause
#include <mutex>

#include "adapters.hpp"

namespace skein::detail {

namespace {

class CudaApiAdapter final : public ApiAdapter,
                             public std::enable_shared_from_this<CudaApiAdapter> {
 public:
  ApiId id() const override { return ApiId::cuda; }
  bool available() const override { return cuda_driver_status().available; }
  std::string unavailable_reason() const override {
    return cuda_driver_status().unavailable_reason;
  }
  std::string version() const override {
    const CudaDriverStatus& status = cuda_driver_status();
    if (status.version == 0) return {};
    return "CUDA driver " + cuda_version_string(status.version);
  }

  // None when CUDA is unavailable: the front-end reports the reason from unavailable_reason().
  const std::vector<std::shared_ptr<PlatformAdapter>>& platforms() override {
    std::call_once(discovered_, [this] {
      const CudaDriverStatus& status = cuda_driver_status();
      if (status.available) {
        platforms_.push_back(make_cuda_platform(weak_from_this(), status.version));
      }
    });
    return platforms_;
  }

 private:
  std::once_flag discovered_;
  std::vector<std::shared_ptr<PlatformAdapter>> platforms_;
};

}  // namespace

std::shared_ptr<ApiAdapter> make_cuda_api_adapter() { return std::make_shared<CudaApiAdapter>(); }

}  // namespace skein::detail

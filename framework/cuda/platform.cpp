// SPDX-License-Identifier: BSD-3-Clause
#include <mutex>

#include "adapters.hpp"

namespace skein::detail {

namespace {

// CUDA has no platforms; Skein presents one that holds every visible device.
class CudaPlatformAdapter final : public PlatformAdapter,
                                  public std::enable_shared_from_this<CudaPlatformAdapter> {
 public:
  CudaPlatformAdapter(std::weak_ptr<ApiAdapter> api, int driver_version)
      : api_(std::move(api)),
        driver_version_(driver_version),
        version_(cuda_version_string(driver_version)) {}

  std::shared_ptr<ApiAdapter> api() const override { return api_.lock(); }
  std::size_t index() const override { return 0; }
  const std::string& name() const override { return name_; }
  const std::string& vendor() const override { return vendor_; }
  const std::string& version() const override { return version_; }

  const std::vector<std::shared_ptr<DeviceAdapter>>& devices() override {
    // Devices point back at us, which needs shared_from_this: discovered on first use, not in
    // the constructor. A failed discovery throws and is tried again on the next call.
    std::call_once(discovered_, [this] {
      int count = 0;
      SKEIN_CU_CHECK(cuDeviceGetCount, (&count), "the CUDA platform");
      std::vector<std::shared_ptr<DeviceAdapter>> devices;
      for (int i = 0; i < count; ++i) {
        CUdevice device = 0;
        SKEIN_CU_CHECK(cuDeviceGet, (&device, i), fmt::format("CUDA device {}", i));
        devices.push_back(make_cuda_device(weak_from_this(), static_cast<std::size_t>(i), device,
                                           driver_version_));
      }
      devices_ = std::move(devices);
    });
    return devices_;
  }

 private:
  std::weak_ptr<ApiAdapter> api_;
  int driver_version_;
  std::string name_ = "CUDA";
  std::string vendor_ = "NVIDIA Corporation";
  std::string version_;
  std::once_flag discovered_;
  std::vector<std::shared_ptr<DeviceAdapter>> devices_;
};

}  // namespace

std::shared_ptr<PlatformAdapter> make_cuda_platform(std::weak_ptr<ApiAdapter> api,
                                                    int driver_version) {
  return std::make_shared<CudaPlatformAdapter>(std::move(api), driver_version);
}

}  // namespace skein::detail

// SPDX-License-Identifier: BSD-3-Clause
// Uses the framework of an installed Skein without MPI: on the first OpenCL device, y = a*x + y
// with a built-in elementwise kernel and a sum reduction, each checked against the host.
// Exit status: 0 on success (or when OpenCL is not available and not required), 1 on failure.
#include <skein/framework.hpp>

#ifdef MPI_VERSION
#error "<skein/framework.hpp> included <mpi.h>"
#endif

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

int main() {
  try {
    const char* expect = std::getenv("SKEIN_TEST_EXPECT_APIS");
    const bool need_opencl =
        expect != nullptr &&
        (std::string(",") + expect + ",").find(",opencl,") != std::string::npos;
    bool opencl = false;
    for (const skein::ApiStatus& s : skein::Api::status()) {
      if (s.id == skein::ApiId::opencl) opencl = s.available;
    }
    if (!opencl) {
      if (need_opencl) {
        std::cerr << "FAIL: OpenCL is listed in SKEIN_TEST_EXPECT_APIS but is not available\n";
        return 1;
      }
      std::cout << "OpenCL is not available: nothing to run\n";
      return 0;
    }
    std::vector<skein::Device> devices;
    for (const skein::Platform& platform : skein::Api::from_id(skein::ApiId::opencl).platforms()) {
      devices = platform.devices();
      if (!devices.empty()) break;
    }
    if (devices.empty()) {
      std::cerr << "FAIL: OpenCL has no devices\n";
      return 1;
    }
    const skein::Context context = skein::Context::from_devices(devices.front());
    const skein::Queue queue(context);
    const std::size_t n = 100003;  // odd: the kernels' tails run too
    std::vector<float> x(n), y(n);
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(i % 113) - 56.0f;
      y[i] = 0.25f * static_cast<float>(i % 7);
    }
    const float a = 1.5f;
    skein::Array dx = skein::Array::from_host(queue, x);
    skein::Array dy = skein::Array::from_host(queue, y);
    skein::axpy(queue, a, dx, dy, dy);  // in place
    const std::vector<float> got = dy.get<float>();
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const float want = a * x[i] + y[i];
      if (got[i] != want) {
        std::cerr << "FAIL: axpy element " << i << " is " << got[i] << ", expected " << want
                  << "\n";
        return 1;
      }
      sum += want;
    }
    const double device_sum = skein::sum(queue, dy).get<float>().at(0);
    if (std::abs(device_sum - sum) > 1e-4 * (std::abs(sum) + n)) {
      std::cerr << "FAIL: sum is " << device_sum << ", expected " << sum << "\n";
      return 1;
    }
    std::cout << "axpy and sum of " << n << " floats on " << context.device(0).name()
              << " without MPI: OK\n";
    return 0;
  } catch (const skein::Error& e) {
    std::cerr << "FAIL: skein::Error: " << e.what() << "\n";
    return 1;
  }
}

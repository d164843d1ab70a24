// SPDX-License-Identifier: BSD-3-Clause
// Uses an installed Skein: prints what the machine offers, then round-trips data through a device.
// Exit status: 0 on success (or when OpenCL is not available and not required), 1 on failure.
#include <skein/skein.hpp>

#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

namespace {

// SKEIN_TEST_EXPECT_APIS (a comma list of API shortcuts) names APIs that must be available.
bool required(std::string_view shortcut) {
  const char* env = std::getenv("SKEIN_TEST_EXPECT_APIS");
  if (env == nullptr) return false;
  const std::string list = std::string(",") + env + ",";
  return list.find(std::string(",") + std::string(shortcut) + ",") != std::string::npos;
}

}  // namespace

int main() {
  try {
    std::cout << "Skein " << SKEIN_VERSION_STRING << " (installed package)\n";
    bool opencl_available = false;
    for (const skein::ApiStatus& s : skein::Api::status()) {
      std::cout << "  " << skein::name(s.id) << ": compiled in: " << (s.compiled_in ? "yes" : "no")
                << ", available: " << (s.available ? "yes" : "no");
      if (s.available) {
        std::cout << " (" << s.version << ")";
      } else {
        std::cout << " (" << s.reason << ")";
      }
      std::cout << "\n";
      if (s.id == skein::ApiId::opencl) opencl_available = s.available;
    }

    if (!opencl_available) {
      if (required("opencl")) {
        std::cerr << "FAIL: OpenCL is listed in SKEIN_TEST_EXPECT_APIS but is not available\n";
        return 1;
      }
      std::cout << "OpenCL is not available: skipping the device round trip\n";
      return 0;
    }

    const skein::Api api = skein::Api::from_id(skein::ApiId::opencl);
    std::vector<skein::Device> devices;
    for (const skein::Platform& platform : api.platforms()) {
      devices = platform.devices();
      if (!devices.empty()) break;
    }
    if (devices.empty()) {
      std::cerr << "FAIL: OpenCL is available but has no devices\n";
      return 1;
    }
    const skein::Context context = skein::Context::from_devices(devices.front());
    const skein::Queue queue(context);
    std::cout << "device: " << context.device(0).description() << "\n";

    std::vector<float> host(1000);
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = 0.5f * static_cast<float>(i) - 7.0f;
    const skein::Array array = skein::Array::from_host(queue, host);
    const std::vector<float> back = array.get<float>();

    if (back != host) {
      std::size_t first = 0;
      while (first < host.size() && first < back.size() && back[first] == host[first]) ++first;
      std::cerr << "FAIL: round trip mismatch (sizes " << host.size() << " and " << back.size()
                << ", first difference at element " << first << ")\n";
      return 1;
    }
    std::cout << "round trip of " << host.size() << " floats through "
              << array.data().context().device(0).name() << ": OK\n";
    return 0;
  } catch (const skein::Error& e) {
    std::cerr << "FAIL: skein::Error: " << e.what() << "\n";
    return 1;
  }
}

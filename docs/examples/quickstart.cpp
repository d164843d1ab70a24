// SPDX-License-Identifier: BSD-3-Clause
// The smallest Skein program: pick a device, copy data to it and back.
// Built by the `docs-examples` target (docs/CMakeLists.txt); quoted in docs/guide.md.
#include <skein/skein.hpp>

#include <iostream>
#include <vector>

int main() try {
  auto apis = skein::Api::all_available();  // CUDA first, then OpenCL
  if (apis.empty()) {
    std::cerr << "no GPGPU API here; run skein-info to see why\n";
    return 1;
  }
  auto ctx = skein::Context::from_criteria(apis.front(), 1);  // one device
  skein::Queue queue(ctx);
  std::vector<float> host(1000, 1.5f);
  auto a = skein::Array::from_host(queue, host);  // host -> device
  auto back = a.get<float>();                     // device -> host
  std::cout << ctx.device(0).description() << ": " << (back == host ? "ok" : "mismatch") << "\n";
  return back == host ? 0 : 1;
} catch (const skein::Error& e) {  // every Skein failure is a skein::Error
  std::cerr << e.what() << "\n";
  return 1;
}

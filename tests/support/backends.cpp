// SPDX-License-Identifier: BSD-3-Clause
#include "backends.hpp"

#include <cstring>

namespace skein::test {

const std::vector<Backend>& backends() {
  static const std::vector<Backend> all = [] {
    std::vector<Backend> result;
    for (const auto& api : Api::all_available()) {
      for (const auto& platform : api.platforms()) {
        if (platform.devices().empty()) continue;
        result.push_back({api.id(), platform.index(),
                          std::string(api.shortcut()) + "_" + std::to_string(platform.index())});
      }
    }
    return result;
  }();
  return all;
}

Context BackendTest::context(std::size_t n) {
  auto all = devices();
  if (all.size() < n) throw std::logic_error("test bug: use SKEIN_NEED_DEVICES before context(n)");
  all.erase(all.begin() + static_cast<std::ptrdiff_t>(n), all.end());
  return Context::from_devices(all);
}

std::vector<std::byte> random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(0, 255);
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(dist(gen));
  return out;
}

}  // namespace skein::test

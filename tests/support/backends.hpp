// SPDX-License-Identifier: BSD-3-Clause
// The test suite runs once per backend present: every (API, platform) with at least one device.
#pragma once

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>
#include <random>
#include <set>
#include <skein/skein.hpp>
#include <string>
#include <vector>

namespace skein::test {

struct Backend {
  ApiId api;
  std::size_t platform_idx;
  std::string label;  // "cuda_0", "opencl_1": used in test names
};

// Every backend present on this machine (discovered once).
const std::vector<Backend>& backends();

// Printable name for value-parameterised tests.
struct BackendName {
  std::string operator()(const testing::TestParamInfo<Backend>& info) const {
    return info.param.label;
  }
};

class BackendTest : public testing::TestWithParam<Backend> {
 protected:
  Api api() const { return Api::from_id(GetParam().api); }
  Platform platform() const { return Platform::from_index(api(), GetParam().platform_idx); }
  std::vector<Device> devices() const { return platform().devices(); }
  // A context over the first `n` devices; skips the test when the platform has fewer.
  Context context(std::size_t n = 1);
};

// Random bytes from a seeded generator (fresh data per call).
std::vector<std::byte> random_bytes(std::size_t n, std::uint32_t seed);

template <class T>
std::vector<T> random_values(std::size_t n, std::uint32_t seed) {
  auto bytes = random_bytes(n * sizeof(T), seed);
  std::vector<T> out(n);
  if (n) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

// Finite values in [-1000, 1000) (random bytes may form NaNs, which never compare equal).
template <class T>
std::vector<T> random_reals(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1000.0, 1000.0);
  std::vector<T> out(n);
  for (auto& v : out) v = static_cast<T>(dist(gen));
  return out;
}

}  // namespace skein::test

// Skips the current test when the backend's platform has fewer than n devices.
#define SKEIN_NEED_DEVICES(n)                                                                   \
  do {                                                                                          \
    if (devices().size() < (n)) GTEST_SKIP() << "needs " << (n) << " devices on this platform"; \
  } while (0)

#define SKEIN_INSTANTIATE_BACKENDS(suite)                                                 \
  INSTANTIATE_TEST_SUITE_P(Backends, suite, testing::ValuesIn(::skein::test::backends()), \
                           ::skein::test::BackendName())

// SPDX-License-Identifier: BSD-3-Clause
// Test main: makes sure the backends the environment promises are there, so that a run can never
// pass by finding nothing to test.
//   SKEIN_TEST_EXPECT_APIS=opencl,cuda   these APIs must be available with a device
//   SKEIN_TEST_MIN_DEVICES=opencl=4      some platform of that API has at least that many devices
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "backends.hpp"

namespace {
namespace test_main {

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) parts.push_back(item);
  }
  return parts;
}

std::size_t most_devices(skein::ApiId id) {
  std::size_t most = 0;
  for (const auto& b : skein::test::backends()) {
    if (b.api != id) continue;
    auto api = skein::Api::from_id(id);
    most = std::max(most, skein::Platform::from_index(api, b.platform_idx).devices().size());
  }
  return most;
}

std::string g_initial_icd_filenames = "(unset)";

// Processes the simulation code starts later (mpirun, its own children) must find the same OpenCL
// drivers: discovering the platforms must not change the loader's variables.
TEST(Environment, OpenclDiscoveryLeavesTheLoaderVariablesAlone) {
  (void)skein::test::backends();
  const char* now = std::getenv("OCL_ICD_FILENAMES");
  EXPECT_EQ(now ? std::string(now) : std::string("(unset)"), g_initial_icd_filenames);
}

TEST(Environment, ExpectedBackendsArePresent) {
  const char* expect = std::getenv("SKEIN_TEST_EXPECT_APIS");
  const char* minimum = std::getenv("SKEIN_TEST_MIN_DEVICES");
  if (!expect && !minimum)
    GTEST_SKIP() << "neither SKEIN_TEST_EXPECT_APIS nor SKEIN_TEST_MIN_DEVICES is set";
  for (const auto& shortcut : split(expect ? expect : "")) {
    EXPECT_GE(most_devices(skein::api_id_from_shortcut(shortcut)), 1u)
        << shortcut << " must be available with at least one device";
  }
  for (const auto& item : split(minimum ? minimum : "")) {
    const auto eq = item.find('=');
    ASSERT_NE(eq, std::string::npos) << "SKEIN_TEST_MIN_DEVICES takes API=N items, got " << item;
    const auto id = skein::api_id_from_shortcut(item.substr(0, eq));
    const std::size_t n = std::stoul(item.substr(eq + 1));
    EXPECT_GE(most_devices(id), n)
        << item.substr(0, eq) << " must have a platform with at least " << n << " devices";
  }
}

}  // namespace test_main
}  // namespace

int main(int argc, char** argv) {
  if (const char* v = std::getenv("OCL_ICD_FILENAMES")) test_main::g_initial_icd_filenames = v;
  // Compiled kernels go to a cache of this run's own, never the user's.
  std::string own_cache;
  if (!std::getenv("SKEIN_CACHE_DIR")) {
    char dir[] = "/tmp/skein-test-cache-XXXXXX";
    if (mkdtemp(dir)) {
      own_cache = dir;
      setenv("SKEIN_CACHE_DIR", dir, 1);
    }
  }
  testing::InitGoogleTest(&argc, argv);
  for (const auto& b : skein::test::backends()) {
    auto api = skein::Api::from_id(b.api);
    auto platform = skein::Platform::from_index(api, b.platform_idx);
    std::printf("[ backend  ] %s: %s, %zu device(s)\n", b.label.c_str(), platform.name().c_str(),
                platform.devices().size());
  }
  const int result = RUN_ALL_TESTS();
  if (!own_cache.empty()) std::filesystem::remove_all(own_cache);
  return result;
}

// Test main: makes sure the backends the environment promises are there, so that a run can never
// pass by finding nothing to test.
//   SKEIN_TEST_EXPECT_APIS=opencl,cuda   these APIs must be available
//   SKEIN_TEST_MIN_DEVICES=4             some platform of each expected API has this many devices
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "backends.hpp"

namespace {

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) parts.push_back(item);
  }
  return parts;
}

TEST(Environment, ExpectedBackendsArePresent) {
  const char* expect = std::getenv("SKEIN_TEST_EXPECT_APIS");
  const char* min_devices_env = std::getenv("SKEIN_TEST_MIN_DEVICES");
  const std::size_t min_devices = min_devices_env ? std::stoul(min_devices_env) : 1;
  if (!expect) GTEST_SKIP() << "SKEIN_TEST_EXPECT_APIS is not set";
  for (const auto& shortcut : split(expect)) {
    const auto id = skein::api_id_from_shortcut(shortcut);
    std::size_t most = 0;
    for (const auto& b : skein::test::backends()) {
      if (b.api != id) continue;
      auto api = skein::Api::from_id(id);
      most = std::max(most, skein::Platform::from_index(api, b.platform_idx).devices().size());
    }
    EXPECT_GE(most, min_devices) << shortcut << " must be available with at least " << min_devices
                                 << " device(s) on one platform";
  }
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  for (const auto& b : skein::test::backends()) {
    auto api = skein::Api::from_id(b.api);
    auto platform = skein::Platform::from_index(api, b.platform_idx);
    std::printf("[ backend  ] %s: %s, %zu device(s)\n", b.label.c_str(), platform.name().c_str(),
                platform.devices().size());
  }
  return RUN_ALL_TESTS();
}

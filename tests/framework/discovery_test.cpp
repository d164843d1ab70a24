// SPDX-License-Identifier: BSD-3-Clause
// API, platform and device discovery, masks and selection.
#include <gtest/gtest.h>

#include <skein/skein.hpp>

#include "backends.hpp"

namespace skein::test {
namespace {
namespace discovery_test {

TEST(Api, StatusListsEveryApiWithAReasonWhenUnavailable) {
  const auto status = Api::status();
  ASSERT_EQ(status.size(), 2u);
  EXPECT_EQ(status[0].id, ApiId::cuda);
  EXPECT_EQ(status[1].id, ApiId::opencl);
  for (const auto& s : status) {
    if (s.available) {
      EXPECT_TRUE(s.compiled_in);
      EXPECT_FALSE(s.version.empty());
    } else {
      EXPECT_FALSE(s.reason.empty()) << shortcut(s.id);
    }
  }
}

TEST(Api, UnavailableApiRaisesWithTheReason) {
  for (const auto& s : Api::status()) {
    if (s.available) continue;
    try {
      Api::from_id(s.id);
      FAIL() << "from_id of an unavailable API must throw";
    } catch (const ApiUnavailableError& e) {
      EXPECT_NE(std::string(e.what()).find(s.reason), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("skein-info"), std::string::npos) << e.what();
    }
    EXPECT_THROW(Api::all_by_shortcut(shortcut(s.id)), ApiUnavailableError);
  }
}

TEST(Api, ShortcutsParseAndUnknownOnesAreRejected) {
  EXPECT_EQ(api_id_from_shortcut("cuda"), ApiId::cuda);
  EXPECT_EQ(api_id_from_shortcut("OpenCL"), ApiId::opencl);
  try {
    api_id_from_shortcut("vulkan");
    FAIL();
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("vulkan"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("cuda, opencl"), std::string::npos);
  }
  EXPECT_EQ(Api::all_by_shortcut().size(), Api::all_available().size());
}

class Discovery : public BackendTest {};

TEST_P(Discovery, PlatformsAndDevicesAreStableAndIndexed) {
  const auto platforms = Platform::all(api());
  ASSERT_GT(platforms.size(), GetParam().platform_idx);
  for (std::size_t i = 0; i < platforms.size(); ++i) {
    EXPECT_EQ(platforms[i].index(), i);
    EXPECT_EQ(Platform::from_index(api(), i), platforms[i]);
    EXPECT_FALSE(platforms[i].name().empty());
    EXPECT_EQ(platforms[i].api(), api());
  }
  const auto devs = devices();
  ASSERT_FALSE(devs.empty());
  for (std::size_t i = 0; i < devs.size(); ++i) {
    EXPECT_EQ(devs[i].index(), i);
    EXPECT_EQ(Device::from_index(platform(), i), devs[i]);
    EXPECT_EQ(devs[i].platform(), platform());
    EXPECT_FALSE(devs[i].name().empty());
    EXPECT_NE(devs[i].description().find(devs[i].name()), std::string::npos);
  }
  EXPECT_THROW(Platform::from_index(api(), platforms.size()), LogicError);
  EXPECT_THROW(Device::from_index(platform(), devs.size()), LogicError);
}

TEST_P(Discovery, MasksIncludeAndExclude) {
  const auto p = platform();
  const auto name = p.name();
  // A literal prefix of the name as a regex (escape nothing: take letters only).
  std::string prefix;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) break;
    prefix += c;
  }
  ASSERT_FALSE(prefix.empty());
  auto by_include = Platform::all_by_masks(api(), {prefix});
  EXPECT_NE(std::find(by_include.begin(), by_include.end(), p), by_include.end());
  auto by_exclude = Platform::all_by_masks(api(), {}, {prefix});
  EXPECT_EQ(std::find(by_exclude.begin(), by_exclude.end(), p), by_exclude.end());
  EXPECT_TRUE(Platform::all_by_masks(api(), {"^no such platform$"}).empty());

  const auto dev_name = devices().front().name();
  EXPECT_EQ(Device::all_by_masks(p, {}, {}, false, true).size(), devices().size());
  EXPECT_TRUE(Device::all_by_masks(p, {}, {"."}, false, true).empty());
  // unique_only keeps one device per name.
  auto unique = Device::all_by_masks(p, {}, {}, true, true);
  std::set<std::string> names;
  for (const auto& d : devices()) names.insert(d.name());
  EXPECT_EQ(unique.size(), names.size());
  EXPECT_THROW(Platform::all_by_masks(api(), {"("}), LogicError);
  EXPECT_THROW(Device::all_by_masks(p, {"[unclosed"}), LogicError);
}

TEST_P(Discovery, SelectDevicesHonoursQuantityAndFilters) {
  const std::size_t n = devices().size();
  DeviceFilter filter;
  filter.include_pure_parallel_devices = true;
  filter.platform_include_masks = {"^" + std::string(platform().name().substr(0, 3))};
  const auto found = platforms_and_devices_by_mask(api(), n, filter);
  ASSERT_FALSE(found.empty());
  bool ours = false;
  for (const auto& [plat, devs] : found) {
    EXPECT_GE(devs.size(), n);
    ours = ours || plat == platform();
  }
  EXPECT_TRUE(ours);
  EXPECT_EQ(select_devices(api(), 1, filter).size(), 1u);
  EXPECT_THROW(select_devices(api(), 100000, filter), LogicError);
  EXPECT_THROW(select_devices(api(), 0, filter), LogicError);
  filter.device_include_masks = {"^no such device$"};
  EXPECT_THROW(select_devices(api(), 1, filter), LogicError);
}

TEST_P(Discovery, ContextFromDevicesAndCriteria) {
  auto ctx = Context::from_devices(devices().front());
  EXPECT_EQ(ctx.num_devices(), 1u);
  EXPECT_EQ(ctx.devices().front(), devices().front());
  EXPECT_EQ(ctx.api(), api());
  EXPECT_EQ(ctx.platform(), platform());
  EXPECT_THROW(ctx.device(1), LogicError);
  EXPECT_THROW(Context::from_devices(std::span<const Device>{}), LogicError);
  std::vector<Device> twice{devices().front(), devices().front()};
  EXPECT_THROW(Context::from_devices(twice), LogicError);
  DeviceFilter filter;
  filter.include_pure_parallel_devices = true;
  auto by_criteria = Context::from_criteria(api(), 1, filter);
  EXPECT_EQ(by_criteria.num_devices(), 1u);
  ctx.deactivate();
}

TEST_P(Discovery, QueuesOverSomeOrAllDevices) {
  SKEIN_NEED_DEVICES(2);
  auto ctx = context(2);
  Queue all(ctx);
  EXPECT_EQ(all.device_idxs(), (std::vector<std::size_t>{0, 1}));
  Queue second(ctx, {1});
  EXPECT_FALSE(second.has_device(0));
  EXPECT_TRUE(second.has_device(1));
  EXPECT_THROW(second.device_queue(0), LogicError);
  EXPECT_THROW(Queue(ctx, {2}), LogicError);
  EXPECT_THROW(Queue(ctx, {1, 1}), LogicError);
  EXPECT_THROW(Queue(ctx, std::vector<std::size_t>{}), LogicError);
  all.synchronize();
  second.synchronize(1);
}

SKEIN_INSTANTIATE_BACKENDS(Discovery);

}  // namespace discovery_test
}  // namespace
}  // namespace skein::test

// SPDX-License-Identifier: BSD-3-Clause
#include "skein/platform.hpp"

#include <regex>

#include "skein/detail/adapter.hpp"
#include "skein/detail/errors.hpp"
#include "masks.hpp"
#include "skein/device.hpp"

namespace skein {

std::vector<Platform> Platform::all(const Api& api) {
  std::vector<Platform> result;
  for (const auto& p : api.adapter()->platforms()) result.emplace_back(p);
  return result;
}

std::vector<Platform> Platform::all_by_masks(const Api& api,
                                             const std::vector<std::string>& include_masks,
                                             const std::vector<std::string>& exclude_masks) {
  const detail::NameMasks masks(include_masks, exclude_masks, "Platform::all_by_masks");
  std::vector<Platform> result;
  for (const auto& p : all(api)) {
    if (masks.matches(p.name())) result.push_back(p);
  }
  return result;
}

Platform Platform::from_index(const Api& api, std::size_t platform_idx) {
  const auto& platforms = api.adapter()->platforms();
  if (platform_idx >= platforms.size()) {
    detail::raise_in(SKEIN_HERE, "Platform::from_index", "Run skein-info to list the platforms.",
                     "platform index {} is out of range: {} has {} platform(s)", platform_idx,
                     api.name(), platforms.size());
  }
  return Platform(platforms[platform_idx]);
}

Api Platform::api() const { return Api(adapter_->api()); }
std::size_t Platform::index() const { return adapter_->index(); }
const std::string& Platform::name() const { return adapter_->name(); }
const std::string& Platform::vendor() const { return adapter_->vendor(); }
const std::string& Platform::version() const { return adapter_->version(); }
std::vector<Device> Platform::devices() const { return Device::all(*this); }

}  // namespace skein

// SPDX-License-Identifier: BSD-3-Clause
// Platforms: an OpenCL term; CUDA has one platform holding all its devices.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "skein/api.hpp"
#include "skein/export.hpp"

namespace skein {

namespace detail {
class PlatformAdapter;
}
class Device;

// One platform of an API.
// Threads: immutable once discovered (its devices are found once, under std::call_once), so a
// Platform and its copies may be used from any number of threads at once.
class SKEIN_EXPORT Platform {
 public:
  static std::vector<Platform> all(const Api& api);
  // Platforms whose name matches one of the include regexes (all, if none given) and none of the
  // exclude regexes.
  static std::vector<Platform> all_by_masks(const Api& api,
                                            const std::vector<std::string>& include_masks = {},
                                            const std::vector<std::string>& exclude_masks = {});
  static Platform from_index(const Api& api, std::size_t platform_idx);

  Api api() const;
  std::size_t index() const;
  const std::string& name() const;
  const std::string& vendor() const;
  const std::string& version() const;
  std::vector<Device> devices() const;

  friend bool operator==(const Platform& a, const Platform& b) { return a.adapter_ == b.adapter_; }

  const std::shared_ptr<detail::PlatformAdapter>& adapter() const { return adapter_; }
  explicit Platform(std::shared_ptr<detail::PlatformAdapter> adapter)
      : adapter_(std::move(adapter)) {}

 private:
  std::shared_ptr<detail::PlatformAdapter> adapter_;
};

}  // namespace skein

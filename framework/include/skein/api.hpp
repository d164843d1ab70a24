// SPDX-License-Identifier: BSD-3-Clause
// GPGPU APIs (CUDA, OpenCL), discovered at run time.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "skein/export.hpp"

namespace skein {

namespace detail {
class ApiAdapter;
}
class Platform;

enum class ApiId { cuda, opencl };

// "cuda" or "opencl": the name used on command lines and in SKEIN_API.
SKEIN_EXPORT std::string_view shortcut(ApiId id);
// "CUDA" or "OpenCL".
SKEIN_EXPORT std::string_view name(ApiId id);
// Parses a shortcut (case-insensitive); throws LogicError naming the valid ones.
SKEIN_EXPORT ApiId api_id_from_shortcut(std::string_view shortcut);
SKEIN_EXPORT const std::vector<ApiId>& all_api_ids();

// Whether an API was compiled in and can be used here, and if not, why.
struct ApiStatus {
  ApiId id{};
  bool compiled_in = false;
  bool available = false;
  std::string version{};  // driver / platform-loader version when available
  std::string reason{};   // why it is unavailable
};

// One GPGPU API of this process.
// Threads: immutable once discovered (each API's adapter and its platforms are made once, under
// std::call_once), so an Api and its copies may be used from any number of threads at once.
class SKEIN_EXPORT Api {
 public:
  // APIs usable on this machine, CUDA first.
  static std::vector<Api> all_available();
  // One API by shortcut (throws ApiUnavailableError if it is not usable), or all available ones.
  static std::vector<Api> all_by_shortcut(std::optional<std::string_view> shortcut = std::nullopt);
  // Throws ApiUnavailableError with the reason when the API is not usable here.
  static Api from_id(ApiId id);
  // The status of every API Skein knows, available or not.
  static std::vector<ApiStatus> status();

  ApiId id() const;
  std::string_view shortcut() const { return skein::shortcut(id()); }
  std::string_view name() const { return skein::name(id()); }
  std::string version() const;
  std::vector<Platform> platforms() const;

  friend bool operator==(const Api& a, const Api& b) { return a.id() == b.id(); }

  const std::shared_ptr<detail::ApiAdapter>& adapter() const { return adapter_; }
  explicit Api(std::shared_ptr<detail::ApiAdapter> adapter) : adapter_(std::move(adapter)) {}

 private:
  std::shared_ptr<detail::ApiAdapter> adapter_;
};

}  // namespace skein

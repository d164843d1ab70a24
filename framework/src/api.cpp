// SPDX-License-Identifier: BSD-3-Clause
#include "skein/api.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <mutex>

#include "skein/detail/adapter.hpp"
#include "skein/detail/errors.hpp"
#include "skein/config.hpp"
#include "skein/platform.hpp"

namespace skein {

std::string_view shortcut(ApiId id) { return id == ApiId::cuda ? "cuda" : "opencl"; }
std::string_view name(ApiId id) { return id == ApiId::cuda ? "CUDA" : "OpenCL"; }

const std::vector<ApiId>& all_api_ids() {
  static const std::vector<ApiId> ids{ApiId::cuda, ApiId::opencl};
  return ids;
}

ApiId api_id_from_shortcut(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (ApiId id : all_api_ids()) {
    if (lower == shortcut(id)) return id;
  }
  detail::raise_in(SKEIN_HERE, "api_id_from_shortcut", "Use one of: cuda, opencl.",
                   "unknown API '{}'", text);
}

namespace detail {

namespace {
// Stands in for a backend that this build does not contain.
class NotCompiledApiAdapter final : public ApiAdapter {
 public:
  explicit NotCompiledApiAdapter(ApiId id) : id_(id) {}
  ApiId id() const override { return id_; }
  bool available() const override { return false; }
  std::string unavailable_reason() const override {
    return fmt::format("this build of Skein has no {} support (reconfigure with SKEIN_WITH_{}=ON)",
                       skein::name(id_), id_ == ApiId::cuda ? "CUDA" : "OPENCL");
  }
  std::string version() const override { return {}; }
  const std::vector<std::shared_ptr<PlatformAdapter>>& platforms() override { return none_; }

 private:
  ApiId id_;
  std::vector<std::shared_ptr<PlatformAdapter>> none_;
};
}  // namespace

#if !SKEIN_HAS_CUDA
std::shared_ptr<ApiAdapter> make_cuda_api_adapter() {
  return std::make_shared<NotCompiledApiAdapter>(ApiId::cuda);
}
std::shared_ptr<ContextAdapter> make_cuda_context(
    const std::vector<std::shared_ptr<DeviceAdapter>>&) {
  raise<ApiUnavailableError>({.what = "CUDA is not compiled into this build", .call = "Context"});
}
#endif
#if !SKEIN_HAS_OPENCL
std::shared_ptr<ApiAdapter> make_opencl_api_adapter() {
  return std::make_shared<NotCompiledApiAdapter>(ApiId::opencl);
}
std::shared_ptr<ContextAdapter> make_opencl_context(
    const std::vector<std::shared_ptr<DeviceAdapter>>&) {
  raise<ApiUnavailableError>({.what = "OpenCL is not compiled into this build", .call = "Context"});
}
#endif

std::shared_ptr<ApiAdapter> api_adapter(ApiId id) {
  static std::once_flag once[2];
  static std::shared_ptr<ApiAdapter> adapters[2];
  const auto i = static_cast<std::size_t>(id);
  std::call_once(once[i], [&] {
    adapters[i] = id == ApiId::cuda ? make_cuda_api_adapter() : make_opencl_api_adapter();
  });
  return adapters[i];
}

std::string describe(const DeviceAdapter& device) {
  const auto api = device.platform()->api()->id();
  if (api == ApiId::opencl) {
    return fmt::format("OpenCL device {} of platform {} ({})", device.index(),
                       device.platform()->index(), device.params().name);
  }
  return fmt::format("{} device {} ({})", skein::name(api), device.index(), device.params().name);
}

}  // namespace detail

std::vector<Api> Api::all_available() {
  std::vector<Api> result;
  for (ApiId id : all_api_ids()) {
    auto adapter = detail::api_adapter(id);
    if (adapter->available()) result.emplace_back(adapter);
  }
  return result;
}

std::vector<Api> Api::all_by_shortcut(std::optional<std::string_view> text) {
  if (!text) return all_available();
  return {from_id(api_id_from_shortcut(*text))};
}

Api Api::from_id(ApiId id) {
  auto adapter = detail::api_adapter(id);
  if (!adapter->available()) {
    throw ApiUnavailableError(ErrorInfo{
        .what =
            fmt::format("{} is not available: {}", skein::name(id), adapter->unavailable_reason()),
        .call = "Api::from_id",
        .hint = fmt::format("Run skein-info to see the APIs this machine has, or choose another "
                            "API (SKEIN_API={}).",
                            id == ApiId::cuda ? "opencl" : "cuda"),
        .location = SKEIN_HERE});
  }
  return Api(adapter);
}

std::vector<ApiStatus> Api::status() {
  std::vector<ApiStatus> result;
  for (ApiId id : all_api_ids()) {
    const bool compiled =
        (id == ApiId::cuda && SKEIN_HAS_CUDA) || (id == ApiId::opencl && SKEIN_HAS_OPENCL);
    auto adapter = detail::api_adapter(id);
    ApiStatus s{.id = id, .compiled_in = compiled, .available = adapter->available()};
    if (s.available) {
      s.version = adapter->version();
    } else {
      s.reason = adapter->unavailable_reason();
    }
    result.push_back(std::move(s));
  }
  return result;
}

ApiId Api::id() const { return adapter_->id(); }
std::string Api::version() const { return adapter_->version(); }

std::vector<Platform> Api::platforms() const { return Platform::all(*this); }

}  // namespace skein

// SPDX-License-Identifier: BSD-3-Clause
// make_default_context and the process's default context (skein/context.hpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <mutex>
#include <utility>
#include <string>
#include <vector>

#include "skein/context.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/log.hpp"
#include "skein/error.hpp"

namespace skein {

namespace {

std::string describe_filter(const DeviceFilter& f) {
  std::vector<std::string> parts;
  auto add = [&](const char* what, const std::vector<std::string>& masks) {
    if (!masks.empty()) parts.push_back(fmt::format("{} '{}'", what, fmt::join(masks, "', '")));
  };
  add("platforms matching", f.platform_include_masks);
  add("platforms not matching", f.platform_exclude_masks);
  add("devices matching", f.device_include_masks);
  add("devices not matching", f.device_exclude_masks);
  if (f.unique_devices_only) parts.emplace_back("unique devices only");
  if (f.include_pure_parallel_devices) parts.emplace_back("pure parallel devices included");
  return parts.empty() ? "no filter" : fmt::format("{}", fmt::join(parts, ", "));
}

std::mutex default_mutex;
std::optional<Context>& default_slot() {
  // Never destroyed: a context released during static destruction could outlive its backend.
  static auto* slot = new std::optional<Context>;
  return *slot;
}

}  // namespace

Context make_default_context(std::optional<ApiId> api, const DeviceFilter& filter) {
  constexpr const char* call = "make_default_context";
  std::vector<Api> apis;
  if (api) {
    apis.push_back(Api::from_id(*api));  // ApiUnavailableError when it is not usable
  } else {
    apis = Api::all_available();
  }
  std::vector<std::string> failures;
  std::size_t tried = 0;
  for (const auto& a : apis) {
    for (const auto& [platform, devices] : platforms_and_devices_by_mask(a, 1, filter)) {
      for (const auto& device : devices) {
        ++tried;
        try {
          return Context::from_devices(device);
        } catch (const LogicError& e) {
          // Skein's own refusal (a bad setting) is the same on every device; a backend's code
          // (CL_INVALID_DEVICE, ...) belongs to this device.
          if (!e.info().has_code) throw;
          failures.push_back(fmt::format("{}: {}", device.description(), e.what()));
        } catch (const Error& e) {
          failures.push_back(fmt::format("{}: {}", device.description(), e.what()));
        }
        detail::log(LogLevel::warning, LogScope::rank,
                    "make_default_context: passing over a device whose context could not be "
                    "made: {}",
                    failures.back());
      }
    }
  }
  if (tried == 0) {
    std::vector<std::string> names;
    for (const auto& a : apis) names.emplace_back(a.name());
    detail::raise_in(SKEIN_HERE, call,
                     "Loosen the filter, or run skein-info to list the devices there are.",
                     "no device of {} matches the filter ({})",
                     names.empty() ? std::string("any available API")
                                   : fmt::format("{}", fmt::join(names, ", ")),
                     describe_filter(filter));
  }
  detail::raise_in<RuntimeError>(
      SKEIN_HERE, call,
      "Free a device (another process may hold it in exclusive-process mode, or fill its memory), "
      "or pick others with the filter.",
      "no context could be made on any of the {} device(s) tried:\n  {}", tried,
      fmt::join(failures, "\n  "));
}

void set_default_context(std::optional<Context> context) {
  std::optional<Context> previous;  // released after the lock
  std::lock_guard lock(default_mutex);
  previous = std::exchange(default_slot(), std::move(context));
}

std::optional<Context> default_context() {
  std::lock_guard lock(default_mutex);
  return default_slot();
}

}  // namespace skein

// SPDX-License-Identifier: BSD-3-Clause
#include "skein/detail/placement.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <map>
#include <regex>

#include "skein/detail/env.hpp"
#include "skein/detail/errors.hpp"

namespace skein {

namespace {

// An environment variable (detail::env_value: an empty value is unset).
std::optional<std::string> env(const char* name) { return detail::env_value(name); }
[[noreturn]] void bad_variable(const char* variable, const std::string& value,
                               const std::string& why, const std::string& accepted) {
  detail::bad_env(variable, value, accepted, "PlacementOptions::from_environment", why);
}
std::optional<std::size_t> parse_size(const std::string& text) {
  std::size_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = std::min(text.find(',', start), text.size());
    if (comma > start) parts.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return parts;
}

}  // namespace

PlacementOptions PlacementOptions::from_environment(PlacementOptions given) {
  if (!given.api) {
    if (auto value = env("SKEIN_API")) {
      std::string lower = *value;
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower == "cuda")
        given.api = ApiId::cuda;
      else if (lower == "opencl")
        given.api = ApiId::opencl;
      else
        bad_variable("SKEIN_API", *value, "unknown API", "cuda, opencl");
    }
  }
  if (!given.device_masks) {
    if (auto value = env("SKEIN_DEVICES")) {
      auto masks = split_commas(*value);
      for (const auto& mask : masks) {
        try {
          // Masks are searched with ECMAScript syntax (as DeviceFilter's): check them here so that
          // the message names the variable rather than a deeper call.
          std::regex check(mask, std::regex::ECMAScript);
        } catch (const std::regex_error& e) {
          bad_variable("SKEIN_DEVICES", *value,
                       fmt::format("'{}' is not a regular expression ({})", mask, e.what()),
                       "comma-separated ECMAScript regular expressions on device names");
        }
      }
      given.device_masks = std::move(masks);
    }
  }
  if (!given.devices_per_rank) {
    if (auto value = env("SKEIN_DEVICES_PER_RANK")) {
      auto n = parse_size(*value);
      if (!n || *n == 0) {
        bad_variable("SKEIN_DEVICES_PER_RANK", *value,
                     n ? "a rank needs at least one device" : "not a number", "a positive integer");
      }
      given.devices_per_rank = n;
    }
  }
  if (!given.device_index) {
    if (auto value = env("SKEIN_DEVICE")) {
      auto n = parse_size(*value);
      if (!n) {
        bad_variable("SKEIN_DEVICE", *value, "not a number",
                     "a device index (0, 1, ...) among the node's matching devices");
      }
      given.device_index = n;
    }
  }
  if (!given.share_devices) {
    if (auto value = env("SKEIN_SHARE_DEVICES")) {
      given.share_devices =
          detail::parse_env_flag("SKEIN_SHARE_DEVICES", value, "PlacementOptions::from_environment",
                                 "ranks on one host may share devices");
    }
  }
  return given;
}

namespace detail {

std::vector<std::size_t> choose_devices(const PlacementRequest& request,
                                        const PlacementOptions& options) {
  const std::size_t n = request.candidates.size();
  const auto l = static_cast<std::size_t>(request.local_rank);
  const auto ranks = static_cast<std::size_t>(request.local_size);
  const bool share = options.share_devices.value_or(false);
  const char* call = "Runtime (device placement)";
  const std::string listing =
      n == 0 ? std::string("none") : fmt::format("{}", fmt::join(request.candidates, "; "));

  if (request.local_size < 1 || request.local_rank < 0 ||
      request.local_rank >= request.local_size) {
    raise_in(SKEIN_HERE, call, "", "local rank {} of {} is out of range", request.local_rank,
             request.local_size);
  }
  if (n == 0) {
    raise_in(SKEIN_HERE, call,
             "Run skein-info on that host, and check SKEIN_API, SKEIN_DEVICES and "
             "CUDA_VISIBLE_DEVICES.",
             "no matching devices on host {}", request.host);
  }
  if (options.devices_per_rank && *options.devices_per_rank == 0) {
    raise_in(SKEIN_HERE, call, "Give a positive number.",
             "devices_per_rank (SKEIN_DEVICES_PER_RANK) is 0: a rank needs at least one device");
  }

  // A rank that sees a single device was given it by CUDA_VISIBLE_DEVICES or the scheduler's
  // binding: each rank's lone device is a different physical one, so this is not sharing (the
  // duplicate check compares PCI bus ids and still catches the case where it is the same one).
  const bool asks_for_more =
      options.devices_per_rank.value_or(1) > 1 || options.device_index.value_or(0) > 0;
  if (n == 1 && !asks_for_more) return {0};

  std::vector<std::size_t> result;
  if (options.device_index) {
    const std::size_t first = *options.device_index;
    const std::size_t k = options.devices_per_rank.value_or(1);
    if (first >= n || first + k > n) {
      raise_in(SKEIN_HERE, call, "Choose an index among the host's matching devices.",
               "SKEIN_DEVICE={} with {} device(s) per rank needs devices {}..{} but host {} has "
               "{} matching device(s): {}",
               first, k, first, first + k - 1, request.host, n, listing);
    }
    for (std::size_t j = 0; j < k; ++j) result.push_back(first + j);
    return result;
  }

  if (options.devices_per_rank) {
    const std::size_t k = *options.devices_per_rank;
    if (k > n) {
      raise_in(SKEIN_HERE, call, "Ask for fewer devices per rank (SKEIN_DEVICES_PER_RANK).",
               "{} devices per rank, but host {} has {} matching device(s): {}", k, request.host, n,
               listing);
    }
    if ((l + 1) * k > n && !share) {
      raise_in(SKEIN_HERE, call,
               "Set SKEIN_SHARE_DEVICES=1, ask for fewer devices per rank, or run fewer ranks per "
               "node.",
               "{} devices for {} ranks on host {} at {} device(s) per rank (local rank {} would "
               "need devices {}..{})",
               n, ranks, request.host, k, l, l * k, l * k + k - 1);
    }
    // With sharing, the share-out wraps around the node's devices.
    for (std::size_t j = 0; j < k; ++j) result.push_back((l * k + j) % n);
    return result;
  }

  if (n >= ranks) {
    for (std::size_t i = l * n / ranks; i < (l + 1) * n / ranks; ++i) result.push_back(i);
    return result;
  }
  if (!share) {
    raise_in(SKEIN_HERE, call, "",
             "{} devices for {} ranks on host {}; set SKEIN_SHARE_DEVICES=1 or run fewer ranks "
             "per node",
             n, ranks, request.host);
  }
  return {l % n};
}

std::string device_key(const std::string& host, const std::optional<std::string>& pci_bus_id,
                       ApiId api, std::size_t platform_idx, std::size_t device_idx) {
  // A PCI bus id names one physical device of its host whatever the API or visibility mask.
  if (pci_bus_id && !pci_bus_id->empty()) return "pci:" + *pci_bus_id;
  return fmt::format("{}:{}:{}:{}", host, shortcut(api), platform_idx, device_idx);
}

std::vector<std::string> shared_devices(const std::vector<RankPlacement>& placement) {
  // (host, device id) -> ranks using it, and the device's description for the message.
  std::map<std::pair<std::string, std::string>, std::vector<int>> users;
  std::map<std::pair<std::string, std::string>, std::string> described;
  for (const auto& p : placement) {
    for (std::size_t i = 0; i < p.device_ids.size(); ++i) {
      const auto key = std::make_pair(p.host, p.device_ids[i]);
      auto& ranks = users[key];
      if (ranks.empty() || ranks.back() != p.rank) ranks.push_back(p.rank);
      if (i < p.devices.size()) described.emplace(key, p.devices[i]);
    }
  }
  std::vector<std::string> lines;
  for (const auto& [key, ranks] : users) {
    if (ranks.size() < 2) continue;
    lines.push_back(fmt::format("{} [{}] on host {} is used by ranks {}", described[key],
                                key.second, key.first, fmt::join(ranks, ", ")));
  }
  return lines;
}

}  // namespace detail

}  // namespace skein

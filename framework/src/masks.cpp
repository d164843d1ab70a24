// SPDX-License-Identifier: BSD-3-Clause
#include "masks.hpp"

#include <algorithm>

#include "skein/detail/errors.hpp"

namespace skein::detail {

namespace {
std::vector<std::regex> compile(const std::vector<std::string>& masks, const char* call) {
  std::vector<std::regex> result;
  for (const auto& mask : masks) {
    try {
      result.emplace_back(mask, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      raise_in(SKEIN_HERE, call, "Masks are ECMAScript regular expressions, e.g. 'H100|H200'.",
               "invalid mask '{}': {}", mask, e.what());
    }
  }
  return result;
}
}  // namespace

NameMasks::NameMasks(const std::vector<std::string>& include,
                     const std::vector<std::string>& exclude, const char* call)
    : include_(compile(include, call)), exclude_(compile(exclude, call)) {}

bool NameMasks::matches(const std::string& name) const {
  auto hit = [&](const std::regex& r) { return std::regex_search(name, r); };
  if (!include_.empty() && std::none_of(include_.begin(), include_.end(), hit)) return false;
  return std::none_of(exclude_.begin(), exclude_.end(), hit);
}

}  // namespace skein::detail

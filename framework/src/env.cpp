// SPDX-License-Identifier: BSD-3-Clause
#include "skein/detail/env.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace skein::detail {

std::optional<std::string> env_value(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

void bad_env(const char* name, const std::string& value, std::string_view accepted,
             std::string_view call, std::string_view why, Where where) {
  raise_in(source_location(where.file_name(), static_cast<int>(where.line())), std::string(call),
           fmt::format("Set {} to an accepted value, or unset it (an empty value counts as unset).",
                       name),
           "{}='{}' is not valid{}{}; it takes {}", name, value, why.empty() ? "" : ": ", why,
           accepted);
}

std::optional<bool> parse_env_flag(const char* name, const std::optional<std::string>& value,
                                   std::string_view call, std::string_view meaning, Where where) {
  if (!value || value->empty()) return std::nullopt;
  std::string v = *value;
  for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  bad_env(name, *value, fmt::format("1, true, yes or on ({}); 0, false, no or off (not)", meaning),
          call, {}, where);
}

std::optional<double> parse_env_seconds(const char* name, const std::optional<std::string>& value,
                                        std::string_view call, std::string_view zero, Where where) {
  if (!value || value->empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double seconds = std::strtod(value->c_str(), &end);
  if (errno != 0 || end == value->c_str() || *end != '\0' || !std::isfinite(seconds) ||
      seconds < 0) {
    bad_env(name, *value, fmt::format("a number of seconds >= 0 (e.g. 300; 0 {})", zero), call, {},
            where);
  }
  return seconds;
}

}  // namespace skein::detail

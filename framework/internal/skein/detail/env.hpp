// SPDX-License-Identifier: BSD-3-Clause
// Skein's one reader of its environment variables (SKEIN_*), with one rule for all of them:
// unset or empty means unset (the default applies); any other value must be one the variable
// accepts, or the reader throws LogicError naming the variable, the value, what it accepts, and
// the call that read it. Each parse_* takes the value itself (for tests and for readers that take
// values from elsewhere); each env_* reads the variable and parses it. docs/guide.md's table is
// the list of the variables (tools/check-docs.sh keeps it complete).
#pragma once

#include <initializer_list>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "skein/detail/errors.hpp"
#include "skein/export.hpp"

namespace skein::detail {

// The variable's value; nullopt when unset or empty.
SKEIN_EXPORT std::optional<std::string> env_value(const char* name);

// Throws LogicError: "NAME='value' is not valid[: why]; it takes ACCEPTED", from `call`, at the
// place in Skein's source that read the variable (`where`, the caller's by default).
using Where = std::source_location;
[[noreturn]] SKEIN_EXPORT void bad_env(const char* name, const std::string& value,
                                       std::string_view accepted, std::string_view call,
                                       std::string_view why = {}, Where where = Where::current());

// A yes/no switch: 1, true, yes or on; 0, false, no or off (any case). `meaning` says what 1 does.
SKEIN_EXPORT std::optional<bool> parse_env_flag(const char* name,
                                                const std::optional<std::string>& value,
                                                std::string_view call, std::string_view meaning,
                                                Where where = Where::current());
inline bool env_flag(const char* name, bool fallback, std::string_view call,
                     std::string_view meaning, Where where = Where::current()) {
  return parse_env_flag(name, env_value(name), call, meaning, where).value_or(fallback);
}

// A number of seconds: finite and >= 0 (`zero` says what 0 means, e.g. "waits forever").
SKEIN_EXPORT std::optional<double> parse_env_seconds(const char* name,
                                                     const std::optional<std::string>& value,
                                                     std::string_view call, std::string_view zero,
                                                     Where where = Where::current());
inline double env_seconds(const char* name, double fallback, std::string_view call,
                          std::string_view zero, Where where = Where::current()) {
  return parse_env_seconds(name, env_value(name), call, zero, where).value_or(fallback);
}

// One of several words (exact match), each with its value and what it means.
template <class T>
struct EnvChoice {
  const char* word;
  T value;
  const char* meaning;
};
template <class T>
std::optional<T> env_choice(const char* name, std::string_view call,
                            std::initializer_list<EnvChoice<T>> choices,
                            Where where = Where::current()) {
  const auto value = env_value(name);
  if (!value) return std::nullopt;
  std::string accepted;
  std::size_t i = 0;
  for (const auto& c : choices) {
    if (*value == c.word) return c.value;
    accepted += fmt::format("{}{} ({})", i == 0 ? "" : (i + 1 == choices.size() ? " or " : ", "),
                            c.word, c.meaning);
    ++i;
  }
  bad_env(name, *value, accepted, call, {}, where);
}

}  // namespace skein::detail

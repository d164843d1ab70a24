// SPDX-License-Identifier: BSD-3-Clause
// The log's internal side (see <skein/log.hpp>): formatted messages for Skein's own code, the
// variable SKEIN_LOG_LEVEL read where objects are made, and the rank that the comm layer gives.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "skein/export.hpp"
#include "skein/log.hpp"

namespace skein::detail {

// Reads SKEIN_LOG_LEVEL now and makes it the level in effect while it is set. A bad value raises
// LogicError naming the variable and `call` (the object being made: "Context", "Runtime").
// Returns the variable's level, or nullopt when it is unset.
SKEIN_EXPORT std::optional<LogLevel> read_log_level_from_environment(std::string_view call);

// The rank the log prefixes its lines with and that LogScope::collective compares with 0, and the
// prefix itself ("rank 3: "). Unknown (nullopt) until the comm layer sets it.
struct LogRank {
  std::optional<int> rank{};
  std::string prefix{};
};
SKEIN_EXPORT LogRank log_rank();
SKEIN_EXPORT void set_log_rank(LogRank rank);

// log(LogLevel::warning, LogScope::rank, "closing '{}' failed: {}", path, what): formats only
// when the message will be printed; never throws (a message may come from a destructor).
template <class... Args>
void log(LogLevel level, LogScope scope, fmt::format_string<Args...> format,
         Args&&... args) noexcept {
  if (!log_enabled(level)) return;
  try {
    log_message(level, fmt::format(format, std::forward<Args>(args)...), scope);
  } catch (...) {
    // Formatting ran out of memory: the message is lost rather than thrown from a destructor.
  }
}

}  // namespace skein::detail

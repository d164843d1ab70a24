// SPDX-License-Identifier: BSD-3-Clause
// The log (<skein/log.hpp>): the level in effect, the rank's prefix, the sink, and the default
// sink's one write() per line.
#include "skein/log.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>
#include <string>

#include "skein/detail/env.hpp"
#include "skein/detail/log.hpp"

namespace skein {

namespace {

constexpr int kUnset = -1;

// Process-wide, and never destroyed: destructors of static objects may still log at exit, after
// this file's statics would have gone.
struct LogStateStorage {
  // The level given in code and the variable's, as ints (kUnset: none), read without the lock
  // on every message.
  std::atomic<int> code_level{kUnset};
  std::atomic<int> env_level{kUnset};
  std::once_flag env_read;
  std::mutex mutex;  // guards what follows, and serialises the sink's calls
  detail::LogRank rank;
  LogSink sink;
};

LogStateStorage& log_state() {
  static LogStateStorage* s = new LogStateStorage;
  return *s;
}

constexpr detail::EnvChoice<LogLevel> kChoices[] = {
    {"off", LogLevel::off, "nothing"},
    {"error", LogLevel::error, "errors that could not be raised"},
    {"warning", LogLevel::warning, "errors and warnings, the default"},
    {"info", LogLevel::info, "also what Skein chose, e.g. a Communicator's backend and settings"},
    {"debug", LogLevel::debug, "everything"},
};

// The variable's level, without throwing: an invalid value counts as unset here (it is refused
// where a Context or a Runtime is made, which reads it with read_log_level_from_environment).
int env_level_quietly() {
  const auto value = detail::env_value("SKEIN_LOG_LEVEL");
  if (!value) return kUnset;
  for (const auto& c : kChoices) {
    if (*value == c.word) return static_cast<int>(c.value);
  }
  return kUnset;
}

// The variable's level as last read; read once on first use when no object has read it yet.
int env_level() {
  LogStateStorage& s = log_state();
  std::call_once(s.env_read, [&] {
    if (s.env_level.load(std::memory_order_relaxed) == kUnset) {
      s.env_level.store(env_level_quietly(), std::memory_order_relaxed);
    }
  });
  return s.env_level.load(std::memory_order_relaxed);
}

// One write of the whole line and its newline: a write() to a pipe of up to PIPE_BUF bytes is
// atomic, so the lines of ranks that share mpirun's output stay whole.
void write_to_stderr(std::string_view line) {
  std::string text(line);
  text += '\n';
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // stderr is closed or full: nothing better to do with the line
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace

std::string_view name(LogLevel level) {
  switch (level) {
    case LogLevel::off: return "off";
    case LogLevel::error: return "error";
    case LogLevel::warning: return "warning";
    case LogLevel::info: return "info";
    case LogLevel::debug: return "debug";
  }
  return "?";
}

void set_log_level(LogLevel level) {
  log_state().code_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

LogLevel log_level() {
  const int env = env_level();
  if (env != kUnset) return static_cast<LogLevel>(env);
  const int code = log_state().code_level.load(std::memory_order_relaxed);
  return code != kUnset ? static_cast<LogLevel>(code) : LogLevel::warning;
}

bool log_enabled(LogLevel level) {
  return level != LogLevel::off && static_cast<int>(level) <= static_cast<int>(log_level());
}

LogSink set_log_sink(LogSink sink) {
  LogStateStorage& s = log_state();
  std::lock_guard lock(s.mutex);
  std::swap(s.sink, sink);
  return sink;
}

void log_message(LogLevel level, std::string_view message, LogScope scope) noexcept {
  if (!log_enabled(level)) return;
  LogStateStorage& s = log_state();
  try {
    std::lock_guard lock(s.mutex);
    if (scope == LogScope::collective && s.rank.rank && *s.rank.rank != 0) return;
    std::string line = "skein: ";
    line += s.rank.prefix;
    line += message;
    if (s.sink) {
      s.sink(level, line);
    } else {
      write_to_stderr(line);
    }
  } catch (...) {
    // Out of memory, or the sink threw: the line is lost rather than thrown from a destructor.
  }
}

namespace detail {

std::optional<LogLevel> read_log_level_from_environment(std::string_view call) {
  LogStateStorage& s = log_state();
  const auto level = env_choice<LogLevel>(
      "SKEIN_LOG_LEVEL", call, {kChoices[0], kChoices[1], kChoices[2], kChoices[3], kChoices[4]});
  // Marks the variable as read, so that a later first message does not read it again.
  std::call_once(s.env_read, [] {});
  s.env_level.store(level ? static_cast<int>(*level) : kUnset, std::memory_order_relaxed);
  return level;
}

LogRank log_rank() {
  LogStateStorage& s = log_state();
  std::lock_guard lock(s.mutex);
  return s.rank;
}

void set_log_rank(LogRank rank) {
  LogStateStorage& s = log_state();
  std::lock_guard lock(s.mutex);
  s.rank = std::move(rank);
}

}  // namespace detail

}  // namespace skein

// SPDX-License-Identifier: BSD-3-Clause
#include "skein/detail/compile_error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "skein/detail/errors.hpp"

namespace skein::detail {
namespace {

// The digits at s[i...], if any: their value and the index past them. (Hand-written scanners
// rather than std::regex, whose templates made this file take 35 s to compile under the
// sanitizers.)
bool digits_at(const std::string& s, std::size_t i, std::size_t& value, std::size_t& end) {
  end = i;
  while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
  if (end == i || end - i > 9) return false;
  value = std::stoul(s.substr(i, end - i));
  return true;
}

// A reference "<name>:LINE:" (name of letters and '_') starting at s[i]: LINE, and the index
// past the match.
bool full_source_ref_at(const std::string& s, std::size_t i, std::size_t& line, std::size_t& end) {
  if (s[i] != '<') return false;
  std::size_t j = i + 1;
  while (j < s.size() && (std::isalpha(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
  if (j == i + 1 || j + 1 >= s.size() || s[j] != '>' || s[j + 1] != ':') return false;
  std::size_t k = 0;
  if (!digits_at(s, j + 2, line, k) || k >= s.size() || s[k] != ':') return false;
  end = k + 1;
  return true;
}

// A line reference "(LINE)" or ":LINE:" (either opening, either closing) starting at s[i].
bool line_ref_at(const std::string& s, std::size_t i, std::size_t& line, std::size_t& end) {
  if (s[i] != '(' && s[i] != ':') return false;
  std::size_t k = 0;
  if (!digits_at(s, i + 1, line, k) || k >= s.size() || (s[k] != ')' && s[k] != ':')) return false;
  end = k + 1;
  return true;
}

}  // namespace

void raise_compile_error(const std::string& call, const std::string& device,
                         const std::string& name, const std::string& raw_log,
                         const std::string& full_source, const std::vector<std::string>& options) {
  std::string user = full_source;
  std::size_t lines_before = 0;  // lines of the full source up to and including the marker
  const std::string marker = fmt::format("#line 1 \"{}\"\n", name);
  if (auto pos = full_source.rfind(marker); pos != std::string::npos) {
    user = full_source.substr(pos + marker.size());
    lines_before = static_cast<std::size_t>(
        std::count(full_source.begin(), full_source.begin() + pos + marker.size(), '\n'));
  }
  // Some compilers (NVIDIA's OpenCL) ignore #line and number the full source, calling it
  // "<kernel>": translate those references to lines of the given source.
  std::string log = raw_log;
  if (lines_before > 0 && log.find(name + ":") == std::string::npos &&
      log.find(name + "(") == std::string::npos) {
    std::string mapped;
    for (std::size_t i = 0; i < raw_log.size();) {
      std::size_t line = 0, end = 0;
      if (full_source_ref_at(raw_log, i, line, end)) {
        mapped += line > lines_before ? fmt::format("{}:{}:", name, line - lines_before)
                                      : fmt::format("<prelude>:{}:", line);
        i = end;
      } else {
        mapped += raw_log[i++];
      }
    }
    log = std::move(mapped);
  }
  std::vector<std::string> lines;
  {
    std::istringstream in(user);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  std::string numbered;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    numbered += fmt::format("{:5} | {}\n", i + 1, lines[i]);
  }
  // The lines the log names ("name(5)" from NVRTC, "name:5:" from clang-based compilers), shown
  // in the message so that the mistake is visible without digging.
  std::set<std::size_t> mentioned;
  for (std::size_t i = 0; i < log.size() && mentioned.size() < 5;) {
    std::size_t line = 0, end = 0;
    if (line_ref_at(log, i, line, end)) {
      if (line >= 1 && line <= lines.size()) mentioned.insert(line);
      i = end;
    } else {
      ++i;
    }
  }
  std::string excerpt;
  for (std::size_t line : mentioned) excerpt += fmt::format("\n  {:5} | {}", line, lines[line - 1]);
  throw CompileError(
      ErrorInfo{.what = fmt::format("compiling '{}' failed:\n{}{}{}", name, log,
                                    excerpt.empty() ? "" : "\nat:", excerpt),
                .call = call,
                .device = device,
                .hint = fmt::format("Options: {}. CompileError::source() has the numbered source.",
                                    fmt::join(options, " ")),
                .location = SKEIN_HERE},
      log, numbered, fmt::format("{}", fmt::join(options, " ")));
}

}  // namespace skein::detail

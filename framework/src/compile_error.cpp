#include "skein/detail/compile_error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include "skein/detail/errors.hpp"

namespace skein::detail {

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
    const std::regex full_ref("<[A-Za-z_]+>:(\\d+):");
    std::string mapped;
    auto begin = raw_log.cbegin();
    for (std::sregex_iterator it(raw_log.begin(), raw_log.end(), full_ref), end; it != end; ++it) {
      const std::size_t line = std::stoul((*it)[1].str());
      mapped.append(begin, (*it)[0].first);
      mapped += line > lines_before ? fmt::format("{}:{}:", name, line - lines_before)
                                    : fmt::format("<prelude>:{}:", line);
      begin = (*it)[0].second;
    }
    mapped.append(begin, raw_log.cend());
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
  const std::regex ref("(?:\\(|:)(\\d+)(?:\\)|:)");
  for (std::sregex_iterator it(log.begin(), log.end(), ref), end; it != end; ++it) {
    const std::size_t line = std::stoul((*it)[1].str());
    if (line >= 1 && line <= lines.size()) mentioned.insert(line);
    if (mentioned.size() >= 5) break;
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

#include "compile_error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <regex>
#include <set>
#include <sstream>

#include "errors.hpp"

namespace skein::detail {

void raise_compile_error(const std::string& call, const std::string& device,
                         const std::string& name, const std::string& log,
                         const std::string& full_source, const std::vector<std::string>& options) {
  std::string user = full_source;
  const std::string marker = fmt::format("#line 1 \"{}\"\n", name);
  if (auto pos = full_source.rfind(marker); pos != std::string::npos) {
    user = full_source.substr(pos + marker.size());
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

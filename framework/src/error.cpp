// SPDX-License-Identifier: BSD-3-Clause
#include "skein/error.hpp"

#include <fmt/format.h>

#include <cstring>
#include <mutex>

#include "skein/detail/errors.hpp"

namespace skein {

namespace {
std::string build_message(const ErrorInfo& info) {
  std::string msg = "skein: " + detail::error_prefix();
  if (!info.call.empty()) msg += info.call + ": ";
  msg += info.what.empty() ? std::string("failed") : info.what;
  if (info.has_code) {
    msg += fmt::format(" [{}{}]", info.code_name.empty() ? "" : info.code_name + " = ", info.code);
  }
  if (!info.device.empty()) msg += " on " + info.device;
  msg += ".";
  if (!info.hint.empty()) msg += " " + info.hint;
  if (!info.location.empty()) msg += " (at " + info.location + ")";
  return msg;
}

struct Prefix {
  std::mutex mutex;
  std::string text;
};
Prefix& prefix_storage() {
  static Prefix prefix;
  return prefix;
}
}  // namespace

Error::Error(const ErrorInfo& info) : std::runtime_error(build_message(info)), info_(info) {}

std::string format_bytes(std::size_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 5) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.1f} {} ({} bytes)", value, units[unit], bytes);
}

namespace detail {
void set_error_prefix(std::string prefix) {
  auto& p = prefix_storage();
  std::lock_guard lock(p.mutex);
  p.text = std::move(prefix);
}
std::string error_prefix() {
  auto& p = prefix_storage();
  std::lock_guard lock(p.mutex);
  return p.text;
}

std::string source_location(const char* file, int line) {
  // Keep the path from the layer folder on: "framework/src/buffer.cpp:42".
  std::string path(file);
  for (const char* layer : {"framework/", "collectives/", "apps/"}) {
    if (auto pos = path.rfind(layer); pos != std::string::npos) {
      path = path.substr(pos);
      break;
    }
  }
  return fmt::format("{}:{}", path, line);
}
}  // namespace detail

}  // namespace skein

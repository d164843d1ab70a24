// SPDX-License-Identifier: BSD-3-Clause
// Internal helpers for raising Skein's typed errors with the place in Skein's source.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>

#include "skein/error.hpp"
#include "skein/export.hpp"

#define SKEIN_HERE (::skein::detail::source_location(__FILE__, __LINE__))

namespace skein::detail {

SKEIN_EXPORT std::string source_location(const char* file, int line);

template <class E = LogicError>
[[noreturn]] void raise(ErrorInfo info) {
  throw E(info);
}

// raise_logic(SKEIN_HERE, "Buffer::get_sub_region", "hint", "fmt {}", args...)
template <class E = LogicError, class... Args>
[[noreturn]] void raise_in(std::string_view location, std::string_view call, std::string_view hint,
                           fmt::format_string<Args...> what, Args&&... args) {
  throw E(ErrorInfo{.what = fmt::format(what, std::forward<Args>(args)...),
                    .call = std::string(call),
                    .hint = std::string(hint),
                    .location = std::string(location)});
}

}  // namespace skein::detail

// SPDX-License-Identifier: BSD-3-Clause
// Building the CompileError both backends raise: the compiler's log, the options, and the source
// numbered as the compiler numbers it.
#pragma once

#include <string>
#include <vector>

#include "skein/export.hpp"

namespace skein::detail {

// `full_source` is what the compiler saw; its user part starts after the `#line 1 "<name>"`
// directive Program adds, and the compiler's line numbers count from there.
[[noreturn]] SKEIN_EXPORT void raise_compile_error(const std::string& call,
                                                   const std::string& device,
                                                   const std::string& name,
                                                   const std::string& raw_log,
                                                   const std::string& full_source,
                                                   const std::vector<std::string>& options);

}  // namespace skein::detail

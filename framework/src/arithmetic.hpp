// SPDX-License-Identifier: BSD-3-Clause
// Integer helpers shared by the framework's sources.
#pragma once

#include <cstddef>

namespace skein::detail {

// `value` rounded up to a multiple of `unit` (unit > 0).
constexpr std::size_t round_up(std::size_t value, std::size_t unit) {
  return (value + unit - 1) / unit * unit;
}

}  // namespace skein::detail

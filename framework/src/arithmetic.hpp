// SPDX-License-Identifier: BSD-3-Clause
// Integer helpers shared by the framework's sources.
#pragma once

#include <cstddef>
#include <cstdint>

namespace skein::detail {

// `value` rounded up to a multiple of `unit` (unit > 0).
constexpr std::size_t round_up(std::size_t value, std::size_t unit) {
  return (value + unit - 1) / unit * unit;
}

// a / b rounded up (b > 0).
constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// The largest power of two not above `v`; 1 for 0.
constexpr std::uint64_t floor_pow2(std::uint64_t v) {
  std::uint64_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

}  // namespace skein::detail

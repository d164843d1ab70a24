// SPDX-License-Identifier: BSD-3-Clause
// Checks of reduction results that several test files share.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace skein::test {

// |sum - exact| within a generous multiple of the worst-case rounding for float32.
inline void expect_close_sum(double got, const std::vector<float>& x, double rel = 2e-5) {
  double exact = 0, mag = 0;
  for (float v : x) {
    exact += v;
    mag += std::fabs(v);
  }
  EXPECT_LE(std::fabs(got - exact), rel * mag + 1e-30) << "sum " << got << " vs " << exact;
}

}  // namespace skein::test

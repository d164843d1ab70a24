// SPDX-License-Identifier: BSD-3-Clause
// The reduction kernels' skeletons (framework/src/kernels/reduction_*.tmpl): one kernel of mixed
// inputs (float16 and float32 arrays, a float16 scalar, an int32 array) through every program the
// skeletons make (fast and deterministic, contiguous, unaligned and strided; along one axis of a
// 2-D shape and along axes of a 3-D one) at sizes with odd tails, against the host; and the user's
// text (preamble, expressions), which the skeletons insert as it is for the render with the
// user's globals to interpret, as before.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <skein/skein.hpp>
#include <vector>

#include "backends.hpp"

namespace skein::test {
namespace {
namespace reduction_skeleton_test {

class ReductionSkeleton : public BackendTest {};

// Host data for the mixed kernel: h (float16, exact in float), x (float32), c (int32).
struct Mixed {
  std::vector<float16> h;
  std::vector<float> x;
  std::vector<std::int32_t> c;
  explicit Mixed(std::size_t n) {
    const auto r = random_reals<float>(n, 71);
    for (std::size_t i = 0; i < n; ++i) {
      h.emplace_back(static_cast<float>(static_cast<int>(i % 37) - 18) / 8);
      x.push_back(r[i]);
      c.push_back(static_cast<std::int32_t>(i % 5) - 2);
    }
  }
  // The map value of element i with the scalar s.
  double value(std::size_t i, float s) const {
    return static_cast<double>(static_cast<float>(h[i])) * s +
           static_cast<double>(x[i]) * static_cast<double>(c[i]);
  }
};

ReductionKernel mixed_kernel() {
  return ReductionKernel("float16 h, float32 x, float16 s, int32 c", "float64 y",
                         "(double)h * (double)s + (double)x * (double)c", "a + b", "0",
                         {.reduce_type = Dtype::float64, .name = "mixed"});
}

void expect_near_sum(double got, double exact, double mag) {
  EXPECT_LE(std::fabs(got - exact), 1e-12 * mag + 1e-300) << got << " vs " << exact;
}

// Whole-array, fast and deterministic: contiguous (vector loop, odd tails), at an unaligned
// element offset (the head element by element), and strided (every third element).
TEST_P(ReductionSkeleton, WholeArrayLayoutsAndTails) {
  auto ctx = context();
  Queue queue(ctx);
  const float16 s(0.75f);
  const auto k = mixed_kernel();  // one kernel: its programs are kept across the cases
  for (std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{17}, std::size_t{4099}}) {
    const Mixed m(3 * n + 1);
    const auto dh = Array::from_host(queue, m.h), dx = Array::from_host(queue, m.x),
               dc = Array::from_host(queue, m.c);
    struct Case {
      const char* name;
      std::size_t offset, step;
    };
    for (const Case& c :
         {Case{"contiguous", 0, 1}, Case{"unaligned", 1, 1}, Case{"strided", 2, 3}}) {
      SCOPED_TRACE(fmt::format("n {} {}", n, c.name));
      auto view = [&](const Array& a) { return a.view(c.offset, {n}, {c.step * a.itemsize()}); };
      double exact = 0, mag = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const double v = m.value(c.offset + i * c.step, static_cast<float>(s));
        exact += v;
        mag += std::fabs(v);
      }
      const std::vector<Operand> ins{view(dh), view(dx), s, view(dc)};
      expect_near_sum(reduction_value<double>(k(queue, ins)), exact, mag);
      expect_near_sum(reduction_value<double>(k(queue, ins, {.deterministic = true})), exact, mag);
    }
  }
}

// Many inputs: the map call lists every input's argument on one line, whatever their number
// (its list once came from a def that called itself per input, and the engine's depth of calls,
// 64, refused 60 inputs). 8 arrays and 56 scalars, fast and deterministic.
TEST_P(ReductionSkeleton, SixtyFourInputs) {
  auto ctx = context();
  Queue queue(ctx);
  constexpr std::size_t kArrays = 8, kScalars = 56, n = 1000;
  std::string params, map;
  for (std::size_t j = 0; j < kArrays; ++j) {
    params += fmt::format("{}float64 a{}", j ? ", " : "", j);
    map += fmt::format("{}a{}", j ? " + " : "", j);
  }
  for (std::size_t j = 0; j < kScalars; ++j) {
    params += fmt::format(", float64 s{}", j);
    map += fmt::format(" + s{}", j);
  }
  ReductionKernel k(params, "float64 y", map, "a + b", "0", {.name = "many_inputs"});
  std::vector<Operand> ins;
  double exact = 0;
  for (std::size_t j = 0; j < kArrays; ++j) {
    std::vector<double> h(n);
    for (std::size_t i = 0; i < n; ++i) h[i] = static_cast<double>((i * (j + 3)) % 17);
    for (double v : h) exact += v;
    ins.emplace_back(Array::from_host(queue, h));
  }
  for (std::size_t j = 0; j < kScalars; ++j) {
    ins.emplace_back(static_cast<double>(j) / 4);
    exact += static_cast<double>(n) * static_cast<double>(j) / 4;
  }
  // Every term is a multiple of 1/4 below 2^40: the sums are exact in float64.
  EXPECT_EQ(reduction_value<double>(k(queue, ins)), exact);
  EXPECT_EQ(reduction_value<double>(k(queue, ins, {.deterministic = true})), exact);
}

// Along one axis of a 2-D shape (K_rows; K_cols and K_cols2) and along axes 0 and 2 of a 3-D one
// (K_axg, K_axt), with the same inputs.
TEST_P(ReductionSkeleton, AlongAxes) {
  auto ctx = context();
  Queue queue(ctx);
  const float16 s(-1.5f);
  const std::size_t A = 5, B = 3, C = 67;
  const Mixed m(A * B * C);
  auto arrays = [&](Shape shape) {
    return std::vector<Operand>{Array::from_host(queue, m.h, shape),
                                Array::from_host(queue, m.x, shape), s,
                                Array::from_host(queue, m.c, shape)};
  };
  const auto k = mixed_kernel();
  const auto v = [&](std::size_t i) { return m.value(i, static_cast<float>(s)); };
  // 2-D: (A * B) x C.
  const std::size_t R = A * B;
  const auto flat = arrays({R, C});
  const auto rows = k(queue, flat, {.axis = 1}).get<double>();
  const auto cols = k(queue, flat, {.axis = 0}).get<double>();
  ASSERT_EQ(rows.size(), R);
  ASSERT_EQ(cols.size(), C);
  for (std::size_t r = 0; r < R; ++r) {
    double e = 0, mag = 0;
    for (std::size_t c = 0; c < C; ++c) e += v(r * C + c), mag += std::fabs(v(r * C + c));
    expect_near_sum(rows[r], e, mag);
  }
  for (std::size_t c = 0; c < C; ++c) {
    double e = 0, mag = 0;
    for (std::size_t r = 0; r < R; ++r) e += v(r * C + c), mag += std::fabs(v(r * C + c));
    expect_near_sum(cols[c], e, mag);
  }
  // 3-D: A x B x C along axes 0 and 2: one value per b.
  const auto per_b = k(queue, arrays({A, B, C}), {.axes = {0, 2}}).get<double>();
  ASSERT_EQ(per_b.size(), B);
  for (std::size_t b = 0; b < B; ++b) {
    double e = 0, mag = 0;
    for (std::size_t a = 0; a < A; ++a) {
      for (std::size_t c = 0; c < C; ++c) {
        const double x = v((a * B + b) * C + c);
        e += x;
        mag += std::fabs(x);
      }
    }
    expect_near_sum(per_b[b], e, mag);
  }
}

// The user's text reaches the render with the user's globals as it is: a preamble with %for at a
// line start and an expression with ${...} bound in ReductionOptions::globals work on every path,
// and no template syntax is left in the source.
TEST_P(ReductionSkeleton, UserTextRenderedWithTheUsersGlobals) {
  auto ctx = context();
  Queue queue(ctx);
  ReductionKernel k(
      "float32 x", "float32 y", "times${which}(x) * ${scale}", "a + b", "0",
      {.preamble = "%for q in range(1, 4):\n"
                   "WITHIN_KERNEL INLINE float times${q}(float v) { return v * ${q}; }\n"
                   "%endfor",
       .globals = {{"which", 2}, {"scale", "0.25f"}},
       .name = "user_text"});
  const std::size_t n = 1001;
  std::vector<float> x(n);
  double e = 0;
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 11);
    e += x[i] * 2 * 0.25;
  }
  const auto dx = Array::from_host(queue, x);
  EXPECT_EQ(reduction_value<float>(k(queue, {dx})), static_cast<float>(e));
  EXPECT_EQ(reduction_value<float>(k(queue, {dx}, {.deterministic = true})), static_cast<float>(e));
  const auto m = Array::from_host(queue, x, {7, 143});
  const auto rows = k(queue, {m}, {.axis = 1}).get<float>();
  for (std::size_t r = 0; r < 7; ++r) {
    double er = 0;
    for (std::size_t c = 0; c < 143; ++c) er += x[r * 143 + c] * 0.5;
    EXPECT_EQ(rows[r], static_cast<float>(er)) << "row " << r;
  }
  const std::string src = k.source(queue, std::vector<Operand>{dx});
  EXPECT_NE(src.find("float times3(float v) { return v * 3; }"), std::string::npos);
  EXPECT_NE(src.find("reduce_t _skein_m = times2(x) * 0.25f;"), std::string::npos);
  EXPECT_EQ(src.find("${"), std::string::npos);
  EXPECT_EQ(src.find("%for"), std::string::npos);
}

SKEIN_INSTANTIATE_BACKENDS(ReductionSkeleton);

}  // namespace reduction_skeleton_test
}  // namespace
}  // namespace skein::test

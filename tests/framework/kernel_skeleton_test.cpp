// SPDX-License-Identifier: BSD-3-Clause
// The elementwise and stencil skeletons (framework/src/kernels/elementwise.tmpl, stencil.tmpl)
// through the public kernels, on the paths the other suites reach least: float16 arrays and
// scalars on the vector path (head, chunks, tail) and on the strided path, several outputs, a raw
// array, three axes that do not merge; a stencil with float16 fields and scalars, a 3-D one with
// components that reduces over the edges (every box of the chain); and the user's text (operation,
// preamble, a reduction's map) rendered with the user's globals only, as before skeletons. Every
// result is compared with the same computation on the host.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>
#include <skein/skein.hpp>

#include "backends.hpp"

namespace skein::test {
namespace {
namespace kernel_skeleton_test {

class ElementwiseSkeleton : public BackendTest {};
class StencilSkeleton : public BackendTest {};

// Values exact in float16 (quarters up to 8 in magnitude), so that the host and the device agree
// bit for bit whatever the order of operations.
float quarter(std::size_t i) { return static_cast<float>(static_cast<int>(i * 7 % 61) - 30) / 4; }
// Integers up to 100 in magnitude.
float small_int(std::size_t i) { return static_cast<float>(static_cast<int>(i * 13 % 201) - 100); }

std::vector<float16> halves(std::size_t n, std::size_t shift) {
  std::vector<float16> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = float16(quarter(i + shift));
  return out;
}

// Two outputs of two dtypes from a float16 array, a float32 array and a float16 scalar, at sizes
// around the vector loop's chunks, the arrays starting 3 elements into their allocations (so the
// kernel has an unaligned head, then chunks, then a tail).
TEST_P(ElementwiseSkeleton, VectorPathHalfFloatsAndTwoOutputsAtEdgeSizes) {
  auto ctx = context();
  Queue queue(ctx);
  ElementwiseKernel k("float16 x, float32 y, float16 a", "float16 h, float64 d",
                      "h = a * x + y; d = (double)x - y",
                      {.name = "sk_half_two", .fp_contract = false});
  const std::size_t skip = 3;
  for (std::size_t n : {1, 5, 8, 13, 16, 31, 64, 67, 1029}) {
    SCOPED_TRACE(n);
    const auto x = halves(n + skip, 0);
    std::vector<float> y(n + skip);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = small_int(i);
    auto dx = Array::from_host(queue, x), dy = Array::from_host(queue, y);
    auto dh = Array::zeros(queue, {n + skip}, Dtype::float16);
    auto dd = Array::zeros(queue, {n + skip}, Dtype::float64);
    const float16 a(0.5f);
    const std::vector<Operand> args{dx.view(skip, {n}), dy.view(skip, {n}), a, dh.view(skip, {n}),
                                    dd.view(skip, {n})};
    ASSERT_NE(k.source(queue, args).find("_skein_vec_sk_half_two_x"), std::string::npos);
    k(queue, args);
    const auto h = dh.get<float16>();
    const auto d = dd.get<double>();
    for (std::size_t i = 0; i < skip; ++i) ASSERT_EQ(h[i].bits, float16(0.0f).bits) << i;
    for (std::size_t i = skip; i < n + skip; ++i) {
      const float xf = static_cast<float>(x[i]);
      ASSERT_EQ(h[i].bits, float16(0.5f * xf + y[i]).bits) << i;
      ASSERT_EQ(d[i], static_cast<double>(xf) - static_cast<double>(y[i])) << i;
    }
  }
}

// The strided path over three axes that do not merge: a permuted float16 view, a broadcast
// float64 column, a raw table, an integer scalar; one output every other element of a wider
// float32 array, the other a contiguous float16 array.
TEST_P(ElementwiseSkeleton, StridedPathHalfFloatsRawAndBroadcast) {
  auto ctx = context();
  Queue queue(ctx);
  ElementwiseKernel k("float16 x, float64 y, raw float32 r, int32 k", "float32 s, float16 h",
                      "s = x * k + y + r[i % 5]; h = x - (float)(i % 8)",
                      {.name = "sk_strided", .fp_contract = false});
  const std::size_t A = 3, B = 5, C = 7;
  // x: a (B, C, A) array seen as (A, B, C).
  const auto xh = halves(B * C * A, 11);
  auto dx = Array::from_host(queue, xh, {B, C, A});
  auto x = dx.view(0, {A, B, C}, {2, C * A * 2, A * 2});
  std::vector<double> y(B);
  for (std::size_t b = 0; b < B; ++b) y[b] = small_int(b + 40);
  auto dy = Array::from_host(queue, y, {B, 1});
  const std::vector<float> r{1, -2, 3, -4, 5};
  auto dr = Array::from_host(queue, r);
  auto wide = Array::zeros(queue, {A, B, 2 * C}, Dtype::float32);
  auto s = wide.view(0, {A, B, C}, {B * 2 * C * 4, 2 * C * 4, 8});
  auto h = Array::empty(queue, {A, B, C}, Dtype::float16);
  const std::vector<Operand> args{x, dy, dr, 3, s, h};
  ASSERT_NE(k.source(queue, args).find("_skein_off2"), std::string::npos);  // three layouts
  k(queue, args);
  const auto got_s = wide.get<float>();
  const auto got_h = h.get<float16>();
  for (std::size_t a = 0; a < A; ++a) {
    for (std::size_t b = 0; b < B; ++b) {
      for (std::size_t c = 0; c < C; ++c) {
        const std::size_t i = (a * B + b) * C + c;
        const float xf = static_cast<float>(xh[(b * C + c) * A + a]);
        const float want_s =
            static_cast<float>(static_cast<double>(xf * 3) + y[b] + static_cast<double>(r[i % 5]));
        ASSERT_EQ(got_s[i * 2], want_s) << a << "," << b << "," << c;
        ASSERT_EQ(got_s[i * 2 + 1], 0.0f) << a << "," << b << "," << c;
        ASSERT_EQ(got_h[i].bits, float16(xf - static_cast<float>(i % 8)).bits) << i;
      }
    }
  }
}

// The operation and the preamble are the user's templates, rendered with options.globals after
// the skeleton: a '%for' line and ${...} in them mean what they meant before skeletons (the
// skeleton's own pass would not know `t`, `reps` or `two`).
TEST_P(ElementwiseSkeleton, UserTextIsRenderedWithTheUserGlobalsOnly) {
  auto ctx = context();
  Queue queue(ctx);
  const std::string op =
      "z = x;\n"
      "%for t in range(2, reps + 1):\n"
      "z += x * ${t};\n"
      "%endfor\n"
      "z = sk_twice(z)";
  ElementwiseKernel k("float32 x", "float32 z", op,
                      {.name = "sk_user_text",
                       .preamble = "WITHIN_KERNEL INLINE float sk_twice(float v) { return v * "
                                   "${two}; }",
                       .globals = {{"reps", 3}, {"two", "2.0f"}}});
  std::vector<float> x(21);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = small_int(i);
  auto dx = Array::from_host(queue, x);
  const std::vector<Operand> args{dx};
  const std::string src = k.source(queue, args);
  EXPECT_NE(src.find("z += x * 3;\n"), std::string::npos);
  EXPECT_NE(src.find("return v * 2.0f;"), std::string::npos);
  EXPECT_EQ(src.find("%for"), std::string::npos);
  const auto z = k(queue, {dx}).front().get<float>();
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(z[i], x[i] * 12) << i;
}

// A 1-D stencil on float16 fields with a float16 scalar and a raw table, the interior and the
// edges in two launches into a sentinel-filled output.
TEST_P(StencilSkeleton, HalfFloatFieldsAndScalar1D) {
  auto ctx = context();
  Queue queue(ctx);
  StencilKernel k("float16 u, float16 a, raw float32 w", "float16 out",
                  "out = a * (u(-1) + u(1)) + w[0] * u",
                  {.name = "sk_half1d", .fp_contract = false});
  const std::size_t n = 37;
  const auto host = halves(n + 2, 5);
  auto with_halo = Array::from_host(queue, host);
  auto u = with_halo.view(1, {n});
  auto w = Array::from_host(queue, std::vector<float>{3});
  auto out = Array::from_host(queue, std::vector<float16>(n, float16(-1.0f)));
  const StencilGeometry g{.domain = {n}, .halo = {2}};
  k(queue, {u, float16(0.5f), w, out}, g, StencilRegion::interior);
  const auto inner = out.get<float16>();
  k(queue, {u, float16(0.5f), w, out}, g, StencilRegion::edges);
  const auto all = out.get<float16>();
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t c = i + 1;
    const float want = 0.5f * (static_cast<float>(host[c - 1]) + static_cast<float>(host[c + 1])) +
                       3 * static_cast<float>(host[c]);
    const bool interior = i >= 2 && i + 2 < n;
    ASSERT_EQ(inner[i].bits, (interior ? float16(want) : float16(-1.0f)).bits) << i;
    ASSERT_EQ(all[i].bits, float16(want).bits) << i;
  }
}

// A 3-D stencil with two components in and out, written with a '%for' of the user's template,
// that also sums a map (with a user global) over the edges, whose region is all six boxes.
TEST_P(StencilSkeleton, ThreeDimensionalComponentsReducedOverTheEdges) {
  auto ctx = context();
  Queue queue(ctx);
  const std::string op =
      "%for c in range(2):\n"
      "out[${c}] = u(0, 0, -1, ${c}) + u(0, 1, 0, ${1 - c}) - u(-1, 0, 0, 0);\n"
      "%endfor\n"
      "out[1] *= ${scale}";
  StencilKernel k("float64 u", "float64 out", op,
                  {.name = "sk_comp3d",
                   .globals = {{"scale", "2.0"}, {"weight", "3.0"}},
                   .reduction = StencilReduction{.map = "out[0] + ${weight} * out[1]"}});
  const Shape points{3, 5, 7};
  const std::size_t Z = 3 + 2, Y = 5 + 2, X = 7 + 2;
  const auto host = random_reals<double>(Z * Y * X * 2, 31);
  auto full = Array::from_host(queue, host, {Z, Y, X, 2});
  const std::size_t e = sizeof(double);
  auto u = full.view((Y * X + X + 1) * 2, {3, 5, 7, 2}, {Y * X * 2 * e, X * 2 * e, 2 * e, e});
  auto out = Array::zeros(queue, {3, 5, 7, 2}, Dtype::float64);
  auto sum = Array::from_host(queue, std::vector<double>{0.0});
  const StencilGeometry g{.domain = points, .halo = {1, 1, 1}};
  k.reduce(queue, {u, out}, g, sum, 0, StencilRegion::edges);
  const auto got = out.get<double>();
  const auto at = [&](std::int64_t z, std::int64_t y, std::int64_t x, std::size_t c) {
    return host[(((static_cast<std::size_t>(z + 1) * Y) + static_cast<std::size_t>(y + 1)) * X +
                 static_cast<std::size_t>(x + 1)) *
                    2 +
                c];
  };
  double want_sum = 0, scale = 0;
  for (std::int64_t z = 0; z < 3; ++z) {
    for (std::int64_t y = 0; y < 5; ++y) {
      for (std::int64_t x = 0; x < 7; ++x) {
        const std::size_t i = static_cast<std::size_t>((z * 5 + y) * 7 + x) * 2;
        const bool edge = z == 0 || z == 2 || y == 0 || y == 4 || x == 0 || x == 6;
        double o0 = 0, o1 = 0;
        if (edge) {
          o0 = at(z, y, x - 1, 0) + at(z, y + 1, x, 1) - at(z - 1, y, x, 0);
          o1 = (at(z, y, x - 1, 1) + at(z, y + 1, x, 0) - at(z - 1, y, x, 0)) * 2.0;
          want_sum += o0 + 3.0 * o1;
          scale += std::abs(o0) + 3.0 * std::abs(o1);
        }
        ASSERT_EQ(got[i], o0) << z << "," << y << "," << x;
        ASSERT_EQ(got[i + 1], o1) << z << "," << y << "," << x;
      }
    }
  }
  EXPECT_NEAR(sum.get<double>()[0], want_sum, 1e-12 * (1 + scale));
}

SKEIN_INSTANTIATE_BACKENDS(ElementwiseSkeleton);
SKEIN_INSTANTIATE_BACKENDS(StencilSkeleton);

}  // namespace kernel_skeleton_test
}  // namespace
}  // namespace skein::test

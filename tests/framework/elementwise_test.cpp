// SPDX-License-Identifier: BSD-3-Clause
// Elementwise kernels: generated kernels and the built-ins, run on every backend and compared with
// results computed on the host; layouts (vector path, unaligned starts, strided views,
// broadcasting), dtypes and promotion, several devices, and the errors.
#include <gtest/gtest.h>
#include "skein/detail/impl_access.hpp"

#include <array>
#include <atomic>
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>
#include <skein/skein.hpp>

#include "backends.hpp"
#include "checks.hpp"

namespace skein::test {
namespace {
namespace elementwise_test {

class Elementwise : public BackendTest {};

// Sizes around the kernels' edges: empty, one element, odd, not a multiple of a work group or of
// a vector, and a few MiB.
const std::size_t kSizes[] = {0, 1, 3, 17, 1000, 1023, 4099, (std::size_t{1} << 20) + 7};

// a*x + y may be fused into one rounding on the device (FMA contraction) or not.
bool axpy_ok(float got, float a, float x, float y) {
  return got == a * x + y || got == std::fma(a, x, y);
}
bool axpy_ok(double got, double a, double x, double y) {
  return got == a * x + y || got == std::fma(a, x, y);
}

TEST_P(Elementwise, AxpyFloat32AllSizes) {
  auto ctx = context();
  Queue queue(ctx);
  for (std::size_t n : kSizes) {
    SCOPED_TRACE(n);
    const auto x = random_reals<float>(n, 1), y = random_reals<float>(n, 2);
    auto dx = Array::from_host(queue, x), dy = Array::from_host(queue, y);
    const float a = 1.75f;
    Array z = axpy(queue, a, dx, dy);
    EXPECT_EQ(z.dtype(), Dtype::float32);
    EXPECT_EQ(z.shape(), Shape{n});
    const auto got = z.get<float>();
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_TRUE(axpy_ok(got[i], a, x[i], y[i])) << i << ": " << got[i];
  }
}

// spare_compute_units: the launch runs fewer work groups (each looping over more elements), the
// results the same at every size, strided and in place, with more spare units than the device
// has (all but one unit are left); LaunchGroups::per_chunk: a group per chunk of the range, the
// same results.
TEST_P(Elementwise, GroupCountsGiveTheSameResults) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t units = ctx.device(0).params().compute_units;
  std::vector<ElementwiseOptions> configs;
  for (std::size_t spare : {std::size_t{1}, std::size_t{2}, units, units + 7})
    configs.push_back({.name = "ew_spare", .spare_compute_units = spare});
  configs.push_back({.name = "ew_chunks", .groups = LaunchGroups::per_chunk});
  for (const ElementwiseOptions& options : configs) {
    const ElementwiseKernel twice_plus("double x, double y", "double z", "z = 2 * x + y", options);
    for (std::size_t n :
         {std::size_t{1}, std::size_t{31}, std::size_t{4097}, std::size_t{1000003}}) {
      SCOPED_TRACE(fmt::format("{} spare {} n {}", options.name, options.spare_compute_units, n));
      const auto x = random_reals<double>(n, 5), y = random_reals<double>(n, 6);
      const Array dx = Array::from_host(queue, x), dy = Array::from_host(queue, y);
      const auto got = twice_plus(queue, {dx, dy}).at(0).get<double>();
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 2 * x[i] + y[i]) << i;
      // Every other element, in place (z aliases y).
      const std::size_t h = (n + 1) / 2;
      const Array sx = dx.view(0, {h}, {2 * sizeof(double)}),
                  sy = dy.view(0, {h}, {2 * sizeof(double)});
      (void)twice_plus(queue, {sx, sy, sy});
      const auto after = dy.get<double>();
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(after[i], i % 2 == 0 ? 2 * x[i] + y[i] : y[i]) << "strided " << i;
    }
  }
}

// Spare units with per_chunk groups are refused when the kernel is made (the message names both
// and the kernel); the same kernel without the spare units then runs.
TEST_P(Elementwise, PerChunkGroupsWithSpareUnitsRefused) {
  auto ctx = context();
  Queue queue(ctx);
  expect_logic_error(
      [] {
        const ElementwiseKernel bad(
            "double x", "double z", "z = x + 1",
            {.name = "ew_both", .spare_compute_units = 2, .groups = LaunchGroups::per_chunk});
      },
      {"ew_both", "spare_compute_units = 2", "per_chunk"});
  const ElementwiseKernel good("double x", "double z", "z = x + 1",
                               {.name = "ew_both", .groups = LaunchGroups::per_chunk});
  const std::vector<double> x = random_reals<double>(777, 7);
  const auto got = good(queue, {Array::from_host(queue, x)}).at(0).get<double>();
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(got[i], x[i] + 1) << i;
}

TEST_P(Elementwise, AxpyInPlaceFloat64) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t n = 100003;
  const auto x = random_reals<double>(n, 3), y = random_reals<double>(n, 4);
  auto dx = Array::from_host(queue, x), dy = Array::from_host(queue, y);
  Array out = axpy(queue, -0.5, dx, dy, dy);  // y = -0.5 x + y
  EXPECT_EQ(out.data().adapter(), dy.data().adapter());
  const auto got = dy.get<double>();
  for (std::size_t i = 0; i < n; ++i) ASSERT_TRUE(axpy_ok(got[i], -0.5, x[i], y[i])) << i;
}

// Views that start at an element which is not 16-byte aligned: the same misalignment for every
// array (peeled head, then vectors), and different misalignments (element by element).
TEST_P(Elementwise, UnalignedStarts) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t n = 5000;
  const auto xs = random_reals<float>(n + 8, 5), ys = random_reals<float>(n + 8, 6);
  auto bx = Array::from_host(queue, xs), by = Array::from_host(queue, ys);
  auto bz = Array::zeros(queue, {n + 8}, Dtype::float32);
  for (auto [ox, oy, oz] : {std::tuple<std::size_t, std::size_t, std::size_t>{1, 1, 1},
                            {3, 3, 3},
                            {1, 2, 3},
                            {0, 1, 0}}) {
    SCOPED_TRACE(fmt::format("offsets {} {} {}", ox, oy, oz));
    bz.fill_zero();
    auto x = bx.view(ox, {n}), y = by.view(oy, {n}), z = bz.view(oz, {n});
    axpy(queue, 3.0f, x, y, z);
    const auto got = bz.get<float>();
    for (std::size_t i = 0; i < n + 8; ++i) {
      if (i >= oz && i < oz + n) {
        ASSERT_TRUE(axpy_ok(got[i], 3.0f, xs[i - oz + ox], ys[i - oz + oy])) << i;
      } else {
        ASSERT_EQ(got[i], 0.0f) << "element " << i << " outside the view was written";
      }
    }
  }
}

// Calls with every output given reuse the plan of an earlier call with the same argument kinds,
// dtypes, layouts and alignment: alternating buffers, scalar values, alignments, layouts, dtypes
// and contexts must each compute their own result, and a new context must get its own program.
TEST_P(Elementwise, KeptPlansFollowEachCall) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t n = 4099;
  ElementwiseKernel k("T a, T x, T y", "T z", "z = a * x + y", {.name = "kept_plans"});
  const auto xs = random_reals<float>(n + 8, 11), ys = random_reals<float>(n + 8, 12);
  const auto xs2 = random_reals<float>(n + 8, 13), ys2 = random_reals<float>(n + 8, 14);
  const Array x1 = Array::from_host(queue, xs), y1 = Array::from_host(queue, ys);
  const Array x2 = Array::from_host(queue, xs2), y2 = Array::from_host(queue, ys2);
  const Array z1 = Array::zeros(queue, {n + 8}, Dtype::float32);
  const Array z2 = Array::zeros(queue, {n + 8}, Dtype::float32);
  struct Case {
    const Array* x;
    const std::vector<float>* hx;
    const Array* y;
    const std::vector<float>* hy;
    const Array* z;
    std::size_t offset;  // of all three views
    std::size_t step;    // 1: contiguous; 2: every other element
    float a;
  };
  const std::vector<Case> cases = {
      {&x1, &xs, &y1, &ys, &z1, 0, 1, 2.0f},    {&x2, &xs2, &y2, &ys2, &z2, 0, 1, 3.0f},
      {&x1, &xs, &y2, &ys2, &z1, 0, 1, -1.5f},  {&x1, &xs, &y1, &ys, &z2, 1, 1, 0.25f},
      {&x2, &xs2, &y1, &ys, &z1, 3, 1, 5.0f},   {&x1, &xs, &y1, &ys, &z1, 0, 2, 7.0f},
      {&x2, &xs2, &y2, &ys2, &z2, 1, 2, -2.0f}, {&x1, &xs, &y1, &ys, &z1, 0, 1, 9.0f},
  };
  for (int round = 0; round < 2; ++round) {
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const auto& cs = cases[c];
      SCOPED_TRACE(fmt::format("round {} case {}", round, c));
      cs.z->fill_zero();
      const std::size_t m = (n - cs.offset) / cs.step;
      auto view = [&](const Array& a) {
        return cs.step == 1 ? a.view(cs.offset, {m})
                            : a.view(cs.offset, {m}, {cs.step * sizeof(float)});
      };
      const Array vz = view(*cs.z);
      if (c % 2 == 0) {
        k(queue, {cs.a, view(*cs.x), view(*cs.y), vz});
      } else {
        axpy(queue, cs.a, view(*cs.x), view(*cs.y), vz);
      }
      const auto got = cs.z->get<float>();
      for (std::size_t j = 0; j < m; ++j) {
        const std::size_t i = cs.offset + j * cs.step;
        ASSERT_TRUE(axpy_ok(got[i], cs.a, (*cs.hx)[i], (*cs.hy)[i])) << "element " << i;
      }
      for (std::size_t i = 0; i < n + 8; ++i) {
        const bool in_view =
            i >= cs.offset && (i - cs.offset) % cs.step == 0 && (i - cs.offset) / cs.step < m;
        if (!in_view) {
          ASSERT_EQ(got[i], 0.0f) << "element " << i << " outside the view was written";
        }
      }
    }
  }
  // Another dtype with the same shapes: its own plan.
  const auto xd = random_reals<double>(n, 15), yd = random_reals<double>(n, 16);
  const Array dx = Array::from_host(queue, xd), dy = Array::from_host(queue, yd);
  const Array dz = Array::empty(queue, {n}, Dtype::float64);
  k(queue, {4.0, dx, dy, dz});
  const auto gd = dz.get<double>();
  for (std::size_t i = 0; i < n; ++i) ASSERT_TRUE(axpy_ok(gd[i], 4.0, xd[i], yd[i])) << i;
  // A scalar that does not fit the parameter still raises on a kept plan.
  const auto xi = std::vector<std::int8_t>(n, 1);
  const Array ix = Array::from_host(queue, xi), iz = Array::empty(queue, {n}, Dtype::int8);
  k(queue, {std::int8_t{2}, ix, ix, iz});
  EXPECT_THROW(k(queue, {1000, ix, ix, iz}), LogicError);
  // A second context: the same call shape compiles and runs there.
  auto ctx2 = context();
  Queue queue2(ctx2);
  const Array x3 = Array::from_host(queue2, xs), y3 = Array::from_host(queue2, ys);
  const Array z3 = Array::empty(queue2, {n + 8}, Dtype::float32);
  const std::size_t built = k.programs_built();
  k(queue2, {2.0f, x3, y3, z3});
  EXPECT_EQ(k.programs_built(), built + 1);
  const auto g3 = z3.get<float>();
  for (std::size_t i = 0; i < n + 8; ++i) ASSERT_TRUE(axpy_ok(g3[i], 2.0f, xs[i], ys[i])) << i;
  // An array of the other context on the first context's queue is refused, plan or not.
  EXPECT_THROW(k(queue, {2.0f, x3, y1.view(0, {n + 8}), z1}), LogicError);
}

// A thread remembers the plan it called last: kernels made one after another with one signature
// and call shape (the later ones likely at the address of the one before), each called in turn and
// each after the one before is gone, compute their own operation; so does a call after its
// context was replaced by a new one.
TEST_P(Elementwise, KeptPlansBelongToTheirKernel) {
  const std::size_t n = 1000;
  const auto xs = random_reals<float>(n, 21), ys = random_reals<float>(n, 22);
  for (int round = 0; round < 2; ++round) {
    auto ctx = context();
    Queue queue(ctx);
    const Array x = Array::from_host(queue, xs), y = Array::from_host(queue, ys);
    const Array z = Array::empty(queue, {n}, Dtype::float32);
    for (int k = 1; k <= 4; ++k) {
      SCOPED_TRACE(fmt::format("round {} kernel {}", round, k));
      const auto op = fmt::format("z = a * x + {} * y", k);
      for (int call = 0; call < 2; ++call) {
        ElementwiseKernel kernel("float a, float x, float y", "float z", op,
                                 {.name = "kept_owner"});
        kernel(queue, {2.0f, x, y, z});
        kernel(queue, {2.0f, x, y, z});
        const auto got = z.get<float>();
        for (std::size_t i = 0; i < n; ++i) {
          const float want = 2.0f * xs[i] + static_cast<float>(k) * ys[i];
          ASSERT_NEAR(got[i], want, 1e-5f * (1.0f + std::abs(want))) << "element " << i;
        }
      }
    }
    // Two live kernels of one signature and call shape, called in turn.
    ElementwiseKernel plus("float a, float x, float y", "float z", "z = a * x + y",
                           {.name = "kept_owner"});
    ElementwiseKernel minus("float a, float x, float y", "float z", "z = a * x - y",
                            {.name = "kept_owner"});
    for (int call = 0; call < 4; ++call) {
      const bool p = call % 2 == 0;
      (p ? plus : minus)(queue, {2.0f, x, y, z});
      const auto got = z.get<float>();
      for (std::size_t i = 0; i < n; ++i) {
        const float want = p ? 2.0f * xs[i] + ys[i] : 2.0f * xs[i] - ys[i];
        ASSERT_NEAR(got[i], want, 1e-5f * (1.0f + std::abs(want)))
            << "call " << call << " element " << i;
      }
    }
  }
}

// Strided views (a transposed matrix, every other column) and NumPy broadcasting (a row against
// a column) take the general path.
TEST_P(Elementwise, StridedAndBroadcast) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t R = 37, C = 53;
  const auto m = random_reals<float>(R * C, 7);
  auto dm = Array::from_host(queue, m, {R, C});
  // Transposed: shape (C, R), strides (4, 4 C).
  auto t = dm.view(0, {C, R}, {sizeof(float), C * sizeof(float)});
  ElementwiseKernel twice("T x", "T z", "z = x + x", {.name = "twice"});
  Array zt = twice(queue, {t}).front();
  EXPECT_TRUE(zt.is_contiguous());
  auto got = zt.get<float>();
  for (std::size_t c = 0; c < C; ++c) {
    for (std::size_t r = 0; r < R; ++r) ASSERT_EQ(got[c * R + r], m[r * C + c] + m[r * C + c]);
  }
  // Every other column, written into every other column of another matrix.
  auto half = dm.view(0, {R, (C + 1) / 2}, {C * sizeof(float), 2 * sizeof(float)});
  auto dst = Array::zeros(queue, {R, C}, Dtype::float32);
  auto dst_half = dst.view(0, {R, (C + 1) / 2}, {C * sizeof(float), 2 * sizeof(float)});
  twice(queue, {half, dst_half});
  got = dst.get<float>();
  for (std::size_t r = 0; r < R; ++r) {
    for (std::size_t c = 0; c < C; ++c) {
      ASSERT_EQ(got[r * C + c], c % 2 == 0 ? m[r * C + c] * 2 : 0.0f) << r << "," << c;
    }
  }
  // A row (C) against a column (R, 1): the result is (R, C).
  const auto row = random_reals<float>(C, 8), col = random_reals<float>(R, 9);
  auto drow = Array::from_host(queue, row), dcol = Array::from_host(queue, col, {R, 1});
  Array sum = binary(queue, BinaryOp::add, drow, dcol);
  EXPECT_EQ(sum.shape(), (Shape{R, C}));
  got = sum.get<float>();
  for (std::size_t r = 0; r < R; ++r) {
    for (std::size_t c = 0; c < C; ++c) ASSERT_EQ(got[r * C + c], row[c] + col[r]);
  }
  // Three dimensions that do not merge: a (4, 5, 6) array with its axes permuted to (6, 4, 5).
  const auto c3 = random_reals<float>(4 * 5 * 6, 18);
  auto d3 = Array::from_host(queue, c3, {4, 5, 6});
  auto p3 = d3.view(0, {6, 4, 5}, {4, 5 * 6 * 4, 6 * 4});
  got = twice(queue, {p3}).front().get<float>();
  for (std::size_t a = 0; a < 6; ++a) {
    for (std::size_t b = 0; b < 4; ++b) {
      for (std::size_t c = 0; c < 5; ++c) {
        const float v = c3[b * 30 + c * 6 + a];
        ASSERT_EQ(got[a * 20 + b * 5 + c], v + v) << a << "," << b << "," << c;
      }
    }
  }
  // Copy of a strided view into a contiguous array.
  auto back = Array::empty(queue, {C, R}, Dtype::float32);
  copy(queue, t, back);
  got = back.get<float>();
  for (std::size_t c = 0; c < C; ++c) {
    for (std::size_t r = 0; r < R; ++r) ASSERT_EQ(got[c * R + r], m[r * C + c]);
  }
}

// A user kernel: placeholders, a declared dtype, a scalar, a raw array indexed with i and n, and
// two outputs.
TEST_P(Elementwise, UserKernelWithRawArgumentAndTwoOutputs) {
  auto ctx = context();
  Queue queue(ctx);
  ElementwiseKernel k("T x, raw T r, int32 k", "T s, float64 d",
                      "s = x + r[n - 1 - i] * (T)k; d = (double)x - (double)i",
                      {.name = "user_two_outputs"});
  for (std::size_t n : {std::size_t{1}, std::size_t{998}, std::size_t{70001}}) {
    SCOPED_TRACE(n);
    const auto x = random_reals<float>(n, 10), r = random_reals<float>(n, 11);
    auto dx = Array::from_host(queue, x), dr = Array::from_host(queue, r);
    auto outs = k(queue, {dx, dr, 3});
    ASSERT_EQ(outs.size(), 2u);
    EXPECT_EQ(outs[0].dtype(), Dtype::float32);
    EXPECT_EQ(outs[1].dtype(), Dtype::float64);
    const auto s = outs[0].get<float>();
    const auto d = outs[1].get<double>();
    for (std::size_t i = 0; i < n; ++i) {
      const float expected = x[i] + r[n - 1 - i] * 3.0f;
      ASSERT_TRUE(s[i] == expected || s[i] == std::fma(r[n - 1 - i], 3.0f, x[i])) << i;
      ASSERT_EQ(d[i], static_cast<double>(x[i]) - static_cast<double>(i)) << i;
    }
  }
  // A scalar for an array parameter is broadcast; with only a raw array besides, the outputs
  // give the shape.
  auto dx = Array::from_host(queue, std::vector<float>{1, 2, 3});
  EXPECT_THROW(k(queue, {2.5f, dx, 1}), LogicError);
  auto s = Array::empty(queue, {3}, Dtype::float32), d = Array::empty(queue, {3}, Dtype::float64);
  k(queue, {2.5f, dx, 1, s, d});
  EXPECT_EQ(s.get<float>(), (std::vector<float>{2.5f + 3, 2.5f + 2, 2.5f + 1}));
  EXPECT_EQ(d.get<double>(), (std::vector<double>{2.5, 1.5, 0.5}));
}

TEST_P(Elementwise, TemplatesAndComplexModules) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t n = 1001;
  std::vector<std::complex<float>> a(n), b(n);
  const auto ra = random_reals<float>(2 * n, 12), rb = random_reals<float>(2 * n, 13);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = {ra[2 * i], ra[2 * i + 1]};
    b[i] = {rb[2 * i] + (rb[2 * i] >= 0 ? 1.f : -1.f), rb[2 * i + 1]};
  }
  auto da = Array::from_host(queue, a), db = Array::from_host(queue, b);
  ElementwiseKernel k("complex64 a, complex64 b", "complex64 z", "z = ${mul}(a, ${conj}(b))",
                      {.name = "mul_conj",
                       .globals = {{"mul", functions::mul({Dtype::complex64, Dtype::complex64})},
                                   {"conj", functions::conj(Dtype::complex64)}}});
  const auto got = k(queue, {da, db}).front().get<std::complex<float>>();
  for (std::size_t i = 0; i < n; ++i) {
    const auto e = std::complex<double>(a[i]) * std::conj(std::complex<double>(b[i]));
    ASSERT_LE(std::abs(std::complex<double>(got[i]) - e), 1e-6 * (1 + std::abs(e))) << i;
  }
  // Built-ins on complex arrays.
  const auto q = binary(queue, BinaryOp::divide, da, db).get<std::complex<float>>();
  const auto p = binary(queue, BinaryOp::multiply, da, db).get<std::complex<float>>();
  for (std::size_t i = 0; i < n; ++i) {
    const auto e = std::complex<double>(a[i]) / std::complex<double>(b[i]);
    ASSERT_LE(std::abs(std::complex<double>(q[i]) - e), 1e-6 * (1 + std::abs(e))) << i;
    const auto f = std::complex<double>(a[i]) * std::complex<double>(b[i]);
    ASSERT_LE(std::abs(std::complex<double>(p[i]) - f), 1e-6 * (1 + std::abs(f))) << i;
  }
}

// NumPy 2's promotion rules (NEP 50), with C++ scalars as Python's.
TEST(ElementwisePromotion, FollowsNumPy) {
  auto types = [](std::initializer_list<Dtype> ds) {
    Dtype r = *ds.begin();
    for (Dtype d : ds) r = promote_types(r, d);
    return r;
  };
  EXPECT_EQ(types({Dtype::int32, Dtype::float32}), Dtype::float64);
  EXPECT_EQ(types({Dtype::int16, Dtype::float32}), Dtype::float32);
  EXPECT_EQ(types({Dtype::int64, Dtype::uint64}), Dtype::float64);
  EXPECT_EQ(types({Dtype::int8, Dtype::uint8}), Dtype::int16);
  EXPECT_EQ(types({Dtype::uint32, Dtype::int32}), Dtype::int64);
  EXPECT_EQ(types({Dtype::complex64, Dtype::float64}), Dtype::complex128);
  EXPECT_EQ(types({Dtype::float16, Dtype::int8}), Dtype::float16);
  EXPECT_EQ(types({Dtype::float16, Dtype::uint8}), Dtype::float16);
  EXPECT_EQ(types({Dtype::float16, Dtype::int16}), Dtype::float32);
  EXPECT_EQ(types({Dtype::float16, Dtype::int32}), Dtype::float64);
  EXPECT_EQ(types({Dtype::float16, Dtype::float32}), Dtype::float32);
  EXPECT_EQ(types({Dtype::float16, Dtype::bfloat16}), Dtype::float32);
  EXPECT_EQ(types({Dtype::bfloat16, Dtype::complex64}), Dtype::complex64);

  // Scalars are weak: their kind counts, not their precision.
  auto rt = [](std::initializer_list<Operand> ops) {
    return result_type(std::span<const Operand>(ops.begin(), ops.size()));
  };
  const Operand f32 = Operand::typed(Dtype::float32, 1.0), i8 = Operand::typed_int(Dtype::int8, 1),
                u8 = Operand::typed_int(Dtype::uint8, 1), i32 = Operand::typed_int(Dtype::int32, 1),
                h = Operand(float16(1.0f));
  EXPECT_EQ(rt({f32, 2.0}), Dtype::float32);
  EXPECT_EQ(rt({i8, 3}), Dtype::int8);
  EXPECT_EQ(rt({i32, 2.5}), Dtype::float64);
  EXPECT_EQ(rt({f32, std::complex<double>(1, 1)}), Dtype::complex64);
  EXPECT_EQ(rt({Operand::typed(Dtype::float64, 1.0), std::complex<float>(1, 1)}),
            Dtype::complex128);
  EXPECT_EQ(rt({i32, std::complex<double>(0, 1)}), Dtype::complex128);
  EXPECT_EQ(rt({h, 1}), Dtype::float16);
  EXPECT_EQ(rt({h, 1.0}), Dtype::float16);
  EXPECT_EQ(rt({2, 3}), Dtype::int64);
  EXPECT_EQ(rt({2, 3.0f}), Dtype::float64);
  // A weak integer must fit (NumPy 2's OverflowError).
  EXPECT_THROW(rt({i8, 300}), LogicError);
  EXPECT_THROW(rt({u8, -1}), LogicError);
  EXPECT_EQ(rt({u8, 255}), Dtype::uint8);
}

// A scalar's bytes as a dtype (what a launch packs): bytes_into, the allocation-free form, and
// bytes_as give the bytes the host's own conversion gives, and refuse the same values.
TEST(ElementwiseScalars, BytesIntoMatchesTheHostConversion) {
  auto bytes = [](const Operand& o, Dtype d, bool truncate = false) {
    std::array<std::byte, 16> b{};
    const std::size_t n = o.bytes_into(d, b, "test", truncate);
    const std::vector<std::byte> v = o.bytes_as(d, "test", truncate);
    EXPECT_EQ(n, v.size());
    EXPECT_TRUE(std::equal(v.begin(), v.end(), b.begin()));
    return std::vector<std::byte>(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
  };
  auto host = [](const auto& v) {
    std::vector<std::byte> out(sizeof(v));
    std::memcpy(out.data(), &v, sizeof(v));
    return out;
  };
  EXPECT_EQ(bytes(Operand(0.1), Dtype::float32), host(static_cast<float>(0.1)));
  EXPECT_EQ(bytes(Operand(0.1), Dtype::float64), host(0.1));
  EXPECT_EQ(bytes(Operand(2.0f), Dtype::float64), host(2.0));
  EXPECT_EQ(bytes(Operand(-7), Dtype::int16), host(std::int16_t{-7}));
  EXPECT_EQ(bytes(Operand(std::uint64_t{1} << 40), Dtype::int64), host(std::int64_t{1} << 40));
  EXPECT_EQ(bytes(Operand(3), Dtype::float32), host(3.0f));
  EXPECT_EQ(bytes(Operand(std::complex<double>(1.5, -2)), Dtype::complex128),
            host(std::complex<double>(1.5, -2)));
  EXPECT_EQ(bytes(Operand(std::complex<double>(1.5, -2)), Dtype::complex64),
            host(std::complex<float>(1.5f, -2.0f)));
  EXPECT_EQ(bytes(Operand(2.75), Dtype::int32, true), host(std::int32_t{2}));  // truncated
  EXPECT_EQ(bytes(Operand(300), Dtype::uint8, true), host(std::uint8_t{44}));  // wraps as in C
  std::array<std::byte, 16> b{};
  EXPECT_THROW((void)Operand(2.5).bytes_into(Dtype::int32, b, "test"), LogicError);
  EXPECT_THROW((void)Operand(300).bytes_into(Dtype::int8, b, "test"), LogicError);
  EXPECT_THROW((void)Operand(std::complex<double>(0, 1)).bytes_into(Dtype::float64, b, "test"),
               LogicError);
}

TEST_P(Elementwise, MixedDtypesPromoteOnTheDevice) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t n = 777;
  std::vector<std::int32_t> a(n);
  const auto b = random_reals<float>(n, 14);
  for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<std::int32_t>(i * 7919) - 3000000;
  auto da = Array::from_host(queue, a), db = Array::from_host(queue, b);
  Array s = binary(queue, BinaryOp::add, da, db);
  ASSERT_EQ(s.dtype(), Dtype::float64);  // int32 + float32 -> float64, as NumPy
  auto got = s.get<double>();
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(got[i], static_cast<double>(a[i]) + static_cast<double>(b[i]));
  // Integer division is true division.
  Array q = binary(queue, BinaryOp::divide, da, 7);
  ASSERT_EQ(q.dtype(), Dtype::float64);
  got = q.get<double>();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], static_cast<double>(a[i]) / 7.0);
  // int8 arithmetic wraps around; a weak scalar keeps int8.
  std::vector<std::int8_t> c(256);
  for (int i = 0; i < 256; ++i) c[static_cast<std::size_t>(i)] = static_cast<std::int8_t>(i - 128);
  auto dc = Array::from_host(queue, c);
  Array w = binary(queue, BinaryOp::multiply, dc, 3);
  ASSERT_EQ(w.dtype(), Dtype::int8);
  const auto gw = w.get<std::int8_t>();
  for (std::size_t i = 0; i < 256; ++i) ASSERT_EQ(gw[i], static_cast<std::int8_t>(c[i] * 3)) << i;
  EXPECT_THROW(binary(queue, BinaryOp::add, dc, 1000), LogicError);
  // maximum / minimum propagate NaN.
  std::vector<float> x{1.f, std::nanf(""), -2.f, 5.f}, y{2.f, 0.f, std::nanf(""), -5.f};
  auto dx = Array::from_host(queue, x), dy = Array::from_host(queue, y);
  const auto mx = binary(queue, BinaryOp::maximum, dx, dy).get<float>();
  const auto mn = binary(queue, BinaryOp::minimum, dx, dy).get<float>();
  EXPECT_EQ(mx[0], 2.f);
  EXPECT_TRUE(std::isnan(mx[1]));
  EXPECT_TRUE(std::isnan(mx[2]));
  EXPECT_EQ(mx[3], 5.f);
  EXPECT_EQ(mn[0], 1.f);
  EXPECT_TRUE(std::isnan(mn[1]));
  EXPECT_TRUE(std::isnan(mn[2]));
  EXPECT_EQ(mn[3], -5.f);
}

TEST_P(Elementwise, AstypeFillAndHalfFloats) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t n = 10007;
  auto x = random_reals<float>(n, 15);
  x[0] = 65504.f;  // largest float16
  x[1] = 1e-7f;    // float16 subnormal range
  x[2] = 70000.f;  // float16 overflow
  x[3] = -2.5f;
  auto dx = Array::from_host(queue, x);
  const auto h = astype(queue, dx, Dtype::float16).get<float16>();
  const auto bf = astype(queue, dx, Dtype::bfloat16).get<bfloat16>();
  const auto i = astype(queue, dx, Dtype::int32).get<std::int32_t>();
  const auto d = astype(queue, dx, Dtype::float64).get<double>();
  for (std::size_t k = 0; k < n; ++k) {
    ASSERT_EQ(h[k].bits, float16(x[k]).bits) << k << ": " << x[k];
    ASSERT_EQ(bf[k].bits, bfloat16(x[k]).bits) << k;
    ASSERT_EQ(i[k], static_cast<std::int32_t>(x[k])) << k;  // truncation toward zero
    ASSERT_EQ(d[k], static_cast<double>(x[k])) << k;
  }
  // float16 arithmetic: computed in float, rounded once.
  auto dh = astype(queue, dx, Dtype::float16);
  Array s = binary(queue, BinaryOp::add, dh, dh);
  ASSERT_EQ(s.dtype(), Dtype::float16);
  const auto gs = s.get<float16>();
  for (std::size_t k = 0; k < n; ++k) {
    const float hv = static_cast<float>(h[k]);
    ASSERT_EQ(gs[k].bits, float16(hv + hv).bits) << k;
  }
  // float16 + int16 -> float32, as NumPy.
  std::vector<std::int16_t> si(n);
  for (std::size_t k = 0; k < n; ++k) si[k] = static_cast<std::int16_t>(k % 3000);
  Array m = binary(queue, BinaryOp::multiply, dh, Array::from_host(queue, si));
  ASSERT_EQ(m.dtype(), Dtype::float32);
  const auto gm = m.get<float>();
  for (std::size_t k = 0; k < n; ++k)
    ASSERT_EQ(gm[k], static_cast<float>(h[k]) * static_cast<float>(si[k])) << k;

  // fill: floats truncate for integer arrays (NumPy's fill); strided views too.
  auto ai = Array::empty(queue, {9, 5}, Dtype::int32);
  fill(queue, ai, 2.7);
  EXPECT_EQ(ai.get<std::int32_t>(), std::vector<std::int32_t>(45, 2));
  fill(queue, ai.view(1, {9, 2}, {5 * 4, 2 * 4}), -1);
  const auto gi = ai.get<std::int32_t>();
  for (std::size_t r = 0; r < 9; ++r) {
    for (std::size_t c = 0; c < 5; ++c)
      ASSERT_EQ(gi[r * 5 + c], (c == 1 || c == 3) ? -1 : 2) << r << "," << c;
  }
  auto af = Array::empty(queue, {1025}, Dtype::float16);
  fill(queue, af, 0.1);
  for (auto v : af.get<float16>()) ASSERT_EQ(v.bits, float16(0.1f).bits);
  EXPECT_THROW(fill(queue, af, std::complex<double>(1, 2)), LogicError);
  EXPECT_THROW(astype(queue, Array::zeros(queue, {3}, Dtype::complex64), Dtype::float32),
               LogicError);
}

TEST_P(Elementwise, CompareAndUnary) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t n = 4099;
  auto x = random_reals<float>(n, 16), y = random_reals<float>(n, 17);
  x[5] = std::nanf("");
  y[6] = x[6];
  auto dx = Array::from_host(queue, x), dy = Array::from_host(queue, y);
  const CompareOp ops[] = {CompareOp::equal,      CompareOp::not_equal, CompareOp::less,
                           CompareOp::less_equal, CompareOp::greater,   CompareOp::greater_equal};
  for (CompareOp op : ops) {
    Array c = compare(queue, op, dx, dy);
    ASSERT_EQ(c.dtype(), Dtype::uint8);
    const auto g = c.get<std::uint8_t>();
    for (std::size_t i = 0; i < n; ++i) {
      bool e = false;
      switch (op) {
        case CompareOp::equal: e = x[i] == y[i]; break;
        case CompareOp::not_equal: e = x[i] != y[i]; break;
        case CompareOp::less: e = x[i] < y[i]; break;
        case CompareOp::less_equal: e = x[i] <= y[i]; break;
        case CompareOp::greater: e = x[i] > y[i]; break;
        case CompareOp::greater_equal: e = x[i] >= y[i]; break;
      }
      ASSERT_EQ(g[i], e ? 1 : 0) << name(op) << " " << i;
    }
  }
  // Unary float functions against the host's, to a few ulp.
  std::vector<float> pos(n);
  for (std::size_t i = 0; i < n; ++i) pos[i] = std::fabs(x[i] == x[i] ? x[i] : 1.f) / 100 + 0.01f;
  auto dp = Array::from_host(queue, pos);
  struct Case {
    UnaryOp op;
    double (*f)(double);
  };
  const Case cases[] = {{UnaryOp::sqrt, [](double v) { return std::sqrt(v); }},
                        {UnaryOp::exp, [](double v) { return std::exp(v); }},
                        {UnaryOp::log, [](double v) { return std::log(v); }},
                        {UnaryOp::sin, [](double v) { return std::sin(v); }},
                        {UnaryOp::cos, [](double v) { return std::cos(v); }},
                        {UnaryOp::tanh, [](double v) { return std::tanh(v); }},
                        {UnaryOp::floor, [](double v) { return std::floor(v); }},
                        {UnaryOp::ceil, [](double v) { return std::ceil(v); }},
                        {UnaryOp::negative, [](double v) { return -v; }},
                        {UnaryOp::square, [](double v) { return v * v; }},
                        {UnaryOp::absolute, [](double v) { return std::fabs(v); }}};
  for (const auto& c : cases) {
    const auto g = unary(queue, c.op, dp).get<float>();
    for (std::size_t i = 0; i < n; ++i) {
      const double e = c.f(pos[i]);
      ASSERT_LE(std::fabs(g[i] - e), 8e-7 * std::max(1.0, std::fabs(e)))
          << name(c.op) << " " << pos[i];
    }
  }
  // Integers: NumPy's float types, and wrapping negation.
  std::vector<std::int8_t> i8{-128, -1, 0, 5, 127};
  auto d8 = Array::from_host(queue, i8);
  Array s8 = unary(queue, UnaryOp::sqrt, d8);
  EXPECT_EQ(s8.dtype(), Dtype::float16);
  EXPECT_EQ(unary(queue, UnaryOp::negative, d8).get<std::int8_t>(),
            (std::vector<std::int8_t>{-128, 1, 0, -5, -127}));
  EXPECT_EQ(unary(queue, UnaryOp::absolute, d8).get<std::int8_t>(),
            (std::vector<std::int8_t>{-128, 1, 0, 5, 127}));
  EXPECT_EQ(s8.get<float16>()[3].bits, float16(std::sqrt(5.0f)).bits);
  EXPECT_EQ(
      unary(queue, UnaryOp::sqrt, Array::from_host(queue, std::vector<std::int32_t>{4})).dtype(),
      Dtype::float64);
  // Complex: absolute is the real magnitude; conjugate.
  std::vector<std::complex<double>> z{{3, 4}, {-1, 0}, {0, -2}};
  auto dz = Array::from_host(queue, z);
  Array az = unary(queue, UnaryOp::absolute, dz);
  EXPECT_EQ(az.dtype(), Dtype::float64);
  EXPECT_EQ(az.get<double>(), (std::vector<double>{5, 1, 2}));
  EXPECT_EQ(unary(queue, UnaryOp::conjugate, dz).get<std::complex<double>>(),
            (std::vector<std::complex<double>>{{3, -4}, {-1, -0.0}, {0, 2}}));
  EXPECT_THROW(unary(queue, UnaryOp::sqrt, dz), LogicError);
}

// One argument list per device, launched together; the pieces have different sizes.
TEST_P(Elementwise, PerDevice) {
  SKEIN_NEED_DEVICES(2);
  const std::size_t ndev = std::min<std::size_t>(devices().size(), 4);
  auto ctx = context(ndev);
  Queue queue(ctx);
  ElementwiseKernel k("T a, T x, T y", "T z", "z = a * x + y", {.name = "axpy_per_device"});
  MultiDevice<std::vector<Operand>> args;
  std::vector<std::vector<float>> xs, ys;
  for (std::size_t d = 0; d < ndev; ++d) {
    const std::size_t n = 1000 + 777 * d;
    xs.push_back(random_reals<float>(n, 20 + static_cast<std::uint32_t>(d)));
    ys.push_back(random_reals<float>(n, 30 + static_cast<std::uint32_t>(d)));
    args.set(d,
             {0.25f, Array::from_host(queue, xs[d], {}, d), Array::from_host(queue, ys[d], {}, d)});
  }
  auto outs = k.per_device(queue, args);
  for (std::size_t d = 0; d < ndev; ++d) {
    ASSERT_EQ(outs[d].front().device_idx(), d);
    const auto got = outs[d].front().get<float>();
    for (std::size_t i = 0; i < got.size(); ++i)
      ASSERT_TRUE(axpy_ok(got[i], 0.25f, xs[d][i], ys[d][i])) << d << ":" << i;
  }
  // Arrays of another device in a device's list are refused.
  MultiDevice<std::vector<Operand>> wrong = args;
  wrong.set(0, args[1]);
  EXPECT_THROW(k.per_device(queue, wrong), LogicError);
}

// Several threads launch the same kernels at once: a user's ElementwiseKernel (one object, shared)
// and the built-in axpy (shared by the whole process), each thread with its own arrays, scalar and
// queue. Every result is checked on the host: a launch that took another thread's arguments (on
// OpenCL the arguments are set on one cl_kernel per device) gives a wrong element.
TEST_P(Elementwise, ThreadsShareOneKernel) {
  auto ctx = context();
  ElementwiseKernel k("T a, T x, T y", "T z", "z = a * x + y", {.name = "axpy_threads"});
  constexpr int kThreads = 4;
  constexpr int kRounds = 40;
  std::atomic<int> wrong{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        Queue queue(ctx);
        const std::size_t n = 3001 + 1000 * static_cast<std::size_t>(t);  // a size per thread
        const auto x = random_reals<float>(n, 100 + static_cast<std::uint32_t>(t));
        const auto y = random_reals<float>(n, 200 + static_cast<std::uint32_t>(t));
        const Array dx = Array::from_host(queue, x);
        const Array dy = Array::from_host(queue, y);
        for (int r = 0; r < kRounds; ++r) {
          const float a = static_cast<float>(t + 1) + 0.5f * static_cast<float>(r);
          const Array user = k(queue, {a, dx, dy}).front();
          const Array builtin = axpy(queue, a, dx, dy);
          const auto got_user = user.get<float>();
          const auto got_builtin = builtin.get<float>();
          for (std::size_t i = 0; i < n; ++i) {
            if (got_user.size() != n || got_builtin.size() != n ||
                !axpy_ok(got_user[i], a, x[i], y[i]) || !axpy_ok(got_builtin[i], a, x[i], y[i])) {
              ++wrong;
              break;
            }
          }
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << "thread " << t << ": " << e.what();
        ++failed;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong.load(), 0) << "launches that computed with another thread's arguments";
}

// Repeated calls reuse the program kept in memory (nothing is generated again); another
// signature or another context builds its own. The memory cache holds a context only while
// something else does.
TEST_P(Elementwise, CachedPerContextAndSignature) {
  ElementwiseKernel k("T x", "T z", "z = x * (T)3", {.name = "triple"});
  std::weak_ptr<Context::Impl> contexts[2];
  for (int round = 0; round < 2; ++round) {
    auto ctx = context();
    contexts[round] = detail::impl_of(ctx);
    Queue queue(ctx);
    auto dx = Array::from_host(queue, std::vector<std::int64_t>{1, -2, 3});
    for (int call = 0; call < 3; ++call) {
      EXPECT_EQ(k(queue, {dx}).front().get<std::int64_t>(), (std::vector<std::int64_t>{3, -6, 9}));
    }
    EXPECT_EQ(k.programs_built(), static_cast<std::size_t>(round + 1));
    // The build for the second context let the first go: only the cache held it.
    if (round == 1) {
      EXPECT_TRUE(contexts[0].expired());
    }
  }
  // The second context is only in the cache now; the next build (a new signature) lets it go.
  EXPECT_FALSE(contexts[1].expired());
  auto ctx = context();
  Queue queue(ctx);
  auto dx = Array::from_host(queue, std::vector<float>{1, 2});
  EXPECT_EQ(k(queue, {dx}).front().get<float>(), (std::vector<float>{3, 6}));
  EXPECT_EQ(k.programs_built(), 3u);
  EXPECT_TRUE(contexts[1].expired());
  // Dropping the kernel drops its entries, and the contexts only they held.
  std::weak_ptr<Context::Impl> held;
  {
    ElementwiseKernel other("T x", "T z", "z = x", {.name = "ident"});
    {
      auto c = context();
      held = detail::impl_of(c);
      Queue q2(c);
      other(q2, {Array::from_host(q2, std::vector<float>{1})});
    }
    EXPECT_EQ(other.programs_built(), 1u);
    EXPECT_FALSE(held.expired());
  }
  EXPECT_TRUE(held.expired());
}

TEST_P(Elementwise, Errors) {
  auto ctx = context();
  Queue queue(ctx);
  auto x = Array::from_host(queue, std::vector<float>{1, 2, 3});
  auto y = Array::from_host(queue, std::vector<float>{1, 2});
  auto xi = Array::from_host(queue, std::vector<std::int32_t>{1, 2, 3});
  ElementwiseKernel k("T a, T x, float32 y", "T z", "z = a * x + y", {.name = "errs"});
  // Wrong number of arguments names the parameters.
  try {
    k(queue, {1.0f, x});
    FAIL() << "no error";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("T a, T x, float32 y"), std::string::npos) << e.what();
  }
  // An array of the wrong dtype for a declared type.
  try {
    k(queue, {1.0f, x, xi});
    FAIL() << "no error";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("int32 array; the parameter is declared float32"),
              std::string::npos)
        << e.what();
  }
  // Placeholder bound to two dtypes.
  EXPECT_THROW(k(queue, {x, xi, x}), LogicError);
  // Shapes that do not broadcast, an output of the wrong shape.
  EXPECT_THROW(k(queue, {1.0f, x, y}), LogicError);
  EXPECT_THROW(k(queue, {1.0f, x, x, y}), LogicError);
  // A scalar for an output.
  EXPECT_THROW(k(queue, {1.0f, x, x, 2.0f}), LogicError);
  // Arrays of another context.
  auto other = context();
  Queue other_queue(other);
  auto foreign = Array::from_host(other_queue, std::vector<float>{1, 2, 3});
  EXPECT_THROW(k(queue, {1.0f, x, foreign}), LogicError);
  // No array at all.
  EXPECT_THROW(k(queue, {1.0f, 2.0f, 3.0f}), LogicError);
  // Raw parameters need contiguous arrays.
  ElementwiseKernel raw("raw T r", "T z", "z = r[i]", {.name = "raw_errs"});
  auto m = Array::from_host(queue, std::vector<float>(12, 1.f), {3, 4});
  auto zz = Array::empty(queue, {4, 3}, Dtype::float32);
  EXPECT_THROW(raw(queue, {m.view(0, {4, 3}, {4, 16}), zz}), LogicError);
  // Declarations.
  EXPECT_THROW(ElementwiseKernel("T x", "", "x", {}), LogicError);              // no output
  EXPECT_THROW(ElementwiseKernel("T x, T x", "T z", "z = x", {}), LogicError);  // duplicate
  EXPECT_THROW(ElementwiseKernel("T i", "T z", "z = i", {}), LogicError);       // reserved
  EXPECT_THROW(ElementwiseKernel("float* x", "T z", "z = x", {}), LogicError);  // C syntax
  EXPECT_THROW(ElementwiseKernel("T", "T z", "z = 1", {}), LogicError);         // no name
  EXPECT_THROW(ElementwiseKernel("T x", "T z", "z = x", {.name = "3d"}), LogicError);
  // A bad operation: CompileError with the generated source.
  ElementwiseKernel bad("T x", "T z", "z = x +* undefined_name", {.name = "bad_op"});
  try {
    bad(queue, {x});
    FAIL() << "no error";
  } catch (const CompileError& e) {
    EXPECT_NE(e.source().find("z = x +* undefined_name"), std::string::npos);
    EXPECT_FALSE(e.log().empty());
  }
  // An unbound placeholder in the output.
  ElementwiseKernel unbound("float32 x", "U z", "z = x", {.name = "unbound"});
  EXPECT_THROW(unbound(queue, {x}), LogicError);
  EXPECT_EQ(unbound(queue, {x, xi}).front().get<std::int32_t>(),
            (std::vector<std::int32_t>{1, 2, 3}));
  // Built-ins: an output of the wrong dtype.
  EXPECT_THROW(axpy(queue, 1.0f, x, x, xi), LogicError);
}

// INFINITY and NAN in a kernel's text mean the same on every backend (OpenCL C has them built in;
// the CUDA prelude defines them).
TEST_P(Elementwise, InfinityAndNanInTheOperation) {
  auto ctx = context();
  Queue queue(ctx);
  const std::vector<double> x{-2.0, 0.5, 200.0, 3.0};
  auto dx = Array::from_host(queue, x);
  ElementwiseKernel k("double x", "double z", "z = x < 0 ? -INFINITY : (x > 100 ? NAN : x)",
                      {.name = "clip_marks"});
  const auto got = k(queue, {dx})[0].get<double>();
  ASSERT_EQ(got.size(), 4u);
  EXPECT_TRUE(std::isinf(got[0]) && got[0] < 0);
  EXPECT_EQ(got[1], 0.5);
  EXPECT_TRUE(std::isnan(got[2]));
  EXPECT_EQ(got[3], 3.0);
  ReductionKernel lowest("double x", "double m", "x", "a < b ? a : b", "INFINITY",
                         {.name = "lowest_of"});
  EXPECT_EQ(reduction_value<double>(lowest(queue, {dx})), -2.0);
}

// A generated kernel may not take the name of an OpenCL C built-in function (PoCL built such an
// entry point under another name, which the launch did not find): a clear LogicError on every
// backend, for elementwise, reduction and stencil kernels alike; a prefixed name works.
TEST_P(Elementwise, KernelNamesOfOpenClBuiltinsAreRefused) {
  for (const char* name :
       {"distance", "abs_diff", "dot", "sin", "max", "native_exp", "convert_float", "vload4"}) {
    SCOPED_TRACE(name);
    try {
      ElementwiseKernel k("T x", "T z", "z = x", {.name = name});
      ADD_FAILURE() << "no exception";
    } catch (const LogicError& e) {
      EXPECT_NE(std::string(e.what()).find("built-in function"), std::string::npos) << e.what();
      // The hint names the kernel's own prefixed name, not a placeholder.
      EXPECT_NE(std::string(e.what()).find(std::string("'my_") + name + "'"), std::string::npos)
          << e.what();
    }
    EXPECT_THROW(ReductionKernel("T x", "T y", "x", "a + b", "0", {.name = name}), LogicError);
    EXPECT_THROW(StencilKernel("T u", "T out", "out = u", {.name = name}), LogicError);
  }
  auto ctx = context();
  Queue queue(ctx);
  ElementwiseKernel ok("double a, double b", "double d", "d = fabs(a - b)",
                       {.name = "my_distance"});
  auto x = Array::from_host(queue, std::vector<double>{1.0, -2.0});
  EXPECT_EQ(ok(queue, {x, 0.5})[0].get<double>(), (std::vector<double>{0.5, 2.5}));
}

TEST_P(Elementwise, SourceIsInspectable) {
  auto ctx = context();
  Queue queue(ctx);
  auto x = Array::from_host(queue, std::vector<float>{1, 2, 3});
  ElementwiseKernel k("T x", "T z", "z = x * x", {.name = "square_it"});
  const std::vector<Operand> args{x};
  const std::string src = k.source(queue, args);
  EXPECT_NE(src.find("KERNEL void square_it("), std::string::npos);
  EXPECT_NE(src.find("uint4"), std::string::npos);  // the vector path
  EXPECT_NE(src.find("z = x * x"), std::string::npos);
}

SKEIN_INSTANTIATE_BACKENDS(Elementwise);

}  // namespace elementwise_test
}  // namespace
}  // namespace skein::test

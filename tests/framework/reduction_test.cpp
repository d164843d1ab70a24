// SPDX-License-Identifier: BSD-3-Clause
// Reductions: whole-array (fast and deterministic), per axis, over several devices, the built-ins
// and user kernels, compared with results computed on the host; the deterministic mode is
// checked bit for bit against a host implementation of the canonical tree, for many splits. (The
// whole-array reductions of several groups in one launch: reduction_one_launch_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <skein/config.hpp>
#include <skein/skein.hpp>

#include "canonical_tree.hpp"
#include "reduction_checks.hpp"
#include "backends.hpp"
#include "skein/detail/cuda/prelude.hpp"
#include "skein/detail/reduction_paths.hpp"

#if SKEIN_HAS_CUDA
#include <nvrtc.h>
#endif

namespace skein::test {
namespace {

class Reduction : public BackendTest {};

const std::size_t kSizes[] = {0, 1, 2, 3, 255, 1000, 4097, (std::size_t{1} << 20) + 3};

TEST_P(Reduction, SumFloat32AllSizesBothModes) {
  auto ctx = context();
  Queue queue(ctx);
  for (std::size_t n : kSizes) {
    SCOPED_TRACE(n);
    const auto x = random_reals<float>(n, 40);
    auto dx = Array::from_host(queue, x);
    Array s = sum(queue, dx);
    EXPECT_EQ(s.dtype(), Dtype::float32);
    EXPECT_EQ(s.size(), 1u);
    expect_close_sum(reduction_value<float>(s), x);
    // Deterministic: exactly the canonical tree of float additions.
    const float det = reduction_value<float>(sum(queue, dx, {.deterministic = true}));
    const float ref = n ? canonical_tree<float>(x) : 0.0f;
    EXPECT_EQ(std::bit_cast<std::uint32_t>(det), std::bit_cast<std::uint32_t>(ref))
        << det << " vs " << ref;
  }
}

TEST_P(Reduction, SumOtherDtypes) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t n = 100003;
  {
    std::vector<std::int32_t> x(n);
    for (std::size_t i = 0; i < n; ++i)
      x[i] = static_cast<std::int32_t>(i * 2654435761u);  // large values
    Array s = sum(queue, Array::from_host(queue, x));
    ASSERT_EQ(s.dtype(), Dtype::int64);  // NumPy: signed integers sum in int64
    std::int64_t e = 0;
    for (auto v : x) e += v;
    EXPECT_EQ(reduction_value<std::int64_t>(s), e);
  }
  {
    std::vector<std::uint8_t> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<std::uint8_t>(i * 7);
    Array s = sum(queue, Array::from_host(queue, x));
    ASSERT_EQ(s.dtype(), Dtype::uint64);
    std::uint64_t e = 0;
    for (auto v : x) e += v;
    EXPECT_EQ(reduction_value<std::uint64_t>(s), e);
  }
  {
    const auto x = random_reals<double>(n, 41);
    const double got = reduction_value<double>(sum(queue, Array::from_host(queue, x)));
    double e = 0, mag = 0;
    for (double v : x) {
      e += v;
      mag += std::fabs(v);
    }
    EXPECT_LE(std::fabs(got - e), 1e-13 * mag);
  }
  {
    // float16 accumulates in float32 and rounds once.
    const auto f = random_reals<float>(5000, 42);
    std::vector<float16> x;
    float acc_mag = 0;
    double e = 0;
    for (float v : f) {
      x.emplace_back(v / 100);
      e += static_cast<float>(x.back());
      acc_mag += std::fabs(static_cast<float>(x.back()));
    }
    Array s = sum(queue, Array::from_host(queue, x));
    ASSERT_EQ(s.dtype(), Dtype::float16);
    const float got = static_cast<float>(reduction_value<float16>(s));
    EXPECT_LE(std::fabs(got - e), std::fabs(e) / 1000 + acc_mag * 1e-6) << got << " vs " << e;
  }
  {
    std::vector<std::complex<float>> x(n);
    const auto r = random_reals<float>(2 * n, 43);
    std::complex<double> e;
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = {r[2 * i], r[2 * i + 1]};
      e += std::complex<double>(x[i]);
    }
    const auto got = reduction_value<std::complex<float>>(sum(queue, Array::from_host(queue, x)));
    EXPECT_LE(std::abs(std::complex<double>(got) - e), 1e-4 * n);
  }
}

TEST_P(Reduction, MinMax) {
  auto ctx = context();
  Queue queue(ctx);
  for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{65537}}) {
    SCOPED_TRACE(n);
    auto x = random_reals<float>(n, 44);
    auto dx = Array::from_host(queue, x);
    EXPECT_EQ(reduction_value<float>(min(queue, dx)), *std::min_element(x.begin(), x.end()));
    EXPECT_EQ(reduction_value<float>(max(queue, dx)), *std::max_element(x.begin(), x.end()));
    EXPECT_EQ(reduction_value<float>(min(queue, dx, {.deterministic = true})),
              *std::min_element(x.begin(), x.end()));
    // A NaN anywhere wins, as NumPy's.
    x[n / 2] = std::nanf("");
    dx = Array::from_host(queue, x);
    EXPECT_TRUE(std::isnan(reduction_value<float>(min(queue, dx))));
    EXPECT_TRUE(std::isnan(reduction_value<float>(max(queue, dx))));
  }
  std::vector<std::int16_t> xi(3001);
  for (std::size_t i = 0; i < xi.size(); ++i)
    xi[i] = static_cast<std::int16_t>((i * 7919) % 60000 - 30000);
  auto di = Array::from_host(queue, xi);
  Array mi = min(queue, di);
  EXPECT_EQ(mi.dtype(), Dtype::int16);
  EXPECT_EQ(reduction_value<std::int16_t>(mi), *std::min_element(xi.begin(), xi.end()));
  EXPECT_EQ(reduction_value<std::int16_t>(max(queue, di)), *std::max_element(xi.begin(), xi.end()));
  std::vector<std::uint64_t> xu{5, std::numeric_limits<std::uint64_t>::max(), 0, 17};
  auto du = Array::from_host(queue, xu);
  EXPECT_EQ(reduction_value<std::uint64_t>(min(queue, du)), 0u);
  EXPECT_EQ(reduction_value<std::uint64_t>(max(queue, du)),
            std::numeric_limits<std::uint64_t>::max());
  // No identity: empty arrays raise, as NumPy.
  EXPECT_THROW(min(queue, Array::empty(queue, {0}, Dtype::float32)), LogicError);
  EXPECT_THROW(max(queue, Array::zeros(queue, {2}, Dtype::complex64)), LogicError);
}

TEST_P(Reduction, Dot) {
  auto ctx = context();
  Queue queue(ctx);
  for (std::size_t n : {std::size_t{0}, std::size_t{5}, std::size_t{300001}}) {
    SCOPED_TRACE(n);
    const auto x = random_reals<float>(n, 45), y = random_reals<float>(n, 46);
    auto dx = Array::from_host(queue, x), dy = Array::from_host(queue, y);
    double e = 0, mag = 0;
    for (std::size_t i = 0; i < n; ++i) {
      e += static_cast<double>(x[i]) * y[i];
      mag += std::fabs(static_cast<double>(x[i]) * y[i]);
    }
    EXPECT_LE(std::fabs(reduction_value<float>(dot(queue, dx, dy)) - e), 2e-5 * mag + 1e-30);
    // Deterministic: the canonical tree of the products (no FMA contraction anywhere).
    std::vector<float> prods(n);
    for (std::size_t i = 0; i < n; ++i) prods[i] = x[i] * y[i];
    const float ref = n ? canonical_tree<float>(prods) : 0.f;
    EXPECT_EQ(reduction_value<float>(dot(queue, dx, dy, {.deterministic = true})), ref);
  }
  // int32 . float32 promotes to float64; int8 . int8 stays int8 and wraps (NumPy).
  std::vector<std::int32_t> a{1, 2, 3, 1 << 30};
  std::vector<float> b{0.5f, 0.25f, 2.f, 1.f};
  Array r = dot(queue, Array::from_host(queue, a), Array::from_host(queue, b));
  EXPECT_EQ(r.dtype(), Dtype::float64);
  EXPECT_EQ(reduction_value<double>(r), 0.5 + 0.5 + 6 + std::ldexp(1.0, 30));
  std::vector<std::int8_t> c{100, 100, 3};
  Array w = dot(queue, Array::from_host(queue, c), Array::from_host(queue, c));
  EXPECT_EQ(w.dtype(), Dtype::int8);
  EXPECT_EQ(reduction_value<std::int8_t>(w), static_cast<std::int8_t>(100 * 100 + 100 * 100 + 9));
  // Complex: no conjugation.
  std::vector<std::complex<double>> z{{1, 2}, {3, -1}};
  auto dz = Array::from_host(queue, z);
  EXPECT_EQ(reduction_value<std::complex<double>>(dot(queue, dz, dz)), z[0] * z[0] + z[1] * z[1]);
}

TEST_P(Reduction, Nrm2WithoutOverflowOrUnderflow) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t n = 20001;
  const auto base = random_reals<double>(n, 47);
  double ss = 0;
  for (double v : base) ss += v * v;
  const double norm = std::sqrt(ss);
  // float32 squares in float64: values whose squares overflow float32.
  for (double scale : {1.0, 1e30, 1e-30}) {
    std::vector<float> x(n);
    double s2 = 0;
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(base[i] * scale);
      s2 += static_cast<double>(x[i]) * x[i];
    }
    Array r = nrm2(queue, Array::from_host(queue, x));
    ASSERT_EQ(r.dtype(), Dtype::float32);
    const float got = reduction_value<float>(r);
    EXPECT_LE(std::fabs(got - std::sqrt(s2)), 1e-6 * std::sqrt(s2)) << scale;
  }
  // float64 with a scaled sum: squares would overflow or underflow float64.
  for (double scale : {1.0, 1e300, 1e-300}) {
    std::vector<double> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = base[i] * scale;
    const double got = reduction_value<double>(nrm2(queue, Array::from_host(queue, x)));
    EXPECT_LE(std::fabs(got / scale - norm), 1e-12 * norm) << scale;
    const double det =
        reduction_value<double>(nrm2(queue, Array::from_host(queue, x), {.deterministic = true}));
    EXPECT_LE(std::fabs(det / scale - norm), 1e-12 * norm) << scale;
  }
  // complex128: |z|^2 = re^2 + im^2; zeros and infinities.
  std::vector<std::complex<double>> z{{3e200, 4e200}, {0, 0}};
  EXPECT_DOUBLE_EQ(reduction_value<double>(nrm2(queue, Array::from_host(queue, z))), 5e200);
  std::vector<double> zeros(10, 0.0);
  EXPECT_EQ(reduction_value<double>(nrm2(queue, Array::from_host(queue, zeros))), 0.0);
  std::vector<double> inf{1.0, std::numeric_limits<double>::infinity(), 2.0};
  EXPECT_TRUE(std::isinf(reduction_value<double>(nrm2(queue, Array::from_host(queue, inf)))));
  // Integers give float64.
  std::vector<std::int32_t> xi{3, 4};
  Array ri = nrm2(queue, Array::from_host(queue, xi));
  EXPECT_EQ(ri.dtype(), Dtype::float64);
  EXPECT_DOUBLE_EQ(reduction_value<double>(ri), 5.0);
}

// User kernels: a scalar in the map, post_map, another reduce type, a struct reduce type
// (argmax: value and index), a raw input.
TEST_P(Reduction, UserKernels) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t n = 123457;
  const auto x = random_reals<float>(n, 48);
  auto dx = Array::from_host(queue, x);
  ReductionKernel rms(
      "T x, T w", "T y", "(double)(x * w) * (double)(x * w)", "a + b", "0",
      {.post_map = "y = (T)sqrt(a)", .reduce_type = Dtype::float64, .name = "norm_w"});
  double e = 0;
  for (float v : x) e += static_cast<double>(v * 0.5f) * static_cast<double>(v * 0.5f);
  e = std::sqrt(e);
  EXPECT_LE(std::fabs(reduction_value<float>(rms(queue, {dx, 0.5f})) - e), 1e-6 * e);

  StructType vi{{"v", Dtype::float32}, {"i", Dtype::int64}};
  ReductionKernel argmax("float32 x", "int64 y", "pair(x, (int64_t)i)", "better(a, b)",
                         "pair(-1e30f, -1)",
                         {.post_map = "y = a.i",
                          .reduce_struct = vi,
                          .preamble = R"(
WITHIN_KERNEL INLINE reduce_t pair(float v, int64_t i) { reduce_t r; r.v = v; r.i = i; return r; }
/* The larger value; the first index among equal ones (commutative and associative). */
WITHIN_KERNEL INLINE reduce_t better(reduce_t a, reduce_t b)
{
    if (a.v > b.v || (a.v == b.v && a.i < b.i)) return a;
    return b;
}
)",
                          .name = "argmax"});
  const auto expected = std::max_element(x.begin(), x.end()) - x.begin();
  EXPECT_EQ(reduction_value<std::int64_t>(argmax(queue, {dx})), expected);
  EXPECT_EQ(reduction_value<std::int64_t>(argmax(queue, {dx}, {.deterministic = true})), expected);
  // Partial values of a struct reduce type are bytes.
  const std::vector<Operand> ins{dx};
  EXPECT_EQ(argmax.partial_dtype(ins), Dtype::uint8);
  EXPECT_EQ(argmax.partial_size(ins), 16u);
  EXPECT_EQ(argmax.record_size(ins), 32u);
  // The result's dtype, known before the call: the declared output's, or its type variable bound
  // by the inputs; an output of that dtype given to the call receives the result.
  EXPECT_EQ(argmax.out_dtype(ins), Dtype::int64);
  auto given = Array::empty(queue, {1}, argmax.out_dtype(ins));
  argmax(queue, {dx}, {.out = given});
  EXPECT_EQ(reduction_value<std::int64_t>(given), expected);
  ReductionKernel same("T x", "T y", "x", "a + b", "0", {.name = "same_type"});
  EXPECT_EQ(same.out_dtype(ins), Dtype::float32);
  auto ints = Array::from_host(queue, std::vector<std::int16_t>{1, 2, 3});
  EXPECT_EQ(same.out_dtype(std::vector<Operand>{ints}), Dtype::int16);

  // A raw input read at a reversed index: sum of x[i] * x[n-1-i].
  ReductionKernel mirror("raw float32 r, float32 x", "float64 y",
                         "(double)x * (double)r[n - 1 - i]", "a + b", "0", {.name = "mirror"});
  EXPECT_EQ(mirror.out_dtype(std::vector<Operand>{dx, dx}), Dtype::float64);
  double m = 0;
  for (std::size_t i = 0; i < n; ++i) m += static_cast<double>(x[i]) * x[n - 1 - i];
  EXPECT_LE(std::fabs(reduction_value<double>(mirror(queue, {dx, dx})) - m),
            1e-9 * std::fabs(m) + 1e-6);
}

// Repeated whole-array reductions reuse the plan of an earlier call with the same argument kinds,
// dtypes, layouts and alignment: alternating inputs, outputs, scalars, alignments, layouts, sizes
// (one group and many) and contexts must each give their own result.
TEST_P(Reduction, KeptPlansFollowEachCall) {
  auto ctx = context();
  Queue queue(ctx);
  ReductionKernel wsum("T x, T w", "float64 y", "(double)(x * w)", "a + b", "0",
                       {.name = "kept_wsum"});
  for (std::size_t n : {std::size_t{3}, std::size_t{1000}, std::size_t{70001}}) {
    SCOPED_TRACE(n);
    const auto x1 = random_reals<float>(n + 4, 61), x2 = random_reals<float>(n + 4, 62);
    const Array d1 = Array::from_host(queue, x1), d2 = Array::from_host(queue, x2);
    const Array s1 = Array::empty(queue, {1}, Dtype::float32);
    const Array s2 = Array::empty(queue, {1}, Dtype::float32);
    const Array w1 = Array::empty(queue, {1}, Dtype::float64);
    for (int round = 0; round < 3; ++round) {
      for (std::size_t offset : {0, 1, 0, 3}) {
        for (int which = 0; which < 2; ++which) {
          SCOPED_TRACE(fmt::format("round {} offset {} input {}", round, offset, which));
          const auto& hx = which == 0 ? x1 : x2;
          const Array v = (which == 0 ? d1 : d2).view(offset, {n});
          const Array& out = which == 0 ? s1 : s2;
          sum(queue, v, {.out = out});
          const std::vector<float> part(hx.begin() + static_cast<std::ptrdiff_t>(offset),
                                        hx.begin() + static_cast<std::ptrdiff_t>(offset + n));
          expect_close_sum(out.get<float>().at(0), part);
          // Every other element: the strided layout.
          const std::size_t m = n / 2 + 1;
          const Array strided = (which == 0 ? d1 : d2).view(offset, {m}, {2 * sizeof(float)});
          const float w = static_cast<float>(round + 1) * (which == 0 ? 0.5f : -2.0f);
          wsum(queue, {strided, w}, {.out = w1});
          double e = 0, mag = 0;
          for (std::size_t j = 0; j < m; ++j) {
            e += static_cast<double>(hx[offset + 2 * j] * w);
            mag += std::fabs(static_cast<double>(hx[offset + 2 * j] * w));
          }
          EXPECT_LE(std::fabs(w1.get<double>().at(0) - e), 1e-12 * mag + 1e-30);
        }
      }
    }
  }
  // The output is checked on every call: another dtype, or one of another context, is refused.
  const auto x = random_reals<float>(100, 63);
  const Array dx = Array::from_host(queue, x);
  sum(queue, dx, {.out = Array::empty(queue, {1}, Dtype::float32)});
  EXPECT_THROW(sum(queue, dx, {.out = Array::empty(queue, {1}, Dtype::float64)}), LogicError);
  auto ctx2 = context();
  Queue queue2(ctx2);
  EXPECT_THROW(sum(queue, dx, {.out = Array::empty(queue2, {1}, Dtype::float32)}), LogicError);
  // The same call shape on a second context compiles and runs there.
  const Array dx2 = Array::from_host(queue2, x);
  const Array out2 = Array::empty(queue2, {1}, Dtype::float32);
  sum(queue2, dx2, {.out = out2});
  expect_close_sum(out2.get<float>().at(0), x);
}

// Per-axis reductions of 2-D arrays, contiguous and transposed, with odd shapes.
TEST_P(Reduction, PerAxis) {
  auto ctx = context();
  Queue queue(ctx);
  for (auto [R, C] : {std::pair<std::size_t, std::size_t>{1, 1},
                      {3, 1000},
                      {1000, 3},
                      {257, 129},
                      {0, 5},
                      {4, 0}}) {
    SCOPED_TRACE(fmt::format("{}x{}", R, C));
    const auto m = random_reals<float>(R * C, 49);
    auto dm = Array::from_host(queue, m, {R, C});
    const auto rows = sum(queue, dm, {.axis = 1}).get<float>();
    const auto cols = sum(queue, dm, {.axis = 0}).get<float>();
    ASSERT_EQ(rows.size(), R);
    ASSERT_EQ(cols.size(), C);
    for (std::size_t r = 0; r < R; ++r) {
      double e = 0, mag = 0;
      for (std::size_t c = 0; c < C; ++c) {
        e += m[r * C + c];
        mag += std::fabs(m[r * C + c]);
      }
      ASSERT_LE(std::fabs(rows[r] - e), 1e-5 * mag + 1e-30) << "row " << r;
    }
    for (std::size_t c = 0; c < C; ++c) {
      double e = 0, mag = 0;
      for (std::size_t r = 0; r < R; ++r) {
        e += m[r * C + c];
        mag += std::fabs(m[r * C + c]);
      }
      ASSERT_LE(std::fabs(cols[c] - e), 1e-5 * mag + 1e-30) << "col " << c;
    }
    if (R == 0 || C == 0) continue;
    // The transposed view: its axis 0 is the matrix's axis 1.
    auto t = dm.view(0, {C, R}, {sizeof(float), C * sizeof(float)});
    const auto tmax = max(queue, t, {.axis = 0}).get<float>();
    for (std::size_t r = 0; r < R; ++r) {
      ASSERT_EQ(tmax[r], *std::max_element(m.begin() + static_cast<std::ptrdiff_t>(r * C),
                                           m.begin() + static_cast<std::ptrdiff_t>((r + 1) * C)));
    }
    // Into a given output.
    auto out = Array::empty(queue, {C}, Dtype::float32);
    min(queue, dm, {.axis = 0, .out = out});
    const auto mins = out.get<float>();
    for (std::size_t c = 0; c < C; ++c) {
      float e = m[c];
      for (std::size_t r = 0; r < R; ++r) e = std::min(e, m[r * C + c]);
      ASSERT_EQ(mins[c], e);
    }
  }
  auto v = Array::zeros(queue, {10}, Dtype::float32);
  EXPECT_THROW(sum(queue, v, {.axis = 1}), LogicError);  // past the last axis (n-d: array_ops_test)
  auto m2 = Array::zeros(queue, {2, 3}, Dtype::float32);
  EXPECT_THROW(sum(queue, m2, {.axis = 2}), LogicError);
  EXPECT_THROW(sum(queue, m2, {.axis = 0, .deterministic = true}), LogicError);
  EXPECT_THROW(sum(queue, m2, {.axis = 0, .out = Array::zeros(queue, {2}, Dtype::float32)}),
               LogicError);
  EXPECT_THROW(min(queue, Array::zeros(queue, {0, 3}, Dtype::float32), {.axis = 0}), LogicError);
}

// The records of pieces as records() makes them: their positions against reduction_nodes().
std::vector<ReductionNode> valid_nodes(const Array& records, std::size_t record_size) {
  const auto bytes = records.get<std::uint8_t>();
  std::vector<ReductionNode> out;
  for (std::size_t off = 0; off + record_size <= bytes.size(); off += record_size) {
    std::uint64_t start;
    std::uint32_t level, valid;
    std::memcpy(&start, bytes.data() + off, 8);
    std::memcpy(&level, bytes.data() + off + 8, 4);
    std::memcpy(&valid, bytes.data() + off + 12, 4);
    if (valid) out.push_back({start, level});
  }
  return out;
}

// Splits [0, n) into `pieces` uneven parts (some may be empty).
std::vector<std::size_t> split_points(std::size_t n, std::size_t pieces, std::uint32_t seed) {
  std::vector<std::size_t> cuts{0, n};
  std::mt19937 gen(seed);
  std::uniform_int_distribution<std::size_t> dist(0, n);
  for (std::size_t p = 1; p < pieces; ++p) cuts.push_back(dist(gen));
  std::sort(cuts.begin(), cuts.end());
  return cuts;
}

// A float32 array of odd size split into 1 to 4 uneven pieces: records of each piece, combined,
// give bit-identical results for every split, equal to the host's canonical tree.
TEST_P(Reduction, DeterministicAcrossSplitsOnOneDevice) {
  auto ctx = context();
  Queue queue(ctx);
  const auto& k = sum_kernel(Dtype::float32);
  for (std::size_t n : {std::size_t{1}, std::size_t{5}, std::size_t{4097}, std::size_t{12289},
                        std::size_t{1000003}}) {
    SCOPED_TRACE(n);
    const auto x = random_reals<float>(n, 50);
    auto dx = Array::from_host(queue, x);
    const float ref = canonical_tree<float>(x);
    const std::vector<Operand> whole{dx};
    const std::size_t rs = k.record_size(whole), cap = ReductionKernel::record_capacity(n);
    for (std::size_t pieces = 1; pieces <= 4; ++pieces) {
      for (std::uint32_t seed = 0; seed < 3; ++seed) {
        const auto cuts = split_points(n, pieces, seed * 10 + static_cast<std::uint32_t>(pieces));
        SCOPED_TRACE(fmt::format("cuts {}", fmt::join(cuts, ",")));
        auto all = Array::empty(queue, {pieces * cap * rs}, Dtype::uint8);
        for (std::size_t p = 0; p < pieces; ++p) {
          auto piece = dx.view(cuts[p], {cuts[p + 1] - cuts[p]});
          auto slot = all.view(p * cap * rs, {cap * rs});
          const std::vector<Operand> in{piece};
          k.records(queue, in, cuts[p], n, slot);
          ASSERT_EQ(valid_nodes(slot, rs), reduction_nodes(cuts[p], cuts[p + 1] - cuts[p], n));
        }
        const float got = reduction_value<float>(k.combine(queue, whole, all, n));
        ASSERT_EQ(std::bit_cast<std::uint32_t>(got), std::bit_cast<std::uint32_t>(ref))
            << got << " vs " << ref;
      }
    }
  }
}

// The same across devices: per_device() over 1 to 4 PoCL devices with uneven pieces.
TEST_P(Reduction, DeterministicAcrossDevices) {
  SKEIN_NEED_DEVICES(2);
  const std::size_t max_dev = std::min<std::size_t>(devices().size(), 4);
  const std::size_t n = 999999;
  const auto x = random_reals<float>(n, 51), y = random_reals<float>(n, 52);
  const float ref = canonical_tree<float>(x);
  std::vector<float> prods(n);
  for (std::size_t i = 0; i < n; ++i) prods[i] = x[i] * y[i];
  const float ref_dot = canonical_tree<float>(prods);
  for (std::size_t ndev = 1; ndev <= max_dev; ++ndev) {
    SCOPED_TRACE(ndev);
    auto ctx = context(ndev);
    Queue queue(ctx);
    const auto cuts = split_points(n, ndev, 77 + static_cast<std::uint32_t>(ndev));
    MultiDevice<std::vector<Operand>> xs, xys;
    for (std::size_t d = 0; d < ndev; ++d) {
      const std::vector<float> px(x.begin() + static_cast<std::ptrdiff_t>(cuts[d]),
                                  x.begin() + static_cast<std::ptrdiff_t>(cuts[d + 1]));
      const std::vector<float> py(y.begin() + static_cast<std::ptrdiff_t>(cuts[d]),
                                  y.begin() + static_cast<std::ptrdiff_t>(cuts[d + 1]));
      auto dx = Array::from_host(queue, px, {}, d), dy = Array::from_host(queue, py, {}, d);
      xs.set(d, {dx});
      xys.set(d, {dx, dy});
    }
    const float det = reduction_value<float>(
        sum_kernel(Dtype::float32).per_device(queue, xs, {.deterministic = true}));
    EXPECT_EQ(std::bit_cast<std::uint32_t>(det), std::bit_cast<std::uint32_t>(ref))
        << det << " vs " << ref;
    const float det_dot = reduction_value<float>(
        dot_kernel(Dtype::float32, Dtype::float32).per_device(queue, xys, {.deterministic = true}));
    EXPECT_EQ(std::bit_cast<std::uint32_t>(det_dot), std::bit_cast<std::uint32_t>(ref_dot));
    // The fast mode over devices agrees to rounding.
    expect_close_sum(reduction_value<float>(sum_kernel(Dtype::float32).per_device(queue, xs)), x);
  }
}

// float64 and a struct reduce type are deterministic too (records carry any reduce type).
TEST_P(Reduction, DeterministicOtherTypes) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t n = 54321;
  const auto x = random_reals<double>(n, 53);
  auto dx = Array::from_host(queue, x);
  const double ref = canonical_tree<double>(x);
  const auto& k = sum_kernel(Dtype::float64);
  const std::vector<Operand> whole{dx};
  const std::size_t rs = k.record_size(whole), cap = ReductionKernel::record_capacity(n);
  EXPECT_EQ(rs, 24u);
  for (std::size_t pieces : {1, 3}) {
    const auto cuts = split_points(n, pieces, 5);
    auto all = Array::empty(queue, {pieces * cap * rs}, Dtype::uint8);
    for (std::size_t p = 0; p < pieces; ++p) {
      const std::vector<Operand> in{dx.view(cuts[p], {cuts[p + 1] - cuts[p]})};
      k.records(queue, in, cuts[p], n, all.view(p * cap * rs, {cap * rs}));
    }
    EXPECT_EQ(reduction_value<double>(k.combine(queue, whole, all, n)), ref);
  }
  // Strided input (every other element of a larger array): the general path, same tree.
  std::vector<double> wide(2 * n);
  for (std::size_t i = 0; i < n; ++i) wide[2 * i] = x[i];
  auto dw = Array::from_host(queue, wide);
  auto every_other = dw.view(0, {n}, {2 * sizeof(double)});
  EXPECT_EQ(reduction_value<double>(sum(queue, every_other, {.deterministic = true})), ref);
  // The fast mode's general path.
  double mag = 0;
  for (double v : x) mag += std::fabs(v);
  EXPECT_LE(std::fabs(reduction_value<double>(sum(queue, every_other)) - ref), 1e-13 * mag);
}

// The building blocks across ranks in the fast mode: partial() per piece, gathered, finish().
TEST_P(Reduction, PartialAndFinish) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t n = 300007;
  const auto x = random_reals<float>(n, 54);
  auto dx = Array::from_host(queue, x);
  const auto& k = nrm2_kernel(Dtype::float64);  // a struct reduce type: (scale, ssq)
  std::vector<double> xd(x.begin(), x.end());
  auto dd = Array::from_host(queue, xd);
  const std::vector<Operand> whole{dd};
  const std::size_t ps = k.partial_size(whole);
  auto gathered = Array::empty(queue, {3 * ps}, Dtype::uint8);
  const std::size_t cuts[] = {0, 1000, 250000, n};
  for (std::size_t p = 0; p < 3; ++p) {
    const std::vector<Operand> in{dd.view(cuts[p], {cuts[p + 1] - cuts[p]})};
    k.partial(queue, in, gathered.view(p * ps, {ps}));
  }
  double ss = 0;
  for (double v : xd) ss += v * v;
  EXPECT_LE(std::fabs(reduction_value<double>(k.finish(queue, whole, gathered)) - std::sqrt(ss)),
            1e-12 * std::sqrt(ss));
  // A float partial dtype for sum.
  const auto& s = sum_kernel(Dtype::float32);
  const std::vector<Operand> in{dx};
  EXPECT_EQ(s.partial_dtype(in), Dtype::float32);
  auto parts = Array::empty(queue, {2}, Dtype::float32);
  s.partial(queue, std::vector<Operand>{dx.view(0, {n / 2})}, parts.view(0, {1}));
  s.partial(queue, std::vector<Operand>{dx.view(n / 2, {n - n / 2})}, parts.view(1, {1}));
  expect_close_sum(reduction_value<float>(s.finish(queue, in, parts)), x);
  EXPECT_THROW(s.finish(queue, in, Array::zeros(queue, {2}, Dtype::float64)), LogicError);
}

TEST_P(Reduction, ProgramsAreKeptPerSignature) {
  auto ctx = context();
  Queue queue(ctx);
  ReductionKernel k("T x", "T y", "x", "a + b", "0", {.name = "kept"});
  auto x = Array::from_host(queue, std::vector<float>{1, 2, 3});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(reduction_value<float>(k(queue, {x})), 6.f);
  EXPECT_EQ(k.programs_built(), 1u);  // the fast program, once
  EXPECT_EQ(reduction_value<float>(k(queue, {x}, {.deterministic = true})), 6.f);
  EXPECT_EQ(reduction_value<float>(k(queue, {x}, {.deterministic = true})), 6.f);
  EXPECT_EQ(k.programs_built(), 2u);  // and the deterministic one
  auto xd = Array::from_host(queue, std::vector<double>{1, 2});
  EXPECT_EQ(reduction_value<double>(k(queue, {xd})), 3.0);
  EXPECT_EQ(k.programs_built(), 3u);  // another dtype
}

TEST_P(Reduction, Errors) {
  auto ctx = context();
  Queue queue(ctx);
  auto x = Array::from_host(queue, std::vector<float>{1, 2, 3});
  auto xi = Array::from_host(queue, std::vector<std::int32_t>{1, 2, 3});
  ReductionKernel k("T x", "T y", "x", "a + b", "0", {.name = "errs"});
  EXPECT_THROW(k(queue, {x, x}), LogicError);  // count
  EXPECT_THROW(k(queue, {x}, {.out = Array::zeros(queue, {2}, Dtype::float32)}),
               LogicError);  // out size
  EXPECT_THROW(k(queue, {x}, {.out = Array::zeros(queue, {1}, Dtype::float64)}),
               LogicError);  // out dtype
  ReductionKernel typed("float32 x", "float32 y", "x", "a + b", "0", {.name = "typed"});
  try {
    typed(queue, {xi});
    FAIL() << "no error";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("declared float32"), std::string::npos) << e.what();
  }
  // Records of a piece outside the global range; records of the wrong size for combine().
  const std::vector<Operand> in{x};
  EXPECT_THROW(k.records(queue, in, 5, 6), LogicError);
  EXPECT_THROW(k.combine(queue, in, Array::zeros(queue, {5}, Dtype::uint8), 3), LogicError);
  // Declarations.
  EXPECT_THROW(ReductionKernel("T x", "T y, T z", "x", "a + b", "0"), LogicError);
  EXPECT_THROW(ReductionKernel("T a", "T y", "a", "a + b", "0"), LogicError);  // reserved
  EXPECT_THROW(ReductionKernel("T x", "T y", "x", "", "0"), LogicError);
  EXPECT_THROW(ReductionKernel("T x", "T y", "x", "a + b", "0",
                               {.reduce_type = Dtype::float64,
                                .reduce_struct = StructType{{"v", Dtype::float32}}}),
               LogicError);
  // A bad reduce expression: CompileError with the generated source.
  ReductionKernel bad("T x", "T y", "x", "a +* b", "0", {.name = "bad_reduce"});
  try {
    bad(queue, {x});
    FAIL() << "no error";
  } catch (const CompileError& e) {
    EXPECT_NE(e.source().find("a +* b"), std::string::npos);
  }
  // A queue without the array's device, another context.
  auto other = context();
  Queue other_queue(other);
  EXPECT_THROW(k(other_queue, {x}), LogicError);
}

SKEIN_INSTANTIATE_BACKENDS(Reduction);

}  // namespace
}  // namespace skein::test

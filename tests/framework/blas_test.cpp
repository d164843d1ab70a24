// SPDX-License-Identifier: BSD-3-Clause
// BLAS (cuBLAS / CLBlast): every routine in float32 and float64 against a host reference computed
// in double, with transposes, edge sizes (0, 1, odd, non-square, a few MiB), strided vectors,
// padded and transposed matrix views, batched gemm, results on the device, several devices, and
// the error paths. Each operand lives inside a larger allocation with random values around it, so
// that every check also proves nothing outside the output was written.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <skein/blas.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "backends.hpp"
#include "checks.hpp"

namespace skein::test {
namespace {
namespace blas_test {

template <class T>
constexpr double kEps = std::numeric_limits<T>::epsilon();

// Skips where BLAS cannot be here by design (OpenCL in a build without CLBlast); fails anywhere
// else it is unavailable, so that a broken cuBLAS set-up never passes as "nothing to test".
class Blas : public BackendTest {
 protected:
  void SetUp() override {
    const blas::Status status = blas::status(GetParam().api);
    if (status.available) return;
    if (GetParam().api == ApiId::opencl && !SKEIN_HAS_CLBLAST) GTEST_SKIP() << status.reason;
    FAIL() << "BLAS is unavailable: " << status.reason;
  }
};

// An operand inside a larger allocation: random values everywhere, the operand a view at
// `offset` with `strides` (elements).
template <class T>
struct Operand {
  std::vector<T> host;  // the whole allocation, as uploaded
  std::size_t offset = 0;
  std::vector<std::size_t> strides;
  Shape shape;
  Array whole;
  Array view;

  std::size_t at(std::size_t i) const { return offset + i * strides[0]; }
  std::size_t at(std::size_t i, std::size_t j) const {
    return offset + i * strides[0] + j * strides[1];
  }
  std::size_t at(std::size_t b, std::size_t i, std::size_t j) const {
    return offset + b * strides[0] + i * strides[1] + j * strides[2];
  }
  // Sets every element of the view (NaN for outputs that must not be read) and uploads again.
  void fill_view(T value) {
    std::vector<std::size_t> index(shape.size(), 0);
    for (std::size_t flat = 0; flat < shape_size(shape); ++flat) {
      std::size_t e = offset;
      for (std::size_t d = 0; d < shape.size(); ++d) e += index[d] * strides[d];
      host[e] = value;
      for (std::size_t d = shape.size(); d-- > 0;) {
        if (++index[d] < shape[d]) break;
        index[d] = 0;
      }
    }
    whole.set(host);
  }
};

template <class T>
Operand<T> make_operand(const Queue& queue, Shape shape, std::vector<std::size_t> strides,
                        std::size_t offset, std::uint32_t seed, std::size_t device = 0) {
  std::size_t last = offset;
  if (shape_size(shape) > 0) {
    for (std::size_t d = 0; d < shape.size(); ++d) last += (shape[d] - 1) * strides[d];
  }
  auto host = random_reals<T>(last + 3, seed);  // a tail no operation may touch
  auto whole = Array::from_host(queue, host, {}, device);
  Strides bytes;
  for (std::size_t s : strides) bytes.push_back(s * sizeof(T));
  auto view = whole.view(offset, shape, bytes);
  return Operand<T>{std::move(host),  offset,           std::move(strides),
                    std::move(shape), std::move(whole), std::move(view)};
}

template <class T>
Operand<T> make_vector(const Queue& queue, std::size_t n, std::size_t inc, std::uint32_t seed,
                       std::size_t device = 0) {
  return make_operand<T>(queue, {n}, {inc}, inc == 1 ? 0 : 2, seed, device);
}

// How a matrix operand sits in its allocation.
enum class Layout {
  c_order,    // C-contiguous
  padded,     // rows contiguous, row stride larger than a row: a view of some columns
  col_major,  // columns contiguous: a transposed view
};
std::string layout_name(Layout l) {
  switch (l) {
    case Layout::c_order: return "c_order";
    case Layout::padded: return "padded";
    case Layout::col_major: return "col_major";
  }
  return "?";
}
constexpr Layout kLayouts[] = {Layout::c_order, Layout::padded, Layout::col_major};

template <class T>
Operand<T> make_matrix(const Queue& queue, std::size_t r, std::size_t c, Layout layout,
                       std::uint32_t seed, std::size_t device = 0) {
  switch (layout) {
    case Layout::c_order: return make_operand<T>(queue, {r, c}, {c, 1}, 0, seed, device);
    case Layout::padded: return make_operand<T>(queue, {r, c}, {c + 2, 1}, 3, seed, device);
    case Layout::col_major: return make_operand<T>(queue, {r, c}, {1, r + 1}, 2, seed, device);
  }
  throw std::logic_error("bad layout");
}

// (batch, r, c); padded batches leave a gap between matrices.
template <class T>
Operand<T> make_batch(const Queue& queue, std::size_t batch, std::size_t r, std::size_t c,
                      Layout layout, std::uint32_t seed) {
  switch (layout) {
    case Layout::c_order: return make_operand<T>(queue, {batch, r, c}, {r * c, c, 1}, 0, seed);
    case Layout::padded:
      return make_operand<T>(queue, {batch, r, c}, {r * (c + 2) + 5, c + 2, 1}, 3, seed);
    case Layout::col_major:
      return make_operand<T>(queue, {batch, r, c}, {c * (r + 1) + 1, 1, r + 1}, 2, seed);
  }
  throw std::logic_error("bad layout");
}

// The whole allocation as it should be afterwards: unchanged (exactly) outside the output, the
// reference inside, each element with its tolerance.
struct Expected {
  std::vector<double> value, tolerance;
  template <class T>
  explicit Expected(const std::vector<T>& before)
      : value(before.begin(), before.end()), tolerance(before.size(), 0.0) {}
  void set(std::size_t i, double v, double tol) {
    value[i] = v;
    tolerance[i] = tol;
  }
};

template <class T>
testing::AssertionResult matches(const std::vector<T>& got, const Expected& expected) {
  if (got.size() != expected.value.size()) {
    return testing::AssertionFailure() << "size " << got.size() << " vs " << expected.value.size();
  }
  std::size_t bad = 0;
  std::string first;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i];
    if (!(std::abs(g - expected.value[i]) <= expected.tolerance[i])) {  // NaN fails
      if (bad++ < 5) {
        first += fmt::format("\n  [{}]: got {} expected {} (tolerance {})", i, g, expected.value[i],
                             expected.tolerance[i]);
      }
    }
  }
  if (bad == 0) return testing::AssertionSuccess();
  return testing::AssertionFailure() << bad << " of " << got.size() << " elements wrong:" << first;
}

// A host scalar against the reference.
testing::AssertionResult close(double got, double expected, double tol) {
  if (std::abs(got - expected) <= tol) return testing::AssertionSuccess();
  return testing::AssertionFailure()
         << "got " << got << " expected " << expected << " (tolerance " << tol << ")";
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::size_t kMi = std::size_t{1} << 20;

// --- level 1 -----------------------------------------------------------------------------------

template <class T>
void check_dot_and_nrm2(const Queue& queue, std::size_t n, std::size_t inc, std::uint32_t seed) {
  SCOPED_TRACE(fmt::format("{} n={} inc={}", name(dtype_of<T>), n, inc));
  auto x = make_vector<T>(queue, n, inc, seed);
  auto y = make_vector<T>(queue, n, inc == 1 ? 1 : inc + 1, seed + 1);
  double dot = 0, dot_mag = 0, sq = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = x.host[x.at(i)], b = y.host[y.at(i)];
    dot += a * b;
    dot_mag += std::abs(a * b);
    sq += a * a;
  }
  const double norm = std::sqrt(sq);
  const double dot_tol = (n + 4) * kEps<T> * dot_mag;
  const double norm_tol = (n + 4) * kEps<T> * norm;

  EXPECT_TRUE(close(blas::dot(queue, x.view, y.view), dot, dot_tol));
  EXPECT_TRUE(close(blas::nrm2(queue, x.view), norm, norm_tol));

  // Device results into one element in the middle of an array: the rest stays as it was.
  auto result = make_operand<T>(queue, {1}, {1}, 2, seed + 2);
  blas::dot(queue, x.view, y.view, result.view);
  Expected e(result.host);
  e.set(2, dot, dot_tol);
  EXPECT_TRUE(matches(result.whole.template get<T>(), e)) << "dot into an array";
  blas::nrm2(queue, x.view, result.view);
  e.set(2, norm, norm_tol);
  EXPECT_TRUE(matches(result.whole.template get<T>(), e)) << "nrm2 into an array";

  // Inputs untouched.
  EXPECT_EQ(x.whole.template get<T>(), x.host);
  EXPECT_EQ(y.whole.template get<T>(), y.host);
}

TEST_P(Blas, DotAndNrm2) {
  auto ctx = context();
  Queue queue(ctx);
  std::uint32_t seed = 10;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{7},
                        std::size_t{1000}, kMi}) {  // kMi: 4 / 8 MiB
    for (std::size_t inc : {1, 3}) {
      if (n == kMi && inc != 1) continue;
      check_dot_and_nrm2<float>(queue, n, inc, seed += 3);
      check_dot_and_nrm2<double>(queue, n, inc, seed += 3);
    }
  }
  // A one-element result of any shape, e.g. 0-D.
  auto x = Array::from_host(queue, std::vector<double>{3, 4});
  auto r = Array::zeros(queue, {}, Dtype::float64);
  blas::nrm2(queue, x, r);
  EXPECT_TRUE(close(r.get<double>().at(0), 5.0, 4 * kEps<double> * 5));
}

template <class T>
void check_axpy_scal(const Queue& queue, const Shape& shape, std::size_t inc, std::uint32_t seed) {
  SCOPED_TRACE(fmt::format("{} shape={} inc={}", name(dtype_of<T>), to_string(shape), inc));
  const double alpha = -1.75;
  // 1-D with a stride, or contiguous n-D arrays taken as their flat vector.
  auto x = shape.size() == 1 ? make_vector<T>(queue, shape[0], inc, seed)
                             : make_operand<T>(queue, shape, {shape[1], 1}, 0, seed);
  auto y = shape.size() == 1 ? make_vector<T>(queue, shape[0], inc == 1 ? 1 : inc + 2, seed + 1)
                             : make_operand<T>(queue, shape, {shape[1], 1}, 1, seed + 1);
  const std::size_t n = shape_size(shape);
  auto flat = [&](const Operand<T>& o, std::size_t i) {
    return shape.size() == 1 ? o.at(i) : o.offset + i;
  };

  blas::axpy(queue, alpha, x.view, y.view);
  Expected e(y.host);
  for (std::size_t i = 0; i < n; ++i) {
    const double xv = x.host[flat(x, i)], yv = y.host[flat(y, i)];
    e.set(flat(y, i), alpha * xv + yv, 2 * kEps<T> * (std::abs(alpha * xv) + std::abs(yv)));
  }
  EXPECT_TRUE(matches(y.whole.template get<T>(), e)) << "axpy";
  EXPECT_EQ(x.whole.template get<T>(), x.host) << "axpy changed x";

  blas::scal(queue, alpha, x.view);
  Expected s(x.host);
  for (std::size_t i = 0; i < n; ++i) {
    const double xv = x.host[flat(x, i)];
    s.set(flat(x, i), alpha * xv, kEps<T> * std::abs(alpha * xv));
  }
  EXPECT_TRUE(matches(x.whole.template get<T>(), s)) << "scal";
}

TEST_P(Blas, AxpyAndScal) {
  auto ctx = context();
  Queue queue(ctx);
  std::uint32_t seed = 200;
  for (const Shape& shape :
       {Shape{0}, Shape{1}, Shape{7}, Shape{1000}, Shape{kMi}, Shape{17, 33}, Shape{0, 5}}) {
    for (std::size_t inc : {1, 2}) {
      if (inc != 1 && (shape.size() != 1 || shape[0] == kMi)) continue;
      check_axpy_scal<float>(queue, shape, inc, seed += 3);
      check_axpy_scal<double>(queue, shape, inc, seed += 3);
    }
  }
  // y may be x itself: y = (alpha + 1) y.
  const auto host = random_reals<double>(33, 5);
  auto y = Array::from_host(queue, host);
  blas::axpy(queue, 0.5, y, y);
  const auto got = y.get<double>();
  for (std::size_t i = 0; i < host.size(); ++i) {
    EXPECT_TRUE(close(got[i], 1.5 * host[i], 2 * kEps<double> * std::abs(1.5 * host[i])));
  }
}

// --- level 2 -----------------------------------------------------------------------------------

template <class T>
void check_gemv(const Queue& queue, std::size_t r, std::size_t c, bool trans, Layout layout,
                std::size_t inc, double beta, std::uint32_t seed) {
  SCOPED_TRACE(fmt::format("{} a=({}, {}) trans_a={} {} inc={} beta={}", name(dtype_of<T>), r, c,
                           trans, layout_name(layout), inc, beta));
  const double alpha = 1.25;
  const std::size_t rows = trans ? c : r, cols = trans ? r : c;
  auto a = make_matrix<T>(queue, r, c, layout, seed);
  auto x = make_vector<T>(queue, cols, inc, seed + 1);
  auto y = make_vector<T>(queue, rows, inc == 1 ? 1 : inc + 1, seed + 2);
  if (beta == 0) y.fill_view(static_cast<T>(kNaN));  // must not be read
  blas::gemv(queue, alpha, a.view, x.view, beta, y.view, {.trans_a = trans});
  Expected e(y.host);
  for (std::size_t i = 0; i < rows; ++i) {
    double acc = 0, mag = 0;
    for (std::size_t j = 0; j < cols; ++j) {
      const double av = trans ? a.host[a.at(j, i)] : a.host[a.at(i, j)];
      acc += av * x.host[x.at(j)];
      mag += std::abs(av * x.host[x.at(j)]);
    }
    const double y0 = beta == 0 ? 0 : y.host[y.at(i)];
    e.set(y.at(i), alpha * acc + beta * y0,
          kEps<T> * ((cols + 4) * std::abs(alpha) * mag + 4 * std::abs(beta * y0)));
  }
  EXPECT_TRUE(matches(y.whole.template get<T>(), e));
  EXPECT_EQ(a.whole.template get<T>(), a.host) << "gemv changed a";
}

TEST_P(Blas, Gemv) {
  auto ctx = context();
  Queue queue(ctx);
  std::uint32_t seed = 400;
  const std::pair<std::size_t, std::size_t> shapes[] = {
      {0, 0}, {0, 5}, {5, 0}, {1, 1}, {17, 33}, {33, 17}, {1, 64}, {64, 1}, {130, 67}};
  for (auto [r, c] : shapes) {
    for (bool trans : {false, true}) {
      for (Layout layout : kLayouts) {
        for (std::size_t inc : {1, 3}) {
          for (double beta : {0.0, 0.5}) {
            check_gemv<float>(queue, r, c, trans, layout, inc, beta, seed += 3);
            check_gemv<double>(queue, r, c, trans, layout, inc, beta, seed += 3);
          }
        }
      }
    }
  }
  // A few MiB: 1024 x 1025 float64 (8 MiB).
  for (bool trans : {false, true}) {
    check_gemv<float>(queue, 1024, 1025, trans, Layout::c_order, 1, 0.5, seed += 3);
    check_gemv<double>(queue, 1024, 1025, trans, Layout::c_order, 1, 0.0, seed += 3);
  }
}

template <class T>
void check_ger(const Queue& queue, std::size_t m, std::size_t n, Layout layout, std::size_t inc,
               std::uint32_t seed) {
  SCOPED_TRACE(
      fmt::format("{} a=({}, {}) {} inc={}", name(dtype_of<T>), m, n, layout_name(layout), inc));
  const double alpha = -1.25;
  auto x = make_vector<T>(queue, m, inc, seed);
  auto y = make_vector<T>(queue, n, inc == 1 ? 1 : inc + 1, seed + 1);
  auto a = make_matrix<T>(queue, m, n, layout, seed + 2);
  blas::ger(queue, alpha, x.view, y.view, a.view);
  Expected e(a.host);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const double p = alpha * x.host[x.at(i)] * y.host[y.at(j)];
      const double a0 = a.host[a.at(i, j)];
      e.set(a.at(i, j), a0 + p, 3 * kEps<T> * (std::abs(a0) + std::abs(p)));
    }
  }
  EXPECT_TRUE(matches(a.whole.template get<T>(), e));
}

TEST_P(Blas, Ger) {
  auto ctx = context();
  Queue queue(ctx);
  std::uint32_t seed = 600;
  const std::pair<std::size_t, std::size_t> shapes[] = {
      {0, 0}, {0, 4}, {4, 0}, {1, 1}, {17, 33}, {33, 17}, {1, 9}, {9, 1}, {300, 257}};
  for (auto [m, n] : shapes) {
    for (Layout layout : kLayouts) {
      for (std::size_t inc : {1, 2}) {
        check_ger<float>(queue, m, n, layout, inc, seed += 3);
        check_ger<double>(queue, m, n, layout, inc, seed += 3);
      }
    }
  }
}

// --- level 3 -----------------------------------------------------------------------------------

struct GemmCase {
  std::size_t m, n, k;
};

// C = alpha op(A) op(B) + beta C (batched when `batch`), checked element by element.
template <class T>
void check_gemm(const Queue& queue, std::optional<std::size_t> batch, GemmCase s, bool ta, bool tb,
                Layout la, Layout lb, Layout lc, double beta, std::uint32_t seed,
                bool broadcast_a = false) {
  SCOPED_TRACE(fmt::format(
      "{} batch={} m={} n={} k={} trans_a={} trans_b={} a:{} b:{} c:{} "
      "beta={}{}",
      name(dtype_of<T>), batch ? std::to_string(*batch) : "-", s.m, s.n, s.k, ta, tb,
      layout_name(la), layout_name(lb), layout_name(lc), beta, broadcast_a ? " broadcast a" : ""));
  const double alpha = 1.5;
  const std::size_t ar = ta ? s.k : s.m, ac = ta ? s.m : s.k;
  const std::size_t br = tb ? s.n : s.k, bc = tb ? s.k : s.n;
  const std::size_t nb = batch.value_or(1);
  auto a = !batch        ? make_matrix<T>(queue, ar, ac, la, seed)
           : broadcast_a ? make_operand<T>(queue, {nb, ar, ac}, {0, ac, 1}, 1, seed)
                         : make_batch<T>(queue, nb, ar, ac, la, seed);
  auto b = batch ? make_batch<T>(queue, nb, br, bc, lb, seed + 1)
                 : make_matrix<T>(queue, br, bc, lb, seed + 1);
  auto c = batch ? make_batch<T>(queue, nb, s.m, s.n, lc, seed + 2)
                 : make_matrix<T>(queue, s.m, s.n, lc, seed + 2);
  if (beta == 0) c.fill_view(static_cast<T>(kNaN));  // must not be read
  const blas::GemmOptions options{.trans_a = ta, .trans_b = tb};
  if (batch) {
    blas::gemm_batched(queue, alpha, a.view, b.view, beta, c.view, options);
  } else {
    blas::gemm(queue, alpha, a.view, b.view, beta, c.view, options);
  }
  auto at = [&](const Operand<T>& o, std::size_t bi, std::size_t i, std::size_t j) {
    return batch ? o.at(bi, i, j) : o.at(i, j);
  };
  Expected e(c.host);
  for (std::size_t bi = 0; bi < nb; ++bi) {
    for (std::size_t i = 0; i < s.m; ++i) {
      for (std::size_t j = 0; j < s.n; ++j) {
        double acc = 0, mag = 0;
        for (std::size_t p = 0; p < s.k; ++p) {
          const double av = ta ? a.host[at(a, bi, p, i)] : a.host[at(a, bi, i, p)];
          const double bv = tb ? b.host[at(b, bi, j, p)] : b.host[at(b, bi, p, j)];
          acc += av * bv;
          mag += std::abs(av * bv);
        }
        const double c0 = beta == 0 ? 0 : c.host[at(c, bi, i, j)];
        e.set(at(c, bi, i, j), alpha * acc + beta * c0,
              kEps<T> * ((s.k + 4) * std::abs(alpha) * mag + 4 * std::abs(beta * c0)));
      }
    }
  }
  EXPECT_TRUE(matches(c.whole.template get<T>(), e));
}

TEST_P(Blas, GemmShapesAndTransposes) {
  auto ctx = context();
  Queue queue(ctx);
  std::uint32_t seed = 1000;
  const GemmCase cases[] = {{0, 0, 0},  {0, 3, 4},     {3, 0, 4},      {3, 4, 0},
                            {1, 1, 1},  {17, 33, 9},   {33, 17, 65},   {1, 40, 3},
                            {40, 1, 3}, {65, 63, 130}, {200, 180, 190}};
  for (const GemmCase& s : cases) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        for (double beta : {0.0, 0.25}) {
          const auto l = Layout::c_order;
          check_gemm<float>(queue, std::nullopt, s, ta, tb, l, l, l, beta, seed += 3);
          check_gemm<double>(queue, std::nullopt, s, ta, tb, l, l, l, beta, seed += 3);
        }
      }
    }
  }
}

TEST_P(Blas, GemmViews) {
  // Padded and transposed views of every operand, C included, in every combination.
  auto ctx = context();
  Queue queue(ctx);
  std::uint32_t seed = 2000;
  for (Layout la : kLayouts) {
    for (Layout lb : kLayouts) {
      for (Layout lc : kLayouts) {
        for (bool ta : {false, true}) {
          for (bool tb : {false, true}) {
            check_gemm<float>(queue, std::nullopt, {17, 33, 9}, ta, tb, la, lb, lc, 0.5, seed += 3);
            check_gemm<double>(queue, std::nullopt, {9, 5, 13}, ta, tb, la, lb, lc, 0.0, seed += 3);
          }
        }
        // An empty product (k == 0) scales C, whatever its layout.
        check_gemm<double>(queue, std::nullopt, {5, 7, 0}, false, false, la, lb, lc, -2.0,
                           seed += 3);
        check_gemm<float>(queue, std::nullopt, {5, 7, 0}, false, false, la, lb, lc, 0.0, seed += 3);
      }
    }
  }
}

TEST_P(Blas, GemmLarge) {
  // 512 x 512 x 512: 1 / 2 MiB per matrix.
  auto ctx = context();
  Queue queue(ctx);
  const auto l = Layout::c_order;
  check_gemm<float>(queue, std::nullopt, {512, 512, 512}, false, false, l, l, l, 0.5, 3000);
  check_gemm<double>(queue, std::nullopt, {512, 512, 512}, false, true, l, l, l, 0.0, 3001);
}

TEST_P(Blas, GemmBatched) {
  auto ctx = context();
  Queue queue(ctx);
  std::uint32_t seed = 4000;
  for (std::size_t batch : {0, 1, 3}) {
    for (GemmCase s : {GemmCase{17, 33, 9}, GemmCase{1, 1, 1}, GemmCase{4, 5, 0}}) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          for (Layout l : kLayouts) {
            check_gemm<float>(queue, batch, s, ta, tb, l, l, l, 0.0, seed += 3);
            check_gemm<double>(queue, batch, s, ta, tb, l, l, l, 0.75, seed += 3);
          }
        }
      }
    }
  }
  // One A for every batch (batch stride 0), mixed layouts, and a larger batch.
  const auto c = Layout::c_order, p = Layout::padded, t = Layout::col_major;
  check_gemm<float>(queue, 3, {17, 33, 9}, false, true, c, p, t, 0.5, seed += 3, true);
  check_gemm<double>(queue, 3, {17, 33, 9}, true, false, c, t, p, 0.0, seed += 3, true);
  check_gemm<double>(queue, 7, {65, 31, 70}, false, false, p, c, t, 0.25, seed += 3);
}

TEST_P(Blas, Tf32OptionKeepsResultsClose) {
  // TF32 (CUDA, when allowed) rounds inputs to 10 mantissa bits; elsewhere the option changes
  // nothing. Either way the product stays within TF32's accuracy.
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t n = 64;
  const auto a = random_reals<float>(n * n, 1), b = random_reals<float>(n * n, 2);
  auto c = blas::gemm(queue, 1.0, Array::from_host(queue, a, {n, n}),
                      Array::from_host(queue, b, {n, n}), {.allow_tf32 = true});
  const auto got = c.get<float>();
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double acc = 0, mag = 0;
      for (std::size_t p = 0; p < n; ++p) {
        acc += double(a[i * n + p]) * b[p * n + j];
        mag += std::abs(double(a[i * n + p]) * b[p * n + j]);
      }
      ASSERT_TRUE(close(got[i * n + j], acc, 4 * mag / 1024)) << i << ", " << j;
    }
  }
}

TEST_P(Blas, AllocatingVariants) {
  auto ctx = context();
  Queue queue(ctx);
  const auto a = random_reals<double>(6 * 4, 1), b = random_reals<double>(4 * 5, 2);
  const auto x = random_reals<double>(4, 3), y = random_reals<double>(6, 4);
  auto da = Array::from_host(queue, a, {6, 4});
  auto db = Array::from_host(queue, b, {4, 5});
  auto dx = Array::from_host(queue, x), dy = Array::from_host(queue, y);

  auto c = blas::gemm(queue, 2.0, da, db);
  ASSERT_EQ(c.shape(), (Shape{6, 5}));
  auto cg = c.get<double>();
  for (std::size_t i = 0; i < 6; ++i) {
    for (std::size_t j = 0; j < 5; ++j) {
      double acc = 0, mag = 0;
      for (std::size_t p = 0; p < 4; ++p) acc += a[i * 4 + p] * b[p * 5 + j];
      for (std::size_t p = 0; p < 4; ++p) mag += std::abs(a[i * 4 + p] * b[p * 5 + j]);
      EXPECT_TRUE(close(cg[i * 5 + j], 2 * acc, 16 * kEps<double> * 2 * mag));
    }
  }

  auto v = blas::gemv(queue, 1.0, da, dx);
  ASSERT_EQ(v.shape(), (Shape{6}));
  auto vt = blas::gemv(queue, 1.0, da, dy, {.trans_a = true});
  ASSERT_EQ(vt.shape(), (Shape{4}));
  const auto vg = v.get<double>(), vtg = vt.get<double>();
  for (std::size_t i = 0; i < 6; ++i) {
    double acc = 0, mag = 0;
    for (std::size_t j = 0; j < 4; ++j) {
      acc += a[i * 4 + j] * x[j];
      mag += std::abs(a[i * 4 + j] * x[j]);
    }
    EXPECT_TRUE(close(vg[i], acc, 16 * kEps<double> * mag));
  }
  for (std::size_t j = 0; j < 4; ++j) {
    double acc = 0, mag = 0;
    for (std::size_t i = 0; i < 6; ++i) {
      acc += a[i * 4 + j] * y[i];
      mag += std::abs(a[i * 4 + j] * y[i]);
    }
    EXPECT_TRUE(close(vtg[j], acc, 16 * kEps<double> * mag));
  }

  auto outer = blas::ger(queue, -1.0, dy, dx);
  ASSERT_EQ(outer.shape(), (Shape{6, 4}));
  const auto og = outer.get<double>();
  for (std::size_t i = 0; i < 6; ++i) {
    for (std::size_t j = 0; j < 4; ++j) EXPECT_EQ(og[i * 4 + j], -(y[i] * x[j]));
  }

  auto batched = blas::gemm_batched(queue, 1.0, da.reshape({2, 3, 4}), da.reshape({2, 4, 3}),
                                    {.trans_b = false});
  ASSERT_EQ(batched.shape(), (Shape{2, 3, 3}));
  const auto bg = batched.get<double>();
  for (std::size_t bi = 0; bi < 2; ++bi) {
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t j = 0; j < 3; ++j) {
        double acc = 0, mag = 0;
        for (std::size_t p = 0; p < 4; ++p) {
          acc += a[bi * 12 + i * 4 + p] * a[bi * 12 + p * 3 + j];
          mag += std::abs(a[bi * 12 + i * 4 + p] * a[bi * 12 + p * 3 + j]);
        }
        EXPECT_TRUE(close(bg[bi * 9 + i * 3 + j], acc, 16 * kEps<double> * mag));
      }
    }
  }

  // Empty results.
  EXPECT_EQ(blas::gemm(queue, 1.0, da.slice(0, 0), db).shape(), (Shape{0, 5}));
  EXPECT_EQ(blas::gemv(queue, 1.0, da.slice(0, 0), dx).shape(), (Shape{0}));
}

TEST_P(Blas, ChainedCallsStayInQueueOrder) {
  // Nothing waits on the host between these calls: each must see its predecessor's result.
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t n = 300;
  const auto a = random_reals<double>(n * n, 7), x = random_reals<double>(n, 8);
  auto da = Array::from_host(queue, a, {n, n});
  auto dx = Array::from_host(queue, x);
  auto c = Array::empty(queue, {n, n}, Dtype::float64);
  auto y = Array::empty(queue, {n}, Dtype::float64);
  auto r = Array::empty(queue, {2}, Dtype::float64);
  blas::gemm(queue, 1.0, da, da, 0.0, c);  // C = A A
  blas::gemv(queue, 1.0, c, dx, 0.0, y);   // y = C x
  blas::scal(queue, 0.5, y);               // y /= 2
  blas::dot(queue, y, dx, r.slice(0, 1));  // r0 = y . x
  blas::nrm2(queue, y, r.slice(1, 2));     // r1 = |y|
  const auto got = r.get<double>();

  std::vector<double> ax(n, 0), aax(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) ax[i] += a[i * n + j] * x[j];
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) aax[i] += a[i * n + j] * ax[j];
  }
  double d = 0, mag = 0, sq = 0;
  for (std::size_t i = 0; i < n; ++i) {
    d += 0.5 * aax[i] * x[i];
    mag += std::abs(0.5 * aax[i] * x[i]);
    sq += 0.25 * aax[i] * aax[i];
  }
  // Loose: the reference's A (A x) and the device's (A A) x round differently.
  EXPECT_TRUE(close(got[0], d, 1e-9 * mag * n));
  EXPECT_TRUE(close(got[1], std::sqrt(sq), 1e-9 * std::sqrt(sq) * n));
}

TEST_P(Blas, EveryDeviceOfAQueue) {
  SKEIN_NEED_DEVICES(2);
  auto ctx = context(devices().size());
  Queue queue(ctx);
  std::uint32_t seed = 5000;
  for (std::size_t d = 0; d < ctx.num_devices(); ++d) {
    SCOPED_TRACE(fmt::format("device {}", d));
    auto a = make_operand<float>(queue, {9, 7}, {7, 1}, 0, seed++, d);
    auto b = make_operand<float>(queue, {7, 5}, {5, 1}, 0, seed++, d);
    auto c = blas::gemm(queue, 1.0, a.view, b.view);
    EXPECT_EQ(c.device_idx(), d);
    const auto got = c.get<float>();
    for (std::size_t i = 0; i < 9; ++i) {
      for (std::size_t j = 0; j < 5; ++j) {
        double acc = 0, mag = 0;
        for (std::size_t p = 0; p < 7; ++p) {
          acc += double(a.host[i * 7 + p]) * b.host[p * 5 + j];
          mag += std::abs(double(a.host[i * 7 + p]) * b.host[p * 5 + j]);
        }
        EXPECT_TRUE(close(got[i * 5 + j], acc, 11 * kEps<float> * mag));
      }
    }
    auto x = make_vector<double>(queue, 100, 1, seed++, d);
    double sq = 0;
    for (std::size_t i = 0; i < 100; ++i) sq += x.host[i] * x.host[i];
    EXPECT_TRUE(close(blas::nrm2(queue, x.view), std::sqrt(sq), 1e-12 * std::sqrt(sq)));
  }
  // A queue of one device, used for an array of that device.
  Queue single(ctx, {1});
  auto v = Array::from_host(single, std::vector<double>{3, 4}, {}, 1);
  EXPECT_TRUE(close(blas::nrm2(single, v), 5.0, 4 * kEps<double> * 5));
  // Operands on different devices, or a queue without theirs.
  auto w = Array::from_host(queue, std::vector<double>{1, 2}, {}, 0);
  expect_error<LogicError>([&] { blas::dot(queue, v, w); },
                           {"skein::blas::dot", "different devices", "x on 1", "y on 0"});
  expect_error<LogicError>([&] { blas::nrm2(single, w); }, {"device 0", "not in the queue"});
}

TEST_P(Blas, ErrorsNameWhatWasWrong) {
  auto ctx = context();
  Queue queue(ctx);
  auto m34 = Array::zeros(queue, {3, 4}, Dtype::float32);
  auto m45 = Array::zeros(queue, {4, 5}, Dtype::float32);
  auto m35 = Array::zeros(queue, {3, 5}, Dtype::float32);
  auto m55 = Array::zeros(queue, {5, 5}, Dtype::float32);
  auto d45 = Array::zeros(queue, {4, 5}, Dtype::float64);
  auto v4 = Array::zeros(queue, {4}, Dtype::float32);
  auto v3 = Array::zeros(queue, {3}, Dtype::float32);

  // dtypes
  auto i34 = Array::zeros(queue, {3, 4}, Dtype::int32);
  expect_error<LogicError>([&] { blas::gemm(queue, 1, i34, m45, 0, m35); },
                           {"skein::blas::gemm", "a has dtype int32", "float32 and float64"});
  expect_error<LogicError>([&] { blas::gemm(queue, 1, m34, d45, 0, m35); },
                           {"dtypes differ", "a is float32", "b is float64"});
  auto h4 = Array::zeros(queue, {4}, Dtype::float16);
  expect_error<LogicError>([&] { blas::nrm2(queue, h4); }, {"x has dtype float16"});
  auto z4 = Array::zeros(queue, {4}, Dtype::complex64);
  expect_error<LogicError>([&] { blas::scal(queue, 2, z4); }, {"complex64"});

  // shapes
  expect_error<LogicError>([&] { blas::gemm(queue, 1, m34, m55, 0, m35); },
                           {"op(a) is 3 x 4", "op(b) is 5 x 5", "inner dimensions 4 and 5 differ"});
  expect_error<LogicError>([&] { blas::gemm(queue, 1, m34, m45, 0, m55); },
                           {"c has shape (5, 5)", "3 x 5"});
  expect_error<LogicError>([&] { blas::gemm(queue, 1, m34, m45, 0, m35, {.trans_a = true}); },
                           {"trans_a=true", "inner dimensions 3 and 4 differ"});
  expect_error<LogicError>([&] { blas::gemm(queue, 1, v4, m45, 0, m35); },
                           {"a has shape (4)", "2-D is needed"});
  expect_error<LogicError>([&] { blas::gemv(queue, 1, m34, v3, 0, v3); },
                           {"skein::blas::gemv", "x needs 4 elements", "x has shape (3)"});
  expect_error<LogicError>([&] { blas::ger(queue, 1, v4, v3, m34); },
                           {"a has shape (3, 4)", "outer(x, y) is 4 x 3"});
  expect_error<LogicError>([&] { blas::dot(queue, v4, v3); }, {"x has shape (4) and y (3)"});
  expect_error<LogicError>([&] { blas::axpy(queue, 1, v4, v3); }, {"x has shape (4) and y (3)"});
  expect_error<LogicError>([&] { blas::dot(queue, m34, m34); }, {"a vector must be 1-D"});
  auto b234 = Array::zeros(queue, {2, 3, 4}, Dtype::float32);
  auto b345 = Array::zeros(queue, {3, 4, 5}, Dtype::float32);
  auto b235 = Array::zeros(queue, {2, 3, 5}, Dtype::float32);
  expect_error<LogicError>([&] { blas::gemm_batched(queue, 1, b234, b345, 0, b235); },
                           {"skein::blas::gemm_batched", "batch sizes differ", "(3, 4, 5)"});
  expect_error<LogicError>([&] { blas::gemm_batched(queue, 1, m34, m45, 0, m35); },
                           {"3-D is needed"});

  // layouts: neither axis contiguous, vector strides, overlapping outputs
  auto big = Array::zeros(queue, {6, 8}, Dtype::float32);
  auto every_other = big.view(0, {3, 4}, {2 * 8 * 4, 2 * 4});
  expect_error<LogicError>(
      [&] { blas::gemm(queue, 1, every_other, m45, 0, m35); },
      {"a has shape (3, 4) and strides (64, 8)", "rows or the columns of a matrix contiguous"});
  auto overlapping_rows = big.view(0, {3, 4}, {2 * 4, 4});  // row stride < row length
  expect_error<LogicError>([&] { blas::gemm(queue, 1, overlapping_rows, m45, 0, m35); },
                           {"strides (8, 4)"});
  auto broadcast = v4.view(0, {4}, {0});
  expect_error<LogicError>([&] { blas::dot(queue, broadcast, v4); }, {"x has a stride of 0 bytes"});
  // Three 3 x 3 views of one allocation, the product written over the first two.
  const Strides rows8{8 * 4, 4};
  auto a33 = big.view(0, {3, 3}, rows8), b33 = big.view(3, {3, 3}, rows8);
  auto c33 = big.view(8, {3, 3}, rows8);
  expect_error<LogicError>([&] { blas::gemm(queue, 1, a33, b33, 0, c33); },
                           {"c shares memory with a"});
  auto y_in_a = m34.reshape({12}).slice(0, 3);
  expect_error<LogicError>([&] { blas::gemv(queue, 1, m34, v4, 0, y_in_a); },
                           {"y shares memory with a"});
  // Two 3 x 5 matrices one element apart.
  auto c_overlap = Array::zeros(queue, {16}, Dtype::float32).view(0, {2, 3, 5}, {4, 20, 4});
  auto b245 = Array::zeros(queue, {2, 4, 5}, Dtype::float32);
  expect_error<LogicError>([&] { blas::gemm_batched(queue, 1, b234, b245, 0, c_overlap); },
                           {"c's matrices overlap", "batch stride of 4 bytes"});
  expect_error<LogicError>([&] { blas::dot(queue, v4, v4, v4.slice(0, 1)); },
                           {"result shares memory with x"});
  expect_error<LogicError>([&] { blas::dot(queue, v4, v4, v3); },
                           {"result has shape (3)", "exactly one element"});
  auto bytes = Array::zeros(queue, {20}, Dtype::uint8);
  auto misaligned = Array(queue, bytes.data(), {4}, Dtype::float32, {}, 2);
  expect_error<LogicError>([&] { blas::nrm2(queue, misaligned); },
                           {"starts at byte 2", "itemsize 4"});

  // contexts
  auto other_ctx = context();
  Queue other(other_ctx);
  expect_error<LogicError>([&] { blas::nrm2(other, v4); },
                           {"x belongs to another context than the queue"});
}

// BLAS on OpenCL without CLBlast (the GPU test machine's build): a typed error that says why.
class BlasAvailability : public BackendTest {};

TEST_P(BlasAvailability, UnavailableBlasSaysWhy) {
  auto ctx = context();
  Queue queue(ctx);
  auto x = Array::zeros(queue, {4}, Dtype::float32);
  const blas::Status status = blas::status(GetParam().api);
  if (GetParam().api == ApiId::opencl) {
    EXPECT_EQ(status.available, bool(SKEIN_HAS_CLBLAST)) << status.reason;
  }
  if (status.available) {
    EXPECT_TRUE(status.reason.empty());
    EXPECT_EQ(blas::nrm2(queue, x), 0.0);
    return;
  }
  EXPECT_FALSE(status.reason.empty());
  if (GetParam().api == ApiId::opencl) {
    expect_error<ApiUnavailableError>(
        [&] { blas::nrm2(queue, x); },
        {"BLAS on OpenCL is not available", "CLBlast", "SKEIN_WITH_CLBLAST"});
  }
}

SKEIN_INSTANTIATE_BACKENDS(Blas);
SKEIN_INSTANTIATE_BACKENDS(BlasAvailability);

}  // namespace blas_test
}  // namespace
}  // namespace skein::test

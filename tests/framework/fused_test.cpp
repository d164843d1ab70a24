// SPDX-License-Identifier: BSD-3-Clause
// FusedKernel: a CG update (x += alpha p; r -= alpha w; reduce r . r) in one kernel, compared with
// host references: the updated arrays exactly (no contraction in the deterministic mode), the
// reduced value close (fast) and bit for bit against the canonical tree (deterministic), and the
// update applied once per element in both modes; edge sizes and bad operands.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <skein/fused.hpp>
#include <skein/skein.hpp>
#include <vector>

#include "canonical_tree.hpp"
#include "backends.hpp"

namespace skein::test {
namespace {
namespace fused_test {

class Fused : public BackendTest {};

const std::size_t kSizes[] = {0, 1, 2, 7, 255, 1000, 4097, 70001};

FusedKernel cg_kernel() {
  return FusedKernel("T p, T w, T alpha", "T x, T r", "x += alpha * p; r -= alpha * w", "T rr",
                     "r * r", "a + b", "0", {.name = "cg_update"});
}

struct Host {
  std::vector<double> x, r, rr;
};

// The update as a host computes it without contraction (volatile keeps a*b a rounded product).
Host host_update(std::vector<double> x, std::vector<double> r, const std::vector<double>& p,
                 const std::vector<double>& w, double alpha) {
  Host h;
  for (std::size_t i = 0; i < x.size(); ++i) {
    volatile double ap = alpha * p[i], aw = alpha * w[i];
    x[i] += ap;
    r[i] -= aw;
    volatile double sq = r[i] * r[i];
    h.rr.push_back(static_cast<double>(sq));
  }
  h.x = std::move(x);
  h.r = std::move(r);
  return h;
}

// The device's update (got: x and r) and reduced value against the host's: bit for bit in the
// deterministic mode; in the fast mode the value close and each element updated once (twice would
// be off by alpha p; a*x + b may be fused there).
void expect_update(bool det, double value, const Host& ref, const Host& got,
                   const std::vector<double>& x, const std::vector<double>& r,
                   const std::vector<double>& p, const std::vector<double>& w) {
  const double exact = canonical_tree(ref.rr);
  if (det) {
    EXPECT_EQ(std::bit_cast<std::uint64_t>(value), std::bit_cast<std::uint64_t>(exact))
        << value << " vs " << exact;
    EXPECT_EQ(got.x, ref.x);
    EXPECT_EQ(got.r, ref.r);
    return;
  }
  EXPECT_NEAR(value, exact, 1e-12 * (exact + 1));
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_NEAR(got.x[i], ref.x[i], 1e-15 * (std::fabs(x[i]) + std::fabs(p[i]) + 1)) << i;
    ASSERT_NEAR(got.r[i], ref.r[i], 1e-15 * (std::fabs(r[i]) + std::fabs(w[i]) + 1)) << i;
  }
}

TEST_P(Fused, CgUpdateBothModesAllSizes) {
  Queue queue(context());
  const FusedKernel k = cg_kernel();
  const double alpha = 0.37;
  for (std::size_t n : kSizes) {
    SCOPED_TRACE(n);
    const auto x = random_reals<double>(n, 70), r = random_reals<double>(n, 71);
    const auto p = random_reals<double>(n, 72), w = random_reals<double>(n, 73);
    const Host ref = host_update(x, r, p, w, alpha);
    for (bool det : {false, true}) {
      SCOPED_TRACE(det);
      Array dx = Array::from_host(queue, x), dr = Array::from_host(queue, r);
      const Array dp = Array::from_host(queue, p), dw = Array::from_host(queue, w);
      FusedArgs args;
      args.deterministic = det;
      const double rr = reduction_value<double>(k(queue, {dp, dw, alpha, dx, dr}, args));
      expect_update(det, rr, ref, {dx.get<double>(), dr.get<double>(), {}}, x, r, p, w);
    }
  }
}

// Raw inputs: the step read from device memory (alpha = rr[0] / pw[0], as a CG keeps its
// scalars on the device), two arrays of other shapes than the updated ones, both modes, edge sizes.
TEST_P(Fused, RawInputsReadFromDeviceMemory) {
  Queue queue(context());
  const FusedKernel k("raw T rr, raw T pw, T p, T w", "T x, T r",
                      "const T alpha = rr[0] / pw[1]; x += alpha * p; r -= alpha * w", "T out",
                      "r * r", "a + b", "0", {.name = "cg_update_raw"});
  EXPECT_EQ(k.input_count(), 4u);
  EXPECT_TRUE(k.input_is_raw(0));
  EXPECT_TRUE(k.input_is_raw(1));
  EXPECT_FALSE(k.input_is_raw(2));
  EXPECT_FALSE(k.input_is_raw(7));
  const std::vector<double> rr{0.74}, pw{-1.0, 2.0, 5.0};  // alpha = 0.74 / 2 = 0.37
  const Array drr = Array::from_host(queue, rr), dpw = Array::from_host(queue, pw);
  for (std::size_t n : kSizes) {
    SCOPED_TRACE(n);
    const auto x = random_reals<double>(n, 80), r = random_reals<double>(n, 81);
    const auto p = random_reals<double>(n, 82), w = random_reals<double>(n, 83);
    const Host ref = host_update(x, r, p, w, 0.74 / 2.0);
    for (bool det : {false, true}) {
      SCOPED_TRACE(det);
      Array dx = Array::from_host(queue, x), dr = Array::from_host(queue, r);
      const Array dp = Array::from_host(queue, p), dw = Array::from_host(queue, w);
      FusedArgs args;
      args.deterministic = det;
      const double got = reduction_value<double>(k(queue, {drr, dpw, dp, dw, dx, dr}, args));
      expect_update(det, got, ref, {dx.get<double>(), dr.get<double>(), {}}, x, r, p, w);
    }
  }
  // The raw inputs were only read.
  EXPECT_EQ(drr.get<double>(), rr);
  EXPECT_EQ(dpw.get<double>(), pw);
  // An updated parameter cannot be raw; a scalar for a raw input is refused by the reduction.
  EXPECT_THROW(FusedKernel("raw T s", "raw T x", "x = s[0]", "T y", "x", "a + b", "0"), LogicError);
  Array dx = Array::from_host(queue, std::vector<double>(5, 1.0));
  Array dr = Array::from_host(queue, std::vector<double>(5, 1.0));
  const Array d5 = Array::from_host(queue, std::vector<double>(5, 1.0));
  EXPECT_THROW((void)k(queue, {0.5, dpw, d5, d5, dx, dr}), LogicError);
  // What a user does next: the arrays are untouched and a right call works.
  EXPECT_EQ(dx.get<double>(), std::vector<double>(5, 1.0));
  const double again = reduction_value<double>(k(queue, {drr, dpw, d5, d5, dx, dr}));
  EXPECT_NEAR(again, 5 * (1 - 0.37) * (1 - 0.37), 1e-14);
  EXPECT_NEAR(dx.get<double>()[4], 1.37, 1e-15);
}

// Inputs broadcast, float32 arrays, a reduce type of its own, and post_map.
TEST_P(Fused, Float32BroadcastAndPostMap) {
  Queue queue(context());
  const FusedKernel k(
      "float32 s, T c", "T u", "u = u * s + c", "float64 nrm", "(double)u * (double)u", "a + b",
      "0", {.post_map = "nrm = sqrt(a)", .reduce_type = Dtype::float64, .name = "scale_norm"});
  const std::size_t rows = 37, cols = 11;
  auto u = random_reals<float>(rows * cols, 74);
  const auto c = random_reals<float>(cols, 75);
  Array du = Array::from_host(queue, u).reshape({rows, cols});
  const Array dc = Array::from_host(queue, c);
  FusedArgs args;
  args.deterministic = true;
  const double nrm = reduction_value<double>(k(queue, {2.0f, dc, du}, args));
  double sq = 0;
  std::vector<double> leaves;
  for (std::size_t i = 0; i < u.size(); ++i) {
    volatile float prod = u[i] * 2.0f;
    u[i] = prod + c[i % cols];
    leaves.push_back(double(u[i]) * double(u[i]));
    sq += leaves.back();
  }
  EXPECT_EQ(du.get<float>(), u);
  EXPECT_EQ(nrm, std::sqrt(canonical_tree(leaves)));
  EXPECT_NEAR(nrm, std::sqrt(sq), 1e-9 * std::sqrt(sq));
}

TEST_P(Fused, BadDeclarationsAndOperands) {
  Queue queue(context());
  EXPECT_THROW(FusedKernel("T p", "", "p = p", "T y", "p", "a + b", "0"),
               LogicError);  // nothing updated
  EXPECT_THROW(FusedKernel("T p", "raw T x", "x = p", "T y", "p", "a + b", "0"),
               LogicError);  // raw updated parameter
  EXPECT_THROW(FusedKernel("T p", "T x", " ", "T y", "x", "a + b", "0"),
               LogicError);  // no operation
  EXPECT_THROW(FusedKernel("T p", "T p", "p = 1", "T y", "p", "a + b", "0"), LogicError);  // twice
  EXPECT_THROW(FusedKernel("T p", "float16 x", "x = p", "T y", "x", "a + b", "0"),
               LogicError);  // half
  EXPECT_THROW(FusedKernel("T a", "T x", "x = a", "T y", "x", "a + b", "0"),
               LogicError);  // reserved
  EXPECT_THROW(FusedKernel("T p", "T x", "x = p", "T y", "x", "a + b", "0", {.name = "distance"}),
               LogicError);
  const FusedKernel k = cg_kernel();
  Array x = Array::zeros(queue, {8}, Dtype::float64), r = Array::zeros(queue, {8}, Dtype::float64);
  const Array p = Array::zeros(queue, {8}, Dtype::float64),
              w9 = Array::zeros(queue, {9}, Dtype::float64);
  EXPECT_THROW(k(queue, {p, p, 1.0, x}), LogicError);       // too few
  EXPECT_THROW(k(queue, {p, p, 1.0, x, 2.0}), LogicError);  // scalar updated
  EXPECT_THROW(k(queue, {p, w9, 1.0, x, r}), LogicError);   // does not broadcast
  EXPECT_THROW(k(queue, {p, p, 1.0, x, Array::zeros(queue, {4}, Dtype::float64)}),
               LogicError);  // shapes
  Array big = Array::zeros(queue, {16}, Dtype::float64);
  EXPECT_THROW(k(queue, {p, p, 1.0, x, big.view(0, {8}, Strides{16})}), LogicError);  // strided
  Array h = Array::zeros(queue, {8}, Dtype::float16);
  EXPECT_THROW(k(queue, {p, p, 1.0, x, h}), LogicError);  // half
}

SKEIN_INSTANTIATE_BACKENDS(Fused);

}  // namespace fused_test
}  // namespace
}  // namespace skein::test

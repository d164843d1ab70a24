// SPDX-License-Identifier: BSD-3-Clause
// The reductions for solvers under mpirun (1..4 ranks) on PoCL devices: dist::reduce over several
// operands (DistArrays, GridArrays' points, scalars), batches of reductions in one exchange
// (dist::dots, sums, reduce_values) and their split-phase form (begin_*, PendingValues::wait: a
// kernel enqueued in between that overwrites an operand, handles dropped without wait()). Every
// rank builds the whole global data from a hash of the global index and computes each reference on
// its own host: exact sums (values that are multiples of 1/4, so any order gives the same float64
// sum) for the fast mode, and the canonical pairwise tree of reduction.hpp written out on the host,
// bit for bit, for the deterministic mode, over every row split and process grid of the same global
// data (so the bits do not depend on the number of ranks or devices). Bad calls raise LogicError on
// every rank.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <skein/dist_ops.hpp>
#include <skein/dist_reductions.hpp>
#include <skein/grid_array.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "canonical_tree.hpp"
#include "dist_data.hpp"
#include "dist_support.hpp"
#include "mpi_support.hpp"

namespace {
namespace dist_reductions_test {

using namespace skein;
using ::skein::test::canonical_tree;
using ::skein::test::expect_logic_error;
using ::skein::test::make_dist;
using ::skein::test::make_grid;
using ::skein::test::member_splits;
using ::skein::test::on_every_rank;
using ::skein::test::Placement;
using ::skein::test::placement_name;
using ::skein::test::Rig;
using ::skein::test::same_everywhere;
using ::skein::test::seeded_values;
using ::skein::test::world_rank;

class DistReductions : public ::skein::test::PlacementTest {};
INSTANTIATE_TEST_SUITE_P(Placements, DistReductions,
                         testing::Values(Placement::runtime, Placement::two_per_rank),
                         placement_name);
class GridReductions : public ::skein::test::PlacementTest {};
INSTANTIATE_TEST_SUITE_P(Layouts, GridReductions,
                         testing::Values(Placement::runtime, Placement::two_per_rank),
                         placement_name);

// The one value of dist::reduce's per-device results, checked to be the same on every device.
double device_value(const std::vector<Array>& results, const std::string& what) {
  EXPECT_FALSE(results.empty()) << what;
  double first = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const double v = results[i].dtype() == Dtype::float32 ? reduction_value<float>(results[i])
                                                          : reduction_value<double>(results[i]);
    if (i == 0) first = v;
    EXPECT_EQ(std::bit_cast<std::uint64_t>(v), std::bit_cast<std::uint64_t>(first))
        << what << ": device " << i;
  }
  return first;
}

// ---- dist::reduce over several operands ---------------------------------------------------------

const ReductionKernel& triple_kernel(Dtype t) {
  static const ReductionKernel f32("float x, float y, float z", "float s", "x * y * z", "a + b",
                                   "0", {.name = "triple32"});
  static const ReductionKernel f64("double x, double y, double z", "double s", "x * y * z", "a + b",
                                   "0", {.name = "triple64"});
  return t == Dtype::float32 ? f32 : f64;
}

// The squared residual of an update: (c x - y)^2, with a scalar between the arrays.
const ReductionKernel& residual_kernel() {
  static const ReductionKernel k("double x, double c, double y", "double s",
                                 "(c * x - y) * (c * x - y)", "a + b", "0", {.name = "residual64"});
  return k;
}

TEST_P(DistReductions, SeveralInputsFastMatchTheHost) {
  const std::size_t M = s_.M();
  for (const Shape& shape : {Shape{1001}, Shape{37, 5}, Shape{0}, Shape{2 * M + 1, 3}}) {
    const std::size_t n = shape_size(shape);
    const auto x = seeded_values<double>(n, 1, true), y = seeded_values<double>(n, 2, true),
               z = seeded_values<double>(n, 3, true);
    double want_triple = 0, want_residual = 0;
    for (std::size_t i = 0; i < n; ++i) {
      want_triple += x[i] * y[i] * z[i];
      want_residual += (0.5 * x[i] - y[i]) * (0.5 * x[i] - y[i]);
    }
    for (const auto& [split, name] : member_splits(M, shape[0])) {
      const std::string what = to_string(shape) + " " + name;
      const DistArray dx = make_dist(s_, shape, split, x), dy = make_dist(s_, shape, split, y),
                      dz = make_dist(s_, shape, split, z);
      const double triple = device_value(
          dist::reduce(triple_kernel(Dtype::float64), {dx, dy, dz}, ReduceOp::sum), what);
      EXPECT_EQ(triple, want_triple) << what << ": x y z";
      const double residual =
          device_value(dist::reduce(residual_kernel(), {dx, 0.5, dy}, ReduceOp::sum), what);
      EXPECT_EQ(residual, want_residual) << what << ": (c x - y)^2";
      EXPECT_TRUE(same_everywhere(triple) && same_everywhere(residual)) << what;
    }
  }
}

// float32 x * y * z in deterministic mode is the host's canonical tree of the float32 products, bit
// for bit, for every split (and so for any number of ranks and devices).
TEST_P(DistReductions, SeveralInputsDeterministicIsTheCanonicalTree) {
  const std::size_t M = s_.M();
  for (std::size_t n : {std::size_t{1}, std::size_t{4099}, std::size_t{300001}}) {
    const auto x = seeded_values<float>(n, 4, false), y = seeded_values<float>(n, 5, false),
               z = seeded_values<float>(n, 6, false);
    std::vector<float> leaves(n);
    for (std::size_t i = 0; i < n; ++i) leaves[i] = (x[i] * y[i]) * z[i];
    const float want = canonical_tree(leaves);
    for (const Shape& shape : {Shape{n}, Shape{n, 1}}) {
      for (const auto& [split, name] : member_splits(M, shape[0])) {
        const std::string what = fmt::format("n {} {} {}", n, to_string(shape), name);
        const DistArray dx = make_dist(s_, shape, split, x), dy = make_dist(s_, shape, split, y),
                        dz = make_dist(s_, shape, split, z);
        const double got = device_value(dist::reduce(triple_kernel(Dtype::float32), {dx, dy, dz},
                                                     ReduceOp::sum, {.deterministic = true}),
                                        what);
        EXPECT_EQ(std::bit_cast<std::uint32_t>(static_cast<float>(got)),
                  std::bit_cast<std::uint32_t>(want))
            << what << ": " << got << " vs " << want;
        EXPECT_TRUE(same_everywhere(got)) << what;
      }
    }
  }
}

TEST_P(DistReductions, SingleInputCallsStillCompile) {
  const auto x = seeded_values<double>(100, 7, true);
  const DistArray dx = make_dist(s_, Shape{100}, RowSplit::even(), x);
  double want = 0;
  for (double v : x) want += v;
  EXPECT_EQ(device_value(dist::reduce(sum_kernel(Dtype::float64), dx, ReduceOp::sum), "one input"),
            want);
  EXPECT_EQ(device_value(dist::reduce(sum_kernel(Dtype::float64), {dx}, ReduceOp::sum), "braced"),
            want);
}

TEST_P(DistReductions, BadOperandsRaiseOnEveryRank) {
  const DistArray a(*s_.comm, Shape{40}, Dtype::float64), b(*s_.comm, Shape{41}, Dtype::float64);
  const GridArray g(*s_.comm, GridLayout::over(*s_.comm, {40}), Dtype::float64);
  const ReductionKernel two("double x, double y", "double s", "x * y", "a + b", "0",
                            {.name = "two"});
  for (bool det : {false, true}) {
    expect_logic_error(
        [&] {
          (void)dist::reduce(two, {a, b}, ReduceOp::sum, {.deterministic = det});
        },
        {"dist::reduce"}, "shapes");
    expect_logic_error(
        [&] {
          (void)dist::reduce(two, {a, g}, ReduceOp::sum, {.deterministic = det});
        },
        {"dist::reduce", "not both"}, "mixed");
    expect_logic_error(
        [&] {
          (void)dist::reduce(two, {1.0, 2.0}, ReduceOp::sum, {.deterministic = det});
        },
        {"dist::reduce", "scalar"}, "scalars only");
  }
  // A good call afterwards: no rank was left waiting.
  EXPECT_EQ(device_value(dist::reduce(two, {a, a}, ReduceOp::sum), "after"), 0.0);
}

// ---- batched reductions (dist_reductions.hpp) ---------------------------------------------------

// A CG iteration's dot products in one call: fast (exact values: the host's sums) and
// deterministic (float32 with rounding: the canonical tree of each pair's products), and a batch
// of sums equal to the single-array calls, over every split.
TEST_P(DistReductions, BatchedDotsMatchTheHost) {
  const std::size_t M = s_.M();
  for (const Shape& shape : {Shape{1001}, Shape{4099, 3}, Shape{0}}) {
    const std::size_t n = shape_size(shape);
    const auto x = seeded_values<double>(n, 21, true), y = seeded_values<double>(n, 22, true),
               r = seeded_values<double>(n, 23, true);
    double xy = 0, rr = 0, ry = 0;
    for (std::size_t i = 0; i < n; ++i) {
      xy += x[i] * y[i];
      rr += r[i] * r[i];
      ry += r[i] * y[i];
    }
    const auto fx = seeded_values<float>(n, 24, false), fy = seeded_values<float>(n, 25, false);
    std::vector<float> pxy(n), pxx(n);
    for (std::size_t i = 0; i < n; ++i) {
      pxy[i] = fx[i] * fy[i];
      pxx[i] = fx[i] * fx[i];
    }
    for (const auto& [split, name] : member_splits(M, shape[0])) {
      const std::string what = to_string(shape) + " " + name;
      const DistArray dx = make_dist(s_, shape, split, x), dy = make_dist(s_, shape, split, y),
                      dr = make_dist(s_, shape, split, r);
      const std::vector<double> got = dist::dots({{dx, dy}, {dr, dr}, {dr, dy}});
      ASSERT_EQ(got.size(), 3u) << what;
      EXPECT_EQ(got[0], xy) << what << ": x . y";
      EXPECT_EQ(got[1], rr) << what << ": r . r";
      EXPECT_EQ(got[2], ry) << what << ": r . y";
      for (double v : got) EXPECT_TRUE(same_everywhere(v)) << what;

      const DistArray gx = make_dist(s_, shape, split, fx), gy = make_dist(s_, shape, split, fy);
      const dist::DistReductionOptions det{.deterministic = true};
      const std::vector<double> d = dist::dots({{gx, gy}, {gx, gx}}, det);
      EXPECT_EQ(std::bit_cast<std::uint32_t>(static_cast<float>(d[0])),
                std::bit_cast<std::uint32_t>(canonical_tree(pxy)))
          << what << ": deterministic x . y";
      EXPECT_EQ(std::bit_cast<std::uint32_t>(static_cast<float>(d[1])),
                std::bit_cast<std::uint32_t>(canonical_tree(pxx)))
          << what << ": deterministic x . x";
      const std::vector<double> sm = dist::sums({gx, gy}, det);
      EXPECT_EQ(std::bit_cast<std::uint32_t>(static_cast<float>(sm[0])),
                std::bit_cast<std::uint32_t>(canonical_tree(fx)))
          << what << ": deterministic sum x";
      EXPECT_EQ(sm[1], dist::sum(gy, det)) << what << ": a batch of sums and dist::sum";
      EXPECT_TRUE(same_everywhere(d[0]) && same_everywhere(d[1]) && same_everywhere(sm[0])) << what;
    }
  }
}

// A batch of user kernels over several operands with min across the members.
TEST_P(DistReductions, BatchedUserKernels) {
  const std::size_t n = 777;
  const auto x = seeded_values<double>(n, 31, true), y = seeded_values<double>(n, 32, true);
  const DistArray dx = make_dist(s_, Shape{n}, RowSplit::even(), x),
                  dy = make_dist(s_, Shape{n}, RowSplit::even(), y);
  const ReductionKernel min_diff("double x, double y", "double s", "x - y", "a < b ? a : b",
                                 "INFINITY", {.name = "min_diff"});
  const ReductionKernel min_scaled("double x, double c", "double s", "c * x", "a < b ? a : b",
                                   "INFINITY", {.name = "min_scaled"});
  double want0 = INFINITY, want1 = INFINITY;
  for (std::size_t i = 0; i < n; ++i) {
    want0 = std::min(want0, x[i] - y[i]);
    want1 = std::min(want1, 3.0 * x[i]);
  }
  for (bool det : {false, true}) {
    const std::vector<double> got = dist::reduce_values(
        {{min_diff, {dx, dy}}, {min_scaled, {dx, 3.0}}}, ReduceOp::min, {.deterministic = det});
    EXPECT_EQ(got[0], want0) << (det ? "deterministic" : "fast");
    EXPECT_EQ(got[1], want1) << (det ? "deterministic" : "fast");
  }
}

TEST_P(DistReductions, BadBatchesRaiseOnEveryRank) {
  const DistArray a(*s_.comm, Shape{40}, Dtype::float64), b(*s_.comm, Shape{41}, Dtype::float64);
  const DistArray f(*s_.comm, Shape{40}, Dtype::float32);
  for (bool det : {false, true}) {
    const dist::DistReductionOptions o{.deterministic = det};
    expect_logic_error(
        [&] {
          (void)dist::dots({{a, a}, {b, b}}, o);
        },
        {"dist::begin_dots"}, "layouts");
    expect_logic_error(
        [&] {
          (void)dist::dots({{a, a}, {f, f}}, o);
        },
        {"dist::begin_dots", "one dtype"}, "dtypes");
    expect_logic_error(
        [&] {
          (void)dist::sums({a, a, a, a, a, a, a, a, a}, o);
        },
        {"dist::begin_sums", "64 bytes"}, "too many");
    expect_logic_error([&] { (void)dist::sums({}, o); }, {"dist::begin_sums"}, "empty");
  }
  EXPECT_EQ(dist::sums({a, a})[1], 0.0);  // a good call afterwards
}

// ---- split-phase --------------------------------------------------------------------------------

// The values are those of the arrays when begin_dots was called: a kernel enqueued before wait()
// that overwrites an operand runs after the local reductions (and, on one rank or the MPI backend,
// while the exchange runs on the host).
TEST_P(DistReductions, SplitPhaseOverlapsAKernel) {
  const std::size_t n = 100003;
  const auto x = seeded_values<double>(n, 51, true), y = seeded_values<double>(n, 52, true);
  double xy = 0, xx = 0;
  for (std::size_t i = 0; i < n; ++i) {
    xy += x[i] * y[i];
    xx += x[i] * x[i];
  }
  const ElementwiseKernel overwrite("double c", "double y", "y = c", {.name = "overwrite"});
  for (bool det : {false, true}) {
    const std::string what = det ? "deterministic" : "fast";
    DistArray dx = make_dist(s_, Shape{n}, RowSplit::even(), x),
              dy = make_dist(s_, Shape{n}, RowSplit::even(), y);
    dist::PendingValues pending = dist::begin_dots({{dx, dy}, {dx, dx}}, {.deterministic = det});
    EXPECT_FALSE(pending.waited());
    dist::elementwise(overwrite, {7.0, dy});  // enqueued before the values are taken
    const std::vector<double> got = pending.wait();
    EXPECT_TRUE(pending.waited());
    EXPECT_EQ(got[0], xy) << what;
    EXPECT_EQ(got[1], xx) << what;
    // The kernel ran afterwards.
    double sum7 = 0;
    for (std::size_t i = 0; i < n; ++i) sum7 += 7.0 * x[i];
    EXPECT_EQ(dist::dot(dx, dy), sum7) << what;
    expect_logic_error([&] { (void)pending.wait(); }, {"wait", "once"}, what);
  }
}

// A handle dropped without wait() completes its part of the exchange: the ranks that wait get
// their values, and later calls work on every rank.
TEST_P(DistReductions, SplitPhaseDroppedWithoutWait) {
  const std::size_t n = 5000;
  const auto x = seeded_values<double>(n, 61, true);
  double xx = 0;
  for (double v : x) xx += v * v;
  const DistArray dx = make_dist(s_, Shape{n}, RowSplit::even(), x);
  for (bool det : {false, true}) {
    {
      auto dropped = dist::begin_dots({{dx, dx}}, {.deterministic = det});
    }
    // Rank 0 waits, the others drop theirs.
    auto pending = dist::begin_dots({{dx, dx}}, {.deterministic = det});
    if (world_rank() == 0) {
      EXPECT_EQ(pending.wait()[0], xx);
    }
    {
      dist::PendingValues moved = std::move(pending);  // the moved-to handle completes it
      EXPECT_TRUE(pending.waited());                   // NOLINT: checking the moved-from state
    }
    EXPECT_EQ(dist::dots({{dx, dx}})[0], xx) << (det ? "deterministic" : "fast");
  }
}

// ---- GridArrays ---------------------------------------------------------------------------------

struct GridCase {
  std::string name;
  Shape shape;
  GridOptions options;
};

// Grids whose blocks are ranges of global indices (slabs along axis 0) and grids whose blocks are
// not (chosen 2-D and 3-D grids, a split along axis 1: redistributed into slabs), halos,
// components.
std::vector<GridCase> grid_cases(std::size_t M) {
  return {{"2-D slabs, halo 1", {61, 37}, {.grid = {M, 1}, .halo = {1}}},
          {"2-D chosen, halo 2x1", {61, 37}, {.halo = {2, 1}}},
          {"2-D split along axis 1", {13, 250}, {.grid = {1, M}, .halo = {1}}},
          {"3-D chosen, 2 components", {9, 11, 7}, {.components = 2, .halo = {1}}}};
}

TEST_P(GridReductions, SeveralInputsMatchTheHostAndTheCanonicalTree) {
  for (const GridCase& c : grid_cases(s_.M())) {
    const GridLayout layout = GridLayout::over(*s_.comm, c.shape, c.options);
    const std::size_t n = layout.size();
    // Fast: exact values, so the sum is the host's whatever the order.
    const auto ex = seeded_values<double>(n, 11, true), ey = seeded_values<double>(n, 12, true),
               ez = seeded_values<double>(n, 13, true);
    double want = 0;
    for (std::size_t i = 0; i < n; ++i) want += ex[i] * ey[i] * ez[i];
    const GridArray gx = make_grid(s_, layout, ex), gy = make_grid(s_, layout, ey),
                    gz = make_grid(s_, layout, ez);
    const double fast = device_value(
        dist::reduce(triple_kernel(Dtype::float64), {gx, gy, gz}, ReduceOp::sum), c.name);
    EXPECT_EQ(fast, want) << c.name << ": fast";
    // Deterministic: float32 with rounding, the canonical tree over the global C-order indices.
    const auto x = seeded_values<float>(n, 14, false), y = seeded_values<float>(n, 15, false),
               z = seeded_values<float>(n, 16, false);
    std::vector<float> leaves(n);
    for (std::size_t i = 0; i < n; ++i) leaves[i] = (x[i] * y[i]) * z[i];
    const float tree = canonical_tree(leaves);
    const GridArray fx = make_grid(s_, layout, x), fy = make_grid(s_, layout, y),
                    fz = make_grid(s_, layout, z);
    const double det = device_value(dist::reduce(triple_kernel(Dtype::float32), {fx, fy, fz},
                                                 ReduceOp::sum, {.deterministic = true}),
                                    c.name);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(static_cast<float>(det)),
              std::bit_cast<std::uint32_t>(tree))
        << c.name << ": deterministic " << det << " vs " << tree;
    EXPECT_TRUE(same_everywhere(det)) << c.name;
    // The points only: the halos were never read (they hold zeros, which would not change a sum of
    // products; so check the operands are unchanged instead, and that a scalar operand works).
    const ReductionKernel scaled("float x, float c, float y", "float s", "c * x * y", "a + b", "0",
                                 {.name = "scaled"});
    std::vector<float> sl(n);
    for (std::size_t i = 0; i < n; ++i) sl[i] = (2.0f * x[i]) * y[i];
    const double got = device_value(
        dist::reduce(scaled, {fx, 2.0f, fy}, ReduceOp::sum, {.deterministic = true}), c.name);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(static_cast<float>(got)),
              std::bit_cast<std::uint32_t>(canonical_tree(sl)))
        << c.name << ": with a scalar";
  }
}

TEST_P(GridReductions, BadOperandsRaiseOnEveryRank) {
  const GridArray a(*s_.comm, GridLayout::over(*s_.comm, {12, 8}, {.halo = {1}}), Dtype::float64);
  const GridArray b(*s_.comm, GridLayout::over(*s_.comm, {12, 9}, {}), Dtype::float64);
  const ReductionKernel two("double x, double y", "double s", "x * y", "a + b", "0",
                            {.name = "two"});
  for (bool det : {false, true}) {
    expect_logic_error(
        [&] {
          (void)dist::reduce(two, {a, b}, ReduceOp::sum, {.deterministic = det});
        },
        {"dist::reduce", "different layouts"});
  }
  EXPECT_TRUE(on_every_rank(true));
}

TEST_P(GridReductions, BatchedDotsOnEveryLayout) {
  for (const GridCase& c : grid_cases(s_.M())) {
    const GridLayout layout = GridLayout::over(*s_.comm, c.shape, c.options);
    const std::size_t n = layout.size();
    const auto x = seeded_values<double>(n, 41, true), y = seeded_values<double>(n, 42, true);
    double xy = 0, yy = 0;
    for (std::size_t i = 0; i < n; ++i) {
      xy += x[i] * y[i];
      yy += y[i] * y[i];
    }
    const GridArray gx = make_grid(s_, layout, x), gy = make_grid(s_, layout, y);
    const std::vector<double> fast = dist::dots({{gx, gy}, {gy, gy}});
    EXPECT_EQ(fast[0], xy) << c.name;
    EXPECT_EQ(fast[1], yy) << c.name;
    const auto fx = seeded_values<float>(n, 43, false), fy = seeded_values<float>(n, 44, false);
    std::vector<float> pxy(n);
    for (std::size_t i = 0; i < n; ++i) pxy[i] = fx[i] * fy[i];
    const GridArray hx = make_grid(s_, layout, fx), hy = make_grid(s_, layout, fy);
    const std::vector<double> det = dist::dots({{hx, hy}, {hx, hy}}, {.deterministic = true});
    EXPECT_EQ(std::bit_cast<std::uint32_t>(static_cast<float>(det[0])),
              std::bit_cast<std::uint32_t>(canonical_tree(pxy)))
        << c.name << ": deterministic";
    EXPECT_EQ(det[0], det[1]) << c.name;
    EXPECT_TRUE(same_everywhere(det[0])) << c.name;
  }
}

}  // namespace dist_reductions_test
}  // namespace

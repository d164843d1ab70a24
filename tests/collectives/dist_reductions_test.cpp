// SPDX-License-Identifier: BSD-3-Clause
// The reductions for solvers under mpirun (1..4 ranks) on PoCL devices: dist::reduce over several
// operands (DistArrays, GridArrays' points, scalars). Every rank builds the whole global data from
// a hash of the global index and computes each reference on its own host: exact sums (values that
// are multiples of 1/4, so any order gives the same float64 sum) for the fast mode, and the
// canonical pairwise tree of reduction.hpp written out on the host, bit for bit, for the
// deterministic mode, over every row split and process grid of the same global data (so the bits
// do not depend on the number of ranks or devices). Bad calls raise LogicError on every rank.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <bit>
#include <cstdint>
#include <functional>
#include <skein/dist_ops.hpp>
#include <skein/grid_array.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "dist_support.hpp"
#include "mpi_support.hpp"

namespace {
namespace dist_reductions_test {

using namespace skein;
using ::skein::test::expect_logic_error;
using ::skein::test::on_every_rank;
using ::skein::test::Placement;
using ::skein::test::placement_name;
using ::skein::test::Rig;
using ::skein::test::world_rank;

class DistReductions : public ::skein::test::PlacementTest {};
INSTANTIATE_TEST_SUITE_P(Placements, DistReductions,
                         testing::Values(Placement::runtime, Placement::two_per_rank), placement_name);
class GridReductions : public ::skein::test::PlacementTest {};
INSTANTIATE_TEST_SUITE_P(Layouts, GridReductions,
                         testing::Values(Placement::runtime, Placement::two_per_rank), placement_name);

std::uint64_t mix(std::uint64_t z) {  // splitmix64's finaliser
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// exact: multiples of 1/4 in [-4, 4] (products of three and their sums are exact in float64);
// otherwise full mantissas in [-1, 1) (sums round).
template <class T>
std::vector<T> global_data(std::size_t n, std::uint64_t salt, bool exact) {
  std::vector<T> out(n);
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint64_t h = mix(k * 0x632BE59BD9B4E019ull + salt * 0x8CB92BA72F3D8DD7ull);
    out[k] = exact ? static_cast<T>(static_cast<double>(static_cast<int>(h % 33) - 16) / 4.0)
                   : static_cast<T>(static_cast<double>(h >> 11) * 0x1p-53 * 2.0 - 1.0);
  }
  return out;
}

// The canonical tree over [0, N) (reduction.hpp).
template <class R>
R canonical(const std::vector<R>& leaves) {
  const std::uint64_t N = leaves.size();
  if (N == 0) return R(0);
  std::function<R(unsigned, std::uint64_t)> node = [&](unsigned l, std::uint64_t k) -> R {
    const std::uint64_t start = k << l;
    if (l == 0) return leaves[start];
    const std::uint64_t right = start + (std::uint64_t{1} << (l - 1));
    const R left = node(l - 1, 2 * k);
    if (right >= N) return left;
    return left + node(l - 1, 2 * k + 1);
  };
  unsigned L = 0;
  while ((std::uint64_t{1} << L) < N) ++L;
  return node(L, 0);
}

template <class T>
DistArray make_dist(Rig& s, const Shape& shape, const RowSplit& split, const std::vector<T>& global) {
  DistArray d(*s.comm, shape, dtype_of<T>, split);
  const RowRange rows = d.rank_rows();
  const std::size_t C = d.layout().row_size();
  d.scatter_local(std::span<const T>(global.data() + rows.begin * C, rows.size() * C));
  return d;
}

template <class T>
GridArray make_grid(Rig& s, const GridLayout& layout, const std::vector<T>& global) {
  GridArray a(*s.comm, layout, dtype_of<T>);
  a.scatter(world_rank() == 0 ? global : std::vector<T>{}, 0);
  return a;
}

// The one value of dist::reduce's per-device results, checked to be the same on every device.
double device_value(const std::vector<Array>& results, const std::string& what) {
  EXPECT_FALSE(results.empty()) << what;
  double first = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const double v = results[i].dtype() == Dtype::float32 ? reduction_value<float>(results[i])
                                                           : reduction_value<double>(results[i]);
    if (i == 0) first = v;
    EXPECT_EQ(std::bit_cast<std::uint64_t>(v), std::bit_cast<std::uint64_t>(first)) << what << ": device " << i;
  }
  return first;
}

bool same_everywhere(double v) {
  double lo = 0, hi = 0;
  MPI_Allreduce(&v, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&v, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return std::bit_cast<std::uint64_t>(lo) == std::bit_cast<std::uint64_t>(v) &&
         std::bit_cast<std::uint64_t>(hi) == std::bit_cast<std::uint64_t>(v);
}

// Row splits of the members: even, weights 1..M, everything on the last member.
std::vector<std::pair<RowSplit, std::string>> splits(std::size_t M, std::size_t rows) {
  std::vector<double> w;
  for (std::size_t m = 0; m < M; ++m) w.push_back(static_cast<double>(m + 1));
  std::vector<std::size_t> last(M, 0);
  last.back() = rows;
  return {{RowSplit::even(), "even"}, {RowSplit::weights(w), "weights"}, {RowSplit::counts(last), "last"}};
}

// ---- dist::reduce over several operands ---------------------------------------------------------

const ReductionKernel& triple_kernel(Dtype t) {
  static const ReductionKernel f32("float x, float y, float z", "float s", "x * y * z", "a + b", "0",
                                   {.name = "triple32"});
  static const ReductionKernel f64("double x, double y, double z", "double s", "x * y * z", "a + b", "0",
                                   {.name = "triple64"});
  return t == Dtype::float32 ? f32 : f64;
}

// The squared residual of an update: (c x - y)^2, with a scalar between the arrays.
const ReductionKernel& residual_kernel() {
  static const ReductionKernel k("double x, double c, double y", "double s", "(c * x - y) * (c * x - y)", "a + b",
                                 "0", {.name = "residual64"});
  return k;
}

TEST_P(DistReductions, SeveralInputsFastMatchTheHost) {
  const std::size_t M = s_.M();
  for (const Shape& shape : {Shape{1001}, Shape{37, 5}, Shape{0}, Shape{2 * M + 1, 3}}) {
    const std::size_t n = shape_size(shape);
    const auto x = global_data<double>(n, 1, true), y = global_data<double>(n, 2, true),
               z = global_data<double>(n, 3, true);
    double want_triple = 0, want_residual = 0;
    for (std::size_t i = 0; i < n; ++i) {
      want_triple += x[i] * y[i] * z[i];
      want_residual += (0.5 * x[i] - y[i]) * (0.5 * x[i] - y[i]);
    }
    for (const auto& [split, name] : splits(M, shape[0])) {
      const std::string what = to_string(shape) + " " + name;
      const DistArray dx = make_dist(s_, shape, split, x), dy = make_dist(s_, shape, split, y),
                      dz = make_dist(s_, shape, split, z);
      const double triple = device_value(dist::reduce(triple_kernel(Dtype::float64), {dx, dy, dz}, ReduceOp::sum), what);
      EXPECT_EQ(triple, want_triple) << what << ": x y z";
      const double residual = device_value(dist::reduce(residual_kernel(), {dx, 0.5, dy}, ReduceOp::sum), what);
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
    const auto x = global_data<float>(n, 4, false), y = global_data<float>(n, 5, false),
               z = global_data<float>(n, 6, false);
    std::vector<float> leaves(n);
    for (std::size_t i = 0; i < n; ++i) leaves[i] = (x[i] * y[i]) * z[i];
    const float want = canonical(leaves);
    for (const Shape& shape : {Shape{n}, Shape{n, 1}}) {
      for (const auto& [split, name] : splits(M, shape[0])) {
        const std::string what = fmt::format("n {} {} {}", n, to_string(shape), name);
        const DistArray dx = make_dist(s_, shape, split, x), dy = make_dist(s_, shape, split, y),
                        dz = make_dist(s_, shape, split, z);
        const double got = device_value(
            dist::reduce(triple_kernel(Dtype::float32), {dx, dy, dz}, ReduceOp::sum, {.deterministic = true}), what);
        EXPECT_EQ(std::bit_cast<std::uint32_t>(static_cast<float>(got)), std::bit_cast<std::uint32_t>(want))
            << what << ": " << got << " vs " << want;
        EXPECT_TRUE(same_everywhere(got)) << what;
      }
    }
  }
}

TEST_P(DistReductions, SingleInputCallsStillCompile) {
  const auto x = global_data<double>(100, 7, true);
  const DistArray dx = make_dist(s_, Shape{100}, RowSplit::even(), x);
  double want = 0;
  for (double v : x) want += v;
  EXPECT_EQ(device_value(dist::reduce(sum_kernel(Dtype::float64), dx, ReduceOp::sum), "one input"), want);
  EXPECT_EQ(device_value(dist::reduce(sum_kernel(Dtype::float64), {dx}, ReduceOp::sum), "braced"), want);
}

TEST_P(DistReductions, BadOperandsRaiseOnEveryRank) {
  const DistArray a(*s_.comm, Shape{40}, Dtype::float64), b(*s_.comm, Shape{41}, Dtype::float64);
  const GridArray g(*s_.comm, GridLayout::over(*s_.comm, {40}), Dtype::float64);
  const ReductionKernel two("double x, double y", "double s", "x * y", "a + b", "0", {.name = "two"});
  for (bool det : {false, true}) {
    expect_logic_error([&] { (void)dist::reduce(two, {a, b}, ReduceOp::sum, {.deterministic = det}); },
                       {"dist::reduce"}, "shapes");
    expect_logic_error([&] { (void)dist::reduce(two, {a, g}, ReduceOp::sum, {.deterministic = det}); },
                       {"dist::reduce", "not both"}, "mixed");
    expect_logic_error([&] { (void)dist::reduce(two, {1.0, 2.0}, ReduceOp::sum, {.deterministic = det}); },
                       {"dist::reduce", "scalar"}, "scalars only");
  }
  // A good call afterwards: no rank was left waiting.
  EXPECT_EQ(device_value(dist::reduce(two, {a, a}, ReduceOp::sum), "after"), 0.0);
}

// ---- GridArrays ---------------------------------------------------------------------------------

struct GridCase {
  std::string name;
  Shape shape;
  GridOptions options;
};

// Grids whose blocks are ranges of global indices (slabs along axis 0) and grids whose blocks are
// not (chosen 2-D and 3-D grids, a split along axis 1: redistributed into slabs), halos, components.
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
    const auto ex = global_data<double>(n, 11, true), ey = global_data<double>(n, 12, true),
               ez = global_data<double>(n, 13, true);
    double want = 0;
    for (std::size_t i = 0; i < n; ++i) want += ex[i] * ey[i] * ez[i];
    const GridArray gx = make_grid(s_, layout, ex), gy = make_grid(s_, layout, ey), gz = make_grid(s_, layout, ez);
    const double fast = device_value(dist::reduce(triple_kernel(Dtype::float64), {gx, gy, gz}, ReduceOp::sum), c.name);
    EXPECT_EQ(fast, want) << c.name << ": fast";
    // Deterministic: float32 with rounding, the canonical tree over the global C-order indices.
    const auto x = global_data<float>(n, 14, false), y = global_data<float>(n, 15, false),
               z = global_data<float>(n, 16, false);
    std::vector<float> leaves(n);
    for (std::size_t i = 0; i < n; ++i) leaves[i] = (x[i] * y[i]) * z[i];
    const float tree = canonical(leaves);
    const GridArray fx = make_grid(s_, layout, x), fy = make_grid(s_, layout, y), fz = make_grid(s_, layout, z);
    const double det = device_value(
        dist::reduce(triple_kernel(Dtype::float32), {fx, fy, fz}, ReduceOp::sum, {.deterministic = true}), c.name);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(static_cast<float>(det)), std::bit_cast<std::uint32_t>(tree))
        << c.name << ": deterministic " << det << " vs " << tree;
    EXPECT_TRUE(same_everywhere(det)) << c.name;
    // The points only: the halos were never read (they hold zeros, which would not change a sum of
    // products; so check the operands are unchanged instead, and that a scalar operand works).
    const ReductionKernel scaled("float x, float c, float y", "float s", "c * x * y", "a + b", "0", {.name = "scaled"});
    std::vector<float> sl(n);
    for (std::size_t i = 0; i < n; ++i) sl[i] = (2.0f * x[i]) * y[i];
    const double got = device_value(dist::reduce(scaled, {fx, 2.0f, fy}, ReduceOp::sum, {.deterministic = true}), c.name);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(static_cast<float>(got)), std::bit_cast<std::uint32_t>(canonical(sl)))
        << c.name << ": with a scalar";
  }
}

TEST_P(GridReductions, BadOperandsRaiseOnEveryRank) {
  const GridArray a(*s_.comm, GridLayout::over(*s_.comm, {12, 8}, {.halo = {1}}), Dtype::float64);
  const GridArray b(*s_.comm, GridLayout::over(*s_.comm, {12, 9}, {}), Dtype::float64);
  const ReductionKernel two("double x, double y", "double s", "x * y", "a + b", "0", {.name = "two"});
  for (bool det : {false, true}) {
    expect_logic_error([&] { (void)dist::reduce(two, {a, b}, ReduceOp::sum, {.deterministic = det}); },
                       {"dist::reduce", "different layouts"});
  }
  EXPECT_TRUE(on_every_rank(true));
}

}  // namespace dist_reductions_test
}  // namespace

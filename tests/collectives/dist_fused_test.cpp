// SPDX-License-Identifier: BSD-3-Clause
// dist::update_and_reduce under mpirun (1..4 ranks) on PoCL devices: a CG update
// (x += alpha p; r -= alpha w; reduce r . r) over DistArrays of every row split and over GridArrays
// split along axis 0, against the host: the updated arrays exactly, and r . r bit for bit as the
// canonical tree of the host's squares (deterministic mode: the same bits for any number of ranks
// and devices) or exactly (fast mode, with values whose sums are exact). Bad calls raise LogicError
// on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <bit>
#include <cstdint>
#include <functional>
#include <skein/dist_fused.hpp>
#include <skein/grid_array.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "canonical_tree.hpp"
#include "dist_support.hpp"
#include "mpi_support.hpp"

namespace {
namespace dist_fused_test {

using namespace skein;
using ::skein::test::canonical_tree;
using ::skein::test::expect_logic_error;
using ::skein::test::Placement;
using ::skein::test::placement_name;
using ::skein::test::Rig;
using ::skein::test::world_rank;

class DistFused : public ::skein::test::PlacementTest {};
INSTANTIATE_TEST_SUITE_P(Placements, DistFused,
                         testing::Values(Placement::runtime, Placement::two_per_rank),
                         placement_name);

// Multiples of 1/8 in [-2, 2] (exact) or full mantissas in [-1, 1).
std::vector<double> global_data(std::size_t n, std::uint64_t salt, bool exact) {
  std::vector<double> out(n);
  for (std::size_t k = 0; k < n; ++k) {
    std::uint64_t z =
        k * 0x632BE59BD9B4E019ull + salt * 0x8CB92BA72F3D8DD7ull + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    out[k] = exact ? static_cast<double>(static_cast<int>(z % 33) - 16) / 8.0
                   : static_cast<double>(z >> 11) * 0x1p-52 - 1.0;
  }
  return out;
}

const FusedKernel& cg_kernel() {
  static const FusedKernel k("double p, double w, double alpha", "double x, double r",
                             "x += alpha * p; r -= alpha * w", "double rr", "r * r", "a + b", "0",
                             {.name = "cg_update"});
  return k;
}

DistArray make_dist(Rig& s, std::size_t n, const RowSplit& split,
                    const std::vector<double>& global) {
  DistArray d(*s.comm, Shape{n}, Dtype::float64, split);
  const RowRange rows = d.rank_rows();
  d.scatter_local(std::span<const double>(global.data() + rows.begin, rows.size()));
  return d;
}

std::vector<double> gathered(const DistArray& d) {
  const std::vector<double> local = d.gather_local<double>();
  std::vector<int> counts(static_cast<std::size_t>(d.communicator().size())),
      displs(counts.size(), 0);
  const int mine = static_cast<int>(local.size());
  MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (std::size_t i = 1; i < counts.size(); ++i) displs[i] = displs[i - 1] + counts[i - 1];
  std::vector<double> all(static_cast<std::size_t>(displs.back() + counts.back()));
  MPI_Allgatherv(local.data(), mine, MPI_DOUBLE, all.data(), counts.data(), displs.data(),
                 MPI_DOUBLE, MPI_COMM_WORLD);
  return all;
}

TEST_P(DistFused, CgUpdateMatchesTheHostOnEverySplit) {
  const std::size_t M = s_.M();
  const double alpha = 0.375;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{4099}, std::size_t{70001}}) {
    for (bool det : {false, true}) {
      const auto x = global_data(n, 1, !det), r = global_data(n, 2, !det),
                 p = global_data(n, 3, !det), w = global_data(n, 4, !det);
      std::vector<double> wx = x, wr = r, sq(n);
      double exact = 0;
      for (std::size_t i = 0; i < n; ++i) {
        volatile double ap = alpha * p[i], aw = alpha * w[i];
        wx[i] += ap;
        wr[i] -= aw;
        sq[i] = wr[i] * wr[i];
        exact += sq[i];
      }
      const double want = det ? canonical_tree(sq) : exact;
      std::vector<double> weights;
      for (std::size_t m = 0; m < M; ++m) weights.push_back(static_cast<double>(m + 1));
      for (const RowSplit& split : {RowSplit::even(), RowSplit::weights(weights)}) {
        const std::string what = std::to_string(n) + (det ? " deterministic" : " fast");
        DistArray dx = make_dist(s_, n, split, x), dr = make_dist(s_, n, split, r);
        const DistArray dp = make_dist(s_, n, split, p), dw = make_dist(s_, n, split, w);
        const double got = dist::update_and_reduce(cg_kernel(), {dp, dw, alpha, dx, dr},
                                                   ReduceOp::sum, {.deterministic = det});
        EXPECT_EQ(std::bit_cast<std::uint64_t>(got), std::bit_cast<std::uint64_t>(want))
            << what << ": " << got << " vs " << want;
        if (det) {  // no contraction: the host's values exactly
          EXPECT_EQ(gathered(dx), wx) << what;
          EXPECT_EQ(gathered(dr), wr) << what;
        }
      }
    }
  }
}

// The split-phase form over GridArrays split along axis 0 (ranges of global indices).
TEST_P(DistFused, SplitPhaseOverGridSlabs) {
  const std::size_t rows = 37, cols = 11, n = rows * cols;
  const auto x = global_data(n, 5, false), r = global_data(n, 6, false),
             p = global_data(n, 7, false), w = global_data(n, 8, false);
  std::vector<double> sq(n);
  for (std::size_t i = 0; i < n; ++i) {
    volatile double aw = 0.5 * w[i];
    const double ri = r[i] - aw;
    sq[i] = ri * ri;
  }
  GridOptions options;
  options.grid = {s_.M(), 1};
  const GridLayout layout = GridLayout::over(*s_.comm, {rows, cols}, options);
  auto make = [&](const std::vector<double>& v) {
    GridArray a(*s_.comm, layout, Dtype::float64);
    a.scatter(world_rank() == 0 ? v : std::vector<double>{}, 0);
    return a;
  };
  GridArray gx = make(x), gr = make(r);
  const GridArray gp = make(p), gw = make(w);
  dist::PendingValues pending = dist::begin_update_and_reduce(
      cg_kernel(), {gp, gw, 0.5, gx, gr}, ReduceOp::sum, {.deterministic = true});
  const double got = pending.wait().at(0);
  const double want = canonical_tree(sq);
  EXPECT_EQ(std::bit_cast<std::uint64_t>(got), std::bit_cast<std::uint64_t>(want))
      << got << " vs " << want;
}

TEST_P(DistFused, BadOperandsRaiseOnEveryRank) {
  const DistArray a(*s_.comm, Shape{40}, Dtype::float64), b(*s_.comm, Shape{41}, Dtype::float64);
  DistArray x(*s_.comm, Shape{40}, Dtype::float64), r(*s_.comm, Shape{40}, Dtype::float64);
  const char* call = "dist::begin_update_and_reduce";
  for (bool det : {false, true}) {
    expect_logic_error(
        [&] {
          (void)dist::update_and_reduce(cg_kernel(), {a, a, 1.0, x}, ReduceOp::sum,
                                        {.deterministic = det});
        },
        {call}, "count");
    expect_logic_error(
        [&] {
          (void)dist::update_and_reduce(cg_kernel(), {a, a, 1.0, x, 2.0}, ReduceOp::sum,
                                        {.deterministic = det});
        },
        {call, "scalar"}, "scalar updated");
    expect_logic_error(
        [&] {
          (void)dist::update_and_reduce(cg_kernel(), {a, b, 1.0, x, r}, ReduceOp::sum,
                                        {.deterministic = det});
        },
        {call}, "shapes");
  }
  if (s_.M() > 1) {
    GridOptions options;
    options.grid = {1, s_.M()};
    const GridLayout layout = GridLayout::over(*s_.comm, {4, 2 * s_.M()}, options);
    GridArray g(*s_.comm, layout, Dtype::float64);
    expect_logic_error(
        [&] {
          (void)dist::update_and_reduce(cg_kernel(), {g, g, 1.0, g, g}, ReduceOp::sum,
                                        {.deterministic = true});
        },
        {call, "ranges"}, "grid columns");
  }
  EXPECT_EQ(dist::update_and_reduce(cg_kernel(), {a, a, 1.0, x, r}, ReduceOp::sum), 0.0);
}

}  // namespace dist_fused_test
}  // namespace

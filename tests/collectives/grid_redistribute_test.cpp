// SPDX-License-Identifier: BSD-3-Clause
// GridArray's redistribute under mpirun (1..4 ranks) on PoCL devices: between every pair of a set
// of layouts of one 3-D array (the grid chosen, slabs, pencils, uneven slabs with an empty member,
// 2 x 1 x 2), every element of every block with halo checked against the host (grid_values.hpp):
// the global values at the points, the halo as it was; and arrays that do not match are refused on
// every rank. Two device set-ups, as in grid_halo_test.cpp.
#include <gtest/gtest.h>
#include <mpi.h>

#include <fmt/format.h>

#include <skein/grid_array.hpp>
#include <skein/grid_layout.hpp>
#include <skein/skein.hpp>
#include <string>
#include <utility>
#include <vector>

#include "dist_support.hpp"
#include "grid_values.hpp"
#include "mpi_support.hpp"

namespace {
namespace grid_redistribute_test {

using namespace skein;
using namespace ::skein::test::grid;
using ::skein::test::expect_logic_error;
using ::skein::test::on_every_rank;
using ::skein::test::Placement;
using ::skein::test::placement_name;
using ::skein::test::world_rank;
using ::skein::test::world_size;

class GridRedistribution : public ::skein::test::PlacementTest {};

INSTANTIATE_TEST_SUITE_P(Layouts, GridRedistribution,
                         testing::Values(Placement::runtime, Placement::two_per_rank),
                         placement_name);

// Fills `a`'s blocks (halos included) from initial_block with `salt`.
void fill_blocks(const GridArray& a, std::size_t salt) {
  for (const auto& b : a.blocks()) {
    if (b.with_halo.size() > 0)
      b.with_halo.set(to_bytes(initial_block(a.layout(), b.member, salt), a.dtype()));
  }
}

// After redistribute(from, to): every local block of `to` holds the global values (salt `salt`)
// at its points and, in its halo, what it held before (filled with salt `before`).
void check_redistributed(const GridArray& to, std::size_t salt, std::size_t before,
                         const std::string& what) {
  for (const auto& b : to.blocks()) {
    if (b.block.empty()) continue;
    const auto want_points = initial_block(to.layout(), b.member, salt);
    const auto want_halo = initial_block(to.layout(), b.member, before);
    std::vector<std::byte> bytes(b.with_halo.nbytes());
    b.with_halo.get(bytes);
    const auto got = from_bytes(bytes, to.dtype());
    ASSERT_EQ(got.size(), want_points.size()) << what;
    for (std::size_t k = 0; k < got.size(); ++k) {
      // Global values are never negative; halo cells hold negative sentinels.
      const double want = want_points[k] >= 0 ? want_points[k] : want_halo[k];
      if (got[k] != want) {
        ADD_FAILURE() << what << ": member " << b.member << ", element " << k
                      << " of its block with halo: got " << got[k] << ", want " << want << " (from "
                      << to.layout().describe() << ")";
        break;
      }
    }
  }
}

// The layouts of one 3-D global array (two components per point) that redistribute moves between:
// the grid chosen, slabs, pencils, uneven slabs with a member that owns no points, and a 2 x 1 x 2
// grid where there are four members; with different halos and stencils.
std::vector<std::pair<std::string, GridOptions>> redistribution_layouts(std::size_t M,
                                                                        const Shape& shape) {
  std::vector<std::pair<std::string, GridOptions>> out = {
      {"chosen, halo 1", {.components = 2, .halo = {1}}},
      {"slabs", {.grid = {M, 1, 1}, .components = 2}},
      {"pencils, halo 2 1 1 box",
       {.grid = {1, 0, 0}, .components = 2, .halo = {2, 1, 1}, .stencil = Stencil::box}},
  };
  if (M > 1) {
    std::vector<std::size_t> sizes(M, 1);
    sizes[0] = 0;
    sizes[M - 1] = shape[0] - (M - 2);
    out.push_back({"uneven slabs, member 0 empty",
                   {.grid = {M, 1, 1}, .sizes = {sizes, {}, {}}, .components = 2}});
  }
  if (M == 4)
    out.push_back(
        {"2 x 1 x 2, halo 1 0 2", {.grid = {2, 1, 2}, .components = 2, .halo = {1, 0, 2}}});
  return out;
}

TEST_P(GridRedistribution, RedistributeBetweenEveryPairOfLayouts) {
  const std::size_t M = s_.M();
  const Shape shape = {2 * M + 1, 6, 5};
  const auto layouts = redistribution_layouts(M, shape);
  for (const auto& [from_name, from_options] : layouts) {
    for (const auto& [to_name, to_options] : layouts) {
      const std::string what = fmt::format("{} to {}", from_name, to_name);
      const GridArray from(*s_.comm, GridLayout::over(*s_.comm, shape, from_options),
                           Dtype::float64);
      const GridArray to(*s_.comm, GridLayout::over(*s_.comm, shape, to_options), Dtype::float64);
      fill_blocks(from, 0);
      fill_blocks(to, 7);  // other values at its points: the test fails if nothing moves
      redistribute(from, to);
      check_redistributed(to, 0, 7, what);
    }
  }
  // Another dtype, on a queue of its own, and back: the round trip gives the global array again.
  const Queue queue(s_.comm->context());
  const GridArray a(*s_.comm, GridLayout::over(*s_.comm, shape, layouts[1].second), Dtype::int32);
  const GridArray b(*s_.comm, GridLayout::over(*s_.comm, shape, layouts[2].second), Dtype::int32);
  const GridArray c(*s_.comm, GridLayout::over(*s_.comm, shape, layouts[1].second), Dtype::int32);
  fill_blocks(a, 3);
  fill_blocks(b, 9);
  fill_blocks(c, 5);
  redistribute(queue, a, b);
  redistribute(queue, b, c);
  queue.synchronize();
  check_redistributed(b, 3, 9, "int32 slabs to pencils on another queue");
  check_redistributed(c, 3, 5, "int32 pencils back to slabs");
}

TEST_P(GridRedistribution, RedistributeRefusesArraysThatDoNotMatch) {
  const std::size_t M = s_.M();
  const GridArray a(*s_.comm, GridLayout::over(*s_.comm, {2 * M, 4}), Dtype::float32);
  const GridArray wider(*s_.comm, GridLayout::over(*s_.comm, {2 * M, 5}), Dtype::float32);
  const GridArray doubles(*s_.comm, GridLayout::over(*s_.comm, {2 * M, 4}), Dtype::float64);
  const GridArray pairs(*s_.comm, GridLayout::over(*s_.comm, {2 * M, 4}, {.components = 2}),
                        Dtype::float32);
  expect_logic_error([&] { redistribute(a, wider); }, {"redistribute", "one global shape"});
  expect_logic_error([&] { redistribute(a, pairs); }, {"redistribute", "one global shape"});
  expect_logic_error([&] { redistribute(a, doubles); }, {"redistribute", "float32", "float64"});
  // Nothing was left half done: a redistribution that matches still works on every rank.
  const GridArray b(*s_.comm, GridLayout::over(*s_.comm, {2 * M, 4}, {.grid = {1, 0}}),
                    Dtype::float32);
  fill_blocks(a, 1);
  fill_blocks(b, 4);
  redistribute(a, b);
  check_redistributed(b, 1, 4, "after the errors");
}

}  // namespace grid_redistribute_test
}  // namespace

// SPDX-License-Identifier: BSD-3-Clause
// GridLayout under mpirun (1..4 ranks): the arithmetic of domains split over process grids,
// checked against host computations written out independently of the layout's code (members
// numbered by nested loops over the grid, blocks from prefix sums of the sizes, neighbours found
// by looking up the point just beyond a block, automatic grids against MPI_Dims_create where the
// domain is equal-sided). Even and uneven splits, members without points, members per rank of
// every kind; bad input raises LogicError naming what is wrong, on every rank for GridLayout::over.
#include <gtest/gtest.h>
#include <mpi.h>

#include <fmt/format.h>

#include <cstddef>
#include <optional>
#include <skein/grid_layout.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "dist_support.hpp"
#include "mpi_support.hpp"

namespace {
namespace grid_layout_test {

using namespace skein;
using ::skein::test::expect_logic_error;
using ::skein::test::on_every_rank;

// The reference: member -> grid coordinates by counting through the grid in C order.
std::vector<std::vector<std::size_t>> coords_in_c_order(const std::vector<std::size_t>& grid) {
  std::vector<std::vector<std::size_t>> out;
  std::vector<std::size_t> c(grid.size(), 0);
  std::size_t total = 1;
  for (auto g : grid) total *= g;
  for (std::size_t k = 0; k < total; ++k) {
    out.push_back(c);
    for (std::size_t a = grid.size(); a-- > 0;) {
      if (++c[a] < grid[a]) break;
      c[a] = 0;
    }
  }
  return out;
}

std::vector<std::size_t> even_sizes(std::size_t n, std::size_t g) {
  std::vector<std::size_t> s(g, n / g);
  for (std::size_t p = 0; p < n % g; ++p) ++s[p];
  return s;
}

// Position along an axis whose [begin, end) holds x, scanning the sizes (empty ones never hold x).
std::size_t position_of(const std::vector<std::size_t>& sizes, std::size_t x) {
  std::size_t begin = 0;
  for (std::size_t p = 0; p < sizes.size(); ++p) {
    if (x < begin + sizes[p]) return p;
    begin += sizes[p];
  }
  return sizes.size();
}

// Checks every member's block, shape, location and neighbours against the reference computed
// from `grid` and `sizes` (per axis, per grid position).
void check_layout(const GridLayout& layout, const Shape& shape,
                  const std::vector<std::size_t>& per_rank, const std::vector<std::size_t>& grid,
                  const std::vector<std::vector<std::size_t>>& sizes, const std::string& what) {
  const std::size_t n = shape.size();
  ASSERT_EQ(layout.grid(), grid) << what;
  ASSERT_EQ(layout.shape(), shape) << what;
  const auto coords = coords_in_c_order(grid);
  std::size_t M = 0;
  for (auto m : per_rank) M += m;
  ASSERT_EQ(layout.members(), M) << what;
  ASSERT_EQ(coords.size(), M) << what;
  std::size_t member = 0, points = 0;
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    for (std::size_t l = 0; l < per_rank[r]; ++l, ++member) {
      const std::string at = fmt::format("{}: member {}", what, member);
      EXPECT_EQ(layout.location(member), (MemberLocation{member, static_cast<int>(r), l})) << at;
      EXPECT_EQ(layout.member_of(static_cast<int>(r), l), member) << at;
      EXPECT_EQ(layout.coords(member), coords[member]) << at;
      EXPECT_EQ(layout.member_at(coords[member]), member) << at;
      GridBlock want;
      bool empty = false;
      for (std::size_t a = 0; a < n; ++a) {
        std::size_t off = 0;
        for (std::size_t p = 0; p < coords[member][a]; ++p) off += sizes[a][p];
        want.offset.push_back(off);
        want.extent.push_back(sizes[a][coords[member][a]]);
        empty = empty || want.extent.back() == 0;
      }
      if (empty) want.extent.assign(n, 0);
      const GridBlock got = layout.block(member);
      EXPECT_EQ(got, want) << at;
      Shape block_shape = want.extent, with_halo = want.extent;
      for (std::size_t a = 0; a < n; ++a) {
        EXPECT_EQ(layout.offset(member, a), want.offset[a]) << at;
        EXPECT_EQ(layout.extent(member, a), want.extent[a]) << at;
        if (!empty) with_halo[a] += 2 * layout.halo(a);
      }
      if (layout.components() > 1) {
        block_shape.push_back(layout.components());
        with_halo.push_back(layout.components());
      }
      EXPECT_EQ(layout.block_shape(member), block_shape) << at;
      EXPECT_EQ(layout.block_shape(member, true), with_halo) << at;
      points += got.points();
      // Neighbours: the owner of the point just beyond the block, wrapped on periodic axes.
      for (std::size_t a = 0; a < n; ++a) {
        for (int side : {-1, 1}) {
          long long want_n = -1;
          if (!empty) {
            const bool periodic = layout.lower(a).kind == BoundaryKind::periodic;
            std::optional<std::size_t> x;
            if (side < 0 && want.offset[a] > 0) x = want.offset[a] - 1;
            if (side < 0 && want.offset[a] == 0 && periodic) x = shape[a] - 1;
            if (side > 0 && want.offset[a] + want.extent[a] < shape[a])
              x = want.offset[a] + want.extent[a];
            if (side > 0 && want.offset[a] + want.extent[a] == shape[a] && periodic) x = 0;
            if (x) {
              auto c = coords[member];
              c[a] = position_of(sizes[a], *x);
              want_n = static_cast<long long>(layout.member_at(c));
            }
          }
          EXPECT_EQ(layout.neighbour(member, a, side), want_n)
              << at << " axis " << a << " side " << side;
        }
      }
    }
  }
  // Every point has exactly one owner, and owner() names the member whose block holds it.
  EXPECT_EQ(points, shape_size(shape)) << what;
  if (shape_size(shape) > 0) {
    std::vector<std::size_t> p(n);
    for (std::size_t a = 0; a < n; ++a) p[a] = shape[a] - 1;
    const std::size_t o = layout.owner(p);
    const GridBlock b = layout.block(o);
    for (std::size_t a = 0; a < n; ++a) {
      EXPECT_LE(b.offset[a], p[a]) << what;
      EXPECT_LT(p[a], b.offset[a] + b.extent[a]) << what;
    }
  }
}

std::vector<std::vector<std::size_t>> even_all(const Shape& shape,
                                               const std::vector<std::size_t>& grid) {
  std::vector<std::vector<std::size_t>> s;
  for (std::size_t a = 0; a < shape.size(); ++a) s.push_back(even_sizes(shape[a], grid[a]));
  return s;
}

TEST(GridLayout, GivenGridsEvenSplits) {
  struct Case {
    Shape shape;
    std::vector<std::size_t> per_rank, grid;
  };
  const std::vector<Case> cases = {
      {{7}, {3}, {3}},
      {{10, 9}, {2, 2}, {2, 2}},
      {{10, 9}, {4}, {1, 4}},
      {{10, 9}, {1, 1, 1, 1}, {4, 1}},
      {{5, 6, 7}, {2, 2}, {2, 1, 2}},
      {{5, 6, 7}, {1, 3}, {2, 2, 1}},
      {{2, 3}, {3, 3}, {3, 2}},
      {{1, 1, 1}, {2}, {1, 1, 2}},
      {{0, 4}, {2}, {2, 1}},
  };
  for (const auto& c : cases) {
    const GridLayout layout(c.shape, c.per_rank, {.grid = c.grid});
    check_layout(layout, c.shape, c.per_rank, c.grid, even_all(c.shape, c.grid),
                 fmt::format("shape {} grid {}", to_string(c.shape), fmt::join(c.grid, "x")));
  }
}

TEST(GridLayout, AutomaticGridsOfEqualSidedDomainsAreMpiDimsCreate) {
  for (int ndim = 1; ndim <= 3; ++ndim) {
    for (int members : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 24}) {
      std::vector<int> dims(static_cast<std::size_t>(ndim), 0);
      MPI_Dims_create(members, ndim, dims.data());
      const std::vector<std::size_t> want(dims.begin(), dims.end());
      const Shape shape(static_cast<std::size_t>(ndim), 840);
      const std::string what = fmt::format("{} members, {}-D", members, ndim);
      EXPECT_EQ(GridLayout::choose_grid(static_cast<std::size_t>(members), shape), want) << what;
      const GridLayout layout(shape, {static_cast<std::size_t>(members)});
      EXPECT_EQ(layout.grid(), want) << what;
      check_layout(layout, shape, {static_cast<std::size_t>(members)}, want, even_all(shape, want),
                   what);
    }
  }
}

TEST(GridLayout, AutomaticGridsFollowTheShape) {
  EXPECT_EQ(GridLayout::choose_grid(4, {1000, 10}), (std::vector<std::size_t>{4, 1}));
  EXPECT_EQ(GridLayout::choose_grid(4, {10, 1000}), (std::vector<std::size_t>{1, 4}));
  // Never more members along an axis than points when avoidable.
  EXPECT_EQ(GridLayout::choose_grid(4, {3, 30}), (std::vector<std::size_t>{1, 4}));
  EXPECT_EQ(GridLayout::choose_grid(8, {1, 64, 64}), (std::vector<std::size_t>{1, 4, 2}));
  // Unavoidable: 5 members over 2 x 2 points still get a grid (some without points).
  EXPECT_EQ(GridLayout::choose_grid(5, {2, 2}), (std::vector<std::size_t>{5, 1}));
  // Some counts given, the rest chosen.
  EXPECT_EQ(GridLayout::choose_grid(8, {64, 64, 64}, {2, 0, 0}),
            (std::vector<std::size_t>{2, 2, 2}));
  EXPECT_EQ(GridLayout::choose_grid(6, {64, 64}, {0, 3}), (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(GridLayout::choose_grid(4, {64, 64}, {0, 0}), (std::vector<std::size_t>{2, 2}));
  // Sizes given for an axis fix its count.
  const GridLayout l({12, 12}, {6}, {.sizes = {{}, {4, 8}}});
  EXPECT_EQ(l.grid(), (std::vector<std::size_t>{3, 2}));
}

TEST(GridLayout, MembersOfOneRankAreNeighbours) {
  // 4 ranks x 2 devices over a cube: 2 x 2 x 2, each rank's pair along the last axis.
  const GridLayout l({32, 32, 32}, {2, 2, 2, 2});
  ASSERT_EQ(l.grid(), (std::vector<std::size_t>{2, 2, 2}));
  for (int r = 0; r < 4; ++r) {
    const std::size_t a = l.member_of(r, 0), b = l.member_of(r, 1);
    EXPECT_EQ(l.neighbour(a, 2, 1), static_cast<long long>(b)) << "rank " << r;
    EXPECT_EQ(l.neighbour(b, 2, -1), static_cast<long long>(a)) << "rank " << r;
  }
  // 2 ranks x 2 devices over a square: each rank holds a row of the 2 x 2 grid.
  const GridLayout s({40, 40}, {2, 2});
  EXPECT_EQ(s.location(s.member_at(std::vector<std::size_t>{0, 1})).rank, 0);
  EXPECT_EQ(s.location(s.member_at(std::vector<std::size_t>{1, 0})).rank, 1);
}

TEST(GridLayout, UnevenSizesEmptyMembersAndPeriodicNeighbours) {
  const std::vector<std::vector<std::size_t>> sizes = {{3, 0, 4}, {5, 2}};
  for (auto b :
       {Boundary::open(), Boundary::periodic(), Boundary::reflect(), Boundary::constant(2.5)}) {
    const GridLayout l({7, 7}, {1, 2, 3},
                       {.grid = {3, 2}, .sizes = sizes, .halo = {2}, .lower = {b}, .upper = {b}});
    check_layout(l, {7, 7}, {1, 2, 3}, {3, 2}, sizes,
                 fmt::format("uneven, boundary {}", static_cast<int>(b.kind)));
    // The members at grid row 1 own no points and have no neighbours.
    for (std::size_t c1 = 0; c1 < 2; ++c1) {
      const std::size_t m = l.member_at(std::vector<std::size_t>{1, c1});
      EXPECT_TRUE(l.block(m).empty());
      EXPECT_EQ(l.block_shape(m, true), (Shape{0, 0}));
    }
    EXPECT_EQ(l.owner(std::vector<std::size_t>{3, 5}), l.member_at(std::vector<std::size_t>{2, 1}));
  }
  // Components: a trailing axis of the blocks, never split.
  const GridLayout c({6, 5, 4}, {4}, {.grid = {2, 1, 2}, .components = 3, .halo = {1, 2, 1}});
  check_layout(c, {6, 5, 4}, {4}, {2, 1, 2}, even_all({6, 5, 4}, {2, 1, 2}), "components");
  EXPECT_EQ(c.global_shape(), (Shape{6, 5, 4, 3}));
  EXPECT_EQ(c.size(), 360u);
  EXPECT_EQ(c.block_shape(0, true), (Shape{5, 9, 4, 3}));
  // One member alone on a periodic axis is its own neighbour.
  const GridLayout one({4, 6}, {2},
                       {.grid = {1, 2},
                        .halo = {1},
                        .lower = {Boundary::periodic()},
                        .upper = {Boundary::periodic()}});
  EXPECT_EQ(one.neighbour(0, 0, -1), 0);
  EXPECT_EQ(one.neighbour(0, 0, 1), 0);
  EXPECT_EQ(one.neighbour(0, 1, 1), 1);
  EXPECT_EQ(one.neighbour(1, 1, 1), 0);
}

TEST(GridLayout, EqualLayoutsCompareEqual) {
  const GridOptions o{.grid = {2, 2}, .halo = {1, 2}, .stencil = Stencil::box};
  EXPECT_TRUE(GridLayout({8, 8}, {2, 2}, o) == GridLayout({8, 8}, {2, 2}, o));
  GridOptions p = o;
  p.upper = {Boundary::constant(1)};
  EXPECT_FALSE(GridLayout({8, 8}, {2, 2}, o) == GridLayout({8, 8}, {2, 2}, p));
  EXPECT_FALSE(GridLayout({8, 8}, {2, 2}, o) == GridLayout({8, 8}, {4}, o));
}

TEST(GridLayout, BadInputRaisesLogicErrorsSayingWhatToDo) {
  expect_logic_error(
      [] {
        GridLayout({4, 4}, {3}, {.grid = {2, 2}});
      },
      {"GridLayout", "2 x 2", "multiplies to 4", "3 members", "multiply to the number of members"});
  expect_logic_error(
      [] {
        GridLayout({4, 4}, {6}, {.grid = {4, 0}});
      },
      {"has a multiple of 4", "6 members"});
  expect_logic_error([] { GridLayout({4, 4}, {4}, {.grid = {4}}); }, {"1 axes", "has 2"});
  expect_logic_error([] { GridLayout({2, 3, 4, 5}, {1}); }, {"4 dimensions"});
  expect_logic_error([] { GridLayout(Shape{}, {1}); }, {"0 dimensions"});
  expect_logic_error([] { GridLayout({4}, {}); }, {"members_per_rank is empty"});
  expect_logic_error([] { GridLayout({4}, {1, 0}); }, {"rank 1 has no members"});
  expect_logic_error([] { GridLayout({4}, {1}, {.components = 0}); }, {"components is 0"});
  expect_logic_error(
      [] {
        GridLayout({9, 4}, {3}, {.sizes = {{1, 3, 4}, {}}});
      },
      {"sizes of axis 0", "add up to 8", "has 9", "add up to its length"});
  expect_logic_error(
      [] {
        GridLayout({9, 4}, {3}, {.grid = {3, 1}, .sizes = {{4, 5}, {}}});
      },
      {"axis 0 has 2 sizes", "3 grid positions"});
  expect_logic_error(
      [] {
        GridLayout({9, 4}, {1}, {.sizes = {{9}}});
      },
      {"1 lists", "2 dimensions"});
  expect_logic_error(
      [] {
        GridLayout({9, 4}, {1}, {.halo = {1, 1, 1}});
      },
      {"the halo has 3 entries"});
  // A halo wider than a block it is filled from: a neighbour's, or one's own at a reflecting or
  // periodic wall.
  expect_logic_error(
      [] {
        GridLayout({9, 4}, {3}, {.grid = {3, 1}, .sizes = {{4, 1, 4}, {}}, .halo = {2}});
      },
      {"halo width 2 on axis 0", "grid position 1", "1 point(s)", "narrowest block"});
  expect_logic_error(
      [] {
        GridLayout({9, 4}, {2}, {.grid = {1, 2}, .halo = {0, 3}});
      },
      {"halo width 3 on axis 1", "2 point(s)"});
  expect_logic_error(
      [] {
        GridLayout({9, 1}, {1}, {.halo = {0, 2}, .lower = {Boundary::reflect()}});
      },
      {"halo width 2 on axis 1", "1 point(s)"});
  // Alone and open on both sides, no block is a source: fine. Empty blocks never count.
  EXPECT_NO_THROW(GridLayout({9, 1}, {1}, {.halo = {0, 2}}));
  EXPECT_NO_THROW(GridLayout({9, 4}, {3}, {.grid = {3, 1}, .sizes = {{4, 0, 5}, {}}, .halo = {4}}));
  expect_logic_error([] { GridLayout({4}, {1}, {.lower = {Boundary::periodic()}}); },
                     {"axis 0 is periodic on one side only", "lower periodic, upper open"});
  expect_logic_error(
      [] {
        (void)GridLayout({4, 4}, {4}).neighbour(0, 2, 1);
      },
      {"axis 2 does not exist"});
  expect_logic_error([] { (void)GridLayout({4, 4}, {4}).neighbour(0, 0, 0); }, {"side 0"});
  expect_logic_error([] { (void)GridLayout({4, 4}, {4}).block(4); }, {"member 4 does not exist"});
  expect_logic_error(
      [] {
        (void)GridLayout({4, 4}, {4}).member_at(std::vector<std::size_t>{2, 0});
      },
      {"coordinate 2 on axis 0"});
  expect_logic_error(
      [] {
        (void)GridLayout({4, 4}, {4}).owner(std::vector<std::size_t>{0, 4});
      },
      {"coordinate 4 on axis 1", "outside shape"});
}

// Over a communicator: the members are the communicator's; bad input raises on every rank.
TEST(GridLayout, OverACommunicatorAndBadGridsOnEveryRank) {
  auto s = ::skein::test::runtime_rig();
  const std::size_t M = s.M();
  const auto ranks = communicator_ranks(*s.comm);
  const GridLayout l = GridLayout::over(*s.comm, {6 * M, 5});
  check_layout(l, {6 * M, 5}, ranks.members_per_rank, l.grid(), even_all({6 * M, 5}, l.grid()),
               "over comm");
  EXPECT_EQ(l.grid(), (std::vector<std::size_t>{M, 1}));
  bool raised = false;
  try {
    (void)GridLayout::over(*s.comm, {8, 8}, {.grid = {M + 1, 1}});
  } catch (const LogicError& e) {
    raised = ::skein::test::contains(e.what(), fmt::format("{} members", M));
  }
  EXPECT_TRUE(on_every_rank(raised));
}

}  // namespace grid_layout_test
}  // namespace

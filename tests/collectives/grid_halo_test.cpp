// SPDX-License-Identifier: BSD-3-Clause
// GridArray under mpirun (1..4 ranks) on PoCL devices: every cell of every local block after
// exchange_halos, against a host reference computed cell by cell from the global array (a formula
// of the global index, so each rank knows every value without asking another) and the rules of
// grid_layout.hpp: ghost cells inside the domain take the global value, beyond a side the
// boundary's (periodic wrap-around, reflect's mirror, constant), beyond an open side they keep
// what they held before, a value of their own that no exchange writes. Off the faces with a star
// stencil (edges and corners) the cells are unspecified: those in the ghost planes of axis 0 are
// not compared (faces along axis 0 may move as whole planes, with the neighbour's own ghost cells
// there), the others must keep their values; where those planes' values are deterministic (open
// sides on the other axes) they are compared with the neighbour's (FacesAlongAxis0...). 1-, 2-
// and 3-D shapes, grids 1 x N, N x 1, 2 x 2, 2 x 1 x 2 and chosen ones,
// widths 1 and 2 and different per axis, star and box, every boundary kind and mixed ones,
// several arrays of different dtypes in one call, components, uneven splits, members without
// points; scatter / gather round trips; bad calls raise on every rank. (Redistribution:
// grid_redistribute_test.cpp; the host values both use: grid_values.hpp.)
//
// Two device set-ups, as in dist_array_test.cpp: the Runtime's own placement and exactly two
// devices per rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <skein/grid_array.hpp>
#include <skein/grid_layout.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "dist_support.hpp"
#include "grid_values.hpp"
#include "mpi_support.hpp"

namespace {
namespace grid_halo_test {

using namespace skein;
using ::skein::test::expect_logic_error;
using ::skein::test::on_every_rank;
using ::skein::test::Placement;
using ::skein::test::placement_name;
using ::skein::test::Rig;
using ::skein::test::world_rank;
using ::skein::test::world_size;
using namespace ::skein::test::grid;

class GridArrays : public ::skein::test::PlacementTest {};

INSTANTIATE_TEST_SUITE_P(Layouts, GridArrays,
                         testing::Values(Placement::runtime, Placement::two_per_rank),
                         placement_name);

// ---- the reference ------------------------------------------------------------------------------

// The global point a cell reads (copy), or what else it gets: keep (left as it was) or the
// constant. Computed per axis from the global coordinate, independently of the exchange's plan.
struct Expected {
  enum Kind { keep, constant, copy, unspecified } kind = copy;
  double value = 0;
  std::vector<std::size_t> point;
};

Expected expected_cell(const GridLayout& l, const GridBlock& b,
                       const std::vector<std::size_t>& idx) {
  const std::size_t n = l.ndim();
  Expected e;
  std::size_t outside = 0;
  std::optional<double> constant;
  bool open = false, outside_axis0 = false;
  for (std::size_t a = 0; a < n; ++a) {
    const auto h = static_cast<long long>(l.halo(a));
    const auto N = static_cast<long long>(l.shape()[a]);
    const long long g = static_cast<long long>(b.offset[a]) - h + static_cast<long long>(idx[a]);
    const bool in_block = g >= static_cast<long long>(b.offset[a]) &&
                          g < static_cast<long long>(b.offset[a] + b.extent[a]);
    if (!in_block) ++outside;
    if (!in_block && a == 0) outside_axis0 = true;
    long long mapped = g;
    if (g < 0 || g >= N) {
      const Boundary& side = g < 0 ? l.lower(a) : l.upper(a);
      switch (side.kind) {
        case BoundaryKind::open: open = true; break;
        case BoundaryKind::constant:
          if (!constant) constant = side.value;
          break;
        case BoundaryKind::periodic: mapped = g < 0 ? g + N : g - N; break;
        case BoundaryKind::reflect: mapped = g < 0 ? -g - 1 : 2 * N - 1 - g; break;
      }
    }
    e.point.push_back(static_cast<std::size_t>(std::max(0LL, std::min(mapped, N - 1))));
  }
  // Star: edges and corners are unspecified. Those in the ghost planes of axis 0 may hold the
  // neighbour's ghost values (a face moved as whole planes); the others are never written.
  if (outside > 1 && l.stencil() == Stencil::star) {
    return {outside_axis0 ? Expected::unspecified : Expected::keep, 0, {}};
  }
  if (outside > 0 && open) return {Expected::keep, 0, {}};
  if (outside > 0 && constant) return {Expected::constant, *constant, {}};
  return e;
}

// Compares a block with halo after the exchange to the reference; one failure per block at most.
void check_block(const GridLayout& l, std::size_t member, const std::vector<double>& got,
                 std::size_t salt, const std::string& what) {
  const GridBlock b = l.block(member);
  const std::size_t n = l.ndim(), C = l.components();
  const Shape full = l.block_shape(member, true);
  const Shape spatial(full.begin(), full.begin() + static_cast<long>(n));
  ASSERT_EQ(got.size(), shape_size(full)) << what;
  const auto initial = initial_block(l, member, salt);
  std::size_t k = 0;
  bool reported = false;
  for_each_index(spatial, [&](const std::vector<std::size_t>& idx) {
    const Expected e = expected_cell(l, b, idx);
    for (std::size_t c = 0; c < C; ++c, ++k) {
      if (e.kind == Expected::unspecified) continue;
      double want = initial[k];
      if (e.kind == Expected::constant) want = e.value;
      if (e.kind == Expected::copy) want = global_value(flat(l.shape(), e.point), c, C, salt);
      if (got[k] != want && !reported) {
        reported = true;
        ADD_FAILURE() << what << ": member " << member << ", cell ("
                      << fmt::format("{}", fmt::join(idx, ", ")) << ") component " << c
                      << " of the block with halo " << to_string(full) << ": got " << got[k]
                      << ", want " << want << " (" << l.describe() << ")";
      }
    }
  });
}

// Fills every local block of `arrays` (halos included) with its initial contents, salt base + k
// for array k.
void fill_arrays(std::span<const GridArray> arrays, std::size_t base) {
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    for (const auto& b : arrays[k].blocks()) {
      if (b.with_halo.size() == 0) continue;
      b.with_halo.set(
          to_bytes(initial_block(arrays[k].layout(), b.member, base + k), arrays[k].dtype()));
    }
  }
}

// Checks every cell of every local block of `arrays` after an exchange of what fill_arrays(base)
// put there.
void check_arrays_exchanged(std::span<const GridArray> arrays, std::size_t base,
                            const std::string& what) {
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    for (const auto& b : arrays[k].blocks()) {
      if (b.block.empty()) {
        EXPECT_EQ(b.with_halo.size(), 0u) << what;
        continue;
      }
      std::vector<std::byte> bytes(b.with_halo.nbytes());
      b.with_halo.get(bytes);
      check_block(
          arrays[k].layout(), b.member, from_bytes(bytes, arrays[k].dtype()), base + k,
          fmt::format("{} (array {} of {}, {})", what, k, arrays.size(), name(arrays[k].dtype())));
    }
  }
}

// Makes one array per dtype on `layout`, fills every block (halo included) with its initial
// contents, exchanges them all in one call and checks every cell of every local block.
void check_exchange(const Rig& s, const Shape& shape, const GridOptions& options,
                    const std::string& what, const std::vector<Dtype>& dtypes = {Dtype::float64}) {
  const GridLayout layout = GridLayout::over(*s.comm, shape, options);
  std::vector<GridArray> arrays;
  for (const Dtype dtype : dtypes) arrays.emplace_back(*s.comm, layout, dtype);
  fill_arrays(arrays, 0);
  exchange_halos(arrays);
  check_arrays_exchanged(arrays, 0, what);
}

struct Sides {
  Boundary lower, upper;
  const char* name;
};

std::vector<Sides> every_boundary() {
  return {{Boundary::open(), Boundary::open(), "open"},
          {Boundary::periodic(), Boundary::periodic(), "periodic"},
          {Boundary::reflect(), Boundary::reflect(), "reflect"},
          {Boundary::constant(7), Boundary::constant(-3), "constant 7 / -3"},
          {Boundary::reflect(), Boundary::constant(5), "reflect / constant 5"}};
}

// ---- halo exchanges -----------------------------------------------------------------------------

TEST_P(GridArrays, OneDimensionalEveryBoundary) {
  const std::size_t M = s_.M();
  for (std::size_t w : {1u, 2u}) {
    for (const auto& b : every_boundary()) {
      for (Stencil st : {Stencil::star, Stencil::box}) {
        check_exchange(s_, {w * M + 3},
                       {.halo = {w}, .stencil = st, .lower = {b.lower}, .upper = {b.upper}},
                       fmt::format("1-D, width {}, {}", w, b.name));
      }
    }
  }
}

TEST_P(GridArrays, TwoDimensionalGridsWidthsStencilsAndBoundaries) {
  const std::size_t M = s_.M();
  std::vector<std::vector<std::size_t>> grids = {{1, M}, {M, 1}, {}};
  if (M % 2 == 0) grids.push_back({2, M / 2});
  for (const auto& grid : grids) {
    for (const std::vector<std::size_t>& halo : {std::vector<std::size_t>{1}, {2}, {2, 1}}) {
      for (Stencil st : {Stencil::star, Stencil::box}) {
        for (const auto& b : every_boundary()) {
          check_exchange(
              s_, {2 * M + 5, 2 * M + 4},
              {.grid = grid, .halo = halo, .stencil = st, .lower = {b.lower}, .upper = {b.upper}},
              fmt::format("2-D grid {}, halo {}, {}, {}", fmt::join(grid, "x"),
                          fmt::join(halo, ","), st == Stencil::star ? "star" : "box", b.name));
        }
      }
    }
  }
}

TEST_P(GridArrays, TwoDimensionalBoundariesDifferPerAxisAndSide) {
  const std::size_t M = s_.M();
  for (Stencil st : {Stencil::star, Stencil::box}) {
    check_exchange(s_, {2 * M + 3, 7},
                   {.halo = {2, 1},
                    .stencil = st,
                    .lower = {Boundary::periodic(), Boundary::reflect()},
                    .upper = {Boundary::periodic(), Boundary::constant(9)}},
                   "periodic rows, reflect / constant columns");
    check_exchange(s_, {7, 2 * M + 3},
                   {.grid = {1, M},
                    .halo = {1, 2},
                    .stencil = st,
                    .lower = {Boundary::open(), Boundary::constant(2)},
                    .upper = {Boundary::reflect(), Boundary::reflect()}},
                   "open / reflect rows, constant / reflect columns");
  }
}

TEST_P(GridArrays, ThreeDimensional) {
  const std::size_t M = s_.M();
  std::vector<std::vector<std::size_t>> grids = {{}, {1, 1, M}, {M, 1, 1}};
  if (M % 2 == 0) grids.push_back({2, 1, M / 2});
  for (const auto& grid : grids) {
    for (Stencil st : {Stencil::star, Stencil::box}) {
      for (const auto& b : every_boundary()) {
        check_exchange(s_, {M + 3, 5, M + 4},
                       {.grid = grid,
                        .halo = {1, 2, 1},
                        .stencil = st,
                        .lower = {b.lower},
                        .upper = {b.upper}},
                       fmt::format("3-D grid {}, {}, {}", fmt::join(grid, "x"),
                                   st == Stencil::star ? "star" : "box", b.name));
      }
    }
  }
}

TEST_P(GridArrays, SeveralArraysInOneCallWithComponents) {
  const std::size_t M = s_.M();
  const std::vector<Dtype> dtypes = {Dtype::float64, Dtype::int32, Dtype::float32};
  for (Stencil st : {Stencil::star, Stencil::box}) {
    check_exchange(s_, {2 * M + 2, 6},
                   {.halo = {1},
                    .stencil = st,
                    .lower = {Boundary::periodic()},
                    .upper = {Boundary::periodic()}},
                   "2-D, three arrays", dtypes);
    check_exchange(s_, {M + 2, 4, 5},
                   {.components = 3,
                    .halo = {1, 1, 2},
                    .stencil = st,
                    .lower = {Boundary::periodic(), Boundary::reflect(), Boundary::periodic()},
                    .upper = {Boundary::periodic(), Boundary::constant(4), Boundary::periodic()}},
                   "3-D, 3 components, two arrays", {Dtype::float64, Dtype::int32});
    check_exchange(s_, {3 * M + 1},
                   {.components = 2,
                    .halo = {2},
                    .stencil = st,
                    .lower = {Boundary::constant(1)},
                    .upper = {Boundary::reflect()}},
                   "1-D, 2 components");
  }
}

TEST_P(GridArrays, UnevenSplitsAndMembersWithoutPoints) {
  const std::size_t M = s_.M();
  for (std::size_t w : {1u, 2u}) {
    // Along axis 0: every other member empty (the last never), blocks of w + m points.
    std::vector<std::size_t> gaps;
    std::size_t total = 0;
    for (std::size_t m = 0; m < M; ++m) {
      gaps.push_back(m % 2 == 1 || m + 1 == M ? w + m : 0);
      total += gaps.back();
    }
    for (const auto& b : every_boundary()) {
      for (Stencil st : {Stencil::star, Stencil::box}) {
        check_exchange(s_, {total, 5},
                       {.grid = {M, 1},
                        .sizes = {gaps, {}},
                        .halo = {w, 1},
                        .stencil = st,
                        .lower = {b.lower},
                        .upper = {b.upper}},
                       fmt::format("empty members, width {}, {}", w, b.name));
        // All points on one member (its own neighbour when periodic, its own mirror).
        std::vector<std::size_t> one(M, 0);
        one[M / 2] = w + 2;
        check_exchange(s_, {4, w + 2},
                       {.grid = {1, M},
                        .sizes = {{}, one},
                        .halo = {1, w},
                        .stencil = st,
                        .lower = {b.lower},
                        .upper = {b.upper}},
                       fmt::format("one member with points, width {}, {}", w, b.name));
      }
    }
  }
  // Uneven on two axes and fewer points than members along one.
  if (M % 2 == 0) {
    check_exchange(s_, {M / 2 + 5, 3},
                   {.grid = {M / 2, 2},
                    .sizes = {{}, {1, 2}},
                    .halo = {1},
                    .stencil = Stencil::box,
                    .lower = {Boundary::periodic()},
                    .upper = {Boundary::periodic()}},
                   "uneven on both axes");
  }
  if (M > 1) {
    check_exchange(s_, {M - 1, 4},
                   {.grid = {M, 1},
                    .halo = {1},
                    .stencil = Stencil::box,
                    .lower = {Boundary::reflect()},
                    .upper = {Boundary::constant(3), Boundary::reflect()}},
                   "fewer rows than members");
  }
}

TEST_P(GridArrays, EdgeSizes) {
  const std::size_t M = s_.M();
  for (Stencil st : {Stencil::star, Stencil::box}) {
    for (const auto& b : every_boundary()) {
      const std::string tag = fmt::format("{}, {}", st == Stencil::star ? "star" : "box", b.name);
      // One point in all: one member has it (its own neighbour, its own mirror), the rest none.
      check_exchange(s_, {1, 1, 1},
                     {.halo = {1}, .stencil = st, .lower = {b.lower}, .upper = {b.upper}},
                     "a single point, " + tag);
      // No points at all: nothing to exchange, every block empty.
      check_exchange(s_, {0, 5},
                     {.halo = {1}, .stencil = st, .lower = {b.lower}, .upper = {b.upper}},
                     "no points, " + tag);
      // Blocks exactly as wide as the halo; no halo along one axis (no edges there either).
      check_exchange(s_, {2 * M, 2, 3},
                     {.grid = {M, 1, 1},
                      .halo = {2, 0, 1},
                      .stencil = st,
                      .lower = {b.lower},
                      .upper = {b.upper}},
                     "blocks as wide as the halo, no halo on axis 1, " + tag);
    }
  }
}

// ---- faces along axis 0 moved as whole planes ---------------------------------------------------

// Star exchanges, and box ones without a halo on the other axes, move each face along axis 0
// between members on different devices as whole ghost planes, straight between the blocks; the
// other regions in the same call are packed (faces along other axes between devices), copied on
// the device (same device, periodic wrap onto the member itself, reflect) or filled (constants).
TEST_P(GridArrays, FacesAlongAxis0WithPackedFacesInOneCall) {
  const std::size_t M = s_.M();
  std::vector<std::vector<std::size_t>> grids = {{M, 1, 1}};
  if (M % 2 == 0) grids.push_back({2, M / 2, 1});  // axis 0 as planes, axis 1 packed
  if (M % 2 == 0) grids.push_back({2, 1, M / 2});  // axis 0 as planes, axis 2 packed
  const std::vector<Dtype> dtypes = {Dtype::float64, Dtype::int32, Dtype::float32};
  for (const auto& grid : grids) {
    for (const std::vector<std::size_t>& halo : {std::vector<std::size_t>{1, 2, 1}, {2, 1, 1}}) {
      for (const auto& b : every_boundary()) {
        check_exchange(s_, {2 * M + 4, M + 4, M + 3},
                       {.grid = grid,
                        .components = 2,
                        .halo = halo,
                        .stencil = Stencil::star,
                        .lower = {b.lower},
                        .upper = {b.upper}},
                       fmt::format("star, grid {}, halo {}, {}", fmt::join(grid, "x"),
                                   fmt::join(halo, ","), b.name),
                       dtypes);
      }
      // Periodic along axis 0, the other axes' own kinds: planes, mirrors and constants at once.
      check_exchange(
          s_, {2 * M + 4, M + 4, M + 3},
          {.grid = grid,
           .halo = halo,
           .stencil = Stencil::star,
           .lower = {Boundary::periodic(), Boundary::reflect(), Boundary::periodic()},
           .upper = {Boundary::periodic(), Boundary::constant(-4), Boundary::periodic()}},
          fmt::format("star, grid {}, halo {}, mixed sides", fmt::join(grid, "x"),
                      fmt::join(halo, ",")),
          dtypes);
    }
  }
  // Box with no halo off axis 0 (whole planes, no edges); box with one (packed, edges filled).
  for (const auto& b : every_boundary()) {
    check_exchange(s_, {3 * M, 4, 3},
                   {.grid = {M, 1, 1},
                    .components = 3,
                    .halo = {2, 0, 0},
                    .stencil = Stencil::box,
                    .lower = {b.lower},
                    .upper = {b.upper}},
                   fmt::format("box, halo 2 0 0, {}", b.name), dtypes);
    check_exchange(s_, {3 * M, 4},
                   {.grid = {M, 1},
                    .halo = {1, 1},
                    .stencil = Stencil::box,
                    .lower = {b.lower},
                    .upper = {b.upper}},
                   fmt::format("box, halo 1 1, {}", b.name), dtypes);
  }
  // Uneven blocks along axis 0 with members that own no points between neighbours.
  std::vector<std::size_t> sizes;
  std::size_t total = 0;
  for (std::size_t m = 0; m < M; ++m) {
    sizes.push_back(m % 2 == 1 || m + 1 == M ? 2 + m : 0);
    total += sizes.back();
  }
  check_exchange(s_, {total, 3, 4},
                 {.grid = {M, 1, 1},
                  .sizes = {sizes, {}, {}},
                  .halo = {2, 1, 1},
                  .stencil = Stencil::star,
                  .lower = {Boundary::periodic()},
                  .upper = {Boundary::periodic()}},
                 "star, uneven with empty members, periodic", dtypes);
}

// Where a face along axis 0 moves as whole planes and the neighbour's ghost cells in them are left
// alone by the exchange (open sides on the other axes, one member along them), the edge and corner
// cells of those ghost planes must hold exactly the neighbour's ghost values at the same place:
// the planes taken must be the neighbour's h planes next to the face, whole, and no others.
// Elsewhere (no neighbour, or one on the same device: a face-only copy) they keep their values.
void check_axis0_plane_edges(std::span<const GridArray> arrays, std::size_t base,
                             const std::string& what) {
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    const GridLayout& l = arrays[k].layout();
    const std::size_t n = l.ndim(), C = l.components(), h0 = l.halo(0);
    auto device_of = [&](std::size_t member) -> std::optional<std::size_t> {
      for (const auto& b : arrays[k].blocks()) {
        if (b.member == member) return b.device_idx;
      }
      return std::nullopt;  // on another rank
    };
    for (const auto& b : arrays[k].blocks()) {
      if (b.block.empty()) continue;
      std::vector<std::byte> bytes(b.with_halo.nbytes());
      b.with_halo.get(bytes);
      const auto got = from_bytes(bytes, arrays[k].dtype());
      const auto mine = initial_block(l, b.member, base + k);
      const Shape full = l.block_shape(b.member, true);
      const Shape spatial(full.begin(), full.begin() + static_cast<long>(n));
      std::size_t at = 0, checked = 0;
      bool reported = false;
      for_each_index(spatial, [&](const std::vector<std::size_t>& idx) {
        bool edge = false;
        for (std::size_t a = 1; a < n; ++a) {
          edge = edge || idx[a] < l.halo(a) || idx[a] >= l.halo(a) + b.block.extent[a];
        }
        const bool below = idx[0] < h0, above = idx[0] >= h0 + b.block.extent[0];
        if (!edge || (!below && !above)) {
          at += C;
          return;
        }
        const long long src = l.neighbour(b.member, 0, below ? -1 : 1);
        const bool planes = src >= 0 && static_cast<std::size_t>(src) != b.member &&
                            device_of(static_cast<std::size_t>(src)) != b.device_idx;
        std::vector<double> from;
        std::size_t src_at = at;
        if (planes) {
          const GridBlock sb = l.block(static_cast<std::size_t>(src));
          const auto N = static_cast<long long>(l.shape()[0]);
          long long g =
              static_cast<long long>(b.block.offset[0] + idx[0]) - static_cast<long long>(h0);
          g = g < 0 ? g + N : g >= N ? g - N : g;
          std::vector<std::size_t> sidx = idx;
          sidx[0] = static_cast<std::size_t>(g) - sb.offset[0] + h0;
          src_at = flat(spatial, sidx) * C;  // the same shape off axis 0
          from = initial_block(l, static_cast<std::size_t>(src), base + k);
        }
        for (std::size_t c = 0; c < C; ++c, ++at) {
          const double want = planes ? from[src_at + c] : mine[at];
          ++checked;
          if (got[at] != want && !reported) {
            reported = true;
            ADD_FAILURE() << what << " (array " << k << "): member " << b.member << ", cell ("
                          << fmt::format("{}", fmt::join(idx, ", ")) << ") component " << c
                          << ": got " << got[at] << ", want " << want
                          << (planes ? fmt::format(" (member {}'s ghost value)", src) : " (kept)")
                          << " (" << l.describe() << ")";
          }
        }
      });
      EXPECT_GT(checked, 0u) << what;
    }
  }
}

TEST_P(GridArrays, FacesAlongAxis0MoveTheNeighboursWholePlanes) {
  const std::size_t M = s_.M();
  const std::vector<Dtype> dtypes = {Dtype::float64, Dtype::float32, Dtype::int32};
  for (std::size_t h : {1u, 2u}) {
    for (const Boundary& side : {Boundary::open(), Boundary::periodic()}) {
      const GridLayout layout =
          GridLayout::over(*s_.comm, {(h + 1) * M + 1, 4, 3},
                           {.grid = {M, 1, 1},
                            .components = 2,
                            .halo = {h, 1, 2},
                            .stencil = Stencil::star,
                            .lower = {side, Boundary::open(), Boundary::open()},
                            .upper = {side, Boundary::open(), Boundary::open()}});
      std::vector<GridArray> arrays;
      for (const Dtype dtype : dtypes) arrays.emplace_back(*s_.comm, layout, dtype);
      for (std::size_t round = 0; round < 2; ++round) {
        const std::size_t salt = 10 * h + 100 * round + (side == Boundary::periodic() ? 5 : 0);
        const std::string what =
            fmt::format("halo {}, axis 0 {}, round {}", h,
                        side == Boundary::periodic() ? "periodic" : "open", round);
        fill_arrays(arrays, salt);
        exchange_halos(arrays);
        check_arrays_exchanged(arrays, salt, what);
        check_axis0_plane_edges(arrays, salt, what);
      }
    }
  }
}

// The size below which exchange_halos moves a message between two devices of one rank by NCCL
// send/recv in its group rather than by a device copy, under the NCCL backend
// (kSendRecvInsideRankBelow in collectives/dist/src/dist_transport.hpp). The MPI backend copies
// them all.
constexpr std::size_t kSendRecvInsideRankBelow = 256 * 1024;

// Messages on both sides of that size, between members of one rank (one rank driving several
// devices) as between ranks, in one call and replayed: every cell against the host reference. On
// CUDA with one rank and two GPUs or more (NCCL) the small ones are sends and recvs and the large
// ones peer copies; on PoCL (MPI) all are device copies.
TEST_P(GridArrays, MessagesAboveAndBelowTheSendRecvSizeInsideARank) {
  const std::size_t M = s_.M();
  constexpr std::size_t W = 33000;  // cells of a row or column along the face
  // Whole planes of W + 2 cells (halo 1 on axis 1), one transfer per array: float64 above the size,
  // float32 below it, both in one call between the same members.
  static_assert((W + 2) * 8 >= kSendRecvInsideRankBelow && (W + 2) * 4 < kSendRecvInsideRankBelow);
  const std::vector<Dtype> dtypes = {Dtype::float64, Dtype::float32};
  auto rounds = [&](const GridLayout& layout, const std::vector<Dtype>& kinds,
                    const std::string& what) {
    std::vector<GridArray> arrays;
    for (const Dtype dtype : kinds) arrays.emplace_back(*s_.comm, layout, dtype);
    for (std::size_t round = 0; round < 2; ++round) {
      fill_arrays(arrays, 7 * round);
      exchange_halos(arrays);
      check_arrays_exchanged(arrays, 7 * round, fmt::format("{}, round {}", what, round));
    }
  };
  for (const Boundary& side : {Boundary::open(), Boundary::periodic()}) {
    const char* name = side == Boundary::periodic() ? "periodic" : "open";
    rounds(GridLayout::over(*s_.comm, {2 * M + 1, W},
                            {.grid = {M, 1},
                             .halo = {1, 1},
                             .stencil = Stencil::star,
                             .lower = {side, Boundary::reflect()},
                             .upper = {side, Boundary::constant(3)}}),
           dtypes, fmt::format("whole planes of {} cells, axis 0 {}", W + 2, name));
  }
  // Packed messages (faces along axis 1, a box stencil: corners too), one per pair of members
  // holding every array's regions: a column of W rows of float64 and float32 (above the size), of
  // W rows of float32 alone (below), and of W / 16 rows of both (below).
  static_assert(W * 12 >= kSendRecvInsideRankBelow && (W + 2) * 4 + 64 < kSendRecvInsideRankBelow);
  struct Packed {
    std::size_t rows;
    std::vector<Dtype> kinds;
    const char* name;
  };
  for (const Packed& p : {Packed{W, dtypes, "float64 and float32, above"},
                          Packed{W, {Dtype::float32}, "float32, below"},
                          Packed{W / 16, dtypes, "float64 and float32, small"}}) {
    rounds(GridLayout::over(*s_.comm, {p.rows, 2 * M + 1},
                            {.grid = {1, M},
                             .halo = {1, 1},
                             .stencil = Stencil::box,
                             .lower = {Boundary::periodic(), Boundary::periodic()},
                             .upper = {Boundary::periodic(), Boundary::periodic()}}),
           p.kinds, fmt::format("packed columns of {} rows, {}", p.rows, p.name));
  }
}

TEST_P(GridArrays, ExchangeOnAnotherQueueAndSingleArrayForm) {
  const std::size_t M = s_.M();
  const GridLayout layout = GridLayout::over(*s_.comm, {2 * M + 1, 3},
                                             {.halo = {1},
                                              .stencil = Stencil::box,
                                              .lower = {Boundary::periodic()},
                                              .upper = {Boundary::periodic()}});
  GridArray a(*s_.comm, layout, Dtype::float64);
  for (const auto& b : a.blocks()) {
    if (b.with_halo.size() > 0)
      b.with_halo.set(to_bytes(initial_block(layout, b.member, 0), Dtype::float64));
  }
  const Queue halo_queue(a.queue().context(), a.queue().device_idxs());
  a.queue().synchronize();
  a.exchange_halos(halo_queue);
  halo_queue.synchronize();
  for (const auto& b : a.blocks()) {
    if (b.block.empty()) continue;
    std::vector<std::byte> bytes(b.with_halo.nbytes());
    b.with_halo.get(bytes);
    check_block(layout, b.member, from_bytes(bytes, Dtype::float64), 0, "on a halo queue");
  }
  // No halo: nothing to do.
  GridArray none(*s_.comm, GridLayout::over(*s_.comm, {5, 5}), Dtype::float32);
  none.exchange_halos();
  exchange_halos(std::span<const GridArray>());
}

// ---- repeated exchanges: what the first call keeps must serve later ones ------------------------

// A 3-D box-stencil layout with every kind of side: periodic, reflecting, constant.
GridLayout mixed_3d_layout(const Rig& s, std::size_t components = 1) {
  const std::size_t M = s.M();
  return GridLayout::over(
      *s.comm, {M + 3, 4, M + 2},
      {.components = components,
       .halo = {1, 2, 1},
       .stencil = Stencil::box,
       .lower = {Boundary::periodic(), Boundary::reflect(), Boundary::constant(6)},
       .upper = {Boundary::periodic(), Boundary::constant(-2), Boundary::reflect()}});
}

// The layouts repeated exchanges are checked on: mixed_3d_layout (every region packed or copied on
// a device), and star ones whose faces along axis 0 move as whole planes straight between the
// call's blocks: with every member along axis 0, and (four members or more, an even number) 2 x 1 x
// M/2, whose faces along axis 2 are packed.
std::vector<GridLayout> replay_layouts(const Rig& s, std::size_t components = 1) {
  const std::size_t M = s.M();
  std::vector<GridLayout> out = {mixed_3d_layout(s, components)};
  std::vector<std::vector<std::size_t>> grids = {{M, 1, 1}};
  if (M >= 4 && M % 2 == 0) grids.push_back({2, 1, M / 2});
  for (const auto& grid : grids) {
    out.push_back(GridLayout::over(
        *s.comm, {2 * M + 1, 4, M + 2},
        {.grid = grid,
         .components = components,
         .halo = {1, 2, 1},
         .stencil = Stencil::star,
         .lower = {Boundary::periodic(), Boundary::reflect(), Boundary::periodic()},
         .upper = {Boundary::periodic(), Boundary::constant(-2), Boundary::periodic()}}));
  }
  return out;
}

TEST_P(GridArrays, RepeatedExchangesSeeNewData) {
  for (const GridLayout& layout : replay_layouts(s_, 2)) {
    const std::vector<GridArray> arrays = {GridArray(*s_.comm, layout, Dtype::float64),
                                           GridArray(*s_.comm, layout, Dtype::int32)};
    // New points and new ghost sentinels before every call: a stale staging buffer, table or block
    // gives the previous round's values.
    for (std::size_t round = 0; round < 4; ++round) {
      fill_arrays(arrays, 10 * round);
      exchange_halos(arrays);
      check_arrays_exchanged(arrays, 10 * round, fmt::format("round {}", round));
    }
    // The same arrays again, one at a time (another set of dtypes for the first array's cache).
    for (std::size_t round = 0; round < 2; ++round) {
      fill_arrays(arrays, 50 + 10 * round);
      arrays[1].exchange_halos();
      arrays[0].exchange_halos();
      check_arrays_exchanged(arrays, 50 + 10 * round,
                             fmt::format("one at a time, round {}", round));
    }
  }
}

TEST_P(GridArrays, TwoLayoutsAndDtypeSetsAlternate) {
  const std::size_t M = s_.M();
  const GridLayout a = mixed_3d_layout(s_);
  const GridLayout b = GridLayout::over(*s_.comm, {2 * M + 3, 5},
                                        {.halo = {2, 1},
                                         .stencil = Stencil::star,
                                         .lower = {Boundary::reflect(), Boundary::periodic()},
                                         .upper = {Boundary::constant(3), Boundary::periodic()}});
  const std::vector<GridArray> on_a = {GridArray(*s_.comm, a, Dtype::float64),
                                       GridArray(*s_.comm, a, Dtype::float32)};
  const std::vector<GridArray> on_b = {GridArray(*s_.comm, b, Dtype::int32),
                                       GridArray(*s_.comm, b, Dtype::float64),
                                       GridArray(*s_.comm, b, Dtype::float64)};
  for (std::size_t round = 0; round < 3; ++round) {
    const std::size_t salt = 100 * round;
    fill_arrays(on_a, salt);
    fill_arrays(on_b, salt + 7);
    exchange_halos(on_a);
    exchange_halos(on_b);
    check_arrays_exchanged(on_a, salt, fmt::format("layout a, round {}", round));
    check_arrays_exchanged(on_b, salt + 7, fmt::format("layout b, round {}", round));
    // The arrays of b in another order and number: other dtype sets, the same first array.
    const std::vector<GridArray> some = {on_b[0], on_b[2]};
    fill_arrays(some, salt + 40);
    exchange_halos(some);
    check_arrays_exchanged(some, salt + 40,
                           fmt::format("layout b, arrays 0 and 2, round {}", round));
  }
}

TEST_P(GridArrays, ArraysDestroyedAndRecreated) {
  for (const GridLayout& layout : replay_layouts(s_)) {
    const GridArray kept(*s_.comm, layout, Dtype::float64);
    for (std::size_t round = 0; round < 3; ++round) {
      // A new second array every round behind the same first one (whose cache holds the routine):
      // its new blocks must be the ones written.
      const std::vector<GridArray> arrays = {kept, GridArray(*s_.comm, layout, Dtype::float64)};
      fill_arrays(arrays, 20 * round);
      exchange_halos(arrays);
      check_arrays_exchanged(arrays, 20 * round,
                             fmt::format("a new second array, round {}", round));
      // And arrays made, exchanged and dropped, with their caches.
      const std::vector<GridArray> fresh = {GridArray(*s_.comm, layout, Dtype::int32),
                                            GridArray(*s_.comm, layout, Dtype::float32)};
      fill_arrays(fresh, 20 * round + 5);
      exchange_halos(fresh);
      check_arrays_exchanged(fresh, 20 * round + 5, fmt::format("new arrays, round {}", round));
    }
  }
}

TEST_P(GridArrays, MoreFieldsThanOneLaunchTakes) {
  // Eleven arrays of three dtypes: the batched copies take eight arrays a launch, so the packs and
  // unpacks of a message span several launches.
  for (const GridLayout& layout : replay_layouts(s_)) {
    const Dtype kinds[] = {Dtype::float64, Dtype::float32, Dtype::int32};
    std::vector<GridArray> arrays;
    for (std::size_t k = 0; k < 11; ++k) arrays.emplace_back(*s_.comm, layout, kinds[k % 3]);
    for (std::size_t round = 0; round < 2; ++round) {
      fill_arrays(arrays, 30 * round);
      exchange_halos(arrays);
      check_arrays_exchanged(arrays, 30 * round, fmt::format("eleven arrays, round {}", round));
    }
  }
}

TEST_P(GridArrays, OverlappedOnASecondQueueRepeatedly) {
  for (const GridLayout& layout : replay_layouts(s_)) {
    const std::vector<GridArray> arrays = {GridArray(*s_.comm, layout, Dtype::float64),
                                           GridArray(*s_.comm, layout, Dtype::float32)};
    const Queue& main = arrays[0].queue();
    const Queue halo(main.context(), main.device_idxs());
    // Other work on the arrays' queue while the halos move on the second one: the points of a third
    // array, on the first queue, are written by a kernel during each exchange.
    const GridArray other(*s_.comm, layout, Dtype::float64);
    for (std::size_t round = 0; round < 3; ++round) {
      fill_arrays(arrays, 60 + round);
      main.synchronize();
      exchange_halos(halo, arrays);
      dist::fill(other, static_cast<double>(round));
      halo.synchronize();
      check_arrays_exchanged(arrays, 60 + round, fmt::format("on the halo queue, round {}", round));
      // Then on the arrays' own queue: a second routine beside the first.
      fill_arrays(arrays, 70 + round);
      exchange_halos(arrays);
      check_arrays_exchanged(arrays, 70 + round,
                             fmt::format("on the arrays' queue, round {}", round));
    }
    main.synchronize();
  }
}

// ---- scatter and gather -------------------------------------------------------------------------

TEST_P(GridArrays, ScatterGatherRoundTrips) {
  const std::size_t M = s_.M();
  const int R = s_.R();
  struct Case {
    Shape shape;
    GridOptions options;
  };
  std::vector<Case> cases = {
      {{3 * M + 1}, {}},
      {{2 * M + 3, M + 2}, {.halo = {1, 2}}},
      {{M + 1, 3, M + 2}, {.halo = {1}}},
      {{5, 7}, {.grid = {1, M}, .components = 2, .halo = {2, 1}}},
      {{M + 2, 4, 3}, {.grid = {M, 1, 1}, .components = 3}},
      {{0, 4}, {}},
      {{1, 1}, {.halo = {0}}},
  };
  std::vector<std::size_t> gaps;
  std::size_t total = 0;
  for (std::size_t m = 0; m < M; ++m) {
    gaps.push_back(m % 2 == 1 || m + 1 == M ? 2 + m : 0);
    total += gaps.back();
  }
  cases.push_back({{total, 3}, {.grid = {M, 1}, .sizes = {gaps, {}}, .halo = {1}}});
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const GridLayout layout = GridLayout::over(*s_.comm, cases[i].shape, cases[i].options);
    for (int root : {0, R - 1}) {
      const std::string what = fmt::format("case {} ({}), root {}", i, layout.describe(), root);
      GridArray a(*s_.comm, layout, Dtype::float64);
      std::vector<double> global(layout.size());
      for (std::size_t p = 0; p < layout.points(); ++p) {
        for (std::size_t c = 0; c < layout.components(); ++c) {
          global[p * layout.components() + c] = global_value(p, c, layout.components(), i);
        }
      }
      a.scatter(world_rank() == root ? global : std::vector<double>{}, root);
      // Every local block holds its points, and its halo is untouched (zeros).
      for (const auto& b : a.blocks()) {
        if (b.block.empty()) continue;
        std::vector<std::byte> bytes(b.with_halo.nbytes());
        b.with_halo.get(bytes);
        const auto got = from_bytes(bytes, Dtype::float64);
        auto want = initial_block(layout, b.member, i);
        for (double& v : want) v = v < 0 ? 0 : v;
        EXPECT_EQ(got, want) << what << ": member " << b.member;
      }
      const auto back = a.gather<double>(root);
      if (world_rank() == root) {
        EXPECT_EQ(back, global) << what;
      } else {
        EXPECT_TRUE(back.empty()) << what;
      }
    }
  }
}

// ---- bad calls ----------------------------------------------------------------------------------

TEST_P(GridArrays, BadCallsRaiseOnEveryRank) {
  const std::size_t M = s_.M();
  const int R = s_.R();
  const int rank = world_rank();
  const GridLayout layout = GridLayout::over(*s_.comm, {2 * M, 4}, {.halo = {1}});
  GridArray a(*s_.comm, layout, Dtype::float32);
  // Arrays of different layouts in one exchange.
  GridArray other(*s_.comm,
                  GridLayout::over(*s_.comm, {2 * M, 4}, {.halo = {1}, .stencil = Stencil::box}),
                  Dtype::float32);
  expect_logic_error(
      [&] {
        exchange_halos(std::vector<GridArray>{a, other});
      },
      {"exchange_halos", "array 1 has layout", "one layout"});
  // A queue without every device of the arrays (on ranks with more than one).
  if (s_.L() > 1) {
    const Queue one(a.queue().context(), {a.blocks()[0].device_idx});
    expect_logic_error([&] { a.exchange_halos(one); },
                       {"exchange_halos", "the queue has no device"});
  }
  // A host array of the wrong size at the root; host data of another dtype; a root that is not.
  std::vector<float> short_data(a.size() - 1);
  expect_logic_error([&] { a.scatter(rank == 0 ? short_data : std::vector<float>{}, 0); },
                     {"GridArray::scatter", rank == 0 ? "rank 0 (the root)" : "root rank 0"});
  expect_logic_error([&] { a.scatter(std::vector<double>(a.size()), 0); }, {"float64", "float32"});
  expect_logic_error([&] { (void)a.gather_bytes(R); },
                     {"GridArray::gather", fmt::format("root rank {}", R)});
  // A layout of other members; ranks that pass different layouts.
  expect_logic_error(
      [&] { GridArray(*s_.comm, GridLayout({8}, {M + 1}), Dtype::float32); },
      {"GridArray", fmt::format("{} members", M + 1), fmt::format("communicator has {}", M)});
  if (R > 1) {
    expect_logic_error(
        [&] {
          GridArray(*s_.comm,
                    GridLayout::over(*s_.comm, {2 * M, 4}, {.halo = {rank == 0 ? 1u : 2u}}),
                    Dtype::float32);
        },
        {"GridArray", "different arguments", "rank 0 / rank"});
  }
  // A halo wider than a neighbour's block, over the communicator: every rank raises.
  bool raised = false;
  try {
    (void)GridLayout::over(*s_.comm, {M, 4},
                           {.grid = {M, 1}, .halo = {2}, .lower = {Boundary::reflect()}});
  } catch (const LogicError& e) {
    raised = ::skein::test::contains(e.what(), "halo width 2 on axis 0");
  }
  EXPECT_TRUE(on_every_rank(raised));
  // The array still works afterwards (no rank left waiting).
  check_exchange(s_, {2 * M, 3},
                 {.halo = {1}, .lower = {Boundary::periodic()}, .upper = {Boundary::periodic()}},
                 "after the errors");
}

}  // namespace grid_halo_test
}  // namespace

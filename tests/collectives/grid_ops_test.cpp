// SPDX-License-Identifier: BSD-3-Clause
// The dist:: operations on GridArrays under mpirun (1..4 ranks) on PoCL devices: elementwise
// built-ins and user kernels, reductions to the host and to the devices, in fast and
// deterministic mode, and GridArrays over the application's own buffers. Every result is checked
// against a host reference computed from the global array (each rank builds it whole from a
// formula), cell by cell over every local block with its halo: points against the reference, ghost
// cells against the sentinels written there before (no operation may touch a halo). 1-, 2- and
// 3-D layouts, chosen and given grids, uneven splits, members without points, components,
// float32 / float64 / int32 (values are small integers, so every sum is exact in each dtype and
// the device's result must equal the host's). Bad calls raise LogicError on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <skein/dist_ops.hpp>
#include <skein/grid_array.hpp>
#include <skein/grid_layout.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "dist_support.hpp"
#include "mpi_support.hpp"

namespace {
namespace grid_ops_test {

using namespace skein;
using ::skein::test::expect_logic_error;
using ::skein::test::on_every_rank;
using ::skein::test::Placement;
using ::skein::test::placement_name;
using ::skein::test::Rig;
using ::skein::test::world_rank;

class GridOps : public ::skein::test::PlacementTest {};

INSTANTIATE_TEST_SUITE_P(Layouts, GridOps,
                         testing::Values(Placement::runtime, Placement::two_per_rank),
                         placement_name);

struct Case {
  std::string name;
  Shape shape;
  GridOptions options;
};

// 1-, 2- and 3-D, chosen and given grids, halos of different widths per axis, components, uneven
// splits and a member without points.
std::vector<Case> cases(std::size_t members) {
  std::vector<Case> out;
  out.push_back({"1-D chosen, halo 1", {37}, {.halo = {1}}});
  out.push_back({"2-D chosen, halo 2x1 box", {13, 10}, {.halo = {2, 1}, .stencil = Stencil::box}});
  out.push_back({"3-D chosen, 2 components", {6, 5, 7}, {.components = 2, .halo = {1}}});
  // Slabs with an empty first member (9 rows over the others).
  std::vector<std::size_t> rows(members, 0);
  for (std::size_t r = 0; r < 9; ++r) rows[members == 1 ? 0 : 1 + r % (members - 1)] += 1;
  out.push_back({"2-D slabs, empty member",
                 {9, 8},
                 {.grid = {members, 1}, .sizes = {rows, {}}, .halo = {1, 2}}});
  out.push_back({"3-D uneven 1xMx1, 3 components, halo 0x1x2",
                 {5, 7, 4},
                 {.grid = {1, members, 1}, .components = 3, .halo = {0, 1, 2}}});
  return out;
}

// The global array's element g (C order over points, then components): a small integer.
double value(std::size_t g, std::size_t salt) {
  return static_cast<double>((g * 7 + salt * 3) % 17) - 8.0;
}

template <class T>
std::vector<T> global_data(std::size_t n, std::size_t salt) {
  std::vector<T> v(n);
  for (std::size_t g = 0; g < n; ++g) v[g] = static_cast<T>(value(g, salt));
  return v;
}

// What a ghost cell holds: far from every value an operation here computes.
template <class T>
T sentinel(std::size_t member, std::size_t cell) {
  return static_cast<T>(-100.0 - static_cast<double>((member * 31 + cell) % 50));
}

template <class T>
std::vector<T> sentinels(std::size_t member, std::size_t n) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = sentinel<T>(member, i);
  return v;
}

// A grid array holding `global`, its ghost cells holding sentinels.
template <class T>
GridArray make(Rig& s, const GridLayout& layout, const std::vector<T>& global) {
  GridArray a(*s.comm, layout, dtype_of<T>);
  for (const auto& b : a.blocks()) b.with_halo.set(sentinels<T>(b.member, b.with_halo.size()));
  a.scatter(world_rank() == 0 ? global : std::vector<T>{}, 0);
  return a;
}

// Cells of member `member`'s block with halo (host copy `cells`, C order) that differ from the
// reference: points against `want` (the global array), ghost cells against the sentinels.
template <class T>
std::size_t wrong_cells(const GridLayout& l, std::size_t member, const std::vector<T>& cells,
                        const std::vector<T>& want) {
  const GridBlock b = l.block(member);
  if (b.empty()) return cells.size();  // an empty block holds no cells
  const std::size_t n = l.ndim(), comps = l.components();
  std::vector<std::size_t> dims(n);
  for (std::size_t a = 0; a < n; ++a) dims[a] = b.extent[a] + 2 * l.halo(a);
  std::size_t wrong = 0;
  for (std::size_t cell = 0; cell < cells.size() / comps; ++cell) {
    std::size_t rest = cell, g = 0;
    bool point = true;
    std::vector<std::size_t> idx(n);
    for (std::size_t a = n; a-- > 0;) {
      idx[a] = rest % dims[a];
      rest /= dims[a];
    }
    for (std::size_t a = 0; a < n; ++a) {
      const std::size_t h = l.halo(a);
      point = point && idx[a] >= h && idx[a] < h + b.extent[a];
      g = g * l.shape()[a] + (b.offset[a] + idx[a] - h);
    }
    for (std::size_t c = 0; c < comps; ++c) {
      const std::size_t k = cell * comps + c;
      const T expected = point ? want[g * comps + c] : sentinel<T>(member, k);
      if (!(cells[k] == expected)) ++wrong;
    }
  }
  return wrong;
}

// Every cell of every local block as the reference says, on every rank.
template <class T>
void expect_cells(const GridArray& a, const std::vector<T>& want, const std::string& what) {
  std::size_t wrong = 0;
  for (const auto& b : a.blocks()) {
    std::vector<T> cells(b.with_halo.size());
    b.with_halo.get(std::as_writable_bytes(std::span<T>(cells)));
    wrong += wrong_cells(a.layout(), b.member, cells, want);
  }
  EXPECT_TRUE(on_every_rank(wrong == 0))
      << what << ": " << wrong << " wrong cell(s) on rank " << world_rank();
}

// The same double on every rank.
bool same_everywhere(double v) {
  double lo = 0, hi = 0;
  MPI_Allreduce(&v, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&v, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return std::memcmp(&lo, &v, sizeof v) == 0 && std::memcmp(&hi, &v, sizeof v) == 0;
}

template <class T>
void check_elementwise(Rig& s, const Case& c, const std::string& what) {
  const GridLayout layout = GridLayout::over(*s.comm, c.shape, c.options);
  const std::size_t n = layout.size();
  const auto x = global_data<T>(n, 1), y = global_data<T>(n, 2), z = global_data<T>(n, 3);
  GridArray gx = make(s, layout, x), gy = make(s, layout, y), out = make(s, layout, z);
  std::vector<T> want(n);

  dist::axpy(T(2), gx, gy, out);
  for (std::size_t i = 0; i < n; ++i) want[i] = static_cast<T>(2 * x[i] + y[i]);
  expect_cells(out, want, what + ": axpy");
  expect_cells(gx, x, what + ": x after axpy");
  expect_cells(gy, y, what + ": y after axpy");

  dist::scale(T(3), gx, out);
  for (std::size_t i = 0; i < n; ++i) want[i] = static_cast<T>(3 * x[i]);
  expect_cells(out, want, what + ": scale");

  dist::copy(gy, out);
  expect_cells(out, y, what + ": copy");

  dist::fill(out, T(5));
  expect_cells(out, std::vector<T>(n, T(5)), what + ": fill");

  const ElementwiseKernel k("T a, T x, T y", "T z", "z = a * x - y", {.name = "grid_ops_axmy"});
  dist::elementwise(k, {T(2), gx, gy, out});
  for (std::size_t i = 0; i < n; ++i) want[i] = static_cast<T>(2 * x[i] - y[i]);
  expect_cells(out, want, what + ": user kernel");

  // In place, and into an array of the same points without halos.
  dist::axpy(T(-1), gx, gy, gy);
  for (std::size_t i = 0; i < n; ++i) want[i] = static_cast<T>(y[i] - x[i]);
  expect_cells(gy, want, what + ": axpy in place");
  GridOptions bare = c.options;
  bare.halo.clear();
  bare.stencil = Stencil::star;
  const GridArray plain = make(s, GridLayout::over(*s.comm, c.shape, bare), z);
  dist::scale(T(-2), gx, plain);
  for (std::size_t i = 0; i < n; ++i) want[i] = static_cast<T>(-2 * x[i]);
  expect_cells(plain, want, what + ": scale into an array without halos");
}

template <class T>
void check_reductions(Rig& s, const Case& c, const std::string& what) {
  const GridLayout layout = GridLayout::over(*s.comm, c.shape, c.options);
  const std::size_t n = layout.size();
  const auto x = global_data<T>(n, 1), y = global_data<T>(n, 4);
  const GridArray gx = make(s, layout, x), gy = make(s, layout, y);
  double sum = 0, dot = 0, lo = x[0], hi = x[0];
  for (std::size_t i = 0; i < n; ++i) {
    sum += static_cast<double>(x[i]);
    dot += static_cast<double>(x[i]) * static_cast<double>(y[i]);
    lo = std::min(lo, static_cast<double>(x[i]));
    hi = std::max(hi, static_cast<double>(x[i]));
  }
  for (const bool det : {false, true}) {
    const dist::DistReductionOptions o{.deterministic = det};
    const std::string w = what + (det ? " deterministic" : " fast");
    const double got[] = {dist::sum(gx, o), dist::dot(gx, gy, o), dist::min(gx, o),
                          dist::max(gx, o)};
    const double want[] = {sum, dot, lo, hi};
    const char* names[] = {"sum", "dot", "min", "max"};
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(got[i], want[i]) << w << ": " << names[i];
      EXPECT_TRUE(same_everywhere(got[i])) << w << ": " << names[i] << " differs between ranks";
    }
    EXPECT_NEAR(dist::nrm2(gx, o), std::sqrt(dist::dot(gx, gx, o)), 1e-12) << w << ": nrm2";
    // Onto every device: one value each, the sum.
    const auto on_devices = dist::reduce(sum_kernel(gx.dtype()), gx, ReduceOp::sum, o);
    ASSERT_EQ(on_devices.size(), gx.local_size());
    for (const auto& v : on_devices)
      EXPECT_EQ(reduction_value<double>(astype(gx.queue(), v, Dtype::float64)), sum) << w;
  }
  expect_cells(gx, x, what + ": x after the reductions");
}

// Every case in float32 and int32; float64 on two (kernels compile per dtype and layout).
TEST_P(GridOps, ElementwiseOnPointsOnly) {
  const auto all = cases(s_.M());
  for (const auto& c : all) {
    check_elementwise<float>(s_, c, c.name + " float32");
    check_elementwise<std::int32_t>(s_, c, c.name + " int32");
  }
  for (const std::size_t k : {1, 3})
    check_elementwise<double>(s_, all[k], all[k].name + " float64");
}

TEST_P(GridOps, ReductionsOverPoints) {
  const auto all = cases(s_.M());
  for (const auto& c : all) {
    check_reductions<float>(s_, c, c.name + " float32");
    check_reductions<std::int32_t>(s_, c, c.name + " int32");
  }
  for (const std::size_t k : {2, 4}) check_reductions<double>(s_, all[k], all[k].name + " float64");
}

// Deterministic sums of values that round: the same bits as a DistArray's of the same global
// array, for a 2 x 2-ish grid and for slabs.
TEST_P(GridOps, DeterministicSumMatchesRowBlocks) {
  const Shape shape{23, 11};  // with 3 components: the DistArray's 23 x 33 in the same C order
  std::vector<double> v(shape_size(shape) * 3);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 1.0 / static_cast<double>(i + 3);
  DistArray rows(*s_.comm, Shape{23, 33}, Dtype::float64);
  rows.scatter(world_rank() == 0 ? v : std::vector<double>{}, 0);
  const double want = dist::sum(rows, {.deterministic = true});
  for (const auto& grid : {std::vector<std::size_t>{}, std::vector<std::size_t>{1, s_.M()}}) {
    const GridArray g = make(
        s_, GridLayout::over(*s_.comm, shape, {.grid = grid, .components = 3, .halo = {1}}), v);
    const double got = dist::sum(g, {.deterministic = true});
    EXPECT_TRUE(on_every_rank(std::memcmp(&got, &want, sizeof got) == 0))
        << "grid sum " << got << " vs rows " << want;
  }
}

TEST_P(GridOps, RefusesOperandsOfOtherLayouts) {
  const GridLayout layout = GridLayout::over(*s_.comm, {12, 8}, {.halo = {1}});
  const GridArray a(*s_.comm, layout, Dtype::float32), b(*s_.comm, layout, Dtype::float32);
  const GridArray other_shape(*s_.comm, GridLayout::over(*s_.comm, {12, 9}, {}), Dtype::float32);
  expect_logic_error([&] { dist::axpy(1.0f, a, other_shape, b); }, {"different layouts"}, "axpy");
  expect_logic_error([&] { (void)dist::dot(a, other_shape); }, {"different layouts"}, "dot");
  expect_logic_error([&] { dist::copy(other_shape, a); }, {"different layouts"}, "copy");
  if (s_.M() > 1) {
    const GridArray other_grid(*s_.comm, GridLayout::over(*s_.comm, {12, 8}, {.grid = {1, s_.M()}}),
                               Dtype::float32);
    if (!(other_grid.layout().grid() == layout.grid())) {
      expect_logic_error([&] { dist::scale(2.0f, a, other_grid); }, {"different layouts"}, "scale");
    }
  }
  const DistArray rows(*s_.comm, Shape{12, 8}, Dtype::float32);
  const ElementwiseKernel add("T x, T y", "T z", "z = x + y", {.name = "grid_ops_add"});
  expect_logic_error([&] { dist::elementwise(add, {a, rows, b}); }, {"not both"}, "mixed operands");
  const GridArray empty(*s_.comm, GridLayout::over(*s_.comm, {0, 4}, {}), Dtype::float32);
  expect_logic_error([&] { (void)dist::min(empty); }, {"empty array"}, "min of nothing");
}

// Buffers of the application's own, one per local member: the array works in them.
template <class T>
void check_foreign(Rig& s, const Case& c, const std::string& what) {
  const GridLayout layout = GridLayout::over(*s.comm, c.shape, c.options);
  const Queue queue(s.comm->context());
  std::vector<Buffer> mine;
  for (std::size_t l = 0; l < s.L(); ++l) {
    const auto member = static_cast<std::size_t>(s.comm->rank_of(l));
    const std::size_t cells = shape_size(layout.block_shape(member, true));
    if (cells == 0) {
      mine.emplace_back();
      continue;
    }
    mine.push_back(Buffer::allocate(s.comm->context(), s.comm->device_idx(l), cells * sizeof(T)));
    const auto held = sentinels<T>(member, cells);
    mine.back().set(queue, std::as_bytes(std::span<const T>(held)));
  }
  const GridArray g(*s.comm, queue, layout, dtype_of<T>, mine);
  const auto x = global_data<T>(layout.size(), 5);
  g.scatter(world_rank() == 0 ? x : std::vector<T>{}, 0);
  dist::scale(T(2), g, g);
  g.queue().synchronize();
  std::vector<T> want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = static_cast<T>(2 * x[i]);
  std::size_t wrong = 0;
  for (std::size_t l = 0; l < s.L(); ++l) {
    const auto member = static_cast<std::size_t>(s.comm->rank_of(l));
    std::vector<T> cells(shape_size(layout.block_shape(member, true)));
    if (cells.empty()) continue;
    mine[l].get(queue, std::as_writable_bytes(std::span<T>(cells)));
    wrong += wrong_cells(layout, member, cells, want);
  }
  EXPECT_TRUE(on_every_rank(wrong == 0))
      << what << ": " << wrong << " wrong cell(s) in the application's buffers";
  EXPECT_EQ(dist::sum(g), 2 * dist::sum(make(s, layout, x))) << what;
}

TEST_P(GridOps, OverTheApplicationsBuffers) {
  for (const auto& c : cases(s_.M())) {
    check_foreign<double>(s_, c, c.name + " float64");
    check_foreign<std::int32_t>(s_, c, c.name + " int32");
  }
}

TEST_P(GridOps, RefusesWrongApplicationBuffers) {
  const GridLayout layout = GridLayout::over(*s_.comm, {8, 6, 4}, {.halo = {1}});
  const Queue queue(s_.comm->context());
  auto buffers = [&](std::size_t short_by) {
    std::vector<Buffer> out;
    for (std::size_t l = 0; l < s_.L(); ++l) {
      const auto member = static_cast<std::size_t>(s_.comm->rank_of(l));
      const std::size_t bytes = shape_size(layout.block_shape(member, true)) * sizeof(float);
      out.push_back(Buffer::allocate(s_.comm->context(), s_.comm->device_idx(l), bytes - short_by));
    }
    return out;
  };
  expect_logic_error([&] { GridArray(*s_.comm, queue, layout, Dtype::float32, {}); },
                     {"block buffer(s) were given"}, "no buffers");
  // Too small on rank 0 only: every rank raises, rank 0 says why.
  const std::size_t short_by = world_rank() == 0 ? 4 : 0;
  expect_logic_error([&] { GridArray(*s_.comm, queue, layout, Dtype::float32, buffers(short_by)); },
                     world_rank() == 0 ? std::vector<std::string>{"block buffer 0", "needs"}
                                       : std::vector<std::string>{"no rank makes it"},
                     "too small");
  // Buffers of two members swapped, on the ranks with two devices (ranks may have different
  // numbers: the Runtime gives 3 ranks 2, 1 and 1 of 4 devices); the others pass theirs right and
  // hear of the error.
  const bool swap = s_.L() >= 2 && s_.comm->device_idx(0) != s_.comm->device_idx(1);
  if (!on_every_rank(!swap)) {
    auto given = buffers(0);
    if (swap) std::swap(given[0], given[1]);
    expect_logic_error([&] { GridArray(*s_.comm, queue, layout, Dtype::float32, given); },
                       swap ? std::vector<std::string>{"is on device"}
                            : std::vector<std::string>{"no rank makes it"},
                       "wrong device");
  }
}

}  // namespace grid_ops_test
}  // namespace

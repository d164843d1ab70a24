// SPDX-License-Identifier: BSD-3-Clause
// dist::stencil under mpirun (1..4 ranks) on PoCL devices: a StencilKernel over every local block
// of GridArrays (1-, 2- and 3-D, chosen and given grids, uneven splits, a member without points,
// halo widths 1 and 2 and different per axis, star and box neighbours, components) and of
// DistArrays (row blocks with halo rows). The halos are filled by exchange_halos over periodic
// sides, so the result at every point is the same stencil computed on the host over the global
// array with periodic wrap-around: every point of every block is compared, and ghost cells of the
// output must keep their sentinels. The interior and edge regions together equal `all`, global
// coordinates reach the kernel, the overlapped form (exchange on a second queue meanwhile) gives
// the same bits, and bad calls raise LogicError on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <skein/dist_stencil.hpp>
#include <skein/grid_array.hpp>
#include <skein/grid_layout.hpp>
#include <skein/skein.hpp>
#include <string>
#include <utility>
#include <vector>

#include "dist_support.hpp"
#include "mpi_support.hpp"

namespace {
namespace dist_stencil_test {

using namespace skein;
using ::skein::test::expect_logic_error;
using ::skein::test::on_every_rank;
using ::skein::test::Placement;
using ::skein::test::placement_name;
using ::skein::test::Rig;
using ::skein::test::world_rank;

class DistStencil : public ::skein::test::PlacementTest {};

INSTANTIATE_TEST_SUITE_P(Layouts, DistStencil,
                         testing::Values(Placement::runtime, Placement::two_per_rank),
                         placement_name);

struct Case {
  std::string name;
  Shape shape;
  GridOptions options;
};

std::vector<Boundary> periodic(std::size_t n) {
  return std::vector<Boundary>(n, Boundary::periodic());
}

std::vector<Case> cases(std::size_t members) {
  std::vector<Case> out;
  out.push_back(
      {"1-D chosen, width 2", {37}, {.halo = {2}, .lower = periodic(1), .upper = periodic(1)}});
  out.push_back(
      {"2-D chosen, widths 1x2, box, 11 columns",
       {9, 11},
       {.halo = {1, 2}, .stencil = Stencil::box, .lower = periodic(2), .upper = periodic(2)}});
  out.push_back({"2-D 1xM, 250 columns",
                 {4, 250},
                 {.grid = {1, members}, .halo = {1}, .lower = periodic(2), .upper = periodic(2)}});
  out.push_back(
      {"3-D chosen, box",
       {6, 5, 7},
       {.halo = {1}, .stencil = Stencil::box, .lower = periodic(3), .upper = periodic(3)}});
  // Slabs with an empty first member (9 planes over the others), 2 components.
  std::vector<std::size_t> planes(members, 0);
  for (std::size_t r = 0; r < 9; ++r) planes[members == 1 ? 0 : 1 + r % (members - 1)] += 1;
  out.push_back({"3-D slabs, empty member, 2 components",
                 {9, 4, 3},
                 {.grid = {members, 1, 1},
                  .sizes = {planes, {}, {}},
                  .components = 2,
                  .halo = {1},
                  .lower = periodic(3),
                  .upper = periodic(3)}});
  return out;
}

double value(std::size_t g) { return static_cast<double>((g * 7) % 23) - 11.0; }

// Global point p (C order) of `shape` wrapped periodically, its flat index.
std::size_t wrap_index(const Shape& shape, std::vector<std::int64_t> p) {
  std::size_t g = 0;
  for (std::size_t a = 0; a < shape.size(); ++a) {
    const auto n = static_cast<std::int64_t>(shape[a]);
    p[a] = ((p[a] % n) + n) % n;
    g = g * shape[a] + static_cast<std::size_t>(p[a]);
  }
  return g;
}

void for_points(const Shape& shape,
                const std::function<void(std::size_t, const std::vector<std::int64_t>&)>& f) {
  std::size_t n = 1;
  for (auto e : shape) n *= e;
  std::vector<std::int64_t> p(shape.size());
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t r = i;
    for (std::size_t a = shape.size(); a-- > 0;) {
      p[a] = static_cast<std::int64_t>(r % shape[a]);
      r /= shape[a];
    }
    f(i, p);
  }
}

// The kernel of a case: a weighted sum over every neighbour within the halo width along each axis
// (star: one axis at a time; box: also the diagonal neighbours at distance 1), component c of the
// output reading component c; plus the point's global index, so that coordinates count too.
struct Weights {
  std::string operation;
  std::function<double(const std::vector<double>&, const Shape&, const std::vector<std::int64_t>&,
                       std::size_t)>
      host;
};

Weights weights(const Case& c) {
  const std::size_t D = c.shape.size(), C = c.options.components;
  std::vector<std::size_t> halo(D);
  for (std::size_t a = 0; a < D; ++a)
    halo[a] = c.options.halo.size() == 1 ? c.options.halo[0] : c.options.halo[a];
  const bool box = c.options.stencil == Stencil::box;
  // Offsets read, with weights 1, 2, 3, ...
  std::vector<std::vector<std::int64_t>> offsets;
  for (std::size_t a = 0; a < D; ++a) {
    for (auto h = -static_cast<std::int64_t>(halo[a]); h <= static_cast<std::int64_t>(halo[a]);
         ++h) {
      std::vector<std::int64_t> o(D, 0);
      o[a] = h;
      offsets.push_back(o);
    }
  }
  if (box && D >= 2) {
    std::vector<std::int64_t> o(D, 1);
    offsets.push_back(o);
    o.assign(D, -1);
    offsets.push_back(o);
  }
  Weights w;
  for (std::size_t c_out = 0; c_out < C; ++c_out) {
    std::string sum = "0";
    for (std::size_t k = 0; k < offsets.size(); ++k) {
      std::string args;
      for (std::size_t a = 0; a < D; ++a) args += (a ? ", " : "") + std::to_string(offsets[k][a]);
      if (C > 1) args += ", " + std::to_string(c_out);
      sum += " + " + std::to_string(k + 1) + " * u(" + args + ")";
    }
    std::string coord = "0";
    for (std::size_t a = 0; a < D; ++a)
      coord += " + " + std::to_string(a + 1) + " * (double)gidx[" + std::to_string(a) + "]";
    const std::string target = C > 1 ? "out[" + std::to_string(c_out) + "]" : "out";
    w.operation += target + " = a * (" + sum + ") + " + coord + " + gshape[0];\n";
  }
  w.host = [offsets, C, D](const std::vector<double>& u, const Shape& shape,
                           const std::vector<std::int64_t>& p, std::size_t comp) {
    double s = 0;
    for (std::size_t k = 0; k < offsets.size(); ++k) {
      std::vector<std::int64_t> q = p;
      for (std::size_t a = 0; a < D; ++a) q[a] += offsets[k][a];
      s += static_cast<double>(k + 1) * u[wrap_index(shape, q) * C + comp];
    }
    double coord = 0;
    for (std::size_t a = 0; a < D; ++a)
      coord += static_cast<double>(a + 1) * static_cast<double>(p[a]);
    return 0.5 * s + coord + static_cast<double>(shape[0]);
  };
  return w;
}

// Sentinels in every cell of every block (ghost cells of `out` must keep them).
void fill_sentinels(const GridArray& x) {
  for (const auto& b : x.blocks()) b.with_halo.set(std::vector<double>(b.with_halo.size(), -999.0));
}

// Every point of the gathered output against the reference; ghost cells against the sentinel.
void expect_result(const GridArray& out, const std::vector<double>& want, const std::string& what) {
  const auto got = out.gather<double>(0);
  std::size_t wrong = 0;
  if (world_rank() == 0) {
    for (std::size_t i = 0; i < want.size(); ++i)
      wrong += std::abs(got[i] - want[i]) > 1e-9 * (1 + std::abs(want[i]));
  }
  std::size_t ghosts = 0;
  for (const auto& b : out.blocks()) {
    const auto cells = b.with_halo.get<double>();
    std::size_t minus = 0;
    for (double v : cells) minus += v == -999.0;
    ghosts += minus != cells.size() - b.interior.size() ? 1 : 0;
  }
  EXPECT_TRUE(on_every_rank(wrong == 0 && ghosts == 0))
      << what << ": " << wrong << " wrong point(s), " << ghosts
      << " block(s) with ghost cells written";
}

TEST_P(DistStencil, GridArraysEveryLayoutAgainstHost) {
  for (const Case& c : cases(s_.M())) {
    SCOPED_TRACE(c.name);
    const GridLayout layout = GridLayout::over(*s_.comm, c.shape, c.options);
    const std::size_t C = layout.components(), n = layout.size();
    std::vector<double> u(n);
    for (std::size_t g = 0; g < n; ++g) u[g] = value(g);
    GridArray gu(*s_.comm, layout, Dtype::float64), out(*s_.comm, layout, Dtype::float64);
    gu.scatter(world_rank() == 0 ? u : std::vector<double>{}, 0);
    gu.exchange_halos();
    const Weights w = weights(c);
    const StencilKernel k("double u, double a", "double out", w.operation,
                          {.name = "dist_stencil_case"});
    std::vector<double> want(n);
    for_points(c.shape, [&](std::size_t i, const std::vector<std::int64_t>& p) {
      for (std::size_t comp = 0; comp < C; ++comp) want[i * C + comp] = w.host(u, c.shape, p, comp);
    });
    fill_sentinels(out);
    dist::stencil(k, {gu, 0.5, out});
    expect_result(out, want, c.name + ", all");
    // Interior, then edges: the same points, the same bits.
    fill_sentinels(out);
    dist::stencil(k, {gu, 0.5, out}, StencilRegion::interior);
    dist::stencil(k, {gu, 0.5, out}, StencilRegion::edges);
    expect_result(out, want, c.name + ", interior then edges");
  }
}

// The overlapped form: edges after the exchange on a second queue, the interior meanwhile.
TEST_P(DistStencil, OverlappedWithTheExchange) {
  const Shape shape{8, 12, 10};
  const GridLayout layout =
      GridLayout::over(*s_.comm, shape, {.halo = {1}, .lower = periodic(3), .upper = periodic(3)});
  const std::size_t n = layout.size();
  std::vector<double> u(n);
  for (std::size_t g = 0; g < n; ++g) u[g] = value(g);
  GridArray gu(*s_.comm, layout, Dtype::float64), out(*s_.comm, layout, Dtype::float64);
  gu.scatter(world_rank() == 0 ? u : std::vector<double>{}, 0);
  const StencilKernel k(
      "double u", "double out",
      "out = u(-1, 0, 0) + 2 * u(1, 0, 0) + 3 * u(0, -1, 0) + 4 * u(0, 1, 0) + 5 * u(0, 0, -1) "
      "+ 6 * u(0, 0, 1) - u",
      {.name = "dist_stencil_seven"});
  std::vector<double> want(n);
  for_points(shape, [&](std::size_t i, const std::vector<std::int64_t>& p) {
    auto at = [&](std::int64_t a, std::int64_t b, std::int64_t c) {
      return u[wrap_index(shape, {p[0] + a, p[1] + b, p[2] + c})];
    };
    want[i] = at(-1, 0, 0) + 2 * at(1, 0, 0) + 3 * at(0, -1, 0) + 4 * at(0, 1, 0) +
              5 * at(0, 0, -1) + 6 * at(0, 0, 1) - at(0, 0, 0);
  });
  const Queue& queue = gu.queue();
  Queue halo_queue(queue.context(), queue.device_idxs());
  fill_sentinels(out);
  for (std::size_t d : queue.device_idxs()) halo_queue.wait_for(queue.record_marker(d), d);
  gu.exchange_halos(halo_queue);
  dist::stencil(k, {gu, out}, StencilRegion::interior);
  for (std::size_t d : queue.device_idxs()) queue.wait_for(halo_queue.record_marker(d), d);
  dist::stencil(k, {gu, out}, StencilRegion::edges);
  expect_result(out, want, "overlapped");
}

// Row blocks: a 2-D DistArray with periodic halo rows, neighbours along the rows read in the row
// (columns guarded by the global coordinate, no halo along axis 1).
TEST_P(DistStencil, DistArrayRowBlocks) {
  const std::size_t rows = 13, cols = 37;
  DistArray du(*s_.comm, {rows, cols}, Dtype::float64, {}, {.width = 1, .periodic = true});
  DistArray out(*s_.comm, {rows, cols}, Dtype::float64);
  std::vector<double> u(rows * cols);
  for (std::size_t g = 0; g < u.size(); ++g) u[g] = value(g);
  du.scatter(world_rank() == 0 ? u : std::vector<double>{}, 0);
  du.exchange_halos();
  const StencilKernel k("double u", "double out",
                        "out = u(-1, 0) + 2 * u(1, 0) + (gidx[1] > 0 ? 3 * u(0, -1) : 0.0) "
                        "+ (gidx[1] + 1 < gshape[1] ? 4 * u(0, 1) : 0.0) + 100 * gidx[0]",
                        {.name = "dist_stencil_rows"});
  dist::stencil(k, {du, out});
  std::vector<double> want(rows * cols);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      auto at = [&](std::size_t r, std::size_t cc) { return u[((r + rows) % rows) * cols + cc]; };
      want[i * cols + j] = at(i + rows - 1, j) + 2 * at(i + 1, j) +
                           (j > 0 ? 3 * at(i, j - 1) : 0.0) +
                           (j + 1 < cols ? 4 * at(i, j + 1) : 0.0) + 100.0 * static_cast<double>(i);
    }
  }
  const auto got = out.gather<double>(0);
  std::size_t wrong = 0;
  if (world_rank() == 0) {
    for (std::size_t i = 0; i < want.size(); ++i) wrong += got[i] != want[i];
  }
  EXPECT_TRUE(on_every_rank(wrong == 0)) << wrong << " wrong point(s)";
}

// A stencil that also reduces what it computed: every layout of the cases (one component), the
// output as dist::stencil writes it and the sum of u * out over every point of every member
// against the host's; the split-phase form with a kernel enqueued before wait(); row blocks; and
// the deterministic mode refused on every rank, the arrays usable afterwards.
TEST_P(DistStencil, ReductionOfWhatItComputed) {
  bool first = true;
  for (Case c : cases(s_.M())) {
    c.options.components = 1;  // the slabs with an empty member too, with one component
    SCOPED_TRACE(c.name);
    const GridLayout layout = GridLayout::over(*s_.comm, c.shape, c.options);
    const std::size_t n = layout.size();
    std::vector<double> u(n);
    for (std::size_t g = 0; g < n; ++g) u[g] = value(g);
    GridArray gu(*s_.comm, layout, Dtype::float64), out(*s_.comm, layout, Dtype::float64);
    gu.scatter(world_rank() == 0 ? u : std::vector<double>{}, 0);
    gu.exchange_halos();
    const Weights w = weights(c);
    const StencilKernel k(
        "double u, double a", "double out", w.operation,
        {.name = "dist_stencil_reduce", .reduction = StencilReduction{.map = "u * out"}});
    std::vector<double> want(n);
    double sum = 0, scale = 0;
    for_points(c.shape, [&](std::size_t i, const std::vector<std::int64_t>& p) {
      want[i] = w.host(u, c.shape, p, 0);
      sum += u[i] * want[i];
      scale += std::abs(u[i] * want[i]);
    });
    fill_sentinels(out);
    const double got = dist::stencil_reduce(k, {gu, 0.5, out}, ReduceOp::sum);
    expect_result(out, want, c.name + ", stencil_reduce");
    EXPECT_TRUE(on_every_rank(std::abs(got - sum) <= 1e-12 * (1 + scale))) << got << " vs " << sum;
    if (!std::exchange(first, false)) continue;
    // Split phase (the first case): a kernel of the user's enqueued before the values are taken.
    dist::PendingValues pending = dist::begin_stencil_reduce(k, {gu, 0.5, out}, ReduceOp::sum);
    dist::stencil(
        StencilKernel("double u", "double out", "out = 2 * u", {.name = "dist_stencil_after"}),
        {out, gu});
    const double later = pending.wait().at(0);
    EXPECT_TRUE(on_every_rank(std::abs(later - sum) <= 1e-12 * (1 + scale)))
        << later << " vs " << sum;
    const auto doubled = gu.gather<double>(0);
    std::size_t wrong = 0;
    if (world_rank() == 0) {
      for (std::size_t i = 0; i < n; ++i) wrong += doubled[i] != 2 * want[i];
    }
    EXPECT_TRUE(on_every_rank(wrong == 0))
        << wrong << " point(s) of the kernel after begin_stencil_reduce";
  }
  // Row blocks, the CG operator's p . A p (the columns guarded by the global coordinate).
  const std::size_t rows = 13, cols = 11;
  DistArray dp(*s_.comm, {rows, cols}, Dtype::float64, {}, {.width = 1});
  DistArray dw(*s_.comm, {rows, cols}, Dtype::float64, {}, {.width = 1});
  std::vector<double> p(rows * cols);
  for (std::size_t g = 0; g < p.size(); ++g) p[g] = value(g);
  dp.scatter(world_rank() == 0 ? p : std::vector<double>{}, 0);
  dp.exchange_halos();
  const StencilKernel a(
      "double p", "double w",
      "w = 4 * p - (gidx[0] > 0 ? p(-1, 0) : 0.0) - (gidx[0] + 1 < gshape[0] ? p(1, 0) : 0.0) "
      "- (gidx[1] > 0 ? p(0, -1) : 0.0) - (gidx[1] + 1 < gshape[1] ? p(0, 1) : 0.0)",
      {.name = "dist_stencil_poisson", .reduction = StencilReduction{.map = "p * w"}});
  double pap = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      auto at = [&](std::size_t r, std::size_t cc) { return p[r * cols + cc]; };
      const double w = 4 * at(i, j) - (i > 0 ? at(i - 1, j) : 0.0) -
                       (i + 1 < rows ? at(i + 1, j) : 0.0) - (j > 0 ? at(i, j - 1) : 0.0) -
                       (j + 1 < cols ? at(i, j + 1) : 0.0);
      pap += at(i, j) * w;
    }
  }
  const double got = dist::stencil_reduce(a, {dp, dw}, ReduceOp::sum);
  EXPECT_TRUE(on_every_rank(std::abs(got - pap) <= 1e-12 * (1 + std::abs(pap))))
      << got << " vs " << pap;
  expect_logic_error(
      [&] {
        (void)dist::stencil_reduce(a, {dp, dw}, ReduceOp::sum, StencilRegion::all,
                                   {.deterministic = true});
      },
      {"dist::begin_stencil_reduce", "no deterministic mode"}, "deterministic");
  const StencilKernel plain("double p", "double w", "w = p", {.name = "dist_stencil_plain"});
  expect_logic_error(
      [&] {
        (void)dist::stencil_reduce(plain, {dp, dw}, ReduceOp::sum);
      },
      {"has no reduction"}, "no reduction");
  // What a user does next: the same call, fast mode, gives the same value.
  EXPECT_TRUE(on_every_rank(dist::stencil_reduce(a, {dp, dw}, ReduceOp::sum) == got));
}

TEST_P(DistStencil, BadCallsRaiseOnEveryRank) {
  const GridLayout a = GridLayout::over(*s_.comm, {6, 8}, {.halo = {1}});
  const GridLayout b = GridLayout::over(*s_.comm, {6, 9}, {.halo = {1}});
  GridArray ga(*s_.comm, a, Dtype::float64), gb(*s_.comm, b, Dtype::float64),
      gc(*s_.comm, a, Dtype::float64);
  DistArray rows(*s_.comm, {6, 8}, Dtype::float64);
  const StencilKernel k("double u", "double out", "out = u(0, 1)", {.name = "dist_stencil_bad"});
  expect_logic_error(
      [&] {
        dist::stencil(k, {ga, gb});
      },
      {"dist::stencil", "different layouts"}, "another layout");
  expect_logic_error([&] { dist::stencil(k, {ga, rows}); }, {"not both"}, "a grid and a row array");
  expect_logic_error(
      [&] {
        dist::stencil(k, {ga, ga});
      },
      {"shares memory"}, "the output is the input");
  expect_logic_error(
      [&] {
        dist::stencil(k, {1.0, 2.0});
      },
      {"no distributed operand"}, "no arrays");
  // The arrays stay usable: a good call after the refused ones.
  dist::stencil(k, {ga, gc});
  EXPECT_TRUE(on_every_rank(true));
}

}  // namespace dist_stencil_test
}  // namespace

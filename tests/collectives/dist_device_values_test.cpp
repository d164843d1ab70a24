// SPDX-License-Identifier: BSD-3-Clause
// Reductions whose values stay on the devices, and per-member arrays as operands, under mpirun
// (1..4 ranks) on PoCL devices (and CUDA on a GPU machine: SKEIN_API=cuda):
// dist::reduce_to_devices, dots_to_devices, sums_to_devices, stencil_reduce_to_devices and
// update_and_reduce_to_devices against references computed on each rank's host (exact sums of
// multiples of 1/4 for the fast mode; the canonical pairwise tree, bit for bit, for the
// deterministic mode) and against the host-valued forms; the arrays' layout (one per local member,
// in local block order, on the member's device) and their values equal on every member of every
// rank; per-member arrays read through raw parameters by dist::elementwise (DistArrays and
// GridArrays), by the reductions' operands and by dist::stencil; a CG that never reads a value to
// the host until the end; and the bad calls (LogicError on every rank, each passing the same bad
// operands), followed by a correct call that gives the right values.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <skein/dist_fused.hpp>
#include <skein/dist_ops.hpp>
#include <skein/dist_reductions.hpp>
#include <skein/dist_stencil.hpp>
#include <skein/grid_array.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "canonical_tree.hpp"
#include "dist_data.hpp"
#include "dist_support.hpp"
#include "mpi_support.hpp"

namespace {
namespace dist_device_values_test {

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

class DistDeviceValues : public ::skein::test::PlacementTest {};
INSTANTIATE_TEST_SUITE_P(Placements, DistDeviceValues,
                         testing::Values(Placement::runtime, Placement::two_per_rank),
                         placement_name);

// This rank's rows of a DistArray, checked against the same rows of `want` (exactly or within
// `tol` relative to the largest value); true on every rank when every rank's rows agree.
bool rows_match(const DistArray& d, const std::vector<double>& want, double tol = 0) {
  const std::vector<double> got = d.gather_local<double>();
  const std::size_t first = d.rank_rows().begin * d.layout().row_size();
  double scale = 1;
  for (double v : want) scale = std::max(scale, std::abs(v));
  bool ok = got.size() + first <= want.size();
  for (std::size_t k = 0; ok && k < got.size(); ++k) {
    ok = tol == 0 ? got[k] == want[first + k] : std::abs(got[k] - want[first + k]) <= tol * scale;
    if (!ok)
      ADD_FAILURE() << "element " << first + k << ": " << got[k] << " vs " << want[first + k];
  }
  return on_every_rank(ok);
}

bool grid_matches(const GridArray& g, const std::vector<double>& want) {
  bool ok = true;
  const std::vector<double> got = g.gather<double>(0);
  if (world_rank() == 0) {
    ok = got.size() == want.size();
    for (std::size_t k = 0; ok && k < got.size(); ++k) {
      ok = got[k] == want[k];
      if (!ok) ADD_FAILURE() << "point " << k << ": " << got[k] << " vs " << want[k];
    }
  }
  return on_every_rank(ok);
}

// The values of the per-member arrays: one array per local block of `x` (local block order), on
// the block's device, of `count` elements of `dtype`, the same bits on every member of every rank.
// Returns them as doubles.
template <class Distributed>
std::vector<double> device_values(const std::vector<Array>& arrays, const Distributed& x,
                                  std::size_t count, Dtype dtype, const std::string& what) {
  EXPECT_EQ(arrays.size(), x.local_size()) << what;
  std::vector<double> first;
  for (std::size_t i = 0; i < arrays.size() && i < x.local_size(); ++i) {
    const Array& a = arrays[i];
    EXPECT_EQ(a.device_idx(), x.block(i).device_idx) << what << ": block " << i;
    EXPECT_EQ(a.shape(), Shape{count}) << what << ": block " << i;
    EXPECT_EQ(a.dtype(), dtype) << what << ": block " << i;
    std::vector<double> v(count);
    if (dtype == Dtype::float32) {
      std::vector<float> f(count);
      a.get(std::span<float>(f));
      for (std::size_t j = 0; j < count; ++j) v[j] = f[j];
    } else {
      a.get(std::span<double>(v));
    }
    if (i == 0) first = v;
    for (std::size_t j = 0; j < count; ++j) {
      EXPECT_EQ(std::bit_cast<std::uint64_t>(v[j]), std::bit_cast<std::uint64_t>(first[j]))
          << what << ": block " << i << ", value " << j;
    }
  }
  for (double v : first) EXPECT_TRUE(same_everywhere(v)) << what << ": the ranks differ";
  return first;
}

std::uint32_t bits(double v) { return std::bit_cast<std::uint32_t>(static_cast<float>(v)); }

const ReductionKernel& triple_kernel(Dtype t) {
  static const ReductionKernel f32("float x, float y, float z", "float s", "x * y * z", "a + b",
                                   "0", {.name = "dv_triple32"});
  static const ReductionKernel f64("double x, double y, double z", "double s", "x * y * z", "a + b",
                                   "0", {.name = "dv_triple64"});
  return t == Dtype::float32 ? f32 : f64;
}

const ReductionKernel& residual_kernel() {
  static const ReductionKernel k("double x, double c, double y", "double s",
                                 "(c * x - y) * (c * x - y)", "a + b", "0",
                                 {.name = "dv_residual64"});
  return k;
}

// ---- the reductions to the devices
// ---------------------------------------------------------------

// A batch of two user kernels, dots and sums: fast (exact values: the host's sums) over every
// split, odd lengths and empty members, equal to the host-valued forms.
TEST_P(DistDeviceValues, ReduceToDevicesFastMatchesTheHost) {
  const std::size_t M = s_.M();
  for (const Shape& shape : {Shape{1001}, Shape{37, 5}, Shape{0}, Shape{2 * M + 1, 3}}) {
    const std::size_t n = shape_size(shape);
    const auto x = seeded_values<double>(n, 1, true), y = seeded_values<double>(n, 2, true),
               z = seeded_values<double>(n, 3, true);
    double triple = 0, residual = 0, xy = 0, yy = 0, sx = 0;
    for (std::size_t i = 0; i < n; ++i) {
      triple += x[i] * y[i] * z[i];
      residual += (0.5 * x[i] - y[i]) * (0.5 * x[i] - y[i]);
      xy += x[i] * y[i];
      yy += y[i] * y[i];
      sx += x[i];
    }
    for (const auto& [split, name] : member_splits(M, shape[0])) {
      const std::string what = to_string(shape) + " " + name;
      const DistArray dx = make_dist(s_, shape, split, x), dy = make_dist(s_, shape, split, y),
                      dz = make_dist(s_, shape, split, z);
      const std::vector<Array> r = dist::reduce_to_devices(
          {{triple_kernel(Dtype::float64), {dx, dy, dz}}, {residual_kernel(), {dx, 0.5, dy}}},
          ReduceOp::sum);
      const std::vector<double> got = device_values(r, dx, 2, Dtype::float64, what);
      EXPECT_EQ(got[0], triple) << what << ": x y z";
      EXPECT_EQ(got[1], residual) << what << ": (c x - y)^2";
      const std::vector<double> host = dist::reduce_values(
          {{triple_kernel(Dtype::float64), {dx, dy, dz}}, {residual_kernel(), {dx, 0.5, dy}}},
          ReduceOp::sum);
      EXPECT_EQ(host, got) << what << ": the host-valued form";
      const std::vector<double> d =
          device_values(dist::dots_to_devices({{dx, dy}, {dy, dy}}), dx, 2, Dtype::float64, what);
      EXPECT_EQ(d[0], xy) << what << ": x . y";
      EXPECT_EQ(d[1], yy) << what << ": y . y";
      const std::vector<double> sm =
          device_values(dist::sums_to_devices({dx}), dx, 1, Dtype::float64, what);
      EXPECT_EQ(sm[0], sx) << what << ": sum x";
    }
  }
}

// Deterministic: float32 with rounding, the canonical tree bit for bit, and the same bits as the
// host-valued form; min across the members.
TEST_P(DistDeviceValues, ReduceToDevicesDeterministicIsTheCanonicalTree) {
  const std::size_t M = s_.M();
  const dist::DistReductionOptions det{.deterministic = true};
  for (std::size_t n : {std::size_t{1}, std::size_t{4099}, std::size_t{30001}}) {
    const auto x = seeded_values<float>(n, 4, false), y = seeded_values<float>(n, 5, false),
               z = seeded_values<float>(n, 6, false);
    std::vector<float> leaves(n), pxy(n);
    for (std::size_t i = 0; i < n; ++i) {
      leaves[i] = (x[i] * y[i]) * z[i];
      pxy[i] = x[i] * y[i];
    }
    for (const auto& [split, name] : member_splits(M, n)) {
      const std::string what = fmt::format("n {} {}", n, name);
      const DistArray dx = make_dist(s_, Shape{n}, split, x),
                      dy = make_dist(s_, Shape{n}, split, y),
                      dz = make_dist(s_, Shape{n}, split, z);
      const std::vector<double> got =
          device_values(dist::reduce_to_devices({{triple_kernel(Dtype::float32), {dx, dy, dz}}},
                                                ReduceOp::sum, det),
                        dx, 1, Dtype::float32, what);
      EXPECT_EQ(bits(got[0]), std::bit_cast<std::uint32_t>(canonical_tree(leaves))) << what;
      const std::vector<double> d = device_values(dist::dots_to_devices({{dx, dy}, {dy, dx}}, det),
                                                  dx, 2, Dtype::float32, what);
      EXPECT_EQ(bits(d[0]), std::bit_cast<std::uint32_t>(canonical_tree(pxy))) << what;
      EXPECT_EQ(bits(d[1]), bits(d[0])) << what;
      const std::vector<double> host = dist::dots({{dx, dy}, {dy, dx}}, det);
      EXPECT_EQ(bits(host[0]), bits(d[0])) << what << ": the host-valued form";
    }
  }
  // min across the members, both modes.
  const std::size_t n = 777;
  const auto x = seeded_values<double>(n, 31, true), y = seeded_values<double>(n, 32, true);
  const DistArray dx = make_dist(s_, Shape{n}, RowSplit::even(), x),
                  dy = make_dist(s_, Shape{n}, RowSplit::even(), y);
  const ReductionKernel min_diff("double x, double y", "double s", "x - y", "a < b ? a : b",
                                 "INFINITY", {.name = "dv_min_diff"});
  double want = INFINITY;
  for (std::size_t i = 0; i < n; ++i) want = std::min(want, x[i] - y[i]);
  for (bool d : {false, true}) {
    const std::vector<double> got = device_values(
        dist::reduce_to_devices({{min_diff, {dx, dy}}}, ReduceOp::min, {.deterministic = d}), dx, 1,
        Dtype::float64, "min");
    EXPECT_EQ(got[0], want) << (d ? "deterministic" : "fast");
  }
}

// GridArrays: slabs (ranges of global indices), chosen grids and a split along axis 1 (the
// deterministic mode copies those into slabs), fast and deterministic.
TEST_P(DistDeviceValues, ReduceToDevicesOnGrids) {
  const std::size_t M = s_.M();
  struct Case {
    std::string name;
    Shape shape;
    GridOptions options;
  };
  const std::vector<Case> cases = {{"2-D slabs, halo 1", {61, 37}, {.grid = {M, 1}, .halo = {1}}},
                                   {"2-D chosen", {61, 37}, {.halo = {2, 1}}},
                                   {"2-D split along axis 1", {13, 250}, {.grid = {1, M}}},
                                   {"3-D, 2 components", {9, 11, 7}, {.components = 2}}};
  for (const Case& c : cases) {
    const GridLayout layout = GridLayout::over(*s_.comm, c.shape, c.options);
    const std::size_t n = layout.size();
    const auto ex = seeded_values<double>(n, 11, true), ey = seeded_values<double>(n, 12, true);
    double xy = 0;
    for (std::size_t i = 0; i < n; ++i) xy += ex[i] * ey[i];
    const GridArray gx = make_grid(s_, layout, ex), gy = make_grid(s_, layout, ey);
    EXPECT_EQ(device_values(dist::dots_to_devices({{gx, gy}}), gx, 1, Dtype::float64, c.name)[0],
              xy)
        << c.name;
    const auto x = seeded_values<float>(n, 14, false), y = seeded_values<float>(n, 15, false);
    std::vector<float> pxy(n);
    for (std::size_t i = 0; i < n; ++i) pxy[i] = x[i] * y[i];
    const GridArray fx = make_grid(s_, layout, x), fy = make_grid(s_, layout, y);
    const std::vector<double> det = device_values(
        dist::dots_to_devices({{fx, fy}}, {.deterministic = true}), fx, 1, Dtype::float32, c.name);
    EXPECT_EQ(bits(det[0]), std::bit_cast<std::uint32_t>(canonical_tree(pxy))) << c.name;
    EXPECT_EQ(bits(dist::dots({{fx, fy}}, {.deterministic = true})[0]), bits(det[0])) << c.name;
  }
}

// The stencil's reduction (p . A p of a 2-D Poisson operator) on row blocks and on a grid, to
// the devices, equal to the host-valued form and the host's value.
// The 5-point Poisson stencil with zero values outside the grid, and p . w in the same pass.
const StencilKernel& poisson_dot() {
  static const StencilKernel k(
      "double p", "double w",
      "w = 4 * p - (gidx[0] > 0 ? p(-1, 0) : 0.0) - (gidx[0] + 1 < gshape[0] ? p(1, 0) : 0.0) "
      "- (gidx[1] > 0 ? p(0, -1) : 0.0) - (gidx[1] + 1 < gshape[1] ? p(0, 1) : 0.0)",
      {.name = "dv_poisson", .reduction = StencilReduction{.map = "p * w"}});
  return k;
}

// The same on the host: w = A p of a rows x cols grid (flat), and p . w.
struct Poisson {
  std::vector<double> w;
  double pw = 0;
};
Poisson host_poisson(const std::vector<double>& p, std::size_t rows, std::size_t cols) {
  Poisson h{std::vector<double>(rows * cols), 0};
  auto at = [&](std::size_t r, std::size_t c) { return p[r * cols + c]; };
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      const double w = 4 * at(i, j) - (i > 0 ? at(i - 1, j) : 0.0) -
                       (i + 1 < rows ? at(i + 1, j) : 0.0) - (j > 0 ? at(i, j - 1) : 0.0) -
                       (j + 1 < cols ? at(i, j + 1) : 0.0);
      h.w[i * cols + j] = w;
      h.pw += at(i, j) * w;
    }
  }
  return h;
}

TEST_P(DistDeviceValues, StencilReduceToDevices) {
  const std::size_t rows = 13, cols = 11;
  std::vector<double> p(rows * cols);
  for (std::size_t g = 0; g < p.size(); ++g) p[g] = static_cast<double>(g % 7) - 3.0;
  const auto [w, pap] = host_poisson(p, rows, cols);
  const StencilKernel& a = poisson_dot();
  for (const auto& [split, name] : member_splits(s_.M(), rows)) {
    const DistArray dp = make_dist(s_, Shape{rows, cols}, split, p, {.width = 1});
    const DistArray dw(*s_.comm, Shape{rows, cols}, Dtype::float64, split, {.width = 1});
    dp.exchange_halos();
    const std::vector<double> got = device_values(
        dist::stencil_reduce_to_devices(a, {dp, dw}, ReduceOp::sum), dp, 1, Dtype::float64, name);
    EXPECT_EQ(got[0], pap) << name;  // small integers: exact in any order
    EXPECT_TRUE(rows_match(dw, w)) << name << ": the stencil's output";
    EXPECT_EQ(dist::stencil_reduce(a, {dp, dw}, ReduceOp::sum), got[0]) << name;
  }
  const GridLayout layout = GridLayout::over(*s_.comm, {rows, cols}, {.halo = {1}});
  const GridArray gp = make_grid(s_, layout, p);
  const GridArray gw(*s_.comm, layout, Dtype::float64);
  gp.exchange_halos();
  const std::vector<double> got = device_values(
      dist::stencil_reduce_to_devices(a, {gp, gw}, ReduceOp::sum), gp, 1, Dtype::float64, "grid");
  EXPECT_EQ(got[0], pap) << "grid";
  EXPECT_TRUE(grid_matches(gw, w)) << "grid: the stencil's output";
}

// The halo exchange overlapped with the interior (dist::HaloOverlap): p's halos are not exchanged
// before the call (they hold what the allocation held), the call exchanges them on a second queue;
// the value and the stencil's output are the host's, as with the exchange first. A bad overlap
// raises, and the next right call works.
TEST_P(DistDeviceValues, StencilReduceToDevicesWithTheExchangeOverlapped) {
  const std::size_t rows = 13, cols = 11;
  std::vector<double> p(rows * cols);
  for (std::size_t g = 0; g < p.size(); ++g) p[g] = static_cast<double>(g % 5) - 1.0;
  const auto [w, pap] = host_poisson(p, rows, cols);
  const StencilKernel& a = poisson_dot();
  std::vector<std::size_t> devices;
  for (std::size_t l = 0; l < s_.L(); ++l) devices.push_back(s_.comm->device_idx(l));
  const Queue halo_queue(s_.comm->context(), devices, QueuePriority::high());
  for (const auto& [split, name] : member_splits(s_.M(), rows)) {
    const DistArray dp = make_dist(s_, Shape{rows, cols}, split, p, {.width = 1});
    const DistArray dw(*s_.comm, Shape{rows, cols}, Dtype::float64, split, {.width = 1});
    const dist::HaloOverlap overlap{.halo_queue = halo_queue, .exchange = {dp}};
    const std::vector<double> got =
        device_values(dist::stencil_reduce_to_devices(a, {dp, dw}, ReduceOp::sum, overlap), dp, 1,
                      Dtype::float64, name);
    EXPECT_EQ(got[0], pap) << name;  // small integers: exact in any order
    EXPECT_TRUE(rows_match(dw, w)) << name << ": the stencil's output";
  }
  const GridLayout layout = GridLayout::over(*s_.comm, {rows, cols}, {.halo = {1}});
  const GridArray gp = make_grid(s_, layout, p);
  const GridArray gw(*s_.comm, layout, Dtype::float64);
  const dist::HaloOverlap overlap{.halo_queue = halo_queue, .exchange = {gp}};
  const std::vector<double> got =
      device_values(dist::stencil_reduce_to_devices(a, {gp, gw}, ReduceOp::sum, overlap), gp, 1,
                    Dtype::float64, "grid");
  EXPECT_EQ(got[0], pap) << "grid";
  EXPECT_TRUE(grid_matches(gw, w)) << "grid: the stencil's output";
  // An entry of `exchange` that is no distributed array: refused on every rank (all pass it),
  // before anything is enqueued; the right call then gives the value.
  const dist::HaloOverlap bad{.halo_queue = halo_queue, .exchange = {dist::DistOperand(1.0)}};
  expect_logic_error(
      [&] {
        (void)dist::stencil_reduce_to_devices(a, {gp, gw}, ReduceOp::sum, bad);
      },
      {"stencil_reduce_to_devices", "exchange[0]"});
  // A halo queue of another context (a context of its own over the same devices).
  std::vector<Device> mine;
  for (std::size_t d : devices) mine.push_back(s_.comm->context().device(d));
  const dist::HaloOverlap foreign{
      .halo_queue = Queue(Context::from_devices(std::span<const Device>(mine))), .exchange = {gp}};
  expect_logic_error(
      [&] {
        (void)dist::stencil_reduce_to_devices(a, {gp, gw}, ReduceOp::sum, foreign);
      },
      {"stencil_reduce_to_devices", "another context"});
  const std::vector<double> again =
      device_values(dist::stencil_reduce_to_devices(a, {gp, gw}, ReduceOp::sum, overlap), gp, 1,
                    Dtype::float64, "grid again");
  EXPECT_EQ(again[0], pap);
}

const FusedKernel& cg_update() {
  static const FusedKernel k("double p, double w, double alpha", "double x, double r",
                             "x += alpha * p; r -= alpha * w", "double rr", "r * r", "a + b", "0",
                             {.name = "dv_cg_update"});
  return k;
}

// The fused CG update to the devices: the updated arrays and r . r as the host computes them (fast:
// exact values; deterministic: the same bits as update_and_reduce over copies of the operands).
TEST_P(DistDeviceValues, UpdateAndReduceToDevices) {
  const std::size_t M = s_.M();
  for (std::size_t n : {std::size_t{1001}, std::size_t{2 * M + 1}}) {
    const auto p = seeded_values<double>(n, 71, true), w = seeded_values<double>(n, 72, true),
               x = seeded_values<double>(n, 73, true), r = seeded_values<double>(n, 74, true);
    std::vector<double> x1(n), r1(n);
    double rr = 0;
    for (std::size_t i = 0; i < n; ++i) {
      x1[i] = x[i] + 0.5 * p[i];
      r1[i] = r[i] - 0.5 * w[i];
      rr += r1[i] * r1[i];
    }
    for (const auto& [split, name] : member_splits(M, n)) {
      const std::string what = fmt::format("n {} {}", n, name);
      const DistArray dp = make_dist(s_, Shape{n}, split, p),
                      dw = make_dist(s_, Shape{n}, split, w);
      for (bool det : {false, true}) {
        const DistArray dx = make_dist(s_, Shape{n}, split, x),
                        dr = make_dist(s_, Shape{n}, split, r);
        const std::vector<double> got =
            device_values(dist::update_and_reduce_to_devices(cg_update(), {dp, dw, 0.5, dx, dr},
                                                             ReduceOp::sum, {.deterministic = det}),
                          dx, 1, Dtype::float64, what);
        EXPECT_EQ(got[0], rr) << what << (det ? " deterministic" : " fast");
        EXPECT_TRUE(rows_match(dx, x1) && rows_match(dr, r1)) << what;
        const DistArray hx = make_dist(s_, Shape{n}, split, x),
                        hr = make_dist(s_, Shape{n}, split, r);
        const double host = dist::update_and_reduce(cg_update(), {dp, dw, 0.5, hx, hr},
                                                    ReduceOp::sum, {.deterministic = det});
        EXPECT_EQ(std::bit_cast<std::uint64_t>(host), std::bit_cast<std::uint64_t>(got[0]))
            << what << ": the host-valued form";
      }
    }
  }
}

// ---- member values combined in one collective later
// ---------------------------------------------------------------

// One 2-element float64 array per local member of `x`, on its device.
template <class Distributed>
std::vector<Array> member_slots(const Distributed& x, std::size_t count = 2,
                                Dtype dtype = Dtype::float64) {
  std::vector<Array> out;
  for (std::size_t i = 0; i < x.local_size(); ++i)
    out.push_back(Array::zeros(x.queue(), {count}, dtype, x.block(i).device_idx));
  return out;
}

std::vector<double> slot_values(const Array& a) {
  std::vector<double> v(a.size());
  a.get(std::span<double>(v));
  return v;
}

// A single-reduction CG step's pattern: the fused update's r . r into slot 0, the stencil's p . w
// into slot 1, each member's own value (checked against the member's rows on the host) until one
// combine_members gives every member the totals; the stencil also with its exchange overlapped
// (p's halos not exchanged before). Row blocks of every split (empty members included) and a grid.
TEST_P(DistDeviceValues, MemberValuesCombinedInOneCollective) {
  const std::size_t rows = 13, cols = 11, n = rows * cols;
  const auto p = seeded_values<double>(n, 91, true), w0 = seeded_values<double>(n, 92, true),
             x = seeded_values<double>(n, 93, true), r = seeded_values<double>(n, 94, true);
  const auto [ap, pap] = host_poisson(p, rows, cols);
  std::vector<double> x1(n), r1(n);
  double rr = 0;
  for (std::size_t k = 0; k < n; ++k) {
    x1[k] = x[k] + 0.5 * p[k];
    r1[k] = r[k] - 0.5 * w0[k];
    rr += r1[k] * r1[k];
  }
  // The member's own values: r1 . r1 and p . A p over global rows [begin, end).
  auto own = [&](std::size_t begin, std::size_t end) {
    double a = 0, b = 0;
    for (std::size_t k = begin * cols; k < end * cols; ++k) {
      a += r1[k] * r1[k];
      b += p[k] * ap[k];
    }
    return std::pair{a, b};
  };
  std::vector<std::size_t> devices;
  for (std::size_t l = 0; l < s_.L(); ++l) devices.push_back(s_.comm->device_idx(l));
  const Queue halo_queue(s_.comm->context(), devices, QueuePriority::high());
  for (bool overlapped : {false, true}) {
    for (const auto& [split, name] : member_splits(s_.M(), rows)) {
      const std::string what = fmt::format("{}{}", name, overlapped ? " overlapped" : "");
      const DistArray dp = make_dist(s_, Shape{rows, cols}, split, p, {.width = 1});
      const DistArray dw(*s_.comm, Shape{rows, cols}, Dtype::float64, split, {.width = 1});
      const DistArray pw = make_dist(s_, Shape{rows, cols}, split, p),
                      ww = make_dist(s_, Shape{rows, cols}, split, w0),
                      dx = make_dist(s_, Shape{rows, cols}, split, x),
                      dr = make_dist(s_, Shape{rows, cols}, split, r);
      const std::vector<Array> v = member_slots(dx);
      dist::update_and_reduce_members(cg_update(), {pw, ww, 0.5, dx, dr}, v, 0);
      if (overlapped) {
        const dist::HaloOverlap overlap{.halo_queue = halo_queue, .exchange = {dp}};
        dist::stencil_reduce_members(poisson_dot(), {dp, dw}, v, 1, overlap);
      } else {
        dp.exchange_halos();
        dist::stencil_reduce_members(poisson_dot(), {dp, dw}, v, 1);
      }
      bool ok = true;
      for (std::size_t i = 0; i < dx.local_size(); ++i) {
        const auto [a, b] = own(dx.block(i).rows.begin, dx.block(i).rows.end);
        const std::vector<double> got = slot_values(v[i]);
        EXPECT_EQ(got[0], a) << what << ": block " << i << ", r . r before combine_members";
        EXPECT_EQ(got[1], b) << what << ": block " << i << ", p . w before combine_members";
        ok = ok && got[0] == a && got[1] == b;
      }
      EXPECT_TRUE(on_every_rank(ok)) << what << ": a member's own values";
      EXPECT_TRUE(rows_match(dx, x1) && rows_match(dr, r1) && rows_match(dw, ap)) << what;
      dist::combine_members(dx, v, ReduceOp::sum);
      const std::vector<double> got = device_values(v, dx, 2, Dtype::float64, what);
      EXPECT_EQ(got[0], rr) << what;  // multiples of 1/16: exact in any order
      EXPECT_EQ(got[1], pap) << what;
    }
  }
  const GridLayout layout = GridLayout::over(*s_.comm, {rows, cols}, {.halo = {1}});
  const GridArray gp = make_grid(s_, layout, p);
  const GridArray gw(*s_.comm, layout, Dtype::float64);
  const std::vector<Array> v = member_slots(gp, 3);
  gp.exchange_halos();
  dist::stencil_reduce_members(poisson_dot(), {gp, gw}, v, 2);
  dist::combine_members(gp, v, ReduceOp::sum);
  const std::vector<double> got = device_values(v, gp, 3, Dtype::float64, "grid");
  EXPECT_EQ(got[0], 0.0);  // the slots the call did not write keep their zeros
  EXPECT_EQ(got[2], pap) << "grid";
  EXPECT_TRUE(grid_matches(gw, ap)) << "grid: the stencil's output";
}

// combine_members with every operation on float64, float32 and int32 values known per member
// (member m holds {m + 1, 2 - m, (m % 3) - 1}): the host's combination of every member's values,
// the same bits on every member. One rank holding every member combines them on the devices through
// peer access, several ranks through the all_reduce: both are checked here (np1 and npN).
TEST_P(DistDeviceValues, CombineMembersEveryOperation) {
  const DistArray like(*s_.comm, Shape{2 * s_.M() + 1}, Dtype::float64, RowSplit::even());
  const std::size_t M = s_.M();
  auto member_value = [](std::size_t m, std::size_t j) {
    const double v[3] = {static_cast<double>(m) + 1, 2.0 - static_cast<double>(m),
                         static_cast<double>(m % 3) - 1};
    return v[j];
  };
  for (Dtype dtype : {Dtype::float64, Dtype::float32, Dtype::int32}) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max}) {
      const std::string what = fmt::format("{} {}", name(dtype), name(op));
      std::vector<Array> v;
      for (std::size_t i = 0; i < like.local_size(); ++i) {
        const std::size_t m = like.block(i).member;
        std::vector<double> own(3);
        for (std::size_t j = 0; j < 3; ++j) own[j] = member_value(m, j);
        const Array a = Array::from_host(like.queue(), own, {}, like.block(i).device_idx);
        v.push_back(dtype == Dtype::float64 ? a : skein::astype(like.queue(), a, dtype));
      }
      dist::combine_members(like, v, op);
      std::vector<double> want(3);
      for (std::size_t j = 0; j < 3; ++j) {
        double acc = member_value(0, j);
        for (std::size_t m = 1; m < M; ++m) {
          const double x = member_value(m, j);
          acc = op == ReduceOp::sum    ? acc + x
                : op == ReduceOp::prod ? acc * x
                : op == ReduceOp::min  ? std::min(acc, x)
                                       : std::max(acc, x);
        }
        want[j] = acc;
      }
      std::vector<Array> as_f64;
      for (const Array& a : v) as_f64.push_back(skein::astype(like.queue(), a, Dtype::float64));
      const std::vector<double> got = device_values(as_f64, like, 3, Dtype::float64, what);
      EXPECT_EQ(got, want) << what;
    }
  }
}

// combine_members on a second queue while the arrays' queue runs a kernel: the values combined
// once the queue waits for the returned events, the kernel's result untouched, and the values then
// usable there; a queue of another context or lacking a device refused on every rank.
TEST_P(DistDeviceValues, CombineMembersOnASecondQueue) {
  const std::size_t n = 100003, M = s_.M();
  const auto x = seeded_values<double>(n, 97, true);
  const DistArray dx = make_dist(s_, Shape{n}, RowSplit::even(), x);
  const DistArray dy(*s_.comm, Shape{n}, Dtype::float64, RowSplit::even());
  const std::vector<std::size_t> devices = dx.queue().device_idxs();
  const Queue side(dx.queue().context(), devices, QueuePriority::high());
  std::vector<Array> v;
  for (std::size_t i = 0; i < dx.local_size(); ++i) {
    const double m = static_cast<double>(dx.block(i).member);
    v.push_back(Array::from_host(dx.queue(), std::vector<double>{m + 1, 0.5 * m}, {},
                                 dx.block(i).device_idx));
  }
  const std::vector<Event> done = dist::combine_members(dx, v, ReduceOp::sum, side);
  ASSERT_EQ(done.size(), dx.local_size());
  const ElementwiseKernel twice("double x", "double y", "y = 2 * x", {.name = "dv_twice"});
  dist::elementwise(twice, {dx, dy});  // on the arrays' queue, alongside the combine
  for (std::size_t i = 0; i < done.size(); ++i)
    dx.queue().wait_for(done[i], dx.block(i).device_idx);
  const double s0 = static_cast<double>(M * (M + 1) / 2),
               s1 = 0.25 * static_cast<double>(M * (M - 1));
  std::vector<double> want(n);
  for (std::size_t k = 0; k < n; ++k) want[k] = 2 * x[k];
  EXPECT_TRUE(rows_match(dy, want));
  const ElementwiseKernel affine("raw double a, double x", "double y", "y = a[0] * x + a[1]",
                                 {.name = "dv_affine2"});
  dist::elementwise(affine, {v, dx, dy});
  for (std::size_t k = 0; k < n; ++k) want[k] = s0 * x[k] + s1;
  EXPECT_TRUE(rows_match(dy, want));
  const std::vector<double> got = device_values(v, dx, 2, Dtype::float64, "second queue");
  EXPECT_EQ(got, (std::vector<double>{s0, s1}));
  const std::vector<Device> mine{dx.queue().context().device(devices[0])};
  expect_logic_error(
      [&] {
        (void)dist::combine_members(dx, v, ReduceOp::sum,
                                    Queue(Context::from_devices(std::span<const Device>(mine))));
      },
      {"combine_members", "another context"});
  if (devices.size() > 1) {
    expect_logic_error(
        [&] {
          (void)dist::combine_members(dx, v, ReduceOp::sum,
                                      Queue(dx.queue().context(), {devices[0]}));
        },
        {"combine_members", fmt::format("lacks device {}", devices[1])});
  }
  EXPECT_EQ(device_values(v, dx, 2, Dtype::float64, "after the refusals"),
            (std::vector<double>{s0, s1}));
}

// Bad `into` and `values` (every rank passes the same): LogicError on every rank naming the call
// and what is wrong; nothing is written, and the right calls then give the right values.
TEST_P(DistDeviceValues, MemberValuesRefuseBadArrays) {
  const std::size_t rows = 9, cols = 7, n = rows * cols;
  const auto p = seeded_values<double>(n, 95, true);
  const auto [ap, pap] = host_poisson(p, rows, cols);
  const DistArray dp = make_dist(s_, Shape{rows, cols}, RowSplit::even(), p, {.width = 1});
  const DistArray dw(*s_.comm, Shape{rows, cols}, Dtype::float64, RowSplit::even(), {.width = 1});
  dp.exchange_halos();
  std::vector<Array> fewer = member_slots(dp);
  fewer.pop_back();
  expect_logic_error(
      [&] {
        dist::stencil_reduce_members(poisson_dot(), {dp, dw}, fewer, 0);
      },
      {"stencil_reduce_members", "per-member array"});
  expect_logic_error(
      [&] {
        dist::stencil_reduce_members(poisson_dot(), {dp, dw}, member_slots(dp, 2, Dtype::float32),
                                     0);
      },
      {"stencil_reduce_members", "float32"});
  expect_logic_error(
      [&] {
        dist::stencil_reduce_members(poisson_dot(), {dp, dw}, member_slots(dp), 2);
      },
      {"stencil_reduce_members", "from element 2"});
  const std::size_t huge = std::numeric_limits<std::size_t>::max();
  expect_logic_error(
      [&] {
        dist::stencil_reduce_members(poisson_dot(), {dp, dw}, member_slots(dp), huge);
      },
      {"stencil_reduce_members", fmt::format("from element {}", huge)});
  expect_logic_error([&] { dist::combine_members(dp, fewer, ReduceOp::sum); },
                     {"combine_members", "per-member array"});
  expect_logic_error([&] { dist::combine_members(1.0, member_slots(dp), ReduceOp::sum); },
                     {"combine_members", "a scalar"});
  if (dp.local_size() > 1) {
    std::vector<Array> mixed = member_slots(dp);
    mixed[1] = Array::zeros(dp.queue(), {3}, Dtype::float64, dp.block(1).device_idx);
    expect_logic_error([&] { dist::combine_members(dp, mixed, ReduceOp::sum); },
                       {"combine_members", "values[1]"});
  }
  const std::vector<Array> v = member_slots(dp);
  dist::stencil_reduce_members(poisson_dot(), {dp, dw}, v, 1);
  dist::combine_members(dp, v, ReduceOp::sum);
  const std::vector<double> got = device_values(v, dp, 2, Dtype::float64, "after the refusals");
  EXPECT_EQ(got[1], pap);
  EXPECT_TRUE(rows_match(dw, ap));
}

// ---- per-member arrays as operands
// ----------------------------------------------------------------

// y = a[0] * x + a[1], a computed on the devices (sums of two arrays), on DistArrays of every
// split (empty members included) and on GridArrays.
TEST_P(DistDeviceValues, PerMemberArraysInElementwise) {
  const std::size_t M = s_.M();
  const ElementwiseKernel affine("raw double a, double x", "double y", "y = a[0] * x + a[1]",
                                 {.name = "dv_affine"});
  for (std::size_t n : {std::size_t{1001}, std::size_t{2 * M + 1}}) {
    const auto x = seeded_values<double>(n, 81, true), u = seeded_values<double>(n, 82, true),
               v = seeded_values<double>(n, 83, true);
    double su = 0, sv = 0;
    for (std::size_t i = 0; i < n; ++i) {
      su += u[i];
      sv += v[i];
    }
    std::vector<double> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = su * x[i] + sv;
    for (const auto& [split, name] : member_splits(M, n)) {
      const DistArray dx = make_dist(s_, Shape{n}, split, x),
                      du = make_dist(s_, Shape{n}, split, u),
                      dv = make_dist(s_, Shape{n}, split, v);
      const DistArray dy(*s_.comm, Shape{n}, Dtype::float64, split);
      const std::vector<Array> a = dist::sums_to_devices({du, dv});
      dist::elementwise(affine, {a, dx, dy});
      EXPECT_TRUE(rows_match(dy, want)) << "n " << n << " " << name;
    }
  }
  for (const GridOptions& options :
       {GridOptions{.halo = {1}}, GridOptions{.grid = {1, M}, .halo = {2, 1}}}) {
    const GridLayout layout = GridLayout::over(*s_.comm, {17, 9}, options);
    const std::size_t n = layout.size();
    const auto x = seeded_values<double>(n, 84, true), u = seeded_values<double>(n, 85, true);
    double su = 0, uu = 0;
    for (std::size_t i = 0; i < n; ++i) {
      su += u[i];
      uu += u[i] * u[i];
    }
    std::vector<double> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = su * x[i] + uu;
    const GridArray gx = make_grid(s_, layout, x), gu = make_grid(s_, layout, u);
    const GridArray gy(*s_.comm, layout, Dtype::float64);
    const ReductionKernel sum_k("double u", "double s", "u", "a + b", "0", {.name = "dv_sum"});
    const ReductionKernel sq_k("double u", "double s", "u * u", "a + b", "0", {.name = "dv_sq"});
    const std::vector<Array> a =
        dist::reduce_to_devices({{sum_k, {gu}}, {sq_k, {gu}}}, ReduceOp::sum);
    dist::elementwise(affine, {a, gx, gy});
    EXPECT_TRUE(grid_matches(gy, want)) << "grid " << to_string(layout.shape());
  }
}

// A dot product scaled by a value on the devices, in a reduction's operands (both modes, and in a
// batch); and a stencil reading one (w = s[0] * (neighbours' sum)).
TEST_P(DistDeviceValues, PerMemberArraysInReductionsAndStencils) {
  const std::size_t n = 4099;
  const auto x = seeded_values<double>(n, 91, true), y = seeded_values<double>(n, 92, true);
  double xy = 0, xx = 0;
  for (std::size_t i = 0; i < n; ++i) {
    xy += x[i] * y[i];
    xx += x[i] * x[i];
  }
  const ReductionKernel scaled_dot("double x, double y, raw double s", "double out", "s[1] * x * y",
                                   "a + b", "0", {.name = "dv_scaled_dot"});
  for (const auto& [split, name] : member_splits(s_.M(), n)) {
    const DistArray dx = make_dist(s_, Shape{n}, split, x), dy = make_dist(s_, Shape{n}, split, y);
    const std::vector<Array> s = dist::dots_to_devices({{dx, dy}, {dx, dx}});  // {x.y, x.x}
    for (bool det : {false, true}) {
      const std::string what = name + (det ? " deterministic" : " fast");
      const std::vector<double> got = device_values(
          dist::reduce_to_devices({{scaled_dot, {dx, dy, s}}, {scaled_dot, {dx, dx, s}}},
                                  ReduceOp::sum, {.deterministic = det}),
          dx, 2, Dtype::float64, what);
      // x.x * (x . y): the products x.x * x_i * y_i are exact (multiples of 1/16 below 2^40).
      EXPECT_EQ(got[0], xx * xy) << what;
      EXPECT_EQ(got[1], xx * xx) << what;
      const std::vector<Array> one =
          dist::reduce(scaled_dot, {dx, dy, s}, ReduceOp::sum, {.deterministic = det});
      EXPECT_EQ(device_values(one, dx, 1, Dtype::float64, what)[0], xx * xy) << what;
    }
  }
  // On grids, a split along axis 1 included (the deterministic mode reduces slab copies of the
  // grids, the per-member arrays going with them).
  for (const GridOptions& options : {GridOptions{.halo = {1}}, GridOptions{.grid = {1, s_.M()}}}) {
    const GridLayout layout = GridLayout::over(*s_.comm, {23, 41}, options);
    const std::size_t m = layout.size();
    const auto gxv = seeded_values<double>(m, 93, true), gyv = seeded_values<double>(m, 94, true);
    double gxy = 0, gyy = 0;
    for (std::size_t i = 0; i < m; ++i) {
      gxy += gxv[i] * gyv[i];
      gyy += gyv[i] * gyv[i];
    }
    const GridArray gx = make_grid(s_, layout, gxv), gy = make_grid(s_, layout, gyv);
    const std::vector<Array> s = dist::dots_to_devices({{gx, gy}, {gy, gy}});  // {x.y, y.y}
    for (bool det : {false, true}) {
      const std::string what =
          fmt::format("grid {}{}", to_string(layout.grid()), det ? " deterministic" : " fast");
      const std::vector<double> got =
          device_values(dist::reduce_to_devices({{scaled_dot, {gx, gy, s}}}, ReduceOp::sum,
                                                {.deterministic = det}),
                        gx, 1, Dtype::float64, what);
      EXPECT_EQ(got[0], gyy * gxy) << what;
    }
  }
  // A stencil's raw parameter gets the per-member array whole (its element 0, not the block's
  // first point).
  const std::size_t rows = 9, cols = 5;
  std::vector<double> u(rows * cols), want(rows * cols);
  for (std::size_t g = 0; g < u.size(); ++g) u[g] = static_cast<double>(g % 5);
  double su = 0;
  for (double v : u) su += v;
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      const double up = i > 0 ? u[(i - 1) * cols + j] : 0.0;
      const double down = i + 1 < rows ? u[(i + 1) * cols + j] : 0.0;
      want[i * cols + j] = su * (up + down);
    }
  }
  const StencilKernel k("double u, raw double s", "double w",
                        "w = s[0] * ((gidx[0] > 0 ? u(-1, 0) : 0.0) + "
                        "(gidx[0] + 1 < gshape[0] ? u(1, 0) : 0.0))",
                        {.name = "dv_scaled_neighbours"});
  const DistArray du = make_dist(s_, Shape{rows, cols}, RowSplit::even(), u, {.width = 1});
  const DistArray dw(*s_.comm, Shape{rows, cols}, Dtype::float64, RowSplit::even(), {.width = 1});
  du.exchange_halos();
  const std::vector<Array> s = dist::sums_to_devices({du});
  dist::stencil(k, {du, s, dw});
  EXPECT_TRUE(rows_match(dw, want)) << "dist::stencil";
  const GridLayout layout = GridLayout::over(*s_.comm, {rows, cols}, {.halo = {1}});
  const GridArray gu = make_grid(s_, layout, u);
  const GridArray gw(*s_.comm, layout, Dtype::float64);
  gu.exchange_halos();
  const std::vector<Array> gs = dist::sums_to_devices({gu});
  dist::stencil(k, {gu, gs, gw});
  EXPECT_TRUE(grid_matches(gw, want)) << "dist::stencil on a grid";
}

// CG on a 1-D Poisson problem (A = tridiag(-1, 2, -1), b = 1) whose scalars never leave the
// devices: p . A p by stencil_reduce_to_devices, r . r by dots_to_devices, alpha and beta computed
// by the kernels that read them. Only x is read at the end, against the same iteration on the host
// (and A x against b: CG on n unknowns converges in n steps).
TEST_P(DistDeviceValues, ConjugateGradientWithoutHostReads) {
  const std::size_t n = 50;
  const std::vector<double> b(n, 1.0);
  const StencilKernel apply(
      "double p", "double w",
      "w = 2 * p - (gidx[0] > 0 ? p(-1) : 0.0) - (gidx[0] + 1 < gshape[0] ? p(1) : 0.0)",
      {.name = "dv_cg_apply", .reduction = StencilReduction{.map = "p * w"}});
  const ElementwiseKernel update(
      "raw double rr, raw double pw, double p, double w, double x, "
      "double r",
      "double xo, double ro",
      "const double alpha = rr[0] / pw[0]; xo = x + alpha * p; "
      "ro = r - alpha * w",
      {.name = "dv_cg_step"});
  const ElementwiseKernel direction("raw double rn, raw double ro, double r, double p", "double po",
                                    "po = r + rn[0] / ro[0] * p", {.name = "dv_cg_direction"});
  // The host's CG, in the same order of operations.
  std::vector<double> hx(n, 0.0), hr = b, hp = b, hw(n);
  auto hdot = [](const std::vector<double>& u, const std::vector<double>& v) {
    double s = 0;
    for (std::size_t i = 0; i < u.size(); ++i) s += u[i] * v[i];
    return s;
  };
  double hrr = hdot(hr, hr);
  for (std::size_t it = 0; it < n; ++it) {
    for (std::size_t i = 0; i < n; ++i)
      hw[i] = 2 * hp[i] - (i > 0 ? hp[i - 1] : 0.0) - (i + 1 < n ? hp[i + 1] : 0.0);
    const double alpha = hrr / hdot(hp, hw);
    for (std::size_t i = 0; i < n; ++i) {
      hx[i] += alpha * hp[i];
      hr[i] -= alpha * hw[i];
    }
    const double rn = hdot(hr, hr);
    if (rn == 0) break;
    for (std::size_t i = 0; i < n; ++i) hp[i] = hr[i] + rn / hrr * hp[i];
    hrr = rn;
  }
  // The exact solution: x_i = (i + 1) (n - i) / 2.
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_NEAR(hx[i], 0.5 * static_cast<double>((i + 1) * (n - i)), 1e-8) << "host CG, " << i;
  }
  for (const auto& [split, name] : member_splits(s_.M(), n)) {
    if (name == "last" && s_.M() > 1) continue;  // a halo is filled from a neighbour with rows
    const Halo halo{.width = 1};
    const DistArray x = make_dist(s_, Shape{n}, split, std::vector<double>(n, 0.0), halo);
    const DistArray r = make_dist(s_, Shape{n}, split, b, halo);
    const DistArray p = make_dist(s_, Shape{n}, split, b, halo);
    const DistArray w(*s_.comm, Shape{n}, Dtype::float64, split, halo);
    std::vector<Array> rr = dist::dots_to_devices({{r, r}});
    for (std::size_t it = 0; it < n; ++it) {
      p.exchange_halos();
      const std::vector<Array> pw = dist::stencil_reduce_to_devices(apply, {p, w}, ReduceOp::sum);
      dist::elementwise(update, {rr, pw, p, w, x, r, x, r});
      std::vector<Array> rn = dist::dots_to_devices({{r, r}});
      dist::elementwise(direction, {rn, rr, r, p, p});
      rr = std::move(rn);
    }
    EXPECT_TRUE(rows_match(x, hx, 1e-9)) << name;
    const std::vector<double> last = device_values(rr, x, 1, Dtype::float64, name);
    EXPECT_LT(last[0], 1e-16) << name << ": r . r after n steps";
  }
}

// ---- bad calls
// ------------------------------------------------------------------------------------

// Every rank passes the same kind of bad operands: LogicError naming the call on every rank; then
// the operands are still usable and a correct call gives the right values.
TEST_P(DistDeviceValues, BadPerMemberArraysRaiseAndTheOperandsStayUsable) {
  const std::size_t n = 101;
  const auto x = seeded_values<double>(n, 101, true);
  double sx = 0, xx = 0;
  for (double v : x) {
    sx += v;
    xx += v * v;
  }
  const DistArray dx = make_dist(s_, Shape{n}, RowSplit::even(), x);
  const DistArray dy(*s_.comm, Shape{n}, Dtype::float64);
  const ElementwiseKernel affine("raw double a, double x", "double y", "y = a[0] * x",
                                 {.name = "dv_bad_affine"});
  const ReductionKernel scaled("double x, raw double s", "double out", "s[0] * x", "a + b", "0",
                               {.name = "dv_bad_scaled"});
  const StencilKernel st("double u, raw double s", "double w", "w = s[0] * u",
                         {.name = "dv_bad_stencil"});
  const std::vector<Array> good = dist::sums_to_devices({dx});
  // One array too many.
  std::vector<Array> extra = good;
  extra.push_back(good.front());
  expect_logic_error(
      [&] {
        dist::elementwise(affine, {extra, dx, dy});
      },
      {"dist::elementwise", "per-member", "local member"}, "size");
  expect_logic_error(
      [&] {
        (void)dist::reduce_to_devices({{scaled, {dx, extra}}}, ReduceOp::sum);
      },
      {"dist::reduce_to_devices", "per-member"}, "size in a reduction");
  expect_logic_error(
      [&] {
        dist::stencil(st, {dx, extra, dy});
      },
      {"dist::stencil", "per-member"}, "size in a stencil");
  // Per-member arrays for a stencil's field parameter (not raw): they would be read around the
  // point, outside the one-element arrays.
  const StencilKernel field_st("double u, double s", "double w", "w = s(0) * u",
                               {.name = "dv_bad_field"});
  expect_logic_error(
      [&] {
        dist::stencil(field_st, {dx, good, dy});
      },
      {"dist::stencil", "per-member", "field parameter", "raw"}, "field parameter");
  // An array of another context (a context of its own over the same device).
  const Context other = Context::from_devices(dx.queue().context().device(dx.block(0).device_idx));
  std::vector<Array> foreign = good;
  foreign[0] = Array::zeros(Queue(other), {1}, Dtype::float64);
  expect_logic_error(
      [&] {
        dist::elementwise(affine, {foreign, dx, dy});
      },
      {"dist::elementwise", "another context", "block 0"}, "context");
  expect_logic_error(
      [&] {
        (void)dist::reduce(scaled, {dx, foreign}, ReduceOp::sum);
      },
      {"dist::reduce", "another context"}, "context in dist::reduce");
  // Arrays on the wrong devices (a rank with two members: swapped).
  if (s_.L() > 1) {
    std::vector<Array> swapped = good;
    std::swap(swapped[0], swapped[1]);
    expect_logic_error(
        [&] {
          dist::elementwise(affine, {swapped, dx, dy});
        },
        {"dist::elementwise", "block 0", "device"}, "devices");
  }
  // Per-member arrays where distributed operands are needed, and the batch's refusals.
  expect_logic_error(
      [&] {
        (void)dist::dots_to_devices({{good, dx}});
      },
      {"dist::dots_to_devices", "per-member arrays where an array"}, "dot operand");
  expect_logic_error(
      [&] {
        (void)dist::reduce_to_devices({{scaled, {1.0, good}}}, ReduceOp::sum);
      },
      {"dist::reduce_to_devices", "per-member"}, "no distributed operand");
  expect_logic_error(
      [&] {
        (void)dist::update_and_reduce_to_devices(cg_update(), {dx, dx, 0.5, dx, good},
                                                 ReduceOp::sum);
      },
      {"dist::update_and_reduce_to_devices", "per-member arrays"}, "updated operand");
  expect_logic_error(
      [&] {
        (void)dist::sums_to_devices({dx, dx, dx, dx, dx, dx, dx, dx, dx});
      },
      {"dist::sums_to_devices", "64 bytes"}, "batch size");
  const DistArray f(*s_.comm, Shape{n}, Dtype::float32);
  expect_logic_error(
      [&] {
        (void)dist::sums_to_devices({dx, f});
      },
      {"dist::sums_to_devices", "one dtype"}, "dtypes");
  const StencilKernel red("double u", "double w", "w = u",
                          {.name = "dv_bad_red", .reduction = StencilReduction{.map = "u"}});
  expect_logic_error(
      [&] {
        (void)dist::stencil_reduce_to_devices(red, {dx, dy}, ReduceOp::sum, StencilRegion::all,
                                              {.deterministic = true});
      },
      {"dist::stencil_reduce_to_devices", "no deterministic mode"}, "deterministic stencil");
  // What a user does next: the same calls with the right arrays.
  dist::elementwise(affine, {good, dx, dy});
  std::vector<double> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = sx * x[i];
  EXPECT_TRUE(rows_match(dy, want));
  EXPECT_EQ(device_values(dist::reduce_to_devices({{scaled, {dx, good}}}, ReduceOp::sum), dx, 1,
                          Dtype::float64, "after")[0],
            sx * sx);
  EXPECT_EQ(dist::dots({{dx, dx}})[0], xx);
  EXPECT_EQ(device_values(dist::sums_to_devices({dx}), dx, 1, Dtype::float64, "after")[0], sx);
}

}  // namespace dist_device_values_test
}  // namespace

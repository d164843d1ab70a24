// SPDX-License-Identifier: BSD-3-Clause
#include "heat_solver3d.hpp"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cmath>
#include <numbers>
#include <optional>
#include <span>
#include <string>

#include <fmt/format.h>
#include <skein/ctypes.hpp>
#include <skein/dist_reductions.hpp>
#include <skein/error.hpp>

#include "heat_grid_kernels.hpp"

namespace skein::heat {

namespace {

double grid_rounded(Dtype dtype, double v) {
  return dtype == Dtype::float32 ? static_cast<double>(static_cast<float>(v)) : v;
}

[[noreturn]] void grid_refuse(const char* call, std::string what, std::string hint = {}) {
  throw LogicError(ErrorInfo{.what = std::move(what), .call = call, .hint = std::move(hint)});
}

constexpr std::size_t grid_shell_local = 256;

std::size_t grid_round_up(std::size_t v, std::size_t m) { return (v + m - 1) / m * m; }

// Interior extents of a block as (nz, ny, nx), nz = 1 in 2-D.
std::array<std::size_t, 3> grid_extents3(const GridBlock& b) {
  if (b.extent.size() == 3) return {b.extent[0], b.extent[1], b.extent[2]};
  return {1, b.extent[0], b.extent[1]};
}

// Points per work item along y: COLUMN of the kernel source.
std::size_t grid_column(GridKernel kernel) {
  return kernel == GridKernel::column2 ? 2 : kernel == GridKernel::column4 ? 4 : 1;
}

// Refuses a kernel whose ring of `planes` tiles with their x/y halo ((local_x + 2) x (local_y + 2)
// values each) passes 48 KiB of local memory (the CUDA limit for a static array).
void grid_check_ring(const GridArray& field, const GridTile& tile, std::size_t planes,
                     const char* kernel, const char* hint) {
  const std::size_t ring =
      planes * (tile.local_y + 2) * (tile.local_x + 2) * itemsize(field.dtype());
  if (ring <= 48 * 1024) return;
  grid_refuse(
      "skein::heat::GridStencil",
      fmt::format("the {} kernel's tile of {} x {} items needs {} bytes of local memory ({} "
                  "planes of {} x {} {} values)",
                  kernel, tile.local_x, tile.local_y, ring, planes, tile.local_x + 2,
                  tile.local_y + 2, ctype(field.dtype())),
      hint);
}

// A tile's work group as (x, y) items: with two steps per launch a ring of one item around the
// local_x x local_y that store (they compute the first step there).
std::array<std::size_t, 2> grid_group(const GridTile& tile) {
  const std::size_t ring = tile.steps == 2 ? 2 : 0;
  return {tile.local_x + ring, tile.local_y + ring};
}

// The kernel of compile_grid_stencil's program that `tile` runs.
const char* grid_kernel_name(const GridTile& tile) {
  return tile.steps == 2 ? "heat_step2_grid" : "heat_step_grid";
}

Program compile_grid_stencil(const GridArray& field, const GridTile& tile) {
  const Queue& queue = field.queue();
  // The two-step kernel's ring (4 planes of (X + 2) x (Y + 2) values, at most 1024 items) stays
  // within 32 KiB for 8-byte values: grid_check_tile bounds it.
  if (tile.kernel == GridKernel::shared && field.layout().ndim() == 3) {
    grid_check_ring(field, tile, 3, "shared",
                    "give a smaller --tile3d (at most 48 KiB, e.g. 64x4x16) or --kernel3d march");
  }
  const std::string t(ctype(field.dtype()));
  ProgramOptions options;
  options.name = "skein-heat grid stencil";
  options.device_idxs = queue.device_idxs();
  if (queue.context().api().id() == ApiId::cuda) options.compiler_options.push_back("--fmad=false");
  return Program::from_template(
      queue.context(), grid_stencil_source,
      {{"T", t},
       {"DIMS", std::to_string(field.layout().ndim())},
       {"HALO", std::to_string(field.layout().halo(0))},
       {"STEPS", std::to_string(tile.steps)},
       {"ZCHUNK", std::to_string(tile.zchunk)},
       {"SHARED", tile.kernel == GridKernel::shared ? "1" : "0"},
       {"COLUMN", std::to_string(grid_column(tile.kernel))},
       {"LX", std::to_string(tile.local_x)},
       {"LY", std::to_string(tile.local_y)},
       {"UNROLL_PRAGMA",
        tile.unroll > 1 ? "#pragma unroll " + std::to_string(tile.unroll) : std::string()}},
      options);
}

// The box kernel over one box per block (`box(l)`: its extents (z, y, x); none launched where one
// is empty), on `queue`.
template <class Box>
PreparedKernel prepare_box_kernel(const Program& program, const GridArray& field,
                                  const Queue& queue, const GridTile& tile, Box&& box) {
  const auto [gx, gy] = grid_group(tile);
  const WorkSize local{gx, gy, 1};
  MultiDevice<WorkSize> global;
  for (std::size_t d : queue.device_idxs()) global.set(d, local);  // prepare() wants one per device
  for (std::size_t l = 0; l < field.local_size(); ++l) {
    const LocalGridBlock& b = field.block(l);
    if (b.block.empty()) continue;
    const std::array<std::size_t, 3> e = box(l);
    const std::size_t groups_z = (e[0] + tile.zchunk - 1) / tile.zchunk;
    if (groups_z > 65535) {
      grid_refuse(
          "skein::heat::GridStencil", fmt::format("a block of {} planes", e[0]),
          "use a process grid with more members along z (CUDA launches at most 65535 along z)");
    }
    if (e[0] * e[1] * e[2] == 0) continue;
    const std::size_t column = field.layout().ndim() == 3 ? grid_column(tile.kernel) : 1;
    const std::size_t groups_x = (e[2] + tile.local_x - 1) / tile.local_x;
    const std::size_t groups_y = ((e[1] + column - 1) / column + tile.local_y - 1) / tile.local_y;
    global.set(b.device_idx, WorkSize{groups_x * local[0], groups_y * local[1], groups_z});
  }
  return program.kernel(grid_kernel_name(tile))
      .prepare(queue, LaunchSizes(std::move(global)), LaunchSizes(local));
}

}  // namespace

// --- GridSplit ---------------------------------------------------------------------------------

GridSplit GridSplit::of(const GridLayout& layout, const LocalGridBlock& b, std::size_t depth) {
  GridSplit s;
  s.extent = grid_extents3(b.block);
  s.begin = {0, 0, 0};
  s.end = s.extent;
  if (b.block.empty()) return s;
  const std::size_t first = 3 - layout.ndim();  // the layout's axis a is axis first + a here
  for (std::size_t a = 0; a < layout.ndim(); ++a) {
    const bool lower =
        layout.neighbour(b.member, a, -1) >= 0 || layout.lower(a).kind != BoundaryKind::open;
    const bool upper =
        layout.neighbour(b.member, a, +1) >= 0 || layout.upper(a).kind != BoundaryKind::open;
    s.begin[first + a] = lower ? depth : 0;
    s.end[first + a] =
        s.extent[first + a] < (upper ? depth : 0) ? 0 : s.extent[first + a] - (upper ? depth : 0);
  }
  for (std::size_t a = 0; a < 3; ++a) {
    if (s.end[a] <= s.begin[a]) {  // no interior: the shell is the whole block, given as planes
      s.begin = {s.extent[0], 0, 0};
      s.end = {s.extent[0], s.extent[1], s.extent[2]};
      break;
    }
  }
  return s;
}

std::size_t GridSplit::interior_points() const {
  return (end[0] - begin[0]) * (end[1] - begin[1]) * (end[2] - begin[2]);
}

std::size_t GridSplit::shell_points() const {
  return extent[0] * extent[1] * extent[2] - interior_points();
}

// --- GridProblem -------------------------------------------------------------------------------

GridProblem GridProblem::make(std::vector<std::size_t> n, std::vector<int> k, BoundaryKind walls,
                              double alpha, double dt_factor, Dtype dtype) {
  const char* call = "skein::heat::GridProblem::make";
  if (n.size() < 2 || n.size() > 3 || k.size() != n.size())
    grid_refuse(call, "the grid needs 2 or 3 axes and a mode each");
  if (walls != BoundaryKind::open && walls != BoundaryKind::periodic &&
      walls != BoundaryKind::reflect) {
    grid_refuse(call, "the walls must be open, periodic or reflect");
  }
  static const char* axis_name[3][3] = {{"y", "x", ""}, {"z", "y", "x"}};
  for (std::size_t a = 0; a < n.size(); ++a) {
    const char* an = axis_name[n.size() - 2][a];
    if (n[a] == 0) grid_refuse(call, fmt::format("the grid has no points along {}", an));
    const long long lo = walls == BoundaryKind::open ? 1 : 0;
    const long long hi = walls == BoundaryKind::open ? static_cast<long long>(n[a])
                                                     : static_cast<long long>(n[a]) - 1;
    if (k[a] < lo || k[a] > hi) {
      grid_refuse(call,
                  fmt::format("the mode {} along {} is outside [{}, {}] ({} walls, {} points)",
                              k[a], an, lo, hi, name(walls), n[a]),
                  "give modes within the range (--modes KX,KY, --mode-z KZ)");
    }
  }
  if (!(alpha > 0)) grid_refuse(call, fmt::format("alpha = {} (it must be > 0)", alpha));
  if (!(dt_factor > 0 && dt_factor <= 0.25)) {
    grid_refuse(call, fmt::format("dt_factor = {} (it must be in (0, 0.25])", dt_factor),
                "beyond 0.25 the explicit step is no longer a contraction and may be unstable");
  }
  GridProblem p;
  p.n = std::move(n);
  p.k = std::move(k);
  p.walls = walls;
  p.alpha = alpha;
  p.dtype = dtype;
  double hmin = 1;
  for (std::size_t a = 0; a < p.n.size(); ++a) hmin = std::min(hmin, p.h(a));
  p.dt = dt_factor * (2.0 / static_cast<double>(p.n.size())) * hmin * hmin / alpha;
  return p;
}

double GridProblem::r(std::size_t axis) const {
  return grid_rounded(dtype, alpha * dt / (h(axis) * h(axis)));
}

double GridProblem::c0() const {
  double sum = 0;
  for (std::size_t a = 0; a < n.size(); ++a) sum += r(a);
  return grid_rounded(dtype, 1.0 - 2.0 * sum);
}

double GridProblem::theta(std::size_t axis) const {
  const double pi = std::numbers::pi;
  const double ka = k[axis], na = static_cast<double>(n[axis]);
  switch (walls) {
    case BoundaryKind::periodic: return 2 * pi * ka / na;
    case BoundaryKind::reflect: return pi * ka / na;
    default: return pi * ka * h(axis);
  }
}

double GridProblem::lambda() const {
  long double l = c0();
  for (std::size_t a = 0; a < n.size(); ++a)
    l += 2.0L * r(a) * std::cos(static_cast<long double>(theta(a)));
  return static_cast<double>(l);
}

double GridProblem::mode(std::size_t axis, std::size_t i) const {
  const double pi = std::numbers::pi;
  const double ka = k[axis], na = static_cast<double>(n[axis]), x = static_cast<double>(i);
  switch (walls) {
    case BoundaryKind::periodic: return std::cos(2 * pi * ka * x / na);
    case BoundaryKind::reflect: return std::cos(pi * ka * (x + 0.5) / na);
    default: return std::sin(pi * ka * (x + 1) * h(axis));
  }
}

double GridProblem::tolerance(std::int64_t steps, double amplitude) const {
  const double l = std::abs(lambda());
  const double s = static_cast<double>(steps);
  const double sum = l < 1 ? (1 - std::pow(l, s)) / (1 - l) : s;
  const double eps = dtype == Dtype::float32 ? 0x1p-24 : 0x1p-53;
  // One more rounding per step than in 2-D for the z terms: 10 instead of 8 units.
  return 10 * eps * amplitude * (2 + sum);
}

const char* name(BoundaryKind kind) {
  switch (kind) {
    case BoundaryKind::open: return "open";
    case BoundaryKind::periodic: return "periodic";
    case BoundaryKind::reflect: return "reflect";
    case BoundaryKind::constant: return "constant";
  }
  return "?";
}

const char* name(GridKernel kernel) {
  switch (kernel) {
    case GridKernel::march: return "march";
    case GridKernel::shared: return "shared";
    case GridKernel::column2: return "column2";
    case GridKernel::column4: return "column4";
  }
  return "?";
}

GridKernel parse_grid_kernel(std::string_view text) {
  for (GridKernel k :
       {GridKernel::march, GridKernel::shared, GridKernel::column2, GridKernel::column4}) {
    if (text == name(k)) return k;
  }
  grid_refuse("skein-heat", fmt::format("--kernel3d is '{}'", text),
              "give march (the default), shared, column2 or column4");
}

BoundaryKind parse_walls(std::string_view text) {
  for (BoundaryKind k : {BoundaryKind::open, BoundaryKind::periodic, BoundaryKind::reflect}) {
    if (text == name(k)) return k;
  }
  grid_refuse("skein::heat::parse_walls", fmt::format("the boundary '{}' is not known", text),
              "give open, periodic or reflect");
}

std::vector<std::size_t> parse_grid(std::string_view text, std::size_t dims) {
  if (text.empty() || text == "auto") return std::vector<std::size_t>(dims, 0);
  std::vector<std::size_t> grid;
  std::size_t pos = 0;
  bool ok = true;
  while (ok) {
    const std::size_t x = text.find('x', pos);
    const std::string_view part =
        text.substr(pos, x == std::string_view::npos ? std::string_view::npos : x - pos);
    std::size_t v = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    ok = !part.empty() && ec == std::errc() && end == part.data() + part.size();
    grid.push_back(v);
    if (x == std::string_view::npos) break;
    pos = x + 1;
  }
  if (!ok || grid.size() != dims) {
    grid_refuse(
        "skein::heat::parse_grid",
        fmt::format("--grid '{}' is not a process grid of {} axes", text, dims),
        dims == 3 ? "give PxQxR, e.g. --grid 2x2x1 (0 for an axis the app chooses), or leave it out"
                  : "give PxQ, e.g. --grid 2x2 (0 for an axis the app chooses), or leave it out");
  }
  return grid;
}

GridOptions grid_options(const GridProblem& problem, std::vector<std::size_t> grid,
                         std::size_t halo) {
  GridOptions o;
  o.grid = std::move(grid);
  o.halo = {halo};
  o.stencil = halo > 1 ? skein::Stencil::box : skein::Stencil::star;
  const Boundary b{problem.walls, 0};
  o.lower = {b};
  o.upper = {b};
  return o;
}

// --- GridStencil -------------------------------------------------------------------------------

namespace {

// Launches `kernel` on one device with the sizes given, then the problem's coefficients in the
// dtype: c0, rz, ry, rx (rz 0 in 2-D).
template <class... Sizes>
void grid_launch(const PreparedKernel& kernel, const GridProblem& p, std::size_t device_idx,
                 const Array& dst, const Array& src, Sizes... sizes) {
  const bool three = p.ndim() == 3;
  const double rz = three ? p.r(0) : 0.0;
  const double ry = p.r(three ? 1 : 0), rx = p.r(three ? 2 : 1), c0 = p.c0();
  const std::size_t dev[1] = {device_idx};
  if (p.dtype == Dtype::float32) {
    kernel.on_devices(dev, dst, src, sizes..., static_cast<float>(c0), static_cast<float>(rz),
                      static_cast<float>(ry), static_cast<float>(rx));
  } else {
    kernel.on_devices(dev, dst, src, sizes..., c0, rz, ry, rx);
  }
}

std::uint32_t u32(std::size_t v) { return static_cast<std::uint32_t>(v); }

}  // namespace

namespace {

std::vector<GridSplit> grid_splits(const GridArray& field) {
  std::vector<GridSplit> splits;
  for (const LocalGridBlock& b : field.blocks())
    splits.push_back(GridSplit::of(field.layout(), b, field.layout().halo(0)));
  return splits;
}

// Slab k (0-5: below and above the interior box along z, then y, then x) of a block's shell as
// {z0, y0, x0, ez, ey, ex}: the shell of `s` is their union, each point in one of them.
std::array<std::size_t, 6> grid_slab(const GridSplit& s, std::size_t k) {
  const auto& n = s.extent;
  const auto& b = s.begin;
  const auto& e = s.end;
  switch (k) {
    case 0: return {0, 0, 0, b[0], n[1], n[2]};
    case 1: return {e[0], 0, 0, n[0] - e[0], n[1], n[2]};
    case 2: return {b[0], 0, 0, e[0] - b[0], b[1], n[2]};
    case 3: return {b[0], e[1], 0, e[0] - b[0], n[1] - e[1], n[2]};
    case 4: return {b[0], b[1], 0, e[0] - b[0], e[1] - b[1], b[2]};
    default: return {b[0], b[1], e[2], e[0] - b[0], e[1] - b[1], n[2] - e[2]};
  }
}

// The sides of each local block at an open wall, as heat_step2_grid's `open` bits: x below 1,
// above 2, y 4 and 8, z 16 and 32 (3-D).
std::vector<unsigned> grid_open_sides(const GridArray& field) {
  const GridLayout& layout = field.layout();
  std::vector<unsigned> sides;
  for (const LocalGridBlock& b : field.blocks()) {
    unsigned bits = 0;
    for (std::size_t a = 0; a < layout.ndim(); ++a) {
      const unsigned shift = 2 * static_cast<unsigned>(layout.ndim() - 1 - a);
      if (layout.neighbour(b.member, a, -1) < 0 && layout.lower(a).kind == BoundaryKind::open)
        bits |= 1u << shift;
      if (layout.neighbour(b.member, a, +1) < 0 && layout.upper(a).kind == BoundaryKind::open)
        bits |= 2u << shift;
    }
    sides.push_back(bits);
  }
  return sides;
}

const Queue& grid_shell_queue(const GridArray& field, const std::optional<Queue>& shell_queue) {
  if (!shell_queue) return field.queue();
  const Queue& queue = field.queue();
  bool fits = shell_queue->context() == queue.context();
  for (std::size_t d : queue.device_idxs()) fits = fits && shell_queue->has_device(d);
  if (!fits) {
    grid_refuse(
        "skein::heat::GridStencil",
        "the shell kernel's queue is of another context, or lacks a device of the field's queue",
        "give a Queue(field.queue().context(), field.queue().device_idxs(), ...)");
  }
  return *shell_queue;
}

// The shell kernel over every block's shell, on `queue` (none launched where a shell is empty).
PreparedKernel prepare_shell_kernel(const Program& program, const GridArray& field,
                                    const Queue& queue, const std::vector<GridSplit>& splits) {
  const WorkSize local{grid_shell_local};
  MultiDevice<WorkSize> global;
  for (std::size_t d : queue.device_idxs()) global.set(d, local);
  for (std::size_t l = 0; l < field.local_size(); ++l) {
    const std::size_t n = splits[l].shell_points();
    if (n > 0) global.set(field.block(l).device_idx, WorkSize{grid_round_up(n, grid_shell_local)});
  }
  return program.kernel("heat_shell_grid")
      .prepare(queue, LaunchSizes(std::move(global)), LaunchSizes(local));
}

const GridArray& grid_check_halo(const GridArray& field) {
  const std::size_t h = field.layout().halo(0);
  for (std::size_t a = 0; a < field.layout().ndim(); ++a) {
    if (field.layout().halo(a) != h || h < 1 || h > 2) {
      grid_refuse("skein::heat::GridStencil",
                  fmt::format("the field's halo along axis {} is {}", a, field.layout().halo(a)),
                  "give the heat field a halo of 1 on every axis, or 2 for two steps per launch "
                  "(grid_options())");
    }
  }
  return field;
}

// `tile` against the field: two steps per launch need a 3-D field with a halo of 2 on a box
// stencil and the march kernel; the shared kernel a halo of 1.
const GridTile& grid_check_fit(const GridArray& field, const GridTile& tile) {
  const GridLayout& layout = field.layout();
  if (tile.steps == 2 &&
      (layout.ndim() != 3 || layout.halo(0) != 2 || layout.stencil() != skein::Stencil::box ||
       tile.kernel != GridKernel::march)) {
    grid_refuse(
        "skein::heat::GridStencil",
        fmt::format("two steps per launch on a {}-D field with a halo of {} ({} stencil) "
                    "and the {} kernel",
                    layout.ndim(), layout.halo(0),
                    layout.stencil() == skein::Stencil::box ? "box" : "star", name(tile.kernel)),
        "give a 3-D field with a halo of 2 (grid_options(problem, grid, 2)) and the march "
        "kernel");
  }
  if (tile.kernel == GridKernel::shared && layout.ndim() == 3 && layout.halo(0) != 1) {
    grid_refuse("skein::heat::GridStencil",
                fmt::format("the shared kernel on a field with a halo of {}", layout.halo(0)),
                "give the shared kernel a field with a halo of 1, or use the march kernel");
  }
  return tile;
}

const GridTile& grid_check_tile(const GridTile& tile) {
  const auto [gx, gy] = grid_group(tile);
  if (tile.local_x == 0 || tile.local_y == 0 || tile.zchunk == 0 || tile.unroll == 0 ||
      tile.local_x > 1024 || tile.local_y > 1024 || gx * gy > 1024 || tile.zchunk > 65536 ||
      tile.unroll > 64 || (tile.steps != 1 && tile.steps != 2)) {
    grid_refuse(
        "skein::heat::GridStencil",
        fmt::format("a tile of {} x {} items over {} planes, unrolled {} times{}", tile.local_x,
                    tile.local_y, tile.zchunk, tile.unroll,
                    tile.steps == 1 ? "" : fmt::format(", {} steps per launch", tile.steps)),
        "give positive sizes, at most 1024 items per work group (two steps per launch: "
        "(X + 2) x (Y + 2)), at most 65536 planes, an unroll of at most 64 and 1 or 2 "
        "steps per launch");
  }
  return tile;
}

// The kernel compiled for `tile`, made to fit every device of the field's queue (see GridStencil):
// the default tile halved along y, then x, until each device runs its work groups; another tile
// that does not fit refused. `tile` is updated to what runs.
Program compile_fitted_stencil(const GridArray& field, GridTile& tile) {
  const bool is_default = tile == default_grid_tile(field.dtype(), tile.steps);
  for (;;) {
    Program program = compile_grid_stencil(field, tile);
    const auto [lx, ly] = grid_group(tile);
    std::size_t limit = 0, device = 0;
    for (std::size_t d : field.queue().device_idxs()) {
      const auto most =
          static_cast<std::size_t>(program.kernel(grid_kernel_name(tile))
                                       .get_attribute(d, KernelAttribute::max_threads_per_block));
      const auto& sizes = field.queue().context().device(d).params().max_local_sizes;
      const bool fits = lx * ly <= most && (sizes.size() < 2 || (lx <= sizes[0] && ly <= sizes[1]));
      if (!fits && (limit == 0 || most < limit)) {
        limit = most;
        device = d;
      }
    }
    if (limit == 0) return program;
    if (!is_default || (tile.local_x == 1 && tile.local_y == 1)) {
      grid_refuse("skein::heat::GridStencil",
                  fmt::format("a tile of {} x {} items: device {} runs at most {} items per work "
                              "group of this kernel",
                              lx, ly, device, limit),
                  "give a smaller --tile3d (e.g. 64x4x16)");
    }
    if (tile.local_y > 1) {
      tile.local_y /= 2;
    } else {
      tile.local_x /= 2;
    }
  }
}

}  // namespace

GridTile default_grid_tile(Dtype dtype, std::size_t steps) {
  GridTile t;
  if (steps == 2) {  // the fastest measured in the app (docs/performance.md, stop 56)
    t.local_x = 30;
    t.local_y = 14;
    t.zchunk = 32;
    t.unroll = dtype == Dtype::float64 ? 4 : 2;
    t.steps = 2;
  } else if (dtype == Dtype::float64) {
    t.zchunk = 2;
    t.unroll = 2;
  }
  return t;
}

GridTile parse_tile(std::string_view text) {
  GridTile t;
  std::size_t x = 0, y = 0, z = 0;
  const std::string s(text);
  char tail = 0;
  if (std::sscanf(s.c_str(), "%zux%zux%zu%c", &x, &y, &z, &tail) != 3) {
    grid_refuse("skein-heat", fmt::format("--tile3d is '{}'", text),
                "give the work group and its march as XxYxZ, e.g. 64x4x16");
  }
  t.local_x = x;
  t.local_y = y;
  t.zchunk = z;
  return grid_check_tile(t);
}

GridStencil::GridStencil(const GridArray& field, const GridProblem& problem,
                         const std::optional<Queue>& shell_queue,
                         const std::optional<GridTile>& tile)
    : problem_(problem),
      splits_(grid_splits(grid_check_halo(field))),
      tile_(
          grid_check_fit(field, grid_check_tile(tile.value_or(default_grid_tile(field.dtype()))))),
      program_(compile_fitted_stencil(field, tile_)),
      kernel_(prepare_box_kernel(program_, field, field.queue(), tile_,
                                 [this](std::size_t l) { return splits_[l].extent; })),
      interior_(prepare_box_kernel(program_, field, field.queue(), tile_,
                                   [this](std::size_t l) {
                                     const GridSplit& s = splits_[l];
                                     return std::array<std::size_t, 3>{s.end[0] - s.begin[0],
                                                                       s.end[1] - s.begin[1],
                                                                       s.end[2] - s.begin[2]};
                                   })),
      shell_(prepare_shell_kernel(program_, field, grid_shell_queue(field, shell_queue), splits_)) {
  if (tile_.steps != 2) return;
  const Queue& slab_queue = grid_shell_queue(field, shell_queue);
  for (std::size_t k = 0; k < 6; ++k) {
    slabs_.push_back(
        prepare_box_kernel(program_, field, slab_queue, tile_, [this, k](std::size_t l) {
          const auto s = grid_slab(splits_[l], k);
          return std::array<std::size_t, 3>{s[3], s[4], s[5]};
        }));
  }
  open_ = grid_open_sides(field);
}

void GridStencil::step(const GridArray& in, const GridArray& out) const {
  for (std::size_t l = 0; l < in.local_size(); ++l) step_block(in, out, l);
}

void GridStencil::step_block(const GridArray& in, const GridArray& out, std::size_t l) const {
  const GridSplit& s = splits_.at(l);
  if (in.block(l).block.empty()) return;
  launch_box(kernel_, in, out, l, {0, 0, 0, s.extent[0], s.extent[1], s.extent[2]});
}

void GridStencil::step_interior(const GridArray& in, const GridArray& out) const {
  for (std::size_t l = 0; l < in.local_size(); ++l) {
    const GridSplit& s = splits_.at(l);
    if (in.block(l).block.empty() || s.interior_points() == 0) continue;
    launch_box(interior_, in, out, l,
               {s.begin[0], s.begin[1], s.begin[2], s.end[0] - s.begin[0], s.end[1] - s.begin[1],
                s.end[2] - s.begin[2]});
  }
}

void GridStencil::step_edges(const GridArray& in, const GridArray& out) const {
  for (std::size_t l = 0; l < in.local_size(); ++l) {
    const LocalGridBlock& b = in.block(l);
    const GridSplit& s = splits_.at(l);
    if (b.block.empty() || s.shell_points() == 0) continue;
    if (tile_.steps == 2) {
      for (std::size_t k = 0; k < 6; ++k) {
        const auto box = grid_slab(s, k);
        if (box[3] * box[4] * box[5] > 0) launch_box(slabs_[k], in, out, l, box);
      }
      continue;
    }
    grid_launch(shell_, problem_, b.device_idx, out.block(l).with_halo, b.with_halo,
                u32(s.extent[0]), u32(s.extent[1]), u32(s.extent[2]), u32(s.begin[0]),
                u32(s.end[0]), u32(s.begin[1]), u32(s.end[1]), u32(s.begin[2]), u32(s.end[2]));
  }
}

void GridStencil::launch_box(const PreparedKernel& kernel, const GridArray& in,
                             const GridArray& out, std::size_t l,
                             const std::array<std::size_t, 6>& box) const {
  const LocalGridBlock& b = in.block(l);
  const auto& n = splits_.at(l).extent;
  if (tile_.steps == 2) {
    grid_launch(kernel, problem_, b.device_idx, out.block(l).with_halo, b.with_halo, u32(n[1]),
                u32(n[2]), u32(box[0]), u32(box[1]), u32(box[2]), u32(box[3]), u32(box[4]),
                u32(box[5]), u32(n[0]), open_.at(l));
  } else {
    grid_launch(kernel, problem_, b.device_idx, out.block(l).with_halo, b.with_halo, u32(n[1]),
                u32(n[2]), u32(box[0]), u32(box[1]), u32(box[2]), u32(box[3]), u32(box[4]),
                u32(box[5]));
  }
}

std::size_t GridStencil::bytes_per_step(const GridArray& field, std::size_t l) const {
  return 2 * field.block(l).block.points() * itemsize(field.dtype());
}

// --- initial condition and checks --------------------------------------------------------------

namespace {

// Calls f(index, coords) for every point of a block, in C order (coords global).
template <class F>
void grid_for_each_point(const GridBlock& b, F&& f) {
  const std::size_t d = b.extent.size();
  std::vector<std::size_t> c(d, 0);
  const std::size_t n = b.points();
  std::vector<std::size_t> g(d);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t a = 0; a < d; ++a) g[a] = b.offset[a] + c[a];
    f(i, g);
    for (std::size_t a = d; a-- > 0;) {
      if (++c[a] < b.extent[a]) break;
      c[a] = 0;
    }
  }
}

double grid_initial_value(const GridProblem& p, const std::vector<std::size_t>& g) {
  double v = 1;
  for (std::size_t a = 0; a < g.size(); ++a) v *= p.mode(a, g[a]);
  return v;
}

template <class T>
void grid_set_initial_as(const GridArray& u, const GridProblem& p) {
  std::vector<T> host;
  for (const LocalGridBlock& b : u.blocks()) {
    if (b.block.empty()) continue;
    host.resize(b.block.points());
    grid_for_each_point(b.block, [&](std::size_t i, const std::vector<std::size_t>& g) {
      host[i] = static_cast<T>(grid_initial_value(p, g));
    });
    b.interior.set(std::span<const T>(host));
  }
}

template <class T>
CheckResult grid_check_as(const GridArray& u, const GridProblem& p, std::int64_t steps) {
  const double discrete = std::pow(p.lambda(), static_cast<double>(steps));
  double error = 0;
  std::vector<T> host;
  for (const LocalGridBlock& b : u.blocks()) {
    if (b.block.empty()) continue;
    host.resize(b.block.points());
    b.interior.get(std::span<T>(host));
    grid_for_each_point(b.block, [&](std::size_t i, const std::vector<std::size_t>& g) {
      const double e = std::abs(static_cast<double>(host[i]) - discrete * grid_initial_value(p, g));
      error = std::isnan(e) ? INFINITY : std::max(error, e);  // NaN: an infinite error
    });
  }
  MPI_Allreduce(MPI_IN_PLACE, &error, 1, MPI_DOUBLE, MPI_MAX, u.communicator().mpi_comm());
  double amplitude = 1;
  for (std::size_t a = 0; a < p.ndim(); ++a) {
    double m = 0;
    for (std::size_t i = 0; i < p.n[a]; ++i) m = std::max(m, std::abs(p.mode(a, i)));
    amplitude *= m;
  }
  CheckResult r;
  r.max_error = error;
  r.amplitude = amplitude;
  r.tolerance = p.tolerance(steps, amplitude);
  r.max_error_continuous = NAN;  // not computed on process grids
  return r;
}

}  // namespace

void set_initial(const GridArray& u, const GridProblem& p) {
  if (p.dtype == Dtype::float32) {
    grid_set_initial_as<float>(u, p);
  } else {
    grid_set_initial_as<double>(u, p);
  }
}

CheckResult check(const GridArray& u, const GridProblem& p, std::int64_t steps) {
  return p.dtype == Dtype::float32 ? grid_check_as<float>(u, p, steps)
                                   : grid_check_as<double>(u, p, steps);
}

double max_difference(const GridArray& a, const GridArray& b) {
  // The ranks agree on it through Skein's batch reduction, timed as every collective is
  // (SKEIN_COLLECTIVE_TIMEOUT): a rank that died leaves the others a TimeoutError, not an
  // MPI_Allreduce that never returns.
  return skein::dist::reduce_values({{max_difference_kernel(), {a, b, INFINITY}}},
                                    skein::ReduceOp::max)
      .at(0);
}

}  // namespace skein::heat

// SPDX-License-Identifier: BSD-3-Clause
#include "heat_solver3d.hpp"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <numbers>
#include <span>
#include <string>

#include <fmt/format.h>
#include <skein/ctypes.hpp>
#include <skein/error.hpp>

namespace skein::heat {

namespace {

double grid_rounded(Dtype dtype, double v) {
  return dtype == Dtype::float32 ? static_cast<double>(static_cast<float>(v)) : v;
}

[[noreturn]] void grid_refuse(const char* call, std::string what, std::string hint = {}) {
  throw LogicError(ErrorInfo{.what = std::move(what), .call = call, .hint = std::move(hint)});
}

// One source for both backends: work item (x, y, z) updates the point (z, y, x) of a block
// ((y, x) in 2-D); `in` and `out` are the blocks with their halo of one cell on every side. The
// expression is the 2-D kernel's with the z terms added last; FP contraction is off (here for
// OpenCL, --fmad=false for NVRTC), so the field does not depend on how the grid is split.
constexpr const char* grid_stencil_source = R"(
#ifdef OPENCL
#pragma OPENCL FP_CONTRACT OFF
#endif
#define DIMS ${DIMS}
typedef ${T} T;

KERNEL void heat_step_grid(GLOBAL_MEM T* RESTRICT out, GLOBAL_MEM const T* RESTRICT in,
                           unsigned int nz, unsigned int ny, unsigned int nx,
                           T c0, T rz, T ry, T rx)
{
    const unsigned int x = (unsigned int)get_global_id(0);
    const unsigned int y = (unsigned int)get_global_id(1);
    const unsigned int z = (unsigned int)get_global_id(2);
    if (x >= nx || y >= ny || z >= nz) return;
    const VSIZE_T sy = (VSIZE_T)nx + 2;
#if DIMS == 3
    const VSIZE_T sz = ((VSIZE_T)ny + 2) * sy;
    const VSIZE_T i = ((VSIZE_T)z + 1) * sz + ((VSIZE_T)y + 1) * sy + x + 1;
    out[i] = c0 * in[i] + rx * (in[i - 1] + in[i + 1]) + ry * (in[i - sy] + in[i + sy])
             + rz * (in[i - sz] + in[i + sz]);
#else
    const VSIZE_T i = ((VSIZE_T)y + 1) * sy + x + 1;
    out[i] = c0 * in[i] + rx * (in[i - 1] + in[i + 1]) + ry * (in[i - sy] + in[i + sy]);
#endif
}
)";

constexpr std::size_t grid_local_x = 32, grid_local_y = 4;

std::size_t grid_round_up(std::size_t v, std::size_t m) { return (v + m - 1) / m * m; }

// Interior extents of a block as (nz, ny, nx), nz = 1 in 2-D.
std::array<std::size_t, 3> grid_extents3(const GridBlock& b) {
  if (b.extent.size() == 3) return {b.extent[0], b.extent[1], b.extent[2]};
  return {1, b.extent[0], b.extent[1]};
}

PreparedKernel prepare_grid_stencil(const GridArray& field) {
  const Queue& queue = field.queue();
  const std::string t(ctype(field.dtype()));
  ProgramOptions options;
  options.name = "skein-heat grid stencil";
  options.device_idxs = queue.device_idxs();
  if (queue.context().api().id() == ApiId::cuda) options.compiler_options.push_back("--fmad=false");
  const Program program = Program::from_template(
      queue.context(), grid_stencil_source, {{"T", t}, {"DIMS", std::to_string(field.layout().ndim())}}, options);
  const WorkSize local{grid_local_x, grid_local_y, 1};
  MultiDevice<WorkSize> global;
  for (std::size_t d : queue.device_idxs()) global.set(d, local);  // prepare() wants one per device
  for (const LocalGridBlock& b : field.blocks()) {
    if (b.block.empty()) continue;
    const auto e = grid_extents3(b.block);
    if (e[0] > 65535) grid_refuse("skein::heat::GridStencil", fmt::format("a block of {} planes", e[0]),
                             "use a process grid with more members along z (CUDA launches at most 65535 along z)");
    global.set(b.device_idx, WorkSize{grid_round_up(e[2], grid_local_x), grid_round_up(e[1], grid_local_y), e[0]});
  }
  return program.kernel("heat_step_grid").prepare(queue, LaunchSizes(std::move(global)), LaunchSizes(local));
}

}  // namespace

// --- GridProblem -------------------------------------------------------------------------------

GridProblem GridProblem::make(std::vector<std::size_t> n, std::vector<int> k, BoundaryKind walls, double alpha,
                              double dt_factor, Dtype dtype) {
  const char* call = "skein::heat::GridProblem::make";
  if (n.size() < 2 || n.size() > 3 || k.size() != n.size()) grid_refuse(call, "the grid needs 2 or 3 axes and a mode each");
  if (walls != BoundaryKind::open && walls != BoundaryKind::periodic && walls != BoundaryKind::reflect) {
    grid_refuse(call, "the walls must be open, periodic or reflect");
  }
  static const char* axis_name[3][3] = {{"y", "x", ""}, {"z", "y", "x"}};
  for (std::size_t a = 0; a < n.size(); ++a) {
    const char* an = axis_name[n.size() - 2][a];
    if (n[a] == 0) grid_refuse(call, fmt::format("the grid has no points along {}", an));
    const long long lo = walls == BoundaryKind::open ? 1 : 0;
    const long long hi = walls == BoundaryKind::open ? static_cast<long long>(n[a]) : static_cast<long long>(n[a]) - 1;
    if (k[a] < lo || k[a] > hi) {
      grid_refuse(call, fmt::format("the mode {} along {} is outside [{}, {}] ({} walls, {} points)", k[a], an, lo, hi,
                               name(walls), n[a]),
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

double GridProblem::r(std::size_t axis) const { return grid_rounded(dtype, alpha * dt / (h(axis) * h(axis))); }

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
  for (std::size_t a = 0; a < n.size(); ++a) l += 2.0L * r(a) * std::cos(static_cast<long double>(theta(a)));
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
    const std::string_view part = text.substr(pos, x == std::string_view::npos ? std::string_view::npos : x - pos);
    std::size_t v = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    ok = !part.empty() && ec == std::errc() && end == part.data() + part.size();
    grid.push_back(v);
    if (x == std::string_view::npos) break;
    pos = x + 1;
  }
  if (!ok || grid.size() != dims) {
    grid_refuse("skein::heat::parse_grid",
           fmt::format("--grid '{}' is not a process grid of {} axes", text, dims),
           dims == 3 ? "give PxQxR, e.g. --grid 2x2x1 (0 for an axis the app chooses), or leave it out"
                     : "give PxQ, e.g. --grid 2x2 (0 for an axis the app chooses), or leave it out");
  }
  return grid;
}

GridOptions grid_options(const GridProblem& problem, std::vector<std::size_t> grid) {
  GridOptions o;
  o.grid = std::move(grid);
  o.halo = {1};
  o.stencil = skein::Stencil::star;
  const Boundary b{problem.walls, 0};
  o.lower = {b};
  o.upper = {b};
  return o;
}

// --- GridStencil -------------------------------------------------------------------------------

GridStencil::GridStencil(const GridArray& field, const GridProblem& problem)
    : problem_(problem), kernel_(prepare_grid_stencil(field)) {
  for (std::size_t a = 0; a < field.layout().ndim(); ++a) {
    if (field.layout().halo(a) != 1) grid_refuse("skein::heat::GridStencil", "the heat field needs a halo of 1 on every axis");
  }
}

void GridStencil::step(const GridArray& in, const GridArray& out) const {
  const bool three = problem_.ndim() == 3;
  const double rz = three ? problem_.r(0) : 0.0;
  const double ry = problem_.r(three ? 1 : 0), rx = problem_.r(three ? 2 : 1), c0 = problem_.c0();
  for (std::size_t l = 0; l < in.local_size(); ++l) {
    const LocalGridBlock& b = in.block(l);
    if (b.block.empty()) continue;
    const auto e = grid_extents3(b.block);
    const std::size_t dev[1] = {b.device_idx};
    const auto nz = static_cast<std::uint32_t>(e[0]), ny = static_cast<std::uint32_t>(e[1]),
               nx = static_cast<std::uint32_t>(e[2]);
    const Array& dst = out.block(l).with_halo;
    if (problem_.dtype == Dtype::float32) {
      kernel_.on_devices(dev, dst, b.with_halo, nz, ny, nx, static_cast<float>(c0), static_cast<float>(rz),
                         static_cast<float>(ry), static_cast<float>(rx));
    } else {
      kernel_.on_devices(dev, dst, b.with_halo, nz, ny, nx, c0, rz, ry, rx);
    }
  }
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

template <class T>
double grid_max_difference_as(const GridArray& a, const GridArray& b) {
  double d = 0;
  std::vector<T> ha, hb;
  for (std::size_t l = 0; l < a.local_size(); ++l) {
    if (a.block(l).block.empty()) continue;
    ha.resize(a.block(l).block.points());
    hb.resize(ha.size());
    a.local(l).get(std::span<T>(ha));
    b.local(l).get(std::span<T>(hb));
    for (std::size_t i = 0; i < ha.size(); ++i) {
      const double e = std::abs(static_cast<double>(ha[i]) - static_cast<double>(hb[i]));
      d = std::isnan(e) ? INFINITY : std::max(d, e);
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, &d, 1, MPI_DOUBLE, MPI_MAX, a.communicator().mpi_comm());
  return d;
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
  return p.dtype == Dtype::float32 ? grid_check_as<float>(u, p, steps) : grid_check_as<double>(u, p, steps);
}

double max_difference(const GridArray& a, const GridArray& b) {
  return a.dtype() == Dtype::float32 ? grid_max_difference_as<float>(a, b) : grid_max_difference_as<double>(a, b);
}

}  // namespace skein::heat

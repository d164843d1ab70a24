#include "heat_solver.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <span>
#include <vector>

#include <fmt/format.h>
#include <skein/communicator.hpp>
#include <skein/ctypes.hpp>
#include <skein/error.hpp>

namespace skein::heat {

namespace {

// Host transfers of the initial condition and the check move this many bytes at a time, so that
// a grid filling a GPU never needs a copy of it in host memory.
constexpr std::size_t slice_bytes = std::size_t{8} << 20;

double rounded(Dtype dtype, double v) {
  return dtype == Dtype::float32 ? static_cast<double>(static_cast<float>(v)) : v;
}

// Unit roundoff of the dtype.
double unit_roundoff(Dtype dtype) { return dtype == Dtype::float32 ? 0x1p-24 : 0x1p-53; }

std::size_t rows_per_slice(std::size_t nx, Dtype dtype) {
  return std::max<std::size_t>(1, slice_bytes / (nx * std::max<std::size_t>(itemsize(dtype), 8)));
}

// Calls f(block, r0, r1) for the local rows [r0, r1) of every local block, a slice of at most
// rows_per_slice() rows at a time: the host never holds more than one slice of a field that
// fills a GPU.
template <class F>
void for_each_slice(const DistArray& u, std::size_t nx, Dtype dtype, F&& f) {
  const std::size_t chunk = rows_per_slice(nx, dtype);
  for (const LocalBlock& b : u.blocks()) {
    for (std::size_t r0 = 0; r0 < b.rows.size(); r0 += chunk) f(b, r0, std::min(b.rows.size(), r0 + chunk));
  }
}

// One source for both backends. Work item (c, j) updates column c of the local rows
// [j K, (j + 1) K) (K = rows_per_item, at least 16, more where a tall block would pass the
// device's grid limits). `in` and `out` are the blocks with their halo rows: interior row r is
// row r + 1 there.
// FP contraction is off (here for OpenCL, --fmad=false for NVRTC): every element is computed
// with the same roundings on every device and in every work group, so the field does not depend
// on how the grid is split, and a restarted run matches an uninterrupted one bit for bit.
constexpr const char* stencil_source = R"(
#ifdef OPENCL
#pragma OPENCL FP_CONTRACT OFF
#endif
KERNEL void heat_step(GLOBAL_MEM ${T}* out, GLOBAL_MEM const ${T}* in, unsigned int nx,
                      unsigned int rows, unsigned int rows_per_item, ${T} c0, ${T} rx, ${T} ry)
{
    /* Each work item walks down its column through rows_per_item rows, keeping the rows above
       and at its point in registers: every element of `in` is loaded from memory about once
       (the neighbours left and right come from the same cache lines). */
    const unsigned int c = (unsigned int)get_global_id(0);
    const unsigned int r0 = (unsigned int)get_global_id(1) * rows_per_item;
    if (c >= nx || r0 >= rows) return;
    const unsigned int r1 = rows - r0 < rows_per_item ? rows : r0 + rows_per_item;
    VSIZE_T i = (VSIZE_T)(r0 + 1) * nx + c;
    ${T} up = in[i - nx];
    ${T} mid = in[i];
    for (unsigned int r = r0; r < r1; ++r, i += nx) {
        const ${T} down = in[i + nx];
        const ${T} left = c > 0 ? in[i - 1] : (${T})0;
        const ${T} right = c + 1 < nx ? in[i + 1] : (${T})0;
        out[i] = c0 * mid + rx * (left + right) + ry * (up + down);
        up = mid;
        mid = down;
    }
}
)";

// Work-group shape: 64 columns (coalesced rows on GPUs) x 4 work items down; each work item
// takes at least 16 rows, and more where the grid's y dimension would pass CUDA's limit of 65535
// groups.
constexpr std::size_t local_x = 64, local_y = 4, max_groups_y = 16384, min_rows_per_item = 16;

std::size_t round_up(std::size_t v, std::size_t m) { return (v + m - 1) / m * m; }
std::size_t ceil_div(std::size_t v, std::size_t m) { return (v + m - 1) / m; }

std::size_t rows_per_item(std::size_t rows) {
  return std::max(min_rows_per_item, ceil_div(rows, max_groups_y * local_y));
}

// max |a - b| over one block, on its device.
const ReductionKernel& difference_kernel() {
  static const ReductionKernel kernel("T u, T v", "T r", "u > v ? u - v : v - u",
                                      "a > b ? a : b", "0", {.name = "heat_max_difference"});
  return kernel;
}

}  // namespace

Problem Problem::make(std::size_t nx, std::size_t ny, int kx, int ky, double alpha,
                      double dt_factor, Dtype dtype) {
  auto fail = [](const std::string& what, const std::string& hint) {
    throw LogicError(ErrorInfo{.what = what, .call = "skein-heat", .hint = hint});
  };
  if (nx == 0 || ny == 0) {
    fail(fmt::format("the grid has {} x {} points", nx, ny), "give --nx and --ny of at least 1");
  }
  if (nx > 0xffffffffu || ny > 0xffffffffu) {
    fail(fmt::format("the grid has {} x {} points, more than 2^32 - 1 along one axis", nx, ny),
         "use fewer points per axis");
  }
  if (kx < 1 || static_cast<std::size_t>(kx) > nx || ky < 1 || static_cast<std::size_t>(ky) > ny) {
    fail(fmt::format("the mode ({}, {}) is not on a {} x {} grid", kx, ky, nx, ny),
         "give --modes KX,KY with 1 <= KX <= nx and 1 <= KY <= ny");
  }
  if (!(alpha > 0) || !std::isfinite(alpha)) {
    fail(fmt::format("the diffusivity alpha is {}", alpha), "give a positive --alpha");
  }
  if (!(dt_factor > 0 && dt_factor <= 0.25)) {
    fail(fmt::format("the time step factor is {}", dt_factor),
         "give --dt-factor in (0, 0.25]: dt = factor * h^2 / alpha, and beyond 0.25 the explicit "
         "step can be unstable");
  }
  if (dtype != Dtype::float32 && dtype != Dtype::float64) {
    fail(fmt::format("the dtype {} is not supported", name(dtype)), "use float32 or float64");
  }
  Problem p;
  p.nx = nx;
  p.ny = ny;
  p.kx = kx;
  p.ky = ky;
  p.alpha = alpha;
  p.dtype = dtype;
  const double h = std::min(p.hx(), p.hy());
  p.dt = dt_factor * h * h / alpha;
  return p;
}

double Problem::rx() const { return rounded(dtype, alpha * dt / (hx() * hx())); }
double Problem::ry() const { return rounded(dtype, alpha * dt / (hy() * hy())); }
double Problem::c0() const { return rounded(dtype, 1.0 - 2.0 * rx() - 2.0 * ry()); }

double Problem::lambda() const {
  const long double pi = std::numbers::pi_v<long double>;
  return static_cast<double>(static_cast<long double>(c0()) +
                             2.0L * rx() * std::cos(kx * pi * static_cast<long double>(hx())) +
                             2.0L * ry() * std::cos(ky * pi * static_cast<long double>(hy())));
}

double Problem::continuous_decay(double t) const {
  const double pi = std::numbers::pi;
  return std::exp(-static_cast<double>(kx * kx + ky * ky) * pi * pi * alpha * t);
}

double Problem::mode_x(std::size_t column) const {
  return std::sin(kx * std::numbers::pi * static_cast<double>(column + 1) * hx());
}
double Problem::mode_y(std::size_t row) const {
  return std::sin(ky * std::numbers::pi * static_cast<double>(row + 1) * hy());
}

double Problem::tolerance(std::int64_t steps, double amplitude) const {
  const double l = std::abs(lambda());
  const double n = static_cast<double>(steps);
  const double sum = l < 1 ? (1 - std::pow(l, n)) / (1 - l) : n;
  return 8 * unit_roundoff(dtype) * amplitude * (2 + sum);
}

// --- Stencil ---------------------------------------------------------------------------------

namespace {

PreparedKernel prepare_stencil(const DistArray& field, std::vector<std::size_t>& active) {
  const Queue& queue = field.queue();
  ProgramOptions options;
  options.name = "skein-heat stencil";
  options.device_idxs = queue.device_idxs();
  if (queue.context().api().id() == ApiId::cuda) options.compiler_options.push_back("--fmad=false");
  const Program program = Program::from_template(
      queue.context(), stencil_source, {{"T", std::string(ctype(field.dtype()))}}, options);

  const std::size_t nx = field.layout().row_size();
  MultiDevice<WorkSize> global;
  // Devices without rows are never launched on, but prepare() wants a size for each.
  for (std::size_t d : queue.device_idxs()) global.set(d, WorkSize{local_x, local_y});
  for (const LocalBlock& b : field.blocks()) {
    if (b.rows.empty()) continue;
    const std::size_t items_y = ceil_div(b.rows.size(), rows_per_item(b.rows.size()));
    global.set(b.device_idx, WorkSize{round_up(nx, local_x), round_up(items_y, local_y)});
    active.push_back(b.device_idx);
  }
  return program.kernel("heat_step").prepare(queue, LaunchSizes(std::move(global)),
                                             LaunchSizes(WorkSize{local_x, local_y}));
}

}  // namespace

Stencil::Stencil(const DistArray& field, const Problem& problem)
    : problem_(problem), kernel_(prepare_stencil(field, active_)) {
  if (field.layout().halo().width != 1 || field.layout().halo().periodic) {
    throw LogicError(ErrorInfo{.what = "the heat field needs one open (non-periodic) halo row",
                               .call = "skein::heat::Stencil"});
  }
}

void Stencil::step(const DistArray& in, const DistArray& out) const {
  for (std::size_t l = 0; l < in.local_size(); ++l) step_block(in, out, l);
}

void Stencil::step_block(const DistArray& in, const DistArray& out, std::size_t l) const {
  const LocalBlock& b = in.block(l);
  if (b.rows.empty()) return;
  const std::size_t dev[1] = {b.device_idx};
  const auto nx = static_cast<std::uint32_t>(in.layout().row_size());
  const auto rows = static_cast<std::uint32_t>(b.rows.size());
  const auto per_item = static_cast<std::uint32_t>(rows_per_item(b.rows.size()));
  const Array& src = b.with_halo;
  const Array& dst = out.block(l).with_halo;
  if (problem_.dtype == Dtype::float32) {
    kernel_.on_devices(dev, dst, src, nx, rows, per_item, static_cast<float>(problem_.c0()),
                       static_cast<float>(problem_.rx()), static_cast<float>(problem_.ry()));
  } else {
    kernel_.on_devices(dev, dst, src, nx, rows, per_item, problem_.c0(), problem_.rx(),
                       problem_.ry());
  }
}

std::size_t Stencil::bytes_per_step(const DistArray& field, std::size_t l) const {
  return 2 * field.block(l).rows.size() * field.layout().row_size() * itemsize(field.dtype());
}

// --- Reductions and checks -------------------------------------------------------------------

double max_difference(const DistArray& a, const DistArray& b) {
  // Every device reduces its block first (all enqueued before any is read), then the host takes
  // the largest and the ranks agree on it. max is exact, so the order does not matter.
  std::vector<Array> partial;
  for (std::size_t l = 0; l < a.local_size(); ++l) {
    if (a.block(l).rows.empty()) continue;
    partial.push_back(difference_kernel()(a.queue(), {a.local(l), b.local(l)}));
  }
  double local = 0;
  for (const Array& p : partial) {
    const double v = p.dtype() == Dtype::float32 ? reduction_value<float>(p) : reduction_value<double>(p);
    local = std::max(local, v);
  }
  double global = 0;
  MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_MAX, a.communicator().mpi_comm());
  return global;
}

namespace {

template <class T>
void set_initial_as(const DistArray& u, const Problem& p) {
  const std::size_t nx = p.nx;
  std::vector<double> sx(nx);
  for (std::size_t c = 0; c < nx; ++c) sx[c] = p.mode_x(c);
  std::vector<T> host;
  for_each_slice(u, nx, p.dtype, [&](const LocalBlock& b, std::size_t r0, std::size_t r1) {
    host.resize((r1 - r0) * nx);
    for (std::size_t r = r0; r < r1; ++r) {
      const double sy = p.mode_y(b.rows.begin + r);
      for (std::size_t c = 0; c < nx; ++c) host[(r - r0) * nx + c] = static_cast<T>(sy * sx[c]);
    }
    b.interior.slice(r0, r1).set(std::span<const T>(host));
  });
}

template <class T>
CheckResult check_as(const DistArray& u, const Problem& p, std::int64_t step) {
  const std::size_t nx = p.nx;
  std::vector<double> sx(nx);
  double max_x = 0, max_y = 0;
  for (std::size_t c = 0; c < nx; ++c) {
    sx[c] = p.mode_x(c);
    max_x = std::max(max_x, std::abs(sx[c]));
  }
  for (std::size_t r = 0; r < p.ny; ++r) max_y = std::max(max_y, std::abs(p.mode_y(r)));
  const double discrete = std::pow(p.lambda(), static_cast<double>(step));
  const double continuous = p.continuous_decay(static_cast<double>(step) * p.dt);

  double errors[2] = {0, 0};  // discrete, continuous
  std::vector<T> host;
  for_each_slice(u, nx, p.dtype, [&](const LocalBlock& b, std::size_t r0, std::size_t r1) {
    host.resize((r1 - r0) * nx);
    b.interior.slice(r0, r1).get(std::span<T>(host));
    for (std::size_t r = r0; r < r1; ++r) {
      const double sy = p.mode_y(b.rows.begin + r);
      for (std::size_t c = 0; c < nx; ++c) {
        const double v = static_cast<double>(host[(r - r0) * nx + c]);
        const double u0 = sy * sx[c];
        // NaN compares false: count it as an infinite error, not as none.
        const double e = std::abs(v - discrete * u0);
        errors[0] = std::isnan(e) ? INFINITY : std::max(errors[0], e);
        const double ec = std::abs(v - continuous * u0);
        errors[1] = std::isnan(ec) ? INFINITY : std::max(errors[1], ec);
      }
    }
  });
  MPI_Allreduce(MPI_IN_PLACE, errors, 2, MPI_DOUBLE, MPI_MAX, u.communicator().mpi_comm());
  CheckResult result;
  result.max_error = errors[0];
  result.max_error_continuous = errors[1];
  result.amplitude = max_x * max_y;
  result.tolerance = p.tolerance(step, result.amplitude);
  return result;
}

}  // namespace

void set_initial(const DistArray& u, const Problem& problem) {
  if (problem.dtype == Dtype::float32) {
    set_initial_as<float>(u, problem);
  } else {
    set_initial_as<double>(u, problem);
  }
}

CheckResult check(const DistArray& u, const Problem& problem, std::int64_t step) {
  return problem.dtype == Dtype::float32 ? check_as<float>(u, problem, step)
                                         : check_as<double>(u, problem, step);
}

}  // namespace skein::heat

// SPDX-License-Identifier: BSD-3-Clause
// The 2-D Poisson matrix on the host and on the devices. See cg_poisson.hpp.
#include "cg_poisson.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include <skein/ctypes.hpp>
#include <skein/error.hpp>

namespace skein_cg {

namespace {

// splitmix64: a well-mixed 64-bit hash, so neighbouring indices give unrelated values.
std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// One kernel source for both backends (the prelude gives KERNEL, GLOBAL_MEM, uint64_t, ...).
// The flat index is computed in 64 bits from the group and local ids: CUDA's get_global_id is
// 32 bits wide, and a device block may hold more than 2^32 points. `u` is the block framed by one
// halo row above and below, so local row i is u's row i + 1; the Dirichlet boundary is taken from
// the global row and column, never from what the halo rows at the edges happen to hold. `y` is
// framed the same way (its halo rows are not written): kernel arguments must start at an aligned
// address on OpenCL, which a block's first row, one halo row into the allocation, need not be.
constexpr const char* kStencilSource = R"(
KERNEL void cg_poisson_apply(GLOBAL_MEM ${T}* y, GLOBAL_MEM const ${T}* u, uint64_t rows,
                             uint64_t nx, uint64_t row0, uint64_t ny)
{
    const uint64_t k = (uint64_t)get_group_id(0) * get_local_size(0) + get_local_id(0);
    if (k >= rows * nx) return;
    const uint64_t i = k / nx;
    const uint64_t j = k - i * nx;
    const uint64_t g = row0 + i;
    const uint64_t at = (i + 1) * nx + j;
    GLOBAL_MEM const ${T}* c = u + at;
    ${T} s = (${T})4 * c[0];
    if (g > 0) s -= *(c - nx);
    if (g + 1 < ny) s -= c[nx];
    if (j > 0) s -= *(c - 1);
    if (j + 1 < nx) s -= c[1];
    y[at] = s;
}
)";

// Threads per work group: enough to fill a GPU's multiprocessor, small enough for any device.
constexpr std::size_t kLocalSize = 256;

[[noreturn]] void raise_logic(const std::string& call, const std::string& what,
                              const std::string& hint) {
  throw skein::LogicError(skein::ErrorInfo{.what = what, .call = call, .hint = hint});
}

}  // namespace

double exact_solution(const Grid& grid, std::size_t row, std::size_t col) {
  const double pi = std::numbers::pi;
  const double smooth =
      std::sin(pi * static_cast<double>(row + 1) / static_cast<double>(grid.ny + 1)) *
      std::sin(pi * static_cast<double>(col + 1) / static_cast<double>(grid.nx + 1));
  // The top 53 bits as a double in [0, 1), then moved to [-0.5, 0.5).
  const double random = static_cast<double>(mix(row * grid.nx + col) >> 11) * 0x1.0p-53 - 0.5;
  return smooth + random;
}

std::vector<double> exact_solution_rows(const Grid& grid, std::size_t row_begin,
                                        std::size_t row_end) {
  std::vector<double> out((row_end - row_begin) * grid.nx);
  for (std::size_t i = row_begin; i < row_end; ++i) {
    for (std::size_t j = 0; j < grid.nx; ++j)
      out[(i - row_begin) * grid.nx + j] = exact_solution(grid, i, j);
  }
  return out;
}

std::vector<double> exact_rhs_rows(const Grid& grid, std::size_t row_begin, std::size_t row_end) {
  // x* on the rows and one row either side (inside the grid), then A applied to it.
  const std::size_t lo = row_begin > 0 ? row_begin - 1 : 0;
  const std::size_t hi = std::min(grid.ny, row_end + 1);
  const std::vector<double> x = exact_solution_rows(grid, lo, hi);
  const std::size_t nx = grid.nx;
  auto at = [&](std::size_t i, std::size_t j) { return x[(i - lo) * nx + j]; };
  std::vector<double> out((row_end - row_begin) * nx);
  for (std::size_t i = row_begin; i < row_end; ++i) {
    for (std::size_t j = 0; j < nx; ++j) {
      double s = 4 * at(i, j);
      if (i > 0) s -= at(i - 1, j);
      if (i + 1 < grid.ny) s -= at(i + 1, j);
      if (j > 0) s -= at(i, j - 1);
      if (j + 1 < nx) s -= at(i, j + 1);
      out[(i - row_begin) * nx + j] = s;
    }
  }
  return out;
}

void host_apply(const Grid& grid, std::span<const double> u, std::span<double> y) {
  if (u.size() != grid.size() || y.size() != grid.size()) {
    raise_logic("skein_cg::host_apply",
                fmt::format("u has {} and y {} values for a {} x {} grid", u.size(), y.size(),
                            grid.nx, grid.ny),
                "Pass the whole grid (nx * ny values, row-major).");
  }
  const std::size_t nx = grid.nx, ny = grid.ny;
  for (std::size_t i = 0; i < ny; ++i) {
    for (std::size_t j = 0; j < nx; ++j) {
      const std::size_t k = i * nx + j;
      double s = 4 * u[k];
      if (i > 0) s -= u[k - nx];
      if (i + 1 < ny) s -= u[k + nx];
      if (j > 0) s -= u[k - 1];
      if (j + 1 < nx) s -= u[k + 1];
      y[k] = s;
    }
  }
}

PoissonOperator::PoissonOperator(const skein::DistArray& like)
    : queue_(like.queue()), layout_(like.layout()), dtype_(like.dtype()) {
  const char* call = "skein_cg::PoissonOperator";
  if (layout_.ndim() != 2) {
    raise_logic(call, fmt::format("the array has {} dimensions", layout_.ndim()),
                "Use a 2-D array of ny rows x nx columns.");
  }
  if (layout_.halo().width < 1 || layout_.halo().periodic) {
    raise_logic(call,
                fmt::format("the layout's halo is {} row(s){}", layout_.halo().width,
                            layout_.halo().periodic ? ", periodic" : ""),
                "Make the layout with skein::Halo{.width = 1} (open boundaries): the stencil reads "
                "one row above and below each block.");
  }
  if (dtype_ != skein::Dtype::float32 && dtype_ != skein::Dtype::float64) {
    raise_logic(call, fmt::format("dtype {}", skein::name(dtype_)), "Use float32 or float64.");
  }
  const skein::Queue& queue = queue_;
  skein::ProgramOptions options;
  options.device_idxs = queue.device_idxs();
  options.name = "skein_cg_poisson";
  const skein::Program program = skein::Program::from_template(
      queue.context(), kStencilSource, {{"T", skein::ctype(dtype_)}}, options);
  const skein::Kernel kernel = program.kernel("cg_poisson_apply");
  const auto max_local = kernel.max_total_local_sizes();
  for (const auto& block : like.blocks()) {
    if (block.rows.empty()) continue;  // a member without rows has nothing to compute
    const std::size_t local = std::min(kLocalSize, max_local.at(block.device_idx));
    const std::size_t points = block.rows.size() * layout_.row_size();
    const std::size_t global = (points + local - 1) / local * local;
    launches_.push_back(
        {block.local_device, block.device_idx, kernel.prepare(queue, global, local)});
  }
}

void PoissonOperator::apply(const skein::DistArray& u, const skein::DistArray& y) const {
  for (const skein::DistArray* a : {&u, &y}) {
    if (!(a->layout() == layout_) || a->dtype() != dtype_ || !(a->queue() == queue_)) {
      raise_logic(
          "skein_cg::PoissonOperator::apply",
          fmt::format("an operand has layout {} and dtype {}{}; the operator was made for {} "
                      "and {}",
                      a->layout().describe(), skein::name(a->dtype()),
                      a->queue() == queue_ ? "" : " on another queue", layout_.describe(),
                      skein::name(dtype_)),
          "Make every vector with the layout, dtype and queue of the operator's array.");
    }
  }
  u.exchange_halos();
  const std::uint64_t nx = layout_.row_size(), ny = layout_.rows();
  for (const auto& launch : launches_) {
    const skein::LocalBlock& ub = u.block(launch.local_device);
    const skein::LocalBlock& yb = y.block(launch.local_device);
    const std::uint64_t rows = ub.rows.size(), row0 = ub.rows.begin;
    const std::size_t device = launch.device_idx;
    launch.kernel.on_devices(std::span<const std::size_t>(&device, 1), yb.with_halo, ub.with_halo,
                             rows, nx, row0, ny);
  }
}

}  // namespace skein_cg

// SPDX-License-Identifier: BSD-3-Clause
// The 2-D Poisson matrix on the host and on the devices. See cg_poisson.hpp.
#include "cg_poisson.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

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

// The stencil of A: guarded reads at the domain's edges (zero outside the grid).
constexpr const char* kPoisson =
    "w = (T)4 * p - (gidx[0] > 0 ? p(-1, 0) : (T)0) - (gidx[0] + 1 < gshape[0] ? p(1, 0) : (T)0)"
    " - (gidx[1] > 0 ? p(0, -1) : (T)0) - (gidx[1] + 1 < gshape[1] ? p(0, 1) : (T)0)";

// exact_solution() on the device: mix() and the same formula (0x1p-53 written in decimal).
constexpr const char* kExactPreamble = R"(
WITHIN_KERNEL INLINE uint64_t cg_mix(uint64_t z)
{
    z += (uint64_t)0x9e3779b97f4a7c15;
    z = (z ^ (z >> 30)) * (uint64_t)0xbf58476d1ce4e5b9;
    z = (z ^ (z >> 27)) * (uint64_t)0x94d049bb133111eb;
    return z ^ (z >> 31);
}
WITHIN_KERNEL INLINE double cg_exact(const int64_t row, const int64_t col, const int64_t ny, const int64_t nx)
{
    const double pi = 3.141592653589793;
    const double smooth = sin(pi * (double)(row + 1) / (double)(ny + 1)) * sin(pi * (double)(col + 1) / (double)(nx + 1));
    const double random = (double)(cg_mix((uint64_t)(row * nx + col)) >> 11) * 1.1102230246251565e-16 - 0.5;
    return smooth + random;
}
)";

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

skein::StencilKernel poisson_kernel(bool reduce) {
  skein::StencilOptions options{.name = reduce ? "cg_poisson_dot" : "cg_poisson",
                                .fp_contract = false};
  if (reduce) options.reduction = skein::StencilReduction{.map = "p * w"};
  return skein::StencilKernel("T p", "T w", kPoisson, options);
}

skein::StencilKernel exact_solution_kernel() {
  return skein::StencilKernel("", "double x",
                              "x = cg_exact(gidx[0], gidx[1], gshape[0], gshape[1])",
                              {.name = "cg_exact_solution", .preamble = kExactPreamble});
}

}  // namespace skein_cg

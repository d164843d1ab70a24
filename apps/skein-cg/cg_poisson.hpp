// SPDX-License-Identifier: BSD-3-Clause
// The system skein-cg solves: the 5-point 2-D Poisson matrix (minus the Laplacian with zero
// Dirichlet boundary values, unscaled) on an nx x ny interior grid,
//
//   (A u)[i][j] = 4 u[i][j] - u[i-1][j] - u[i+1][j] - u[i][j-1] - u[i][j+1],
//
// with u = 0 outside the grid. Row i runs over y (ny rows, split over the devices), column j over
// x (nx columns). A is symmetric positive definite with eigenvalues in (0, 8).
//
// Two implementations of A that share no code: PoissonOperator applies it on the devices (one
// kernel source for CUDA and OpenCL, on a distributed array whose halo rows hold the neighbouring
// blocks' edge rows), and host_apply() on the host in double, for the check of the final residual.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <skein/dist_array.hpp>
#include <skein/program.hpp>

namespace skein_cg {

struct Grid {
  std::size_t nx = 0;  // columns
  std::size_t ny = 0;  // rows
  std::size_t size() const { return nx * ny; }
};

// The known solution x*: a smooth mode plus a pseudo-random part drawn from the global index
// (row * nx + col), so it is the same whichever rank or device holds the point. The random part
// keeps ||b|| = ||A x*|| comparable to ||x*||, which makes the residual a fair measure of x.
double exact_solution(const Grid& grid, std::size_t row, std::size_t col);

// Rows [row_begin, row_end) of x* and of b = A x* (computed in double, then rounded once to the
// solver's dtype by the caller), row-major.
std::vector<double> exact_solution_rows(const Grid& grid, std::size_t row_begin,
                                        std::size_t row_end);
std::vector<double> exact_rhs_rows(const Grid& grid, std::size_t row_begin, std::size_t row_end);

// y = A u on the host, in double, for the whole grid (u and y hold nx * ny values).
void host_apply(const Grid& grid, std::span<const double> u, std::span<double> y);

// A on the devices of a distributed array: one kernel per local block with rows, reading the
// block with its halo rows. The layout must have a halo of at least one row (not periodic).
class PoissonOperator {
 public:
  // Compiles the kernel for `like`'s dtype (float32 or float64) on its queue's devices (the
  // compile cache applies) and fixes the launch sizes of each local block.
  explicit PoissonOperator(const skein::DistArray& like);

  // y = A u: exchanges u's halo rows (collective: every rank calls it), then enqueues the stencil
  // on every local block. u and y have the layout, dtype and queue of `like` (so the launches are
  // ordered after their earlier work); y's halo is not touched.
  void apply(const skein::DistArray& u, const skein::DistArray& y) const;

 private:
  struct BlockLaunch {
    std::size_t local_device = 0;
    std::size_t device_idx = 0;
    skein::PreparedKernel kernel;
  };
  skein::Queue queue_;
  skein::BlockLayout layout_;
  skein::Dtype dtype_;
  std::vector<BlockLaunch> launches_;
};

}  // namespace skein_cg

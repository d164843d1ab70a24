// SPDX-License-Identifier: BSD-3-Clause
// The system skein-cg solves: the 5-point 2-D Poisson matrix (minus the Laplacian with zero
// Dirichlet boundary values, unscaled) on an nx x ny interior grid,
//
//   (A u)[i][j] = 4 u[i][j] - u[i-1][j] - u[i+1][j] - u[i][j-1] - u[i][j+1],
//
// with u = 0 outside the grid. Row i runs over y (ny rows, split over the devices), column j over
// x (nx columns). A is symmetric positive definite with eigenvalues in (0, 8).
//
// Two implementations of A that share no code: poisson_kernel() applies it on the devices (a
// stencil kernel, one source for CUDA and OpenCL, reading the neighbouring blocks' edges from the
// halos), and host_apply() on the host in double, for the check of the final residual.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <skein/stencil.hpp>

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

// The devices' side, as stencil kernels (skein/stencil.hpp) over DistArrays (row blocks with halo
// rows) or GridArrays (a process grid with halos on every side), one source for CUDA and OpenCL.
// The Dirichlet boundary comes from the global coordinates (gidx, gshape), never from what the
// ghost cells at the domain's edge hold.
//
// w = A p. With `reduce`, the kernel also gives p . w over the points it computed
// (skein::dist::stencil_reduce): CG's matvec and its dot product in one pass. fp_contract off
// keeps the bits the same on every backend and in the deterministic mode's comparisons.
skein::StencilKernel poisson_kernel(bool reduce);

// The kernels of A, made once per run (each StencilKernel keeps its own compiled programs).
struct PoissonKernels {
  skein::StencilKernel apply = poisson_kernel(false);
  skein::StencilKernel apply_dot = poisson_kernel(true);
};

// x* at every point from its global coordinates (exact_solution's formula, in double on the
// device): the initial state as a stencil kernel with an output only.
skein::StencilKernel exact_solution_kernel();

}  // namespace skein_cg

// SPDX-License-Identifier: BSD-3-Clause
// The numerics of skein-heat: the test problem, its exact discrete solution, the stencil kernel on
// every local block of a distributed field, and the reductions and checks the app needs.
//
// The problem: u_t = alpha (u_xx + u_yy) on the unit square, u = 0 on the boundary, and
// u0 = sin(kx pi x) sin(ky pi y). The grid has nx x ny interior points, x = (c + 1) hx,
// y = (r + 1) hy with hx = 1 / (nx + 1), hy = 1 / (ny + 1); the array is (ny rows, nx columns).
// The explicit FTCS step is
//
//   u'[r][c] = c0 u[r][c] + rx (u[r][c-1] + u[r][c+1]) + ry (u[r-1][c] + u[r+1][c])
//
// with rx = alpha dt / hx^2, ry = alpha dt / hy^2, c0 = 1 - 2 rx - 2 ry (points outside the
// grid are 0). Each mode is an eigenvector of this step, so the discrete solution is exactly
// lambda^n u0 with lambda = c0 + 2 rx cos(kx pi hx) + 2 ry cos(ky pi hy): the app checks its final
// field against that, with a tolerance that bounds the rounding errors (see Problem::tolerance).
// The coefficients are used as the kernel sees them (rounded to the field's dtype), so the
// check measures rounding alone, not the rounding of the coefficients.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <skein/dist_array.hpp>
#include <skein/program.hpp>
#include <skein/reduction.hpp>

namespace skein::heat {

struct Problem {
  std::size_t nx = 0, ny = 0;  // interior points: columns, rows
  int kx = 1, ky = 1;          // the mode of the initial condition
  double alpha = 1;            // diffusivity
  double dt = 0;               // time step
  Dtype dtype = Dtype::float64;

  // Makes the problem for a grid; dt = dt_factor * min(hx, hy)^2 / alpha. Throws LogicError for a
  // grid of 0 points, a mode outside [1, n], alpha <= 0, or a dt_factor outside (0, 0.25]
  // (beyond 0.25 the step is no longer a contraction and may be unstable).
  static Problem make(std::size_t nx, std::size_t ny, int kx, int ky, double alpha,
                      double dt_factor, Dtype dtype);

  double hx() const { return 1.0 / static_cast<double>(nx + 1); }
  double hy() const { return 1.0 / static_cast<double>(ny + 1); }
  // The stencil's coefficients, rounded to the dtype as the kernel gets them (as double).
  double rx() const;
  double ry() const;
  double c0() const;
  // The factor by which one step multiplies the mode (from the rounded coefficients).
  double lambda() const;
  // The continuous solution's decay at time t: exp(-(kx^2 + ky^2) pi^2 alpha t).
  double continuous_decay(double t) const;
  // sin(k pi (i + 1) h) along one axis (the initial condition is the product of two of these).
  double mode_x(std::size_t column) const;
  double mode_y(std::size_t row) const;
  // The largest error rounding may cause after `steps` steps, for |u0| <= amplitude: every step
  // adds at most a few units of rounding of the field's size (|u| <= amplitude |lambda|^k at step
  // k), and the step is a contraction in the max norm (its coefficients are >= 0 and add up to
  // 1), so errors never grow: |error| <= 8 eps amplitude (2 + sum_k |lambda|^k).
  double tolerance(std::int64_t steps, double amplitude) const;
};

// How the stencil kernel maps its work items onto a block (heat_solver.cpp's stencil_source has
// the details). Every variant computes every element by the same expression, so they all give the
// same bits; they differ in speed, most where a row is not a whole number of 16-byte vectors.
//   rows     work item = W adjacent columns (W = 4 float32 / 2 float64 where nx is a multiple of
//            W, else 1) of R adjacent rows
//   aligned  one element per row, R rows: the work items of a warp take the elements of one
//            aligned 128-byte line of each row (the column shifted by where the row starts)
//   flat     one aligned 16-byte vector per row, R rows: a row is a piece of the flat array, the
//            vector that crosses its end takes the next row's first elements too
//   automatic  what the row width and dtype make best: flat (one row per work item) for float32
//              rows of odd width, rows otherwise (measured on an H100: heat_solver.cpp)
enum class StencilVariant { automatic, rows, aligned, flat };

// "auto", "rows", "aligned", "flat".
const char* name(StencilVariant variant);
// The variant of a name; LogicError for another name.
StencilVariant parse_stencil_variant(std::string_view text);

// What a Stencil asks for: a variant, and optionally its rows per work item and work-group size
// (0: the variant's default for the grid, for tuning on a new device).
struct StencilConfig {
  StencilVariant variant = StencilVariant::automatic;
  unsigned rows_per_item = 0;
  std::size_t local_x = 0, local_y = 0;
  // The queue step_edges() launches on (a queue of the field's context with its devices; e.g. a
  // high-priority queue that also moves the halos). Unset: the field's queue.
  std::optional<Queue> edges_queue;
};

// The kernel a Stencil runs: its variant (never automatic), W elements per work item along a row
// (vector loads where > 1), R rows per work item, work groups of local_x x local_y.
struct StencilShape {
  StencilVariant variant = StencilVariant::rows;
  unsigned w = 1, r = 4;
  std::size_t local_x = 128, local_y = 2;
  // E.g. "flat (4 elements x 2 rows per work item, work groups of 32 x 8)".
  std::string describe() const;
};

// The shape `config` gives for a row width and dtype. LogicError for rows_per_item outside
// [1, 16] or a work group of more than 1024 work items.
StencilShape stencil_shape(const StencilConfig& config, std::size_t nx, Dtype dtype);

// The FTCS step on every local block of a distributed field with one halo row: one kernel per
// device, launched on the field's queue (with exchange_halos() on the same queue, the two are
// ordered without the host; main.cpp's overlapped step puts the exchange on a second queue). The
// halo rows of the first and last blocks are the global boundary rows: exchange_halos() leaves them
// as they are (zero), which is the Dirichlet condition.
class Stencil {
 public:
  // Compiles the kernel of `config`'s variant and shape (stencil_shape(); once per dtype and
  // shape, the compile cache keeps it between runs) for `field`'s layout. Every field stepped
  // later must have the same layout, dtype and queue.
  Stencil(const DistArray& field, const Problem& problem, const StencilConfig& config = {});

  // The kernel's variant and shape.
  const StencilShape& shape() const { return shape_; }

  // out = step(in) on every local block; `in`'s halo rows must be current (exchange_halos()).
  // Enqueued only: nothing waits.
  void step(const DistArray& in, const DistArray& out) const;
  // The same on one local block only (for timing one device).
  void step_block(const DistArray& in, const DistArray& out, std::size_t local_device) const;
  // The step in two parts, for moving the halos while the interior is computed: step_interior()
  // updates every block's rows but its first and last (it reads no halo row), step_edges() those
  // two (after the halo exchange). Together they compute what step() does, bit for bit.
  // step_edges() runs on StencilConfig::edges_queue where one was given: the caller orders it
  // against the field's queue (it reads what the previous step wrote; step_interior() of the same
  // step writes other rows, so the two may run at once).
  void step_interior(const DistArray& in, const DistArray& out) const;
  void step_edges(const DistArray& in, const DistArray& out) const;

  // Bytes the step must move on the device holding local block `l`: read the block once (with
  // its two halo rows) and write it once.
  std::size_t bytes_per_step(const DistArray& field, std::size_t local_device) const;

 private:
  Problem problem_;
  StencilShape shape_;
  // Context device indices of the local blocks that have rows (filled while kernel_ is prepared,
  // so declared before it).
  std::vector<std::size_t> active_;
  PreparedKernel kernel_;  // rows [r_begin, r_end) of a block
  PreparedKernel edges_;   // its first and last rows

  void launch_rows(const DistArray& in, const DistArray& out, std::size_t local_device,
                   std::size_t r_begin, std::size_t r_end) const;
  static const Queue& edges_queue(const DistArray& field, const StencilConfig& config);
};

// max |u - v| over a block's points, each difference in double (exact for float32), on its device;
// a NaN or an infinite difference counts as `inf` (the scalar argument after u and v: the kernels'
// languages spell infinity differently), so that a field gone bad shows in the residual. Both
// max_difference()s (row blocks and process grids) reduce with it.
const ReductionKernel& max_difference_kernel();

// Collective: max |a - b| over the whole field (interior rows), the same on every rank (inf where
// a difference is NaN or infinite). Only reads the fields, so a run that asks for it ends with the
// same bits as one that does not.
double max_difference(const DistArray& a, const DistArray& b);

// Not collective: sets this rank's blocks to the initial condition (computed on the host, moved in
// slices of a few MiB so that the host needs little memory whatever the grid).
void set_initial(const DistArray& u, const Problem& problem);

struct CheckResult {
  double max_error = 0;             // max |u - lambda^n u0| (the discrete solution)
  double tolerance = 0;             // Problem::tolerance
  double max_error_continuous = 0;  // max |u - exp(...) u0| (truncation error; informational)
  double amplitude = 0;             // max |u0| on the grid
  bool passed() const { return max_error <= tolerance; }
};

// Collective: compares the field after `step` steps with the analytic solutions, on the host,
// block by block in slices of a few MiB; the result is the same on every rank.
CheckResult check(const DistArray& u, const Problem& problem, std::int64_t step);

}  // namespace skein::heat

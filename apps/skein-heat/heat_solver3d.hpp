// SPDX-License-Identifier: BSD-3-Clause
// The numerics of skein-heat on a process grid (--nz, --grid, --boundary): the 2-D or 3-D test
// problem, its exact discrete solution for every kind of wall, the 5- or 7-point stencil kernel on
// the local blocks of a GridArray (whole, or split into interior and shell for the overlapped
// step: GridSplit), and the checks.
//
// The problem: u_t = alpha (u_xx + u_yy [+ u_zz]) on the unit square or cube, the array of shape
// (ny, nx) or (nz, ny, nx) (x varies fastest), the spacing along an axis of n points h = 1 / (n +
// 1) (as in heat_solver.hpp), dt = dt_factor (2 / d) min(h)^2 / alpha in d dimensions (so that 2-D
// runs keep heat_solver.hpp's dt, and the FTCS step's centre coefficient
// c0 = 1 - 2 sum_a r_a, r_a = alpha dt / h_a^2, stays >= 0 for dt_factor <= 0.25 in 3-D too). The
// step is
//
//   u'[i] = c0 u[i] + sum_a r_a (u[i - e_a] + u[i + e_a])
//
// with the cells beyond a wall given by the walls' kind (the same on every side), through the
// halo of GridArray::exchange_halos:
//   open      the ghost cells stay 0: u = 0 beyond the wall (heat_solver.hpp's Dirichlet walls);
//             mode f(i) = sin(k pi (i + 1) h), k in [1, n], theta = k pi h
//   periodic  the domain wraps around; f(i) = cos(2 pi k i / n), k in [0, n - 1], theta = 2 pi k /
//   n reflect   the ghost cell mirrors the interior (a zero-flux wall);
//             f(i) = cos(k pi (i + 1/2) / n), k in [0, n - 1], theta = k pi / n
// In each case f(i - 1) + f(i + 1) = 2 cos(theta) f(i) at every point (the ghost cells included),
// so u0 = prod_a f_a is an eigenvector of the step, and after n steps the field is exactly
// lambda^n u0 with lambda = c0 + 2 sum_a r_a cos(theta_a) (coefficients rounded to the dtype as the
// kernel gets them). The check compares against that with GridProblem::tolerance.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <skein/grid_array.hpp>
#include <skein/program.hpp>

#include "heat_solver.hpp"

namespace skein::heat {

struct GridProblem {
  std::vector<std::size_t> n;  // interior points per axis, C order: (ny, nx) or (nz, ny, nx)
  std::vector<int> k;          // the mode along each axis (same order)
  BoundaryKind walls = BoundaryKind::open;  // open, periodic or reflect
  double alpha = 1;
  double dt = 0;
  Dtype dtype = Dtype::float64;

  // Throws LogicError for an axis of 0 points, a mode outside its kind's range (above), alpha <= 0,
  // a dt_factor outside (0, 0.25], or walls of another kind.
  static GridProblem make(std::vector<std::size_t> n, std::vector<int> k, BoundaryKind walls,
                          double alpha, double dt_factor, Dtype dtype);

  std::size_t ndim() const { return n.size(); }
  double h(std::size_t axis) const { return 1.0 / static_cast<double>(n[axis] + 1); }
  // The coefficient of axis `axis` and the centre's, rounded to the dtype (as double).
  double r(std::size_t axis) const;
  double c0() const;
  double theta(std::size_t axis) const;
  double lambda() const;
  // f_axis(i) (see the top of this file).
  double mode(std::size_t axis, std::size_t i) const;
  // The same bound as Problem::tolerance (the step is a contraction in the max norm).
  double tolerance(std::int64_t steps, double amplitude) const;
};

// "open", "periodic", "reflect" -> the kind; LogicError for another name.
BoundaryKind parse_walls(std::string_view text);
const char* name(BoundaryKind kind);
// "2x2x1" -> {2, 2, 1} (as many numbers as `dims`; 0 or "auto" lets GridLayout choose). LogicError
// naming the text for another form.
std::vector<std::size_t> parse_grid(std::string_view text, std::size_t dims);

// The layout of the field: a halo of `halo` on every axis (1, or 2 for two steps per launch: then
// a box stencil, whose edges the first step's ring reads), the problem's walls on every side.
GridOptions grid_options(const GridProblem& problem, std::vector<std::size_t> grid,
                         std::size_t halo = 1);

// How the overlapped step splits a block (GridStencil::step_interior / step_edges), in (z, y, x)
// order (z: one plane in 2-D). A side of the block is "exchanged" when exchange_halos() writes the
// ghost cells beyond it: it has a neighbour, or it is a wall other than open (periodic, reflect).
// The interior box [begin, end) holds the points whose stencil reads no such ghost cell (one
// layer less beside each exchanged side; beside an open wall the ghost cells stay 0 and the
// points are interior); the shell is the rest of the block: up to six slabs, and with one point
// or none between two exchanged sides the whole block (then given as begin = end = {nz, ny, nx}
// along z: every plane).
struct GridSplit {
  std::array<std::size_t, 3> extent{};  // the block's points per axis
  std::array<std::size_t, 3> begin{}, end{};
  // `depth`: the layers left out beside an exchanged side (the field's halo: what a launch reads
  // beyond a point, one per step).
  static GridSplit of(const GridLayout& layout, const LocalGridBlock& block, std::size_t depth = 1);
  std::size_t interior_points() const;
  std::size_t shell_points() const;
};

// The 3-D kernel's work groups: local_x x local_y items, each marching along z over zchunk planes
// (the planes below and at the point in registers), the march unrolled `unroll` times (1: as the
// compiler chooses). GridTile{} is 64 x 8 items over 4 planes unrolled 4, float32's default;
// default_grid_tile() gives each dtype's, the fastest of the tiles measured in the app on one H200
// at 512^3 (docs/performance.md, stop 56: float64 64 x 8 x 2 unrolled 2 at 0.828-0.830 of a device
// copy of the same bytes, against 0.818 for 64 x 8 x 4). skein-heat's --tile3d and --unroll3d set
// them, to tune on another device.
// `kernel` picks how a work group finds the x and y neighbours of its points (3-D only; the 2-D
// kernel is always the plain one); every kernel computes every point by the same expression, so
// the choice changes no bit:
//   march   (the default) each item reads them from global memory (through the caches)
//   shared  the group loads each plane's local_x x local_y tile with its x/y halo once into local
//           memory (whole rows of 32 items at once, each from the 128-byte boundary at or below
//           the row's first point; a ring of three planes, one barrier per plane) and reads them
//           there; the plane above the point from local memory too. Its tile of 3 x (local_y + 2)
//           x (local_x + 2) values must fit in 48 KiB (the CUDA limit for a static array).
//   column2, column4  as march with 2 (4) consecutive points along y per item: the y neighbours
//           inside the column come from the registers of its other points (a work group's
//           local_y items cover local_y x 2 (4) rows)
enum class GridKernel { march, shared, column2, column4 };
// "march", "shared", "column2", "column4" (the option's text, also in skein-heat's JSON).
const char* name(GridKernel kernel);
// One of those names -> the GridKernel; LogicError naming the text (and the choices) otherwise.
GridKernel parse_grid_kernel(std::string_view text);

// `steps`: time steps per launch, 1 or 2 (heat_step2_grid: 3-D, march, a halo of 2 on a box
// stencil; its groups are (local_x + 2) x (local_y + 2) items, local_x x local_y of which store).
struct GridTile {
  std::size_t local_x = 64, local_y = 8, zchunk = 4, unroll = 4;
  GridKernel kernel = GridKernel::march;
  std::size_t steps = 1;
  bool operator==(const GridTile&) const = default;
};
// "64x4x16" -> local_x, local_y, zchunk (unroll and kernel as GridTile's defaults); LogicError
// naming the text for another form, a zero, or more than 1024 items.
GridTile parse_tile(std::string_view text);
// The tile a field of `dtype` gets when none is given: the fastest measured on an H200
// (docs/performance.md): float64 64 x 8 x 2 unrolled 2, float32 64 x 8 x 4 unrolled 4; two steps
// per launch (steps 2) 30 x 14 over 32 planes, unrolled 4 (float64) or 2 (float32).
GridTile default_grid_tile(Dtype dtype, std::size_t steps = 1);

// The FTCS step on every local block of a GridArray (one kernel, written once for both backends,
// launched per device; blocks without points are skipped). The serial step is step(): one kernel
// over every block, on the field's queue, after exchange_halos(). The overlapped step is
// step_interior() on the field's queue while the halos move, then step_edges() once they have
// moved; together they compute what step() does, bit for bit (every point by the same expression).
// With two steps per launch (tile().steps == 2) each of these makes two steps, out =
// step(step(in)), with the bits of two single steps and an exchange between them; its shell is two
// layers deep and launched as up to six slabs per block.
class GridStencil {
 public:
  // `shell_queue`: the queue step_edges() launches on (a queue of the field's context with its
  // devices; e.g. the one the halos move on); none: the field's queue. Every field stepped later
  // must have `field`'s layout, dtype and queue. The default tile (none given:
  // default_grid_tile(field's dtype)) is made smaller
  // along y, then x, where a device runs fewer items per work group of the kernel (an OpenCL
  // device of 256, or registers); another tile that does not fit raises LogicError naming the
  // device and its limit. tile() says what runs.
  GridStencil(const GridArray& field, const GridProblem& problem,
              const std::optional<Queue>& shell_queue = {},
              const std::optional<GridTile>& tile = {});
  // The tile the kernel runs with.
  const GridTile& tile() const { return tile_; }
  // Time steps per call of step(), step_block() and step_interior() + step_edges(): 1 or 2.
  std::size_t steps() const { return tile_.steps; }
  // out = step(in) on every block; `in`'s halos must be current (exchange_halos()). Enqueued only.
  void step(const GridArray& in, const GridArray& out) const;
  // The same on local block `l` only (for timing one device).
  void step_block(const GridArray& in, const GridArray& out, std::size_t l) const;
  // The interior boxes (GridSplit): reads no ghost cell that exchange_halos() writes.
  void step_interior(const GridArray& in, const GridArray& out) const;
  // The shells, one launch per block, on the shell queue: `in`'s halos must be current there. The
  // caller orders it against the field's queue (it reads points the previous step wrote there;
  // the same step's step_interior() writes other points of `out`, so the two may run at once).
  void step_edges(const GridArray& in, const GridArray& out) const;
  // How local block `l` is split.
  const GridSplit& split(std::size_t l) const { return splits_.at(l); }
  // Bytes the step must move on the device of local block `l`: read its points once and write
  // them once (as the 2-D Stencil's).
  std::size_t bytes_per_step(const GridArray& field, std::size_t l) const;

 private:
  // `kernel` (a box kernel: heat_step_grid, or heat_step2_grid with two steps) on local block l's
  // box {z0, y0, x0, ez, ey, ex}.
  void launch_box(const PreparedKernel& kernel, const GridArray& in, const GridArray& out,
                  std::size_t l, const std::array<std::size_t, 6>& box) const;

  GridProblem problem_;
  std::vector<GridSplit> splits_;  // per local block
  GridTile tile_;
  Program program_;
  PreparedKernel kernel_;              // whole blocks
  PreparedKernel interior_;            // interior boxes
  PreparedKernel shell_;               // shells, on the shell queue (one step per launch)
  std::vector<PreparedKernel> slabs_;  // two steps: the shells' six slabs, on the shell queue
  std::vector<unsigned> open_;         // two steps: per local block, its sides at an open wall
};

// Not collective: the initial condition into this rank's blocks (halos zero).
void set_initial(const GridArray& u, const GridProblem& problem);
// Collective: max |a - b| over the points, the same on every rank.
double max_difference(const GridArray& a, const GridArray& b);
// Collective: the field after `steps` steps against lambda^steps u0, the same on every rank.
CheckResult check(const GridArray& u, const GridProblem& problem, std::int64_t steps);

}  // namespace skein::heat

namespace skein {
class Runtime;
}

namespace skein::heat {

// What main.cpp passes to a run on a process grid.
struct GridRunOptions {
  std::size_t nx = 0, ny = 0, nz = 0;  // nz 0: 2-D
  std::int64_t steps = 0;
  std::string dtype = "float64";
  double alpha = 1, dt_factor = 0.2;
  std::vector<int> modes;  // KX, KY, KZ
  std::string grid;        // --grid text, empty: automatic
  std::string boundary = "open";
  std::string out;  // directory for heat.h5 and checkpoints/, empty: none
  std::int64_t report_every = 0;
  std::int64_t checkpoint_every = 0;  // a checkpoint every N steps in out/checkpoints (0: none)
  std::size_t keep = 2;               // checkpoints kept (0: all)
  bool restart = false;               // continue from the newest complete checkpoint in out
  bool overwrite = false;             // start again over old checkpoints (deletes them)
  std::string json_file;              // the summary as JSON (rank 0), empty: none
  // Weak scaling: nx, ny, nz are each block's points; the process grid is --grid or the one
  // GridLayout::choose_grid picks for a domain of one block's shape, and the global grid is the
  // block times the process grid along every axis (every member one block of nx x ny x nz).
  bool weak = false;
  std::string halo_exchange = "overlapped";  // or serial (GridStepper)
  std::string halo_priority = "high";        // the overlapped step's second queue: high or low
  std::string tile3d =
      "auto";                // the 3-D kernel's work groups (parse_tile; auto: default_grid_tile)
  std::size_t unroll3d = 0;  // and its march's unroll (0: auto's, or a given tile's Z up to 16)
  std::string kernel3d = "march";  // and how it finds x/y neighbours (GridKernel)
  // Time steps per launch: 1, or 2 (3-D, march: a halo of 2, exchanged once per two steps; the
  // last step of every report interval, or of an odd count, made alone).
  std::size_t steps_per_pass = 1;
};

// The whole run on a process grid (heat_run3d.cpp): the field, restart and checkpoints
// (heat_checkpoint3d.hpp), the time loop, the check, heat.h5, the summary on rank 0 and --json.
// Returns 0 (check passed) or 3 (failed); throws AgreedError for options that do not fit (every
// rank alike).
int run_grid(const GridRunOptions& options, const Runtime& runtime);

}  // namespace skein::heat

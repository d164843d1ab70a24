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

namespace skein::heat {

namespace {

double grid_rounded(Dtype dtype, double v) {
  return dtype == Dtype::float32 ? static_cast<double>(static_cast<float>(v)) : v;
}

[[noreturn]] void grid_refuse(const char* call, std::string what, std::string hint = {}) {
  throw LogicError(ErrorInfo{.what = std::move(what), .call = call, .hint = std::move(hint)});
}

// One source for both backends. Both kernels compute a point by one expression (HEAT_POINT: the
// 2-D kernel's, with the z terms added last); FP contraction is off (here for OpenCL, --fmad=false
// for NVRTC), so a point's value depends neither on how the grid is split nor on which kernel
// computed it: the overlapped step (interior, then shell) gives the serial step's bits.
//   heat_step_grid   work item (x, y, z) updates the points (z0 + z * ZCHUNK + k, y0 + y, x0 + x),
//                    k < ZCHUNK, of a box of ez x ey x ex points of the block (the whole block,
//                    or its interior box), keeping the planes below and at each point in
//                    registers (3-D); with SHARED (GridKernel::shared, 3-D) a group loads each
//                    plane's tile of LX x LY points with its x/y halo once into local memory and
//                    takes the x/y neighbours and the plane above from there
//   heat_shell_grid  work item k updates the k-th point of the block's shell: the block less its
//                    interior box [z0, z1) x [y0, y1) x [x0, x1), taken as the whole planes below
//                    z0 and from z1, then in the planes between them the whole rows below y0 and
//                    from y1, then in the rows between those the points below x0 and from x1
//                    (up to six slabs in one launch; an empty interior box is given as
//                    z0 = z1 = nz: every plane)
// `in` and `out` are the blocks with their halo of one cell on every side ((y, x) in 2-D, nz 1).
constexpr const char* grid_stencil_source = R"(
#ifdef OPENCL
#pragma OPENCL FP_CONTRACT OFF
#endif
#define DIMS ${DIMS}
#define ZCHUNK ${ZCHUNK}
#define SHARED ${SHARED}
#define COLUMN ${COLUMN}
#define LX ${LX}
#define LY ${LY}
typedef ${T} T;

#if DIMS == 3
#define HEAT_POINT(i) (c0 * in[i] + rx * (in[i - 1] + in[i + 1]) + ry * (in[i - sy] + in[i + sy]) \
                       + rz * (in[i - sz] + in[i + sz]))
#else
#define HEAT_POINT(i) (c0 * in[i] + rx * (in[i - 1] + in[i + 1]) + ry * (in[i - sy] + in[i + sy]))
#endif

WITHIN_KERNEL INLINE VSIZE_T heat_index(unsigned int z, unsigned int y, unsigned int x, VSIZE_T sy, VSIZE_T sz)
{
#if DIMS == 3
    return ((VSIZE_T)z + 1) * sz + ((VSIZE_T)y + 1) * sy + x + 1;
#else
    return ((VSIZE_T)y + 1) * sy + x + 1;
#endif
}

#if DIMS == 3 && SHARED
#define TW (LX + 2)
#define TH (LY + 2)
#define NWARPS ((LX * LY + 31) / 32)
/* Rows r < rows, columns c < cols of a tile from the block's row `row` + r * sy (column 0 at the
   row's index): 32 work items per row, each row from the 128-byte boundary at or below its first
   value (what lies before it read by no item). */
WITHIN_KERNEL INLINE void heat_load_tile(LOCAL_MEM_ARG T (*tile)[TW], GLOBAL_MEM const T* RESTRICT in,
                                         VSIZE_T row, VSIZE_T sy, unsigned int rows,
                                         unsigned int cols, unsigned int warp, unsigned int lane)
{
    for (unsigned int r = warp; r < rows; r += NWARPS) {
        const VSIZE_T first = row + r * sy;
        const unsigned int skip = (unsigned int)(first % (128 / sizeof(T)));
        for (unsigned int k = lane; k < cols + skip; k += 32) {
            if (k >= skip) tile[r][k - skip] = in[first - skip + k];
        }
    }
}
#endif

/* The work item's index along x or y in 32 bits (a block's extents are unsigned int). Along z the
   groups are one item deep, so a march starts at the group's index times ZCHUNK: taken from
   get_global_id(2) (the z item and the group's depth, unknown to the compiler), the march took 44
   registers instead of 32 on sm_90 (nvcc -Xptxas -v), and a group of 512 items then fit twice on
   a multiprocessor instead of four times. */
WITHIN_KERNEL INLINE unsigned int heat_item(unsigned int dim)
{
    return (unsigned int)get_group_id(dim) * (unsigned int)get_local_size(dim) + (unsigned int)get_local_id(dim);
}

KERNEL void heat_step_grid(GLOBAL_MEM T* RESTRICT out, GLOBAL_MEM const T* RESTRICT in,
                           unsigned int ny, unsigned int nx,
                           unsigned int z0, unsigned int y0, unsigned int x0,
                           unsigned int ez, unsigned int ey, unsigned int ex,
                           T c0, T rz, T ry, T rx)
{
#if DIMS == 3 && SHARED
    /* The group's tile of each plane (with its x/y halo) in local memory, in a ring of three: the
       plane of the point (cur) and the one above (next), loaded while the third is free; the
       planes below and at the point in registers. Every item of the group takes part in the loads
       and barriers; only those on a point of the box store. */
    LOCAL_MEM T ring[3][TH][TW];
    const unsigned int tx = (unsigned int)get_local_id(0), ty = (unsigned int)get_local_id(1);
    const unsigned int lane = (ty * LX + tx) % 32, warp = (ty * LX + tx) / 32;
    const unsigned int gx = (unsigned int)get_group_id(0) * LX, gy = (unsigned int)get_group_id(1) * LY;
    const unsigned int zb = (unsigned int)get_group_id(2) * ZCHUNK;
    const int mine = gx + tx < ex && gy + ty < ey;
    const VSIZE_T sy = (VSIZE_T)nx + 2;
    const VSIZE_T sz = ((VSIZE_T)ny + 2) * sy;
    const unsigned int rows = (ey - gy < LY ? ey - gy : LY) + 2;
    const unsigned int cols = (ex - gx < LX ? ex - gx : LX) + 2;
    const VSIZE_T corner = ((VSIZE_T)y0 + gy) * sy + x0 + gx;  /* the tile's (0, 0) in a plane */
    VSIZE_T i = heat_index(z0 + zb, y0 + gy + ty, x0 + gx + tx, sy, sz);
    const unsigned int zend = ez - zb < ZCHUNK ? ez : zb + ZCHUNK;
    LOCAL_MEM_ARG T (*cur)[TW] = ring[0];
    LOCAL_MEM_ARG T (*next)[TW] = ring[1];
    LOCAL_MEM_ARG T (*spare)[TW] = ring[2];
    heat_load_tile(cur, in, ((VSIZE_T)z0 + zb + 1) * sz + corner, sy, rows, cols, warp, lane);
    T below = 0, here = 0;
    if (mine) {
        below = in[i - sz];
        here = in[i];
    }
#ifndef OPENCL /* PoCL does not unroll a loop with a barrier (and warns) */
${UNROLL_PRAGMA}
#endif
    for (unsigned int z = zb; z < zend; ++z, i += sz) {
        /* next was last read two planes ago, before the previous barrier */
        heat_load_tile(next, in, ((VSIZE_T)z0 + z + 2) * sz + corner, sy, rows, cols, warp, lane);
        LOCAL_BARRIER;
        const T above = next[ty + 1][tx + 1];
        if (mine) {
            out[i] = c0 * here + rx * (cur[ty + 1][tx] + cur[ty + 1][tx + 2])
                     + ry * (cur[ty][tx + 1] + cur[ty + 2][tx + 1]) + rz * (below + above);
        }
        below = here;
        here = above;
        LOCAL_MEM_ARG T (*t)[TW] = cur;
        cur = next;
        next = spare;
        spare = t;
    }
#elif DIMS == 3 && COLUMN > 1
    /* COLUMN consecutive points along y per work item, each marching along z as below; the y
       neighbours inside the column are the registers of its other points. */
    const unsigned int x = heat_item(0);
    const unsigned int yb = heat_item(1) * COLUMN;
    const unsigned int zb = (unsigned int)get_group_id(2) * ZCHUNK;
    if (x >= ex || yb >= ey || zb >= ez) return;
    const unsigned int np = ey - yb < COLUMN ? ey - yb : COLUMN; /* points of this column */
    const VSIZE_T sy = (VSIZE_T)nx + 2;
    const VSIZE_T sz = ((VSIZE_T)ny + 2) * sy;
    VSIZE_T i = heat_index(z0 + zb, y0 + yb, x0 + x, sy, sz);
    const unsigned int zend = ez - zb < ZCHUNK ? ez : zb + ZCHUNK;
    T below[COLUMN], here[COLUMN], above[COLUMN];
#pragma unroll
    for (unsigned int p = 0; p < COLUMN; ++p) {
        below[p] = here[p] = 0;
        if (p < np) {
            below[p] = in[i + p * sy - sz];
            here[p] = in[i + p * sy];
        }
    }
${UNROLL_PRAGMA}
    for (unsigned int z = zb; z < zend; ++z, i += sz) {
        const T south = in[i - sy], north = in[i + np * sy];
#pragma unroll
        for (unsigned int p = 0; p < COLUMN; ++p) above[p] = p < np ? in[i + p * sy + sz] : (T)0;
#pragma unroll
        for (unsigned int p = 0; p < COLUMN; ++p) {
            if (p < np) {
                const VSIZE_T j = i + p * sy;
                const T s = p == 0 ? south : here[p == 0 ? 0 : p - 1];
                const T n = p + 1 < np ? here[p + 1 < COLUMN ? p + 1 : p] : north;
                out[j] = c0 * here[p] + rx * (in[j - 1] + in[j + 1]) + ry * (s + n) + rz * (below[p] + above[p]);
            }
        }
#pragma unroll
        for (unsigned int p = 0; p < COLUMN; ++p) {
            below[p] = here[p];
            here[p] = above[p];
        }
    }
#else
    const unsigned int x = heat_item(0);
    const unsigned int y = heat_item(1);
    const unsigned int zb = (unsigned int)get_group_id(2) * ZCHUNK;
    if (x >= ex || y >= ey || zb >= ez) return;
    const VSIZE_T sy = (VSIZE_T)nx + 2;
    const VSIZE_T sz = ((VSIZE_T)ny + 2) * sy;
    VSIZE_T i = heat_index(z0 + zb, y0 + y, x0 + x, sy, sz);
#if DIMS == 3
    /* March along z: the planes below and at the point stay in registers, one new plane is read
       per point (HEAT_POINT's expression, term for term). */
    const unsigned int zend = ez - zb < ZCHUNK ? ez : zb + ZCHUNK;
    T below = in[i - sz], here = in[i];
${UNROLL_PRAGMA}
    for (unsigned int z = zb; z < zend; ++z, i += sz) {
        const T above = in[i + sz];
        out[i] = c0 * here + rx * (in[i - 1] + in[i + 1]) + ry * (in[i - sy] + in[i + sy]) + rz * (below + above);
        below = here;
        here = above;
    }
#else
    out[i] = HEAT_POINT(i);
#endif
#endif
}

KERNEL void heat_shell_grid(GLOBAL_MEM T* RESTRICT out, GLOBAL_MEM const T* RESTRICT in,
                            unsigned int nz, unsigned int ny, unsigned int nx,
                            unsigned int z0, unsigned int z1, unsigned int y0, unsigned int y1,
                            unsigned int x0, unsigned int x1,
                            T c0, T rz, T ry, T rx)
{
    VSIZE_T k = (VSIZE_T)get_global_id(0);
    const VSIZE_T plane = (VSIZE_T)ny * nx;
    const VSIZE_T in_z = (VSIZE_T)(z0 + (nz - z1)) * plane;
    unsigned int z, y, x;
    if (k < in_z) {
        const VSIZE_T p = k / plane, r = k % plane;
        z = (unsigned int)(p < z0 ? p : z1 + (p - z0));
        y = (unsigned int)(r / nx);
        x = (unsigned int)(r % nx);
    } else {
        k -= in_z;
        const VSIZE_T rows = (VSIZE_T)y0 + (ny - y1);  /* shell rows per plane between z0 and z1 */
        const VSIZE_T in_y = (VSIZE_T)(z1 - z0) * rows * nx;
        if (k < in_y) {
            const VSIZE_T row = k / nx, yy = row % rows;
            x = (unsigned int)(k % nx);
            z = z0 + (unsigned int)(row / rows);
            y = (unsigned int)(yy < y0 ? yy : y1 + (yy - y0));
        } else {
            k -= in_y;
            const VSIZE_T points = (VSIZE_T)x0 + (nx - x1);  /* shell points per row between y0 and y1 */
            if (k >= (VSIZE_T)(z1 - z0) * (y1 - y0) * points) return;
            const VSIZE_T row = k / points, xx = k % points;
            z = z0 + (unsigned int)(row / (y1 - y0));
            y = y0 + (unsigned int)(row % (y1 - y0));
            x = (unsigned int)(xx < x0 ? xx : x1 + (xx - x0));
        }
    }
    const VSIZE_T sy = (VSIZE_T)nx + 2;
    const VSIZE_T sz = ((VSIZE_T)ny + 2) * sy;
    const VSIZE_T i = heat_index(z, y, x, sy, sz);
    out[i] = HEAT_POINT(i);
}
)";

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

Program compile_grid_stencil(const GridArray& field, const GridTile& tile) {
  const Queue& queue = field.queue();
  const std::size_t ring = 3 * (tile.local_y + 2) * (tile.local_x + 2) * itemsize(field.dtype());
  if (tile.kernel == GridKernel::shared && field.layout().ndim() == 3 && ring > 48 * 1024) {
    grid_refuse("skein::heat::GridStencil",
                fmt::format("the shared kernel's tile of {} x {} items needs {} bytes of local "
                            "memory (3 planes of {} x {} {} values)",
                            tile.local_x, tile.local_y, ring, tile.local_x + 2, tile.local_y + 2,
                            ctype(field.dtype())),
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
  const WorkSize local{tile.local_x, tile.local_y, 1};
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
    global.set(b.device_idx,
               WorkSize{grid_round_up(e[2], tile.local_x),
                        grid_round_up((e[1] + column - 1) / column, tile.local_y), groups_z});
  }
  return program.kernel("heat_step_grid")
      .prepare(queue, LaunchSizes(std::move(global)), LaunchSizes(local));
}

}  // namespace

// --- GridSplit ---------------------------------------------------------------------------------

GridSplit GridSplit::of(const GridLayout& layout, const LocalGridBlock& b) {
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
    s.begin[first + a] = lower ? 1 : 0;
    s.end[first + a] = s.extent[first + a] - (upper ? 1 : 0);
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
  for (const LocalGridBlock& b : field.blocks()) splits.push_back(GridSplit::of(field.layout(), b));
  return splits;
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
  for (std::size_t a = 0; a < field.layout().ndim(); ++a) {
    if (field.layout().halo(a) != 1) {
      grid_refuse("skein::heat::GridStencil",
                  fmt::format("the field's halo along axis {} is {}", a, field.layout().halo(a)),
                  "give the heat field a halo of 1 on every axis (grid_options())");
    }
  }
  return field;
}

const GridTile& grid_check_tile(const GridTile& tile) {
  if (tile.local_x == 0 || tile.local_y == 0 || tile.zchunk == 0 || tile.unroll == 0 ||
      tile.local_x > 1024 || tile.local_y > 1024 || tile.local_x * tile.local_y > 1024 ||
      tile.zchunk > 65536 || tile.unroll > 64) {
    grid_refuse("skein::heat::GridStencil",
                fmt::format("a tile of {} x {} items over {} planes, unrolled {} times",
                            tile.local_x, tile.local_y, tile.zchunk, tile.unroll),
                "give positive sizes, at most 1024 items per work group, at most 65536 planes and "
                "an unroll of at most 64");
  }
  return tile;
}

// The kernel compiled for `tile`, made to fit every device of the field's queue (see GridStencil):
// the default tile halved along y, then x, until each device runs its work groups; another tile
// that does not fit refused. `tile` is updated to what runs.
Program compile_fitted_stencil(const GridArray& field, GridTile& tile) {
  const bool is_default = tile == default_grid_tile(field.dtype());
  for (;;) {
    Program program = compile_grid_stencil(field, tile);
    std::size_t limit = 0, device = 0;
    for (std::size_t d : field.queue().device_idxs()) {
      const auto most =
          static_cast<std::size_t>(program.kernel("heat_step_grid")
                                       .get_attribute(d, KernelAttribute::max_threads_per_block));
      const auto& sizes = field.queue().context().device(d).params().max_local_sizes;
      const bool fits =
          tile.local_x * tile.local_y <= most &&
          (sizes.size() < 2 || (tile.local_x <= sizes[0] && tile.local_y <= sizes[1]));
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
                              tile.local_x, tile.local_y, device, limit),
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

GridTile default_grid_tile(Dtype dtype) {
  GridTile t;
  if (dtype == Dtype::float64) {
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
      tile_(grid_check_tile(tile.value_or(default_grid_tile(field.dtype())))),
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
}

void GridStencil::step(const GridArray& in, const GridArray& out) const {
  for (std::size_t l = 0; l < in.local_size(); ++l) step_block(in, out, l);
}

void GridStencil::step_block(const GridArray& in, const GridArray& out, std::size_t l) const {
  const LocalGridBlock& b = in.block(l);
  const GridSplit& s = splits_.at(l);
  if (b.block.empty()) return;
  grid_launch(kernel_, problem_, b.device_idx, out.block(l).with_halo, b.with_halo,
              u32(s.extent[1]), u32(s.extent[2]), 0u, 0u, 0u, u32(s.extent[0]), u32(s.extent[1]),
              u32(s.extent[2]));
}

void GridStencil::step_interior(const GridArray& in, const GridArray& out) const {
  for (std::size_t l = 0; l < in.local_size(); ++l) {
    const LocalGridBlock& b = in.block(l);
    const GridSplit& s = splits_.at(l);
    if (b.block.empty() || s.interior_points() == 0) continue;
    grid_launch(interior_, problem_, b.device_idx, out.block(l).with_halo, b.with_halo,
                u32(s.extent[1]), u32(s.extent[2]), u32(s.begin[0]), u32(s.begin[1]),
                u32(s.begin[2]), u32(s.end[0] - s.begin[0]), u32(s.end[1] - s.begin[1]),
                u32(s.end[2] - s.begin[2]));
  }
}

void GridStencil::step_edges(const GridArray& in, const GridArray& out) const {
  for (std::size_t l = 0; l < in.local_size(); ++l) {
    const LocalGridBlock& b = in.block(l);
    const GridSplit& s = splits_.at(l);
    if (b.block.empty() || s.shell_points() == 0) continue;
    grid_launch(shell_, problem_, b.device_idx, out.block(l).with_halo, b.with_halo,
                u32(s.extent[0]), u32(s.extent[1]), u32(s.extent[2]), u32(s.begin[0]),
                u32(s.end[0]), u32(s.begin[1]), u32(s.end[1]), u32(s.begin[2]), u32(s.end[2]));
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

// max |u - v| over a block's points, each difference in double (exact for float32), on its device;
// a NaN or an infinite difference counts as `inf` (a scalar: the kernels' languages spell infinity
// differently), as the host's form this replaced did.
const ReductionKernel& grid_difference_kernel() {
  static const ReductionKernel kernel("T u, T v, float64 inf", "float64 r",
                                      "(double)u > (double)v ? (double)u - (double)v"
                                      " : ((double)v > (double)u ? (double)v - (double)u"
                                      " : ((double)u - (double)v == 0.0 ? 0.0 : inf))",
                                      "a > b ? a : b", "0", {.name = "heat_grid_max_difference"});
  return kernel;
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
  return skein::dist::reduce_values({{grid_difference_kernel(), {a, b, INFINITY}}},
                                    skein::ReduceOp::max)
      .at(0);
}

}  // namespace skein::heat

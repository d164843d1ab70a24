// SPDX-License-Identifier: BSD-3-Clause
#include "heat_solver.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <skein/communicator.hpp>
#include <skein/ctypes.hpp>
#include <skein/dist_reductions.hpp>
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
    for (std::size_t r0 = 0; r0 < b.rows.size(); r0 += chunk)
      f(b, r0, std::min(b.rows.size(), r0 + chunk));
  }
}

// One source for both backends, three kernels for the rows [r_begin, r_end) of a block
// (VARIANT, chosen on the host; StencilVariant in heat_solver.hpp). `in` and `out` are the blocks
// with their halo rows: interior row r is row r + 1 there, and element (row i, column c) is at
// i * nx + c. Every element is computed by stencil() below, the same expression in every variant:
// FP contraction is off (here for OpenCL, --fmad=false for NVRTC), so the field does not depend on
// the variant, on how the grid is split or on the vector width, and a restarted run matches an
// uninterrupted one bit for bit. All three take any nx >= 1 and any row range (also 1 row).
//
// VARIANT 0, rows: work item (x, y) updates W adjacent columns [W x, W x + W) of R adjacent rows,
//   the strips y, y + Y, y + 2 Y, ... (Y: the work items along y). It loads the R + 2 rows of its
//   columns first (W elements at a time: one vector load where W > 1), then the columns left and
//   right of them, then computes and stores: all of a strip's loads are in flight together, and
//   every element of `in` is loaded from memory about once (its neighbours come from the same
//   cache lines). W > 1 needs rows whose start is W-aligned (nx a multiple of W).
// VARIANT 1, aligned: W = 1; work item x takes, in each of its R rows, the element whose address
//   is x elements past a 128-byte boundary (modulo the LINE elements of 128 bytes): column
//   x - m, where m is where that row starts within its 128-byte line (columns outside [0, nx) do
//   nothing). A warp's centre loads and its stores are whole aligned 128-byte lines whatever nx;
//   the neighbours (up, down, left, right) are loaded as they are, from the lines the block has
//   just read (L1 or L2).
// VARIANT 2, flat: each row is seen as a piece of the flat array; work item x takes, in each of
//   its R rows, the W-element vector that starts W x elements past the 128-byte line where the
//   row starts. A vector belongs to the row in which it starts (the last one of a row runs on into
//   the next row; the range's first row also takes the vector that holds its first elements), so
//   every centre load and store is one aligned vector. Each element finds its own column (0 and
//   nx - 1 take 0 for the missing neighbour); up and down are at -nx and +nx in the flat array,
//   misaligned by the constant nx % W: two aligned vectors each, from which the W elements are
//   picked (SHIFT_UP, SHIFT_DOWN are compile-time). Vectors at the ends of the range (partly
//   outside it, or whose loads would leave the rows the range reads) go element by element.
// `out`'s address decides the alignment of the aligned and flat variants (`in` normally has the
// same; flat loads `in` element by element where it does not).
constexpr const char* stencil_source = R"(
#ifdef OPENCL
#pragma OPENCL FP_CONTRACT OFF
#endif
#define VARIANT ${VARIANT}
#define W ${W}
#define R ${R}
/* Elements in 128 bytes. */
#define LINE (128 / ${ITEMSIZE})
typedef ${T} T;
#if W > 1
typedef ${V} VT;
#endif

/* The one expression of every element (up and down, left and right in this order). */
WITHIN_KERNEL INLINE T stencil(T c0, T rx, T ry, T centre, T l, T r, T up, T down)
{
    return c0 * centre + rx * (l + r) + ry * (up + down);
}

WITHIN_KERNEL INLINE void load_w(GLOBAL_MEM const T* p, T* d)
{
#if W == 1
    d[0] = p[0];
#else
    const VT v = *(GLOBAL_MEM const VT*)p;
    d[0] = v.x;
    d[1] = v.y;
#if W == 4
    d[2] = v.z;
    d[3] = v.w;
#endif
#endif
}

WITHIN_KERNEL INLINE void store_w(GLOBAL_MEM T* p, const T* d)
{
#if W == 1
    p[0] = d[0];
#else
    VT v;
    v.x = d[0];
    v.y = d[1];
#if W == 4
    v.z = d[2];
    v.w = d[3];
#endif
    *(GLOBAL_MEM VT*)p = v;
#endif
}

#if VARIANT == 0
KERNEL void heat_step(GLOBAL_MEM T* RESTRICT out, GLOBAL_MEM const T* RESTRICT in,
                      unsigned int nx, unsigned int r_begin, unsigned int r_end, T c0, T rx, T ry)
{
    const unsigned int c = (unsigned int)get_global_id(0) * W;
    if (c >= nx) return;
    const unsigned int stride = (unsigned int)get_global_size(1) * R;
    /* The next strip is r0 + stride, computed so that it cannot wrap past 2^32 rows. */
    for (unsigned int r0 = r_begin + (unsigned int)get_global_id(1) * R; r0 < r_end;
         r0 = r_end - r0 > stride ? r0 + stride : r_end) {
        const VSIZE_T i = (VSIZE_T)(r0 + 1) * nx + c;
        if (r_end - r0 >= R) {
            T v[R + 2][W];
            T left[R], right[R];
#pragma unroll
            for (int k = 0; k < R + 2; ++k) load_w(in + (i + (VSIZE_T)k * nx - nx), v[k]);
#pragma unroll
            for (int k = 0; k < R; ++k) {
                left[k] = c > 0 ? in[i + (VSIZE_T)k * nx - 1] : (T)0;
                right[k] = c + W < nx ? in[i + (VSIZE_T)k * nx + W] : (T)0;
            }
#pragma unroll
            for (int k = 0; k < R; ++k) {
                T o[W];
#pragma unroll
                for (int w = 0; w < W; ++w) {
                    const T l = w == 0 ? left[k] : v[k + 1][w - 1];
                    const T r = w == W - 1 ? right[k] : v[k + 1][w + 1];
                    o[w] = stencil(c0, rx, ry, v[k + 1][w], l, r, v[k][w], v[k + 2][w]);
                }
                store_w(out + (i + (VSIZE_T)k * nx), o);
            }
        } else {
            /* The last rows of the range, fewer than R: element by element. */
            for (unsigned int k = 0; k < r_end - r0; ++k) {
                for (unsigned int w = 0; w < W; ++w) {
                    const VSIZE_T j = i + (VSIZE_T)k * nx + w;
                    const T l = c + w > 0 ? in[j - 1] : (T)0;
                    const T r = c + w + 1 < nx ? in[j + 1] : (T)0;
                    out[j] = stencil(c0, rx, ry, in[j], l, r, in[j - nx], in[j + nx]);
                }
            }
        }
    }
}
#endif

#if VARIANT == 1
KERNEL void heat_step(GLOBAL_MEM T* RESTRICT out, GLOBAL_MEM const T* RESTRICT in,
                      unsigned int nx, unsigned int r_begin, unsigned int r_end, T c0, T rx, T ry)
{
    const unsigned int x = (unsigned int)get_global_id(0);
    /* out's element 0 lies `base` elements past a 128-byte boundary. */
    const unsigned int base = (unsigned int)(((VSIZE_T)out / sizeof(T)) % LINE);
    const unsigned int stride = (unsigned int)get_global_size(1) * R;
    for (unsigned int r0 = r_begin + (unsigned int)get_global_id(1) * R; r0 < r_end;
         r0 = r_end - r0 > stride ? r0 + stride : r_end) {
        const unsigned int n = r_end - r0;  /* rows left in the range */
        bool ok[R];
        unsigned int c[R];
        VSIZE_T j[R];
        T v[R], up[R], down[R], left[R], right[R];
#pragma unroll
        for (int k = 0; k < R; ++k) {
            const unsigned int i = r0 + 1 + k;  /* the row, with the halo */
            /* Where row i starts within its 128-byte line (i * nx wraps modulo 2^32, which LINE
               divides). x below m: c wraps past nx, nothing to do. */
            const unsigned int m = (base + i * nx) % LINE;
            c[k] = x - m;
            ok[k] = (unsigned int)k < n && c[k] < nx;
            j[k] = ok[k] ? (VSIZE_T)i * nx + c[k] : (VSIZE_T)nx;
        }
#pragma unroll
        for (int k = 0; k < R; ++k) {
            v[k] = ok[k] ? in[j[k]] : (T)0;
            up[k] = ok[k] ? in[j[k] - nx] : (T)0;
            down[k] = ok[k] ? in[j[k] + nx] : (T)0;
            left[k] = ok[k] && c[k] > 0 ? in[j[k] - 1] : (T)0;
            right[k] = ok[k] && c[k] + 1 < nx ? in[j[k] + 1] : (T)0;
        }
#pragma unroll
        for (int k = 0; k < R; ++k) {
            if (ok[k]) out[j[k]] = stencil(c0, rx, ry, v[k], left[k], right[k], up[k], down[k]);
        }
    }
}
#endif

#if VARIANT == 2
#define SHIFT_DOWN ${SHIFT}
#define SHIFT_UP ((W - SHIFT_DOWN) % W)

/* d[w] = p[s + w] for w < W: p is W-aligned, s < W a compile-time constant (two vector loads
   where s > 0, the elements picked in registers). */
WITHIN_KERNEL INLINE void load_shifted(GLOBAL_MEM const T* p, const int s, T* d)
{
    T a[2 * W];
    load_w(p, a);
    if (s > 0) load_w(p + W, a + W);
#pragma unroll
    for (int w = 0; w < W; ++w) d[w] = a[s + w];
}

KERNEL void heat_step(GLOBAL_MEM T* RESTRICT out, GLOBAL_MEM const T* RESTRICT in,
                      unsigned int nx, unsigned int r_begin, unsigned int r_end, T c0, T rx, T ry)
{
    const unsigned int x = (unsigned int)get_global_id(0);
    const unsigned int base = (unsigned int)(((VSIZE_T)out / sizeof(T)) % LINE);
    /* Vector loads of `in` where it is aligned like `out`. */
    const bool vectors = (((VSIZE_T)in ^ (VSIZE_T)out) % (W * sizeof(T))) == 0;
    /* The range's elements, and the end of what it may read (the row below it). */
    const int64_t lo = (int64_t)(r_begin + 1) * nx, hi = (int64_t)r_end * nx + nx;
    const int64_t end = hi + nx;
    const unsigned int stride = (unsigned int)get_global_size(1) * R;
    for (unsigned int r0 = r_begin + (unsigned int)get_global_id(1) * R; r0 < r_end;
         r0 = r_end - r0 > stride ? r0 + stride : r_end) {
        const unsigned int n = r_end - r0;
        bool own[R], full[R];
        int64_t g[R];
        unsigned int c[R];
        T v[R][W], up[R][W], down[R][W], left[R], right[R];
#pragma unroll
        for (int k = 0; k < R; ++k) {
            const unsigned int i = r0 + 1 + k;
            const int64_t row = (int64_t)i * nx;
            const unsigned int q = (base + i * nx) % LINE;
            /* The vector's first element, relative to the row's first. */
            const int64_t off = (int64_t)W * x - q;
            own[k] = (unsigned int)k < n && off < (int64_t)nx &&
                     (off >= 0 || (r0 + k == r_begin && off + W > 0));
            g[k] = row + off;
            full[k] = own[k] && vectors && g[k] >= lo && g[k] + W <= hi &&
                      g[k] - nx - SHIFT_UP >= 0 && g[k] + nx - SHIFT_DOWN + 2 * W <= end;
            c[k] = full[k] ? (unsigned int)off : 0u;
        }
#pragma unroll
        for (int k = 0; k < R; ++k) {
            if (full[k]) {
                load_w(in + g[k], v[k]);
                load_shifted(in + (g[k] - nx - SHIFT_UP), SHIFT_UP, up[k]);
                load_shifted(in + (g[k] + nx - SHIFT_DOWN), SHIFT_DOWN, down[k]);
            }
        }
#pragma unroll
        for (int k = 0; k < R; ++k) {
            /* The column of the vector's last element. */
            unsigned int cl = c[k];
#pragma unroll
            for (int w = 1; w < W; ++w) cl = cl + 1 == nx ? 0u : cl + 1;
            left[k] = full[k] && c[k] > 0 ? in[g[k] - 1] : (T)0;
            right[k] = full[k] && cl + 1 < nx ? in[g[k] + W] : (T)0;
        }
#pragma unroll
        for (int k = 0; k < R; ++k) {
            if (full[k]) {
                T o[W];
                unsigned int cw = c[k];
#pragma unroll
                for (int w = 0; w < W; ++w) {
                    const T l = cw > 0 ? (w == 0 ? left[k] : v[k][w - 1]) : (T)0;
                    const T r = cw + 1 < nx ? (w == W - 1 ? right[k] : v[k][w + 1]) : (T)0;
                    o[w] = stencil(c0, rx, ry, v[k][w], l, r, up[k][w], down[k][w]);
                    cw = cw + 1 == nx ? 0u : cw + 1;
                }
                store_w(out + g[k], o);
            } else if (own[k]) {
                /* Element by element: those of the range. An element at g >= the row's start
                   (the only ones in the range) has column g - row, less nx per row it runs on. */
                const int64_t row = (int64_t)(r0 + 1 + k) * nx;
                for (int w = 0; w < W; ++w) {
                    const int64_t e = g[k] + w;
                    if (e < lo || e >= hi) continue;
                    int64_t cc = e - row;
                    while (cc >= (int64_t)nx) cc -= nx;
                    const VSIZE_T j = (VSIZE_T)e;
                    const T l = cc > 0 ? in[j - 1] : (T)0;
                    const T r = cc + 1 < (int64_t)nx ? in[j + 1] : (T)0;
                    out[j] = stencil(c0, rx, ry, in[j], l, r, in[j - nx], in[j + nx]);
                }
            }
        }
    }
}
#endif

/* The first and last interior rows of a block (work item (c, 0) and (c, 1)), the ones that read
   the halo rows: for running the rest of the block while the halos move. */
KERNEL void heat_edges(GLOBAL_MEM T* RESTRICT out, GLOBAL_MEM const T* RESTRICT in,
                       unsigned int nx, unsigned int rows, T c0, T rx, T ry)
{
    const unsigned int c = (unsigned int)get_global_id(0);
    const unsigned int e = (unsigned int)get_global_id(1);
    if (c >= nx || e >= (rows > 1 ? 2u : 1u)) return;
    const VSIZE_T j = (VSIZE_T)(e == 0 ? 1 : rows) * nx + c;
    const T l = c > 0 ? in[j - 1] : (T)0;
    const T r = c + 1 < nx ? in[j + 1] : (T)0;
    out[j] = stencil(c0, rx, ry, in[j], l, r, in[j - nx], in[j + nx]);
}
)";

// The default shape of each variant (StencilConfig's zeros), by measurement where there is one.
// rows: chosen on an H200 (NVRTC, the kernel against a device copy of the same bytes, 32768 x
// 65536 and 4099 x 4097): rows moved several elements at a time where nx allows it reached
// 0.98-0.99 of the copy (float32 one at a time: 0.84-0.85; float64: 0.92-0.96); where nx is odd,
// one at a time with 4 rows per work item, 0.96 (an H100: 0.93-0.94 for float32).
// aligned: the work groups and rows of rows' one-at-a-time shape, so that the two differ only in
// the alignment. flat: 2 rows per work item, like rows' vector shapes, and work groups one warp
// wide (a row of 4099 float32 takes up to 1033 work items, from the start of its first 128-byte
// line: 33 warps, a 34th would be idle).
// Measured on an H100 (tools/gpu-check.sh `stencil` and a sweep of --stencil-shape, 4099 x 4097
// float32, two passes): rows 0.97-1.00 of the copy, aligned 0.93-0.97 (its other shapes
// 0.72-0.99), flat with 2 rows 0.94-0.98 and with 1 row per work item 1.01-1.04 (32 x 8) and
// 1.01-1.02 (128 x 2). So float32 rows of odd width take flat with one row per work item (`auto`);
// float64's odd rows stay with rows (1.02 there; flat is not measured for float64).
// Its work groups: 32 x 4, from a sweep with the kernel and the copy each timed over 10 launches
// between events (two passes): on an H100 32 x 4 1.014 / 1.014, 32 x 2 1.011 / 0.999, 64 x 2 1.007,
// 32 x 8 0.994 / 1.002, 128 x 1 0.991, 32 x 1 0.60; on an H200 32 x 4 0.940, 32 x 8 0.90-0.91,
// 64 x 4 0.903, 128 x 2 0.885, 32 x 16 0.870 (two rows per work item: 0.77).
StencilShape default_shape(StencilVariant variant, std::size_t nx, Dtype dtype) {
  const unsigned vector = dtype == Dtype::float32 ? 4 : 2;  // 16 bytes
  switch (variant) {
    case StencilVariant::automatic:
      if (dtype == Dtype::float32 && nx % 2 != 0) return {StencilVariant::flat, 4, 1, 32, 4};
      [[fallthrough]];
    case StencilVariant::rows:
      if (dtype == Dtype::float32 && nx % 4 == 0) return {StencilVariant::rows, 4, 2, 64, 4};
      if (dtype == Dtype::float32 && nx % 2 == 0) return {StencilVariant::rows, 2, 4, 128, 2};
      if (dtype == Dtype::float64 && nx % 2 == 0) return {StencilVariant::rows, 2, 2, 64, 4};
      return {StencilVariant::rows, 1, 4, 128, 2};
    case StencilVariant::aligned: return {StencilVariant::aligned, 1, 4, 128, 2};
    case StencilVariant::flat:
      return {StencilVariant::flat, vector, dtype == Dtype::float32 ? 1u : 2u, 32,
              dtype == Dtype::float32 ? 4u : 8u};
  }
  return {};
}

// Work items along y: one per strip of R rows, at most max_items_y (CUDA allows 65535 groups
// along y); past that each work item takes several strips.
constexpr std::size_t max_items_y = 16384 * 4;

std::size_t round_up(std::size_t v, std::size_t m) { return (v + m - 1) / m * m; }
std::size_t ceil_div(std::size_t v, std::size_t m) { return (v + m - 1) / m; }

// max |a - b| over one block, on its device.
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

// Work groups of the edge kernel: a row of 256 columns.
constexpr std::size_t edges_local_x = 256;

// `kernel`: "heat_step" (work sizes for every row of each block) or "heat_edges" (two rows).
// The program is compiled once; the context's program cache gives it to the second call.
PreparedKernel prepare_stencil(const DistArray& field, const Queue& queue,
                               const StencilShape& shape, std::vector<std::size_t>* active,
                               const char* kernel) {
  const std::size_t nx = field.layout().row_size();
  const std::size_t line = 128 / itemsize(field.dtype());  // elements in 128 bytes
  const std::string t(ctype(field.dtype()));
  ProgramOptions options;
  options.name = "skein-heat stencil";
  options.device_idxs = queue.device_idxs();
  if (queue.context().api().id() == ApiId::cuda) options.compiler_options.push_back("--fmad=false");
  const int variant = shape.variant == StencilVariant::aligned ? 1
                      : shape.variant == StencilVariant::flat  ? 2
                                                               : 0;
  const Program program = Program::from_template(
      queue.context(), stencil_source,
      {{"T", t},
       {"V", shape.w > 1 ? t + std::to_string(shape.w) : t},
       {"ITEMSIZE", itemsize(field.dtype())},
       {"VARIANT", variant},
       {"W", std::to_string(shape.w)},
       {"R", std::to_string(shape.r)},
       // flat: where the row below a vector's elements starts within a vector
       {"SHIFT", variant == 2 ? nx % shape.w : 0}},
      options);

  const bool edges = std::string_view(kernel) == "heat_edges";
  const WorkSize local =
      edges ? WorkSize{edges_local_x, 1} : WorkSize{shape.local_x, shape.local_y};
  // Work items along a row: rows, W columns each; aligned, one per element of the 128-byte lines
  // a row touches; flat, one per vector of them.
  const std::size_t items_x = variant == 0   ? ceil_div(nx, shape.w)
                              : variant == 1 ? nx + line - 1
                                             : ceil_div(nx + line - 1, shape.w);
  // CUDA allows 65535 work groups along y.
  const std::size_t most_y = std::min(max_items_y, 65535 * shape.local_y);
  MultiDevice<WorkSize> global;
  // Devices without rows are never launched on, but prepare() wants a size for each.
  for (std::size_t d : queue.device_idxs()) global.set(d, local);
  for (const LocalBlock& b : field.blocks()) {
    if (b.rows.empty()) continue;
    if (edges) {
      global.set(b.device_idx, WorkSize{round_up(nx, edges_local_x), 2});
    } else {
      const std::size_t items_y = std::min(ceil_div(b.rows.size(), shape.r), most_y);
      global.set(b.device_idx,
                 WorkSize{round_up(items_x, shape.local_x), round_up(items_y, shape.local_y)});
    }
    if (active) active->push_back(b.device_idx);
  }
  return program.kernel(kernel).prepare(queue, LaunchSizes(std::move(global)), LaunchSizes(local));
}

}  // namespace

const char* name(StencilVariant variant) {
  switch (variant) {
    case StencilVariant::automatic: return "auto";
    case StencilVariant::rows: return "rows";
    case StencilVariant::aligned: return "aligned";
    case StencilVariant::flat: return "flat";
  }
  return "?";
}

StencilVariant parse_stencil_variant(std::string_view text) {
  for (StencilVariant v : {StencilVariant::automatic, StencilVariant::rows, StencilVariant::aligned,
                           StencilVariant::flat}) {
    if (text == name(v)) return v;
  }
  throw LogicError(ErrorInfo{.what = fmt::format("the stencil variant '{}' is not known", text),
                             .call = "skein::heat::parse_stencil_variant",
                             .hint = "give auto, rows, aligned or flat"});
}

std::string StencilShape::describe() const {
  return fmt::format("{} ({} element{} x {} row{} per work item, work groups of {} x {})",
                     name(variant), w, w == 1 ? "" : "s", r, r == 1 ? "" : "s", local_x, local_y);
}

StencilShape stencil_shape(const StencilConfig& config, std::size_t nx, Dtype dtype) {
  StencilShape shape = default_shape(config.variant, nx, dtype);
  if (config.rows_per_item > 0) shape.r = config.rows_per_item;
  if (config.local_x > 0) shape.local_x = config.local_x;
  if (config.local_y > 0) shape.local_y = config.local_y;
  if (shape.r > 16) {
    throw LogicError(ErrorInfo{.what = fmt::format("{} rows per work item of the stencil", shape.r),
                               .call = "skein::heat::stencil_shape",
                               .hint = "give 1 to 16 rows"});
  }
  if (shape.local_x * shape.local_y > 1024) {
    throw LogicError(ErrorInfo{.what = fmt::format("stencil work groups of {} x {} work items",
                                                   shape.local_x, shape.local_y),
                               .call = "skein::heat::stencil_shape",
                               .hint = "give work groups of at most 1024 work items"});
  }
  return shape;
}

Stencil::Stencil(const DistArray& field, const Problem& problem, const StencilConfig& config)
    : problem_(problem),
      shape_(stencil_shape(config, field.layout().row_size(), field.dtype())),
      kernel_(prepare_stencil(field, field.queue(), shape_, &active_, "heat_step")),
      edges_(prepare_stencil(field, edges_queue(field, config), shape_, nullptr, "heat_edges")) {
  if (field.layout().halo().width != 1 || field.layout().halo().periodic) {
    throw LogicError(ErrorInfo{.what = "the heat field needs one open (non-periodic) halo row",
                               .call = "skein::heat::Stencil"});
  }
}

const Queue& Stencil::edges_queue(const DistArray& field, const StencilConfig& config) {
  if (!config.edges_queue) return field.queue();
  const Queue& q = *config.edges_queue;
  bool fits = q.context() == field.queue().context();
  for (std::size_t d : field.queue().device_idxs()) fits = fits && q.has_device(d);
  if (!fits) {
    throw LogicError(ErrorInfo{
        .what =
            "the edge kernel's queue is of another context, or lacks a device of the field's queue",
        .call = "skein::heat::Stencil",
        .hint = "give a Queue(field.queue().context(), field.queue().device_idxs(), ...)"});
  }
  return q;
}

void Stencil::step(const DistArray& in, const DistArray& out) const {
  for (std::size_t l = 0; l < in.local_size(); ++l) step_block(in, out, l);
}

void Stencil::step_interior(const DistArray& in, const DistArray& out) const {
  for (std::size_t l = 0; l < in.local_size(); ++l) {
    const std::size_t rows = in.block(l).rows.size();
    if (rows > 2) launch_rows(in, out, l, 1, rows - 1);
  }
}

void Stencil::step_edges(const DistArray& in, const DistArray& out) const {
  for (std::size_t l = 0; l < in.local_size(); ++l) {
    const LocalBlock& b = in.block(l);
    if (b.rows.empty()) continue;
    const std::size_t dev[1] = {b.device_idx};
    const auto nx = static_cast<std::uint32_t>(in.layout().row_size());
    const auto rows = static_cast<std::uint32_t>(b.rows.size());
    if (problem_.dtype == Dtype::float32) {
      edges_.on_devices(dev, out.block(l).with_halo, b.with_halo, nx, rows,
                        static_cast<float>(problem_.c0()), static_cast<float>(problem_.rx()),
                        static_cast<float>(problem_.ry()));
    } else {
      edges_.on_devices(dev, out.block(l).with_halo, b.with_halo, nx, rows, problem_.c0(),
                        problem_.rx(), problem_.ry());
    }
  }
}

void Stencil::step_block(const DistArray& in, const DistArray& out, std::size_t l) const {
  const std::size_t rows = in.block(l).rows.size();
  if (rows > 0) launch_rows(in, out, l, 0, rows);
}

void Stencil::launch_rows(const DistArray& in, const DistArray& out, std::size_t l,
                          std::size_t r_begin, std::size_t r_end) const {
  const LocalBlock& b = in.block(l);
  const std::size_t dev[1] = {b.device_idx};
  const auto nx = static_cast<std::uint32_t>(in.layout().row_size());
  const auto begin = static_cast<std::uint32_t>(r_begin);
  const auto end = static_cast<std::uint32_t>(r_end);
  const Array& src = b.with_halo;
  const Array& dst = out.block(l).with_halo;
  if (problem_.dtype == Dtype::float32) {
    kernel_.on_devices(dev, dst, src, nx, begin, end, static_cast<float>(problem_.c0()),
                       static_cast<float>(problem_.rx()), static_cast<float>(problem_.ry()));
  } else {
    kernel_.on_devices(dev, dst, src, nx, begin, end, problem_.c0(), problem_.rx(), problem_.ry());
  }
}

std::size_t Stencil::bytes_per_step(const DistArray& field, std::size_t l) const {
  return 2 * field.block(l).rows.size() * field.layout().row_size() * itemsize(field.dtype());
}

// --- Reductions and checks -------------------------------------------------------------------

const ReductionKernel& max_difference_kernel() {
  static const ReductionKernel kernel("T u, T v, float64 inf", "float64 r",
                                      "(double)u > (double)v ? (double)u - (double)v"
                                      " : ((double)v > (double)u ? (double)v - (double)u"
                                      " : ((double)u - (double)v == 0.0 ? 0.0 : inf))",
                                      "a > b ? a : b", "0", {.name = "heat_max_difference"});
  return kernel;
}

double max_difference(const DistArray& a, const DistArray& b) {
  // Every device reduces its block, then the ranks agree on the largest through Skein's batch
  // reduction, timed as every collective is (SKEIN_COLLECTIVE_TIMEOUT): a rank that died leaves
  // the others a TimeoutError naming it, not an MPI_Allreduce that never returns (the report of a
  // residual every step hung the surviving node's ranks until Slurm ended the job, in
  // tests/slurm/run-multinode-test.sh's dead-node case). max is exact: the order does not matter.
  return skein::dist::reduce_values({{max_difference_kernel(), {a, b, INFINITY}}},
                                    skein::ReduceOp::max)
      .at(0);
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

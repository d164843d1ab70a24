// SPDX-License-Identifier: BSD-3-Clause
// Stencil kernels on one device: neighbours by offset in 1, 2 and 3 axes (star and box, widths 1
// and 2), on the points of arrays with halos at odd widths, the interior and edge regions, global
// coordinates, components, placeholders, and the errors; every result compared with the same
// stencil computed on the host from the same data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>
#include <skein/skein.hpp>

#include "backends.hpp"

namespace skein::test {
namespace {
namespace stencil_test {

class Stencil : public BackendTest {};

// A C-ordered block of `points` framed by `halo` cells on both sides of every axis, filled on the
// host with distinct values (halo cells included), and its points as a strided view.
struct Framed {
  Shape points, halo, full;
  std::vector<double> host;
  Array with_halo, interior;

  Framed(const Queue& queue, Shape pts, Shape h, std::uint32_t seed, std::size_t components = 0)
      : points(std::move(pts)),
        halo(std::move(h)),
        full(framed_shape(points, halo, components)),
        host(random_reals<double>(count(full), seed)),
        with_halo(Array::from_host(queue, host, full)),
        interior(points_view(with_halo, points, halo, components)) {}

  static Shape framed_shape(const Shape& points, const Shape& halo, std::size_t components) {
    Shape full;
    for (std::size_t a = 0; a < points.size(); ++a) full.push_back(points[a] + 2 * halo[a]);
    if (components > 0) full.push_back(components);
    return full;
  }
  static std::size_t count(const Shape& shape) {
    std::size_t n = 1;
    for (auto e : shape) n *= e;
    return n;
  }
  static Array points_view(const Array& with_halo, const Shape& points, const Shape& halo,
                           std::size_t components) {
    const Shape& full = with_halo.shape();
    Strides strides(full.size());
    std::size_t step = sizeof(double);
    for (std::size_t a = full.size(); a-- > 0;) {
      strides[a] = step;
      step *= full[a];
    }
    std::size_t first = 0;
    for (std::size_t a = 0; a < points.size(); ++a) first += halo[a] * strides[a] / sizeof(double);
    Shape shape = points;
    if (components > 0) shape.push_back(components);
    return with_halo.view(first, shape, strides);
  }
  // The host value at point p (block coordinates) plus an offset, component c.
  double at(const std::vector<std::int64_t>& p, std::size_t c = 0) const {
    std::size_t idx = 0;
    for (std::size_t a = 0; a < points.size(); ++a) {
      idx = idx * full[a] + static_cast<std::size_t>(p[a] + static_cast<std::int64_t>(halo[a]));
    }
    if (full.size() > points.size()) idx = idx * full.back() + c;
    return host[idx];
  }
};

// Calls f(point) for every point of `shape` (C order).
void for_points(const Shape& shape,
                const std::function<void(const std::vector<std::int64_t>&)>& f) {
  std::size_t n = 1;
  for (auto e : shape) n *= e;
  std::vector<std::int64_t> p(shape.size());
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t r = i;
    for (std::size_t a = shape.size(); a-- > 0;) {
      p[a] = static_cast<std::int64_t>(r % shape[a]);
      r /= shape[a];
    }
    f(p);
  }
}

std::size_t flat(const Shape& shape, const std::vector<std::int64_t>& p) {
  std::size_t idx = 0;
  for (std::size_t a = 0; a < shape.size(); ++a)
    idx = idx * shape[a] + static_cast<std::size_t>(p[a]);
  return idx;
}

bool in_interior(const std::vector<std::int64_t>& p, const Shape& points, const Shape& halo) {
  for (std::size_t a = 0; a < points.size(); ++a) {
    const auto h = static_cast<std::int64_t>(halo[a]), e = static_cast<std::int64_t>(points[a]);
    if (p[a] < h || p[a] >= e - h) return false;
  }
  return true;
}

// The 2-D five-point Laplacian of width 1 and the nine-point star of width 2 at odd widths, each
// region alone into a sentinel-filled output: `all` writes every point, `interior` and `edges`
// exactly their own, the rest untouched.
TEST_P(Stencil, StarWidths1And2AtOddWidthsByRegion) {
  auto ctx = context();
  Queue queue(ctx);
  StencilKernel star1("T u, T a", "T out",
                      "out = u + a * (u(-1, 0) + u(1, 0) + u(0, -1) + u(0, 1) - 4 * u(0, 0))",
                      {.name = "star1"});
  StencilKernel star2("T u", "T out",
                      "out = u(-2, 0) + 2 * u(-1, 0) + 3 * u(1, 0) + 4 * u(2, 0) "
                      "+ 5 * u(0, -2) + 6 * u(0, -1) + 7 * u(0, 1) + 8 * u(0, 2) - u(0, 0)",
                      {.name = "star2"});
  const double a = 0.125;
  for (std::size_t width : {1, 2}) {
    for (std::size_t nx : {11, 37, 250}) {
      for (std::size_t ny : {1, 5, 9}) {
        SCOPED_TRACE(testing::Message() << "width " << width << ", " << ny << " x " << nx);
        const Shape points{ny, nx}, halo{width, width};
        Framed u(queue, points, halo, static_cast<std::uint32_t>(nx * 10 + ny));
        for (auto region : {StencilRegion::all, StencilRegion::interior, StencilRegion::edges}) {
          SCOPED_TRACE(static_cast<int>(region));
          const std::vector<double> sentinel(ny * nx, -7.5);
          auto out = Array::from_host(queue, sentinel, points);
          const StencilGeometry g{.domain = points, .halo = halo};
          if (width == 1) {
            star1(queue, {u.interior, a, out}, g, region);
          } else {
            star2(queue, {u.interior, out}, g, region);
          }
          const auto got = out.get<double>();
          for_points(points, [&](const std::vector<std::int64_t>& p) {
            const std::int64_t i = p[0], j = p[1];
            const bool inside = in_interior(p, points, halo);
            const bool written =
                region == StencilRegion::all || (region == StencilRegion::interior) == inside;
            double want = -7.5;
            if (written && width == 1) {
              want = u.at({i, j}) + a * (u.at({i - 1, j}) + u.at({i + 1, j}) + u.at({i, j - 1}) +
                                         u.at({i, j + 1}) - 4 * u.at({i, j}));
            } else if (written) {
              want = u.at({i - 2, j}) + 2 * u.at({i - 1, j}) + 3 * u.at({i + 1, j}) +
                     4 * u.at({i + 2, j}) + 5 * u.at({i, j - 2}) + 6 * u.at({i, j - 1}) +
                     7 * u.at({i, j + 1}) + 8 * u.at({i, j + 2}) - u.at({i, j});
            }
            ASSERT_NEAR(got[flat(points, p)], want, 1e-9 * (1 + std::abs(want))) << i << ", " << j;
          });
        }
      }
    }
  }
}

// 3-D: the 27-point box sum (edges and corners of the halo read) and the 7-point star, float32
// through a placeholder, on a block whose axes have different halo widths (one of them none).
TEST_P(Stencil, ThreeDimensionalBoxAndStar) {
  auto ctx = context();
  Queue queue(ctx);
  StencilKernel box("T u", "T out",
                    "T s = 0; for (int k = -1; k <= 1; ++k) for (int j = -1; j <= 1; ++j) "
                    "for (int i = -1; i <= 1; ++i) s += u(k, j, i); out = s",
                    {.name = "box27"});
  StencilKernel star("T u", "T out",
                     "out = u(-1, 0, 0) + u(1, 0, 0) + u(0, -1, 0) + u(0, 1, 0) - 2 * u",
                     {.name = "star7"});
  const Shape points{4, 6, 11};
  for (const Shape& halo : {Shape{1, 1, 1}, Shape{1, 1, 0}}) {
    Framed u(queue, points, Shape{1, 1, 1}, 11);
    const bool full_halo = halo[2] == 1;
    for (auto region : {StencilRegion::all, StencilRegion::interior, StencilRegion::edges}) {
      auto out = Array::from_host(queue, std::vector<double>(4 * 6 * 11, -1.0), points);
      const StencilGeometry g{.domain = {40, 60, 110}, .offset = {8, 0, 99}, .halo = halo};
      if (full_halo) {
        box(queue, {u.interior, out}, g, region);
      } else {
        star(queue, {u.interior, out}, g, region);
      }
      const auto got = out.get<double>();
      for_points(points, [&](const std::vector<std::int64_t>& p) {
        const bool inside = in_interior(p, points, halo);
        const bool written =
            region == StencilRegion::all || (region == StencilRegion::interior) == inside;
        double want = -1.0;
        if (written && full_halo) {
          want = 0;
          for (int k = -1; k <= 1; ++k)
            for (int j = -1; j <= 1; ++j)
              for (int i = -1; i <= 1; ++i) want += u.at({p[0] + k, p[1] + j, p[2] + i});
        } else if (written) {
          want = u.at({p[0] - 1, p[1], p[2]}) + u.at({p[0] + 1, p[1], p[2]}) +
                 u.at({p[0], p[1] - 1, p[2]}) + u.at({p[0], p[1] + 1, p[2]}) - 2 * u.at(p);
        }
        ASSERT_NEAR(got[flat(points, p)], want, 1e-9 * (1 + std::abs(want)))
            << p[0] << ", " << p[1] << ", " << p[2] << " region " << static_cast<int>(region);
      });
    }
  }
}

// 1-D, width 2, float32 through a placeholder and a uint8 raw table.
TEST_P(Stencil, OneDimensionalFloat32WithRawTable) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t n = 37, h = 2;
  std::vector<float> host(n + 2 * h);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i * i % 17) - 3.0f;
  auto with_halo = Array::from_host(queue, host);
  auto u = with_halo.view(h, {n});
  const std::vector<std::uint8_t> table{3, 5};
  auto weights = Array::from_host(queue, table);
  auto out = Array::empty(queue, {n}, Dtype::float32);
  StencilKernel k("T u, raw uint8_t w", "T out",
                  "out = w[0] * (u(-2) + u(2)) + w[1] * (u(-1) + u(1))", {.name = "wide1d"});
  k(queue, {u, weights, out}, {.domain = {n}, .halo = {h}});
  const auto got = out.get<float>();
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t c = i + h;
    const float want = 3.0f * (host[c - 2] + host[c + 2]) + 5.0f * (host[c - 1] + host[c + 1]);
    ASSERT_EQ(got[i], want) << i;
  }
}

// Initial conditions from global coordinates: no input field, the output's points only.
TEST_P(Stencil, GlobalCoordinatesAndShape) {
  auto ctx = context();
  Queue queue(ctx);
  StencilKernel init("", "double out",
                     "out = gidx[0] * 1000000.0 + gidx[1] * 1000.0 + gshape[0] + gshape[1] * 0.5",
                     {.name = "init_xy"});
  const Shape points{7, 13};
  Framed f(queue, points, Shape{1, 1}, 3);
  const StencilGeometry g{.domain = {30, 50}, .offset = {20, 37}, .halo = {1, 1}};
  init(queue, {f.interior}, g);
  const auto got = f.with_halo.get<double>();
  for (std::size_t i = 0; i < points[0] + 2; ++i) {
    for (std::size_t j = 0; j < points[1] + 2; ++j) {
      const bool point = i >= 1 && i <= points[0] && j >= 1 && j <= points[1];
      const double want = point ? (20.0 + static_cast<double>(i - 1)) * 1000000.0 +
                                      (37.0 + static_cast<double>(j - 1)) * 1000.0 + 30 + 25
                                : f.host[i * (points[1] + 2) + j];
      ASSERT_EQ(got[i * (points[1] + 2) + j], want) << i << ", " << j;
    }
  }
}

// Several fields per point: inputs read component by component, an output of two components.
TEST_P(Stencil, Components) {
  auto ctx = context();
  Queue queue(ctx);
  const Shape points{5, 11};
  Framed u(queue, points, Shape{1, 1}, 21, 3);
  auto out = Array::empty(queue, {5, 11, 2}, Dtype::float64);
  StencilKernel k("T u", "T out",
                  "out[0] = u(-1, 0, 2) - u(1, 0, 0); out[1] = u(0, 1, 1) * u(0, -1, 2)",
                  {.name = "fields"});
  k(queue, {u.interior, out}, {.domain = points, .halo = {1, 1}});
  const auto got = out.get<double>();
  for_points(points, [&](const std::vector<std::int64_t>& p) {
    const std::size_t at = flat(points, p) * 2;
    ASSERT_EQ(got[at], u.at({p[0] - 1, p[1]}, 2) - u.at({p[0] + 1, p[1]}, 0));
    ASSERT_EQ(got[at + 1], u.at({p[0], p[1] + 1}, 1) * u.at({p[0], p[1] - 1}, 2));
  });
}

// An empty region launches nothing; a block whose halo covers it has no interior.
TEST_P(Stencil, EmptyRegions) {
  auto ctx = context();
  Queue queue(ctx);
  const Shape points{2, 3};
  Framed u(queue, points, Shape{1, 1}, 5);
  auto out = Array::from_host(queue, std::vector<double>(6, 4.0), points);
  StencilKernel k("T u", "T out", "out = u(0, 1)", {.name = "shift"});
  k(queue, {u.interior, out}, {.domain = points, .halo = {1, 2}}, StencilRegion::interior);
  EXPECT_EQ(out.get<double>(), std::vector<double>(6, 4.0));
  k(queue, {u.interior, out}, {.domain = points, .halo = {1, 2}}, StencilRegion::edges);
  const auto got = out.get<double>();
  for_points(points, [&](const std::vector<std::int64_t>& p) {
    ASSERT_EQ(got[flat(points, p)], u.at({p[0], p[1] + 1}));
  });
}

TEST_P(Stencil, Errors) {
  auto ctx = context();
  Queue queue(ctx);
  const Shape points{4, 5};
  Framed u(queue, points, Shape{1, 1}, 9);
  auto out = Array::empty(queue, points, Dtype::float64);
  StencilKernel k("T u", "T out", "out = u(0, 1)", {.name = "shift"});
  const StencilGeometry g{.domain = points, .halo = {1, 1}};
  // In place: the output is the input.
  EXPECT_THROW(k(queue, {u.interior, u.interior}, g), LogicError);
  // Wrong counts, shapes, geometry.
  EXPECT_THROW(k(queue, {u.interior}, g), LogicError);
  EXPECT_THROW(k(queue, {u.interior, Array::empty(queue, {4, 6}, Dtype::float64)}, g), LogicError);
  EXPECT_THROW(k(queue, {u.interior, out}, {.domain = {4, 5, 6, 7}}), LogicError);
  EXPECT_THROW(k(queue, {u.interior, out}, {.domain = points, .offset = {1, 0}}), LogicError);
  EXPECT_THROW(k(queue, {u.interior, out}, {.domain = points, .halo = {1}}), LogicError);
  EXPECT_THROW(k(queue, {u.interior, 2.0}, g), LogicError);
  EXPECT_THROW(StencilKernel("T gidx", "T out", "out = 1"), LogicError);
  EXPECT_THROW(StencilKernel("T u", "", "u = 1"), LogicError);
  // A mistake in the operation: CompileError with the source, and the kernel still usable after.
  StencilKernel bad("T u", "T out", "out = u(0, 1, 2, 3)", {.name = "bad_arity"});
  EXPECT_THROW(bad(queue, {u.interior, out}, g), CompileError);
  k(queue, {u.interior, out}, g);
  const auto got = out.get<double>();
  for_points(points, [&](const std::vector<std::int64_t>& p) {
    ASSERT_EQ(got[flat(points, p)], u.at({p[0], p[1] + 1}));
  });
  EXPECT_EQ(k.programs_built(), 1u);
}

TEST_P(Stencil, SourceIsInspectable) {
  auto ctx = context();
  Queue queue(ctx);
  const Shape points{3, 4};
  Framed u(queue, points, Shape{1, 1}, 2);
  auto out = Array::empty(queue, points, Dtype::float64);
  StencilKernel k("T u", "T out", "out = u(-1, 0)", {.name = "up"});
  const std::vector<Operand> args{u.interior, out};
  const std::string src = k.source(queue, args, {.domain = points});
  EXPECT_NE(src.find("KERNEL void up("), std::string::npos);
  EXPECT_NE(src.find("KERNEL void up_i64("), std::string::npos);
  EXPECT_NE(src.find("out = u(-1, 0)"), std::string::npos);
}

// A stencil that also reduces what it computed (CG's w = A p with p . w), 2-D at odd widths: the
// sum over each region alone and interior + edges accumulated into one element, against the host's
// sum of the same products; the output written as by operator(). Also a max (another reduce and
// identity), a map reading a neighbour, an empty region (the identity), and fp_contract off.
TEST_P(Stencil, ReductionOfWhatItComputed) {
  auto ctx = context();
  Queue queue(ctx);
  const std::string op = "w = 4 * p - p(-1, 0) - p(1, 0) - p(0, -1) - p(0, 1)";
  StencilKernel dot(
      "T p", "T w", op,
      {.name = "apply_dot", .fp_contract = false, .reduction = StencilReduction{.map = "p * w"}});
  StencilKernel most("T p", "T w", op,
                     {.name = "apply_max",
                      .reduction = StencilReduction{
                          .map = "w + p(0, 1)", .reduce = "a > b ? a : b", .identity = "-1e300"}});
  for (std::size_t nx : {1, 11, 37, 250}) {
    for (std::size_t ny : {1, 3, 64}) {
      SCOPED_TRACE(testing::Message() << ny << " x " << nx);
      const Shape points{ny, nx}, halo{1, 1};
      Framed p(queue, points, halo, static_cast<std::uint32_t>(nx + 1000 * ny));
      const StencilGeometry g{.domain = points, .halo = halo};
      auto w = Array::zeros(queue, points, Dtype::float64);
      auto sums = Array::from_host(queue, std::vector<double>(4, -3.0));
      dot.reduce(queue, {p.interior, w}, g, sums, 0, StencilRegion::all);
      dot.reduce(queue, {p.interior, w}, g, sums, 1, StencilRegion::interior);
      dot.reduce(queue, {p.interior, w}, g, sums, 2, StencilRegion::edges);
      dot.reduce(queue, {p.interior, w}, g, sums, 3, StencilRegion::interior);
      dot.reduce(queue, {p.interior, w}, g, sums, 3, StencilRegion::edges, true);
      auto peak = Array::from_host(queue, std::vector<double>(1, 0.0));
      most.reduce(queue, {p.interior, w}, g, peak);
      const auto got = sums.get<double>();
      const auto got_w = w.get<double>();
      double all = 0, inner = 0, edge = 0, top = -1e300, scale = 0;
      for_points(points, [&](const std::vector<std::int64_t>& q) {
        const std::int64_t i = q[0], j = q[1];
        const double want = 4 * p.at({i, j}) - p.at({i - 1, j}) - p.at({i + 1, j}) -
                            p.at({i, j - 1}) - p.at({i, j + 1});
        ASSERT_NEAR(got_w[flat(points, q)], want, 1e-12 * (1 + std::abs(want)));
        const double term = p.at({i, j}) * want;
        all += term;
        scale += std::abs(term);
        (in_interior(q, points, halo) ? inner : edge) += term;
        top = std::max(top, want + p.at({i, j + 1}));
      });
      const double tol = 1e-12 * (1 + scale);
      EXPECT_NEAR(got[0], all, tol);
      EXPECT_NEAR(got[1], inner, tol);  // the identity (0) when the interior is empty
      EXPECT_NEAR(got[2], edge, tol);
      EXPECT_NEAR(got[3], all, tol);
      EXPECT_NEAR(peak.get<double>()[0], top, 1e-12 * (1 + std::abs(top)));
    }
  }
  // Errors: no reduction declared, an output of another dtype, an index outside it.
  StencilKernel plain("T p", "T w", op, {.name = "apply_plain"});
  Framed p(queue, {3, 5}, {1, 1}, 5);
  auto w = Array::zeros(queue, {3, 5}, Dtype::float64);
  const StencilGeometry g{.domain = {3, 5}, .halo = {1, 1}};
  auto out = Array::zeros(queue, {2}, Dtype::float64);
  EXPECT_THROW(plain.reduce(queue, {p.interior, w}, g, out), LogicError);
  auto out32 = Array::zeros(queue, {2}, Dtype::float32);
  EXPECT_THROW(dot.reduce(queue, {p.interior, w}, g, out32), LogicError);
  EXPECT_THROW(dot.reduce(queue, {p.interior, w}, g, out, 2), LogicError);
  EXPECT_THROW(StencilKernel("T p", "T w", op, {.reduction = StencilReduction{.map = " "}}),
               LogicError);
  EXPECT_THROW(StencilKernel("T p", "T w", op,
                             {.reduction = StencilReduction{.map = "p", .dtype = Dtype::float16}}),
               LogicError);
  // What a user's code does next: the arrays are intact and the kernel still runs.
  dot.reduce(queue, {p.interior, w}, g, out, 1);
  EXPECT_TRUE(std::isfinite(out.get<double>()[1]));
}

SKEIN_INSTANTIATE_BACKENDS(Stencil);

}  // namespace stencil_test
}  // namespace
}  // namespace skein::test

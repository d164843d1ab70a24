// SPDX-License-Identifier: BSD-3-Clause
// Host values of the grid tests: a global array in the caller's order (C or Fortran), element
// (x_0, ..., x_{n-1}, component c) = 1 + its index in that order's memory, and a grid made
// through the C API with a process grid, halo and boundaries.
#pragma once

#include <vector>

#include "capi_support.hpp"

namespace skein::test::capi {

using Dims = std::vector<std::size_t>;

// The memory index of point `x` (caller's axes) and component c of an array of `dims` points.
inline std::size_t flat(skein_order order, const Dims& dims, const Dims& x, std::size_t components,
                        std::size_t c) {
  std::size_t idx = 0;
  if (order == SKEIN_ORDER_C) {
    for (std::size_t a = 0; a < dims.size(); ++a) idx = idx * dims[a] + x[a];
    return idx * components + c;
  }
  for (std::size_t a = dims.size(); a-- > 0;) idx = idx * dims[a] + x[a];
  return c + components * idx;
}

inline std::size_t points(const Dims& dims) {
  std::size_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

// Every point of `dims` in turn (the callback gets its coordinates).
template <class F>
void each_point(const Dims& dims, F&& f) {
  Dims x(dims.size(), 0);
  for (std::size_t k = 0; k < points(dims); ++k) {
    std::size_t rest = k;
    for (std::size_t a = dims.size(); a-- > 0;) x[a] = rest % dims[a], rest /= dims[a];
    f(x);
  }
}

inline std::vector<double> global_values(const Dims& dims, std::size_t components) {
  std::vector<double> v(points(dims) * components);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 1.0 + double(i);
  return v;
}

struct GridSpec {
  Dims shape;
  skein_order order = SKEIN_ORDER_C;
  std::size_t components = 1;
  std::size_t halo = 0;
  Dims process_grid{};          // empty: chosen
  bool periodic_first = false;  // periodic along the caller's axis 0, constant -5 on the others
  skein_dtype dtype = SKEIN_FLOAT64;
};

// A grid over the session's communicator and queue (ASSERTs inside: call through
// ASSERT_NO_FATAL_FAILURE).
inline void make_grid(const Session& s, const GridSpec& spec, skein_grid** grid) {
  const std::size_t n = spec.shape.size();
  skein_grid_options o;
  skein_grid_options_init(&o);
  o.order = spec.order;
  o.components = spec.components;
  Dims halo(n, spec.halo);
  o.halo = halo.data();
  o.stencil = SKEIN_STENCIL_BOX;
  if (!spec.process_grid.empty()) o.process_grid = spec.process_grid.data();
  std::vector<skein_boundary> sides(n, skein_boundary{SKEIN_BOUNDARY_CONSTANT, -5.0});
  if (spec.periodic_first) {
    sides[0] = skein_boundary{SKEIN_BOUNDARY_PERIODIC, 0.0};
    o.lower = sides.data();
    o.upper = sides.data();
  }
  CAPI_OK(skein_grid_create(s.comm, s.queue, n, spec.shape.data(), spec.dtype, &o, grid));
}

}  // namespace skein::test::capi

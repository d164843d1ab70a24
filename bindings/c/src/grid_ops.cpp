// SPDX-License-Identifier: BSD-3-Clause
// skein_grid_fill, _copy, _axpy, _scale and the reductions: skein::dist's operations on the
// grids' points.
#include "errors.hpp"
#include "handles.hpp"
#include "skein/dist_ops.hpp"

using namespace skein::capi;

namespace {

// The reductions to one double: the result's pointer and the grid, checked.
template <class Reduce>
skein_status reduction(const char* function, const skein_grid* x, double* result, Reduce&& reduce) {
  return guard(function, [&] {
    require(x, "x");
    require(result, "result");
    *result = reduce(x->grid);
  });
}

}  // namespace

extern "C" {

skein_status skein_grid_fill(const skein_grid* out, double value) {
  return guard("skein_grid_fill", [&] {
    require(out, "out");
    skein::dist::fill(out->grid, skein::Operand(value));
  });
}

skein_status skein_grid_copy(const skein_grid* src, const skein_grid* dst) {
  return guard("skein_grid_copy", [&] {
    require(src, "src");
    require(dst, "dst");
    skein::dist::copy(src->grid, dst->grid);
  });
}

skein_status skein_grid_axpy(double a, const skein_grid* x, const skein_grid* y,
                             const skein_grid* out) {
  return guard("skein_grid_axpy", [&] {
    require(x, "x");
    require(y, "y");
    require(out, "out");
    skein::dist::axpy(skein::Operand(a), x->grid, y->grid, out->grid);
  });
}

skein_status skein_grid_scale(double a, const skein_grid* x, const skein_grid* out) {
  return guard("skein_grid_scale", [&] {
    require(x, "x");
    require(out, "out");
    skein::dist::scale(skein::Operand(a), x->grid, out->grid);
  });
}

skein_status skein_grid_sum(const skein_grid* x, double* result) {
  return reduction("skein_grid_sum", x, result,
                   [](const skein::GridArray& g) { return skein::dist::sum(g); });
}

skein_status skein_grid_min(const skein_grid* x, double* result) {
  return reduction("skein_grid_min", x, result,
                   [](const skein::GridArray& g) { return skein::dist::min(g); });
}

skein_status skein_grid_max(const skein_grid* x, double* result) {
  return reduction("skein_grid_max", x, result,
                   [](const skein::GridArray& g) { return skein::dist::max(g); });
}

skein_status skein_grid_dot(const skein_grid* x, const skein_grid* y, double* result) {
  return guard("skein_grid_dot", [&] {
    require(x, "x");
    require(y, "y");
    require(result, "result");
    *result = skein::dist::dot(x->grid, y->grid);
  });
}

skein_status skein_grid_nrm2(const skein_grid* x, double* result) {
  return reduction("skein_grid_nrm2", x, result,
                   [](const skein::GridArray& g) { return skein::dist::nrm2(g); });
}

}  // extern "C"

// SPDX-License-Identifier: BSD-3-Clause
// The generated source of StencilKernel (skein/stencil.hpp) and what it depends on.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/params.hpp"
#include "skein/stencil.hpp"

namespace skein::detail::stencil {

enum class ParamKind { field, raw, scalar };

// A box of a block's points in three slots (leading unused slots of extent 1).
struct Box {
  std::array<std::int64_t, 3> start{0, 0, 0};
  std::array<std::int64_t, 3> extent{1, 1, 1};
  std::int64_t points() const { return extent[0] * extent[1] * extent[2]; }
};

// A region has at most 2 D boxes (edges: two slabs per axis).
inline constexpr std::size_t kMaxBoxes = 6;

// One call, resolved.
struct Call {
  std::size_t D = 0;  // axes of the domain
  std::size_t device = 0;
  codegen::Bindings bindings;
  std::vector<Dtype> dtypes;            // per parameter
  std::vector<ParamKind> kinds;         // per parameter
  std::vector<std::size_t> components;  // per parameter: 0, or the components of a field
  Shape points, domain, offset, halo;   // D values each
  std::size_t group = 0;                // work-group size the reducing kernels are written for
  std::string signature;
};

// What the program depends on: D, and per parameter its kind, dtype and (outputs) components.
std::string signature(const std::vector<codegen::ParamDecl>& params, const Call& c);

// The program: the kernel `name` with 32-bit indices and `name`_i64 with 64-bit ones. Kernel
// parameters, in order: per parameter its array (allocation and byte offset), then for a field its
// element strides of the three slots and of the components (int64_t), or a scalar's value; the
// block's offset and the domain's extent per slot (int64_t); the region's point count (uint64_t);
// per box (kMaxBoxes) its start per slot (int64_t), extents of slots 1 and 2 and its first point's
// index in the region (uint64_t).
// With options.reduction, also `name`_r and `name`_r_i64: the same with the per-group partial
// values' array (allocation, offset) last, each group writing its value at its group id; and
// `name`_fin, one group of c.group that reduces (partials, offset, count) into (out, offset),
// combined with the value there when its last argument (int) is 1.
std::string generate(const std::vector<codegen::ParamDecl>& params, const std::string& operation,
                     const StencilOptions& options, const Call& c);

}  // namespace skein::detail::stencil

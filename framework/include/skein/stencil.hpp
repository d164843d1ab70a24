// SPDX-License-Identifier: BSD-3-Clause
// Stencil kernels: an operation on one point of a 1-, 2- or 3-D block that reads its neighbours by
// offset and sees the point's global coordinates, as in
//
//   skein::StencilKernel laplace("T u, T a", "T out",
//                                "out = u(0, 0) + a * (u(-1, 0) + u(1, 0) + u(0, -1) + u(0, 1) "
//                                "- 4 * u(0, 0))",
//                                {.name = "laplace"});
//   laplace(queue, {u_interior, 0.1, out_interior}, {.domain = {ny, nx}, .halo = {1, 1}});
//
// One source for CUDA and OpenCL, generated, compiled through Program (so the disk cache applies)
// once per context and signature, and enqueued without waiting. skein::dist::stencil
// (dist_stencil.hpp) runs one over every local block of a GridArray or DistArray.
//
// Parameters: as ElementwiseKernel's (`TYPE NAME`, `raw TYPE NAME`, placeholders). A non-raw
// parameter given an Array is a *field*: a view of the block's points (D axes, D the geometry's
// number of axes), or of its points and a trailing axis of components (D + 1 axes). Fields may be
// strided views (the points of an array with a halo, which is what they usually are): every field
// has the same points shape, and its memory around the points (a halo) is what neighbour reads see.
// In the operation:
//   NAME(o0, ..., oD-1)        an input field's value at the offset (o0, ...) from the point, in
//                              its compute type (float16 / bfloat16 as float); with components,
//                              NAME(o0, ..., oD-1, c) is component c. Offsets are any integer
//                              expressions; reads must stay inside the array's allocation (the
//                              point's own block and its halo), which is not checked.
//   NAME                       an input field's value at the point (without components), an
//                              output field's value at the point (assign it; with components an
//                              array NAME[c] of every component, assign each), a scalar's value,
//                              or a raw parameter's pointer to its element 0.
//   gidx[a], gshape[a]         the point's global index along axis a and the domain's extent
//                              (int64_t), a = 0 .. D-1 (C order: the last axis varies fastest).
// Outputs are written at the point only. An output must not share memory with an input field
// (its neighbours would be read while other points are written): LogicError.
//
// Regions (StencilRegion): `all` points of the block; `interior`, the points at least halo[a]
// away from both sides of the block along every axis a (their neighbours within the halo width
// are the block's own points, so they can be updated while the halos are being exchanged);
// `edges`, the others (launched as one kernel over up to 2 D slabs). interior and edges together
// are all.
//
// Speed: one thread per point of the region, in a grid-stride loop; each field's addresses come
// from its strides (passed at run time, so blocks of other shapes reuse the program). Indices and
// element offsets are 32-bit when the region has fewer than 2^31 points and every field's buffer
// ends fewer than 2^31 elements from the start of its allocation.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "skein/array.hpp"
#include "skein/dtype.hpp"
#include "skein/elementwise.hpp"
#include "skein/export.hpp"
#include "skein/queue.hpp"
#include "skein/template.hpp"

namespace skein {

enum class StencilRegion { all, interior, edges };

// A reduction of what the operation computed, over the points of a region (StencilKernel::reduce):
// the matvec w = A p of a CG that also gives the dot product of p and w in the same pass. `map` is
// an expression of the reduced dtype for one point, evaluated after the operation with the
// operation's names (inputs' values and neighbour reads, outputs' new values); `reduce` combines
// two values `a` and `b`; `identity` is the value of no points. As ReductionKernel's map, reduce
// and identity (a fast-mode reduction: the order of the combining depends on the launch, as
// ReductionKernel's fast mode).
struct StencilReduction {
  std::string map{};
  std::string reduce = "a + b";
  std::string identity = "0";
  Dtype dtype = Dtype::float64;  // not float16 / bfloat16
};

struct StencilOptions {
  // The kernel's name (a C identifier, not an OpenCL C built-in function's such as distance or
  // dot: LogicError), in the generated source and in error messages.
  std::string name = "stencil";
  // Source put before the kernel: helper functions, types, #defines (rendered with `globals`).
  std::string preamble = {};
  // Names for the operation and the preamble, rendered as templates (skein/template.hpp).
  RenderGlobals globals = {};
  // ProgramOptions::fast_math for the generated program.
  bool fast_math = false;
  // false: no FP contraction in the operation (a * b + c is never fused into an FMA), so that it
  // gives the same bits as a host's or another kernel's uncontracted arithmetic.
  bool fp_contract = true;
  // A reduction of what the operation computed (reduce()); none by default.
  std::optional<StencilReduction> reduction{};
};

// Where a block lies in its domain. The block's points are the fields' first D axes.
struct StencilGeometry {
  Shape domain = {};  // the global shape, D = 1, 2 or 3 axes (without components)
  Shape offset = {};  // the global index of the block's first point per axis (empty: zeros)
  Shape halo = {};    // per axis, the width `interior` leaves out at each side (empty: zeros)
};

// A cheap handle: copies share the kernel and its compiled programs. Threads: as ElementwiseKernel.
class SKEIN_EXPORT StencilKernel {
 public:
  // LogicError for a malformed parameter list, a duplicated or reserved name (gidx, gshape, and
  // names starting with `_skein`), or no output.
  StencilKernel(std::string_view in_params, std::string_view out_params, std::string operation,
                StencilOptions options = {});

  // Enqueues the operation over `region` of one block on `queue`, on the device of the array
  // arguments (every argument given: inputs, then outputs; outputs are fields or raw arrays).
  // LogicError for a wrong number of arguments or dtype, fields of different points shapes or
  // devices, a geometry that does not hold the block (offset + points beyond the domain, a halo
  // wider than half the block's extent is allowed: then the interior is empty), an output
  // sharing memory with an input field; CompileError (with the generated source) when the
  // operation does not compile.
  void operator()(const Queue& queue, std::span<const Operand> args,
                  const StencilGeometry& geometry, StencilRegion region = StencilRegion::all) const;
  void operator()(const Queue& queue, std::initializer_list<Operand> args,
                  const StencilGeometry& geometry,
                  StencilRegion region = StencilRegion::all) const {
    (*this)(queue, std::span<const Operand>(args.begin(), args.size()), geometry, region);
  }

  // With options.reduction: runs the operation over `region` as operator() does and, in the same
  // pass, reduces the reduction's map over the region's points into element `index` of `out` (an
  // array of the reduction's dtype on the block's device); with `accumulate`, combined with the
  // value already there (reduce(old, new): an interior call, then an edges call). An empty region
  // gives the identity. Enqueued, not waited for. LogicError as operator(), and for a kernel
  // without a reduction, an `out` of another dtype or device, an index outside it.
  void reduce(const Queue& queue, std::span<const Operand> args, const StencilGeometry& geometry,
              const Array& out, std::size_t index = 0, StencilRegion region = StencilRegion::all,
              bool accumulate = false) const;
  void reduce(const Queue& queue, std::initializer_list<Operand> args,
              const StencilGeometry& geometry, const Array& out, std::size_t index = 0,
              StencilRegion region = StencilRegion::all, bool accumulate = false) const {
    reduce(queue, std::span<const Operand>(args.begin(), args.size()), geometry, out, index, region,
           accumulate);
  }
  // The reduction's dtype, if the kernel has one.
  std::optional<Dtype> reduction_dtype() const;

  // The source that a call with these arguments compiles (for reading and debugging).
  std::string source(const Queue& queue, std::span<const Operand> args,
                     const StencilGeometry& geometry) const;

  const std::string& name() const;
  // The number of parameters (inputs, then outputs), and whether parameter i is declared `raw`
  // (false beyond them).
  std::size_t num_params() const;
  bool param_is_raw(std::size_t i) const;
  // Programs generated and compiled by this kernel and its copies (one per context and signature).
  std::size_t programs_built() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace skein

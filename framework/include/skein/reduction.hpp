// SPDX-License-Identifier: BSD-3-Clause
// Reductions of arrays (pygpu's and CuPy's ReductionKernel): a map expression on each element, a
// reduce expression combining two partial values, a neutral value and an output, as in
//
//   skein::ReductionKernel l2("T x", "T y", "x * x", "a + b", "0", {.post_map = "y = sqrt(a)"});
//   skein::Array r = l2(queue, {x});             // one element, on x's device; nothing waited for
//   float host = skein::reduction_value<float>(r);  // waits and reads it
//
// Parameters use ElementwiseKernel's syntax (skein/elementwise.hpp): inputs are arrays (broadcast
// together as there) or scalars; `raw` inputs are whole arrays indexed by the map expression with
// `i` (the element's flat index in the arrays given) and `n`. The output parameter (one) names the
// result in `post_map`. In the expressions:
//   map_expr     the value of one element, of the reduce type (`reduce_t`); input names are
//                element values (float16/bfloat16 as float, as in elementwise kernels)
//   reduce_expr  combines `a` and `b` (both reduce_t); associative and commutative (the fast
//                mode combines partial values in an order that depends on the device's grid; the
//                deterministic mode always combines them in index order)
//   identity     the neutral value of reduce_expr (a reduce_t expression); also the result of an
//                empty reduction (before post_map)
//   post_map     a statement setting the output from `a`, the reduced value (default "y = a" for
//                an output named y, converted to the output's dtype)
// The reduce type defaults to the output's dtype (float for float16/bfloat16 outputs); set
// ReductionOptions::reduce_type (a dtype) or reduce_struct (a C struct, see skein/ctypes.hpp) to
// accumulate in another type. Partial values are stored in device memory as reduce_t.
//
// How a whole-array reduction runs on one device (the default, fast mode): a first kernel on a
// grid sized from the device (multiprocessors x resident blocks) reads 16-byte vectors in a
// grid-stride loop with several loads in flight per thread, reduces within each thread, then each
// block in local memory, and writes one partial value per block; the last block to finish (each
// block counts itself with one atomic add, behind a device-scope fence) reduces those partials
// and applies post_map, in the same launch. Where the devices have no device-scope fences
// (OpenCL C 1.2; OpenCL C 3.0 without __opencl_c_atomic_order_acq_rel and
// __opencl_c_atomic_scope_device), a second kernel (one block) does that instead, in the same
// order and with the same bits. No host round trip. The order of operations depends on the
// device's grid, so float results can differ in the last bits between devices and splits.
//
// Deterministic mode (ReductionArgs::deterministic, and records()/combine() for distributed
// arrays) gives results that do not depend on how the global index range is split among devices
// or ranks, nor on the device's grid: the result is defined as a canonical pairwise tree over
// *global* element indices. Node (level l, index k) covers [k 2^l, (k+1) 2^l) truncated to
// [0, N); its value is reduce(left child, right child), or the left child alone when the right
// child is empty; leaves are map values. A piece holding [offset, offset + size) computes the
// values of the maximal nodes inside its range (O(log N) of them) as records (start, level,
// value); combining the records of all pieces, in any order, merges siblings bottom-up and gives
// the root. The per-piece computation is as fast as the tree allows: each thread reduces W
// contiguous elements (one 16-byte vector) pairwise in registers, then each block pairwise in
// local memory over its threads, and the per-block values go through the same kernel again
// (log_S N passes of tiles of S = 2^12-ish elements); only the O(log N) edge nodes of a piece need
// the checked path. FP contraction is off in deterministic kernels (so a*x + b is never fused
// differently in different places).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "skein/array.hpp"
#include "skein/ctypes.hpp"
#include "skein/elementwise.hpp"
#include "skein/export.hpp"
#include "skein/multi_device.hpp"
#include "skein/queue.hpp"
#include "skein/template.hpp"

namespace skein {

struct ReductionOptions {
  // The statement that sets the output from `a`; empty: "<output> = a".
  std::string post_map{};
  // The type partial values are kept in (`reduce_t` in the expressions). Default: the output's
  // dtype (float32 for float16/bfloat16). At most one of the two.
  std::optional<Dtype> reduce_type{};
  std::optional<StructType> reduce_struct{};
  // Source put before the kernels (helper functions; rendered with `globals`), as in
  // ElementwiseOptions.
  std::string preamble{};
  RenderGlobals globals{};
  // The kernel's name, as ElementwiseOptions::name (a C identifier, not an OpenCL C built-in's).
  std::string name = "reduction";
};

// Per-call settings.
struct ReductionArgs {
  // Reduce along this axis only (NumPy's axis=): the output has the other dimensions of the
  // inputs' broadcast shape, in order (shape {1} when nothing is left). 2-D arrays: 0 gives one
  // result per column, 1 one per row. Without it (and without `axes`), the whole array reduces to
  // one element.
  std::optional<std::size_t> axis{};
  // Where to write the result: a contiguous array of the output's dtype with 1 element (whole
  // array) or the reduced shape (per axis). Without it, a new array is returned.
  std::optional<Array> out{};
  // The canonical tree (see above) instead of the device's fastest order (whole-array only).
  bool deterministic = false;
  // Reduce along several axes at once (NumPy's axis=(0, 2)): any order, no repeats, each below
  // the number of dimensions; not together with `axis`. The output is as for `axis`.
  // Per-axis reductions of any number of dimensions combine each output's elements in an order
  // fixed by the shape and the device's group size, so they are deterministic on one device.
  std::vector<std::size_t> axes{};
};

// One maximal node of the canonical tree that a piece of the global range contributes.
struct ReductionNode {
  std::uint64_t start = 0;  // first global element
  std::uint32_t level = 0;  // covers [start, start + 2^level) truncated to [0, total)
  friend bool operator==(const ReductionNode&, const ReductionNode&) = default;
};

// A cheap handle: copies share the kernel and its compiled programs.
// Threads: as ElementwiseKernel: a kernel, its copies and the built-ins (sum, min, max, dot,
// nrm2, *_kernel()), shared by the whole process, may be called from several threads at once (on
// OpenCL the launches of one compiled kernel take turns on the host).
class SKEIN_EXPORT ReductionKernel {
 public:
  // LogicError for malformed parameters, not exactly one output, both reduce types set, or
  // reserved names (a, b, i, n, names starting with `_skein`).
  ReductionKernel(std::string_view in_params, std::string_view out_param, std::string map_expr,
                  std::string reduce_expr, std::string identity, ReductionOptions options = {});

  // Whole-array (or per-axis) reduction on the device of the array inputs, enqueued on `queue`;
  // nothing is waited for. Returns the output (args.out or a new array on that device).
  // LogicError as for ElementwiseKernel, and for an axis past the inputs' dimensions, repeated
  // axes, both axis and axes, or a deterministic per-axis reduction.
  Array operator()(const Queue& queue, std::span<const Operand> inputs,
                   const ReductionArgs& args = {}) const;
  Array operator()(const Queue& queue, std::initializer_list<Operand> inputs,
                   const ReductionArgs& args = {}) const {
    return (*this)(queue, std::span<const Operand>(inputs.begin(), inputs.size()), args);
  }

  // Several devices of one context at once: device d reduces its own inputs (per_device[d], as a
  // piece of one global array: pieces follow each other in the queue's device order), the
  // per-device values are copied to the queue's first device and combined there (in device order;
  // with args.deterministic, the canonical tree over the concatenated pieces, so the result is
  // bit-identical to a one-device deterministic reduction of the whole). args.axis is not taken.
  Array per_device(const Queue& queue, const MultiDevice<std::vector<Operand>>& inputs,
                   const ReductionArgs& args = {}) const;

  // --- Building blocks for reductions across ranks (fast mode) ---
  // The reduced value before post_map, as one reduce_t element: `out` (or a new array) has the
  // partial dtype (partial_dtype(): the reduce dtype, float32 for float16/bfloat16 reduce types,
  // uint8 x partial_size() bytes for a struct).
  Array partial(const Queue& queue, std::span<const Operand> inputs,
                const std::optional<Array>& out = std::nullopt) const;
  // Reduces `partials` (a contiguous array of partial values, e.g. gathered from every rank, in
  // rank order), applies post_map, and writes the output (one element). The inputs' dtypes bind
  // the placeholders of the reduce type and the output, as in a full call (only their dtypes are
  // used: pass the same inputs, or empty arrays of their dtypes).
  Array finish(const Queue& queue, std::span<const Operand> inputs, const Array& partials,
               const std::optional<Array>& out = std::nullopt) const;

  // --- Building blocks for deterministic reductions across ranks ---
  // The records of the piece [global_offset, global_offset + size) of a global array of
  // `global_size` elements, the piece being the inputs given (size = their broadcast size). The
  // result (or `out`) is a uint8 array of record_capacity(global_size) x record_size() bytes;
  // unused slots are marked empty. Every piece has the same capacity, so pieces all_gather
  // directly.
  Array records(const Queue& queue, std::span<const Operand> inputs, std::uint64_t global_offset,
                std::uint64_t global_size, const std::optional<Array>& out = std::nullopt) const;
  // Combines the records of pieces that tile [0, global_size) exactly (concatenated in any order;
  // global order is fastest) and applies post_map. Pieces that do not tile the range give an
  // unspecified result. `inputs` bind the types as in finish().
  Array combine(const Queue& queue, std::span<const Operand> inputs, const Array& records,
                std::uint64_t global_size, const std::optional<Array>& out = std::nullopt) const;

  // The dtype of the result for inputs of these dtypes (of `out` in ReductionArgs), so that a
  // caller can give the output, from a memory pool for instance.
  Dtype out_dtype(std::span<const Operand> inputs) const;
  // Sizes for the arrays above, for the dtypes of these inputs.
  Dtype partial_dtype(std::span<const Operand> inputs) const;
  std::size_t partial_size(std::span<const Operand> inputs) const;  // bytes of one partial value
  std::size_t record_size(std::span<const Operand> inputs) const;   // bytes of one record
  static std::size_t record_capacity(std::uint64_t global_size);    // records per piece

  // The generated source for these inputs (for reading and debugging).
  std::string source(const Queue& queue, std::span<const Operand> inputs) const;
  const std::string& name() const;
  // Programs generated and compiled so far (see ElementwiseKernel::programs_built()).
  std::size_t programs_built() const;

  struct Impl;

 private:
  friend struct detail::ImplAccess;
  const std::shared_ptr<Impl>& impl() const { return impl_; }
  std::shared_ptr<Impl> impl_;
};

// The maximal nodes of the canonical tree inside [offset, offset + size) of [0, total), in order:
// what records() computes on the device, for checking coverage on the host.
SKEIN_EXPORT std::vector<ReductionNode> reduction_nodes(std::uint64_t offset, std::uint64_t size,
                                                        std::uint64_t total);

namespace detail {
[[noreturn]] SKEIN_EXPORT void raise_not_one_element(const Array& result);
}

// Waits for the queue's work on the array's device and returns its only element.
template <class T>
T reduction_value(const Array& result) {
  if (result.size() != 1) detail::raise_not_one_element(result);
  T value;
  result.get(std::span<T>(&value, 1));
  return value;
}

// --- Built-in reductions -------------------------------------------------------------------------
// Each returns the kernel (built once per dtype and kept) so that distributed code can use
// partial()/finish() and records()/combine(), and a function doing the whole call.
//
// sum:  NumPy's dtypes: signed integers -> int64, unsigned -> uint64, others keep theirs;
//       float16/bfloat16 accumulate in float32; complex sums both parts.
// min, max: the input's dtype; NaN propagates (as NumPy); LogicError for complex and for an empty
//       array (no identity, as NumPy).
// dot:  sum of x * y in result_type(x, y), no conjugation (NumPy's dot of 1-D arrays); integers
//       keep their promoted dtype and wrap (as NumPy); float16/bfloat16 accumulate in float32.
// nrm2: the 2-norm sqrt(sum |x|^2), in the real dtype of x (float64 for integers). float16,
//       bfloat16, float32 and complex64 accumulate squares in float64 (no overflow or underflow
//       possible, then rounded once); float64, complex128 and integers use a scaled sum (LAPACK's
//       dnrm2: a (scale, sum of squares) pair, so no intermediate overflows or underflows).
SKEIN_EXPORT const ReductionKernel& sum_kernel(Dtype x);
SKEIN_EXPORT const ReductionKernel& min_kernel(Dtype x);
SKEIN_EXPORT const ReductionKernel& max_kernel(Dtype x);
SKEIN_EXPORT const ReductionKernel& dot_kernel(Dtype x, Dtype y);
SKEIN_EXPORT const ReductionKernel& nrm2_kernel(Dtype x);

SKEIN_EXPORT Array sum(const Queue& queue, const Array& x, const ReductionArgs& args = {});
SKEIN_EXPORT Array min(const Queue& queue, const Array& x, const ReductionArgs& args = {});
SKEIN_EXPORT Array max(const Queue& queue, const Array& x, const ReductionArgs& args = {});
SKEIN_EXPORT Array dot(const Queue& queue, const Array& x, const Array& y,
                       const ReductionArgs& args = {});
SKEIN_EXPORT Array nrm2(const Queue& queue, const Array& x, const ReductionArgs& args = {});

// The dtypes these return.
SKEIN_EXPORT Dtype sum_dtype(Dtype x);
SKEIN_EXPORT Dtype nrm2_dtype(Dtype x);

}  // namespace skein

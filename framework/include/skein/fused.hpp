// SPDX-License-Identifier: BSD-3-Clause
// Elementwise updates that also reduce what they computed, in one pass over memory (a CG
// iteration's `x += alpha p; r -= alpha w` together with `r . r`):
//
//   skein::FusedKernel cg("T p, T w, T alpha", "T x, T r", "x += alpha * p; r -= alpha * w",
//                         "T rr", "r * r", "a + b", "0", {.name = "cg_update"});
//   skein::Array rr = cg(queue, {p, w, alpha, x, r});   // writes x and r; rr: one element
//
// Parameters use ElementwiseKernel's syntax (skein/elementwise.hpp):
//   in_params       inputs: arrays (broadcast to the updated arrays' shape) or scalars, read only;
//                   a `raw` input is an array seen whole, a pointer to its element 0 in the
//                   operation (`raw T s` -> `s[0]`), of any shape, not broadcast: how a value
//                   computed on the device (a solver's alpha = rr / pw, dist::*_to_devices) reaches
//                   the update without the host reading it
//   update_params   arrays read and written in place (at least one), all of one shape, contiguous,
//                   not float16/bfloat16, never raw; in the operation each is the element's value
//                   (an lvalue)
//   operation       statements on one element (as an ElementwiseKernel's), run once per element;
//                   the updated names hold their new values afterwards and are stored back
//   out_param       the reduced value's output (one), as ReductionKernel's
//   map_expr        the value reduced for one element, computed after the operation (so it sees
//                   the new values), of the reduce type; `i` and `n` as in elementwise kernels
//   reduce_expr, identity, and FusedOptions' post_map, reduce_type, reduce_struct: as
//                   ReductionKernel's (skein/reduction.hpp)
// Operands are passed in_params first, then update_params. Names are refused as ReductionKernel
// refuses them (a, b, i, n, reduce_t, names starting with `_skein`), and names ending in
// `_skein_dst` (taken by the generated kernel).
//
// How it runs: a ReductionKernel (reduction()) whose map function runs the operation, stores the
// updated values and returns map_expr; each updated array is passed to it twice, as an input read
// with the reduction's vector loads and as a pointer the new values are stored through. Every
// element is mapped exactly once, in the fast mode as in the deterministic one (the canonical tree
// of reduction.hpp over the same elements, no full-size temporary), so an update runs once per
// element whatever the mode. In the deterministic mode FP contraction is off for the operation too
// (its values are then the same wherever an element is computed; they may differ in the last bit
// from the fast mode's, where a*x + b may be fused).
#pragma once

#include <cstddef>
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
#include "skein/queue.hpp"
#include "skein/reduction.hpp"
#include "skein/template.hpp"

namespace skein {

struct FusedOptions {
  // As ReductionOptions.
  std::string post_map{};
  std::optional<Dtype> reduce_type{};
  std::optional<StructType> reduce_struct{};
  std::string preamble{};
  RenderGlobals globals{};
  std::string name = "fused";
};

// Per-call settings (whole-array reductions only).
struct FusedArgs {
  // Where to write the reduced value (one element of the output's dtype); else a new array.
  std::optional<Array> out{};
  // The canonical tree over the elements' indices (see reduction.hpp).
  bool deterministic = false;
};

// A cheap handle: copies share the kernel. Threads: as ReductionKernel.
class SKEIN_EXPORT FusedKernel {
 public:
  // LogicError for malformed or raw parameters, no updated array, not exactly one output, a name
  // declared twice, reserved names, an empty operation or expression, both reduce types set.
  FusedKernel(std::string_view in_params, std::string_view update_params,
              const std::string& operation, std::string_view out_param, const std::string& map_expr,
              std::string reduce_expr, std::string identity, FusedOptions options = {});

  // Updates the arrays and reduces, on the device of the arrays, enqueued on `queue`; nothing is
  // waited for. `operands`: in_params' then update_params'. Returns the output (args.out or a new
  // one-element array). LogicError for the wrong number of operands, an updated operand that is a
  // scalar, a strided view, a float16/bfloat16 array or of another shape than the first updated
  // one, inputs that do not broadcast to it, and as ReductionKernel.
  Array operator()(const Queue& queue, std::span<const Operand> operands,
                   const FusedArgs& args = {}) const;
  Array operator()(const Queue& queue, std::initializer_list<Operand> operands,
                   const FusedArgs& args = {}) const {
    return (*this)(queue, std::span<const Operand>(operands.begin(), operands.size()), args);
  }

  // The reduction that does the work, and its operands for these (checked as operator() checks
  // them): for the building blocks of ReductionKernel (partial/finish, records/combine,
  // per_device), where each call updates the elements it maps.
  const ReductionKernel& reduction() const;
  std::vector<Operand> reduction_operands(std::span<const Operand> operands) const;

  std::size_t input_count() const;   // in_params
  std::size_t update_count() const;  // update_params (operands input_count() .. + update_count())
  // Whether input j (0 <= j < input_count()) is declared `raw` (false beyond the inputs).
  bool input_is_raw(std::size_t j) const;
  const std::string& name() const;

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
};

namespace detail {
// The checks of FusedKernel::reduction_operands on the shapes, dtypes and layout of the operands
// (`call` names the caller in the LogicError).
SKEIN_EXPORT void check_fused_operands(const FusedKernel& kernel, std::span<const Operand> operands,
                                       const char* call);
}  // namespace detail

}  // namespace skein

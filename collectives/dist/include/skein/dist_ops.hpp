// SPDX-License-Identifier: BSD-3-Clause
// Elementwise, reduction and BLAS operations on distributed arrays. Each runs the framework's
// single-device kernel (elementwise.hpp, reduction.hpp, blas.hpp) on every local device's block,
// and finishes across devices and ranks with the Communicator where the result is global:
//
//   elementwise   block by block; no communication (the operands share one layout)
//   reductions    within each device (one partial value on the device). reduce(): then one
//                 all_reduce over every member (the rank's devices and all ranks at once), the
//                 result on every device. sum, min, max (to the host): over several ranks with
//                 NCCL, the same all_reduce, its result written into page-locked host memory
//                 (CUDA; else read from the device); else each device's value written to
//                 page-locked host memory (CUDA) or read from the device, combined over the
//                 rank's devices, then over the ranks in one MPI exchange (a collective call like
//                 the Communicator's, checked and timed out as they are); every rank has the
//                 same value, bit for bit.
//                 Deterministic mode: the canonical pairwise tree over global element indices
//                 (ReductionKernel::records / combine), all_gathered, so the result does not
//                 depend on how many devices or ranks hold the array
//   dot, nrm2     per device, then as sum (nrm2: the sum of squares, square-rooted on the host;
//                 no scaling against overflow)
//   gemv, gemm    A and C split by rows with the same layout, x or B replicated on every device
//                 (a distributed x or B is all_gathered first, see replicate())
//
// Every call is collective over the arrays' Communicator: all ranks make it, in the same order.
// Calls are ordered on each operand's queue (operands on other queues than the first's are joined
// with events). Most do not wait for the host; those returning host values do, and so do those
// that free temporaries the device may still read (replicate() of uneven blocks, sum_columns,
// gemv / gemm with a distributed x / B, deterministic reductions).
//
// Threads: every call is a call on the arrays' Communicator, under its rules (one thread at a
// time, see Communicator).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <span>
#include <variant>
#include <vector>

#include "skein/blas.hpp"
#include "skein/communicator.hpp"
#include "skein/dist_array.hpp"
#include "skein/elementwise.hpp"
#include "skein/export.hpp"
#include "skein/reduction.hpp"

namespace skein {
class GridArray;
}

namespace skein::dist {

// An operand of a distributed elementwise kernel: a distributed array (its local blocks are
// used), a grid array (the points of its blocks, never their halos: grid_ops.hpp), a scalar
// (broadcast to every element), or per-member arrays.
//
// Per-member arrays (`const std::vector<Array>&`): one Array per local member of the call's
// distributed operands, in local block order (the order in which dist::reduce and the
// *_to_devices reductions of dist_reductions.hpp return theirs), each on that member's device and
// of the operands' queue's context. The launch for local block i gets per_member[i] whole, as an
// ordinary array operand: a kernel reads it through a `raw` parameter (`raw double s` -> `s[0]`),
// so that a value reduced on the devices feeds the next kernel without going through the host:
//
//   const std::vector<Array> a = dist::dots_to_devices({{r, r}, {p, w}});  // {r.r, p.w} per device
//   dist::elementwise(axpy_k, {a, p, x, x});   // "raw double a, double p, double x" -> x
//
// Accepted by dist::elementwise, dist::reduce over several operands, the batched reductions of
// dist_reductions.hpp (in a reduction's operands), dist::stencil, dist::stencil_reduce and
// dist::update_and_reduce (as inputs); not as a distributed operand (an updated array, a dot's or
// sum's array, a call's only array operand). LogicError naming the call, the rank, the block and
// the device when the vector's size differs from the number of local members, or when an array is
// on another device than its member's or of another context (raised on the rank that passed them,
// before anything is enqueued: in a collective call the other ranks then wait for it until the
// communicator's timeout, so pass per-member arrays made by the same call on every rank).
// The DistOperand keeps a pointer to the vector (as to a DistArray): the vector must outlive it.
class SKEIN_EXPORT DistOperand {
 public:
  DistOperand(const DistArray& array) : array_(&array) {}  // NOLINT: implicit on purpose
  DistOperand(const GridArray& grid) : grid_(&grid) {}     // NOLINT: implicit on purpose
  DistOperand(const std::vector<Array>& per_member)        // NOLINT: implicit on purpose
      : per_member_(&per_member) {}
  DistOperand(Operand scalar);  // NOLINT: scalars only
  template <class T>
    requires(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
  DistOperand(T value) : DistOperand(Operand(value)) {}  // NOLINT

  const DistArray* array() const { return array_; }
  const GridArray* grid() const { return grid_; }
  // The per-member arrays, or null.
  const std::vector<Array>* per_member() const { return per_member_; }
  const std::optional<Operand>& scalar() const { return scalar_; }

 private:
  const DistArray* array_ = nullptr;
  const GridArray* grid_ = nullptr;
  const std::vector<Array>* per_member_ = nullptr;
  std::optional<Operand> scalar_;
};

// Runs `kernel` on every local block. Arguments in the kernel's order (inputs, then outputs);
// every distributed argument must have the same layout (and so the same rows on every device).
// Either DistArrays or GridArrays (on their points: grid_ops.hpp), not both in one call.
SKEIN_EXPORT void elementwise(const ElementwiseKernel& kernel, std::span<const DistOperand> args);
inline void elementwise(const ElementwiseKernel& kernel, std::initializer_list<DistOperand> args) {
  elementwise(kernel, std::span<const DistOperand>(args.begin(), args.size()));
}

// out = a * x + y, out = a * x, out = value, out = x (built-ins of elementwise.hpp, per block).
SKEIN_EXPORT void axpy(const Operand& a, const DistArray& x, const DistArray& y,
                       const DistArray& out);
SKEIN_EXPORT void scale(const Operand& a, const DistArray& x, const DistArray& out);
SKEIN_EXPORT void fill(const DistArray& out, const Operand& value);
SKEIN_EXPORT void copy(const DistArray& src, const DistArray& dst);

struct DistReductionOptions {
  // The canonical pairwise tree over global indices: bit-identical for any number of devices
  // and ranks (and slower: every member's partial records are all_gathered).
  bool deterministic = false;
};

// Whole-array reductions of a ReductionKernel with one input: the result (dtype of the kernel's
// output) as a one-element Array on each local device, equal on every member. The reduce
// operation across members is `across` (sum for sums and dots, min, max).
SKEIN_EXPORT std::vector<Array> reduce(const ReductionKernel& kernel, const DistArray& x,
                                       ReduceOp across, const DistReductionOptions& options = {});

// The same for a ReductionKernel with several inputs: `inputs` in the kernel's order, each a
// DistArray, a GridArray (its points), a scalar or per-member arrays (for a raw input), as for
// elementwise; the distributed ones share
// one layout and shape (or one layout of points), DistArrays and GridArrays not mixed (else
// LogicError on every rank). Fast mode: each device's value, then one all_reduce over every
// member. Deterministic mode: the canonical tree over the global C-order indices of the inputs'
// broadcast elements (ReductionKernel::records / combine over every input at once), the same bits
// for any number of ranks and devices and any process grid; no full-size temporary where every
// member's points are one range of global indices (DistArrays; GridArrays split along axis 0
// only, or more generally whose blocks span whole lines after their first partial axis);
// GridArrays split along a later axis are first redistributed into slabs along axis 0 (a full-size
// copy of each grid input per call, as the single-input path). Deterministic calls wait for the
// device before returning. dist_reductions.hpp has several reductions in one collective and the
// split-phase form.
SKEIN_EXPORT std::vector<Array> reduce(const ReductionKernel& kernel,
                                       std::span<const DistOperand> inputs, ReduceOp across,
                                       const DistReductionOptions& options = {});
inline std::vector<Array> reduce(const ReductionKernel& kernel,
                                 std::initializer_list<DistOperand> inputs, ReduceOp across,
                                 const DistReductionOptions& options = {}) {
  return reduce(kernel, std::span<const DistOperand>(inputs.begin(), inputs.size()), across,
                options);
}

// Built-ins, returned to the host on every rank (as double; integers are exact up to 2^53).
SKEIN_EXPORT double sum(const DistArray& x, const DistReductionOptions& options = {});
SKEIN_EXPORT double min(const DistArray& x, const DistReductionOptions& options = {});
SKEIN_EXPORT double max(const DistArray& x, const DistReductionOptions& options = {});
SKEIN_EXPORT double dot(const DistArray& x, const DistArray& y,
                        const DistReductionOptions& options = {});
SKEIN_EXPORT double nrm2(const DistArray& x, const DistReductionOptions& options = {});

// Per-axis sums of a 2-D distributed array: axis 1 (one value per row) into `out`, a 1-D array
// with the same row layout; axis 0 (one value per column) into every device's copy of `out`.
SKEIN_EXPORT void sum_rows(const DistArray& x, const DistArray& out);
SKEIN_EXPORT void sum_columns(const DistArray& x, const ReplicatedArray& out);

// BLAS (blas.hpp) on distributed arrays.
SKEIN_EXPORT double blas_dot(const DistArray& x, const DistArray& y);
SKEIN_EXPORT double blas_nrm2(const DistArray& x);
// y = alpha * A @ x + beta * y: A (m x n) and y (m) split by rows with the same row layout,
// x (n) on every device.
SKEIN_EXPORT void gemv(double alpha, const DistArray& a, const ReplicatedArray& x, double beta,
                       const DistArray& y);
SKEIN_EXPORT void gemv(double alpha, const DistArray& a, const DistArray& x, double beta,
                       const DistArray& y);
// C = alpha * A @ B + beta * C: A (m x k) and C (m x n) split by rows with the same row layout,
// B (k x n) on every device.
SKEIN_EXPORT void gemm(double alpha, const DistArray& a, const ReplicatedArray& b, double beta,
                       const DistArray& c, const blas::GemmOptions& options = {});
SKEIN_EXPORT void gemm(double alpha, const DistArray& a, const DistArray& b, double beta,
                       const DistArray& c, const blas::GemmOptions& options = {});

// A distributed array all_gathered onto every device (device to device, through the
// Communicator).
SKEIN_EXPORT ReplicatedArray replicate(const DistArray& x);

// ---- GridArrays (grid_array.hpp): on the points only, never the halos --------------------------
// The same operations on arrays over a process grid (grid_ops.cpp). Each block's points are a
// strided view of its block with the halo (LocalGridBlock::interior): the framework's kernels take
// it as it is (elementwise: one launch per block, each element's address from the view's strides;
// reductions: the strided reduction, one partial value per device), so the halos are neither read
// nor written and nothing is copied. Operands agree on the points: one communicator, global shape,
// components, process grid and split along every axis (halo widths, stencils and boundaries may
// differ); else LogicError on every rank. Members without points give the identity.
// Deterministic reductions: the points are first redistributed into slabs along axis 0 over the
// same members (each one range of global indices), then reduced as a DistArray's: the same bits
// for any process grid, number of ranks or devices, and as a DistArray holding the same values.
SKEIN_EXPORT void axpy(const Operand& a, const GridArray& x, const GridArray& y,
                       const GridArray& out);
SKEIN_EXPORT void scale(const Operand& a, const GridArray& x, const GridArray& out);
SKEIN_EXPORT void fill(const GridArray& out, const Operand& value);
SKEIN_EXPORT void copy(const GridArray& src, const GridArray& dst);
SKEIN_EXPORT std::vector<Array> reduce(const ReductionKernel& kernel, const GridArray& x,
                                       ReduceOp across, const DistReductionOptions& options = {});
SKEIN_EXPORT double sum(const GridArray& x, const DistReductionOptions& options = {});
SKEIN_EXPORT double min(const GridArray& x, const DistReductionOptions& options = {});
SKEIN_EXPORT double max(const GridArray& x, const DistReductionOptions& options = {});
SKEIN_EXPORT double dot(const GridArray& x, const GridArray& y,
                        const DistReductionOptions& options = {});
SKEIN_EXPORT double nrm2(const GridArray& x, const DistReductionOptions& options = {});

}  // namespace skein::dist

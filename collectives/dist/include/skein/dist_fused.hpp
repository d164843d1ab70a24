// SPDX-License-Identifier: BSD-3-Clause
// Fused updates and reductions over distributed arrays (skein/fused.hpp's FusedKernel): every
// local block updated and reduced in one pass per device, the reduced value returned on the host
// of every rank, as one term of dist_reductions.hpp's batches:
//
//   skein::FusedKernel cg("double p, double w, double alpha", "double x, double r",
//                         "x += alpha * p; r -= alpha * w", "double rr", "r * r", "a + b", "0",
//                         {.name = "cg_update"});
//   const double rr = dist::update_and_reduce(cg, {p, w, alpha, x, r}, ReduceOp::sum);
//
// Operands: the kernel's inputs, then its updated arrays; DistArrays of one layout and shape, or
// GridArrays of one layout of points (not both), and scalars for inputs. The updated operands are
// distributed, of a dtype computed as stored (not float16/bfloat16), and GridArrays without halos
// (their blocks must be contiguous). Fast mode: each device's value, then one all_reduce (as
// dist::begin_reduce). Deterministic mode: the canonical tree over the global indices,
// bit-identical for any number of ranks and devices, without full-size temporaries; it needs
// members whose points are ranges of global indices (DistArrays, GridArrays split along axis 0
// only): other grids raise LogicError (dist::reduce copies them into slabs, which an update cannot
// write through). LogicError on every rank for bad operands (as dist::begin_reduce and FusedKernel
// check them).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <span>

#include "skein/dist_reductions.hpp"
#include "skein/export.hpp"
#include "skein/fused.hpp"

namespace skein::dist {

// Split-phase: the update and the reduction enqueued; wait() gives the one value.
[[nodiscard]] SKEIN_EXPORT PendingValues
begin_update_and_reduce(const FusedKernel& kernel, std::span<const DistOperand> operands,
                        ReduceOp across, const DistReductionOptions& options = {});
[[nodiscard]] inline PendingValues begin_update_and_reduce(
    const FusedKernel& kernel, std::initializer_list<DistOperand> operands, ReduceOp across,
    const DistReductionOptions& options = {}) {
  return begin_update_and_reduce(
      kernel, std::span<const DistOperand>(operands.begin(), operands.size()), across, options);
}

// The same, waited for: the reduced value (as double) on every rank.
inline double update_and_reduce(const FusedKernel& kernel, std::span<const DistOperand> operands,
                                ReduceOp across, const DistReductionOptions& options = {}) {
  return begin_update_and_reduce(kernel, operands, across, options).wait().at(0);
}
inline double update_and_reduce(const FusedKernel& kernel,
                                std::initializer_list<DistOperand> operands, ReduceOp across,
                                const DistReductionOptions& options = {}) {
  return begin_update_and_reduce(kernel, operands, across, options).wait().at(0);
}

// The same with the reduced value left on the devices: one one-element Array per local member
// (local block order), of the reduction's dtype, on the member's device, from the queue's array
// pool; equal on every member of every rank once the queue gets there (deterministic mode: the
// same bits as update_and_reduce). The CG update whose alpha = rr / pw is computed on the
// devices from values reduced there (per-member arrays, read through the kernel's raw inputs):
//
//   skein::FusedKernel cg("raw double rr, raw double pw, double p, double w", "double x, double r",
//                         "const double alpha = rr[0] / pw[0]; x += alpha * p; r -= alpha * w",
//                         "double rr_next", "r * r", "a + b", "0", {.name = "cg_update"});
//   const std::vector<Array> rr_next =
//       dist::update_and_reduce_to_devices(cg, {rr, pw, p, w, x, r}, ReduceOp::sum);
//
// (apps/skein-cg/cg_device.hpp is a whole CG so.) Checks as
// begin_update_and_reduce; what waits where as dist::reduce_to_devices (dist_reductions.hpp).
SKEIN_EXPORT std::vector<Array> update_and_reduce_to_devices(
    const FusedKernel& kernel, std::span<const DistOperand> operands, ReduceOp across,
    const DistReductionOptions& options = {});
inline std::vector<Array> update_and_reduce_to_devices(const FusedKernel& kernel,
                                                       std::initializer_list<DistOperand> operands,
                                                       ReduceOp across,
                                                       const DistReductionOptions& options = {}) {
  return update_and_reduce_to_devices(
      kernel, std::span<const DistOperand>(operands.begin(), operands.size()), across, options);
}

// The reduction of every local member into element `slot` of into[i], not combined with the other
// members' (no collective): a term of a single collective made later by dist::combine_members
// (dist_reductions.hpp, "Member values"). Fast mode only; checks as update_and_reduce_to_devices,
// and `into` as dist_reductions.hpp says.
SKEIN_EXPORT void update_and_reduce_members(const FusedKernel& kernel,
                                            std::span<const DistOperand> operands,
                                            std::span<const Array> into, std::size_t slot);
inline void update_and_reduce_members(const FusedKernel& kernel,
                                      std::initializer_list<DistOperand> operands,
                                      std::span<const Array> into, std::size_t slot) {
  update_and_reduce_members(kernel, std::span<const DistOperand>(operands.begin(), operands.size()),
                            into, slot);
}

}  // namespace skein::dist

// SPDX-License-Identifier: BSD-3-Clause
// Reductions for solvers: several scalars reduced in one collective (PETSc's VecMDot, a CG
// iteration's dot products), and a split-phase form that returns before the values are complete
// (PETSc's VecDotBegin / VecDotEnd), so that a kernel can be enqueued in between (pipelined CG):
//
//   auto [rr, pw] = dist::dots({{r, r}, {p, w}});            // one collective, both values
//   dist::PendingValues pending = dist::begin_dots({{r, u}, {w, u}});
//   dist::stencil(...);                                      // enqueued while the sums travel
//   const std::vector<double> v = pending.wait();
//
// Each reduction of a batch is a ReductionKernel and its operands, as dist::reduce over several
// operands (dist_ops.hpp): DistArrays, or GridArrays' points, scalars and per-member arrays; every
// distributed operand of the batch has one layout and shape (or one layout of points), and every
// reduction's result one dtype, of at most 64 bytes for the whole batch (8 float64 values):
// LogicError on every rank otherwise. The values come back to the host of every rank as double (a
// complex value's real part), the same bits on every rank, in the batch's order.
//
// How one batch runs. Each local device reduces every term into one small array (one value per
// term), then:
//   fast, over several ranks with NCCL: one all_reduce of the k values, into page-locked host
//     memory where the device can write it (CUDA), enqueued by the begin call;
//   fast, otherwise (one rank, or the MPI backend): each device's k values to the host, combined
//     over the rank's devices and then over the ranks in one MPI exchange of k values
//     (detail::all_reduce_host), which wait() makes: the devices run the kernels enqueued between
//     the begin call and wait() meanwhile;
//   deterministic: every term's records of the canonical tree (as dist::reduce), gathered in one
//     all_gather for the whole batch, each term combined on every device: the same bits for any
//     number of ranks and devices. No full-size temporary where every member's points are one
//     range of global indices (DistArrays, GridArrays split along axis 0); other GridArrays are
//     redistributed into slabs along axis 0 first (a full-size copy of each grid operand per call).
//     The all_gather is enqueued by the begin call (the MPI backend runs it there, on the host).
// wait() waits only for the work enqueued before the begin call returned (a marker on each device,
// not the queue), then reads. So a kernel enqueued in between overlaps the exchange where the
// exchange runs on the host (one rank, the MPI backend); with NCCL the all_reduce runs on the
// arrays' queue, before that kernel on the device, and the overlap is the host's (no wait between
// the two calls).
//
// A PendingValues keeps what its work uses: handles to the operands (and so their blocks and
// communicator), the device values, the page-locked values, the gathered records. Destroyed
// without wait(), it completes the reduction first, its part of the exchange included, and drops
// the values, so that the other ranks' wait() is not left without this rank (errors are dropped
// there: a destructor does not throw). Every rank must call begin in the same order with its other
// collective calls, as any collective call; the exchange that wait() makes counts as a call on the
// communicator, in the order of the wait() calls.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "skein/dist_ops.hpp"
#include "skein/export.hpp"
#include "skein/reduction.hpp"

namespace skein::dist {

// One reduction of a batch: a kernel and its operands in the kernel's order.
struct Reduction {
  const ReductionKernel& kernel;
  std::vector<DistOperand> operands;
};

// The values of a batch being reduced (the begin_* calls are [[nodiscard]]). Move-only.
class SKEIN_EXPORT PendingValues {
 public:
  struct State;
  explicit PendingValues(std::unique_ptr<State> state);
  PendingValues(PendingValues&&) noexcept;
  PendingValues& operator=(PendingValues&&) noexcept;
  ~PendingValues();

  // The values, one per reduction of the batch, equal on every rank. Once per handle (LogicError
  // after a first wait() or on a moved-from handle). Raises what ended the communicator, if the
  // exchange failed or timed out.
  std::vector<double> wait();
  // Whether wait() has been called (or the handle was moved from).
  bool waited() const;

 private:
  std::unique_ptr<State> state_;
};

// Split-phase: enqueues the batch and returns. `across` combines the members' values (sum for
// sums and dot products, min, max).
[[nodiscard]] SKEIN_EXPORT PendingValues begin_reduce(std::span<const Reduction> batch,
                                                      ReduceOp across,
                                                      const DistReductionOptions& options = {});
[[nodiscard]] inline PendingValues begin_reduce(std::initializer_list<Reduction> batch,
                                                ReduceOp across,
                                                const DistReductionOptions& options = {}) {
  return begin_reduce(std::span<const Reduction>(batch.begin(), batch.size()), across, options);
}
// x . y of each pair (dot_kernel: no conjugation), and the sum of each array (sum_kernel).
[[nodiscard]] SKEIN_EXPORT PendingValues
begin_dots(std::span<const std::pair<DistOperand, DistOperand>> pairs,
           const DistReductionOptions& options = {});
[[nodiscard]] inline PendingValues begin_dots(
    std::initializer_list<std::pair<DistOperand, DistOperand>> pairs,
    const DistReductionOptions& options = {}) {
  return begin_dots(
      std::span<const std::pair<DistOperand, DistOperand>>(pairs.begin(), pairs.size()), options);
}
[[nodiscard]] SKEIN_EXPORT PendingValues begin_sums(std::span<const DistOperand> arrays,
                                                    const DistReductionOptions& options = {});
[[nodiscard]] inline PendingValues begin_sums(std::initializer_list<DistOperand> arrays,
                                              const DistReductionOptions& options = {}) {
  return begin_sums(std::span<const DistOperand>(arrays.begin(), arrays.size()), options);
}

// The same, waited for: the values on the host of every rank.
inline std::vector<double> reduce_values(std::span<const Reduction> batch, ReduceOp across,
                                         const DistReductionOptions& options = {}) {
  return begin_reduce(batch, across, options).wait();
}
inline std::vector<double> reduce_values(std::initializer_list<Reduction> batch, ReduceOp across,
                                         const DistReductionOptions& options = {}) {
  return begin_reduce(batch, across, options).wait();
}
inline std::vector<double> dots(std::initializer_list<std::pair<DistOperand, DistOperand>> pairs,
                                const DistReductionOptions& options = {}) {
  return begin_dots(pairs, options).wait();
}
inline std::vector<double> dots(std::span<const std::pair<DistOperand, DistOperand>> pairs,
                                const DistReductionOptions& options = {}) {
  return begin_dots(pairs, options).wait();
}
inline std::vector<double> sums(std::initializer_list<DistOperand> arrays,
                                const DistReductionOptions& options = {}) {
  return begin_sums(arrays, options).wait();
}
inline std::vector<double> sums(std::span<const DistOperand> arrays,
                                const DistReductionOptions& options = {}) {
  return begin_sums(arrays, options).wait();
}

// ---- Values left on the devices ------------------------------------------------------------
// The same batches with their values kept on the devices, for solvers whose next kernel reads them
// from device memory (a CG iteration without a host wait):
//
//   const std::vector<Array> rr = dist::dots_to_devices({{r, r}});  // r.r on every local device
//   dist::elementwise(scale_k, {rr, p, q});  // scale_k: "raw double rr, double p" -> q = rr[0] * p
//
// Returns one Array per local member of the batch's distributed operands, in local block order
// (the order dist::reduce returns its arrays in, and the one DistOperand's per-member arrays take:
// dist_ops.hpp), each on that member's device, from the queue's array pool (as any array Skein
// returns), with one element per reduction of the batch, in the batch's order, of the results'
// dtype (not converted to double). Equal on every member of every rank once the queue gets there
// (deterministic mode: the same bits as the host-valued form's values). The queue is the first
// distributed operand's.
//
// Checks and refusals are begin_reduce's (shared code): one result dtype, at most 64 bytes of
// results, no deterministic mode for a stencil's reduction, outside a group_start()/group_end():
// LogicError naming the *_to_devices call. Collective: every rank calls it, in the same order as
// its other collective calls on the communicator.
//
// What waits where:
//   fast mode: each device's values, then one Communicator::all_reduce of the arrays in place, on
//     the queue. NCCL (any number of ranks and devices per rank): enqueued, nothing waits on the
//     host; the call returns before the values exist. Where one rank holds every member and its
//     devices have peer access to each other (Context's peer access: CUDA devices that allow it,
//     OpenCL devices of one context) and the combination is sum, prod, min or max of a real type,
//     there is no all_reduce: each device waits on the device for the others' values and combines
//     all of them itself, reading them through peer access, in member order (the same bits on
//     every member; enqueued, with either backend). MPI backend (any placement, one rank with
//     several devices included): the all_reduce is staged through host memory and synchronous on
//     the host (communicator.hpp): the call waits for the devices' values, exchanges them and
//     enqueues their copies back to the devices before it returns.
//   deterministic mode: the canonical tree (as begin_reduce's deterministic mode): its all_gather
//     of the records is enqueued (NCCL) or synchronous on the host (MPI), the combine kernels
//     enqueued; where grid operands are first copied into slabs (blocks that are not ranges of
//     global indices), the call waits for the queue before it returns (the slabs are freed).
// Reading an array later on the host (Array::get) waits for the queue, as any array's read.
SKEIN_EXPORT std::vector<Array> reduce_to_devices(std::span<const Reduction> batch, ReduceOp across,
                                                  const DistReductionOptions& options = {});
inline std::vector<Array> reduce_to_devices(std::initializer_list<Reduction> batch, ReduceOp across,
                                            const DistReductionOptions& options = {}) {
  return reduce_to_devices(std::span<const Reduction>(batch.begin(), batch.size()), across,
                           options);
}
// x . y of each pair, and the sum of each array, as begin_dots and begin_sums, to the devices.
SKEIN_EXPORT std::vector<Array> dots_to_devices(
    std::span<const std::pair<DistOperand, DistOperand>> pairs,
    const DistReductionOptions& options = {});
inline std::vector<Array> dots_to_devices(
    std::initializer_list<std::pair<DistOperand, DistOperand>> pairs,
    const DistReductionOptions& options = {}) {
  return dots_to_devices(
      std::span<const std::pair<DistOperand, DistOperand>>(pairs.begin(), pairs.size()), options);
}
SKEIN_EXPORT std::vector<Array> sums_to_devices(std::span<const DistOperand> arrays,
                                                const DistReductionOptions& options = {});
inline std::vector<Array> sums_to_devices(std::initializer_list<DistOperand> arrays,
                                          const DistReductionOptions& options = {}) {
  return sums_to_devices(std::span<const DistOperand>(arrays.begin(), arrays.size()), options);
}

// ---- Member values, combined in one collective later -----------------------------------------
// Reductions that cannot share one batch call, because other work must run between them (a
// fused update of r with r . r, then r's halo exchange, then the stencil w = A r with w . r: a
// single-reduction CG), each leave every local member's own value, not combined with the other
// members', in one slot of that member's array; one collective then combines all of them (as
// PETSc's split reductions gather the VecDotBegin calls before one MPI_Allreduce):
//
//   std::vector<Array> v;  // one 2-element float64 array per local member, on its device
//   dist::update_and_reduce_members(update, {..., x, r}, v, 0);   // slot 0: r . r
//   r.exchange_halos();
//   dist::stencil_reduce_members(apply, {r, w}, v, 1);           // slot 1: w . r
//   dist::combine_members(r, v, ReduceOp::sum);                  // one all_reduce of both
//
// The *_members forms (dist_fused.hpp, dist_stencil.hpp) take `into`: one array per local member
// in local block order (as the *_to_devices forms return them), on the member's device, in the
// operands' context, contiguous, of the reduction's dtype, with room for the value at `slot`;
// LogicError naming the call on the rank that passed it otherwise. They are fast mode only (a
// member's own value has no canonical tree) and not collective: nothing is exchanged, nothing
// waits on the host.
//
// combine_members combines every member's `values` (one array per local member of `members_of`,
// a DistArray or GridArray, checked as above; every array of the same dtype and size) over every
// member of every rank with `across`, in place, in one Communicator::all_reduce on members_of's
// queue (nothing for a communicator of one member). Collective: every rank calls it, outside a
// group, in the same order as its other collective calls; what waits where as
// reduce_to_devices's all_reduce (NCCL: enqueued; MPI backend: synchronous on the host; one rank
// holding every member, its devices peers: combined on the devices, enqueued).
SKEIN_EXPORT void combine_members(const DistOperand& members_of, std::span<const Array> values,
                                  ReduceOp across);

// The same combine enqueued on `on` (a queue of members_of's context holding each local member's
// device, e.g. a second queue of high priority), after the work members_of's queue and the values'
// queues hold now, so that work enqueued later on members_of's queue runs alongside it (the update
// of x in a CG while r . r is all-reduced). Nothing makes members_of's queue wait for it: the call
// returns one Event per local member (local block order), recorded on `on` after the combine, and
// `queue.wait_for(events[i], device_i)` must come before any work that reads, writes or releases
// values[i] (an array of a queue's pool that is released sooner may be reused while the combine
// still reads it). Collective as above; LogicError naming the call for a queue of another context
// or one lacking a member's device.
SKEIN_EXPORT std::vector<Event> combine_members(const DistOperand& members_of,
                                                std::span<const Array> values, ReduceOp across,
                                                const Queue& on);

}  // namespace skein::dist

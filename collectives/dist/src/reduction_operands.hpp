// SPDX-License-Identifier: BSD-3-Clause
// The operands of the reductions over several inputs (dist::reduce over DistOperands in
// dist_reduce.cpp, the batched and split-phase reductions in dist_batch.cpp), checked once per
// call, and the local steps both share: each term's value per local device (fast mode) and each
// term's records of the canonical tree, gathered in one all_gather and combined (deterministic).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ordering.hpp"
#include "skein/dist_ops.hpp"
#include "skein/dist_reductions.hpp"
#include "skein/grid_array.hpp"

namespace skein::dist::reductions {

// A reduction computed by other means than a ReductionKernel (a stencil kernel's): its name (for
// messages), its result's dtype, and its value over local block i written into `out` (one
// element), enqueued on `queue`. It has no deterministic mode.
struct CustomTerm {
  std::string name;
  Dtype dtype = Dtype::float64;
  std::function<void(const Queue& queue, std::size_t block, const Array& out)> local_value;
};

// One reduction of a call: a kernel (or a custom term) and its operands (in the kernel's order).
struct Term {
  const ReductionKernel* kernel = nullptr;
  std::span<const DistOperand> operands;
  const CustomTerm* custom = nullptr;
};

// The term's kernel's name.
std::string term_name(const Term& term);

// The distributed operands of every term of one call: either DistArrays of one layout and shape or
// GridArrays of one layout of points (not both); every term has at least one. Checked in the
// constructor (LogicError on every rank otherwise: layouts are the same on every rank), and the
// per-member operands against the local blocks (checks::check_per_member: LogicError on the rank
// that passed them). Keeps a handle to every array, so that the blocks and the communicator
// outlive a split-phase call.
class Operands {
 public:
  Operands(std::span<const Term> terms, const char* call);

  Communicator& communicator() const;
  const Queue& queue() const;
  int rank() const;
  std::size_t local_size() const;
  std::size_t device(std::size_t i) const;  // context device index of local block i
  std::vector<std::size_t> devices() const;
  std::uint64_t size() const;  // global elements of each distributed operand
  bool on_grids() const { return grid_.has_value(); }

  // Local block i of every operand of `term`, in order (scalars as they are).
  std::vector<Operand> local(const Term& term, std::size_t i) const;
  // Whether every member's points are one range of global C-order indices (always for DistArrays;
  // for GridArrays, when each block spans whole lines of the axes after its first partial one, as
  // a grid split along axis 0 only), and local block i's first index.
  bool in_ranges() const { return ranges_; }
  std::uint64_t first_index(std::size_t i) const;
  // The operands' queues joined to the work queue (queue()).
  void join(detail::Ordering& order) const;

 private:
  std::optional<DistArray> dist_;
  std::optional<GridArray> grid_;
  std::vector<DistArray> dists_;                // every DistArray operand, kept
  std::vector<GridArray> grids_;                // every GridArray operand, kept
  std::vector<std::vector<Array>> per_member_;  // every per-member operand's arrays, kept
  bool ranges_ = true;
};

// A call's terms over copies of its GridArray operands laid out in slabs along axis 0 (each
// redistributed on the first operand's queue): for deterministic reductions over grids whose
// blocks are not ranges of global indices. The copies are full-size temporaries.
class SlabTerms {
 public:
  SlabTerms(std::span<const Term> terms, const Operands& operands);
  std::span<const Term> terms() const { return terms_; }

 private:
  std::vector<GridArray> slabs_;
  std::vector<std::vector<DistOperand>> operands_;
  std::vector<Term> terms_;
};

// The dtype every term's result has (LogicError naming `call` when they differ).
Dtype common_out_dtype(const Operands& ops, std::span<const Term> terms, const char* call);

// Fast mode: term j's value over local block i into element j of outs[i] (one array of
// terms.size() elements per local device, of the terms' output dtype). Enqueued on ops.queue().
void local_values(const Operands& ops, std::span<const Term> terms, std::span<const Array> outs);

// Deterministic mode: every term's records of the canonical tree over local block i, all of them
// gathered in one all_gather, and term j combined into element j of outs[i] (the same bits on
// every member). `ops` must be in_ranges(). Returns the temporaries the enqueued work still reads
// (keep them until it is done).
std::vector<Array> canonical_values(const Operands& ops, std::span<const Term> terms,
                                    std::span<const Array> outs);

// The batch of `terms` enqueued (dist_batch.cpp: fast or deterministic, as begin_reduce), their
// values to come on the host of every rank. Checks the operands (LogicError naming `call`).
PendingValues begin_terms(std::span<const Term> terms, ReduceOp across,
                          const DistReductionOptions& options, const char* call);

// The same batch with its values left on the devices (dist::reduce_to_devices): one array of
// terms.size() values per local device, from the queue's array pool. The same checks as
// begin_terms (shared). Fast mode: local_values, then one all_reduce of the arrays in place on
// the queue; deterministic: canonical_values into the arrays.
std::vector<Array> terms_to_devices(std::span<const Term> terms, ReduceOp across,
                                    const DistReductionOptions& options, const char* call);

// Fast mode, no collective (dist::*_members): term j's value over local block i into element
// slot + j of into[i]. Checks the operands, and `into` against the local members (count, context,
// device, the terms' dtype, room for the terms at `slot`): LogicError naming `call` on the rank
// that passed it.
void terms_into(std::span<const Term> terms, std::span<const Array> into, std::size_t slot,
                const char* call);

}  // namespace skein::dist::reductions

// SPDX-License-Identifier: BSD-3-Clause
// The operands and local steps of the reductions over several inputs: see reduction_operands.hpp.
#include "reduction_operands.hpp"

#include <fmt/format.h>

#include "dist_values.hpp"
#include "operand_checks.hpp"
#include "skein/detail/errors.hpp"

namespace skein::dist::reductions {

namespace {

// Whether member m's points are one range of global C-order indices: after its leading axes of
// one point, one axis may be partial, and every later axis must be whole.
bool block_is_range(const GridLayout& layout, std::size_t member) {
  const GridBlock b = layout.block(member);
  if (b.empty()) return true;
  std::size_t k = 0;
  while (k < layout.ndim() && b.extent[k] == 1) ++k;
  for (std::size_t j = k + 1; j < layout.ndim(); ++j) {
    if (b.extent[j] != layout.shape()[j]) return false;
  }
  return true;
}

std::uint64_t block_first_index(const GridLayout& layout, const GridBlock& b) {
  std::uint64_t index = 0;
  for (std::size_t j = 0; j < layout.ndim(); ++j) index = index * layout.shape()[j] + b.offset[j];
  return index * layout.components();
}

GridLayout slab_layout(const GridLayout& layout) {
  GridOptions options;
  options.grid.assign(layout.ndim(), 1);
  options.grid[0] = layout.members();
  options.components = layout.components();
  return GridLayout(layout.shape(), layout.members_per_rank(), options);
}

}  // namespace

std::string term_name(const Term& term) {
  if (term.custom != nullptr) return term.custom->name;
  return term.kernel == nullptr ? "?" : term.kernel->name();
}

Operands::Operands(std::span<const Term> terms, const char* call) {
  for (const Term& term : terms) {
    bool distributed = false;
    for (const DistOperand& a : term.operands) {
      if (a.array() != nullptr) {
        distributed = true;
        if (grid_) {
          detail::raise_in(SKEIN_HERE, call, "Pass GridArrays or DistArrays to one call, not both.",
                           "kernel {}: a DistArray among GridArray operands", term_name(term));
        }
        if (dist_) checks::check_same_shape(*dist_, *a.array(), call, "the distributed operands");
        if (!dist_) dist_.emplace(*a.array());
        dists_.push_back(*a.array());
      } else if (a.grid() != nullptr) {
        distributed = true;
        if (dist_) {
          detail::raise_in(SKEIN_HERE, call, "Pass GridArrays or DistArrays to one call, not both.",
                           "kernel {}: a GridArray among DistArray operands", term_name(term));
        }
        if (grid_) checks::check_same_points(*grid_, *a.grid(), call, "the grid operands");
        if (!grid_) grid_.emplace(*a.grid());
        grids_.push_back(*a.grid());
      }
    }
    if (!distributed) {
      detail::raise_in(SKEIN_HERE, call,
                       "Give every reduction at least one DistArray or GridArray.",
                       "kernel {}: only scalar or per-member operands", term_name(term));
    }
  }
  if (!dist_ && !grid_) {
    detail::raise_in(SKEIN_HERE, call, "Pass at least one reduction.", "no reductions to compute");
  }
  if (grid_) {
    const GridLayout& layout = grid_->layout();
    for (std::size_t m = 0; ranges_ && m < layout.members(); ++m)
      ranges_ = block_is_range(layout, m);
  }
  const std::vector<std::size_t> local_devices = devices();
  for (const Term& term : terms) {
    checks::check_per_member(term.operands, queue(), local_devices, rank(), call);
    for (const DistOperand& a : term.operands) {
      if (a.per_member() != nullptr) per_member_.push_back(*a.per_member());
    }
  }
}

Communicator& Operands::communicator() const {
  return dist_ ? dist_->communicator() : grid_->communicator();
}
const Queue& Operands::queue() const { return dist_ ? dist_->queue() : grid_->queue(); }
int Operands::rank() const { return dist_ ? dist_->rank() : grid_->rank(); }
std::size_t Operands::local_size() const {
  return dist_ ? dist_->local_size() : grid_->local_size();
}
std::size_t Operands::device(std::size_t i) const {
  return dist_ ? dist_->block(i).device_idx : grid_->block(i).device_idx;
}
std::vector<std::size_t> Operands::devices() const {
  return dist_ ? values::local_devices(*dist_) : values::local_devices(*grid_);
}
std::uint64_t Operands::size() const { return dist_ ? dist_->size() : grid_->size(); }

std::vector<Operand> Operands::local(const Term& term, std::size_t i) const {
  std::vector<Operand> out;
  out.reserve(term.operands.size());
  for (const DistOperand& a : term.operands) {
    if (a.array() != nullptr) {
      out.emplace_back(a.array()->local(i));
    } else if (a.grid() != nullptr) {
      out.emplace_back(a.grid()->local(i));
    } else if (a.per_member() != nullptr) {
      out.emplace_back((*a.per_member())[i]);
    } else {
      out.push_back(*a.scalar());
    }
  }
  return out;
}

std::uint64_t Operands::first_index(std::size_t i) const {
  if (dist_)
    return static_cast<std::uint64_t>(dist_->local_rows(i).begin) * dist_->layout().row_size();
  return block_first_index(grid_->layout(), grid_->block(i).block);
}

void Operands::join(detail::Ordering& order) const {
  for (const auto& a : dists_) order.join(a.queue());
  for (const auto& g : grids_) order.join(g.queue());
  for (const auto& arrays : per_member_) detail::join_per_member(order, arrays);
}

SlabTerms::SlabTerms(std::span<const Term> terms, const Operands& operands) {
  // One copy per distinct array (a term may name one array twice, as r . r).
  std::vector<const GridArray*> sources;
  for (const Term& term : terms) {
    for (const DistOperand& a : term.operands) {
      if (a.grid() == nullptr) continue;
      bool seen = false;
      for (const GridArray* s : sources) seen = seen || s == a.grid();
      if (!seen) sources.push_back(a.grid());
    }
  }
  slabs_.reserve(sources.size());
  for (const GridArray* s : sources) {
    slabs_.emplace_back(s->communicator(), operands.queue(), slab_layout(s->layout()), s->dtype());
    redistribute(operands.queue(), *s, slabs_.back());
  }
  operands_.reserve(terms.size());
  for (const Term& term : terms) {
    std::vector<DistOperand> ops;
    for (const DistOperand& a : term.operands) {
      if (a.grid() == nullptr) {
        ops.push_back(a);
        continue;
      }
      std::size_t k = 0;
      while (sources[k] != a.grid()) ++k;
      ops.emplace_back(slabs_[k]);
    }
    operands_.push_back(std::move(ops));
    terms_.push_back(Term{term.kernel, operands_.back()});
  }
}

Dtype common_out_dtype(const Operands& ops, std::span<const Term> terms, const char* call) {
  std::optional<Dtype> dtype;
  for (std::size_t j = 0; j < terms.size(); ++j) {
    const Dtype d = terms[j].custom != nullptr ? terms[j].custom->dtype
                                               : terms[j].kernel->out_dtype(ops.local(terms[j], 0));
    if (dtype && *dtype != d) {
      detail::raise_in(SKEIN_HERE, call, "Batch reductions whose results have one dtype.",
                       "rank {}: reduction {} ({}) gives {}, the first gives {}", ops.rank(), j,
                       term_name(terms[j]), name(d), name(*dtype));
    }
    dtype = d;
  }
  return *dtype;
}

void local_values(const Operands& ops, std::span<const Term> terms, std::span<const Array> outs) {
  for (std::size_t i = 0; i < ops.local_size(); ++i) {
    for (std::size_t j = 0; j < terms.size(); ++j) {
      if (terms[j].custom != nullptr) {
        terms[j].custom->local_value(ops.queue(), i, outs[i].view(j, {1}));
        continue;
      }
      const std::vector<Operand> in = ops.local(terms[j], i);
      (*terms[j].kernel)(ops.queue(), in, {.out = outs[i].view(j, {1})});
    }
  }
}

std::vector<Array> canonical_values(const Operands& ops, std::span<const Term> terms,
                                    std::span<const Array> outs) {
  Communicator& comm = ops.communicator();
  const Queue& queue = ops.queue();
  const std::uint64_t total = ops.size();
  const std::size_t capacity = ReductionKernel::record_capacity(total);
  // Each member's records: term after term, capacity records of the term's size each.
  std::vector<std::size_t> offset(terms.size() + 1, 0);
  {
    const std::size_t first_local = 0;
    for (std::size_t j = 0; j < terms.size(); ++j) {
      const std::vector<Operand> in = ops.local(terms[j], first_local);
      offset[j + 1] = offset[j] + capacity * terms[j].kernel->record_size(in);
    }
  }
  const std::size_t piece = offset.back();
  const std::size_t members = static_cast<std::size_t>(comm.size());
  std::vector<Array> mine, all, keep;
  for (std::size_t i = 0; i < ops.local_size(); ++i) {
    const std::size_t dev = ops.device(i);
    Array m = Array::empty(queue, {piece}, Dtype::uint8, dev, values::temporaries(queue));
    for (std::size_t j = 0; j < terms.size(); ++j) {
      const std::vector<Operand> in = ops.local(terms[j], i);
      terms[j].kernel->records(queue, in, ops.first_index(i), total,
                               m.view(offset[j], {offset[j + 1] - offset[j]}));
    }
    mine.push_back(m);
    all.push_back(
        Array::empty(queue, {piece * members}, Dtype::uint8, dev, values::temporaries(queue)));
  }
  comm.all_gather(queue, mine, all);
  for (std::size_t i = 0; i < ops.local_size(); ++i) {
    for (std::size_t j = 0; j < terms.size(); ++j) {
      const std::vector<Operand> in = ops.local(terms[j], i);
      Array records = all[i];
      if (terms.size() > 1) {
        // Term j's records of every member, side by side: one rectangle copy.
        const std::size_t bytes = offset[j + 1] - offset[j];
        records = Array::empty(queue, {members, bytes}, Dtype::uint8, ops.device(i),
                               values::temporaries(queue));
        copy_rect(queue, records, all[i].view(offset[j], {members, bytes}, Strides{piece, 1}));
        records = records.reshape({members * bytes});
        keep.push_back(records);
      }
      terms[j].kernel->combine(queue, in, records, total, outs[i].view(j, {1}));
    }
  }
  keep.insert(keep.end(), mine.begin(), mine.end());
  keep.insert(keep.end(), all.begin(), all.end());
  return keep;
}

}  // namespace skein::dist::reductions

// SPDX-License-Identifier: BSD-3-Clause
// The dist:: operations on GridArrays: the framework's kernels on every local block's points (a
// strided view of the block with its halo), finished across members with the Communicator as for
// DistArrays (dist_ops.cpp, whose reductions to one value this shares: dist_values.hpp). See the
// GridArray section of skein/dist_ops.hpp.
#include <cmath>
#include <cstdint>

#include "dist_values.hpp"
#include "grid_ops_impl.hpp"
#include "operand_checks.hpp"
#include "ordering.hpp"
#include "reduction_operands.hpp"
#include "skein/detail/errors.hpp"
#include "skein/dist_ops.hpp"
#include "skein/grid_array.hpp"

namespace skein::dist {

using checks::check_same_points;

namespace {

// The points of every local block (views; empty for a member without points).
struct GridPoints {
  const GridArray& x;
  Communicator& communicator() const { return x.communicator(); }
  const Queue& queue() const { return x.queue(); }
  int rank() const { return x.rank(); }
  std::size_t size() const { return x.size(); }
  Shape shape() const { return x.layout().global_shape(); }
  std::size_t local_size() const { return x.local_size(); }
  const std::vector<LocalGridBlock>& blocks() const { return x.blocks(); }
  const LocalGridBlock& block(std::size_t i) const { return x.block(i); }
  Array local(std::size_t i) const { return x.local(i); }
};

// Slabs along axis 0 over x's members, without halos: each member's points are one range of
// global indices, [offset(axis 0) * points per slab row, ...).
GridLayout slab_layout(const GridLayout& layout) {
  GridOptions options;
  options.grid.assign(layout.ndim(), 1);
  options.grid[0] = layout.members();
  options.components = layout.components();
  return GridLayout(layout.shape(), layout.members_per_rank(), options);
}

// Deterministic: x's points as slabs (redistribute, on x's queue), then the canonical tree as for
// a DistArray of the same global array.
std::vector<Array> reduce_in_slabs(const ReductionKernel& kernel, const GridArray& x) {
  GridArray slabs(x.communicator(), x.queue(), slab_layout(x.layout()), x.dtype());
  redistribute(x.queue(), x, slabs);
  const std::size_t row =
      x.layout().ndim() == 0 || x.layout().shape()[0] == 0 ? 0 : x.size() / x.layout().shape()[0];
  return values::reduce_canonical(kernel, GridPoints{slabs}, [&](std::size_t i) {
    return static_cast<std::uint64_t>(slabs.block(i).block.offset[0]) * row;
  });
}

double grid_reduce_to_value(const GridArray& x, const ReductionKernel& kernel, ReduceOp across,
                            const DistReductionOptions& options, const char* call) {
  detail::require_outside_group(x.communicator(), call);
  const GridPoints points{x};
  if (options.deterministic)
    return values::checked_value(points, reduce_in_slabs(kernel, x).at(0), call);
  const Operand first(x.local(0));
  return values::combine_values(points, kernel.out_dtype(std::span<const Operand>(&first, 1)),
                                across, call, [&](std::size_t i, const Array& out) {
                                  const Operand in(x.local(i));
                                  kernel(x.queue(), std::span<const Operand>(&in, 1), {.out = out});
                                });
}

}  // namespace

namespace on_grids {

void elementwise(const ElementwiseKernel& kernel, std::span<const DistOperand> args) {
  const GridArray* first = nullptr;
  for (const auto& a : args) {
    if (a.array() != nullptr) {
      detail::raise_in(SKEIN_HERE, "dist::elementwise",
                       "Pass GridArrays or DistArrays to one kernel, not both.",
                       "kernel {}: a DistArray among GridArray operands", kernel.name());
    }
    if (a.grid() == nullptr) continue;
    if (first == nullptr) {
      first = a.grid();
    } else {
      check_same_points(*first, *a.grid(), "dist::elementwise", "the grid operands");
    }
  }
  const std::vector<std::size_t> devices = values::local_devices(*first);
  checks::check_per_member(args, first->queue(), devices, first->rank(), "dist::elementwise");
  detail::Ordering order(first->queue(), devices);
  for (const auto& a : args) {
    if (a.grid() != nullptr) order.join(a.grid()->queue());
    if (a.per_member() != nullptr) detail::join_per_member(order, *a.per_member());
  }
  std::vector<Operand> local;
  local.reserve(args.size());
  for (std::size_t i = 0; i < first->local_size(); ++i) {
    if (first->block(i).block.empty()) continue;  // no points, nothing to launch
    local.clear();
    for (const auto& a : args) {
      if (a.grid() != nullptr) {
        local.emplace_back(a.grid()->local(i));
      } else if (a.per_member() != nullptr) {
        local.emplace_back((*a.per_member())[i]);
      } else {
        local.push_back(*a.scalar());
      }
    }
    kernel(first->queue(), std::span<const Operand>(local));
  }
  order.release();
}

}  // namespace on_grids

void axpy(const Operand& a, const GridArray& x, const GridArray& y, const GridArray& out) {
  check_same_points(x, y, "dist::axpy", "x and y");
  check_same_points(x, out, "dist::axpy", "x and out");
  detail::Ordering order(x.queue(), values::local_devices(x));
  order.join(y.queue());
  order.join(out.queue());
  for (std::size_t i = 0; i < x.local_size(); ++i) {
    if (!x.block(i).block.empty()) skein::axpy(x.queue(), a, x.local(i), y.local(i), out.local(i));
  }
  order.release();
}

void scale(const Operand& a, const GridArray& x, const GridArray& out) {
  check_same_points(x, out, "dist::scale", "x and out");
  detail::Ordering order(x.queue(), values::local_devices(x));
  order.join(out.queue());
  for (std::size_t i = 0; i < x.local_size(); ++i) {
    if (!x.block(i).block.empty()) skein::scale(x.queue(), a, x.local(i), out.local(i));
  }
  order.release();
}

void fill(const GridArray& out, const Operand& value) {
  for (std::size_t i = 0; i < out.local_size(); ++i) {
    if (!out.block(i).block.empty()) skein::fill(out.queue(), out.local(i), value);
  }
}

void copy(const GridArray& src, const GridArray& dst) {
  check_same_points(src, dst, "dist::copy", "src and dst");
  detail::Ordering order(src.queue(), values::local_devices(src));
  order.join(dst.queue());
  for (std::size_t i = 0; i < src.local_size(); ++i) {
    if (!src.block(i).block.empty()) skein::copy(src.queue(), src.local(i), dst.local(i));
  }
  order.release();
}

std::vector<Array> reduce(const ReductionKernel& kernel, const GridArray& x, ReduceOp across,
                          const DistReductionOptions& options) {
  if (!options.deterministic) return values::reduce_fast(kernel, GridPoints{x}, across);
  return reduce_in_slabs(kernel, x);
}

double sum(const GridArray& x, const DistReductionOptions& options) {
  return grid_reduce_to_value(x, sum_kernel(x.dtype()), ReduceOp::sum, options, "dist::sum");
}

double min(const GridArray& x, const DistReductionOptions& options) {
  values::require_nonempty(GridPoints{x}, "dist::min");
  return grid_reduce_to_value(x, min_kernel(x.dtype()), ReduceOp::min, options, "dist::min");
}

double max(const GridArray& x, const DistReductionOptions& options) {
  values::require_nonempty(GridPoints{x}, "dist::max");
  return grid_reduce_to_value(x, max_kernel(x.dtype()), ReduceOp::max, options, "dist::max");
}

double dot(const GridArray& x, const GridArray& y, const DistReductionOptions& options) {
  check_same_points(x, y, "dist::dot", "x and y");
  const char* call = "dist::dot";
  detail::require_outside_group(x.communicator(), call);
  const Queue& queue = x.queue();
  // y is read on x's queue, after the work y's queue holds; the result is waited for before
  // returning, so y's later work cannot overtake the read (no release needed).
  if (options.deterministic) {
    // The canonical tree over the records of x and y together (the batches' path): no full-size
    // temporary where the blocks are ranges of global indices, else slab copies of x and y.
    const DistOperand operands[] = {x, y};
    const reductions::Term term{&dot_kernel(x.dtype(), y.dtype()), operands};
    return reductions::begin_terms(std::span<const reductions::Term>(&term, 1), ReduceOp::sum,
                                   options, call)
        .wait()
        .at(0);
  }
  detail::Ordering order(queue, values::local_devices(x));
  order.join(y.queue());
  const Operand first[] = {Operand(x.local(0)), Operand(y.local(0))};
  return values::combine_values(GridPoints{x}, dot_kernel(x.dtype(), y.dtype()).out_dtype(first),
                                ReduceOp::sum, call, [&](std::size_t i, const Array& out) {
                                  const Operand in[] = {Operand(x.local(i)), Operand(y.local(i))};
                                  dot_kernel(x.dtype(), y.dtype())(queue, in, {.out = out});
                                });
}

double nrm2(const GridArray& x, const DistReductionOptions& options) {
  return std::sqrt(dot(x, x, options));
}

}  // namespace skein::dist

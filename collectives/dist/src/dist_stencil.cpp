// SPDX-License-Identifier: BSD-3-Clause
// dist::stencil (skein/dist_stencil.hpp): a StencilKernel over every local block, each with its
// geometry in the global domain.
#include "skein/dist_stencil.hpp"

#include <optional>
#include <utility>
#include <vector>

#include "dist_values.hpp"
#include "reduction_operands.hpp"
#include "operand_checks.hpp"
#include "ordering.hpp"
#include "skein/detail/errors.hpp"
#include "skein/dist_array.hpp"
#include "skein/grid_array.hpp"

namespace skein::dist {

namespace {

const char* const kCall = "dist::stencil";

// The operands' kind, checked: GridArrays of one points layout, or DistArrays of one layout and
// shape, never both; at least one.
struct Operands {
  const GridArray* grid = nullptr;
  const DistArray* rows = nullptr;
};

Operands check_operands(const StencilKernel& kernel, std::span<const DistOperand> args) {
  Operands o;
  for (std::size_t k = 0; k < args.size(); ++k) {
    // A per-member array given to a field parameter would be read around the point, outside it.
    if (args[k].per_member() != nullptr && !kernel.param_is_raw(k)) {
      detail::raise_in(SKEIN_HERE, kCall,
                       "Declare the parameter `raw` (`raw double s` -> `s[0]`): per-member arrays "
                       "are values, not fields.",
                       "kernel {}: argument {} is per-member arrays for a field parameter",
                       kernel.name(), k);
    }
  }
  for (const auto& a : args) {
    if ((a.grid() != nullptr && o.rows != nullptr) || (a.array() != nullptr && o.grid != nullptr)) {
      detail::raise_in(SKEIN_HERE, kCall, "Pass GridArrays or DistArrays to one kernel, not both.",
                       "kernel {}: GridArray and DistArray operands together", kernel.name());
    }
    if (a.grid() != nullptr) {
      if (o.grid == nullptr) {
        o.grid = a.grid();
      } else {
        checks::check_same_points(*o.grid, *a.grid(), kCall, "the grid operands");
      }
    } else if (a.array() != nullptr) {
      if (o.rows == nullptr) {
        o.rows = a.array();
      } else {
        checks::check_same_shape(*o.rows, *a.array(), kCall, "the distributed operands");
      }
    }
  }
  if (o.grid == nullptr && o.rows == nullptr) {
    detail::raise_in(SKEIN_HERE, kCall, "Pass at least one GridArray or DistArray.",
                     "kernel {}: no distributed operand", kernel.name());
  }
  return o;
}

StencilGeometry grid_geometry(const GridArray& x, const LocalGridBlock& b) {
  const GridLayout& layout = x.layout();
  StencilGeometry g{.domain = layout.shape()};
  for (std::size_t a = 0; a < layout.ndim(); ++a) {
    g.offset.push_back(b.block.offset[a]);
    g.halo.push_back(layout.halo(a));
  }
  return g;
}

StencilGeometry row_geometry(const DistArray& x, const LocalBlock& b) {
  StencilGeometry g{.domain = x.shape()};
  g.offset.assign(x.shape().size(), 0);
  g.offset[0] = b.rows.begin;
  g.halo.assign(x.shape().size(), 0);
  g.halo[0] = x.layout().halo().width;
  return g;
}

// Local block i of every operand (fields: the blocks' points; scalars as they are).
std::vector<Operand> local_args(std::span<const DistOperand> args, std::size_t i) {
  std::vector<Operand> local;
  local.reserve(args.size());
  for (const auto& a : args) {
    if (a.scalar()) {
      local.push_back(*a.scalar());
    } else if (a.grid() != nullptr) {
      local.emplace_back(a.grid()->block(i).interior);
    } else if (a.per_member() != nullptr) {
      // Whole, not offset: a raw parameter's pointer is its element 0 (stencil.hpp).
      local.emplace_back((*a.per_member())[i]);
    } else {
      local.emplace_back(a.array()->block(i).interior);
    }
  }
  return local;
}

template <class Distributed, class Geometry>
void run_blocks(const Queue& queue, const StencilKernel& kernel, std::span<const DistOperand> args,
                StencilRegion region, const Distributed& first, Geometry&& geometry) {
  const std::vector<std::size_t> devices = values::local_devices(first);
  checks::check_per_member(args, queue, devices, first.rank(), kCall);
  detail::Ordering order(queue, devices);
  for (const auto& a : args) {
    if (a.grid() != nullptr) order.join(a.grid()->queue());
    if (a.array() != nullptr) order.join(a.array()->queue());
    if (a.per_member() != nullptr) detail::join_per_member(order, *a.per_member());
  }
  for (std::size_t i = 0; i < first.local_size(); ++i) {
    const auto& block = first.block(i);
    if (block.interior.size() == 0) continue;  // a member without points
    const std::vector<Operand> local = local_args(args, i);
    kernel(queue, std::span<const Operand>(local), geometry(block), region);
  }
  order.release();
}

}  // namespace

void stencil(const StencilKernel& kernel, std::span<const DistOperand> args, StencilRegion region) {
  const Operands o = check_operands(kernel, args);
  stencil(o.grid != nullptr ? o.grid->queue() : o.rows->queue(), kernel, args, region);
}

void stencil(const Queue& queue, const StencilKernel& kernel, std::span<const DistOperand> args,
             StencilRegion region) {
  const Operands o = check_operands(kernel, args);
  if (o.grid != nullptr) {
    run_blocks(queue, kernel, args, region, *o.grid,
               [&](const LocalGridBlock& b) { return grid_geometry(*o.grid, b); });
  } else {
    run_blocks(queue, kernel, args, region, *o.rows,
               [&](const LocalBlock& b) { return row_geometry(*o.rows, b); });
  }
}

namespace {

// The stencil kernel's reduction as the one term of a batch (reduction_operands.hpp), handed to
// `run` (begin_terms or terms_to_devices). The term writes member i's value: the kernel's
// reduction over the block's region (the identity for a member without points).
// With `halos` (one marker per local device, after the exchange on the halo queue): the
// interior, the wait for the device's halos, then the edges added to it.
template <class Run>
auto with_stencil_term(const StencilKernel& kernel, std::span<const DistOperand> args,
                       StencilRegion region, const char* call, Run&& run,
                       const std::vector<std::pair<std::size_t, Event>>* halos = nullptr) {
  const Operands o = check_operands(kernel, args);
  const std::optional<Dtype> dtype = kernel.reduction_dtype();
  if (!dtype) {
    detail::raise_in(SKEIN_HERE, call,
                     "Declare the reduction in StencilOptions::reduction, or call dist::stencil.",
                     "kernel {} has no reduction", kernel.name());
  }
  reductions::CustomTerm custom{.name = kernel.name(), .dtype = *dtype, .local_value = {}};
  custom.local_value = [&](const Queue& queue, std::size_t i, const Array& out) {
    const std::vector<Operand> local = local_args(args, i);
    const StencilGeometry geometry = o.grid != nullptr ? grid_geometry(*o.grid, o.grid->block(i))
                                                       : row_geometry(*o.rows, o.rows->block(i));
    if (halos == nullptr) {
      kernel.reduce(queue, std::span<const Operand>(local), geometry, out, 0, region);
      return;
    }
    const std::size_t device =
        o.grid != nullptr ? o.grid->block(i).device_idx : o.rows->block(i).device_idx;
    kernel.reduce(queue, std::span<const Operand>(local), geometry, out, 0,
                  StencilRegion::interior);
    for (const auto& [d, marker] : *halos) {
      if (d == device) queue.wait_for(marker, d);
    }
    kernel.reduce(queue, std::span<const Operand>(local), geometry, out, 0, StencilRegion::edges,
                  /*accumulate=*/true);
  };
  const reductions::Term term{.kernel = nullptr, .operands = args, .custom = &custom};
  return run(std::span<const reductions::Term>(&term, 1));
}

}  // namespace

PendingValues begin_stencil_reduce(const StencilKernel& kernel, std::span<const DistOperand> args,
                                   ReduceOp across, StencilRegion region,
                                   const DistReductionOptions& options) {
  const char* call = "dist::begin_stencil_reduce";
  return with_stencil_term(kernel, args, region, call, [&](std::span<const reductions::Term> t) {
    return reductions::begin_terms(t, across, options, call);
  });
}

namespace {

// HaloOverlap's checks, then its exchange started on the halo queue: one marker per local device,
// after the device's halos.
std::vector<std::pair<std::size_t, Event>> start_overlap(const StencilKernel& kernel,
                                                         std::span<const DistOperand> args,
                                                         const HaloOverlap& overlap,
                                                         const char* call) {
  const Operands o = check_operands(kernel, args);
  const std::vector<std::size_t> devices =
      o.grid != nullptr ? values::local_devices(*o.grid) : values::local_devices(*o.rows);
  const int rank = o.grid != nullptr ? o.grid->rank() : o.rows->rank();
  const Queue& fields = o.grid != nullptr ? o.grid->queue() : o.rows->queue();
  if (overlap.halo_queue.context() != fields.context()) {
    detail::raise_in(SKEIN_HERE, call, "Make the halo queue in the fields' context.",
                     "rank {}: HaloOverlap::halo_queue is of another context", rank);
  }
  for (std::size_t d : devices) {
    if (!overlap.halo_queue.has_device(d)) {
      detail::raise_in(SKEIN_HERE, call,
                       "Make the halo queue over the fields' devices (Queue(context, devices)).",
                       "rank {}: HaloOverlap::halo_queue lacks device {}", rank, d);
    }
  }
  for (std::size_t k = 0; k < overlap.exchange.size(); ++k) {
    const DistOperand& e = overlap.exchange[k];
    if (e.array() == nullptr && e.grid() == nullptr) {
      detail::raise_in(SKEIN_HERE, call,
                       "List the DistArrays or GridArrays whose halos to exchange.",
                       "rank {}: HaloOverlap::exchange[{}] is not a distributed array", rank, k);
    }
  }
  // The exchange waits on the device for the work that wrote the fields, then runs on the halo
  // queue; each device's edges wait for its marker.
  for (const DistOperand& e : overlap.exchange) {
    const Queue& q = e.grid() != nullptr ? e.grid()->queue() : e.array()->queue();
    for (std::size_t d : devices) overlap.halo_queue.wait_for(q.record_marker(d), d);
  }
  for (const DistOperand& e : overlap.exchange) {
    if (e.grid() != nullptr) {
      e.grid()->exchange_halos(overlap.halo_queue);
    } else {
      e.array()->exchange_halos(overlap.halo_queue);
    }
  }
  std::vector<std::pair<std::size_t, Event>> halos;
  for (std::size_t d : devices) halos.emplace_back(d, overlap.halo_queue.record_marker(d));
  return halos;
}

}  // namespace

std::vector<Array> stencil_reduce_to_devices(const StencilKernel& kernel,
                                             std::span<const DistOperand> args, ReduceOp across,
                                             const HaloOverlap& overlap,
                                             const DistReductionOptions& options) {
  const char* call = "dist::stencil_reduce_to_devices";
  const auto halos = start_overlap(kernel, args, overlap, call);
  return with_stencil_term(
      kernel, args, StencilRegion::all, call,
      [&](std::span<const reductions::Term> t) {
        return reductions::terms_to_devices(t, across, options, call);
      },
      &halos);
}

void stencil_reduce_members(const StencilKernel& kernel, std::span<const DistOperand> args,
                            std::span<const Array> into, std::size_t slot,
                            const HaloOverlap& overlap) {
  const char* call = "dist::stencil_reduce_members";
  const auto halos = start_overlap(kernel, args, overlap, call);
  with_stencil_term(
      kernel, args, StencilRegion::all, call,
      [&](std::span<const reductions::Term> t) {
        reductions::terms_into(t, into, slot, call);
        return 0;
      },
      &halos);
}

void stencil_reduce_members(const StencilKernel& kernel, std::span<const DistOperand> args,
                            std::span<const Array> into, std::size_t slot, StencilRegion region) {
  const char* call = "dist::stencil_reduce_members";
  with_stencil_term(kernel, args, region, call, [&](std::span<const reductions::Term> t) {
    reductions::terms_into(t, into, slot, call);
    return 0;
  });
}

std::vector<Array> stencil_reduce_to_devices(const StencilKernel& kernel,
                                             std::span<const DistOperand> args, ReduceOp across,
                                             StencilRegion region,
                                             const DistReductionOptions& options) {
  const char* call = "dist::stencil_reduce_to_devices";
  return with_stencil_term(kernel, args, region, call, [&](std::span<const reductions::Term> t) {
    return reductions::terms_to_devices(t, across, options, call);
  });
}

}  // namespace skein::dist

// SPDX-License-Identifier: BSD-3-Clause
// skein_grid_elementwise, skein_grid_stencil and skein_grid_stencil_reduce: a kernel over every
// local block of the grids among its operands (skein::dist::elementwise and dist::stencil; the
// reduction per block, as dist::begin_stencil_reduce computes each member's value, into the
// caller's partial arrays instead of an all_reduce of its own).
#include <string>
#include <vector>

#include "errors.hpp"
#include "handles.hpp"
#include "skein/dist_ops.hpp"
#include "skein/dist_stencil.hpp"

namespace skein::capi {

namespace {

Operand scalar(const skein_operand& a) {
  switch (a.kind) {
    case SKEIN_OPERAND_FLOAT64: return Operand(a.real_value);
    case SKEIN_OPERAND_FLOAT32: return Operand(static_cast<float>(a.real_value));
    case SKEIN_OPERAND_INT64: return Operand(static_cast<std::int64_t>(a.int_value));
    case SKEIN_OPERAND_INT32: return Operand(static_cast<std::int32_t>(a.int_value));
    case SKEIN_OPERAND_GRID: break;
  }
  invalid("an operand's kind is " + std::to_string(static_cast<int>(a.kind)) +
              ", not a skein_operand_kind",
          "Pass SKEIN_OPERAND_GRID (0) .. SKEIN_OPERAND_INT32 (4).");
}

// The operands as skein::dist's (grids by address: the handles outlive the call); the first grid.
std::vector<dist::DistOperand> operands(const skein_operand* args, std::size_t count,
                                        const GridArray** first) {
  if (count > 0) require(args, "args");
  std::vector<dist::DistOperand> out;
  out.reserve(count);
  for (std::size_t k = 0; k < count; ++k) {
    if (args[k].kind == SKEIN_OPERAND_GRID) {
      if (args[k].grid == nullptr) {
        invalid("args[" + std::to_string(k) + "] is a grid operand whose grid is NULL",
                "Set .grid to a grid made by skein_grid_create.");
      }
      out.emplace_back(args[k].grid->grid);
      if (first != nullptr && *first == nullptr) *first = &args[k].grid->grid;
    } else {
      out.emplace_back(scalar(args[k]));
    }
  }
  return out;
}

const StencilKernel& stencil_kernel(const skein_kernel* kernel) {
  require(kernel, "kernel");
  if (!kernel->stencil) {
    invalid("the kernel is an elementwise kernel",
            "Pass a kernel made by skein_kernel_create_stencil.");
  }
  return *kernel->stencil;
}

StencilRegion region_of(skein_region region) {
  switch (region) {
    case SKEIN_REGION_ALL: return StencilRegion::all;
    case SKEIN_REGION_INTERIOR: return StencilRegion::interior;
    case SKEIN_REGION_EDGES: return StencilRegion::edges;
  }
  invalid("region is " + std::to_string(static_cast<int>(region)) + ", not a skein_region",
          "Pass SKEIN_REGION_ALL (0), SKEIN_REGION_INTERIOR (1) or SKEIN_REGION_EDGES (2).");
}

// Local block `l` of every operand: grids as the block's points, scalars as they are.
std::vector<Operand> block_operands(const std::vector<dist::DistOperand>& args, std::size_t l) {
  std::vector<Operand> out;
  out.reserve(args.size());
  for (const auto& a : args) {
    if (a.grid() != nullptr) {
      out.emplace_back(a.grid()->block(l).interior);
    } else {
      out.push_back(*a.scalar());
    }
  }
  return out;
}

// Every grid among the operands on the points of `first` (one communicator, shape, components,
// process grid and split; halos may differ), as skein::dist checks its operands: the blocks are
// read at the first grid's geometry, so another layout would be read out of its bounds. Layouts are
// the same on every rank, so every rank refuses.
void check_same_points(const GridArray& first, const std::vector<dist::DistOperand>& args) {
  const GridLayout& a = first.layout();
  for (std::size_t k = 0; k < args.size(); ++k) {
    const GridArray* g = args[k].grid();
    if (g == nullptr || g == &first) continue;
    const GridLayout& b = g->layout();
    bool same = g->communicator() == first.communicator() && a.shape() == b.shape() &&
                a.components() == b.components() && a.grid() == b.grid() &&
                a.members_per_rank() == b.members_per_rank();
    for (std::size_t axis = 0; same && axis < a.ndim(); ++axis)
      same = a.sizes(axis) == b.sizes(axis);
    if (!same) {
      invalid("args[" + std::to_string(k) + "] is a grid of another layout (" + b.describe() +
                  ") than the first grid operand's (" + a.describe() + ")",
              "Make the grid operands with one layout of points (shape, components, process grid "
              "and split; halos may differ) and one communicator.");
    }
  }
}

// The partial arrays, checked: one float64 array per local block, on that block's device.
void check_partials(const GridArray& grid, skein_array* const* partials, std::size_t count) {
  if (count != grid.local_size()) {
    invalid("partials_count is " + std::to_string(count) + ", but the grid has " +
                std::to_string(grid.local_size()) + " local blocks",
            "Pass one partial array per local block (skein_grid_local_count()).");
  }
  if (count > 0) require(partials, "partials");
  for (std::size_t l = 0; l < count; ++l) {
    const std::string at = "partials[" + std::to_string(l) + "]";
    if (partials[l] == nullptr) invalid(at + " is NULL", "Pass a float64 array of 1 element.");
    const Array& p = partials[l]->array;
    if (p.dtype() != Dtype::float64 || p.size() < 1) {
      invalid(at + " is " + std::string(name(p.dtype())) + " of " + std::to_string(p.size()) +
                  " elements",
              "Pass a float64 array of at least 1 element.");
    }
    if (p.device_idx() != grid.block(l).device_idx) {
      invalid(at + " is on device " + std::to_string(p.device_idx()) + ", block " +
                  std::to_string(l) + " on device " + std::to_string(grid.block(l).device_idx),
              "Make partials[l] on the device of the grid's local block l (the communicator's "
              "local device l).");
    }
  }
}

}  // namespace

}  // namespace skein::capi

using namespace skein::capi;

extern "C" {

skein_status skein_grid_elementwise(const skein_kernel* kernel, const skein_operand* args,
                                    size_t count) {
  return guard("skein_grid_elementwise", [&] {
    require(kernel, "kernel");
    if (!kernel->elementwise) {
      invalid("the kernel is a stencil kernel",
              "Pass a kernel made by skein_kernel_create_elementwise.");
    }
    if (count != kernel->params) {
      invalid("count is " + std::to_string(count) + ", but the kernel has " +
                  std::to_string(kernel->params) + " parameters",
              "Pass one operand per parameter, in the parameters' order.");
    }
    std::vector<skein::dist::DistOperand> list = operands(args, count, nullptr);
    // The assigned parameters again, as the C++ kernel's outputs: their grids.
    for (const std::size_t w : kernel->written) {
      if (args[w].kind != SKEIN_OPERAND_GRID) {
        invalid("args[" + std::to_string(w) + "] is a scalar, but the operation assigns it",
                "Pass a grid for every parameter the operation assigns.");
      }
      list.emplace_back(args[w].grid->grid);
    }
    skein::dist::elementwise(*kernel->elementwise, list);
  });
}

skein_status skein_grid_stencil(const skein_kernel* kernel, const skein_operand* args, size_t count,
                                skein_region region) {
  return guard("skein_grid_stencil", [&] {
    const skein::StencilKernel& k = stencil_kernel(kernel);
    const skein::StencilRegion r = region_of(region);
    const std::vector<skein::dist::DistOperand> list = operands(args, count, nullptr);
    skein::dist::stencil(k, list, r);
  });
}

skein_status skein_grid_stencil_reduce(const skein_kernel* kernel, const skein_operand* args,
                                       size_t count, skein_region region,
                                       skein_array* const* partials, size_t partials_count) {
  return guard("skein_grid_stencil_reduce", [&] {
    const skein::StencilKernel& k = stencil_kernel(kernel);
    const skein::StencilRegion r = region_of(region);
    if (!k.reduction_dtype()) {
      invalid("the kernel " + k.name() + " has no reduction",
              "Pass map (and reduce, identity) to skein_kernel_create_stencil, or call "
              "skein_grid_stencil.");
    }
    const skein::GridArray* first = nullptr;
    const std::vector<skein::dist::DistOperand> list = operands(args, count, &first);
    if (first == nullptr) {
      invalid("no operand is a grid", "Pass at least one grid among the operands.");
    }
    check_same_points(*first, list);
    check_partials(*first, partials, partials_count);
    const skein::GridLayout& layout = first->layout();
    const skein::Queue& queue = first->queue();
    for (std::size_t l = 0; l < first->local_size(); ++l) {
      const skein::LocalGridBlock& b = first->block(l);
      const std::vector<skein::Operand> local = block_operands(list, l);
      skein::StencilGeometry geometry{.domain = layout.shape(), .offset = b.block.offset};
      for (std::size_t a = 0; a < layout.ndim(); ++a) geometry.halo.push_back(layout.halo(a));
      k.reduce(queue, local, geometry, partials[l]->array, 0, r);
      // The partials' own queue (the caller's all_reduce) waits for the reduction on the device.
      const skein::Queue& theirs = partials[l]->array.queue();
      if (!(theirs == queue)) theirs.wait_for(queue.record_marker(b.device_idx), b.device_idx);
    }
  });
}

}  // extern "C"

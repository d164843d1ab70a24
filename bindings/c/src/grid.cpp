// SPDX-License-Identifier: BSD-3-Clause
// skein_grid_*: a skein::GridArray over a process grid, its per-axis values in the caller's order
// (reversed to C order for SKEIN_ORDER_FORTRAN: the C++ global shape is then the reversed Fortran
// shape with the components last, the same memory as the Fortran array with them first), its
// blocks, host transfers and halo exchange.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "errors.hpp"
#include "handles.hpp"

namespace skein::capi {

namespace {

Boundary boundary(const skein_boundary& b, const char* side, std::size_t axis) {
  switch (b.kind) {
    case SKEIN_BOUNDARY_OPEN:
      return Boundary::open();
    case SKEIN_BOUNDARY_PERIODIC:
      return Boundary::periodic();
    case SKEIN_BOUNDARY_REFLECT:
      return Boundary::reflect();
    case SKEIN_BOUNDARY_CONSTANT:
      return Boundary::constant(b.value);
  }
  invalid(std::string("options->") + side + "[" + std::to_string(axis) + "].kind is " +
              std::to_string(static_cast<int>(b.kind)) + ", not a skein_boundary_kind",
          "Pass SKEIN_BOUNDARY_OPEN (0), _PERIODIC, _REFLECT or _CONSTANT (3).");
}

std::vector<Boundary> boundaries(const skein_boundary* given, std::size_t ndim, skein_order order,
                                 const char* side) {
  std::vector<Boundary> out;
  if (given == nullptr) return out;
  for (std::size_t a = 0; a < ndim; ++a) out.push_back(boundary(given[a], side, a));
  if (order == SKEIN_ORDER_FORTRAN) std::reverse(out.begin(), out.end());
  return out;
}

GridOptions grid_options(const skein_grid_options* options, std::size_t ndim) {
  GridOptions o;
  if (options == nullptr) return o;
  const skein_order order = options->order;
  check_order(order);
  if (options->stencil != SKEIN_STENCIL_STAR && options->stencil != SKEIN_STENCIL_BOX) {
    invalid("options->stencil is " + std::to_string(static_cast<int>(options->stencil)) +
                ", not a skein_stencil_shape",
            "Pass SKEIN_STENCIL_STAR (0) or SKEIN_STENCIL_BOX (1).");
  }
  if (options->components == 0) {
    invalid("options->components is 0", "Pass 1 or more values per point.");
  }
  o.components = options->components;
  if (options->process_grid != nullptr) o.grid = to_c_order(options->process_grid, ndim, order);
  if (options->halo != nullptr) o.halo = to_c_order(options->halo, ndim, order);
  o.stencil = options->stencil == SKEIN_STENCIL_BOX ? Stencil::box : Stencil::star;
  o.lower = boundaries(options->lower, ndim, order, "lower");
  o.upper = boundaries(options->upper, ndim, order, "upper");
  return o;
}

const LocalGridBlock& local_block(const skein_grid* grid, std::size_t local) {
  if (local >= grid->grid.local_size()) {
    invalid("local is " + std::to_string(local) + ", but this rank has " +
                std::to_string(grid->grid.local_size()) + " blocks",
            "Pass an index below skein_grid_local_count().");
  }
  return grid->grid.block(local);
}

void check_nbytes(std::size_t nbytes, std::size_t expected, const char* what) {
  if (nbytes != expected) {
    invalid(std::string("nbytes is ") + std::to_string(nbytes) + ", but " + what + " has " +
                std::to_string(expected) + " bytes",
            "Pass exactly that many bytes (points times components times the dtype's size).");
  }
}

}  // namespace

}  // namespace skein::capi

using namespace skein::capi;

extern "C" {

void skein_grid_options_init(skein_grid_options* options) {
  if (options == nullptr) return;
  *options = skein_grid_options{.order = SKEIN_ORDER_C,
                                .components = 1,
                                .process_grid = nullptr,
                                .halo = nullptr,
                                .stencil = SKEIN_STENCIL_STAR,
                                .lower = nullptr,
                                .upper = nullptr};
}

skein_status skein_grid_create(skein_communicator* comm, const skein_queue* queue, size_t ndim,
                               const size_t* shape, skein_dtype dtype,
                               const skein_grid_options* options, skein_grid** grid) {
  return guard("skein_grid_create", [&] {
    require(comm, "comm");
    require(grid, "grid");
    if (ndim < 1 || ndim > 3) {
      invalid("ndim is " + std::to_string(ndim), "Pass 1, 2 or 3 axes.");
    }
    require(shape, "shape");
    const skein::Dtype type = skein::capi::dtype(dtype);
    const skein_order order = options != nullptr ? options->order : SKEIN_ORDER_C;
    const skein::GridOptions o = grid_options(options, ndim);
    skein::Communicator& c = *comm->comm;
    skein::GridLayout layout = skein::GridLayout::over(c, to_c_order(shape, ndim, order), o);
    skein::GridArray array = queue != nullptr
                                 ? skein::GridArray(c, queue->queue, std::move(layout), type)
                                 : skein::GridArray(c, std::move(layout), type);
    *grid = new skein_grid{std::move(array), order};
  });
}

skein_status skein_grid_destroy(skein_grid* grid) {
  return guard("skein_grid_destroy", [&] { delete grid; });
}

skein_status skein_grid_dtype(const skein_grid* grid, skein_dtype* dtype) {
  return guard("skein_grid_dtype", [&] {
    require(grid, "grid");
    require(dtype, "dtype");
    *dtype = c_dtype(grid->grid.dtype());
  });
}

skein_status skein_grid_ndim(const skein_grid* grid, size_t* ndim) {
  return guard("skein_grid_ndim", [&] {
    require(grid, "grid");
    require(ndim, "ndim");
    *ndim = grid->grid.layout().ndim();
  });
}

skein_status skein_grid_process_grid(const skein_grid* grid, skein_order order,
                                     size_t* process_grid) {
  return guard("skein_grid_process_grid", [&] {
    require(grid, "grid");
    require(process_grid, "process_grid");
    from_c_order(grid->grid.layout().grid(), order, process_grid);
  });
}

skein_status skein_grid_local_count(const skein_grid* grid, size_t* count) {
  return guard("skein_grid_local_count", [&] {
    require(grid, "grid");
    require(count, "count");
    *count = grid->grid.local_size();
  });
}

skein_status skein_grid_local_block(const skein_grid* grid, size_t local, skein_order order,
                                    size_t* offset, size_t* extent) {
  return guard("skein_grid_local_block", [&] {
    require(grid, "grid");
    check_order(order);
    const skein::GridBlock& b = local_block(grid, local).block;
    if (offset != nullptr) from_c_order(b.offset, order, offset);
    if (extent != nullptr) from_c_order(b.extent, order, extent);
  });
}

skein_status skein_grid_local_array(const skein_grid* grid, size_t local, int with_halo,
                                    skein_array** array) {
  return guard("skein_grid_local_array", [&] {
    require(grid, "grid");
    require(array, "array");
    const skein::LocalGridBlock& b = local_block(grid, local);
    // A copy of the Array shares the block's buffer: the view stays valid while either lives.
    *array = new skein_array{with_halo != 0 ? b.with_halo : b.interior};
  });
}

skein_status skein_grid_local_to_host(const skein_grid* grid, size_t local, void* host,
                                      size_t nbytes) {
  return guard("skein_grid_local_to_host", [&] {
    require(grid, "grid");
    const skein::Array& points = local_block(grid, local).interior;
    check_nbytes(nbytes, points.nbytes(), "the block's points");
    if (nbytes > 0) require(host, "host");
    points.get(std::span<std::byte>(static_cast<std::byte*>(host), nbytes));
  });
}

skein_status skein_grid_local_from_host(const skein_grid* grid, size_t local, const void* host,
                                        size_t nbytes) {
  return guard("skein_grid_local_from_host", [&] {
    require(grid, "grid");
    const skein::Array& points = local_block(grid, local).interior;
    check_nbytes(nbytes, points.nbytes(), "the block's points");
    if (nbytes > 0) require(host, "host");
    points.set(std::span<const std::byte>(static_cast<const std::byte*>(host), nbytes));
  });
}

skein_status skein_grid_scatter(const skein_grid* grid, const void* host, size_t nbytes,
                                int root_rank) {
  return guard("skein_grid_scatter", [&] {
    require(grid, "grid");
    // A wrong size (or NULL host) on the root is refused by GridArray::scatter on every rank,
    // which a check here, on the root alone, could not do.
    const bool is_root = grid->grid.rank() == root_rank;
    std::span<const std::byte> bytes;
    if (is_root && host != nullptr) bytes = {static_cast<const std::byte*>(host), nbytes};
    grid->grid.scatter(bytes, root_rank);
  });
}

skein_status skein_grid_gather(const skein_grid* grid, void* host, size_t nbytes, int root_rank) {
  return guard("skein_grid_gather", [&] {
    require(grid, "grid");
    // Gathered first on every rank (collective), then checked on the root: a check before it, on
    // the root alone, would leave the other ranks waiting.
    const std::vector<std::byte> bytes = grid->grid.gather_bytes(root_rank);
    if (grid->grid.rank() != root_rank) return;
    check_nbytes(nbytes, grid->grid.nbytes(), "the global array");
    if (nbytes > 0) require(host, "host");
    if (!bytes.empty()) std::memcpy(host, bytes.data(), bytes.size());
  });
}

skein_status skein_grid_exchange_halos(const skein_grid* grid) {
  return guard("skein_grid_exchange_halos", [&] {
    require(grid, "grid");
    grid->grid.exchange_halos();
  });
}

skein_status skein_grid_exchange_halos_many(const skein_grid* const* grids, size_t count) {
  return guard("skein_grid_exchange_halos_many", [&] {
    if (count > 0) require(grids, "grids");
    std::vector<skein::GridArray> arrays;
    arrays.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      if (grids[i] == nullptr) {
        invalid("grids[" + std::to_string(i) + "] is NULL", "Pass grids made by skein_grid_create.");
      }
      arrays.push_back(grids[i]->grid);
    }
    skein::exchange_halos(arrays);
  });
}

}  // extern "C"

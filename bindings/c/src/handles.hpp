// SPDX-License-Identifier: BSD-3-Clause
// The C API's handles (the opaque structs of <skein/skein.h>), each owning the C++ object behind
// it, and the checks and conversions every part of the API shares: NULL handles and out-pointers,
// enumerations a C caller may pass out of range, and per-axis arrays in either order.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skein/array.hpp"
#include "skein/communicator.hpp"
#include "skein/dtype.hpp"
#include "skein/elementwise.hpp"
#include "skein/grid_array.hpp"
#include "skein/queue.hpp"
#include "skein/runtime.hpp"
#include "skein/skein.h"
#include "skein/stencil.hpp"

namespace skein::hdf5 {
class File;
}
namespace skein {
class CheckpointManager;
}

struct skein_runtime {
  std::unique_ptr<skein::Runtime> runtime;
};

struct skein_queue {
  skein::Queue queue;
};

// Always a C-ordered C++ array: a Fortran-order shape is kept reversed (the same memory), so that
// every C++ call that wants contiguous arrays (the collectives) takes it.
struct skein_array {
  skein::Array array;
};

struct skein_communicator {
  std::unique_ptr<skein::Communicator> comm;
};

// The grid's order is the caller's: its per-axis values are reversed on the way in and out when it
// is SKEIN_ORDER_FORTRAN; the C++ GridArray is always in C order (components last).
struct skein_grid {
  skein::GridArray grid;
  skein_order order = SKEIN_ORDER_C;
};

// An elementwise kernel keeps how its single parameter list maps onto the C++ kernel's inputs
// and outputs (kernels.cpp); a stencil kernel is the C++ one as it is.
struct skein_kernel {
  std::optional<skein::ElementwiseKernel> elementwise;
  std::vector<std::size_t> written;  // parameters the elementwise operation assigns
  std::size_t params = 0;            // parameters of the elementwise kernel
  std::optional<skein::StencilKernel> stencil;
};

struct skein_hdf5_file {
  std::unique_ptr<skein::hdf5::File> file;
};

struct skein_checkpoint {
  std::unique_ptr<skein::CheckpointManager> manager;
};

namespace skein::capi {

// LogicError (INVALID_ARGUMENT) for a C caller's mistake, with what to do about it.
[[noreturn]] void invalid(const std::string& what, const std::string& hint);

// INVALID_ARGUMENT when `pointer` is NULL, naming the parameter.
template <class T>
void require(const T* pointer, const char* parameter) {
  if (pointer == nullptr) {
    invalid(std::string(parameter) + " is NULL",
            std::string("Pass a valid ") + parameter + " (a handle made by its *_create function, "
                                                       "or a pointer to memory of the caller's).");
  }
}

// Enumerations from C, checked (a C caller can pass any int).
Dtype dtype(skein_dtype value, const char* parameter = "dtype");
skein_dtype c_dtype(Dtype value);
ReduceOp reduce_op(skein_reduce_op value);
void check_order(skein_order order);

// Per-axis values in the caller's order to C order (reversed for SKEIN_ORDER_FORTRAN), and back.
std::vector<std::size_t> to_c_order(const std::size_t* values, std::size_t n, skein_order order);
void from_c_order(const std::vector<std::size_t>& values, skein_order order, std::size_t* out);

// The C++ arrays behind `count` array handles; INVALID_ARGUMENT for a NULL list or entry, or a
// count other than `expected` (the communicator's local size).
std::vector<Array> arrays(skein_array* const* handles, std::size_t count, std::size_t expected,
                          const char* parameter);

}  // namespace skein::capi

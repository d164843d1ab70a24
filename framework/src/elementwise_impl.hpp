// SPDX-License-Identifier: BSD-3-Clause
// What the files of ElementwiseKernel (skein/elementwise.hpp) share: the kernel's Impl, a call
// resolved against its arguments, and the entry points from one file into another.
// elementwise_kernel.cpp resolves, plans and launches calls and keeps their plans;
// elementwise_source.cpp generates the kernel's source; elementwise_builtins.cpp holds the
// built-in operations (axpy, scale, fill, copy, astype, binary, compare, unary).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "codegen/layout.hpp"
#include "codegen/params.hpp"
#include "codegen/programs.hpp"
#include "kernel_operands.hpp"
#include "skein/elementwise.hpp"

namespace skein::detail::elementwise {

// A plan made by the full path, kept for later calls of the same key: what make_plan computed
// that does not depend on the buffers or the scalars' values.
struct FastPlan {
  codegen::CallKey key;
  const void* context = nullptr;  // the context's Impl; alive while `program` is
  std::weak_ptr<const codegen::CompiledProgram>
      program;                     // weak: the program cache decides its life
  const Kernel* kernel = nullptr;  // in *program
  std::size_t device = 0, groups = 0, local = 0;
  std::vector<Dtype> dtypes;        // per parameter
  std::vector<std::uint64_t> tail;  // the values after the parameters (size, layout)
};

}  // namespace skein::detail::elementwise

namespace skein {

struct ElementwiseKernel::Impl {
  std::vector<detail::codegen::ParamDecl> params;  // inputs, then outputs
  std::size_t n_in = 0;
  std::string operation;
  ElementwiseOptions options;
  std::uint64_t owner = detail::codegen::new_cache_owner();
  mutable std::atomic<std::size_t> built{0};  // programs generated (cache misses)
  std::vector<std::string>
      what;  // per parameter, for conversion errors: "argument 'a' of kernel 'k'"

  // The plans of the last few call shapes (most recent first), so that a repeated call skips
  // resolving, the program cache's lookup and the kernel's preparation.
  static constexpr std::size_t kFastPlans = 8;
  mutable std::mutex fast_mutex;
  mutable std::vector<std::shared_ptr<const detail::elementwise::FastPlan>> fast_plans;

  ~Impl() { detail::codegen::drop_cache_owner(owner); }
  std::size_t n_out() const { return params.size() - n_in; }
};

}  // namespace skein

namespace skein::detail::elementwise {

// Resolved::layout_index of a parameter that is not among the non-raw arrays.
inline constexpr std::size_t npos = static_cast<std::size_t>(-1);

// Everything a call needs that depends on its arguments.
struct Resolved {
  std::size_t device = 0;
  std::vector<Operand> args;  // inputs and outputs (allocated ones included)
  std::vector<Array> outputs;
  std::vector<Dtype> dtypes;   // per parameter
  std::vector<bool> is_array;  // per parameter
  codegen::Bindings bindings;
  codegen::Layout layout;
  std::vector<std::size_t>
      layout_index;              // per parameter: its index among the non-raw arrays, or npos
  std::size_t layout_count = 0;  // non-raw arrays
  std::uint64_t n = 0;
  std::size_t W = 1, U = 1;  // contiguous path: elements per 16-byte chunk, chunks per thread
  std::string signature;
};

// The kernel's source for a resolved call (elementwise_source.cpp).
std::string generate(const ElementwiseKernel::Impl& impl, const Resolved& r);

}  // namespace skein::detail::elementwise

namespace skein::detail {

// An elementwise kernel's call with every output given (inputs, then outputs), through the plans
// kept from earlier calls of the same argument kinds, dtypes, devices and layouts
// (elementwise_kernel.cpp).
void elementwise_enqueue(const ElementwiseKernel& kernel, const Queue& queue,
                         std::span<const Operand> args);

}  // namespace skein::detail

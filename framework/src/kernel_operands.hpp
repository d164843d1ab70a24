// SPDX-License-Identifier: BSD-3-Clause
// What the kernel layers (elementwise, reduction, stencil and fused kernels) share about their
// arguments, Arrays and scalars (Operands), on top of the code-generation module (codegen/): the
// dtypes a call binds, the device and broadcast shape of its arrays, their alignment, and the
// plans kept per call shape with their arguments packed on the stack. Separate from codegen/,
// which knows nothing of Array or Operand, so that Array can use that module.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "codegen/layout.hpp"
#include "codegen/params.hpp"
#include "skein/array.hpp"
#include "skein/operand.hpp"
#include "skein/program.hpp"
#include "skein/queue.hpp"

namespace skein::detail::codegen {

// --- dtypes, devices, shapes -------------------------------------------------------------------

// Binds the placeholders from the arguments of the params (arrays first, then scalars) and checks
// the arrays' dtypes against concrete types. `args` may be shorter than `params` (outputs not
// given). LogicError naming the parameter otherwise.
Bindings bind_types(const std::vector<ParamDecl>& params, std::span<const Operand> args,
                    const std::string& call, const std::string& kernel);
// The device the arrays among `args` run on, after checking that they share the queue's context
// and one device of the queue, and with `launch_device` (a per-device launch) that it is that
// device. `params` name the arguments in errors. std::nullopt when there is no array.
std::optional<std::size_t> common_device(const Queue& queue, std::span<const Operand> args,
                                         const std::vector<ParamDecl>& params,
                                         std::optional<std::size_t> launch_device,
                                         const std::string& call, const std::string& kernel);

// NumPy broadcasting of the shapes of the arrays flagged in `take`.
Shape broadcast_shapes(std::span<const Operand> args, const std::vector<bool>& take,
                       const std::vector<ParamDecl>& params, const std::string& call,
                       const std::string& kernel);

// make_layout's view of an array.
inline ArrayShape shape_of(const Array& a) { return {a.shape(), a.strides(), a.itemsize()}; }

// Bytes from the start of the allocation to the array's element 0 (for alignment).
inline std::uint64_t address_in_allocation(const Array& a) {
  return a.data().offset() + a.offset();
}

// The first element index h < 16 at which every array (by allocation address and itemsize) is
// 16-byte aligned, if any.
std::optional<std::uint64_t> common_vector_start(std::span<const Array* const> arrays);

// --- plans kept per call shape ----------------------------------------------------------------

// What a call's plan depends on besides the buffers and the scalars' values: per argument its
// kind and dtype, and for an array its device, shape, strides and address modulo 16 (the vector
// loop's alignment). Calls with equal keys on one context get equal plans.
struct CallKey {
  static constexpr std::size_t kMax = 64;
  // Only words[0, size) are ever read: left uninitialised, so that making a key per call does not
  // clear 512 bytes.
  std::array<std::uint64_t, kMax> words;
  std::size_t size = 0;

  bool push(std::uint64_t w) {
    if (size == kMax) return false;
    words[size++] = w;
    return true;
  }
  bool operator==(const CallKey& o) const {
    return size == o.size &&
           std::equal(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(size),
                      o.words.begin());
  }
};

// The key of a call giving every argument (inputs and outputs); false when it does not fit.
inline bool make_key(std::span<const Operand> args, CallKey& key) {
  if (!key.push(args.size())) return false;
  for (const auto& a : args) {
    if (a.is_array()) {
      const Array& x = a.array();
      const std::uint64_t head = 1 | (static_cast<std::uint64_t>(x.dtype()) << 8) |
                                 (static_cast<std::uint64_t>(x.ndim()) << 16) |
                                 (static_cast<std::uint64_t>(x.device_idx()) << 24) |
                                 ((address_in_allocation(x) % 16) << 40);
      if (!key.push(head)) return false;
      for (std::size_t d = 0; d < x.ndim(); ++d) {
        if (!key.push(x.shape()[d]) || !key.push(x.strides()[d])) return false;
      }
    } else {
      if (!key.push(2 | (static_cast<std::uint64_t>(a.dtype()) << 8) |
                    (static_cast<std::uint64_t>(a.weak()) << 16))) {
        return false;
      }
    }
  }
  return true;
}

// The plans a kernel object keeps for its last few call shapes, most recent first, under its
// mutex (the FastPlans of elementwise_kernel.cpp and reduction_kernel.cpp: each has `key`,
// `context` and a weak `program`).

// The plan of `context` and `key`, if one is kept.
template <class Plan>
std::shared_ptr<const Plan> find_plan(std::mutex& mutex,
                                      const std::vector<std::shared_ptr<const Plan>>& plans,
                                      const void* context, const CallKey& key) {
  std::lock_guard lock(mutex);
  for (const auto& p : plans) {
    if (p->context == context && p->key == key) return p;
  }
  return nullptr;
}

// Puts `plan` first: drops the plan of the same context and key and those whose program is gone,
// and the oldest when `max` are kept.
template <class Plan>
void keep_plan(std::mutex& mutex, std::vector<std::shared_ptr<const Plan>>& plans, std::size_t max,
               std::shared_ptr<const Plan> plan) {
  std::lock_guard lock(mutex);
  std::erase_if(plans, [&](const auto& p) {
    return (p->context == plan->context && p->key == plan->key) || p->program.expired();
  });
  if (plans.size() == max) plans.pop_back();
  plans.insert(plans.begin(), std::move(plan));
}

// Kernel arguments packed on the stack.
struct StackArgs {
  static constexpr std::size_t kArgs = 48, kWords = 96;
  // Uninitialised storage (KernelArg is an aggregate, so an implicit-lifetime type: assigning
  // args()[i] creates it): an array of 48 default-initialised KernelArgs was 3.4 KB cleared on
  // every call.
  alignas(KernelArg) std::byte arg_storage[kArgs * sizeof(KernelArg)];
  std::array<std::uint64_t, kWords> words;  // scalars, 8- or 16-byte slots
  std::size_t n = 0, w = 0;

  KernelArg* args() { return reinterpret_cast<KernelArg*>(arg_storage); }
  // The n arguments packed so far.
  std::span<const KernelArg> view() { return {reinterpret_cast<const KernelArg*>(arg_storage), n}; }

  bool fits(std::size_t more_args, std::size_t more_words) const {
    return n + more_args <= kArgs && w + more_words <= kWords;
  }
  void value_bytes(const std::byte* p, std::size_t size) {
    const std::size_t slots = (size + 7) / 8;
    if (slots == 2 && w % 2 != 0) ++w;  // 16-byte values 16-byte aligned
    std::memcpy(&words[w], p, size);
    args()[n++] = KernelArg{.kind = KernelArg::Kind::scalar, .size = size, .value = &words[w]};
    w += slots;
  }
  void buffer(const Buffer& b) {
    args()[n++] = KernelArg{.kind = KernelArg::Kind::buffer,
                            .array = false,
                            .device = b.device_idx(),
                            .buffer = b.adapter().get(),
                            .offset = 0,
                            .buffer_device = b.device_idx(),
                            .context = b.context_id()};
    const std::uint64_t offset = b.offset();
    value_bytes(reinterpret_cast<const std::byte*>(&offset), 8);
  }
  void array(const Array& a) {
    const Buffer& b = a.data();
    args()[n++] = KernelArg{.kind = KernelArg::Kind::buffer,
                            .array = true,
                            .device = a.device_idx(),
                            .buffer = b.adapter().get(),
                            .offset = 0,
                            .buffer_device = b.device_idx(),
                            .context = b.context_id()};
    const std::uint64_t offset = b.offset() + a.offset();
    value_bytes(reinterpret_cast<const std::byte*>(&offset), 8);
  }
};

}  // namespace skein::detail::codegen

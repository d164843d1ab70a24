// SPDX-License-Identifier: BSD-3-Clause
// Part of the code-generation module (see types.hpp): launching generated kernels, their run-time
// argument lists, and scratch memory for a call's intermediate results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "skein/buffer.hpp"
#include "skein/program.hpp"
#include "skein/queue.hpp"

namespace skein {
class Array;
}  // namespace skein

namespace skein::detail::codegen {

// A run-time list of kernel arguments.
class ArgPack {
 public:
  // An array as two parameters: its whole allocation (GLOBAL_MEM char*) and the byte offset of
  // element 0 (uint64_t). The whole allocation avoids OpenCL's sub-buffer alignment rules.
  // Defined with the kernel layers' helpers over arrays (kernel_operands.cpp): this module does
  // not depend on Array.
  void array(const Array& a);
  void buffer(const Buffer& b, std::uint64_t byte_offset = 0);
  void bytes(std::span<const std::byte> value);
  template <class T>
  void value(const T& v) {
    bytes(std::as_bytes(std::span<const T>(&v, 1)));
  }
  // The arguments, pointing into this pack (valid until it is changed or destroyed; copies and
  // moves of a pack point into their own storage).
  std::span<const KernelArg> args() const;

 private:
  // `array`, `device`: see KernelArg.
  void add_buffer(const Buffer& b, std::uint64_t byte_offset, bool array, std::size_t device);

  mutable std::vector<KernelArg> args_;
  std::vector<std::size_t> value_at_;  // per argument: offset of a scalar's bytes in bytes_
  std::vector<std::byte> bytes_;
};

// Enqueues `kernel` on device `device_idx` of `queue` with `groups` groups of `local` items.
void launch(const Kernel& kernel, const Queue& queue, std::size_t device_idx, std::size_t groups,
            std::size_t local, const ArgPack& args);
// The same with arguments packed by the caller: the checks of PreparedKernel's launch, without
// making a PreparedKernel (program.cpp).
void launch_generated(const Kernel& kernel, const Queue& queue, std::size_t device_idx,
                      std::size_t groups, std::size_t local, std::span<const KernelArg> args);
// The same for a call through a kept plan, whose arguments have the number, kinds and scalar
// sizes they had when the plan was made (and launched through launch_generated): checks what can
// differ between calls of one plan (the queue's context and devices, each buffer's context and
// device) and leaves the rest; anything amiss goes through launch_generated, which says what.
void launch_planned(const Kernel& kernel, const Queue& queue, std::size_t device_idx,
                    std::size_t groups, std::size_t local, std::span<const KernelArg> args);

// Device memory for the intermediate results of one call, from the queue's temporaries_pool():
// given back when the Scratch goes, and reused by later calls on that queue (its work is in order,
// so a later call never overtakes an earlier one's use). Allocating and freeing per call would
// synchronise: cuMemFree waits for the device.
class Scratch {
 public:
  // At least `bytes` (and at least 256) bytes on `device_idx`.
  Scratch(const Queue& queue, std::size_t device_idx, std::size_t bytes);

  const Buffer& buffer() const { return buffer_; }

 private:
  Buffer buffer_;
};

}  // namespace skein::detail::codegen

// SPDX-License-Identifier: BSD-3-Clause
// Part of the code-generation module (see types.hpp): what the groups of one launch need to hand
// values to each other (a one-launch reduction's last group finishing the work of all): a counter
// word per queue and device, and the OpenCL C under which device-scope fences compile.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "skein/buffer.hpp"
#include "skein/device_parameters.hpp"
#include "skein/queue.hpp"

namespace skein::detail::codegen {

// A 4-byte word of device memory on `device_idx` that belongs to `queue` (and its copies), for
// kernels whose groups count themselves in it: the last group to count resets it, so that it is
// zero whenever no such kernel of the queue runs on the device. Only the queue's work touches it,
// and that work runs in order (Skein's queues are in order; it refuses out-of-order OpenCL
// queues), so two calls never use it at once; calls on two queues, which may overlap, use two
// words. Made on first use and zeroed on the queue, ahead of its kernels.
//
// After a failure: the word stays non-zero only if a kernel stops after some of its groups
// counted and before the last one reset it, that is, fails while running. On CUDA that is a
// sticky error (illegal address, trap, timeout): the context runs nothing more, so no later call
// reads the word (a new context comes with new queues and words). A launch that is refused runs no
// group and leaves the word as it was. When a launch call raises (which may report an earlier
// kernel's failure), the caller drops the word (drop_group_counter) and the next call starts from
// a fresh zero. What an OpenCL command that fails while running leaves behind is up to the
// implementation; a word left counted would make later one-launch reductions on that queue and
// device finish early with a wrong result or write none, so a queue should not be used again
// after such an error (as for any other work on it).
Buffer group_counter(const Queue& queue, std::size_t device_idx);
// Forgets the queue's word on the device if it is still `counter` (a launch that used it failed):
// the next call makes a fresh zeroed one.
void drop_group_counter(const Queue& queue, std::size_t device_idx, const Buffer& counter);

// The -cl-std option value ("CL2.0", "CL3.0") under which OpenCL C code on the device has
// release and acquire fences of device scope (atomic_work_item_fence with memory_scope_device)
// and relaxed atomics of device scope: OpenCL C 2.0, or OpenCL C 3.0 with the features
// __opencl_c_atomic_order_acq_rel and __opencl_c_atomic_scope_device. std::nullopt for a device
// without them (OpenCL C 1.2 has only fences of work-group scope) and for CUDA devices.
std::optional<std::string> opencl_device_fence_std(const DeviceParameters& params);

}  // namespace skein::detail::codegen

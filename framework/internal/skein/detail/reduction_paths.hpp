// SPDX-License-Identifier: BSD-3-Clause
// Internal interface for the tests: how a whole-array reduction in fast mode finishes when its
// first pass runs more than one group, and which way the calls went (reduction_kernel.cpp).
//
// One launch: each group writes its partial value, counts itself in a word of the queue
// (detail::codegen::group_counter), and the last group to count reduces the partial values in
// K_p2's order and writes the result. Two launches: K_p1 writes the partial values, K_p2 reduces
// them. One launch is taken where the context's devices guarantee the fences it needs (every CUDA
// device; OpenCL devices with OpenCL C 2.0, or 3.0 with device-scope acquire/release), two
// otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "skein/export.hpp"
#include "skein/queue.hpp"
#include "skein/reduction.hpp"

namespace skein::detail::red {

enum class Finish {
  automatic,     // one launch where valid (the default)
  two_launches,  // always two, for comparing the paths
};

// Calls made since counting started, by how they finished, and the first pass's group count of
// the last call.
struct FinishCounts {
  std::uint64_t one_group = 0;     // one group: K_p1 alone finishes
  std::uint64_t one_launch = 0;    // more groups, the last one finishes
  std::uint64_t two_launches = 0;  // more groups, then K_p2
  std::size_t last_groups = 0;
};

// Sets how later calls finish (every thread), and starts counting them (which calls skip until
// this is first called).
SKEIN_EXPORT void set_finish_for_tests(Finish finish);
SKEIN_EXPORT FinishCounts finish_counts();

// Whether calls on the queue's context finish in one launch (Finish::automatic).
SKEIN_EXPORT bool one_launch_supported(const Queue& queue);

// Identifies the word the one-launch path of calls on `device_idx` of `queue` counts groups in
// (detail::codegen::group_counter; made if needed): its device address or cl_mem.
SKEIN_EXPORT std::uintptr_t group_counter_id(const Queue& queue, std::size_t device_idx);

// The fast program's source for these inputs, with or without the one-launch code, whatever the
// queue's devices support (to compile it for another backend).
SKEIN_EXPORT std::string fast_source_for_tests(const ReductionKernel& kernel, const Queue& queue,
                                               std::span<const Operand> inputs, bool one_launch);

}  // namespace skein::detail::red

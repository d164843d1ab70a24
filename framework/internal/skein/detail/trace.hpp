// SPDX-License-Identifier: BSD-3-Clause
// Skein's own ranges on a profiler's timeline: NVTX 3 (header-only, from the CUDA toolkit) in the
// "Skein" domain, around collectives, kernel launches, HDF5 writes and checkpoints.
//
// Cost. A name is registered once (trace_name(), kept in a static or an object made once);
// pushing and popping a range is then one call each, with no allocation and no formatting. When no
// tool is attached (NVTX_INJECTION64_PATH unset, as outside nsys / ncu), NVTX hands out null
// handles, and push and pop return on the null check. In a build without the CUDA toolkit they are
// empty functions.
#pragma once

#include "skein/export.hpp"

namespace skein::detail {

// A registered name (nvtxStringHandle_t); null when no tool is attached or NVTX is absent.
using TraceName = const void*;

// Registers `name` (a string with static storage, or one that outlives the call) in the "Skein"
// domain. Call it once per name, not per range.
SKEIN_EXPORT TraceName trace_name(const char* name) noexcept;
// Pushes a range named `name` on this thread (nothing for a null name); returns whether it did.
SKEIN_EXPORT bool trace_push(TraceName name) noexcept;
// Pops the range trace_push pushed.
SKEIN_EXPORT void trace_pop() noexcept;
// An unregistered name, for ranges of the application's own (ProfileRange): copied by the tool.
SKEIN_EXPORT bool trace_push_text(const char* name) noexcept;

// A range for the lifetime of the object.
class TraceRange {
 public:
  explicit TraceRange(TraceName name) noexcept : pushed_(trace_push(name)) {}
  ~TraceRange() {
    if (pushed_) trace_pop();
  }
  TraceRange(const TraceRange&) = delete;
  TraceRange& operator=(const TraceRange&) = delete;

 private:
  bool pushed_;
};

}  // namespace skein::detail

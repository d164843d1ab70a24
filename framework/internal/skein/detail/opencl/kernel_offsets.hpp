// SPDX-License-Identifier: BSD-3-Clause
// Array views at any offset as OpenCL kernel arguments. An OpenCL kernel takes a cl_mem, and a
// sub-buffer's origin must be a multiple of the device's CL_DEVICE_MEM_BASE_ADDR_ALIGN (128 bytes
// on PoCL), so a view that starts inside its allocation (the interior of an array with
// halo rows) is no sub-buffer in general. Before a Program's source is compiled for OpenCL, each
// kernel's parameter `GLOBAL_MEM T* x` (or `__global`, `global`) becomes
// `GLOBAL_MEM T* _skein_base_x, ulong _skein_off_x`, and the kernel's body starts by defining `x`
// from the two, on the line of its `{`; a launch passes the view's whole allocation and its byte
// offset there, as CUDA passes a pointer into the allocation. A kernel whose parameter list cannot
// be read with certainty (a macro that might stand for several parameters, a preprocessor line in
// the list, a prototype that differs from the definition) stays as written, and so do the
// parameters this does not cover (`__constant` pointers, typedef'd pointers, Skein's own
// `_skein_` parameters): their views take a sub-buffer, which needs the alignment.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "skein/detail/adapter.hpp"
#include "skein/export.hpp"

namespace skein::detail::opencl {

// The source with its kernels rewritten, or std::nullopt when no kernel changes. `prelude`: the
// prelude's macros (KERNEL, GLOBAL_MEM, RESTRICT, LOCAL_MEM_DYNAMIC_PARAM, ...) are defined, and
// count as their expansions unless the source defines or undefines them itself.
SKEIN_EXPORT std::optional<RewrittenSource> rewrite_view_offsets(std::string_view source,
                                                                 bool prelude);

// Where a launch argument goes among the kernel's parameters.
struct ArgSlot {
  std::uint32_t index = 0;  // the parameter (for a view: the one taking the allocation)
  bool view = false;        // parameter index + 1 takes the byte offset (a ulong)
  bool operator==(const ArgSlot&) const = default;
};

// How a launch's arguments fill a kernel's parameters.
struct KernelSlots {
  std::vector<ArgSlot> args;          // one per launch argument
  std::vector<std::uint32_t> locals;  // the `__local` parameters (dynamic local memory)
  std::uint32_t parameters = 0;       // the kernel's parameters in all
  bool operator==(const KernelSlots&) const = default;
};

// From the roles of rewrite_view_offsets.
SKEIN_EXPORT KernelSlots slots_from_roles(std::span<const ParamRole> roles);
// From the compiled kernel's parameter names and whether each is `__local`
// (clGetKernelArgInfo): a parameter named _skein_base_X followed by one named _skein_off_X is one
// view.
SKEIN_EXPORT KernelSlots slots_from_arg_info(std::span<const std::string> names,
                                             std::span<const char> local);

}  // namespace skein::detail::opencl

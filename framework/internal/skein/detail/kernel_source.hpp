// SPDX-License-Identifier: BSD-3-Clause
// Internal interface: what a program's source says of one of its kernels, for where the backend
// cannot tell (Kernel::num_args on CUDA drivers without cuFuncGetParamInfo).
#pragma once

#include <string>
#include <string_view>

#include "skein/export.hpp"

namespace skein::detail {

// The number of parameters of kernel `name` as `source` declares it (`KERNEL void name(...)` or
// `__global__ void name(...)`, the qualifier on the line of the name), or -1 where the source has
// no such declaration. Parameters are split at the commas outside parentheses, so that
// LOCAL_MEM_DYNAMIC_PARAM(T, x), which a launch does not fill, joins the parameter before it; an
// empty list or `void` has none.
SKEIN_EXPORT long count_source_params(std::string_view source, const std::string& name);

}  // namespace skein::detail

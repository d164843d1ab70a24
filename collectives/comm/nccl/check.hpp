// SPDX-License-Identifier: BSD-3-Clause
// The one checked-call macro of NCCL: a failed call throws Skein's typed error with the call,
// NCCL's name and description of the code, NCCL's last error message (which says what actually
// went wrong: "Cuda failure 'out of memory'", "socket connect to ... failed"), the device and the
// place in Skein's source.
#pragma once

#include <nccl.h>

#include <string>

#include "skein/detail/errors.hpp"

namespace skein::detail {

// "ncclInvalidArgument" (or "ncclResult_t 42" for a code this header does not know).
std::string nccl_error_name(ncclResult_t result);

// Throws the Skein error that matches `result`: LogicError for invalid arguments and usage (a bug
// in the caller or in Skein), RuntimeError otherwise (CUDA, system, network and remote failures).
[[noreturn]] void throw_nccl_error(ncclResult_t result, const char* call, std::string device,
                                   std::string location);

// Communicators are non-blocking (config.blocking = 0), so ncclInProgress is not a failure: it
// says the call was accepted and finishes in the background, and the caller polls
// ncclCommGetAsyncError. Hence the macro is an expression that yields ncclSuccess or
// ncclInProgress, unlike SKEIN_CU_CHECK's statement.
template <class DeviceFn>
ncclResult_t nccl_checked(ncclResult_t result, const char* call, DeviceFn&& device,
                          const char* file, int line) {
  if (result != ncclSuccess && result != ncclInProgress) [[unlikely]] {
    throw_nccl_error(result, call, device(), source_location(file, line));
  }
  return result;
}

}  // namespace skein::detail

// SKEIN_NCCL_CHECK(ncclAllReduce, (send, recv, count, type, op, comm, stream), describe(device))
// calls NCCL and yields ncclSuccess or ncclInProgress; anything else throws. The device
// expression and the source location are evaluated only on failure, so the fast path costs one
// comparison.
#define SKEIN_NCCL_CHECK(function, arguments, device)                                       \
  (::skein::detail::nccl_checked(                                                           \
      ::function arguments, #function, [&]() -> std::string { return (device); }, __FILE__, \
      __LINE__))

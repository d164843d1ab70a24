// SPDX-License-Identifier: BSD-3-Clause
#include "check.hpp"

#include <fmt/format.h>

#include <utility>

#include "skein/error.hpp"

namespace skein::detail {

std::string nccl_error_name(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return fmt::format("ncclResult_t {}", static_cast<int>(result));
  }
}

namespace {

std::string hint_for(ncclResult_t result) {
  switch (result) {
    case ncclUnhandledCudaError:
      return "A CUDA call inside NCCL failed (out of memory, or a kernel fault earlier on this "
             "device); run with NCCL_DEBUG=WARN for NCCL's account.";
    case ncclSystemError:
      return "A system call inside NCCL failed (sockets, shared memory: check /dev/shm's size "
             "in containers, the network interfaces with NCCL_SOCKET_IFNAME); run with "
             "NCCL_DEBUG=INFO for NCCL's account.";
    case ncclRemoteError:
      return "Another rank failed or went away (see that rank's error first); run with "
             "NCCL_DEBUG=WARN for NCCL's account.";
    case ncclInternalError:
      return "NCCL hit an internal error; run with NCCL_DEBUG=INFO, and check that every rank "
             "uses the same NCCL version.";
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      return "NCCL rejected the arguments or the order of calls; every rank must issue the same "
             "collectives in the same order. If Skein's own checks let this through, this is a "
             "bug in Skein; please report it with this message.";
    default: return "See NCCL's documentation of this call; NCCL_DEBUG=INFO shows what NCCL did.";
  }
}

}  // namespace

void throw_nccl_error(ncclResult_t result, const char* call, std::string device,
                      std::string location) {
  // ncclGetLastError ignores its argument (the message is per thread), and is the only place
  // where NCCL says *what* failed; the result code alone only says which kind of failure.
  const char* last = ncclGetLastError(nullptr);
  std::string what = ncclGetErrorString(result);
  if (last != nullptr && *last != '\0') what += fmt::format(" ({})", last);
  ErrorInfo info{.what = std::move(what),
                 .call = call,
                 .code_name = nccl_error_name(result),
                 .code = static_cast<long long>(result),
                 .has_code = true,
                 .device = std::move(device),
                 .hint = hint_for(result),
                 .location = std::move(location)};
  if (result == ncclInvalidArgument || result == ncclInvalidUsage) throw LogicError(info);
  throw RuntimeError(info);
}

}  // namespace skein::detail

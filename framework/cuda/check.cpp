// SPDX-License-Identifier: BSD-3-Clause
#include "skein/detail/cuda/check.hpp"

#include <fmt/format.h>

#include <utility>

namespace skein::detail {

std::string cuda_error_description(CUresult result) {
  const char* text = nullptr;
  if (cu().cuGetErrorString == nullptr || cu().cuGetErrorString(result, &text) != CUDA_SUCCESS ||
      text == nullptr) {
    return "unknown CUDA error";
  }
  return text;
}

namespace {

std::string hint_for(CUresult result) {
  switch (result) {
    case CUDA_ERROR_OUT_OF_MEMORY:
      return "Free device memory (drop unused buffers and arrays) or use smaller sizes or more "
             "devices.";
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_INVALID_PC:
      return "A kernel faulted; the context cannot be used any more. Run the program under "
             "`compute-sanitizer --tool memcheck` to find the faulting access (errors of "
             "asynchronous work surface at a later call).";
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
      return "The kernel needs more registers or shared memory than one block can have: use a "
             "smaller block size.";
    case CUDA_ERROR_LAUNCH_TIMEOUT:
      return "The kernel ran into the display watchdog's time limit: split the work or use a "
             "device without a display.";
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return "An argument or a CUDA object was not valid for this call: check that buffers, "
             "queues and events belong to the same Skein context and are still alive. If they "
             "do, this is a bug in Skein; please report it with this message.";
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE: return "Check nvidia-smi and CUDA_VISIBLE_DEVICES.";
    case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
      return "The NVIDIA driver is older than the CUDA toolkit Skein was built with: update the "
             "driver.";
    case CUDA_ERROR_DEINITIALIZED:
      return "The CUDA driver is shutting down (a call during process exit?): release Skein "
             "objects before main() returns.";
    case CUDA_ERROR_PEER_ACCESS_UNSUPPORTED:
    case CUDA_ERROR_TOO_MANY_PEERS:
      return "These devices cannot map each other's memory; copies between them are staged "
             "through the host.";
    case CUDA_ERROR_ECC_UNCORRECTABLE:
      return "The device reported a hardware memory error: see nvidia-smi -q and the system "
             "administrator.";
    default: return "See the CUDA driver API documentation of this call and error code.";
  }
}

}  // namespace

std::string cuda_error_name(CUresult result) {
  const char* name = nullptr;
  if (cu().cuGetErrorName == nullptr || cu().cuGetErrorName(result, &name) != CUDA_SUCCESS ||
      name == nullptr) {
    return fmt::format("CUresult {}", static_cast<int>(result));
  }
  return name;
}

void throw_cuda_error(CUresult result, const char* call, std::string device, std::string location,
                      std::size_t requested, std::size_t available) {
  ErrorInfo info{.what = cuda_error_description(result),
                 .call = call,
                 .code_name = cuda_error_name(result),
                 .code = static_cast<long long>(result),
                 .has_code = true,
                 .device = std::move(device),
                 .hint = hint_for(result),
                 .location = std::move(location)};
  switch (result) {
    case CUDA_ERROR_OUT_OF_MEMORY:
      if (requested != 0) {
        info.what += fmt::format(" (requested {}, {} free)", format_bytes(requested),
                                 format_bytes(available));
      }
      throw MemoryError(info, requested, available);
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING: throw LaunchError(info);
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED: throw LogicError(info);
    default: throw RuntimeError(info);
  }
}

void throw_nvrtc_error(nvrtcResult result, const char* call, std::string device,
                       std::string location) {
  const char* text = nvrtcGetErrorString(result);
  // NVRTC's "string" for a code is its name; the message says "failed" for the description.
  ErrorInfo info{.call = call,
                 .code_name = text ? text : "",
                 .code = static_cast<long long>(result),
                 .has_code = true,
                 .device = std::move(device),
                 .hint = "",
                 .location = std::move(location)};
  switch (result) {
    case NVRTC_ERROR_OUT_OF_MEMORY:
      info.hint = "The host ran out of memory while compiling.";
      throw MemoryError(info, 0, 0);
    case NVRTC_ERROR_INVALID_INPUT:
    case NVRTC_ERROR_INVALID_PROGRAM:
    case NVRTC_ERROR_INVALID_OPTION:
    case NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION:
    case NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION:
    case NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID:
      info.hint =
          "NVRTC was called with an invalid argument; this is a bug in Skein or in the "
          "compile options passed to it.";
      throw LogicError(info);
    default:
      info.hint = "See the NVRTC documentation of this call and error code.";
      throw RuntimeError(info);
  }
}

}  // namespace skein::detail

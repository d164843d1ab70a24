// SPDX-License-Identifier: BSD-3-Clause
// The one checked-call macro of the CUDA driver API (and its NVRTC sibling): a failed call throws
// Skein's typed error with the call, the driver's name and description of the code, the device and
// the place in Skein's source.
#pragma once

#include <cuda.h>
#include <nvrtc.h>

#include <cstddef>
#include <string>

#include "skein/detail/cuda/driver.hpp"
#include "skein/detail/errors.hpp"
#include "skein/export.hpp"

namespace skein::detail {

// "CUDA_ERROR_OUT_OF_MEMORY" (or "CUresult 999" when the driver does not know the code).
std::string cuda_error_name(CUresult result);
// The driver's description of the code: "out of memory".
std::string cuda_error_description(CUresult result);

// Throws the Skein error that matches `result`: MemoryError for out-of-memory (with `requested`
// and `available` bytes when the caller knows them), LaunchError for faults of a running kernel,
// LogicError for invalid arguments and handles, RuntimeError otherwise.
[[noreturn]] SKEIN_EXPORT void throw_cuda_error(CUresult result, const char* call,
                                                std::string device, std::string location,
                                                std::size_t requested = 0,
                                                std::size_t available = 0);

[[noreturn]] void throw_nvrtc_error(nvrtcResult result, const char* call, std::string device,
                                    std::string location);

}  // namespace skein::detail

// SKEIN_CU_CHECK(cuMemAlloc, (&ptr, size), describe(device)) calls the driver's cuMemAlloc
// (cuMemAlloc_v2, through the loaded function table). The device expression is evaluated only on
// failure, so describing the device costs nothing on the fast path.
#define SKEIN_CU_CHECK(function, arguments, device)                                         \
  do {                                                                                      \
    const CUresult skein_cu_result_ = ::skein::detail::cu().function arguments;             \
    if (skein_cu_result_ != CUDA_SUCCESS) [[unlikely]] {                                    \
      ::skein::detail::throw_cuda_error(skein_cu_result_, #function, (device), SKEIN_HERE); \
    }                                                                                       \
  } while (false)

// SKEIN_NVRTC_CHECK(nvrtcCreateProgram, (&program, ...), describe(device)); NVRTC is linked
// directly, it has no driver dependency.
#define SKEIN_NVRTC_CHECK(function, arguments, device)                                          \
  do {                                                                                          \
    const nvrtcResult skein_nvrtc_result_ = ::function arguments;                               \
    if (skein_nvrtc_result_ != NVRTC_SUCCESS) [[unlikely]] {                                    \
      ::skein::detail::throw_nvrtc_error(skein_nvrtc_result_, #function, (device), SKEIN_HERE); \
    }                                                                                           \
  } while (false)

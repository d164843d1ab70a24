// SPDX-License-Identifier: BSD-3-Clause
#include "skein/detail/cuda/driver.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <mutex>

#include "skein/detail/cuda/check.hpp"
#include "skein/detail/errors.hpp"

// Two levels, so that the argument is macro-expanded first: "cuMemAlloc_v2", not "cuMemAlloc".
#define SKEIN_CU_STR2(x) #x
#define SKEIN_CU_STR(x) SKEIN_CU_STR2(x)

namespace skein::detail {

namespace {

CudaDriver g_driver;
CudaDriverStatus g_status;
std::once_flag g_once;

template <class F>
bool resolve(void* library, F& fn, const char* symbol) {
  fn = reinterpret_cast<F>(dlsym(library, symbol));
  return fn != nullptr;
}

// Fills g_status; g_driver's pointers are only trusted when g_status.available.
void load() {
  // RTLD_LOCAL: the CUDA runtime, cuBLAS and NCCL dlopen the same library and get this handle
  // back; nothing of ours needs its symbols in the global namespace. Never closed: the driver
  // keeps threads and atexit handlers that outlive any of our objects.
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    g_status.unavailable_reason = fmt::format(
        "no NVIDIA driver is installed (libcuda.so.1 not found: {})", why ? why : "unknown error");
    return;
  }

  // These exist in every driver since CUDA 6 and tell us what to name in the messages below.
  if (!resolve(library, g_driver.cuDriverGetVersion, SKEIN_CU_STR(cuDriverGetVersion)) ||
      !resolve(library, g_driver.cuGetErrorName, SKEIN_CU_STR(cuGetErrorName)) ||
      !resolve(library, g_driver.cuGetErrorString, SKEIN_CU_STR(cuGetErrorString))) {
    g_status.unavailable_reason =
        "libcuda.so.1 was found but is not a usable NVIDIA driver (cuDriverGetVersion or "
        "cuGetErrorName missing)";
    return;
  }
  int version = 0;
  if (g_driver.cuDriverGetVersion(&version) == CUDA_SUCCESS) g_status.version = version;

#define SKEIN_CU_RESOLVE(name) resolve(library, g_driver.name, SKEIN_CU_STR(name));
  SKEIN_CU_FUNCTIONS(SKEIN_CU_RESOLVE)
#undef SKEIN_CU_RESOLVE

  // cuEventElapsedTime_v2 (CUDA 12.8) has the signature of the original entry point, which
  // older drivers still export: use that rather than declare CUDA unavailable.
  if (g_driver.cuEventElapsedTime == nullptr) {
    using ElapsedTime = CUresult (*)(float*, CUevent, CUevent);
    g_driver.cuEventElapsedTime =
        reinterpret_cast<ElapsedTime>(dlsym(library, "cuEventElapsedTime"));
  }

  resolve(library, g_driver.cuFuncGetParamInfo, "cuFuncGetParamInfo");
  resolve(library, g_driver.cuFuncSetSharedMemConfig, "cuFuncSetSharedMemConfig");
  resolve(library, g_driver.cuStreamGetCtx, SKEIN_CU_STR(cuStreamGetCtx));
  resolve(library, g_driver.cuCtxSetFlags, SKEIN_CU_STR(cuCtxSetFlags));
  resolve(library, g_driver.cuMemPrefetchAsync, SKEIN_CU_STR(cuMemPrefetchAsync));
  resolve(library, g_driver.cuMemAdvise, SKEIN_CU_STR(cuMemAdvise));
  g_driver.graphs =
      resolve(library, g_driver.cuGraphCreate, SKEIN_CU_STR(cuGraphCreate)) &&
      resolve(library, g_driver.cuGraphAddKernelNode, SKEIN_CU_STR(cuGraphAddKernelNode)) &&
      resolve(library, g_driver.cuGraphInstantiate, SKEIN_CU_STR(cuGraphInstantiate)) &&
      resolve(library, g_driver.cuGraphExecKernelNodeSetParams,
              SKEIN_CU_STR(cuGraphExecKernelNodeSetParams)) &&
      resolve(library, g_driver.cuGraphLaunch, SKEIN_CU_STR(cuGraphLaunch)) &&
      resolve(library, g_driver.cuGraphExecDestroy, SKEIN_CU_STR(cuGraphExecDestroy)) &&
      resolve(library, g_driver.cuGraphDestroy, SKEIN_CU_STR(cuGraphDestroy)) &&
      resolve(library, g_driver.cuStreamIsCapturing, SKEIN_CU_STR(cuStreamIsCapturing));

  std::string missing;
#define SKEIN_CU_MISSING(name)              \
  if (g_driver.name == nullptr) {           \
    missing += missing.empty() ? "" : ", "; \
    missing += SKEIN_CU_STR(name);          \
  }
  SKEIN_CU_FUNCTIONS(SKEIN_CU_MISSING)
#undef SKEIN_CU_MISSING

  if (!missing.empty()) {
    g_status.unavailable_reason = fmt::format(
        "the NVIDIA driver is too old: it supports CUDA {} but Skein was built against CUDA {} "
        "and needs {} (update the driver)",
        cuda_version_string(g_status.version), cuda_version_string(CUDA_VERSION), missing);
    return;
  }

  if (CUresult result = g_driver.cuInit(0); result != CUDA_SUCCESS) {
    std::string hint;
    if (result == CUDA_ERROR_NO_DEVICE) {
      hint = "; no CUDA device is visible (check nvidia-smi and CUDA_VISIBLE_DEVICES)";
    } else if (result == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH ||
               result == CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE) {
      hint = "; the driver is too old for this device or toolkit";
    }
    g_status.unavailable_reason =
        fmt::format("cuInit failed with {}: {} (CUDA driver {}){}", cuda_error_name(result),
                    cuda_error_description(result), cuda_version_string(g_status.version), hint);
    return;
  }
  g_status.available = true;
}

}  // namespace

const CudaDriverStatus& cuda_driver_status() {
  std::call_once(g_once, load);
  return g_status;
}

const CudaDriver& cuda_driver_checked() {
  const CudaDriverStatus& status = cuda_driver_status();
  if (!status.available) {
    raise<ApiUnavailableError>(ErrorInfo{
        .what = "CUDA is not available: " + status.unavailable_reason, .location = SKEIN_HERE});
  }
  return g_driver;
}

const CudaDriver& cu() { return g_driver; }

std::string cuda_version_string(int version) {
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

}  // namespace skein::detail

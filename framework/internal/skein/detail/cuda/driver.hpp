// SPDX-License-Identifier: BSD-3-Clause
// The CUDA driver API, loaded from libcuda.so.1 with dlopen on first use, so that a Skein binary
// starts (and reports CUDA as unavailable) on machines without an NVIDIA driver.
#pragma once

#include <cuda.h>
#include <cudaProfiler.h>

#include <string>

#include "skein/export.hpp"

namespace skein::detail {

// Every driver function Skein calls. cuda.h maps most names to versioned entry points
// (cuMemAlloc -> cuMemAlloc_v2); the member names go through the same macros, so `cu().cuMemAlloc`
// is the pointer to cuMemAlloc_v2, which is the symbol we look up.
#define SKEIN_CU_FUNCTIONS(X)    \
  X(cuInit)                      \
  X(cuDriverGetVersion)          \
  X(cuGetErrorName)              \
  X(cuGetErrorString)            \
  X(cuDeviceGetCount)            \
  X(cuDeviceGet)                 \
  X(cuDeviceGetName)             \
  X(cuDeviceTotalMem)            \
  X(cuDeviceGetAttribute)        \
  X(cuDeviceGetPCIBusId)         \
  X(cuDeviceGetByPCIBusId)       \
  X(cuDeviceCanAccessPeer)       \
  X(cuDevicePrimaryCtxRetain)    \
  X(cuDevicePrimaryCtxRelease)   \
  X(cuDevicePrimaryCtxSetFlags)  \
  X(cuDevicePrimaryCtxGetState)  \
  X(cuCtxGetFlags)               \
  X(cuCtxGetCurrent)             \
  X(cuCtxPushCurrent)            \
  X(cuCtxPopCurrent)             \
  X(cuCtxGetDevice)              \
  X(cuCtxDestroy)                \
  X(cuCtxSynchronize)            \
  X(cuCtxEnablePeerAccess)       \
  X(cuCtxDisablePeerAccess)      \
  X(cuCtxGetStreamPriorityRange) \
  X(cuCtxGetLimit)               \
  X(cuCtxSetLimit)               \
  X(cuCtxGetCacheConfig)         \
  X(cuCtxSetCacheConfig)         \
  X(cuProfilerStart)             \
  X(cuProfilerStop)              \
  X(cuMemGetInfo)                \
  X(cuMemAlloc)                  \
  X(cuMemFree)                   \
  X(cuMemAllocManaged)           \
  X(cuIpcGetMemHandle)           \
  X(cuIpcOpenMemHandle)          \
  X(cuIpcCloseMemHandle)         \
  X(cuIpcGetEventHandle)         \
  X(cuIpcOpenEventHandle)        \
  X(cuMemHostAlloc)              \
  X(cuMemFreeHost)               \
  X(cuMemHostRegister)           \
  X(cuMemHostUnregister)         \
  X(cuMemHostGetDevicePointer)   \
  X(cuMemcpyHtoDAsync)           \
  X(cuMemcpyDtoHAsync)           \
  X(cuMemcpyDtoDAsync)           \
  X(cuMemcpyPeerAsync)           \
  X(cuMemcpy2DAsync)             \
  X(cuMemcpy3DAsync)             \
  X(cuMemcpy3DPeerAsync)         \
  X(cuMemAllocPitch)             \
  X(cuMemsetD8Async)             \
  X(cuStreamCreate)              \
  X(cuStreamCreateWithPriority)  \
  X(cuStreamGetPriority)         \
  X(cuStreamGetFlags)            \
  X(cuStreamAttachMemAsync)      \
  X(cuStreamDestroy)             \
  X(cuStreamSynchronize)         \
  X(cuStreamWaitEvent)           \
  X(cuEventCreate)               \
  X(cuEventDestroy)              \
  X(cuEventRecord)               \
  X(cuEventSynchronize)          \
  X(cuEventQuery)                \
  X(cuEventElapsedTime)          \
  X(cuModuleLoadData)            \
  X(cuModuleLoadDataEx)          \
  X(cuModuleGetFunction)         \
  X(cuModuleGetGlobal)           \
  X(cuModuleUnload)              \
  X(cuFuncGetAttribute)          \
  X(cuFuncSetAttribute)          \
  X(cuFuncSetCacheConfig)        \
  X(cuPointerGetAttribute)       \
  X(cuMemGetAddressRange)        \
  X(cuLaunchKernel)              \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor)

// NOLINTNEXTLINE(bugprone-macro-parentheses): `name` is declared here, not an expression
#define SKEIN_CU_DECLARE_FUNCTION(name) decltype(&::name) name = nullptr;

struct CudaDriver {
  SKEIN_CU_FUNCTIONS(SKEIN_CU_DECLARE_FUNCTION)
  // Optional (CUDA 12.4+): lets launches check argument counts and sizes; null on older drivers.
  decltype(&::cuFuncGetParamInfo) cuFuncGetParamInfo = nullptr;
  // Optional: deprecated since CUDA 12.4 (banks have been 4 bytes wide since Maxwell); declared
  // by its signature, not decltype, to keep the deprecation warning out. Null where the driver no
  // longer exports it.
  CUresult (*cuFuncSetSharedMemConfig)(CUfunction, CUsharedconfig) = nullptr;
  // Optional: checks that a foreign stream (skein::cuda::queue_from_native) is in the right
  // context.
  decltype(&::cuStreamGetCtx) cuStreamGetCtx = nullptr;
  // Optional (CUDA 12.1+): changes the scheduling of an active context (Context::from_devices
  // with ContextFlags), beside the primary context's flags.
  decltype(&::cuCtxSetFlags) cuCtxSetFlags = nullptr;
  // Optional (CUDA 12.2+: the versions that take a CUmemLocation): managed memory's prefetch and
  // advice; null on older drivers, where those calls raise RuntimeError.
  decltype(&::cuMemPrefetchAsync) cuMemPrefetchAsync = nullptr;
  decltype(&::cuMemAdvise) cuMemAdvise = nullptr;
  // Optional (CUDA 12.0+: the _v2 kernel node entry points): one-kernel graphs, through which
  // repeated launches go (program.cpp); null on older drivers, where every launch is
  // cuLaunchKernel. `graphs` is true when all of them resolved.
  decltype(&::cuGraphCreate) cuGraphCreate = nullptr;
  decltype(&::cuGraphAddKernelNode) cuGraphAddKernelNode = nullptr;
  decltype(&::cuGraphInstantiate) cuGraphInstantiate = nullptr;
  decltype(&::cuGraphExecKernelNodeSetParams) cuGraphExecKernelNodeSetParams = nullptr;
  decltype(&::cuGraphLaunch) cuGraphLaunch = nullptr;
  decltype(&::cuGraphExecDestroy) cuGraphExecDestroy = nullptr;
  decltype(&::cuGraphDestroy) cuGraphDestroy = nullptr;
  decltype(&::cuStreamIsCapturing) cuStreamIsCapturing = nullptr;
  bool graphs = false;
};

#undef SKEIN_CU_DECLARE_FUNCTION

// Whether the driver loaded and initialised, and why not. Computed once, thread-safe.
struct CudaDriverStatus {
  bool available = false;
  std::string unavailable_reason;
  int version = 0;  // cuDriverGetVersion: 13000 for 13.0; 0 when the library did not load
};
const CudaDriverStatus& cuda_driver_status();

// The loaded driver. Throws ApiUnavailableError with the reason when it is not usable.
const CudaDriver& cuda_driver_checked();

// The loaded driver, without the check: only for code that runs after availability was
// established (adapters exist only then), which keeps the hot path to one pointer load.
SKEIN_EXPORT const CudaDriver& cu();

// "13.0" from 13000.
std::string cuda_version_string(int version);

}  // namespace skein::detail

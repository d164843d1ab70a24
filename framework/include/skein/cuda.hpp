// Interoperation with the CUDA driver API: Skein objects from the application's CUDA objects and
// the CUDA objects behind Skein's. Needs <cuda.h> on the include path (CUDA::cuda_driver or
// CUDA::cudart in CMake).
#pragma once

#include "skein/config.hpp"

#if SKEIN_HAS_CUDA

#include <cuda.h>

#include <cstddef>
#include <span>

#include "skein/buffer.hpp"
#include "skein/context.hpp"
#include "skein/export.hpp"
#include "skein/queue.hpp"

namespace skein::cuda {

// A context over existing CUDA contexts, one per device (the devices are the contexts' devices,
// in this order). With take_ownership, Skein destroys them (cuCtxDestroy) when the last Skein
// object using them is gone; otherwise the application must keep them alive that long. If the
// call throws, the application keeps ownership.
SKEIN_EXPORT Context context_from_backend_contexts(std::span<const CUcontext> contexts,
                                                   bool take_ownership = false);

// A context over these devices' primary contexts: the ones the CUDA runtime, cuBLAS and NCCL use.
// Context::from_devices makes the same for CUDA devices.
SKEIN_EXPORT Context context_from_backend_devices(std::span<const CUdevice> devices);

// The stream of one device of a queue; it stays Skein's (do not destroy it).
SKEIN_EXPORT CUstream native_stream(const Queue& queue, std::size_t device_idx);

// The device address of the buffer's first byte (0 for an empty buffer).
SKEIN_EXPORT CUdeviceptr native_pointer(const Buffer& buffer);

// The CUDA context of one device of a context.
SKEIN_EXPORT CUcontext native_context(const Context& context, std::size_t device_idx);

// The CUdevice of a CUDA device.
SKEIN_EXPORT CUdevice native_device(const Device& device);

}  // namespace skein::cuda

#endif  // SKEIN_HAS_CUDA

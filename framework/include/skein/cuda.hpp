// SPDX-License-Identifier: BSD-3-Clause
// Interoperation with the CUDA driver API: Skein objects from the application's CUDA objects and
// the CUDA objects behind Skein's. Needs <cuda.h> on the include path (CUDA::cuda_driver or
// CUDA::cudart in CMake).
#pragma once

#include "skein/config.hpp"

#if SKEIN_HAS_CUDA

#include <cuda.h>

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "skein/buffer.hpp"
#include "skein/context.hpp"
#include "skein/export.hpp"
#include "skein/memory.hpp"
#include "skein/queue.hpp"

namespace skein::cuda {

// A context over existing CUDA contexts, one per device (the devices are the contexts' devices,
// in this order). With take_ownership, Skein destroys them (cuCtxDestroy) when the last Skein
// object using them is gone; otherwise the application must keep them alive that long. If the
// call throws, the application keeps ownership. LogicError for no contexts or a null one.
SKEIN_EXPORT Context context_from_backend_contexts(std::span<const CUcontext> contexts,
                                                   bool take_ownership = false);

// A context over these devices' primary contexts: the ones the CUDA runtime, cuBLAS and NCCL use.
// Context::from_devices makes the same for CUDA devices.
SKEIN_EXPORT Context context_from_backend_devices(std::span<const CUdevice> devices);

// A Buffer over device memory the application owns (PyCUDA's PointerHolderBase, pygpu's
// from_gpudata, CuPy's UnownedMemory): `size` bytes at `pointer` on device `device_idx` of the
// context, from cuMemAlloc, cudaMalloc, a memory pool or a library. Skein never frees it; the
// application keeps it alive while any Buffer or Array over it exists, or passes `deleter`, which
// runs once the last of them is gone (shared ownership). Every Skein operation takes it: kernels,
// arrays (Array(queue, buffer, shape, dtype)), BLAS, collectives, HDF5, DistArray blocks.
// LogicError, before anything uses it, when the driver says the pointer is not device memory of
// that device's context, or that the allocation holding it ends before `size` bytes.
SKEIN_EXPORT Buffer buffer_from_native(const Context& context, std::size_t device_idx,
                                       CUdeviceptr pointer, std::size_t size,
                                       std::function<void()> deleter = {});

// A Queue over the application's streams, one per device index (in the context), in that order.
// Skein's work on it is ordered with the application's own work on those streams, with no
// synchronisation of its own; the streams stay the application's, which must keep them alive as
// long as the Queue and its copies exist. LogicError for a stream of another context (where the
// driver can tell, cuStreamGetCtx).
SKEIN_EXPORT Queue queue_from_native(const Context& context, std::vector<std::size_t> device_idxs,
                                     std::span<const CUstream> streams);

// The stream of one device of a queue; it stays Skein's (do not destroy it).
SKEIN_EXPORT CUstream native_stream(const Queue& queue, std::size_t device_idx);

// The device address of the buffer's first byte (0 for an empty buffer). Keep the buffer (or an
// array over it) while your work uses the address. A block of a queue's pool (the memory of arrays
// made without an allocator: skein/memory_pool.hpp) whose address was given out is freed when its
// last handle goes, never reused, so work Skein does not see cannot find it rewritten.
SKEIN_EXPORT CUdeviceptr native_pointer(const Buffer& buffer);

// The attributes of any device address the driver knows (PyCUDA's cuPointerGetAttribute(s) on a
// raw pointer), whose memory lies on a device of `context` (device_idx) and in that device's CUDA
// context: Skein's or the application's (cuMemAlloc, cudaMalloc, managed, mapped host memory).
// LogicError when the driver knows no memory there, or when it is another device's or another
// CUDA context's.
SKEIN_EXPORT PointerAttributes pointer_attributes(const Context& context, CUdeviceptr pointer);

// The CUDA context of one device of a context.
SKEIN_EXPORT CUcontext native_context(const Context& context, std::size_t device_idx);

// The CUdevice of a CUDA device.
SKEIN_EXPORT CUdevice native_device(const Device& device);

}  // namespace skein::cuda

#endif  // SKEIN_HAS_CUDA

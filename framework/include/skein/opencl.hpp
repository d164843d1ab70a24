// SPDX-License-Identifier: BSD-3-Clause
// Interoperation with OpenCL: Skein objects from the application's OpenCL objects and the OpenCL
// objects behind Skein's. Needs the OpenCL headers (OpenCL::OpenCL in CMake).
#pragma once

#include "skein/config.hpp"

#if SKEIN_HAS_OPENCL

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "skein/buffer.hpp"
#include "skein/context.hpp"
#include "skein/export.hpp"
#include "skein/queue.hpp"

namespace skein::opencl {

// A context over an existing cl_context; its devices are the context's, in its order. With
// take_ownership, Skein takes over the application's reference (released when the last Skein
// object using it is gone); otherwise Skein retains its own reference. If the call throws, the
// application keeps its reference.
SKEIN_EXPORT Context context_from_backend_context(cl_context context, bool take_ownership = false);

// A new context over these devices (all of one platform).
SKEIN_EXPORT Context context_from_backend_devices(std::span<const cl_device_id> devices);

// A Buffer over the application's cl_mem (pygpu's from_gpudata, PyCUDA's PointerHolderBase):
// its first `size` bytes, used on device `device_idx` of the context. Skein takes a reference of
// its own (clRetainMemObject), released when the last Buffer or Array over it is gone, and then
// runs `deleter` if one is given; the application may release its own reference at any time.
// LogicError, before anything uses it, for a cl_mem that is not a buffer, belongs to another
// cl_context, or is smaller than `size`.
SKEIN_EXPORT Buffer buffer_from_native(const Context& context, std::size_t device_idx, cl_mem mem,
                                       std::size_t size, std::function<void()> deleter = {});

// A Queue over the application's in-order command queues, one per device index (in the context),
// in that order. Skein's work on it is ordered with the application's own, with no
// synchronisation of its own; Skein takes a reference to each queue and releases it (without
// waiting for the queue) when the Queue and its copies are gone. Events recorded on a queue made
// without CL_QUEUE_PROFILING_ENABLE cannot be timed. LogicError for a queue of another context or
// device, or an out-of-order one.
SKEIN_EXPORT Queue queue_from_native(const Context& context, std::vector<std::size_t> device_idxs,
                                     std::span<const cl_command_queue> queues);

// The command queue of one device of a queue; it stays Skein's (do not release it).
SKEIN_EXPORT cl_command_queue native_queue(const Queue& queue, std::size_t device_idx);

// The cl_mem of the whole allocation behind the buffer (nullptr for an empty buffer); the
// buffer's own bytes start at buffer.offset(). As cuda::native_pointer: a block of a queue's pool
// handed out this way is freed when its last handle goes, never reused.
SKEIN_EXPORT cl_mem native_mem(const Buffer& buffer);

SKEIN_EXPORT cl_context native_context(const Context& context);

SKEIN_EXPORT cl_device_id native_device(const Device& device);

// --- Platforms (ctxtools) ---
// grunnur's Platform.from_backend_platform: the Platform of an application's cl_platform_id (from
// clGetPlatformIDs), the same Platform that Platform::all() lists for it. LogicError for a null
// id, or one the OpenCL loader does not list (it must come from this process's clGetPlatformIDs).
// CUDA has one platform, which holds all its devices: Platform::from_index(cuda_api, 0).
SKEIN_EXPORT Platform platform_from_native(cl_platform_id platform);
// The cl_platform_id behind an OpenCL platform (LogicError for another API's).
SKEIN_EXPORT cl_platform_id native_platform(const Platform& platform);

}  // namespace skein::opencl

#endif  // SKEIN_HAS_OPENCL

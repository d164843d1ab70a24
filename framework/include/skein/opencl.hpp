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
#include <span>

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

// The command queue of one device of a queue; it stays Skein's (do not release it).
SKEIN_EXPORT cl_command_queue native_queue(const Queue& queue, std::size_t device_idx);

// The cl_mem of the whole allocation behind the buffer (nullptr for an empty buffer); the
// buffer's own bytes start at buffer.offset().
SKEIN_EXPORT cl_mem native_mem(const Buffer& buffer);

SKEIN_EXPORT cl_context native_context(const Context& context);

SKEIN_EXPORT cl_device_id native_device(const Device& device);

}  // namespace skein::opencl

#endif  // SKEIN_HAS_OPENCL

// SPDX-License-Identifier: BSD-3-Clause
// The backends' native objects behind void* (a CUdeviceptr or cl_mem, a CUstream or
// cl_command_queue), chosen by the context's API at run time; the CUDA paths are compiled only
// where Skein has CUDA.
#pragma once

#include <cstddef>

#include "skein/buffer.hpp"
#include "skein/context.hpp"
#include "skein/queue.hpp"

namespace skein::capi {

// A Buffer over `nbytes` bytes of the application's device memory on context device `device`.
Buffer buffer_from_native(const Context& context, std::size_t device, void* native,
                          std::size_t nbytes);
// The memory of the buffer's byte `byte_offset` as (pointer or cl_mem, offset in it).
void native_of(const Buffer& buffer, std::size_t byte_offset, void** native, std::size_t* offset);
// A Queue over the application's streams, one per device of the context, in device order.
Queue queue_from_native(const Context& context, void* const* streams, std::size_t count);

}  // namespace skein::capi

// SPDX-License-Identifier: BSD-3-Clause
// native.hpp: skein::cuda's and skein::opencl's interop functions behind the C API's void*.
#include "native.hpp"

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "handles.hpp"
#include "skein/config.h"
#include "skein/cuda.hpp"
#include "skein/opencl.hpp"

namespace skein::capi {

namespace {

[[noreturn]] void no_backend(const Context& context) {
  invalid(std::string("this build of Skein has no ") + std::string(name(context.api().id())) +
              " interop",
          "Use a Skein built with that backend.");
}

void check_device(const Context& context, std::size_t device) {
  if (device >= context.num_devices()) {
    invalid("device " + std::to_string(device) + " is not one of the runtime's " +
                std::to_string(context.num_devices()) + " devices",
            "Pass an index below skein_runtime_device_count().");
  }
}

}  // namespace

Buffer buffer_from_native(const Context& context, std::size_t device, void* native,
                          std::size_t nbytes) {
  check_device(context, device);
  if (native == nullptr) {
    invalid("the native memory is NULL", "Pass a CUdeviceptr (as void*) or a cl_mem.");
  }
  if (context.api().id() == ApiId::cuda) {
#if SKEIN_HAS_CUDA
    return cuda::buffer_from_native(context, device,
                                    static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(native)),
                                    nbytes);
#endif
  } else {
#if SKEIN_HAS_OPENCL
    return opencl::buffer_from_native(context, device, static_cast<cl_mem>(native), nbytes);
#endif
  }
  no_backend(context);
}

void native_of(const Buffer& buffer, std::size_t byte_offset, void** native, std::size_t* offset) {
  const Context& context = buffer.context();
  if (context.api().id() == ApiId::cuda) {
#if SKEIN_HAS_CUDA
    // A CUdeviceptr includes every offset.
    *native = reinterpret_cast<void*>(
        static_cast<std::uintptr_t>(cuda::native_pointer(buffer) + byte_offset));
    *offset = 0;
    return;
#endif
  } else {
#if SKEIN_HAS_OPENCL
    // A cl_mem is the whole allocation: the buffer's own bytes start at its offset in it.
    *native = static_cast<void*>(opencl::native_mem(buffer));
    *offset = buffer.offset() + byte_offset;
    return;
#endif
  }
  no_backend(context);
}

Queue queue_from_native(const Context& context, void* const* streams, std::size_t count) {
  if (count != context.num_devices()) {
    invalid("count is " + std::to_string(count) + ", but the runtime has " +
                std::to_string(context.num_devices()) + " devices",
            "Pass one stream per device of the runtime, in device order.");
  }
  require(streams, "streams");
  std::vector<std::size_t> devices(count);
  std::iota(devices.begin(), devices.end(), std::size_t{0});
  if (context.api().id() == ApiId::cuda) {
#if SKEIN_HAS_CUDA
    std::vector<CUstream> native(count);
    for (std::size_t i = 0; i < count; ++i) native[i] = static_cast<CUstream>(streams[i]);
    return cuda::queue_from_native(context, devices, native);
#endif
  } else {
#if SKEIN_HAS_OPENCL
    std::vector<cl_command_queue> native(count);
    for (std::size_t i = 0; i < count; ++i) {
      if (streams[i] == nullptr) {
        invalid("streams[" + std::to_string(i) + "] is NULL", "Pass a cl_command_queue.");
      }
      native[i] = static_cast<cl_command_queue>(streams[i]);
    }
    return opencl::queue_from_native(context, devices, native);
#endif
  }
  no_backend(context);
}

}  // namespace skein::capi

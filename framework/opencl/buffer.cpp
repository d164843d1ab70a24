// SPDX-License-Identifier: BSD-3-Clause
#include <fmt/format.h>

#include "adapters.hpp"
#include "check.hpp"
#include "skein/log.hpp"

namespace skein::detail::opencl {

OclBuffer::~OclBuffer() {
  for (auto& [offset, sub] : sub_buffers_) clReleaseMemObject(sub);
  if (mem_) clReleaseMemObject(mem_);
  if (on_release_) {
    try {
      on_release_();
    } catch (...) {
      log_message(LogLevel::error, "the deleter of a foreign OpenCL buffer threw");
    }
  }
}

cl_mem OclBuffer::at(std::size_t offset, std::size_t align, const std::string& device,
                     const std::string& kernel, std::size_t argument) const {
  if (offset == 0 || !mem_) return mem_;
  if (offset % align != 0) {
    throw LogicError(ErrorInfo{
        .what = fmt::format("kernel '{}', argument {} starts {} bytes into its allocation, but its "
                            "kernel parameter takes no offset, and a sub-buffer must start at a "
                            "multiple of the device's {}-byte base-address alignment",
                            kernel, argument, offset, align),
        .call = "PreparedKernel",
        .device = device,
        .hint = "Skein passes views at any offset to the kernel parameters it reads as "
                "`GLOBAL_MEM T* name` (or __global, global) in the kernel's parameter list; "
                "declare this one so (no macro or typedef for the pointer type, no preprocessor "
                "line in the parameter list, not a __constant pointer, no kernel calling another), "
                "or pass the whole array and the offset as a separate argument. "
                "Program::source() shows the parameters that take an offset (_skein_off_).",
        .location = SKEIN_HERE});
  }
  std::lock_guard lock(mutex_);
  for (const auto& [o, sub] : sub_buffers_) {
    if (o == offset) return sub;
  }
  cl_buffer_region region{offset, size_ - offset};
  cl_int err = CL_SUCCESS;
  cl_mem sub =
      clCreateSubBuffer(mem_, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  SKEIN_CL_CHECK(err, device);
  sub_buffers_.emplace_back(offset, sub);
  return sub;
}

}  // namespace skein::detail::opencl

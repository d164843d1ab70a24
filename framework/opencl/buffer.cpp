// SPDX-License-Identifier: BSD-3-Clause
#include <fmt/format.h>

#include "adapters.hpp"
#include "check.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/relocatable.hpp"
#include "skein/log.hpp"

namespace skein::detail::opencl {

OclBuffer::~OclBuffer() {
  for (auto& [offset, sub] : sub_buffers_) clReleaseMemObject(sub);
  if (cl_mem m = mem()) clReleaseMemObject(m);
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
  if (offset == 0 || !mem()) return mem();
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
  cl_buffer_region region{offset, size() - offset};
  cl_int err = CL_SUCCESS;
  cl_mem sub =
      clCreateSubBuffer(mem(), CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  SKEIN_CL_CHECK(err, device);
  sub_buffers_.emplace_back(offset, sub);
  return sub;
}

void OclBuffer::rebind(cl_mem mem, std::size_t size) {
  std::vector<std::pair<std::size_t, cl_mem>> subs;
  cl_mem old = nullptr;
  {
    std::lock_guard lock(mutex_);
    subs.swap(sub_buffers_);
    old = mem_.exchange(mem, std::memory_order_acq_rel);
    size_.store(size, std::memory_order_release);
  }
  for (auto& [offset, sub] : subs) clReleaseMemObject(sub);
  if (old) clReleaseMemObject(old);
}

namespace {

// A reference of our own to the region's memory: the allocation itself, or a sub-buffer of it.
cl_mem region_mem(const Buffer& region, const char* call) {
  if (!region.adapter() || region.size() == 0) return nullptr;
  cl_mem mem = static_cast<const OclBuffer&>(*region.adapter()).mem();
  if (!mem) return nullptr;
  if (region.offset() == 0) {
    SKEIN_CL_CHECK(clRetainMemObject(mem), call);
    return mem;
  }
  const Context context = region.context();
  const std::size_t align = context.device(region.device_idx()).params().base_address_align;
  if (align != 0 && region.offset() % align != 0) {
    raise_in(SKEIN_HERE, call,
             "Give virtual allocation managers a real allocator whose buffers start at a multiple "
             "of the device's base-address alignment (Buffer::allocate and DeviceMemoryPool's do).",
             "{}: the real allocation starts {} bytes into its cl_mem, not a multiple of the "
             "device's {}-byte base-address alignment, so no sub-buffer can stand for it",
             context.device(region.device_idx()).description(), region.offset(), align);
  }
  cl_buffer_region r{region.offset(), region.size()};
  cl_int err = CL_SUCCESS;
  cl_mem sub = clCreateSubBuffer(mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
  SKEIN_CL_CHECK_RESULT(err, "clCreateSubBuffer", call);
  return sub;
}

}  // namespace

}  // namespace skein::detail::opencl

namespace skein::detail {

std::shared_ptr<BufferAdapter> opencl_relocatable(const Buffer& region) {
  cl_mem mem = opencl::region_mem(region, "virtual allocation");
  return std::make_shared<opencl::OclBuffer>(mem, region.size(), region.device_idx());
}

void opencl_relocate(BufferAdapter& relocatable, const Buffer& region) {
  cl_mem mem = opencl::region_mem(region, "VirtualManager::pack");
  static_cast<opencl::OclBuffer&>(relocatable).rebind(mem, region.size());
}

}  // namespace skein::detail

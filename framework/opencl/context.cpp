#include <fmt/format.h>

#include "adapters.hpp"
#include "check.hpp"

namespace skein::detail {

namespace opencl {

OclContext::OclContext(cl_context context, std::vector<std::shared_ptr<DeviceAdapter>> devices)
    : context_(context), devices_(std::move(devices)) {}

OclContext::~OclContext() {
  if (internal_queue_) clReleaseCommandQueue(internal_queue_);
  clReleaseContext(context_);
}

cl_device_id OclContext::device_id(std::size_t device_idx) const {
  return static_cast<const OclDevice&>(*devices_.at(device_idx)).id();
}

std::string OclContext::describe_device(std::size_t device_idx) const {
  return describe(*devices_.at(device_idx));
}

cl_command_queue OclContext::internal_queue() {
  std::lock_guard lock(mutex_);
  if (!internal_queue_) {
    cl_int err = CL_SUCCESS;
    internal_queue_ = clCreateCommandQueue(context_, device_id(0), 0, &err);
    SKEIN_CL_CHECK(err, describe_device(0));
  }
  return internal_queue_;
}

std::unique_ptr<QueueAdapter> OclContext::make_queue(std::size_t device_idx) {
  return std::make_unique<OclQueue>(shared_from_this(), device_idx);
}

std::shared_ptr<BufferAdapter> OclContext::allocate(std::size_t device_idx, std::size_t size) {
  if (size == 0) return std::make_shared<OclBuffer>(nullptr, 0, device_idx);
  const auto& params = devices_.at(device_idx)->params();
  if (size > params.max_alloc_size) {
    throw MemoryError(
        ErrorInfo{.what = fmt::format("cannot allocate {}: the device's largest allocation is {} "
                                      "(global memory {})",
                                      format_bytes(size), format_bytes(params.max_alloc_size),
                                      format_bytes(params.global_mem_size)),
                  .call = "Buffer::allocate",
                  .device = describe_device(device_idx),
                  .hint = "Split the data into smaller buffers or over more devices.",
                  .location = SKEIN_HERE},
        size, params.max_alloc_size);
  }
  cl_int err = CL_SUCCESS;
  cl_mem mem = clCreateBuffer(context_, CL_MEM_READ_WRITE, size, nullptr, &err);
  if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
      err == CL_OUT_OF_HOST_MEMORY) {
    throw MemoryError(
        ErrorInfo{.what = fmt::format("cannot allocate {}", format_bytes(size)),
                  .call = "clCreateBuffer",
                  .code_name = error_name(err),
                  .code = err,
                  .has_code = true,
                  .device = describe_device(device_idx),
                  .hint = "Free other buffers, or use smaller ones.",
                  .location = SKEIN_HERE},
        size, params.global_mem_size);
  }
  SKEIN_CL_CHECK(err, describe_device(device_idx));
  return std::make_shared<OclBuffer>(mem, size, device_idx);
}

std::shared_ptr<HostBufferAdapter> OclContext::allocate_host(std::size_t size) {
  return std::make_shared<OclHostBuffer>(shared_from_this(), size);
}

OclHostBuffer::OclHostBuffer(std::shared_ptr<OclContext> context, std::size_t size)
    : context_(std::move(context)), size_(size) {
  if (size == 0) return;
  cl_int err = CL_SUCCESS;
  // ALLOC_HOST_PTR asks the driver for memory it can transfer from directly (pinned on GPUs);
  // mapped once, it stays mapped for the buffer's life.
  mem_ = clCreateBuffer(context_->get(), CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, size, nullptr,
                        &err);
  SKEIN_CL_CHECK(err, context_->describe_device(0));
  void* ptr = clEnqueueMapBuffer(context_->internal_queue(), mem_, CL_TRUE,
                                 CL_MAP_READ | CL_MAP_WRITE, 0, size, 0, nullptr, nullptr, &err);
  if (err != CL_SUCCESS) {
    clReleaseMemObject(mem_);
    SKEIN_CL_CHECK(err, context_->describe_device(0));
  }
  data_ = static_cast<std::byte*>(ptr);
}

OclHostBuffer::~OclHostBuffer() {
  if (!mem_) return;
  cl_command_queue q = context_->internal_queue();
  clEnqueueUnmapMemObject(q, mem_, data_, 0, nullptr, nullptr);
  clFinish(q);
  clReleaseMemObject(mem_);
}

}  // namespace opencl

std::shared_ptr<ContextAdapter> make_opencl_context(
    const std::vector<std::shared_ptr<DeviceAdapter>>& devices) {
  std::vector<cl_device_id> ids;
  for (const auto& d : devices) ids.push_back(static_cast<const opencl::OclDevice&>(*d).id());
  const auto platform = static_cast<const opencl::OclPlatform&>(*devices.front()->platform()).id();
  const cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                         reinterpret_cast<cl_context_properties>(platform), 0};
  cl_int err = CL_SUCCESS;
  cl_context context = clCreateContext(props, static_cast<cl_uint>(ids.size()), ids.data(),
                                       nullptr, nullptr, &err);
  SKEIN_CL_CHECK(err, describe(*devices.front()));
  return std::make_shared<opencl::OclContext>(context, devices);
}

}  // namespace skein::detail

// SPDX-License-Identifier: BSD-3-Clause
#include <fmt/format.h>

#include <algorithm>

#include "adapters.hpp"
#include "check.hpp"

namespace skein::detail {

namespace opencl {

OclContext::OclContext(cl_context context, std::vector<std::shared_ptr<DeviceAdapter>> devices)
    : context_(context),
      devices_(std::move(devices)),
      allocated_(new std::atomic<std::size_t>[devices_.size()]()) {}

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
    SKEIN_CL_CHECK_RESULT(err, "clCreateCommandQueue", describe_device(0));
  }
  return internal_queue_;
}

std::unique_ptr<QueueAdapter> OclContext::make_queue(std::size_t device_idx, int priority,
                                                     QueueSync sync) {
  // The range is {0, 0} (queue_priority_range): Queue refused anything else.
  (void)priority;
  return std::make_unique<OclQueue>(shared_from_this(), device_idx, sync);
}

void OclContext::register_queue(cl_command_queue queue) {
  std::lock_guard lock(queues_mutex_);
  live_queues_.push_back(queue);
}

void OclContext::unregister_queue(cl_command_queue queue) noexcept {
  std::lock_guard lock(queues_mutex_);
  const auto it = std::find(live_queues_.begin(), live_queues_.end(), queue);
  if (it != live_queues_.end()) live_queues_.erase(it);
}

void OclContext::synchronize() {
  // Under the lock: a queue cannot be released while it is finished here.
  std::lock_guard lock(queues_mutex_);
  for (cl_command_queue queue : live_queues_) {
    SKEIN_CL_CHECK(clFinish(queue), "the OpenCL context's queues");
  }
  if (internal_queue_) SKEIN_CL_CHECK(clFinish(internal_queue_), describe_device(0));
}

void OclContext::set_scheduling(std::size_t device_idx, ContextScheduling scheduling) {
  if (scheduling == ContextScheduling::automatic) return;
  throw LogicError(ErrorInfo{
      .what = fmt::format("OpenCL has no scheduling setting (ContextScheduling::{} was asked)",
                          skein::name(scheduling)),
      .call = "Context::from_devices",
      .device = describe_device(device_idx),
      .hint = "Leave ContextFlags::scheduling automatic on OpenCL (its driver decides how waits "
              "wait), or use CUDA for the setting.",
      .location = SKEIN_HERE});
}

PointerAttributes OclContext::pointer_attributes(BufferAdapter& buffer, std::size_t offset) {
  const cl_mem mem = reinterpret_cast<cl_mem>(buffer.native());
  const std::string where = describe_device(buffer.device_idx());
  cl_mem_flags flags = 0;
  std::size_t size = 0;
  void* host = nullptr;
  SKEIN_CL_CHECK(clGetMemObjectInfo(mem, CL_MEM_FLAGS, sizeof(flags), &flags, nullptr), where);
  SKEIN_CL_CHECK(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof(size), &size, nullptr), where);
  SKEIN_CL_CHECK(clGetMemObjectInfo(mem, CL_MEM_HOST_PTR, sizeof(host), &host, nullptr), where);
  PointerAttributes a;
  a.device_idx = buffer.device_idx();
  a.type = (flags & (CL_MEM_ALLOC_HOST_PTR | CL_MEM_USE_HOST_PTR)) != 0 ? MemoryType::host
                                                                        : MemoryType::device;
  a.host_pointer = host ? static_cast<std::byte*>(host) + offset : nullptr;
  a.range_size = size;
  a.range_offset = offset;
  return a;
}

MemoryInfo OclContext::memory_info(std::size_t device_idx) {
  // OpenCL has no query of free memory: the device's global memory less what this context's
  // buffers hold now (documented as an estimate in skein/driver.hpp and the guide).
  const std::size_t total = devices_.at(device_idx)->params().global_mem_size;
  const std::size_t used = allocated_[device_idx].load(std::memory_order_relaxed);
  return MemoryInfo{
      .free = used < total ? total - used : 0, .total = total, .free_is_estimate = true};
}

namespace {
[[noreturn]] void not_on_opencl(const char* call, const std::string& device, const char* what,
                                const char* hint) {
  throw LogicError(ErrorInfo{.what = fmt::format("{} is not supported on OpenCL", what),
                             .call = call,
                             .device = device,
                             .hint = hint,
                             .location = SKEIN_HERE});
}
}  // namespace

namespace {
constexpr const char* kManagedHint =
    "Managed memory is CUDA's (cuMemAllocManaged); on OpenCL use Buffer::allocate with explicit "
    "transfers (Buffer::set / get, Array::set / get), and HostBuffer for fast ones. Check "
    "api().id() == ApiId::cuda before calling.";
constexpr const char* kIpcHint =
    "IPC handles are CUDA's (cuIpc*); on OpenCL exchange the data between processes with MPI or "
    "Skein's collectives. Check api().id() == ApiId::cuda before calling.";
}  // namespace

std::shared_ptr<BufferAdapter> OclContext::allocate_managed(std::size_t device_idx, std::size_t,
                                                            ManagedAttach) {
  not_on_opencl("allocate_managed", describe_device(device_idx), "managed memory", kManagedHint);
}

void OclContext::attach_managed(QueueAdapter&, BufferAdapter& buffer, ManagedAttach) {
  not_on_opencl("attach", describe_device(buffer.device_idx()), "managed memory", kManagedHint);
}

void OclContext::prefetch_managed(QueueAdapter&, BufferAdapter& buffer, std::size_t, std::size_t,
                                  MemoryLocation) {
  not_on_opencl("prefetch", describe_device(buffer.device_idx()), "managed memory", kManagedHint);
}

void OclContext::advise_managed(BufferAdapter& buffer, std::size_t, std::size_t, MemoryAdvice,
                                MemoryLocation) {
  not_on_opencl("advise", describe_device(buffer.device_idx()), "managed memory", kManagedHint);
}

IpcMemoryHandle OclContext::export_ipc_memory(BufferAdapter& buffer, std::size_t, std::size_t) {
  not_on_opencl("export_ipc_memory", describe_device(buffer.device_idx()),
                "exporting memory to other processes (IPC)", kIpcHint);
}

std::shared_ptr<BufferAdapter> OclContext::open_ipc_memory(std::size_t device_idx,
                                                           const IpcMemoryHandle&) {
  not_on_opencl("open_ipc_memory", describe_device(device_idx),
                "opening another process's memory (IPC)", kIpcHint);
}

std::shared_ptr<EventAdapter> OclContext::create_ipc_event(std::size_t device_idx,
                                                           IpcEventHandle&) {
  not_on_opencl("IpcEvent::create", describe_device(device_idx),
                "sharing events between processes (IPC)", kIpcHint);
}

std::shared_ptr<EventAdapter> OclContext::open_ipc_event(std::size_t device_idx,
                                                         const IpcEventHandle&) {
  not_on_opencl("IpcEvent::open", describe_device(device_idx),
                "sharing events between processes (IPC)", kIpcHint);
}

void OclContext::record_ipc_event(QueueAdapter& queue, EventAdapter&) {
  not_on_opencl("IpcEvent::record", describe_device(queue.device_idx()),
                "sharing events between processes (IPC)", kIpcHint);
}

std::size_t OclContext::get_limit(std::size_t device_idx, ContextLimit limit) {
  not_on_opencl("get_limit", describe_device(device_idx),
                fmt::format("the context limit {}", name(limit)).c_str(),
                "Context limits are CUDA's (cuCtxGetLimit); OpenCL has no counterpart. Check "
                "api().id() == ApiId::cuda before calling.");
}

void OclContext::set_limit(std::size_t device_idx, ContextLimit limit, std::size_t) {
  not_on_opencl("set_limit", describe_device(device_idx),
                fmt::format("the context limit {}", name(limit)).c_str(),
                "Context limits are CUDA's (cuCtxSetLimit); OpenCL has no counterpart. Check "
                "api().id() == ApiId::cuda before calling.");
}

CacheConfig OclContext::get_cache_config(std::size_t device_idx) {
  not_on_opencl("get_cache_config", describe_device(device_idx), "the cache configuration",
                "The L1 / shared memory split is CUDA's (cuCtxGetCacheConfig); OpenCL has no "
                "counterpart. Check api().id() == ApiId::cuda before calling.");
}

void OclContext::set_cache_config(std::size_t device_idx, CacheConfig) {
  not_on_opencl("set_cache_config", describe_device(device_idx), "the cache configuration",
                "The L1 / shared memory split is CUDA's (cuCtxSetCacheConfig); OpenCL has no "
                "counterpart. Check api().id() == ApiId::cuda before calling.");
}

void OclContext::set_peer_access(std::size_t from_device_idx, std::size_t to_device_idx,
                                 bool enable) {
  if (enable) return;  // always on: a context's buffers are all its devices'
  throw LogicError(ErrorInfo{
      .what = fmt::format("peer access from device {} to device {} cannot be turned off on "
                          "OpenCL: the buffers of a context belong to all its devices",
                          from_device_idx, to_device_idx),
      .call = "disable_peer_access",
      .device = describe_device(from_device_idx),
      .hint = "To keep devices apart, make one context per device.",
      .location = SKEIN_HERE});
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
    throw MemoryError(ErrorInfo{.what = fmt::format("cannot allocate {}", format_bytes(size)),
                                .call = "clCreateBuffer",
                                .code_name = error_name(err),
                                .code = err,
                                .has_code = true,
                                .device = describe_device(device_idx),
                                .hint = "Free other buffers, or use smaller ones.",
                                .location = SKEIN_HERE},
                      size, params.global_mem_size);
  }
  SKEIN_CL_CHECK_RESULT(err, "clCreateBuffer", describe_device(device_idx));
  // Counted for memory_info() until the buffer is released.
  allocated_[device_idx] += size;
  try {
    return std::make_shared<OclBuffer>(
        mem, size, device_idx,
        [allocated = allocated_, device_idx, size] { allocated[device_idx] -= size; });
  } catch (...) {
    allocated_[device_idx] -= size;
    clReleaseMemObject(mem);
    throw;
  }
}

namespace {
void refuse_device_mapped(const char* call, const std::string& device) {
  throw LogicError(ErrorInfo{
      .what = "mapped page-locked memory (HostMemoryFlags::device_mapped) is not supported on "
              "OpenCL: OpenCL 1.2 leaves kernels' access to mapped host memory undefined",
      .call = call,
      .device = device,
      .hint = "Copy between a HostBuffer and a Buffer instead (Buffer::set / get with "
              "Sync::async), or use the CUDA backend.",
      .location = SKEIN_HERE});
}
}  // namespace

std::shared_ptr<HostBufferAdapter> OclContext::allocate_host(std::size_t size,
                                                             HostMemoryFlags flags) {
  if (flags.device_mapped) refuse_device_mapped("HostBuffer::allocate", describe_device(0));
  return std::make_shared<OclHostBuffer>(shared_from_this(), size, nullptr, flags);
}

std::shared_ptr<HostBufferAdapter> OclContext::register_host(void* data, std::size_t size,
                                                             HostMemoryFlags flags) {
  if (flags.device_mapped) refuse_device_mapped("HostBuffer::register_memory", describe_device(0));
  return std::make_shared<OclHostBuffer>(shared_from_this(), size, data, flags);
}

std::shared_ptr<BufferAdapter> OclContext::mapped_device_buffer(
    const std::shared_ptr<HostBufferAdapter>&, std::size_t device_idx) {
  refuse_device_mapped("HostBuffer::device_buffer", describe_device(device_idx));
  return nullptr;
}

OclHostBuffer::OclHostBuffer(std::shared_ptr<OclContext> context, std::size_t size, void* host,
                             HostMemoryFlags flags)
    : context_(std::move(context)), size_(size), flags_(flags), registered_(host != nullptr) {
  if (size == 0) return;
  cl_int err = CL_SUCCESS;
  // ALLOC_HOST_PTR asks the driver for memory it can transfer from directly (pinned on GPUs);
  // USE_HOST_PTR lets it pin the caller's memory in place (NVIDIA's driver does when the buffer
  // is mapped). Mapped once, the memory stays mapped for the buffer's life.
  const cl_mem_flags where = host ? CL_MEM_USE_HOST_PTR : CL_MEM_ALLOC_HOST_PTR;
  mem_ = clCreateBuffer(context_->get(), CL_MEM_READ_WRITE | where, size, host, &err);
  SKEIN_CL_CHECK_RESULT(err, "clCreateBuffer", context_->describe_device(0));
  void* ptr = clEnqueueMapBuffer(context_->internal_queue(), mem_, CL_TRUE,
                                 CL_MAP_READ | CL_MAP_WRITE, 0, size, 0, nullptr, nullptr, &err);
  if (err != CL_SUCCESS) {
    clReleaseMemObject(mem_);
    SKEIN_CL_CHECK_RESULT(err, "clEnqueueMapBuffer", context_->describe_device(0));
  }
  if (host != nullptr && ptr != host) {
    // OpenCL 1.2 says the mapping of a USE_HOST_PTR buffer is derived from the host pointer; a
    // driver that maps a copy instead would leave the caller's memory out of the transfers.
    clEnqueueUnmapMemObject(context_->internal_queue(), mem_, ptr, 0, nullptr, nullptr);
    clFinish(context_->internal_queue());
    clReleaseMemObject(mem_);
    throw RuntimeError(ErrorInfo{
        .what = fmt::format("the driver mapped the registered memory at {} to another address "
                            "({})",
                            host, ptr),
        .call = "clEnqueueMapBuffer",
        .device = context_->describe_device(0),
        .hint = "This OpenCL driver cannot page-lock memory in place: allocate with "
                "HostBuffer::allocate and copy into it.",
        .location = SKEIN_HERE});
  }
  data_ = static_cast<std::byte*>(ptr);
}

const ContextAdapter* OclHostBuffer::owner() const { return context_.get(); }

OclHostBuffer::~OclHostBuffer() {
  if (!mem_) return;
  // The constructor mapped the buffer through the context's internal queue, so it exists and this
  // does not throw; were it ever to, the memory object is still released (its mapping with it)
  // rather than ending the program from a destructor.
  try {
    cl_command_queue q = context_->internal_queue();
    clEnqueueUnmapMemObject(q, mem_, data_, 0, nullptr, nullptr);
    clFinish(q);
  } catch (...) {
  }
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
  opencl::IcdEnvironmentGuard keep_environment;
  cl_context context =
      clCreateContext(props, static_cast<cl_uint>(ids.size()), ids.data(), nullptr, nullptr, &err);
  SKEIN_CL_CHECK_RESULT(err, "clCreateContext", describe(*devices.front()));
  return std::make_shared<opencl::OclContext>(context, devices);
}

}  // namespace skein::detail

// --- interop (skein/opencl.hpp) --------------------------------------------------------------
#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"
#include "skein/opencl.hpp"

namespace skein::opencl {

namespace {
std::vector<std::shared_ptr<detail::DeviceAdapter>> adapters_for(std::span<const cl_device_id> ids,
                                                                 const char* call) {
  std::vector<std::shared_ptr<detail::DeviceAdapter>> result;
  auto api = detail::api_adapter(ApiId::opencl);
  for (cl_device_id id : ids) {
    std::shared_ptr<detail::DeviceAdapter> found;
    for (const auto& platform : api->platforms()) {
      for (const auto& device : platform->devices()) {
        if (device->native() == reinterpret_cast<std::uintptr_t>(id)) found = device;
      }
    }
    if (!found) {
      detail::raise_in(SKEIN_HERE, call,
                       "Pass devices from clGetDeviceIDs of an installed platform.",
                       "cl_device_id {} is not a device of any OpenCL platform",
                       fmt::ptr(static_cast<void*>(id)));
    }
    result.push_back(std::move(found));
  }
  return result;
}
}  // namespace

Context context_from_backend_context(cl_context context, bool take_ownership) {
  cl_uint count = 0;
  SKEIN_CL_CHECK(clGetContextInfo(context, CL_CONTEXT_NUM_DEVICES, sizeof(count), &count, nullptr),
                 "OpenCL context");
  std::vector<cl_device_id> ids(count);
  SKEIN_CL_CHECK(clGetContextInfo(context, CL_CONTEXT_DEVICES, count * sizeof(cl_device_id),
                                  ids.data(), nullptr),
                 "OpenCL context");
  auto devices = adapters_for(ids, "skein::opencl::context_from_backend_context");
  if (!take_ownership) SKEIN_CL_CHECK(clRetainContext(context), "OpenCL context");
  return detail::wrap_context(std::make_shared<detail::opencl::OclContext>(context, devices));
}

Context context_from_backend_devices(std::span<const cl_device_id> devices) {
  return detail::wrap_context(detail::make_opencl_context(
      adapters_for(devices, "skein::opencl::context_from_backend_devices")));
}

namespace {
std::shared_ptr<detail::opencl::OclContext> ocl_context_of(const Context& context,
                                                           const char* call) {
  if (context.api().id() != ApiId::opencl) {
    detail::raise_in(SKEIN_HERE, call, "Use skein::opencl functions only with OpenCL objects.",
                     "the context belongs to {}, not OpenCL", name(context.api().id()));
  }
  return std::static_pointer_cast<detail::opencl::OclContext>(detail::impl_of(context)->adapter);
}
}  // namespace

Buffer buffer_from_native(const Context& context, std::size_t device_idx, cl_mem mem,
                          std::size_t size, std::function<void()> deleter) {
  constexpr const char* call = "skein::opencl::buffer_from_native";
  auto ocl = ocl_context_of(context, call);
  detail::check_device_idx(context, device_idx, call);
  const std::string where = ocl->describe_device(device_idx);
  if (size == 0) {
    return Buffer(
        context,
        std::make_shared<detail::opencl::OclBuffer>(nullptr, 0, device_idx, std::move(deleter)),
        device_idx, 0, 0);
  }
  if (mem == nullptr) {
    detail::raise_in(SKEIN_HERE, call, "Pass the cl_mem of a buffer.",
                     "{}: a null cl_mem for a buffer of {} bytes", where, size);
  }
  cl_mem_object_type type = 0;
  cl_context owner = nullptr;
  std::size_t bytes = 0;
  if (clGetMemObjectInfo(mem, CL_MEM_TYPE, sizeof(type), &type, nullptr) != CL_SUCCESS ||
      type != CL_MEM_OBJECT_BUFFER) {
    detail::raise_in(SKEIN_HERE, call, "Pass a buffer made by clCreateBuffer.",
                     "{}: the cl_mem is not a valid buffer object", where);
  }
  // NOLINTNEXTLINE(bugprone-sizeof-expression): a cl_context is a pointer by the API
  SKEIN_CL_CHECK(clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof(owner), &owner, nullptr), where);
  SKEIN_CL_CHECK(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof(bytes), &bytes, nullptr), where);
  if (owner != ocl->get()) {
    detail::raise_in(SKEIN_HERE, call,
                     "Make the Skein context over the buffer's cl_context "
                     "(skein::opencl::context_from_backend_context).",
                     "{}: the cl_mem belongs to another OpenCL context", where);
  }
  if (size > bytes) {
    detail::raise_in(SKEIN_HERE, call, "Pass at most the buffer's size.",
                     "{}: {} bytes asked, but the cl_mem holds {}", where, size, bytes);
  }
  // Skein's own reference, released with the last Buffer over it; the application keeps its own.
  SKEIN_CL_CHECK(clRetainMemObject(mem), where);
  return Buffer(
      context,
      std::make_shared<detail::opencl::OclBuffer>(mem, size, device_idx, std::move(deleter)),
      device_idx, 0, size);
}

Queue queue_from_native(const Context& context, std::vector<std::size_t> device_idxs,
                        std::span<const cl_command_queue> queues) {
  constexpr const char* call = "skein::opencl::queue_from_native";
  auto ocl = ocl_context_of(context, call);
  if (device_idxs.size() != queues.size()) {
    detail::raise_in(SKEIN_HERE, call, "Give one command queue per device index.",
                     "{} device index(es) and {} command queue(s) were given", device_idxs.size(),
                     queues.size());
  }
  std::vector<std::unique_ptr<detail::QueueAdapter>> adapters;
  for (std::size_t i = 0; i < device_idxs.size(); ++i) {
    const std::size_t d = device_idxs[i];
    detail::check_device_idx(context, d, call);
    const std::string where = ocl->describe_device(d);
    cl_context owner = nullptr;
    cl_device_id device = nullptr;
    cl_command_queue_properties properties = 0;
    if (queues[i] == nullptr ||
        // NOLINTNEXTLINE(bugprone-sizeof-expression): a cl_context is a pointer by the API
        clGetCommandQueueInfo(queues[i], CL_QUEUE_CONTEXT, sizeof(owner), &owner, nullptr) !=
            CL_SUCCESS) {
      detail::raise_in(SKEIN_HERE, call, "Pass a command queue made by clCreateCommandQueue.",
                       "{}: command queue {} is not a valid command queue", where, i);
    }
    // NOLINTNEXTLINE(bugprone-sizeof-expression): a cl_device_id is a pointer by the API
    SKEIN_CL_CHECK(
        clGetCommandQueueInfo(queues[i], CL_QUEUE_DEVICE, sizeof(device), &device, nullptr), where);
    SKEIN_CL_CHECK(clGetCommandQueueInfo(queues[i], CL_QUEUE_PROPERTIES, sizeof(properties),
                                         &properties, nullptr),
                   where);
    if (owner != ocl->get() || device != ocl->device_id(d)) {
      detail::raise_in(SKEIN_HERE, call,
                       "Pass a queue of the Skein context's cl_context, on the device of its "
                       "index (skein::opencl::native_context, native_device).",
                       "{}: command queue {} belongs to {}", where, i,
                       owner != ocl->get() ? "another OpenCL context" : "another device");
    }
    if (properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) {
      detail::raise_in(SKEIN_HERE, call, "Pass an in-order command queue.",
                       "{}: command queue {} executes out of order; Skein's work on a queue "
                       "relies on its order",
                       where, i);
    }
    adapters.push_back(std::make_unique<detail::opencl::OclQueue>(ocl, d, queues[i]));
  }
  return detail::wrap_queue(context, std::move(device_idxs), std::move(adapters), call);
}

cl_command_queue native_queue(const Queue& queue, std::size_t device_idx) {
  return reinterpret_cast<cl_command_queue>(queue.device_queue(device_idx).native());
}

cl_mem native_mem(const Buffer& buffer) {
  if (!buffer.adapter()) return nullptr;
  // Work Skein does not see may use the memory now: a pool never hands the block out again.
  buffer.adapter()->mark_exported();
  return reinterpret_cast<cl_mem>(buffer.adapter()->native());
}

cl_context native_context(const Context& context) {
  return reinterpret_cast<cl_context>(detail::impl_of(context)->adapter->native(0));
}

cl_device_id native_device(const Device& device) {
  if (device.platform().api().id() != ApiId::opencl) {
    detail::raise_in(SKEIN_HERE, "skein::opencl::native_device", "Pass an OpenCL device.",
                     "{} is not an OpenCL device", device.description());
  }
  return reinterpret_cast<cl_device_id>(device.adapter()->native());
}

// --- platforms (ctxtools) ---

Platform platform_from_native(cl_platform_id platform) {
  constexpr const char* call = "skein::opencl::platform_from_native";
  if (platform == nullptr) {
    detail::raise_in(SKEIN_HERE, call, "Pass a platform from clGetPlatformIDs.",
                     "the cl_platform_id is null");
  }
  for (const auto& p : detail::api_adapter(ApiId::opencl)->platforms()) {
    if (static_cast<const detail::opencl::OclPlatform&>(*p).id() == platform) return Platform(p);
  }
  detail::raise_in(SKEIN_HERE, call,
                   "Pass a platform from clGetPlatformIDs of this process (Platform::all lists "
                   "Skein's).",
                   "cl_platform_id {} is not one of the OpenCL loader's platforms",
                   fmt::ptr(static_cast<void*>(platform)));
}

cl_platform_id native_platform(const Platform& platform) {
  if (platform.api().id() != ApiId::opencl) {
    detail::raise_in(SKEIN_HERE, "skein::opencl::native_platform", "Pass an OpenCL platform.",
                     "platform '{}' belongs to {}, not OpenCL", platform.name(),
                     name(platform.api().id()));
  }
  return static_cast<const detail::opencl::OclPlatform&>(*platform.adapter()).id();
}

}  // namespace skein::opencl

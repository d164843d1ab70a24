// SPDX-License-Identifier: BSD-3-Clause
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "adapters.hpp"
#include "skein/detail/env.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"
#include "skein/detail/log.hpp"
#include "skein/buffer.hpp"
#include "skein/context.hpp"
#include "skein/cuda.hpp"
#include "skein/queue.hpp"

namespace skein::detail {

// --- CudaContextScope -----------------------------------------------------------------------

CudaContextScope::CudaContextScope(CUcontext context, const std::string& device) {
  CUcontext current = nullptr;
  SKEIN_CU_CHECK(cuCtxGetCurrent, (&current), device);
  if (current != context) {
    SKEIN_CU_CHECK(cuCtxPushCurrent, (context), device);
    pushed_ = true;
  }
  entered_ = true;
}

CudaContextScope::CudaContextScope(CUcontext context, NoThrow) noexcept {
  CUcontext current = nullptr;
  if (cu().cuCtxGetCurrent(&current) != CUDA_SUCCESS) return;
  if (current != context) {
    if (cu().cuCtxPushCurrent(context) != CUDA_SUCCESS) return;
    pushed_ = true;
  }
  entered_ = true;
}

CudaContextScope::~CudaContextScope() {
  if (pushed_) {
    CUcontext popped = nullptr;
    cu().cuCtxPopCurrent(&popped);
  }
}

void report_cuda_cleanup_failure(CUresult result, const char* call, const std::string& device) {
  if (result == CUDA_SUCCESS || result == CUDA_ERROR_DEINITIALIZED) return;
  detail::log(LogLevel::error, LogScope::rank, "{} failed while releasing resources of {}: {}",
              call, device, cuda_error_name(result));
}

// --- CudaContextAdapter ---------------------------------------------------------------------

CudaContextAdapter::Handles::~Handles() {
  switch (ownership) {
    case CudaContextOwnership::primary:
      for (CUdevice device : devices) {
        report_cuda_cleanup_failure(cu().cuDevicePrimaryCtxRelease(device),
                                    "cuDevicePrimaryCtxRelease",
                                    fmt::format("CUDA device {}", device));
      }
      break;
    case CudaContextOwnership::owned:
      for (CUcontext context : contexts) {
        report_cuda_cleanup_failure(cu().cuCtxDestroy(context), "cuCtxDestroy", "a CUDA context");
      }
      break;
    case CudaContextOwnership::borrowed: break;
  }
}

CudaContextAdapter::CudaContextAdapter(std::vector<std::shared_ptr<DeviceAdapter>> devices,
                                       std::vector<CUcontext> contexts,
                                       CudaContextOwnership ownership)
    : graph_launch_(env_flag("SKEIN_CUDA_GRAPH_LAUNCH", true, "Context",
                             "launch kernels called again on a queue through one-kernel CUDA "
                             "graphs")),
      devices_(std::move(devices)) {
  for (const auto& device : devices_) descriptions_.push_back(describe(*device));
  if (ownership == CudaContextOwnership::primary) {
    // Primary contexts are the ones the CUDA runtime, cuBLAS and NCCL use, so memory and streams
    // are shared with them without any translation.
    handles_.ownership = CudaContextOwnership::primary;
    for (std::size_t i = 0; i < devices_.size(); ++i) {
      const auto device = static_cast<CUdevice>(devices_[i]->native());
      CUcontext context = nullptr;
      SKEIN_CU_CHECK(cuDevicePrimaryCtxRetain, (&context, device), descriptions_[i]);
      handles_.devices.push_back(device);
      handles_.contexts.push_back(context);
    }
  } else {
    // Borrowed until construction succeeds: when it fails, the caller still owns the contexts.
    handles_.contexts = std::move(contexts);
  }
  enable_peer_access();
  handles_.ownership = ownership;
}

void CudaContextAdapter::enable_peer_access() {
  const std::size_t n = devices_.size();
  peer_ = std::make_unique<std::atomic<bool>[]>(n * n);
  for (std::size_t from = 0; from < n; ++from) {
    for (std::size_t to = 0; to < n; ++to) {
      const auto from_device = static_cast<CUdevice>(devices_[from]->native());
      const auto to_device = static_cast<CUdevice>(devices_[to]->native());
      if (from_device == to_device) {
        peer_[from * n + to] = true;
        continue;
      }
      int possible = 0;
      SKEIN_CU_CHECK(cuDeviceCanAccessPeer, (&possible, from_device, to_device),
                     descriptions_[from]);
      if (possible == 0) continue;
      CudaContextScope scope(context(from), descriptions_[from]);
      const CUresult result = cu().cuCtxEnablePeerAccess(context(to), 0);
      if (result == CUDA_SUCCESS || result == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
        peer_[from * n + to] = true;
      } else if (result != CUDA_ERROR_TOO_MANY_PEERS) {
        // TOO_MANY_PEERS (more than 8 peers) leaves the pair without direct access: copies are
        // then staged by the driver, and can_access() says so.
        throw_cuda_error(result, "cuCtxEnablePeerAccess",
                         descriptions_[from] + " (peer " + descriptions_[to] + ")", SKEIN_HERE);
      }
    }
  }
}

std::unique_ptr<QueueAdapter> CudaContextAdapter::make_queue(std::size_t device_idx, int priority,
                                                             QueueSync sync) {
  return make_cuda_queue(shared_from_this(), device_idx, priority, sync);
}

// --- driver rows: scheduling, push / pop, synchronize ----------------------------------------

namespace {
constexpr unsigned scheduling_flag(ContextScheduling s) {
  switch (s) {
    case ContextScheduling::spin: return CU_CTX_SCHED_SPIN;
    case ContextScheduling::yield: return CU_CTX_SCHED_YIELD;
    case ContextScheduling::blocking_sync: return CU_CTX_SCHED_BLOCKING_SYNC;
    case ContextScheduling::automatic: break;
  }
  return CU_CTX_SCHED_AUTO;
}
}  // namespace

void CudaContextAdapter::set_scheduling(std::size_t device_idx, ContextScheduling scheduling) {
  const std::string& where = description(device_idx);
  if (handles_.ownership != CudaContextOwnership::primary) {
    raise_in(SKEIN_HERE, "Context::from_devices",
             "Create the application's CUDA context with the flags (cuCtxCreate), or use a "
             "context over primary contexts (Context::from_devices).",
             "{}: the scheduling of a context over the application's CUDA contexts is the "
             "application's",
             where);
  }
  const auto device = static_cast<CUdevice>(devices_[device_idx]->native());
  // The primary context's flags other than the scheduling stay as they are.
  unsigned flags = 0;
  int active = 0;
  SKEIN_CU_CHECK(cuDevicePrimaryCtxGetState, (device, &flags, &active), where);
  flags = (flags & ~static_cast<unsigned>(CU_CTX_SCHED_MASK)) | scheduling_flag(scheduling);
  SKEIN_CU_CHECK(cuDevicePrimaryCtxSetFlags, (device, flags), where);
  // The primary context is active (Skein retained it): where the driver can, the running context
  // takes the scheduling too, whatever the driver does with an active one's new flags.
  if (cu().cuCtxSetFlags) {
    CudaContextScope scope(context(device_idx), where);
    unsigned current = 0;
    SKEIN_CU_CHECK(cuCtxGetFlags, (&current), where);
    current = (current & ~static_cast<unsigned>(CU_CTX_SCHED_MASK)) | scheduling_flag(scheduling);
    // cuCtxGetFlags may report CU_CTX_MAP_HOST, which the setter need not take (mapping is
    // always on with unified addressing): then without it.
    const CUresult result = cu().cuCtxSetFlags(current);
    if (result == CUDA_ERROR_INVALID_VALUE) {
      SKEIN_CU_CHECK(cuCtxSetFlags, (current & ~static_cast<unsigned>(CU_CTX_MAP_HOST)), where);
    } else if (result != CUDA_SUCCESS) {
      throw_cuda_error(result, "cuCtxSetFlags", where, SKEIN_HERE);
    }
  }
}

ContextScheduling CudaContextAdapter::scheduling(std::size_t device_idx) {
  const std::string& where = description(device_idx);
  CudaContextScope scope(context(device_idx), where);
  unsigned flags = 0;
  SKEIN_CU_CHECK(cuCtxGetFlags, (&flags), where);
  switch (flags & CU_CTX_SCHED_MASK) {
    case CU_CTX_SCHED_SPIN: return ContextScheduling::spin;
    case CU_CTX_SCHED_YIELD: return ContextScheduling::yield;
    case CU_CTX_SCHED_BLOCKING_SYNC: return ContextScheduling::blocking_sync;
    default: return ContextScheduling::automatic;
  }
}

void CudaContextAdapter::push(std::size_t device_idx) {
  SKEIN_CU_CHECK(cuCtxPushCurrent, (context(device_idx)), description(device_idx));
}

void CudaContextAdapter::pop() {
  CUcontext current = nullptr;
  SKEIN_CU_CHECK(cuCtxGetCurrent, (&current), description(0));
  if (current == nullptr || std::find(handles_.contexts.begin(), handles_.contexts.end(),
                                      current) == handles_.contexts.end()) {
    raise_in(SKEIN_HERE, "Context::pop",
             "Pop the context that was pushed last (Context::push), from the thread that pushed "
             "it.",
             "the calling thread's current CUDA context ({}) is not one of this context's",
             current ? fmt::format("{}", static_cast<const void*>(current)) : "none");
  }
  CUcontext popped = nullptr;
  SKEIN_CU_CHECK(cuCtxPopCurrent, (&popped), description(0));
}

void CudaContextAdapter::synchronize() {
  for (std::size_t d = 0; d < devices_.size(); ++d) {
    CudaContextScope scope(context(d), description(d));
    SKEIN_CU_CHECK(cuCtxSynchronize, (), description(d));
  }
}

QueuePriorityRange CudaContextAdapter::queue_priority_range(std::size_t device_idx) {
  const std::string& device = description(device_idx);
  CudaContextScope scope(context(device_idx), device);
  QueuePriorityRange range;
  SKEIN_CU_CHECK(cuCtxGetStreamPriorityRange, (&range.least, &range.greatest), device);
  return range;
}

MemoryInfo CudaContextAdapter::memory_info(std::size_t device_idx) {
  const std::string& device = description(device_idx);
  CudaContextScope scope(context(device_idx), device);
  MemoryInfo info;
  SKEIN_CU_CHECK(cuMemGetInfo, (&info.free, &info.total), device);
  return info;
}

namespace {

CUlimit cu_limit(ContextLimit limit) {
  switch (limit) {
    case ContextLimit::stack_size: return CU_LIMIT_STACK_SIZE;
    case ContextLimit::malloc_heap_size: return CU_LIMIT_MALLOC_HEAP_SIZE;
    case ContextLimit::printf_fifo_size: return CU_LIMIT_PRINTF_FIFO_SIZE;
  }
  raise_in(SKEIN_HERE, "set_limit", "Pass one of the ContextLimit values.",
           "unknown context limit {}", static_cast<int>(limit));
}

}  // namespace

CUfunc_cache cu_cache(CacheConfig config) {
  switch (config) {
    case CacheConfig::prefer_none: return CU_FUNC_CACHE_PREFER_NONE;
    case CacheConfig::prefer_shared: return CU_FUNC_CACHE_PREFER_SHARED;
    case CacheConfig::prefer_l1: return CU_FUNC_CACHE_PREFER_L1;
    case CacheConfig::prefer_equal: return CU_FUNC_CACHE_PREFER_EQUAL;
  }
  raise_in(SKEIN_HERE, "set_cache_config", "Pass one of the CacheConfig values.",
           "unknown cache configuration {}", static_cast<int>(config));
}

std::size_t CudaContextAdapter::get_limit(std::size_t device_idx, ContextLimit limit) {
  const std::string& device = description(device_idx);
  CudaContextScope scope(context(device_idx), device);
  std::size_t value = 0;
  SKEIN_CU_CHECK(cuCtxGetLimit, (&value, cu_limit(limit)), device);
  return value;
}

void CudaContextAdapter::set_limit(std::size_t device_idx, ContextLimit limit, std::size_t value) {
  const std::string& device = description(device_idx);
  CudaContextScope scope(context(device_idx), device);
  const CUresult result = cu().cuCtxSetLimit(cu_limit(limit), value);
  if (result == CUDA_SUCCESS) return;
  // The driver's refusal, said in terms of the limit: which one, what value, and what to try.
  ErrorInfo info{.what = fmt::format("the device refused {} = {}: {}", name(limit),
                                     format_bytes(value), cuda_error_description(result)),
                 .call = "cuCtxSetLimit",
                 .code_name = cuda_error_name(result),
                 .code = static_cast<long long>(result),
                 .has_code = true,
                 .device = device,
                 .hint = fmt::format("Read the current value with get_limit() and ask for less; "
                                     "the stack size per thread is limited by the device's local "
                                     "memory, and heap and FIFO sizes cannot change once a kernel "
                                     "that uses malloc() or printf() has run."),
                 .location = SKEIN_HERE};
  if (result == CUDA_ERROR_OUT_OF_MEMORY) throw MemoryError(info, value, 0);
  if (result == CUDA_ERROR_INVALID_VALUE || result == CUDA_ERROR_UNSUPPORTED_LIMIT) {
    throw LogicError(info);
  }
  throw RuntimeError(info);
}

CacheConfig CudaContextAdapter::get_cache_config(std::size_t device_idx) {
  const std::string& device = description(device_idx);
  CudaContextScope scope(context(device_idx), device);
  CUfunc_cache config = CU_FUNC_CACHE_PREFER_NONE;
  SKEIN_CU_CHECK(cuCtxGetCacheConfig, (&config), device);
  switch (config) {
    case CU_FUNC_CACHE_PREFER_SHARED: return CacheConfig::prefer_shared;
    case CU_FUNC_CACHE_PREFER_L1: return CacheConfig::prefer_l1;
    case CU_FUNC_CACHE_PREFER_EQUAL: return CacheConfig::prefer_equal;
    default: return CacheConfig::prefer_none;
  }
}

void CudaContextAdapter::set_cache_config(std::size_t device_idx, CacheConfig config) {
  const std::string& device = description(device_idx);
  CudaContextScope scope(context(device_idx), device);
  SKEIN_CU_CHECK(cuCtxSetCacheConfig, (cu_cache(config)), device);
}

bool CudaContextAdapter::can_access_peer(std::size_t from_device_idx,
                                         std::size_t to_device_idx) const {
  int possible = 0;
  SKEIN_CU_CHECK(cuDeviceCanAccessPeer,
                 (&possible, static_cast<CUdevice>(devices_[from_device_idx]->native()),
                  static_cast<CUdevice>(devices_[to_device_idx]->native())),
                 descriptions_[from_device_idx]);
  return possible != 0;
}

void CudaContextAdapter::set_peer_access(std::size_t from, std::size_t to, bool enable) {
  const std::size_t n = devices_.size();
  std::lock_guard lock(peer_mutex_);
  const std::string where = descriptions_[from] + " (peer " + descriptions_[to] + ")";
  CudaContextScope scope(context(from), descriptions_[from]);
  if (enable) {
    const CUresult result = cu().cuCtxEnablePeerAccess(context(to), 0);
    if (result != CUDA_SUCCESS && result != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
      throw_cuda_error(result, "cuCtxEnablePeerAccess", where, SKEIN_HERE);
    }
  } else {
    // Kernels already enqueued may still read the peer's memory: they must finish first.
    SKEIN_CU_CHECK(cuCtxSynchronize, (), descriptions_[from]);
    const CUresult result = cu().cuCtxDisablePeerAccess(context(to));
    if (result != CUDA_SUCCESS && result != CUDA_ERROR_PEER_ACCESS_NOT_ENABLED) {
      throw_cuda_error(result, "cuCtxDisablePeerAccess", where, SKEIN_HERE);
    }
  }
  peer_[from * n + to] = enable;
}

void CudaContextAdapter::profiler(bool start) {
  // The profiler's state is per CUDA context: every device's.
  for (std::size_t d = 0; d < devices_.size(); ++d) {
    CudaContextScope scope(context(d), description(d));
    if (start) {
      SKEIN_CU_CHECK(cuProfilerStart, (), description(d));
    } else {
      SKEIN_CU_CHECK(cuProfilerStop, (), description(d));
    }
  }
}

std::size_t CudaContextAdapter::check_free_memory(std::size_t device_idx, std::size_t size,
                                                  const char* call) {
  // Checked first so that the error says how much there is, and so that a request that cannot
  // fit does not make the driver evict or defragment anything.
  const std::string& device = description(device_idx);
  std::size_t free = 0;
  std::size_t total = 0;
  SKEIN_CU_CHECK(cuMemGetInfo, (&free, &total), device);
  if (size > free) {
    throw MemoryError(
        ErrorInfo{.what = fmt::format("not enough device memory: requested {}, {} free of {}",
                                      format_bytes(size), format_bytes(free), format_bytes(total)),
                  .call = call,
                  .device = device,
                  .hint = "Use smaller buffers, spread the data over more devices, or release "
                          "buffers and arrays that are no longer needed.",
                  .location = SKEIN_HERE},
        size, free);
  }
  return free;
}

std::shared_ptr<BufferAdapter> CudaContextAdapter::allocate(std::size_t device_idx,
                                                            std::size_t size) {
  if (size == 0) return make_cuda_buffer(shared_from_this(), device_idx, 0, 0);
  const std::string& device = description(device_idx);
  CudaContextScope scope(context(device_idx), device);

  std::size_t free = check_free_memory(device_idx, size, "cuMemAlloc");

  CUdeviceptr pointer = 0;
  if (const CUresult result = cu().cuMemAlloc(&pointer, size); result != CUDA_SUCCESS) {
    std::size_t total = 0;
    if (result == CUDA_ERROR_OUT_OF_MEMORY) cu().cuMemGetInfo(&free, &total);
    throw_cuda_error(result, "cuMemAlloc", device, SKEIN_HERE, size, free);
  }
  try {
    return make_cuda_buffer(shared_from_this(), device_idx, pointer, size);
  } catch (...) {
    cu().cuMemFree(pointer);
    throw;
  }
}

std::pair<std::shared_ptr<BufferAdapter>, std::size_t> CudaContextAdapter::allocate_pitched(
    std::size_t device_idx, std::size_t width, std::size_t height, std::size_t element_size) {
  if (width == 0 || height == 0) return {allocate(device_idx, 0), width};
  const std::string& device = description(device_idx);
  CudaContextScope scope(context(device_idx), device);
  // cuMemAllocPitch takes element sizes of 4, 8 or 16 bytes (the width of the accesses it pads
  // for); smaller elements are read four bytes at a time.
  const unsigned element = element_size <= 4 ? 4u : element_size <= 8 ? 8u : 16u;
  CUdeviceptr pointer = 0;
  std::size_t pitch = 0;
  if (const CUresult result = cu().cuMemAllocPitch(&pointer, &pitch, width, height, element);
      result != CUDA_SUCCESS) {
    std::size_t free = 0;
    std::size_t total = 0;
    if (result == CUDA_ERROR_OUT_OF_MEMORY) cu().cuMemGetInfo(&free, &total);
    throw_cuda_error(result, "cuMemAllocPitch", device, SKEIN_HERE, width * height, free);
  }
  try {
    return {make_cuda_buffer(shared_from_this(), device_idx, pointer, pitch * height), pitch};
  } catch (...) {
    cu().cuMemFree(pointer);
    throw;
  }
}

namespace {
std::size_t available_host_memory() {
  const long pages = sysconf(_SC_AVPHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? static_cast<std::size_t>(pages) * page_size : 0;
}
}  // namespace

std::shared_ptr<HostBufferAdapter> CudaContextAdapter::allocate_host(std::size_t size,
                                                                     HostMemoryFlags flags) {
  if (size == 0) return make_cuda_host_buffer(shared_from_this(), nullptr, 0, flags, false);
  // Portable (the default): usable for asynchronous transfers with every device, not only the
  // context's first.
  const std::string& device = description(0);
  CudaContextScope scope(context(0), device);
  unsigned cu_flags = 0;
  if (flags.portable) cu_flags |= CU_MEMHOSTALLOC_PORTABLE;
  if (flags.write_combined) cu_flags |= CU_MEMHOSTALLOC_WRITECOMBINED;
  if (flags.device_mapped) cu_flags |= CU_MEMHOSTALLOC_DEVICEMAP;
  void* pointer = nullptr;
  if (const CUresult result = cu().cuMemHostAlloc(&pointer, size, cu_flags);
      result != CUDA_SUCCESS) {
    throw_cuda_error(result, "cuMemHostAlloc", "page-locked host memory for " + device, SKEIN_HERE,
                     size, available_host_memory());
  }
  try {
    return make_cuda_host_buffer(shared_from_this(), pointer, size, flags, false);
  } catch (...) {
    cu().cuMemFreeHost(pointer);
    throw;
  }
}

std::shared_ptr<HostBufferAdapter> CudaContextAdapter::register_host(void* data, std::size_t size,
                                                                     HostMemoryFlags flags) {
  const std::string& device = description(0);
  CudaContextScope scope(context(0), device);
  unsigned cu_flags = 0;
  if (flags.portable) cu_flags |= CU_MEMHOSTREGISTER_PORTABLE;
  if (flags.device_mapped) cu_flags |= CU_MEMHOSTREGISTER_DEVICEMAP;
  const CUresult result = cu().cuMemHostRegister(data, size, cu_flags);
  if (result == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) {
    throw LogicError(ErrorInfo{
        .what = fmt::format("{} at {} are already page-locked (registered by this or another "
                            "context, or part of a registered range)",
                            format_bytes(size), data),
        .call = "cuMemHostRegister",
        .code_name = cuda_error_name(result),
        .code = static_cast<long long>(result),
        .has_code = true,
        .device = "registered host memory for " + device,
        .hint = "Register each range once, and keep the HostBuffer of the first registration; "
                "ranges must not overlap.",
        .location = SKEIN_HERE});
  }
  if (result != CUDA_SUCCESS) {
    throw_cuda_error(result, "cuMemHostRegister", "registered host memory for " + device,
                     SKEIN_HERE, size, available_host_memory());
  }
  try {
    return make_cuda_host_buffer(shared_from_this(), data, size, flags, true);
  } catch (...) {
    cu().cuMemHostUnregister(data);
    throw;
  }
}

std::shared_ptr<BufferAdapter> CudaContextAdapter::mapped_device_buffer(
    const std::shared_ptr<HostBufferAdapter>& host, std::size_t device_idx) {
  const std::string& device = description(device_idx);
  CudaContextScope scope(context(device_idx), device);
  CUdeviceptr pointer = 0;
  SKEIN_CU_CHECK(cuMemHostGetDevicePointer, (&pointer, host->data(), 0), device);
  // Not Skein's to free: the memory goes with the host buffer, which the Buffer keeps.
  return make_cuda_foreign_buffer(shared_from_this(), device_idx, pointer, host->size(),
                                  [keep = host] {});
}

bool CudaContextAdapter::can_access(std::size_t from_device_idx, std::size_t to_device_idx) const {
  const std::size_t n = devices_.size();
  if (from_device_idx >= n || to_device_idx >= n) {
    raise_in(SKEIN_HERE, "Context::can_access", "",
             "device index {} or {} is out of range for a context of {} devices", from_device_idx,
             to_device_idx, n);
  }
  return peer_[from_device_idx * n + to_device_idx].load(std::memory_order_relaxed);
}

void CudaContextAdapter::deactivate() {
  // The stack of current contexts may hold ours several times (pushed by the application);
  // bounded so that a driver that misbehaves cannot keep us here.
  for (std::size_t i = 0; i < 64; ++i) {
    CUcontext current = nullptr;
    SKEIN_CU_CHECK(cuCtxGetCurrent, (&current), description(0));
    const auto& ours = handles_.contexts;
    if (current == nullptr || std::find(ours.begin(), ours.end(), current) == ours.end()) return;
    CUcontext popped = nullptr;
    SKEIN_CU_CHECK(cuCtxPopCurrent, (&popped), description(0));
  }
}

std::uintptr_t CudaContextAdapter::native(std::size_t device_idx) const {
  return reinterpret_cast<std::uintptr_t>(context(device_idx));
}

// --- the internal interface (skein/detail/cuda/context.hpp) -------------------------------------

std::shared_ptr<ContextAdapter> cuda_context_adapter(const Context& context) {
  const auto& adapter = detail::impl_of(context)->adapter;
  return std::dynamic_pointer_cast<CudaContextAdapter>(adapter) ? adapter : nullptr;
}

namespace {
const CudaContextAdapter& as_cuda(const ContextAdapter& adapter, const char* call) {
  const auto* cuda = dynamic_cast<const CudaContextAdapter*>(&adapter);
  if (!cuda) {
    raise_in(SKEIN_HERE, call, "Pass the adapter that cuda_context_adapter() returned.",
             "the context adapter is not a CUDA one");
  }
  return *cuda;
}
}  // namespace

CUcontext cuda_context(const ContextAdapter& adapter, std::size_t device_idx) {
  return as_cuda(adapter, "detail::cuda_context").context(device_idx);
}

const std::string& cuda_device_description(const ContextAdapter& adapter, std::size_t device_idx) {
  return as_cuda(adapter, "detail::cuda_device_description").description(device_idx);
}

std::shared_ptr<ContextAdapter> make_cuda_context(
    const std::vector<std::shared_ptr<DeviceAdapter>>& devices) {
  return std::make_shared<CudaContextAdapter>(devices, std::vector<CUcontext>{},
                                              CudaContextOwnership::primary);
}

namespace {

std::shared_ptr<DeviceAdapter> cuda_device_adapter(CUdevice device, const char* call) {
  for (const auto& platform : api_adapter(ApiId::cuda)->platforms()) {
    for (const auto& adapter : platform->devices()) {
      if (static_cast<CUdevice>(adapter->native()) == device) return adapter;
    }
  }
  raise_in(SKEIN_HERE, call, "Pass devices from cuDeviceGet of this process.",
           "CUdevice {} is not one of the visible CUDA devices", device);
}

void check_cuda(const Api& api, const char* call) {
  if (api.id() != ApiId::cuda) {
    raise_in(SKEIN_HERE, call, "Use skein::cuda functions only with CUDA objects.",
             "the object belongs to {}, not CUDA", name(api.id()));
  }
}

}  // namespace

}  // namespace skein::detail

namespace skein::cuda {

Context context_from_backend_contexts(std::span<const CUcontext> contexts, bool take_ownership) {
  using namespace skein::detail;
  constexpr const char* call = "skein::cuda::context_from_backend_contexts";
  cuda_driver_checked();
  if (contexts.empty()) raise_in(SKEIN_HERE, call, "", "no contexts given");
  std::vector<std::shared_ptr<DeviceAdapter>> devices;
  for (std::size_t i = 0; i < contexts.size(); ++i) {
    const std::string where = fmt::format("CUDA context {} of {}", i, contexts.size());
    if (contexts[i] == nullptr) raise_in(SKEIN_HERE, call, "", "{} is null", where);
    CUdevice device = 0;
    {
      CudaContextScope scope(contexts[i], where);
      SKEIN_CU_CHECK(cuCtxGetDevice, (&device), where);
    }
    devices.push_back(cuda_device_adapter(device, call));
  }
  return wrap_context(std::make_shared<CudaContextAdapter>(
      std::move(devices), std::vector<CUcontext>(contexts.begin(), contexts.end()),
      take_ownership ? CudaContextOwnership::owned : CudaContextOwnership::borrowed));
}

Context context_from_backend_devices(std::span<const CUdevice> devices) {
  using namespace skein::detail;
  constexpr const char* call = "skein::cuda::context_from_backend_devices";
  cuda_driver_checked();
  if (devices.empty()) raise_in(SKEIN_HERE, call, "", "no devices given");
  std::vector<std::shared_ptr<DeviceAdapter>> adapters;
  for (CUdevice device : devices) adapters.push_back(cuda_device_adapter(device, call));
  return wrap_context(make_cuda_context(adapters));
}

Buffer buffer_from_native(const Context& context, std::size_t device_idx, CUdeviceptr pointer,
                          std::size_t size, std::function<void()> deleter) {
  constexpr const char* call = "skein::cuda::buffer_from_native";
  detail::check_cuda(context.api(), call);
  detail::check_device_idx(context, device_idx, call);
  auto adapter =
      std::static_pointer_cast<detail::CudaContextAdapter>(detail::impl_of(context)->adapter);
  const std::string& where = adapter->description(device_idx);
  if (size > 0) {
    const auto refuse = [&](const std::string& what, const char* hint) {
      detail::raise_in(SKEIN_HERE, call, hint, "{}: pointer {:#x}: {}", where, pointer, what);
    };
    if (pointer == 0)
      refuse("a null pointer for a non-empty buffer", "Pass the allocation's address.");
    detail::CudaContextScope scope(adapter->context(device_idx), where);
    // The device the memory lives on: cuMemAlloc'ed memory, memory pools and VMM allocations
    // all answer this one; host memory and unknown addresses do not.
    int ordinal = -1;
    if (detail::cu().cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                           pointer) != CUDA_SUCCESS) {
      refuse("the driver knows no device memory at this address",
             "Pass device memory (cuMemAlloc, cudaMalloc, a memory pool), not a host pointer.");
    }
    unsigned memory_type = 0;
    if (detail::cu().cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                           pointer) == CUDA_SUCCESS &&
        memory_type == CU_MEMORYTYPE_HOST) {
      refuse("it is host memory", "Pass device memory; copy host data with Buffer::set.");
    }
    const auto device = static_cast<CUdevice>(context.device(device_idx).adapter()->native());
    if (ordinal != static_cast<int>(device)) {
      refuse(fmt::format("the memory is on CUDA device {}, not on this device (CUDA device {})",
                         ordinal, static_cast<int>(device)),
             "Pass the device index whose device holds the memory.");
    }
    CUcontext owner = nullptr;
    if (detail::cu().cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, pointer) ==
            CUDA_SUCCESS &&
        owner != nullptr && owner != adapter->context(device_idx)) {
      refuse("the memory belongs to another CUDA context than this Skein context's",
             "Make the Skein context over the same CUDA context "
             "(skein::cuda::context_from_backend_contexts), or over the primary context for "
             "memory of the CUDA runtime.");
    }
    CUdeviceptr base = 0;
    std::size_t bytes = 0;
    if (detail::cu().cuMemGetAddressRange(&base, &bytes, pointer) == CUDA_SUCCESS &&
        pointer + size > base + bytes) {
      refuse(fmt::format("{} bytes asked, but its allocation ends {} bytes after it", size,
                         base + bytes - pointer),
             "Pass at most the allocation's size from the pointer on.");
    }
  }
  auto buffer = detail::make_cuda_foreign_buffer(adapter, device_idx, size > 0 ? pointer : 0, size,
                                                 std::move(deleter));
  return Buffer(context, std::move(buffer), device_idx, 0, size);
}

Queue queue_from_native(const Context& context, std::vector<std::size_t> device_idxs,
                        std::span<const CUstream> streams) {
  constexpr const char* call = "skein::cuda::queue_from_native";
  detail::check_cuda(context.api(), call);
  auto adapter =
      std::static_pointer_cast<detail::CudaContextAdapter>(detail::impl_of(context)->adapter);
  if (device_idxs.size() != streams.size()) {
    detail::raise_in(SKEIN_HERE, call, "Give one stream per device index.",
                     "{} device index(es) and {} stream(s) were given", device_idxs.size(),
                     streams.size());
  }
  std::vector<std::unique_ptr<detail::QueueAdapter>> queues;
  for (std::size_t i = 0; i < device_idxs.size(); ++i) {
    const std::size_t d = device_idxs[i];
    detail::check_device_idx(context, d, call);
    CUcontext owner = nullptr;
    if (detail::cu().cuStreamGetCtx && streams[i] != nullptr &&
        detail::cu().cuStreamGetCtx(streams[i], &owner) == CUDA_SUCCESS && owner != nullptr &&
        owner != adapter->context(d)) {
      detail::raise_in(SKEIN_HERE, call,
                       "Create the stream in the context behind the Skein context "
                       "(skein::cuda::native_context), or make the Skein context over the "
                       "stream's (context_from_backend_contexts).",
                       "{}: stream {} belongs to another CUDA context", adapter->description(d),
                       static_cast<const void*>(streams[i]));
    }
    queues.push_back(detail::make_cuda_foreign_queue(adapter, d, streams[i]));
  }
  return detail::wrap_queue(context, std::move(device_idxs), std::move(queues), call);
}

CUstream native_stream(const Queue& queue, std::size_t device_idx) {
  detail::check_cuda(queue.context().api(), "skein::cuda::native_stream");
  return reinterpret_cast<CUstream>(queue.device_queue(device_idx).native());
}

CUdeviceptr native_pointer(const Buffer& buffer) {
  if (!buffer.adapter()) return 0;
  detail::check_cuda(buffer.context().api(), "skein::cuda::native_pointer");
  // An empty buffer has no allocation; its "pointer" must not look like a valid address.
  if (buffer.adapter()->native() == 0) return 0;
  // Work Skein does not see may use the address now: a pool never hands the block out again.
  buffer.adapter()->mark_exported();
  return static_cast<CUdeviceptr>(buffer.adapter()->native()) + buffer.offset();
}

PointerAttributes pointer_attributes(const Context& context, CUdeviceptr pointer) {
  constexpr const char* call = "skein::cuda::pointer_attributes";
  detail::check_cuda(context.api(), call);
  auto adapter =
      std::static_pointer_cast<detail::CudaContextAdapter>(detail::impl_of(context)->adapter);
  return adapter->pointer_attributes_of(pointer, call);
}

CUcontext native_context(const Context& context, std::size_t device_idx) {
  constexpr const char* call = "skein::cuda::native_context";
  detail::check_cuda(context.api(), call);
  detail::check_device_idx(context, device_idx, call);
  return reinterpret_cast<CUcontext>(detail::impl_of(context)->adapter->native(device_idx));
}

CUdevice native_device(const Device& device) {
  detail::check_cuda(device.platform().api(), "skein::cuda::native_device");
  return static_cast<CUdevice>(device.adapter()->native());
}

}  // namespace skein::cuda

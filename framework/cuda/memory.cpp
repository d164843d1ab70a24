// SPDX-License-Identifier: BSD-3-Clause
// Managed memory (cuMemAllocManaged, cuMemPrefetchAsync, cuMemAdvise) and IPC handles of memory
// and events (cuIpc*) on the CUDA backend.
#include <fmt/format.h>

#include <cstring>

#include "adapters.hpp"
#include "skein/detail/ipc.hpp"

namespace skein::detail {

namespace {

CUdevice cu_device(const CudaContextAdapter& context, std::size_t device_idx) {
  return static_cast<CUdevice>(context.devices()[device_idx]->native());
}

CUmemLocation cu_location(const CudaContextAdapter& context, MemoryLocation location) {
  CUmemLocation result{};
  if (location.host) {
    result.type = CU_MEM_LOCATION_TYPE_HOST;
    result.id = 0;  // ignored
  } else {
    result.type = CU_MEM_LOCATION_TYPE_DEVICE;
    result.id = cu_device(context, location.device_idx);
  }
  return result;
}

CUmem_advise cu_advice(MemoryAdvice advice) {
  switch (advice) {
    case MemoryAdvice::set_read_mostly: return CU_MEM_ADVISE_SET_READ_MOSTLY;
    case MemoryAdvice::unset_read_mostly: return CU_MEM_ADVISE_UNSET_READ_MOSTLY;
    case MemoryAdvice::set_preferred_location: return CU_MEM_ADVISE_SET_PREFERRED_LOCATION;
    case MemoryAdvice::unset_preferred_location: return CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION;
    case MemoryAdvice::set_accessed_by: return CU_MEM_ADVISE_SET_ACCESSED_BY;
    case MemoryAdvice::unset_accessed_by: return CU_MEM_ADVISE_UNSET_ACCESSED_BY;
  }
  raise_in(SKEIN_HERE, "advise", "Pass one of MemoryAdvice's values.", "unknown advice {}",
           static_cast<int>(advice));
}

void check_driver_has(const void* function, const char* call, const std::string& device) {
  if (function == nullptr) {
    raise_in<RuntimeError>(SKEIN_HERE, call, "Update the NVIDIA driver (CUDA 12.2 or later).",
                           "the driver on {} lacks {} with memory locations", device, call);
  }
}

}  // namespace

IpcDeviceCheck CudaContextAdapter::ipc_device_check(std::size_t device_idx) const {
  // The exporting device may be this one, or another that this one reaches by peer access
  // (cuIpcOpenMemHandle enables it, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS); it must be visible here.
  return [this, device_idx](std::string_view exporter) -> std::string {
    const std::string mine = pci_bus_id(device_idx);
    if (exporter == mine) return {};
    CUdevice theirs = 0;
    const std::string id(exporter);
    if (cu().cuDeviceGetByPCIBusId(&theirs, id.c_str()) != CUDA_SUCCESS) {
      return fmt::format(
          "which this process does not see (this device is {}; check "
          "CUDA_VISIBLE_DEVICES)",
          mine);
    }
    int can = 0;
    SKEIN_CU_CHECK(cuDeviceCanAccessPeer, (&can, cu_device(*this, device_idx), theirs),
                   description(device_idx));
    if (can == 0) return fmt::format("which this device ({}) has no peer access to", mine);
    return {};
  };
}

std::string CudaContextAdapter::pci_bus_id(std::size_t device_idx) const {
  char id[32] = {};
  SKEIN_CU_CHECK(cuDeviceGetPCIBusId,
                 (id, static_cast<int>(sizeof(id)), cu_device(*this, device_idx)),
                 description(device_idx));
  return id;
}

std::shared_ptr<BufferAdapter> CudaContextAdapter::allocate_managed(std::size_t device_idx,
                                                                    std::size_t size,
                                                                    ManagedAttach attach) {
  const std::string& device = description(device_idx);
  int supported = 0;
  SKEIN_CU_CHECK(cuDeviceGetAttribute,
                 (&supported, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, cu_device(*this, device_idx)),
                 device);
  if (supported == 0) {
    throw LogicError(ErrorInfo{.what = "the device cannot allocate managed memory",
                               .call = "cuMemAllocManaged",
                               .device = device,
                               .hint = "Use Buffer::allocate with explicit transfers.",
                               .location = SKEIN_HERE});
  }
  if (size == 0) return make_cuda_managed_buffer(shared_from_this(), device_idx, 0, 0);
  CudaContextScope scope(context(device_idx), device);
  // Managed memory could oversubscribe the device (pages move out to the host), but a request
  // beyond what is free is far more often a mistake than a plan: refused before allocating.
  std::size_t free = check_free_memory(device_idx, size, "cuMemAllocManaged");
  CUdeviceptr pointer = 0;
  const unsigned flags = attach == ManagedAttach::host ? CU_MEM_ATTACH_HOST : CU_MEM_ATTACH_GLOBAL;
  if (const CUresult result = cu().cuMemAllocManaged(&pointer, size, flags);
      result != CUDA_SUCCESS) {
    std::size_t total = 0;
    if (result == CUDA_ERROR_OUT_OF_MEMORY) cu().cuMemGetInfo(&free, &total);
    throw_cuda_error(result, "cuMemAllocManaged", device, SKEIN_HERE, size, free);
  }
  try {
    return make_cuda_managed_buffer(shared_from_this(), device_idx, pointer, size);
  } catch (...) {
    cu().cuMemFree(pointer);
    throw;
  }
}

void CudaContextAdapter::prefetch_managed(QueueAdapter& queue, BufferAdapter& buffer,
                                          std::size_t offset, std::size_t size, MemoryLocation to) {
  const std::string& device = description(buffer.device_idx());
  check_driver_has(reinterpret_cast<const void*>(cu().cuMemPrefetchAsync), "cuMemPrefetchAsync",
                   device);
  CudaContextScope scope(context(buffer.device_idx()), device);
  SKEIN_CU_CHECK(cuMemPrefetchAsync,
                 (static_cast<CUdeviceptr>(buffer.native() + offset), size, cu_location(*this, to),
                  0, reinterpret_cast<CUstream>(queue.native())),
                 device);
}

void CudaContextAdapter::attach_managed(QueueAdapter& queue, BufferAdapter& buffer,
                                        ManagedAttach attach) {
  const std::string& device = description(buffer.device_idx());
  unsigned flags = CU_MEM_ATTACH_GLOBAL;
  if (attach == ManagedAttach::host) flags = CU_MEM_ATTACH_HOST;
  if (attach == ManagedAttach::single) flags = CU_MEM_ATTACH_SINGLE;
  CudaContextScope scope(context(buffer.device_idx()), device);
  // Length 0: the whole allocation (what every device allows).
  SKEIN_CU_CHECK(cuStreamAttachMemAsync,
                 (reinterpret_cast<CUstream>(queue.native()),
                  static_cast<CUdeviceptr>(buffer.native()), 0, flags),
                 device);
}

PointerAttributes CudaContextAdapter::pointer_attributes_of(CUdeviceptr pointer, const char* call,
                                                            std::optional<std::size_t> device_idx) {
  const auto refuse = [&](const std::string& what, const char* hint) {
    raise_in(SKEIN_HERE, call, hint, "pointer {:#x}: {}", pointer, what);
  };
  int ordinal = -1;
  if (cu().cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pointer) !=
      CUDA_SUCCESS) {
    refuse("the driver knows no memory at this address",
           "Pass an address of device, managed or mapped host memory.");
  }
  // A Buffer's device is known (page-locked host memory may name no device, or another).
  std::size_t d = device_idx.value_or(devices_.size());
  for (std::size_t i = 0; i < devices_.size() && !device_idx; ++i) {
    if (static_cast<int>(devices_[i]->native()) == ordinal) d = i;
  }
  if (d == devices_.size()) {
    refuse(
        fmt::format("the memory is on CUDA device {}, which this context does not have", ordinal),
        "Ask a context over that device.");
  }
  CudaContextScope scope(context(d), description(d));
  CUcontext owner = nullptr;
  if (!device_idx &&
      cu().cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, pointer) == CUDA_SUCCESS &&
      owner != nullptr && owner != context(d)) {
    refuse("the memory belongs to another CUDA context than this Skein context's",
           "Ask a Skein context over that CUDA context (cuda::context_from_backend_contexts).");
  }
  PointerAttributes a;
  a.device_idx = d;
  int managed = 0;
  SKEIN_CU_CHECK(cuPointerGetAttribute, (&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, pointer),
                 description(d));
  a.managed = managed != 0;
  unsigned type = 0;
  SKEIN_CU_CHECK(cuPointerGetAttribute, (&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pointer),
                 description(d));
  a.type = a.managed                    ? MemoryType::managed
           : type == CU_MEMORYTYPE_HOST ? MemoryType::host
                                        : MemoryType::device;
  CUdeviceptr device_pointer = 0;
  SKEIN_CU_CHECK(cuPointerGetAttribute,
                 (&device_pointer, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, pointer), description(d));
  a.device_pointer = device_pointer;
  // Device memory has no host address: the driver answers INVALID_VALUE.
  void* host = nullptr;
  if (a.type != MemoryType::device &&
      cu().cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, pointer) ==
          CUDA_SUCCESS) {
    a.host_pointer = host;
  }
  // The allocation's range; memory the range attributes do not cover (some host memory) asks
  // cuMemGetAddressRange, and where neither answers the range is the pointer alone (size 0).
  CUdeviceptr start = pointer;
  std::size_t size = 0;
  if (cu().cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, pointer) !=
          CUDA_SUCCESS ||
      cu().cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, pointer) != CUDA_SUCCESS) {
    start = pointer;
    size = 0;
    if (cu().cuMemGetAddressRange(&start, &size, pointer) != CUDA_SUCCESS) {
      start = pointer;
      size = 0;
    }
  }
  a.range_start = start;
  a.range_size = size;
  a.range_offset = pointer - start;
  return a;
}

PointerAttributes CudaContextAdapter::pointer_attributes(BufferAdapter& buffer,
                                                         std::size_t offset) {
  return pointer_attributes_of(static_cast<CUdeviceptr>(buffer.native()) + offset,
                               "skein::pointer_attributes", buffer.device_idx());
}

void CudaContextAdapter::advise_managed(BufferAdapter& buffer, std::size_t offset, std::size_t size,
                                        MemoryAdvice advice, MemoryLocation location) {
  const std::string& device = description(buffer.device_idx());
  check_driver_has(reinterpret_cast<const void*>(cu().cuMemAdvise), "cuMemAdvise", device);
  CudaContextScope scope(context(buffer.device_idx()), device);
  SKEIN_CU_CHECK(cuMemAdvise,
                 (static_cast<CUdeviceptr>(buffer.native() + offset), size, cu_advice(advice),
                  cu_location(*this, location)),
                 device);
}

IpcMemoryHandle CudaContextAdapter::export_ipc_memory(BufferAdapter& buffer, std::size_t offset,
                                                      std::size_t size) {
  constexpr const char* call = "export_ipc_memory";
  const std::size_t device_idx = buffer.device_idx();
  const std::string& device = description(device_idx);
  if (size == 0) {
    throw LogicError(ErrorInfo{.what = "the buffer is empty: there is no memory to export",
                               .call = call,
                               .device = device,
                               .hint = "Export a buffer of at least one byte.",
                               .location = SKEIN_HERE});
  }
  if (buffer.managed()) {
    throw LogicError(ErrorInfo{.what = "managed memory cannot be exported (CUDA IPC takes memory "
                                       "from cuMemAlloc only)",
                               .call = call,
                               .device = device,
                               .hint = "Export a buffer from Buffer::allocate.",
                               .location = SKEIN_HERE});
  }
  CudaContextScope scope(context(device_idx), device);
  // The handle names the whole allocation (its base); the view's place in it travels along.
  const auto pointer = static_cast<CUdeviceptr>(buffer.native()) + offset;
  CUdeviceptr base = 0;
  std::size_t allocation = 0;
  SKEIN_CU_CHECK(cuMemGetAddressRange, (&base, &allocation, pointer), device);
  CUipcMemHandle native{};
  SKEIN_CU_CHECK(cuIpcGetMemHandle, (&native, base), device);
  IpcMemoryHandle handle;
  handle.offset = pointer - base;
  handle.size = size;
  static_assert(sizeof(handle.native) == sizeof(native));
  std::memcpy(handle.native, &native, sizeof(native));
  seal(handle, pci_bus_id(device_idx));
  return handle;
}

std::shared_ptr<BufferAdapter> CudaContextAdapter::open_ipc_memory(std::size_t device_idx,
                                                                   const IpcMemoryHandle& handle) {
  constexpr const char* call = "open_ipc_memory";
  const std::string& device = description(device_idx);
  check_ipc_handle(handle, ipc_device_check(device_idx), call, device);
  CudaContextScope scope(context(device_idx), device);
  CUipcMemHandle native{};
  std::memcpy(&native, handle.native, sizeof(native));
  // Opening the same allocation again in this context counts up the driver's reference count and
  // gives the same address; each opening is closed once.
  CUdeviceptr base = 0;
  SKEIN_CU_CHECK(cuIpcOpenMemHandle, (&base, native, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), device);
  auto close = [self = shared_from_this(), device_idx, base] {
    CudaContextScope close_scope(self->context(device_idx), CudaContextScope::NoThrow{});
    report_cuda_cleanup_failure(cu().cuIpcCloseMemHandle(base), "cuIpcCloseMemHandle",
                                self->description(device_idx));
  };
  try {
    // The view must lie in the exported allocation (the checksum vouches for the handle as sent;
    // this catches a handle sealed by a faulty sender). Where the driver cannot tell the mapped
    // range, the handle's word stands.
    CUdeviceptr mapped_base = 0;
    std::size_t allocation = 0;
    const bool known = cu().cuMemGetAddressRange(&mapped_base, &allocation, base) == CUDA_SUCCESS;
    if (known && (handle.offset > allocation || handle.size > allocation - handle.offset)) {
      throw LogicError(ErrorInfo{
          .what = fmt::format("the handle's view [{}, {}) does not fit in the exported allocation "
                              "of {} bytes",
                              handle.offset, handle.offset + handle.size, allocation),
          .call = call,
          .device = device,
          .hint = "Pass the handle export_ipc_memory made, unchanged.",
          .location = SKEIN_HERE});
    }
    return make_cuda_foreign_buffer(shared_from_this(), device_idx, base + handle.offset,
                                    handle.size, close);
  } catch (...) {
    close();
    throw;
  }
}

std::shared_ptr<EventAdapter> CudaContextAdapter::create_ipc_event(std::size_t device_idx,
                                                                   IpcEventHandle& handle) {
  const std::string& device = description(device_idx);
  CudaContextScope scope(context(device_idx), device);
  CUevent event = nullptr;
  SKEIN_CU_CHECK(cuEventCreate, (&event, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING), device);
  std::shared_ptr<EventAdapter> adapter;
  try {
    adapter = make_cuda_unpooled_event(shared_from_this(), device_idx, event);
  } catch (...) {
    cu().cuEventDestroy(event);
    throw;
  }
  CUipcEventHandle native{};
  SKEIN_CU_CHECK(cuIpcGetEventHandle, (&native, event), device);
  handle = IpcEventHandle{};
  static_assert(sizeof(handle.native) == sizeof(native));
  std::memcpy(handle.native, &native, sizeof(native));
  seal(handle, pci_bus_id(device_idx));
  return adapter;
}

std::shared_ptr<EventAdapter> CudaContextAdapter::open_ipc_event(std::size_t device_idx,
                                                                 const IpcEventHandle& handle) {
  const std::string& device = description(device_idx);
  check_ipc_handle(handle, ipc_device_check(device_idx), "IpcEvent::open", device);
  CudaContextScope scope(context(device_idx), device);
  CUipcEventHandle native{};
  std::memcpy(&native, handle.native, sizeof(native));
  CUevent event = nullptr;
  SKEIN_CU_CHECK(cuIpcOpenEventHandle, (&event, native), device);
  try {
    return make_cuda_unpooled_event(shared_from_this(), device_idx, event);
  } catch (...) {
    cu().cuEventDestroy(event);
    throw;
  }
}

void CudaContextAdapter::record_ipc_event(QueueAdapter& queue, EventAdapter& event) {
  SKEIN_CU_CHECK(
      cuEventRecord,
      (cuda_event_of(event, "IpcEvent::record"), reinterpret_cast<CUstream>(queue.native())),
      description(queue.device_idx()));
}

}  // namespace skein::detail

// SPDX-License-Identifier: BSD-3-Clause
// What the CUDA backend's files share: the context adapter (which queues, buffers and events keep
// alive, since freeing any of them needs its CUcontext) and the factories of the other adapters.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "skein/detail/adapter.hpp"
#include "skein/detail/cuda/check.hpp"
#include "skein/detail/cuda/context.hpp"
#include "skein/detail/ipc.hpp"

namespace skein::detail {

std::shared_ptr<PlatformAdapter> make_cuda_platform(std::weak_ptr<ApiAdapter> api,
                                                    int driver_version);
std::shared_ptr<DeviceAdapter> make_cuda_device(std::weak_ptr<PlatformAdapter> platform,
                                                std::size_t index, CUdevice device,
                                                int driver_version);

// Logs a failure in a destructor (which must not throw). Silent for CUDA_ERROR_DEINITIALIZED:
// at process exit the driver may be torn down before our last objects, and then there is nothing
// left to free.
void report_cuda_cleanup_failure(CUresult result, const char* call, const std::string& device);

// The driver's value of a cache preference (context.cpp); LogicError for a value not in the enum.
CUfunc_cache cu_cache(CacheConfig config);

// How the contexts of a CudaContextAdapter came to be, which says how to let go of them.
enum class CudaContextOwnership {
  primary,   // retained primary contexts: released at the end
  owned,     // handed over by the application with ownership: destroyed at the end
  borrowed,  // the application's: left alone
};

class CudaContextAdapter final : public ContextAdapter,
                                 public std::enable_shared_from_this<CudaContextAdapter> {
 public:
  // With `primary`, `contexts` is ignored and each device's primary context is retained.
  CudaContextAdapter(std::vector<std::shared_ptr<DeviceAdapter>> devices,
                     std::vector<CUcontext> contexts, CudaContextOwnership ownership);
  ~CudaContextAdapter() override = default;

  const std::vector<std::shared_ptr<DeviceAdapter>>& devices() const override { return devices_; }
  std::unique_ptr<QueueAdapter> make_queue(std::size_t device_idx, int priority,
                                           QueueSync sync) override;
  QueuePriorityRange queue_priority_range(std::size_t device_idx) override;
  std::shared_ptr<BufferAdapter> allocate(std::size_t device_idx, std::size_t size) override;
  std::pair<std::shared_ptr<BufferAdapter>, std::size_t> allocate_pitched(
      std::size_t device_idx, std::size_t width, std::size_t height,
      std::size_t element_size) override;
  std::shared_ptr<HostBufferAdapter> allocate_host(std::size_t size,
                                                   HostMemoryFlags flags) override;
  std::shared_ptr<HostBufferAdapter> register_host(void* data, std::size_t size,
                                                   HostMemoryFlags flags) override;
  std::shared_ptr<BufferAdapter> mapped_device_buffer(
      const std::shared_ptr<HostBufferAdapter>& host, std::size_t device_idx) override;
  MemoryInfo memory_info(std::size_t device_idx) override;
  std::shared_ptr<BufferAdapter> allocate_managed(std::size_t device_idx, std::size_t size,
                                                  ManagedAttach attach) override;
  void prefetch_managed(QueueAdapter& queue, BufferAdapter& buffer, std::size_t offset,
                        std::size_t size, MemoryLocation to) override;
  void advise_managed(BufferAdapter& buffer, std::size_t offset, std::size_t size,
                      MemoryAdvice advice, MemoryLocation location) override;
  IpcMemoryHandle export_ipc_memory(BufferAdapter& buffer, std::size_t offset,
                                    std::size_t size) override;
  std::shared_ptr<BufferAdapter> open_ipc_memory(std::size_t device_idx,
                                                 const IpcMemoryHandle& handle) override;
  std::shared_ptr<EventAdapter> create_ipc_event(std::size_t device_idx,
                                                 IpcEventHandle& handle) override;
  std::shared_ptr<EventAdapter> open_ipc_event(std::size_t device_idx,
                                               const IpcEventHandle& handle) override;
  void record_ipc_event(QueueAdapter& queue, EventAdapter& event) override;
  // MemoryError naming `call` when `size` bytes exceed the device's free memory (cuMemGetInfo);
  // returns the free bytes.
  std::size_t check_free_memory(std::size_t device_idx, std::size_t size, const char* call);
  // The device's PCI bus id ("0000:65:00.0"), which names it in IPC handles.
  std::string pci_bus_id(std::size_t device_idx) const;
  // Whether an IPC handle exported by a device (its PCI bus id) can be opened on `device_idx`.
  IpcDeviceCheck ipc_device_check(std::size_t device_idx) const;
  std::size_t get_limit(std::size_t device_idx, ContextLimit limit) override;
  void set_limit(std::size_t device_idx, ContextLimit limit, std::size_t value) override;
  CacheConfig get_cache_config(std::size_t device_idx) override;
  void set_cache_config(std::size_t device_idx, CacheConfig config) override;
  bool can_access(std::size_t from_device_idx, std::size_t to_device_idx) const override;
  bool can_access_peer(std::size_t from_device_idx, std::size_t to_device_idx) const override;
  void set_peer_access(std::size_t from_device_idx, std::size_t to_device_idx,
                       bool enable) override;
  void profiler(bool start) override;
  void deactivate() override;
  void set_scheduling(std::size_t device_idx, ContextScheduling scheduling) override;
  ContextScheduling scheduling(std::size_t device_idx) override;
  void push(std::size_t device_idx) override;
  void pop() override;
  void synchronize() override;
  void attach_managed(QueueAdapter& queue, BufferAdapter& buffer, ManagedAttach attach) override;
  PointerAttributes pointer_attributes(BufferAdapter& buffer, std::size_t offset) override;
  // The attributes of a device address the driver knows, on a device of this context (or
  // LogicError naming `call`); with `device_idx` (a Buffer's), on that device.
  PointerAttributes pointer_attributes_of(CUdeviceptr pointer, const char* call,
                                          std::optional<std::size_t> device_idx = std::nullopt);
  std::uintptr_t native(std::size_t device_idx) const override;
  std::string_view prelude() const override;
  CompiledBinary compile(std::size_t device_idx, const std::string& source,
                         const std::vector<std::string>& options, const std::string& name) override;
  std::shared_ptr<ProgramAdapter> load(std::size_t device_idx, std::span<const std::byte> binary,
                                       const std::vector<std::string>& options) override;
  std::shared_ptr<ProgramAdapter> load_jit(std::size_t device_idx,
                                           std::span<const std::byte> binary,
                                           const std::vector<std::string>& options,
                                           const JitOptions& jit, JitLog& log) override;
  CompiledBinary compile_ptx(std::size_t device_idx, const std::string& source,
                             const std::vector<std::string>& options,
                             const std::string& name) override;
  std::vector<std::string> options_for_arch(std::size_t device_idx, bool fast_math,
                                            const std::string& arch) const override;
  std::vector<std::string> compiler_identity(std::size_t device_idx) const override;
  std::vector<std::string> default_options(std::size_t device_idx, bool fast_math) const override;

  CUcontext context(std::size_t device_idx) const { return handles_.contexts[device_idx]; }
  // Whether kernels launched more than once on a stream go through one-kernel CUDA graphs
  // (SKEIN_CUDA_GRAPH_LAUNCH, read when the context is made; program.cpp says why).
  bool graph_launch() const { return graph_launch_; }
  // describe() of the device, computed once for the messages of failed calls.
  const std::string& description(std::size_t device_idx) const { return descriptions_[device_idx]; }

  // Events are recycled per device: creating one (and making the context current for it) costs
  // several times more than recording it, and every launch that returns events records one per
  // device. take_event() gives an event of `device_idx`'s context (CU_EVENT_DEFAULT with `timing`,
  // else CU_EVENT_DISABLE_TIMING), recycled or new; give_back_event() returns one whose adapter is
  // gone.
  CUevent take_event(std::size_t device_idx, bool timing);
  void give_back_event(std::size_t device_idx, bool timing, CUevent event) noexcept;

 private:
  // Separate from the adapter so that what was retained is released when the constructor throws
  // half-way.
  struct Handles {
    CudaContextOwnership ownership = CudaContextOwnership::borrowed;
    std::vector<CUdevice> devices;  // of the retained primary contexts
    std::vector<CUcontext> contexts;
    Handles() = default;
    Handles(const Handles&) = delete;
    Handles& operator=(const Handles&) = delete;
    ~Handles();
  };

  void enable_peer_access();

  bool graph_launch_ = true;
  std::vector<std::shared_ptr<DeviceAdapter>> devices_;
  std::vector<std::string> descriptions_;
  Handles handles_;
  // peer_[from * n + to]: `from` can access memory of `to` (read on every launch that passes a
  // buffer of another device; changed by set_peer_access).
  std::unique_ptr<std::atomic<bool>[]> peer_;
  std::mutex peer_mutex_;  // one change of peer access at a time
  // After handles_: the pooled events are destroyed while their contexts still exist.
  struct EventPool {
    std::mutex mutex;
    std::vector<std::vector<CUevent>> free;          // per device, with timing
    std::vector<std::vector<CUevent>> free_untimed;  // per device, without
    ~EventPool();
  };
  EventPool events_;
};

std::shared_ptr<BufferAdapter> make_cuda_buffer(std::shared_ptr<CudaContextAdapter> context,
                                                std::size_t device_idx, CUdeviceptr pointer,
                                                std::size_t size);
// Page-locked host memory: allocated with cuMemHostAlloc (freed with cuMemFreeHost) or, when
// `registered`, the caller's, page-locked with cuMemHostRegister (unregistered at the end).
std::shared_ptr<HostBufferAdapter> make_cuda_host_buffer(
    std::shared_ptr<CudaContextAdapter> context, void* pointer, std::size_t size,
    HostMemoryFlags flags, bool registered);
// Managed memory from cuMemAllocManaged (freed with cuMemFree here).
std::shared_ptr<BufferAdapter> make_cuda_managed_buffer(std::shared_ptr<CudaContextAdapter> context,
                                                        std::size_t device_idx, CUdeviceptr pointer,
                                                        std::size_t size);
// An event of Skein's that is not pooled: created with `flags` by the caller (or opened from an
// IPC handle), destroyed with cuEventDestroy when the adapter goes. Timed only with `timing`.
std::shared_ptr<EventAdapter> make_cuda_unpooled_event(std::shared_ptr<CudaContextAdapter> context,
                                                       std::size_t device_idx, CUevent event,
                                                       bool timing = false);
std::unique_ptr<QueueAdapter> make_cuda_queue(std::shared_ptr<CudaContextAdapter> context,
                                              std::size_t device_idx, int priority, QueueSync sync);
// Over the application's memory and streams (skein/cuda.hpp): never freed or destroyed by Skein;
// `deleter`, when given, runs once the last Buffer over the memory is gone.
std::shared_ptr<BufferAdapter> make_cuda_foreign_buffer(std::shared_ptr<CudaContextAdapter> context,
                                                        std::size_t device_idx, CUdeviceptr pointer,
                                                        std::size_t size,
                                                        std::function<void()> deleter);
std::unique_ptr<QueueAdapter> make_cuda_foreign_queue(std::shared_ptr<CudaContextAdapter> context,
                                                      std::size_t device_idx, CUstream stream);
// Records a new event on `stream` of the context's device `device_idx`.
std::shared_ptr<EventAdapter> record_cuda_event(const std::shared_ptr<CudaContextAdapter>& context,
                                                std::size_t device_idx, CUstream stream,
                                                bool timing = true);
// The CUevent of one of our event adapters (LogicError naming `call` for another backend's).
CUevent cuda_event_of(EventAdapter& event, const char* call);

}  // namespace skein::detail

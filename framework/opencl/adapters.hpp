// SPDX-License-Identifier: BSD-3-Clause
// The OpenCL backend's adapters (see skein/detail/adapter.hpp, framework/internal/).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "skein/detail/adapter.hpp"
#include "driver.hpp"

namespace skein::detail::opencl {

class OclApi final : public ApiAdapter, public std::enable_shared_from_this<OclApi> {
 public:
  OclApi();
  ApiId id() const override { return ApiId::opencl; }
  bool available() const override { return available_; }
  std::string unavailable_reason() const override { return reason_; }
  std::string version() const override { return version_; }
  const std::vector<std::shared_ptr<PlatformAdapter>>& platforms() override;

 private:
  bool available_ = false;
  std::string reason_;
  std::string version_;
  std::vector<cl_platform_id> ids_;
  std::once_flag once_;
  std::vector<std::shared_ptr<PlatformAdapter>> platforms_;
};

class OclPlatform final : public PlatformAdapter, public std::enable_shared_from_this<OclPlatform> {
 public:
  OclPlatform(std::shared_ptr<ApiAdapter> api, cl_platform_id id, std::size_t index);
  std::shared_ptr<ApiAdapter> api() const override { return api_; }
  std::size_t index() const override { return index_; }
  const std::string& name() const override { return name_; }
  const std::string& vendor() const override { return vendor_; }
  const std::string& version() const override { return version_; }
  const std::vector<std::shared_ptr<DeviceAdapter>>& devices() override;
  cl_platform_id id() const { return id_; }

 private:
  std::shared_ptr<ApiAdapter> api_;
  cl_platform_id id_;
  std::size_t index_;
  std::string name_, vendor_, version_;
  std::once_flag once_;
  std::vector<std::shared_ptr<DeviceAdapter>> devices_;
};

class OclDevice final : public DeviceAdapter {
 public:
  OclDevice(const std::shared_ptr<PlatformAdapter>& platform, cl_device_id id, std::size_t index);
  std::shared_ptr<PlatformAdapter> platform() const override { return platform_.lock(); }
  std::size_t index() const override { return index_; }
  const DeviceParameters& params() const override { return params_; }
  std::uintptr_t native() const override { return reinterpret_cast<std::uintptr_t>(id_); }
  cl_device_id id() const { return id_; }

 private:
  std::weak_ptr<PlatformAdapter> platform_;
  cl_device_id id_;
  std::size_t index_;
  DeviceParameters params_;
};

class OclEvent final : public EventAdapter {
 public:
  // `timed`: false for an event recorded with EventFlags::disable_timing, which time_since()
  // refuses as CUDA does.
  explicit OclEvent(cl_event event, std::string device, bool timed = true)
      : event_(event), device_(std::move(device)), timed_(timed) {}
  ~OclEvent() override;
  void wait() override;
  bool query() override;
  double time_since(EventAdapter& start) override;
  cl_event get() const { return event_; }

 private:
  cl_event event_;
  std::string device_;
  bool timed_ = true;
};

class OclBuffer final : public BufferAdapter {
 public:
  OclBuffer(cl_mem mem, std::size_t size, std::size_t device_idx,
            std::function<void()> on_release = {})
      : mem_(mem), size_(size), device_idx_(device_idx), on_release_(std::move(on_release)) {}
  ~OclBuffer() override;
  std::size_t size() const override { return size_.load(std::memory_order_acquire); }
  std::size_t device_idx() const override { return device_idx_; }
  std::uintptr_t native() const override { return reinterpret_cast<std::uintptr_t>(mem()); }
  bool managed() const override { return false; }  // OpenCL has no managed memory
  cl_mem mem() const { return mem_.load(std::memory_order_acquire); }
  // Points this buffer at other memory (virtual allocations' pack, skein/detail/relocatable.hpp):
  // takes over one reference to `mem`, of `size` bytes, and releases the old cl_mem and its
  // sub-buffers (commands enqueued with them keep their own references).
  void rebind(cl_mem mem, std::size_t size);
  // The allocation from `offset` on, as an argument of a kernel parameter that takes no offset
  // (see skein/detail/opencl/kernel_offsets.hpp): OpenCL kernels take cl_mem objects, so an
  // offset needs a sub-buffer (made once per offset; its origin must be aligned as the device
  // requires: LogicError otherwise). `align` is the device's base_address_align; `kernel` and
  // `argument` (its index) say which kernel argument it is, for the error (formatted only then:
  // this is on every launch's path).
  cl_mem at(std::size_t offset, std::size_t align, const std::string& device,
            const std::string& kernel, std::size_t argument) const;

 private:
  // Atomic for rebind(): null for an empty buffer (OpenCL has no zero-size buffers).
  std::atomic<cl_mem> mem_;
  std::atomic<std::size_t> size_;
  std::size_t device_idx_;
  mutable std::mutex mutex_;
  mutable std::vector<std::pair<std::size_t, cl_mem>> sub_buffers_;
  std::function<void()> on_release_;  // the application's deleter (buffer_from_native), if any
};

class OclContext;

class OclHostBuffer final : public HostBufferAdapter {
 public:
  // With `host` null: `size` bytes the driver allocates (CL_MEM_ALLOC_HOST_PTR); else the
  // caller's `size` bytes at `host` (CL_MEM_USE_HOST_PTR). Mapped for the buffer's life either way.
  OclHostBuffer(std::shared_ptr<OclContext> context, std::size_t size, void* host,
                HostMemoryFlags flags);
  ~OclHostBuffer() override;
  std::byte* data() const override { return data_; }
  std::size_t size() const override { return size_; }
  HostMemoryFlags flags() const override { return flags_; }
  bool registered() const override { return registered_; }
  const ContextAdapter* owner() const override;

 private:
  std::shared_ptr<OclContext> context_;
  cl_mem mem_ = nullptr;
  std::byte* data_ = nullptr;
  std::size_t size_;
  HostMemoryFlags flags_;
  bool registered_;
};

class OclQueue final : public QueueAdapter {
 public:
  OclQueue(std::shared_ptr<OclContext> context, std::size_t device_idx,
           QueueSync sync = QueueSync::non_blocking);
  // Over the application's command queue: takes a reference of its own (clRetainCommandQueue),
  // and at the end releases it without waiting for the queue.
  OclQueue(std::shared_ptr<OclContext> context, std::size_t device_idx, cl_command_queue queue);
  ~OclQueue() override;
  std::size_t device_idx() const override { return device_idx_; }
  void synchronize() override;
  void write(BufferAdapter& dst, std::size_t dst_offset, const void* src, std::size_t size,
             bool blocking) override;
  void read(void* dst, BufferAdapter& src, std::size_t src_offset, std::size_t size,
            bool blocking) override;
  void copy(BufferAdapter& dst, std::size_t dst_offset, BufferAdapter& src, std::size_t src_offset,
            std::size_t size) override;
  void fill_zero(BufferAdapter& dst, std::size_t offset, std::size_t size) override;
  bool write_rect(BufferAdapter& dst, const void* src, const RectRegion& region,
                  bool blocking) override;
  bool read_rect(void* dst, BufferAdapter& src, const RectRegion& region, bool blocking) override;
  bool copy_rect(BufferAdapter& dst, BufferAdapter& src, const RectRegion& region) override;
  std::shared_ptr<EventAdapter> record() override;
  // blocking_sync has no OpenCL counterpart (ignored); disable_timing marks the event untimed.
  std::shared_ptr<EventAdapter> record_flags(const EventFlags& flags) override;
  void wait_for(EventAdapter& event) override;
  void wait_for_queue(QueueAdapter& other) override;
  std::uintptr_t native() const override { return reinterpret_cast<std::uintptr_t>(queue_); }
  int priority() const override { return 0; }  // OpenCL 1.2 has no queue priorities
  QueueSync sync() const override { return sync_; }
  cl_command_queue get() const { return queue_; }

 private:
  std::shared_ptr<OclContext> context_;
  std::size_t device_idx_;
  std::string device_;
  cl_command_queue queue_ = nullptr;
  bool owned_ = true;  // false for the application's queue
  QueueSync sync_ = QueueSync::non_blocking;
};

class OclContext final : public ContextAdapter, public std::enable_shared_from_this<OclContext> {
 public:
  // Takes one reference to `context` (released in the destructor).
  OclContext(cl_context context, std::vector<std::shared_ptr<DeviceAdapter>> devices);
  ~OclContext() override;
  const std::vector<std::shared_ptr<DeviceAdapter>>& devices() const override { return devices_; }
  std::unique_ptr<QueueAdapter> make_queue(std::size_t device_idx, int priority,
                                           QueueSync sync) override;
  QueuePriorityRange queue_priority_range(std::size_t) override { return {}; }
  std::shared_ptr<BufferAdapter> allocate(std::size_t device_idx, std::size_t size) override;
  std::shared_ptr<HostBufferAdapter> allocate_host(std::size_t size,
                                                   HostMemoryFlags flags) override;
  std::shared_ptr<HostBufferAdapter> register_host(void* data, std::size_t size,
                                                   HostMemoryFlags flags) override;
  std::shared_ptr<BufferAdapter> mapped_device_buffer(
      const std::shared_ptr<HostBufferAdapter>& host, std::size_t device_idx) override;
  MemoryInfo memory_info(std::size_t device_idx) override;
  // Managed memory and IPC handles are CUDA's: all raise LogicError saying what to use instead.
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
  std::size_t get_limit(std::size_t device_idx, ContextLimit limit) override;
  void set_limit(std::size_t device_idx, ContextLimit limit, std::size_t value) override;
  CacheConfig get_cache_config(std::size_t device_idx) override;
  void set_cache_config(std::size_t device_idx, CacheConfig config) override;
  // One context's buffers are every device's of it.
  bool can_access(std::size_t, std::size_t) const override { return true; }
  bool can_access_peer(std::size_t, std::size_t) const override { return true; }
  void set_peer_access(std::size_t from_device_idx, std::size_t to_device_idx,
                       bool enable) override;
  void profiler(bool) override {}  // OpenCL has no profiler start and stop
  void set_scheduling(std::size_t device_idx, ContextScheduling scheduling) override;
  ContextScheduling scheduling(std::size_t) override { return ContextScheduling::automatic; }
  void push(std::size_t) override {}  // OpenCL has no current context
  void pop() override {}
  // clFinish of every live command queue of the context (registered by OclQueue).
  void synchronize() override;
  void attach_managed(QueueAdapter& queue, BufferAdapter& buffer, ManagedAttach attach) override;
  PointerAttributes pointer_attributes(BufferAdapter& buffer, std::size_t offset) override;
  void register_queue(cl_command_queue queue);
  void unregister_queue(cl_command_queue queue) noexcept;
  std::uintptr_t native(std::size_t) const override {
    return reinterpret_cast<std::uintptr_t>(context_);
  }
  std::string_view prelude() const override;
  std::optional<RewrittenSource> rewrite_source(std::string_view source,
                                                bool prelude) const override;
  CompiledBinary compile(std::size_t device_idx, const std::string& source,
                         const std::vector<std::string>& options, const std::string& name) override;
  std::shared_ptr<ProgramAdapter> load(std::size_t device_idx, std::span<const std::byte> binary,
                                       const std::vector<std::string>& options) override;
  std::shared_ptr<ProgramAdapter> load_jit(std::size_t device_idx,
                                           std::span<const std::byte> binary,
                                           const std::vector<std::string>& options,
                                           const JitOptions& jit, JitLog& log) override;
  // OpenCL has no PTX and no other architectures: LogicError.
  CompiledBinary compile_ptx(std::size_t device_idx, const std::string& source,
                             const std::vector<std::string>& options,
                             const std::string& name) override;
  std::vector<std::string> options_for_arch(std::size_t device_idx, bool fast_math,
                                            const std::string& arch) const override;
  std::shared_ptr<ProgramAdapter> build(std::size_t device_idx, const std::string& source,
                                        const std::vector<std::string>& options,
                                        const std::string& name) override;
  std::vector<std::string> compiler_identity(std::size_t device_idx) const override;
  std::vector<std::string> default_options(std::size_t device_idx, bool fast_math) const override;
  cl_context get() const { return context_; }
  cl_device_id device_id(std::size_t device_idx) const;
  std::string describe_device(std::size_t device_idx) const;
  // A queue for Skein's own blocking operations (mapping host buffers).
  cl_command_queue internal_queue();

 private:
  cl_context context_;
  std::vector<std::shared_ptr<DeviceAdapter>> devices_;
  std::mutex mutex_;
  cl_command_queue internal_queue_ = nullptr;
  std::mutex queues_mutex_;
  std::vector<cl_command_queue> live_queues_;  // OclQueue's, for synchronize()
  // Bytes of this context's live buffers per device: memory_info()'s estimate of free memory.
  std::shared_ptr<std::atomic<std::size_t>[]> allocated_;
};

}  // namespace skein::detail::opencl

// SPDX-License-Identifier: BSD-3-Clause
// The chain of small abstract adapters each backend implements (after grunnur):
// ApiAdapter -> PlatformAdapter -> DeviceAdapter -> ContextAdapter -> QueueAdapter, BufferAdapter,
// HostBufferAdapter, EventAdapter. The front-end classes (skein::Api, ...) validate arguments and
// hold adapters; adapters only talk to the backend and throw Skein's typed errors.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <span>
#include <string_view>
#include <string>
#include <vector>

#include "skein/api.hpp"
#include "skein/buffer.hpp"
#include "skein/driver.hpp"
#include "skein/device_parameters.hpp"
#include "skein/export.hpp"
#include "skein/memory.hpp"
#include "skein/program.hpp"

namespace skein::detail {

class PendingResults;

class PlatformAdapter;
class DeviceAdapter;
class ContextAdapter;

class SKEIN_EXPORT ApiAdapter {
 public:
  virtual ~ApiAdapter() = default;
  virtual ApiId id() const = 0;
  // Compiled in, the library loads, the driver initialises.
  virtual bool available() const = 0;
  virtual std::string unavailable_reason() const = 0;
  virtual std::string version() const = 0;
  // Discovered once; the same adapters every call.
  virtual const std::vector<std::shared_ptr<PlatformAdapter>>& platforms() = 0;
};

class SKEIN_EXPORT PlatformAdapter {
 public:
  virtual ~PlatformAdapter() = default;
  virtual std::shared_ptr<ApiAdapter> api() const = 0;
  virtual std::size_t index() const = 0;
  virtual const std::string& name() const = 0;
  virtual const std::string& vendor() const = 0;
  virtual const std::string& version() const = 0;
  virtual const std::vector<std::shared_ptr<DeviceAdapter>>& devices() = 0;
};

class SKEIN_EXPORT DeviceAdapter {
 public:
  virtual ~DeviceAdapter() = default;
  virtual std::shared_ptr<PlatformAdapter> platform() const = 0;
  virtual std::size_t index() const = 0;  // in the platform
  virtual const DeviceParameters& params() const = 0;
  // CUdevice (as an integer) or cl_device_id.
  virtual std::uintptr_t native() const = 0;
};

class SKEIN_EXPORT EventAdapter {
 public:
  virtual ~EventAdapter() = default;
  virtual void wait() = 0;
  virtual bool query() = 0;
  // Milliseconds from `start` to this event.
  virtual double time_since(EventAdapter& start) = 0;
  // The backend's event that this one stands for: itself, except for a marker recorded when first
  // needed (skein/detail/deferred_marker.hpp), which is recorded now. Backends take the events
  // they are given through it.
  virtual EventAdapter& recorded() { return *this; }
  // What the host completions of this event confirm first, besides what the Event carries
  // (skein/detail/pending_results.hpp): a deferred marker's, taken when it was recorded. Asked
  // after recorded().
  virtual std::shared_ptr<const PendingResults> held_results() const { return nullptr; }
};

// One allocation on one device of a context.
class SKEIN_EXPORT BufferAdapter {
 public:
  virtual ~BufferAdapter() = default;
  virtual std::size_t size() const = 0;
  virtual std::size_t device_idx() const = 0;
  // CUdeviceptr or cl_mem.
  virtual std::uintptr_t native() const = 0;
  // Whether the memory is managed (allocate_managed), so that the host may use native() too.
  virtual bool managed() const = 0;

  // Set when the memory's address was handed to the application (cuda::native_pointer,
  // opencl::native_mem, to_dlpack, export_ipc_memory): work Skein cannot see (another stream,
  // process or library) may use it until the memory is freed, so a queue's pool frees such a block
  // when it comes back instead of handing it out again (memory_pool.cpp).
  void mark_exported() noexcept { exported_.store(true, std::memory_order_relaxed); }
  bool exported() const noexcept { return exported_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> exported_{false};
};

// Page-locked host memory usable for asynchronous transfers with every device of the context.
// Allocated by the backend (allocate_host) or the caller's memory page-locked in place
// (register_host: unregistered, never freed, when the adapter goes).
class SKEIN_EXPORT HostBufferAdapter {
 public:
  virtual ~HostBufferAdapter() = default;
  virtual std::byte* data() const = 0;
  virtual std::size_t size() const = 0;
  virtual HostMemoryFlags flags() const = 0;
  // Whether the memory is the caller's (register_host) rather than allocated by the backend.
  virtual bool registered() const = 0;
  // The context adapter the memory was page-locked for (identity only, for checks).
  virtual const ContextAdapter* owner() const = 0;
};

// A rectangular region of up to three dimensions in two memories (cuMemcpy3D's and
// clEnqueueCopyBufferRect's model): `width` contiguous bytes per row, `height` rows per slice,
// `depth` slices. Each side starts at its byte offset (from the start of the allocation, or of the
// host pointer) and steps by its row pitch between rows and its slice pitch between slices. The
// front-end gives width, height, depth > 0, row pitches >= width, and (depth > 1) slice pitches
// that are multiples of the row pitch and >= height * row pitch; the region lies inside both
// memories.
struct RectRegion {
  std::size_t dst_offset = 0;
  std::size_t dst_row_pitch = 0;
  std::size_t dst_slice_pitch = 0;
  std::size_t src_offset = 0;
  std::size_t src_row_pitch = 0;
  std::size_t src_slice_pitch = 0;
  std::size_t width = 0;  // bytes
  std::size_t height = 1;
  std::size_t depth = 1;
};

// The queue of one device (a CUDA stream or an OpenCL command queue). In-order.
class SKEIN_EXPORT QueueAdapter {
 public:
  virtual ~QueueAdapter() = default;
  virtual std::size_t device_idx() const = 0;
  virtual void synchronize() = 0;
  virtual void write(BufferAdapter& dst, std::size_t dst_offset, const void* src, std::size_t size,
                     bool blocking) = 0;
  virtual void read(void* dst, BufferAdapter& src, std::size_t src_offset, std::size_t size,
                    bool blocking) = 0;
  // dst and src may be on different devices of the context; the copy is enqueued on this queue
  // (which is dst's device's).
  virtual void copy(BufferAdapter& dst, std::size_t dst_offset, BufferAdapter& src,
                    std::size_t src_offset, std::size_t size) = 0;
  virtual void fill_zero(BufferAdapter& dst, std::size_t offset, std::size_t size) = 0;
  // Rectangular copies (cuMemcpy2D/3D, clEnqueue{Write,Read,Copy}BufferRect): host -> device,
  // device -> host, and device -> device (dst and src may be on different devices of the context,
  // as for copy()). Host memory may be pageable or page-locked. They return false, having enqueued
  // nothing, when the backend cannot express the region (a pitch past its limit, the same buffer
  // with pitches it refuses); the front-end then copies another way.
  virtual bool write_rect(BufferAdapter& dst, const void* src, const RectRegion& region,
                          bool blocking) = 0;
  virtual bool read_rect(void* dst, BufferAdapter& src, const RectRegion& region,
                         bool blocking) = 0;
  virtual bool copy_rect(BufferAdapter& dst, BufferAdapter& src, const RectRegion& region) = 0;
  virtual std::shared_ptr<EventAdapter> record() = 0;
  // An event without timing (Event::time_since refuses it), where that is cheaper to record.
  virtual std::shared_ptr<EventAdapter> record_untimed() { return record(); }
  virtual void wait_for(EventAdapter& event) = 0;
  // Later work on this queue waits for the work enqueued so far on `other` (a queue of another
  // device of the same context). Cheaper than record() + wait_for(): no timing, no new event.
  virtual void wait_for_queue(QueueAdapter& other) = 0;
  // CUstream or cl_command_queue.
  virtual std::uintptr_t native() const = 0;
  // The priority the queue was made with (cuStreamGetPriority; 0 where the backend has none).
  virtual int priority() const = 0;
  // Whether it is blocking (Queue::sync).
  virtual QueueSync sync() const = 0;
  // An event with flags (Queue::record_event(d, flags)); backends without blocking_sync ignore it.
  virtual std::shared_ptr<EventAdapter> record_flags(const EventFlags& flags) {
    return flags.disable_timing ? record_untimed() : record();
  }
};

// A kernel's launch geometry on one device: OpenCL's global and local sizes.
struct LaunchDims {
  unsigned dims = 1;
  std::size_t global[3] = {1, 1, 1};
  std::size_t local[3] = {1, 1, 1};
  std::size_t local_mem = 0;  // dynamic local memory per group, bytes (allow_local_mem first)
  bool operator==(const LaunchDims&) const = default;
};

// What a backend can tell about one kernel parameter.
struct ParamInfo {
  enum class Kind : std::uint8_t { unknown, pointer, scalar };
  Kind kind = Kind::unknown;
  std::size_t size = 0;  // 0 when unknown
};

// A kernel parameter as a backend's rewrite of the program source left it
// (ContextAdapter::rewrite_source).
enum class ParamRole : std::uint8_t {
  value,  // one parameter, filled by one launch argument
  view,   // two parameters, filled by one buffer argument: its whole allocation, then the byte
          // offset of the argument's start in it (a `ulong`)
  local,  // a `__local` parameter: the launch sizes it, no argument fills it
};

// The user's source as a backend compiles it, and the parameters of each kernel it changed, by
// name (kernels not listed are as written).
struct RewrittenSource {
  std::string source;
  std::map<std::string, std::vector<ParamRole>> kernels;
};

class SKEIN_EXPORT KernelAdapter {
 public:
  virtual ~KernelAdapter() = default;
  virtual const KernelAttributes& attributes() const = 0;
  // One entry per parameter when the backend can count them, else std::nullopt.
  virtual const std::optional<std::vector<ParamInfo>>& params() const = 0;
  // CUfunction or cl_kernel.
  virtual std::uintptr_t native() const = 0;
  // Makes launches with `bytes` of dynamic local memory possible (CUDA: the opt-in above the
  // default); the front-end has checked the amount against the device's limit.
  virtual void allow_local_mem(std::size_t bytes) { (void)bytes; }
  // Enqueues on `queue` (of this kernel's device); records an event after it when `event`.
  virtual void launch(QueueAdapter& queue, const LaunchDims& dims, std::span<const KernelArg> args,
                      std::shared_ptr<EventAdapter>* event) = 0;
  // Kernel::get_attribute, set_attribute, set_cache_config and set_shared_config on this device;
  // LogicError naming the backend for what it cannot do.
  virtual std::int64_t get_attribute(KernelAttribute attribute) const = 0;
  virtual void set_attribute(KernelAttribute attribute, std::int64_t value) = 0;
  virtual void set_cache_config(CacheConfig config) = 0;
  virtual void set_shared_config(SharedConfig config) = 0;
};

// A program loaded on one device.
class SKEIN_EXPORT ProgramAdapter {
 public:
  virtual ~ProgramAdapter() = default;
  // Throws LogicError naming the kernels the program has when there is no such kernel. `roles`:
  // the kernel's parameters as ContextAdapter::rewrite_source left them (null: as written).
  virtual std::shared_ptr<KernelAdapter> kernel(const std::string& name,
                                                const std::vector<ParamRole>* roles) = 0;
  // CUDA: copies bytes into a __constant__ symbol (from the host or a device buffer).
  virtual void set_constant(QueueAdapter& queue, const std::string& name, const void* host,
                            const BufferAdapter* device, std::size_t offset, std::size_t size) = 0;
};

// The logs of loading a binary (ContextAdapter::load_jit).
struct JitLog {
  std::string info;
  std::string error;
};

// What a compiler produced for one device: a binary that load() accepts.
struct CompiledBinary {
  std::vector<std::byte> binary;
  std::string log;  // warnings, when the compiler gave any
};

class SKEIN_EXPORT ContextAdapter {
 public:
  virtual ~ContextAdapter() = default;
  virtual const std::vector<std::shared_ptr<DeviceAdapter>>& devices() const = 0;
  // `priority` lies in queue_priority_range(device_idx) (the front-end checked it).
  virtual std::unique_ptr<QueueAdapter> make_queue(std::size_t device_idx, int priority,
                                                   QueueSync sync) = 0;
  virtual QueuePriorityRange queue_priority_range(std::size_t device_idx) = 0;
  // Throws MemoryError when it does not fit.
  virtual std::shared_ptr<BufferAdapter> allocate(std::size_t device_idx, std::size_t size) = 0;
  // `height` rows of `width` bytes with each row starting at a multiple of the returned pitch
  // (bytes, >= width) from the allocation's start (cuMemAllocPitch; elsewhere rows padded to the
  // device's base address alignment). `element_size` is the size of the elements the rows hold.
  virtual std::pair<std::shared_ptr<BufferAdapter>, std::size_t> allocate_pitched(
      std::size_t device_idx, std::size_t width, std::size_t height, std::size_t element_size) {
    (void)element_size;
    const std::size_t align =
        std::max<std::size_t>(devices()[device_idx]->params().base_address_align, 1);
    const std::size_t pitch = (width + align - 1) / align * align;
    return {allocate(device_idx, pitch * height), pitch};
  }
  // Page-locked host memory; throws LogicError for flags the backend cannot honour.
  virtual std::shared_ptr<HostBufferAdapter> allocate_host(std::size_t size,
                                                           HostMemoryFlags flags) = 0;
  // Page-locks `size` bytes at `data` (non-null, size > 0: the front-end checked) in place.
  virtual std::shared_ptr<HostBufferAdapter> register_host(void* data, std::size_t size,
                                                           HostMemoryFlags flags) = 0;
  // The device's view of mapped page-locked memory of this context (flags().device_mapped);
  // the buffer keeps `host` alive.
  virtual std::shared_ptr<BufferAdapter> mapped_device_buffer(
      const std::shared_ptr<HostBufferAdapter>& host, std::size_t device_idx) = 0;
  virtual MemoryInfo memory_info(std::size_t device_idx) = 0;
  // Managed memory (skein/memory.hpp). allocate_managed throws MemoryError, before allocating,
  // when `size` exceeds the device's free memory. The others take a managed buffer's bytes
  // [offset, offset + size) (the front-end checked the buffer, the range and the location's index).
  // OpenCL raises LogicError for all three.
  virtual std::shared_ptr<BufferAdapter> allocate_managed(std::size_t device_idx, std::size_t size,
                                                          ManagedAttach attach) = 0;
  virtual void prefetch_managed(QueueAdapter& queue, BufferAdapter& buffer, std::size_t offset,
                                std::size_t size, MemoryLocation to) = 0;
  virtual void advise_managed(BufferAdapter& buffer, std::size_t offset, std::size_t size,
                              MemoryAdvice advice, MemoryLocation location) = 0;
  // IPC handles (skein/memory.hpp): the adapters fill and check the handles' every field
  // (detail/ipc.hpp). OpenCL raises LogicError for all.
  virtual IpcMemoryHandle export_ipc_memory(BufferAdapter& buffer, std::size_t offset,
                                            std::size_t size) = 0;
  // A buffer of exactly the exported view (handle.size bytes from the exporter's offset).
  virtual std::shared_ptr<BufferAdapter> open_ipc_memory(std::size_t device_idx,
                                                         const IpcMemoryHandle& handle) = 0;
  virtual std::shared_ptr<EventAdapter> create_ipc_event(std::size_t device_idx,
                                                         IpcEventHandle& handle) = 0;
  virtual std::shared_ptr<EventAdapter> open_ipc_event(std::size_t device_idx,
                                                       const IpcEventHandle& handle) = 0;
  // Records `event` (from create_ipc_event or open_ipc_event) on `queue`.
  virtual void record_ipc_event(QueueAdapter& queue, EventAdapter& event) = 0;
  virtual std::size_t get_limit(std::size_t device_idx, ContextLimit limit) = 0;
  virtual void set_limit(std::size_t device_idx, ContextLimit limit, std::size_t value) = 0;
  virtual CacheConfig get_cache_config(std::size_t device_idx) = 0;
  virtual void set_cache_config(std::size_t device_idx, CacheConfig config) = 0;
  // Whether `from`'s kernels can read and write memory allocated on `to` (now).
  virtual bool can_access(std::size_t from_device_idx, std::size_t to_device_idx) const = 0;
  // Whether the hardware allows it (indices checked, distinct devices).
  virtual bool can_access_peer(std::size_t from_device_idx, std::size_t to_device_idx) const = 0;
  // Turns access of `from` to `to` on or off (indices checked, distinct devices).
  virtual void set_peer_access(std::size_t from_device_idx, std::size_t to_device_idx,
                               bool enable) = 0;
  // cuProfilerStart / cuProfilerStop on every device (start: true).
  virtual void profiler(bool start) = 0;
  virtual void deactivate() {}
  // Context flags and controls (skein/context.hpp's driver rows; indices checked). OpenCL:
  // set_scheduling refuses all but automatic; push and pop do nothing.
  virtual void set_scheduling(std::size_t device_idx, ContextScheduling scheduling) = 0;
  virtual ContextScheduling scheduling(std::size_t device_idx) = 0;
  virtual void push(std::size_t device_idx) = 0;
  virtual void pop() = 0;
  virtual void synchronize() = 0;
  // cuStreamAttachMemAsync of the managed buffer's allocation on `queue` (of its device).
  virtual void attach_managed(QueueAdapter& queue, BufferAdapter& buffer, ManagedAttach attach) = 0;
  // The attributes of the byte `offset` bytes into the buffer (not empty).
  virtual PointerAttributes pointer_attributes(BufferAdapter& buffer, std::size_t offset) = 0;
  // The prelude for this backend (without FAST_MATH).
  virtual std::string_view prelude() const = 0;
  // The user's part of a program source (`prelude`: with the prelude's macros defined) as this
  // backend compiles it, or std::nullopt to compile it as written. OpenCL passes array views to
  // kernels as their allocation and a byte offset (opencl/kernel_offsets.cpp). The rewrite keeps
  // every line where it was.
  virtual std::optional<RewrittenSource> rewrite_source(std::string_view source,
                                                        bool prelude) const {
    (void)source;
    (void)prelude;
    return std::nullopt;
  }
  // Compiles a full source for one device. Throws CompileError.
  virtual CompiledBinary compile(std::size_t device_idx, const std::string& source,
                                 const std::vector<std::string>& options,
                                 const std::string& name) = 0;
  virtual std::shared_ptr<ProgramAdapter> load(std::size_t device_idx,
                                               std::span<const std::byte> binary,
                                               const std::vector<std::string>& options) = 0;
  // load() with the JIT options (CUDA: cuModuleLoadDataEx) and the logs of the load: the JIT's
  // info and error logs (CUDA), or the build log of the binary (OpenCL: in `info` when the build
  // succeeded, in `error` when it failed). The logs are filled before a refusal is thrown. OpenCL
  // ignores `jit` (the front-end refused the options it has no equivalent of).
  virtual std::shared_ptr<ProgramAdapter> load_jit(std::size_t device_idx,
                                                   std::span<const std::byte> binary,
                                                   const std::vector<std::string>& options,
                                                   const JitOptions& jit, JitLog& log) = 0;
  // CUDA: compiles a full source to PTX text (with `options`, which name a virtual architecture,
  // compute_XY). Other backends raise LogicError. Throws CompileError.
  virtual CompiledBinary compile_ptx(std::size_t device_idx, const std::string& source,
                                     const std::vector<std::string>& options,
                                     const std::string& name) = 0;
  // The default_options() for another architecture than the device's own (CUDA: "sm_80" or
  // "compute_80"); LogicError on backends without one.
  virtual std::vector<std::string> options_for_arch(std::size_t device_idx, bool fast_math,
                                                    const std::string& arch) const = 0;
  // Compiles and loads in one step, for when nothing keeps the binary (the compile cache is off):
  // a backend that can run what its compiler made overrides it and never asks for a binary.
  // Throws CompileError.
  virtual std::shared_ptr<ProgramAdapter> build(std::size_t device_idx, const std::string& source,
                                                const std::vector<std::string>& options,
                                                const std::string& name) {
    return load(device_idx, compile(device_idx, source, options, name).binary, options);
  }
  // What, besides the source and options, decides the compiled binary: architecture, device
  // type, compiler and driver versions.
  virtual std::vector<std::string> compiler_identity(std::size_t device_idx) const = 0;
  // The options Skein itself passes for this device (architecture, fast math).
  virtual std::vector<std::string> default_options(std::size_t device_idx,
                                                   bool fast_math) const = 0;
  // CUcontext of one device, or the cl_context (any index).
  virtual std::uintptr_t native(std::size_t device_idx) const = 0;
};

// Backend factories; each backend's api.cpp defines its own, and a backend not compiled in gets
// an adapter that says so (src/api.cpp).
std::shared_ptr<ApiAdapter> make_cuda_api_adapter();
std::shared_ptr<ApiAdapter> make_opencl_api_adapter();
// The process-wide adapter of an API (created on first use).
std::shared_ptr<ApiAdapter> api_adapter(ApiId id);

// Contexts from devices of one platform (all devices share the adapter's platform).
std::shared_ptr<ContextAdapter> make_cuda_context(
    const std::vector<std::shared_ptr<DeviceAdapter>>& devices);
std::shared_ptr<ContextAdapter> make_opencl_context(
    const std::vector<std::shared_ptr<DeviceAdapter>>& devices);

// "CUDA device 0 (NVIDIA H100 80GB HBM3)".
std::string describe(const DeviceAdapter& device);

}  // namespace skein::detail

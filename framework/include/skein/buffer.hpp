// SPDX-License-Identifier: BSD-3-Clause
// Device memory: an allocation on one device of a context, or a region of one.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <utility>

#include "skein/context.hpp"
#include "skein/export.hpp"
#include "skein/queue.hpp"

namespace skein {

namespace detail {
class BufferAdapter;
}

// Whether a transfer call returns at once (async) or after the transfer is done (blocking).
// With async, host memory must stay valid until the queue has done the transfer; page-locked
// memory (HostBuffer) makes the transfer truly asynchronous.
enum class Sync { blocking, async };

// A cheap handle: copies and sub-regions share the allocation.
// Threads: a Buffer never changes once made, so it and its copies may be used from any number of
// threads at once (the OpenCL backend's sub-buffers are made under a lock); transfers follow the
// rules of the Queue they are given, and ordering the threads' reads and writes of the shared
// device bytes is the caller's business.
class SKEIN_EXPORT Buffer {
 public:
  Buffer() = default;
  // Allocates `size` bytes on device `device_idx` of the context. Throws MemoryError when it does
  // not fit, with the requested and the available size.
  [[nodiscard]] static Buffer allocate(const Context& context, std::size_t device_idx,
                                       std::size_t size);

  Context context() const;
  std::size_t device_idx() const { return device_idx_; }
  // Bytes from the start of the physical allocation.
  std::size_t offset() const { return offset_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // A buffer describing bytes [origin, origin + size) of this one.
  Buffer get_sub_region(std::size_t origin, std::size_t size) const;

  // Host -> device. `host.size()` must equal size().
  void set(const Queue& queue, std::span<const std::byte> host, Sync sync = Sync::blocking) const;
  // Device -> device (another device of the context too). Sizes must be equal. Ordered on the
  // queue: it waits for earlier work of the queue on the source's device, then copies on this
  // buffer's device.
  void set(const Queue& queue, const Buffer& source, Sync sync = Sync::async) const;
  // Device -> host. `host.size()` must equal size().
  void get(const Queue& queue, std::span<std::byte> host, Sync sync = Sync::blocking) const;

  template <class T>
  void set(const Queue& queue, std::span<const T> host, Sync sync = Sync::blocking) const {
    set(queue, std::as_bytes(host), sync);
  }
  template <class T>
  void get(const Queue& queue, std::span<T> host, Sync sync = Sync::blocking) const {
    get(queue, std::as_writable_bytes(host), sync);
  }

  // The backend object of the whole allocation (CUdeviceptr, cl_mem), for interop.
  const std::shared_ptr<detail::BufferAdapter>& adapter() const { return adapter_; }
  // Identifies the buffer's context without copying a handle (for checks on hot paths).
  const void* context_id() const { return context_.get(); }

  Buffer(const Context& context, std::shared_ptr<detail::BufferAdapter> adapter,
         std::size_t device_idx, std::size_t offset, std::size_t size);

 private:
  std::shared_ptr<Context::Impl> context_;
  std::shared_ptr<detail::BufferAdapter> adapter_;
  std::size_t device_idx_ = 0;
  std::size_t offset_ = 0;
  std::size_t size_ = 0;
};

namespace detail {
class HostBufferAdapter;
}

// How page-locked host memory is made (PyCUDA's host_alloc_flags and mem_host_register_flags).
struct HostMemoryFlags {
  // Page-locked for every CUDA context of the process, not only the Skein context's first device
  // (CU_MEMHOSTALLOC_PORTABLE / CU_MEMHOSTREGISTER_PORTABLE). OpenCL: a context's host memory is
  // its every device's anyway.
  bool portable = true;
  // Write-combined (CU_MEMHOSTALLOC_WRITECOMBINED): faster for the host to write and for the
  // device to read over PCIe, very slow for the host to read. Allocation only (register_host
  // refuses it). OpenCL: no counterpart; accepted and without effect.
  bool write_combined = false;
  // Mapped into the devices' address space (CU_MEMHOSTALLOC_DEVICEMAP /
  // CU_MEMHOSTREGISTER_DEVICEMAP): HostBuffer::device_buffer() gives a Buffer whose reads and
  // writes by kernels go over the bus to this memory. CUDA only: OpenCL 1.2 leaves kernels' access
  // to mapped host memory undefined, so both calls raise LogicError for it there.
  bool device_mapped = false;
  friend bool operator==(const HostMemoryFlags&, const HostMemoryFlags&) = default;
};

// Page-locked (pinned) host memory of a context, for truly asynchronous transfers.
// Threads: as Buffer: the handle and its copies may be used from any number of threads at once;
// the bytes are the caller's to guard.
class SKEIN_EXPORT HostBuffer {
 public:
  HostBuffer() = default;
  // `size` bytes of page-locked memory (cuMemHostAlloc; OpenCL: a buffer with
  // CL_MEM_ALLOC_HOST_PTR, kept mapped), freed when the last copy of the handle goes (PyCUDA's
  // pagelocked_empty / HostAllocation).
  [[nodiscard]] static HostBuffer allocate(const Context& context, std::size_t size,
                                           HostMemoryFlags flags = {});
  // Page-locks `size` bytes of the caller's memory at `data` in place (cuMemHostRegister; OpenCL:
  // a buffer over it with CL_MEM_USE_HOST_PTR, kept mapped), so that transfers from and to it are
  // asynchronous as with allocate(); data() is `data`. The registration ends (cuMemHostUnregister)
  // when the last copy of the handle goes; the memory stays the caller's, who must keep it alive
  // until then (PyCUDA's register_host_memory / RegisteredHostMemory). Refuses a null pointer, a
  // size of 0, write_combined, and (CUDA) memory that is already registered, with LogicError.
  [[nodiscard]] static HostBuffer register_memory(const Context& context, void* data,
                                                  std::size_t size, HostMemoryFlags flags = {});
  // A host buffer over an adapter (PageLockedMemoryPool hands out its blocks this way).
  explicit HostBuffer(std::shared_ptr<detail::HostBufferAdapter> adapter)
      : adapter_(std::move(adapter)) {}

  std::byte* data() const;
  std::size_t size() const;
  std::span<std::byte> bytes() const { return {data(), size()}; }
  template <class T>
  std::span<T> as() const {
    return {reinterpret_cast<T*>(data()), size() / sizeof(T)};
  }
  HostMemoryFlags flags() const;
  // Whether the memory is the caller's, page-locked by register_memory().
  bool registered() const;

  // The device's view of this memory (PyCUDA's HostAllocation.get_device_pointer()): a Buffer of
  // size() bytes on device `device_idx` of `context` (the context the memory was made for), which
  // kernels read and write directly; the host sees their writes once the queue is synchronized.
  // Needs flags().device_mapped (LogicError otherwise, and for memory of another context). The
  // Buffer keeps the memory page-locked (and, for allocate(), allocated).
  Buffer device_buffer(const Context& context, std::size_t device_idx) const;

  const std::shared_ptr<detail::HostBufferAdapter>& adapter() const { return adapter_; }

 private:
  std::shared_ptr<detail::HostBufferAdapter> adapter_;
};

}  // namespace skein

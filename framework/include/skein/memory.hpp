// SPDX-License-Identifier: BSD-3-Clause
// CUDA's managed (unified) memory and inter-process (IPC) memory and event handles (after PyCUDA's
// managed_empty / mem_alloc_managed, mem_get_ipc_handle / IPCMemoryHandle and Event.ipc_handle /
// Event.from_ipc_handle, pygpu's get_ipc_handle / open_ipc_handle). CUDA only: on OpenCL every
// call raises LogicError saying so and what to use instead (see docs/guide.md, "Driver controls").
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "skein/buffer.hpp"
#include "skein/context.hpp"
#include "skein/event.hpp"
#include "skein/export.hpp"
#include "skein/queue.hpp"

namespace skein {

// ---- managed memory ----------------------------------------------------------------------------

// Who may touch managed memory at first (cuMemAllocManaged's flags; PyCUDA's mem_attach_flags).
enum class ManagedAttach {
  global,  // CU_MEM_ATTACH_GLOBAL: any queue of any device
  host,    // CU_MEM_ATTACH_HOST: the host, and devices that can access pageable memory concurrently
  // CU_MEM_ATTACH_SINGLE: only the queue given to attach() (its stream on the memory's device),
  // so that the host may use the memory while other queues work, once that queue is done with it.
  // For attach() only: allocate_managed refuses it (LogicError).
  single,
};

// `size` bytes of managed memory on device `device_idx` of the context (cuMemAllocManaged; PyCUDA's
// mem_alloc_managed / managed_empty): a Buffer that kernels, copies, arrays (Array(queue, buffer,
// shape, dtype)) and collectives use like any other, and that the host may also read and write
// through managed_data() once the work touching it is done (Queue::synchronize). Refused with
// MemoryError before anything is allocated when `size` exceeds the device's free memory
// (memory_info), and with LogicError on a device without managed memory and on OpenCL.
// A size of 0 gives an empty buffer.
SKEIN_EXPORT Buffer allocate_managed(const Context& context, std::size_t device_idx,
                                     std::size_t size,
                                     ManagedAttach attach = ManagedAttach::global);

// Changes who may touch the managed memory of `managed` (PyCUDA's ManagedAllocation.attach(flags,
// stream); cuStreamAttachMemAsync), ordered on the queue's stream of the buffer's device: global
// (every queue), host, or single (this queue only; its later work may use the memory, and the
// host may use it whenever this queue is done with its work on it, while other queues run). It
// acts on the whole allocation, a view's too. LogicError for memory that is not managed, a queue
// of another context or without the buffer's device, and on OpenCL (no managed memory: use a
// Buffer and copies, or mapped host memory, HostMemoryFlags::device_mapped).
SKEIN_EXPORT void attach(const Queue& queue, const Buffer& managed, ManagedAttach attach);

// Whether the buffer's memory came from allocate_managed().
SKEIN_EXPORT bool is_managed(const Buffer& buffer);

// The host's address of the buffer's first byte (a view's offset included); LogicError for memory
// that is not managed. The host may use it while no queue works on the buffer.
SKEIN_EXPORT std::byte* managed_data(const Buffer& buffer);
template <class T>
std::span<T> managed_span(const Buffer& buffer) {
  return {reinterpret_cast<T*>(managed_data(buffer)), buffer.size() / sizeof(T)};
}

// A place for managed memory: the host, or a device of the buffer's context.
struct MemoryLocation {
  bool host = false;
  std::size_t device_idx = 0;  // when !host
  static constexpr MemoryLocation on_host() { return {true, 0}; }
  static constexpr MemoryLocation on_device(std::size_t device_idx) { return {false, device_idx}; }
  friend bool operator==(const MemoryLocation&, const MemoryLocation&) = default;
};

// Moves the buffer's pages to `to` ahead of use (cuMemPrefetchAsync, the runtime's
// cudaMemPrefetchAsync), ordered on the queue's queue of the buffer's device. A hint: results are
// the same without it. LogicError for memory that is not managed, a device index outside the
// context, a queue of another context.
SKEIN_EXPORT void prefetch(const Queue& queue, const Buffer& managed, MemoryLocation to);

// Usage hints for managed memory (CUmem_advise).
enum class MemoryAdvice {
  set_read_mostly,           // copies on every reader; writes invalidate them (location ignored)
  unset_read_mostly,         // (location ignored)
  set_preferred_location,    // pages stay at `location` where possible
  unset_preferred_location,  // (location ignored)
  set_accessed_by,           // `location` keeps a mapping of the pages (no faults there)
  unset_accessed_by,
};
// cuMemAdvise over the buffer's bytes. Same errors as prefetch().
SKEIN_EXPORT void advise(const Buffer& managed, MemoryAdvice advice,
                         MemoryLocation location = MemoryLocation::on_host());

// ---- pointer attributes -------------------------------------------------------------------------

// What the driver says of memory (PyCUDA's cuPointerGetAttribute(s)).
enum class MemoryType {
  device,   // device memory (Buffer::allocate, allocate_pitched, a pool's block, IPC, virtual)
  host,     // page-locked host memory seen by a device (HostMemoryFlags::device_mapped)
  managed,  // allocate_managed
};
SKEIN_EXPORT const char* name(MemoryType type);  // "managed"

struct PointerAttributes {
  std::size_t device_idx = 0;  // the device of the context it is on
  MemoryType type = MemoryType::device;
  bool managed = false;  // CU_POINTER_ATTRIBUTE_IS_MANAGED
  // CUDA: the device address of the first byte (CU_POINTER_ATTRIBUTE_DEVICE_POINTER); OpenCL: 0
  // (memory objects have no address: opencl::native_mem and the Buffer's offset name the bytes).
  std::uintptr_t device_pointer = 0;
  // The host's address of the first byte, for managed and mapped host memory
  // (CU_POINTER_ATTRIBUTE_HOST_POINTER; OpenCL: CL_MEM_HOST_PTR), else null.
  void* host_pointer = nullptr;
  // The allocation holding it (CU_POINTER_ATTRIBUTE_RANGE_START_ADDR / RANGE_SIZE; OpenCL: the
  // memory object, CL_MEM_SIZE): its start (CUDA's device address; 0 on OpenCL) and size in
  // bytes, and the first byte's offset from its start. Where the driver tells no range (CUDA,
  // some host memory), the range starts at the byte and its size is 0.
  std::uintptr_t range_start = 0;
  std::size_t range_size = 0;
  std::size_t range_offset = 0;
};

// The attributes of a buffer's first byte. The CUDA context of it is cuda::native_context(
// buffer.context(), result.device_idx). LogicError for an empty buffer (no memory).
SKEIN_EXPORT PointerAttributes pointer_attributes(const Buffer& buffer);

// ---- inter-process handles ---------------------------------------------------------------------

// Device memory exported by one process for others on the same node (cuIpcGetMemHandle). Plain
// bytes: send it with MPI as sizeof(IpcMemoryHandle) bytes (MPI_BYTE) or write it to a file. It
// names the view it was made from (offset and size in the allocation), the exporting process,
// host and device, and carries a checksum, so that open_ipc_memory() refuses a damaged handle, a
// handle from another node or unreachable device, or from this very process, with LogicError.
struct IpcMemoryHandle {
  std::uint32_t magic = 0;  // "SKIM"
  std::uint32_t version = 0;
  std::uint64_t process = 0;      // the exporter's process id
  std::uint64_t host = 0;         // a hash of the exporter's host name
  char device[32] = {};           // the exporting device's PCI bus id, NUL-padded
  std::uint64_t offset = 0;       // bytes from the start of the allocation to the view
  std::uint64_t size = 0;         // bytes of the view
  unsigned char native[64] = {};  // CUipcMemHandle
  std::uint64_t checksum = 0;     // FNV-1a (64 bits) of every byte above
};
static_assert(std::is_trivially_copyable_v<IpcMemoryHandle> &&
              std::is_standard_layout_v<IpcMemoryHandle>);

// The handle of the buffer's bytes (PyCUDA's mem_get_ipc_handle, pygpu's get_ipc_handle). The
// exporter keeps the buffer alive while other processes use it (a block of a queue's pool, e.g. an
// array made without an allocator, is then freed when its last handle goes, never reused).
// LogicError on OpenCL, for an empty buffer, and (from the driver) for memory CUDA cannot export
// (managed, host, virtual memory).
SKEIN_EXPORT IpcMemoryHandle export_ipc_memory(const Buffer& buffer);

// Another process's memory on device `device_idx` of the context (cuIpcOpenMemHandle; PyCUDA's
// IPCMemoryHandle, pygpu's open_ipc_handle): a Buffer of handle.size bytes over the exporter's
// view, usable as any Buffer of this context (kernels, copies, Array(queue, buffer, ...)); the
// mapping is closed (cuIpcCloseMemHandle) when the last Buffer over it goes. Opening handles of
// one allocation again maps it once (CUDA counts the openings; each Buffer closes its own). The
// exporting device may be `device_idx`'s or another this one has peer access to (opening enables
// it). Raises LogicError for a malformed handle, one exported on another host, by a device this
// process does not see or this device cannot reach, or by this process (CUDA maps a process's own
// memory only through the original Buffer), and on OpenCL.
SKEIN_EXPORT Buffer open_ipc_memory(const Context& context, std::size_t device_idx,
                                    const IpcMemoryHandle& handle);

// An event exported to other processes (cuIpcGetEventHandle); same format rules as the memory
// handle.
struct IpcEventHandle {
  std::uint32_t magic = 0;  // "SKIE"
  std::uint32_t version = 0;
  std::uint64_t process = 0;
  std::uint64_t host = 0;
  char device[32] = {};
  unsigned char native[64] = {};  // CUipcEventHandle
  std::uint64_t checksum = 0;
};
static_assert(std::is_trivially_copyable_v<IpcEventHandle> &&
              std::is_standard_layout_v<IpcEventHandle>);

// An event shared between processes of one node (PyCUDA's Event(event_flags.INTERPROCESS),
// Event.ipc_handle and Event.from_ipc_handle): one process records it on its queue, another waits
// for it on its own queue (Queue::wait_for(event())) or on the host (event().wait()). A wait sees
// the latest record() made before the wait call, so order the two with a message (MPI). No timing.
// Copies share the event; it is destroyed when the last one goes.
class SKEIN_EXPORT IpcEvent {
 public:
  IpcEvent() = default;
  // A new event on device `device_idx` (CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING).
  static IpcEvent create(const Context& context, std::size_t device_idx);
  // The event another process exported (cuIpcOpenEventHandle); LogicError as open_ipc_memory().
  static IpcEvent open(const Context& context, std::size_t device_idx,
                       const IpcEventHandle& handle);

  // Its handle, to send to other processes (cuIpcGetEventHandle).
  const IpcEventHandle& handle() const { return handle_; }
  // Records it on the queue's queue of the event's device (cuEventRecord).
  void record(const Queue& queue) const;
  // As an Event: wait(), query(), Queue::wait_for().
  const Event& event() const { return event_; }
  std::size_t device_idx() const { return device_idx_; }
  bool valid() const { return event_.valid(); }

 private:
  Event event_;
  IpcEventHandle handle_{};
  std::size_t device_idx_ = 0;
  const void* context_id_ = nullptr;
};

}  // namespace skein

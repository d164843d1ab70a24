// SPDX-License-Identifier: BSD-3-Clause
// Managed memory and IPC handles: argument checks, and the backend-neutral header of the handles.
#include "skein/memory.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>

#include "skein/detail/errors.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"
#include "skein/detail/ipc.hpp"

namespace skein {

namespace {

detail::ContextAdapter& context_adapter(const Context& context) {
  return *detail::impl_of(context)->adapter;
}

void check_managed(const Buffer& buffer, const char* call) {
  if (!is_managed(buffer)) {
    detail::raise_in(SKEIN_HERE, call, "Allocate the buffer with allocate_managed().",
                     "the buffer of {} bytes is not managed memory", buffer.size());
  }
}

void check_location(const Buffer& buffer, MemoryLocation location, const char* call) {
  if (!location.host) detail::check_device_idx(buffer.context(), location.device_idx, call);
}

}  // namespace

Buffer allocate_managed(const Context& context, std::size_t device_idx, std::size_t size,
                        ManagedAttach attach) {
  detail::check_device_idx(context, device_idx, "allocate_managed");
  if (attach == ManagedAttach::single) {
    detail::raise_in(SKEIN_HERE, "allocate_managed",
                     "Allocate with ManagedAttach::global or host, then attach(queue, buffer, "
                     "ManagedAttach::single).",
                     "managed memory cannot be allocated attached to a single queue "
                     "(cuMemAllocManaged takes global or host)");
  }
  auto adapter = context_adapter(context).allocate_managed(device_idx, size, attach);
  return Buffer(context, std::move(adapter), device_idx, 0, size);
}

bool is_managed(const Buffer& buffer) { return buffer.adapter() && buffer.adapter()->managed(); }

std::byte* managed_data(const Buffer& buffer) {
  check_managed(buffer, "managed_data");
  if (buffer.adapter()->native() == 0) return nullptr;  // empty
  return reinterpret_cast<std::byte*>(buffer.adapter()->native()) + buffer.offset();
}

void prefetch(const Queue& queue, const Buffer& managed, MemoryLocation to) {
  constexpr const char* call = "prefetch";
  check_managed(managed, call);
  check_location(managed, to, call);
  if (!(queue.context() == managed.context())) {
    detail::raise_in(SKEIN_HERE, call, "Use a queue of the buffer's context.",
                     "the queue belongs to another context than the buffer");
  }
  if (!queue.has_device(managed.device_idx())) {
    detail::raise_in(SKEIN_HERE, call, "Use a queue that includes the buffer's device.",
                     "the buffer is on device {}, which is not in the queue", managed.device_idx());
  }
  if (managed.empty()) return;
  context_adapter(managed.context())
      .prefetch_managed(queue.device_queue(managed.device_idx()), *managed.adapter(),
                        managed.offset(), managed.size(), to);
}

void attach(const Queue& queue, const Buffer& managed, ManagedAttach attach) {
  constexpr const char* call = "attach";
  if (!(queue.context() == managed.context())) {
    detail::raise_in(SKEIN_HERE, call, "Use a queue of the buffer's context.",
                     "the queue belongs to another context than the buffer");
  }
  auto& adapter = context_adapter(managed.context());
  if (managed.context().api().id() != ApiId::cuda) {
    // The backend's refusal: no managed memory at all (and what to use instead).
    adapter.attach_managed(queue.device_queue(queue.device_idxs().front()), *managed.adapter(),
                           attach);
  }
  check_managed(managed, call);
  if (!queue.has_device(managed.device_idx())) {
    detail::raise_in(SKEIN_HERE, call, "Use a queue that includes the buffer's device.",
                     "the buffer is on device {}, which is not in the queue", managed.device_idx());
  }
  if (managed.adapter()->native() == 0) return;  // empty: no allocation
  adapter.attach_managed(queue.device_queue(managed.device_idx()), *managed.adapter(), attach);
}

const char* name(MemoryType type) {
  switch (type) {
    case MemoryType::device: return "device";
    case MemoryType::host: return "host";
    case MemoryType::managed: return "managed";
  }
  return "unknown";
}

PointerAttributes pointer_attributes(const Buffer& buffer) {
  if (!buffer.adapter() || buffer.adapter()->native() == 0) {
    detail::raise_in(SKEIN_HERE, "pointer_attributes", "Ask a buffer of at least one byte.",
                     "the buffer is empty: it has no memory");
  }
  return context_adapter(buffer.context()).pointer_attributes(*buffer.adapter(), buffer.offset());
}

void advise(const Buffer& managed, MemoryAdvice advice, MemoryLocation location) {
  constexpr const char* call = "advise";
  check_managed(managed, call);
  check_location(managed, location, call);
  if (managed.empty()) return;
  context_adapter(managed.context())
      .advise_managed(*managed.adapter(), managed.offset(), managed.size(), advice, location);
}

IpcMemoryHandle export_ipc_memory(const Buffer& buffer) {
  constexpr const char* call = "export_ipc_memory";
  if (!buffer.adapter()) {
    detail::raise_in(SKEIN_HERE, call, "Allocate the buffer with Buffer::allocate().",
                     "the buffer is empty");
  }
  // The backend refuses an empty buffer (after its own refusal on OpenCL).
  IpcMemoryHandle handle =
      context_adapter(buffer.context())
          .export_ipc_memory(*buffer.adapter(), buffer.offset(), buffer.size());
  // Another process may map it now: a pool never hands the block out again.
  buffer.adapter()->mark_exported();
  return handle;
}

Buffer open_ipc_memory(const Context& context, std::size_t device_idx,
                       const IpcMemoryHandle& handle) {
  detail::check_device_idx(context, device_idx, "open_ipc_memory");
  auto adapter = context_adapter(context).open_ipc_memory(device_idx, handle);
  const std::size_t size = adapter->size();
  return Buffer(context, std::move(adapter), device_idx, 0, size);
}

IpcEvent IpcEvent::create(const Context& context, std::size_t device_idx) {
  detail::check_device_idx(context, device_idx, "IpcEvent::create");
  IpcEvent result;
  result.event_ = Event(context_adapter(context).create_ipc_event(device_idx, result.handle_));
  result.device_idx_ = device_idx;
  result.context_id_ = detail::impl_of(context).get();
  return result;
}

IpcEvent IpcEvent::open(const Context& context, std::size_t device_idx,
                        const IpcEventHandle& handle) {
  detail::check_device_idx(context, device_idx, "IpcEvent::open");
  IpcEvent result;
  result.event_ = Event(context_adapter(context).open_ipc_event(device_idx, handle));
  result.handle_ = handle;
  result.device_idx_ = device_idx;
  result.context_id_ = detail::impl_of(context).get();
  return result;
}

void IpcEvent::record(const Queue& queue) const {
  constexpr const char* call = "IpcEvent::record";
  if (!valid()) {
    detail::raise_in(SKEIN_HERE, call, "Make it with IpcEvent::create() or IpcEvent::open().",
                     "the event is empty");
  }
  if (detail::impl_of(queue.context()).get() != context_id_) {
    detail::raise_in(SKEIN_HERE, call, "Use a queue of the context the event was made in.",
                     "the queue belongs to another context than the event");
  }
  if (!queue.has_device(device_idx_)) {
    detail::raise_in(SKEIN_HERE, call, "Use a queue that includes the event's device.",
                     "the event is on device {}, which is not in the queue", device_idx_);
  }
  context_adapter(queue.context())
      .record_ipc_event(queue.device_queue(device_idx_), *event_.adapter());
}

namespace detail {

std::uint64_t ipc_checksum(const void* data, std::size_t size) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

namespace {

std::uint64_t host_hash() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return ipc_checksum(name, std::strlen(name));
}

std::string_view device_field(const char (&device)[32]) {
  return {device, strnlen(device, sizeof(device))};
}

template <class Handle>
void seal_handle(Handle& handle, std::uint32_t magic, std::string_view device) {
  handle.magic = magic;
  handle.version = kIpcVersion;
  handle.process = static_cast<std::uint64_t>(getpid());
  handle.host = host_hash();
  std::memset(handle.device, 0, sizeof(handle.device));
  device.copy(handle.device, std::min(device.size(), sizeof(handle.device) - 1));
  handle.checksum = ipc_checksum(&handle, offsetof(Handle, checksum));
}

template <class Handle>
void check_handle(const Handle& handle, std::uint32_t magic, const char* kind,
                  const IpcDeviceCheck& device_check, const char* call,
                  const std::string& description) {
  const auto fail = [&](const std::string& what, const char* hint) {
    throw LogicError(ErrorInfo{
        .what = what, .call = call, .device = description, .hint = hint, .location = SKEIN_HERE});
  };
  const bool sum_right = handle.checksum == ipc_checksum(&handle, offsetof(Handle, checksum));
  if (handle.magic != magic || handle.version != kIpcVersion || !sum_right) {
    fail(fmt::format("the {} handle is malformed (magic {:#x}, version {}, checksum {})", kind,
                     handle.magic, handle.version, sum_right ? "right" : "wrong"),
         "Pass the bytes of a handle made by this version of Skein, unchanged (sizeof the "
         "handle bytes, e.g. MPI_BYTE).");
  }
  if (handle.host != host_hash()) {
    fail(fmt::format("the {} handle was exported on another host", kind),
         "IPC handles work between processes of one node only; send the data itself (MPI, "
         "collectives) to other nodes.");
  }
  const std::string_view exporter = device_field(handle.device);
  if (const std::string why = device_check(exporter); !why.empty()) {
    fail(fmt::format("the {} handle was exported by the device at PCI bus id {}, {}", kind,
                     exporter, why),
         "Open it on the device that exported it (the same GPU, whatever its index in this "
         "process) or on one with peer access to it.");
  }
  if (handle.process == static_cast<std::uint64_t>(getpid())) {
    fail(fmt::format("the {} handle was exported by this process (pid {}), which CUDA does not let "
                     "open its own handles",
                     kind, handle.process),
         "In the exporting process, use the original Buffer or Event itself.");
  }
}

}  // namespace

void seal(IpcMemoryHandle& handle, std::string_view device) {
  seal_handle(handle, kIpcMemoryMagic, device);
}
void seal(IpcEventHandle& handle, std::string_view device) {
  seal_handle(handle, kIpcEventMagic, device);
}

void check_ipc_handle(const IpcMemoryHandle& handle, const IpcDeviceCheck& device_check,
                      const char* call, const std::string& description) {
  check_handle(handle, kIpcMemoryMagic, "memory", device_check, call, description);
}
void check_ipc_handle(const IpcEventHandle& handle, const IpcDeviceCheck& device_check,
                      const char* call, const std::string& description) {
  check_handle(handle, kIpcEventMagic, "event", device_check, call, description);
}

}  // namespace detail

}  // namespace skein

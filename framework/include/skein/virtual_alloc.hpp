// SPDX-License-Identifier: BSD-3-Clause
// Virtual allocations (after grunnur's virtual_alloc): temporaries that are never in use at the
// same time share memory.
//
// A virtual buffer is a Buffer of the requested size that a manager places in a *real*
// allocation, possibly together with other virtual buffers. The caller says which buffers a new
// one is used together with (its dependencies, given when it is allocated); a virtual buffer never
// shares memory with its dependencies, nor with the buffers that later name it as a dependency.
// Any two other virtual buffers of a manager may share memory, even while both are alive: that is
// the point (a computation's temporaries live as long as the computation, but each is only used
// in some of its steps). So declare every buffer whose contents must survive while the new one is
// written, or that is read while the new one is written.
//
// - TrivialManager gives every virtual buffer a real allocation of its own (for comparison and
//   for debugging a wrong dependency list).
// - ZeroOffsetManager puts a virtual buffer at the start of the smallest real allocation of its
//   device that is large enough and holds none of its dependencies (the oldest of equal sizes),
//   and makes a new real allocation of the requested size when there is none.
// A real allocation is freed when the last virtual buffer in it is gone: when the last handle
// that uses the virtual buffer is (the Buffer and its copies, its sub-regions, arrays and views).
//
// Ordering: virtual buffers that share memory must be used in the order of the manager's queue
// (kernels and transfers enqueued on it run in order). Work on another queue that touches a
// virtual buffer must be finished before work on the manager's queue uses another virtual buffer
// that may share its memory.
//
// Packing (grunnur's pack, pack_on_alloc, pack_on_free): a virtual buffer's Buffer stands for
// its real allocation through an adapter that the manager can point at new memory, so live
// virtual buffers can move to smaller allocations. Unlike grunnur's, Skein's packing keeps their
// contents: the bytes move with them (a copy enqueued on the manager's queue), and it never puts
// together buffers that hold separate memory now (that would mix their contents).
// - pack() moves every real allocation that is larger than its largest live virtual buffer (its
//   largest was freed) to a new one of that size.
// - pack_on_free does the same for the one real allocation a freed buffer leaves too large.
// - pack_on_alloc: a new buffer that no real allocation can take joins the largest smaller one
//   that holds none of its dependencies, which grows to the new size (its contents kept), instead
//   of getting an allocation of its own.
// A move enqueues the copy after the work already enqueued on the manager's queue (which reads
// the old memory, as kernels in flight do), points the virtual buffers at the new memory (work
// enqueued afterwards uses it), then waits for the queue (Queue::synchronize) before the old memory
// is freed. Work on other queues that uses the manager's buffers must be finished before. Handles,
// views and offsets of virtual buffers stay valid across a move; addresses handed out
// (cuda::native_pointer, opencl::native_mem, DLPack) do not move: a real allocation holding a
// buffer whose address was taken is never moved. pack_on_free moves in the destructor of a
// buffer's last handle: a failure there (no memory for the new allocation) is logged and leaves
// the allocation as it was. TrivialManager's allocations are always exactly as large as their one
// buffer: packing does nothing there.

// Managers are thread-safe and are cheap shared handles (copies are the same manager); virtual
// buffers keep their manager's state alive.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <map>
#include <memory>
#include <vector>

#include "skein/array.hpp"
#include "skein/buffer.hpp"
#include "skein/export.hpp"
#include "skein/queue.hpp"

namespace skein {

// What a new virtual buffer is used together with: virtual buffers of the same manager, given as
// the buffers, their sub-regions, or arrays and views over them. Anything else (buffers that are
// not virtual, of another manager, or already freed) is ignored, as in grunnur. Only the
// identities are kept, never the buffers: dependencies do not keep memory alive.
class SKEIN_EXPORT VirtualDependencies {
 public:
  VirtualDependencies() = default;
  VirtualDependencies(std::initializer_list<Buffer> buffers) {
    for (const auto& b : buffers) add(b);
  }
  VirtualDependencies(std::initializer_list<Array> arrays) {
    for (const auto& a : arrays) add(a);
  }
  VirtualDependencies(const std::vector<Buffer>& buffers) {
    for (const auto& b : buffers) add(b);
  }
  VirtualDependencies(const std::vector<Array>& arrays) {
    for (const auto& a : arrays) add(a);
  }

  VirtualDependencies& add(const Buffer& buffer);
  VirtualDependencies& add(const Array& array) { return add(array.data()); }
  VirtualDependencies& add(const VirtualDependencies& other);

  std::size_t size() const { return ids_.size(); }
  bool empty() const { return ids_.empty(); }

 private:
  friend class VirtualManager;
  // The ownership identity of a buffer's allocation (a virtual buffer's own, see the .cpp).
  std::vector<std::weak_ptr<const void>> ids_;
};

// grunnur's VirtualAllocationStatistics, for the live virtual buffers and real allocations.
struct VirtualAllocationStatistics {
  std::size_t real_size_total = 0;                     // bytes of the real allocations
  std::size_t real_num = 0;                            // number of real allocations
  std::map<std::size_t, std::size_t> real_sizes{};     // size -> number of real allocations
  std::size_t virtual_size_total = 0;                  // bytes requested by the virtual buffers
  std::size_t virtual_num = 0;                         // number of virtual buffers
  std::map<std::size_t, std::size_t> virtual_sizes{};  // size -> number of virtual buffers
  friend bool operator==(const VirtualAllocationStatistics&,
                         const VirtualAllocationStatistics&) = default;
};

// When a manager packs by itself (grunnur's pack_on_alloc and pack_on_free; see "Packing" above).
struct VirtualPacking {
  bool pack_on_alloc = false;
  bool pack_on_free = false;
};

// The base of the managers: a handle; TrivialManager and ZeroOffsetManager make them.
// Threads: allocate(), allocator(), pack() and statistics() may be called from several threads at
// once, on a manager or its copies (its state is behind one mutex; the real allocator is called
// outside it, so it must be thread-safe too). But a ZeroOffsetManager keeps memory apart only by
// the dependencies declared, and the threads' work on its queue interleaves, so buffers that
// different threads use at the same time must name each other as dependencies: in practice, a
// manager (and queue) per thread. A move (pack(), pack_on_alloc, pack_on_free) is ordered only
// with the work enqueued before it on the queue: another thread enqueuing work that uses the
// moved buffers at the same time may give that work the old memory, freed meanwhile.
class SKEIN_EXPORT VirtualManager {
 public:
  // The queue whose order makes sharing safe (see above); virtual buffers are on its devices.
  const Queue& queue() const;

  // A virtual buffer of exactly `nbytes` on `device_idx` (a device of the queue).
  Buffer allocate(std::size_t device_idx, std::size_t nbytes,
                  const VirtualDependencies& dependencies = {}) const;
  // An Allocator for Array::empty / Array::zeros (grunnur's VirtualAllocator): every array made
  // with it gets a virtual buffer with these dependencies. Use it for arrays on the manager's
  // queue.
  Allocator allocator(VirtualDependencies dependencies = {}) const;

  VirtualAllocationStatistics statistics() const;

  // grunnur's pack(): moves each real allocation larger than its largest live virtual buffer to
  // one of that size, keeping the contents (see "Packing" above), and waits for the queue. Throws
  // MemoryError when a new allocation fails; the allocations moved before stay moved, the others
  // stay as they were.
  void pack() const;

  // The real allocation (the real allocator's Buffer) a virtual buffer of this manager lies in
  // now, for diagnostics; an empty Buffer for any other buffer.
  Buffer real_allocation(const Buffer& buffer) const;

  struct State;

 protected:
  explicit VirtualManager(std::shared_ptr<State> state) : state_(std::move(state)) {}

 private:
  std::shared_ptr<State> state_;
};

// Every virtual buffer gets a real allocation of its own.
class SKEIN_EXPORT TrivialManager : public VirtualManager {
 public:
  // `real_allocator` makes the real allocations (default: Buffer::allocate in the queue's
  // context), e.g. DeviceMemoryPool::allocator(). It must not allocate from this manager. On
  // OpenCL its buffers must start at a multiple of the device's base-address alignment.
  explicit TrivialManager(const Queue& queue, Allocator real_allocator = {},
                          VirtualPacking packing = {});
};

// Virtual buffers without a dependency between them share real allocations, all at offset 0.
class SKEIN_EXPORT ZeroOffsetManager : public VirtualManager {
 public:
  // `real_allocator`: as for TrivialManager. On OpenCL its buffers must start at a multiple of
  // the device's base-address alignment (LogicError otherwise; Buffer::allocate's and pools' do).
  explicit ZeroOffsetManager(const Queue& queue, Allocator real_allocator = {},
                             VirtualPacking packing = {});
};

}  // namespace skein

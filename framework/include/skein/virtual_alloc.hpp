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
// Unlike grunnur, Skein's managers do not move live virtual buffers (no pack(), pack_on_alloc or
// pack_on_free): a Buffer, and the kernels, arrays and copies that use it, hold the backend's
// allocation itself, so a virtual buffer stays in the real allocation it was placed in. To get
// grunnur's packing, which places large buffers first, allocate the large temporaries first.
//
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

// The base of the managers: a handle; TrivialManager and ZeroOffsetManager make them.
// Threads: allocate(), allocator() and statistics() may be called from several threads at once,
// on a manager or its copies (its state is behind one mutex; the real allocator is called outside
// it, so it must be thread-safe too). But a ZeroOffsetManager keeps memory apart only by the
// dependencies declared, and the threads' work on its queue interleaves, so buffers that different
// threads use at the same time must name each other as dependencies: in practice, a manager (and
// queue) per thread.
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
  // context), e.g. DeviceMemoryPool::allocator(). It must not allocate from this manager.
  explicit TrivialManager(const Queue& queue, Allocator real_allocator = {});
};

// Virtual buffers without a dependency between them share real allocations, all at offset 0.
class SKEIN_EXPORT ZeroOffsetManager : public VirtualManager {
 public:
  // `real_allocator`: as for TrivialManager.
  explicit ZeroOffsetManager(const Queue& queue, Allocator real_allocator = {});
};

}  // namespace skein

// SPDX-License-Identifier: BSD-3-Clause
// Memory pools (after PyCUDA's DeviceMemoryPool and PageLockedMemoryPool): memory given back to a
// pool is held for later requests of a similar size instead of being freed, so that code making
// many short-lived temporaries (arrays in a time loop) does not pay for an allocation and a free
// each time.
//
// Sizes are rounded up to bins as PyCUDA does: a bin holds the sizes that agree in their leading
// three bits (the top bit and two more), so a block is at most 25% larger than the request, and a
// block held for one request is reused for any request of the same bin. bin_number() and
// alloc_size() give the rule.
//
// When a block is handed out again. A block goes back to its pool when the last handle that
// uses it is gone: the Buffer and every copy of it, its sub-regions, and the arrays and views over
// it (for a page-locked block, every copy of the HostBuffer). The pool may hand it out again at
// once, while work enqueued earlier may still use the memory. As in PyCUDA, that is safe when the
// old and the new user of a block enqueue their work on the same queue of the block's device:
// queues run in order, so the new user's work starts after the old one's. This covers the common
// case of one Queue for all the devices a code uses (Skein's copies between devices order the
// source's queue after the copy too). Work on a second queue of the device, a kernel of another
// device reading the block through peer access (Array::single_device_view), or an asynchronous
// transfer into host memory still in flight is not ordered that way: synchronize that queue
// (Queue::synchronize) before the last handle goes. Page-locked blocks have the same rule: an
// asynchronous transfer (Sync::async) from or to a pooled HostBuffer must be finished (synchronize
// the queue) before the HostBuffer's last copy goes.
//
// Pools are thread-safe, and cheap shared handles like Skein's other objects: copies are the
// same pool. Blocks keep their pool's memory alive, so a pool may go before its blocks; a block
// that comes back after the last handle of its pool is gone is freed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "skein/array.hpp"
#include "skein/buffer.hpp"
#include "skein/context.hpp"
#include "skein/export.hpp"

namespace skein {

// The counts of a pool, taken at one instant (PyCUDA's attributes of the same names).
struct MemoryPoolStatistics {
  std::size_t held_blocks = 0;    // blocks not in use, kept for later requests
  std::size_t active_blocks = 0;  // blocks handed out and not given back yet
  std::size_t held_bytes = 0;     // bytes of the held blocks (their rounded-up sizes)
  std::size_t active_bytes = 0;   // bytes requested for the active blocks
  std::size_t managed_bytes = 0;  // bytes of every block the pool allocated and has not freed
                                  // (active and held, rounded-up sizes)
  friend bool operator==(const MemoryPoolStatistics&, const MemoryPoolStatistics&) = default;
};

// Makes the page-locked host memory of a pool: bytes -> HostBuffer.
using HostAllocator = std::function<HostBuffer(std::size_t nbytes)>;

// A pool of device memory for every device of one context. Blocks are kept per device: a block
// of device 0 is only handed out again for device 0.
// Threads: every call may be made from several threads at once, on a pool or its copies (its state
// is behind one mutex; the base allocator is called outside it, maybe from several threads at
// once, so it must be thread-safe too). Threads with queues of their own that share a pool hand
// blocks from one queue's work to another's, which the pools' reuse rule does not order:
// synchronize before a block's last handle goes, or give each queue its own pool (as
// temporaries_pool() does).
class SKEIN_EXPORT DeviceMemoryPool {
 public:
  // `base` makes the pool's blocks (default: Buffer::allocate in `context`); it must return a
  // buffer of the context, on the requested device, of at least the requested size.
  explicit DeviceMemoryPool(const Context& context, Allocator base = {});

  const Context& context() const;

  // A buffer of exactly `nbytes` on device `device_idx`: a held block of the same bin when there
  // is one, else a new block of alloc_size(bin_number(nbytes)) bytes. When the device is out of
  // memory, the pool frees its held blocks and tries once more before raising MemoryError.
  // A request of 0 bytes returns an empty buffer that the pool does not count.
  Buffer allocate(std::size_t device_idx, std::size_t nbytes) const;
  // An Allocator for Array::empty / Array::zeros that draws from this pool.
  Allocator allocator() const;

  MemoryPoolStatistics statistics() const;
  std::size_t held_blocks() const { return statistics().held_blocks; }
  std::size_t active_blocks() const { return statistics().active_blocks; }
  std::size_t held_bytes() const { return statistics().held_bytes; }
  std::size_t active_bytes() const { return statistics().active_bytes; }
  std::size_t managed_bytes() const { return statistics().managed_bytes; }

  // Frees every held block.
  void free_held() const;
  // Frees the held blocks of one device.
  void free_held(std::size_t device_idx) const;
  // From now on, blocks given back are freed at once instead of being held; frees the held ones.
  // For a pool that falls out of use while some of its blocks are still active.
  void stop_holding() const;

  // A cap on the bytes of the blocks this pool has allocated on one device and not freed (active
  // and held, their rounded-up sizes: managed_bytes(device_idx)). A request that needs a new block
  // past the limit makes the pool free its held blocks and try again; if it still does not fit,
  // allocate() raises MemoryError with the requested size and what is left under the limit.
  // Lowering a limit below what the pool holds frees nothing by itself. No limit by default.
  void set_limit(std::size_t device_idx, std::size_t bytes) const;
  void clear_limit(std::size_t device_idx) const;
  std::optional<std::size_t> limit(std::size_t device_idx) const;
  // Bytes of the blocks the pool has allocated on one device and not freed.
  std::size_t managed_bytes(std::size_t device_idx) const;
  // Sets each device's limit to managed_bytes(device_idx) plus `fraction` (in (0, 1]) of the
  // device's free memory now (memory_info() of skein/driver.hpp; on OpenCL an estimate), e.g.
  // 0.8 to leave a fifth of the free memory to other code.
  void set_limit_from_free_memory(double fraction) const;

  // The bin of a request, and the size of the blocks of a bin (the largest request of the bin).
  static std::uint32_t bin_number(std::size_t nbytes);
  static std::size_t alloc_size(std::uint32_t bin);

  struct State;

 private:
  friend struct detail::ImplAccess;
  const std::shared_ptr<State>& impl() const { return state_; }
  std::shared_ptr<State> state_;
};

// A pool of page-locked host memory of one context (for asynchronous transfers, see HostBuffer).
// Threads: as DeviceMemoryPool: every call may be made from several threads at once (one mutex;
// the base allocator must be thread-safe), and the pools' rule for asynchronous transfers holds
// whichever thread takes the block next.
class SKEIN_EXPORT PageLockedMemoryPool {
 public:
  // `base` makes the pool's blocks (default: HostBuffer::allocate in `context`).
  explicit PageLockedMemoryPool(const Context& context, HostAllocator base = {});

  const Context& context() const;

  // A host buffer of exactly `nbytes` (size() says `nbytes`; the block behind it may be larger).
  // Out of memory: frees the held blocks and tries once more before raising MemoryError.
  HostBuffer allocate(std::size_t nbytes) const;
  HostAllocator allocator() const;

  MemoryPoolStatistics statistics() const;
  std::size_t held_blocks() const { return statistics().held_blocks; }
  std::size_t active_blocks() const { return statistics().active_blocks; }
  std::size_t held_bytes() const { return statistics().held_bytes; }
  std::size_t active_bytes() const { return statistics().active_bytes; }
  std::size_t managed_bytes() const { return statistics().managed_bytes; }

  void free_held() const;
  void stop_holding() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

// The queue's pool: the memory of the arrays made on `queue` without an allocator
// (Array::empty, zeros and from_host, and the results of Skein's calls: reductions, astype, copy,
// take, concatenate, gemv, ...), and the temporaries of Skein's array operations on it (the
// scratch of reductions, helper vectors of BLAS calls, the staging and receive buffers of the
// distributed arrays' collectives). One pool per Queue (copies of a Queue share it), made on
// first use and freed with the queue. Between calls it holds the blocks it has made, so a time
// loop allocates nothing after its first step: statistics() shows them, free_held() gives them
// back to the device. Context::set_array_pool(false) (or SKEIN_ARRAY_POOL=0) gives arrays plain
// allocations instead; temporaries always come from here. Requests below 1 MiB are binned as
// above; larger ones get a block of their size rounded up to 64 KiB (not a bin's quarter more:
// a code near the device's capacity keeps what it had) and take a held block at most an eighth
// larger than that.
//
// Stream order. When the last handle of such an array (its copies, views, Buffer) goes, its block
// comes back to the pool of the queue it was made on (Array::queue()), and that queue's later
// work, on the array's device, may reuse it at once: it runs after the work enqueued before,
// so a kernel still running never sees its memory reused under it. Work on another queue (or, by
// Array::single_device_view, on another device) is not ordered that way: when such work uses an
// array, order it before the array's last handle goes: make the array's queue wait for it
// (array.queue().wait_for(other.record_marker(d))), or synchronize the other queue. This is the
// rule of CUDA's cuMemFreeAsync (memory freed on a stream) and of CuPy's pool. Skein's own calls
// follow it: transfer() and Array::set(const Array&) order the source's queue after a copy made on
// another queue, the distributed operations order their operands' queues (skein/dist_ops.hpp), and
// the blocks of DistArray and ReplicatedArray, which halo exchanges and collectives use from
// other queues, are plain allocations.
//
// Handed out, never reused. A block of a queue's pool whose address was handed to the application
// while it was active (cuda::native_pointer, opencl::native_mem, to_dlpack, export_ipc_memory) is
// freed when it comes back, never handed out again: work that Skein does not see (another stream,
// library or process) may still use it. (A DeviceMemoryPool the application makes keeps PyCUDA's
// rules: the rule above for every block.)
//
// Memory short. When an allocation finds the device full (Buffer::allocate, and so the pools'
// own blocks), the pools of every queue of the context free the blocks they hold on that device,
// each after its queue's work there is done, and the allocation is tried once more before it
// raises MemoryError. An array's block is rounded up to its bin (at most a quarter more): when
// even that fails, the array gets exactly its bytes from a plain allocation (not past a limit
// set on the pool: set_limit() caps results and temporaries together).
SKEIN_EXPORT DeviceMemoryPool temporaries_pool(const Queue& queue);

}  // namespace skein

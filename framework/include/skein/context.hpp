// SPDX-License-Identifier: BSD-3-Clause
// A context over one or several devices of one platform.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "skein/device.hpp"
#include "skein/export.hpp"

namespace skein {

namespace detail {
class ContextAdapter;
struct ImplAccess;
}  // namespace detail

// Some devices of one platform that work together; a cheap handle (copies are the same context).
// Threads: a Context and its copies may be used from any number of threads at once: its program
// cache, BLAS handles and CUDA event pool are locked, and on CUDA each call makes the device's
// context current for its own duration (pushed and popped when it is not), so no thread needs to
// make one current. deactivate() acts on the calling thread's stack of current CUDA contexts only.
// ---- driver rows (PyCUDA's make_context flags, push / pop, Context.synchronize) --------------
// How a host thread waits for a device (PyCUDA's ctx_flags.SCHED_*, CUDA's CU_CTX_SCHED_*).
enum class ContextScheduling {
  automatic,      // CU_CTX_SCHED_AUTO: the driver picks (spin while CPUs are spare, else yield)
  spin,           // CU_CTX_SCHED_SPIN: busy-waits: least latency, a CPU core busy meanwhile
  yield,          // CU_CTX_SCHED_YIELD: spins, yielding the CPU to other threads between checks
  blocking_sync,  // CU_CTX_SCHED_BLOCKING_SYNC: sleeps on a primitive until the work is done
};
SKEIN_EXPORT const char* name(ContextScheduling scheduling);  // "blocking_sync"

// What a context is made with (PyCUDA's make_context(flags)). PyCUDA's MAP_HOST has no field:
// every Skein context maps page-locked memory (HostMemoryFlags::device_mapped) on every backend.
struct ContextFlags {
  ContextScheduling scheduling = ContextScheduling::automatic;
};
// ---- end of driver rows --------------------------------------------------------------------

class SKEIN_EXPORT Context {
 public:
  static Context from_devices(std::span<const Device> devices);
  static Context from_devices(const Device& device) { return from_devices(std::span(&device, 1)); }
  // Selects `devices_num` devices with select_devices() and makes a context of them.
  static Context from_criteria(const Api& api, std::size_t devices_num = 1,
                               const DeviceFilter& filter = {});

  Api api() const;
  Platform platform() const;
  const std::vector<Device>& devices() const;
  std::size_t num_devices() const { return devices().size(); }
  const Device& device(std::size_t device_idx) const;

  // CUDA: makes sure none of this context's CUDA contexts is left current on this thread.
  // Other APIs: nothing to do.
  void deactivate() const;

  // Whether arrays made without an allocator (Array::empty, zeros, from_host, and the results of
  // Skein's calls: reductions, astype, copy, take, concatenate, ...) take their memory from their
  // queue's pool, freed in the queue's order (temporaries_pool() in skein/memory_pool.hpp says
  // when a block is reused, and the rule for arrays used on another queue). On by default, and
  // read from SKEIN_ARRAY_POOL when the context is made (0: off; a bad value raises LogicError
  // there). Off: such arrays get plain allocations (Buffer::allocate), for codes that manage
  // memory themselves; Skein's temporaries still come from the queue's pool. A change applies to
  // arrays made afterwards, on every queue of the context and from every thread.
  void set_array_pool(bool on) const;
  bool array_pool() const;

  // ---- driver rows (PyCUDA's make_context flags, push / pop, Context.synchronize) ------------
  // A context with flags. CUDA: the devices' primary contexts (those of the CUDA runtime, as
  // from_devices(devices) makes) get the scheduling (cuDevicePrimaryCtxSetFlags), which every
  // Skein context and library over the same device then shares until it is set again. OpenCL has
  // no scheduling setting (its driver decides how clFinish waits): any but automatic raises
  // LogicError there.
  static Context from_devices(std::span<const Device> devices, const ContextFlags& flags);
  // The scheduling of one device's CUDA context (cuCtxGetFlags); automatic on OpenCL.
  ContextScheduling scheduling(std::size_t device_idx) const;
  // PyCUDA's Context.push(): makes the device's CUDA context current on the calling thread
  // (cuCtxPushCurrent), for the application's own CUDA runtime or driver calls; Skein's calls
  // never need it. Context::pop() undoes it. OpenCL has no current context: both do nothing.
  // LogicError for a device index outside the context.
  void push(std::size_t device_idx = 0) const;
  // PyCUDA's Context.pop(): pops the calling thread's current CUDA context (cuCtxPopCurrent),
  // which must be one of this context's (LogicError naming the current one otherwise, nothing
  // popped). PyCUDA's Context.detach() has no call: a Context is released when its last copy is
  // destroyed.
  void pop() const;
  // PyCUDA's Context.synchronize(): blocks until all work on every device of the context is done:
  // CUDA: cuCtxSynchronize of each device's context (every stream of it, the application's too);
  // OpenCL: clFinish of every command queue made for this context (Skein's queues and those over
  // the application's, opencl::queue_from_native) that exists now.
  void synchronize() const;
  // ---- end of driver rows ------------------------------------------------------------------

  friend bool operator==(const Context& a, const Context& b) { return a.impl_ == b.impl_; }

  struct Impl;
  explicit Context(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

 private:
  friend struct detail::ImplAccess;
  const std::shared_ptr<Impl>& impl() const { return impl_; }
  std::shared_ptr<Impl> impl_;
};

}  // namespace skein

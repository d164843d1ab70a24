// SPDX-License-Identifier: BSD-3-Clause
// A context over one or several devices of one platform.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
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

// --- Default contexts and context caches (ctxtools) ---------------------------------------------
// PyCUDA's tools.make_default_context and clear_context_caches, pygpu's get_default_context and
// set_default_context. Per-context memoisation (PyCUDA's context_dependent_memoize) is
// skein::ContextMemo, in skein/context_memo.hpp.

// A context on one device: the first of `api`'s devices (every available API's when not given,
// CUDA first; platforms and devices in their order; only those `filter` lets through) on which a
// context can be made. A device whose context creation fails (the backend refuses it: a CUDA
// device that is busy in exclusive-process mode or prohibited, out of memory, unavailable) is
// passed over for the next one; the failure goes to the log at the warn level. Throws
// RuntimeError when no device succeeds, listing every device tried with its error, and LogicError
// when no device matches the filter (the message names the filter). A LogicError that Skein
// raises without a backend's code while making the context (a bad SKEIN_ARRAY_POOL) is the same
// on every device and is raised at once. Unlike PyCUDA's, it reads no CUDA_DEVICE variable nor
// ~/.cuda-device: pick devices with the filter (or SKEIN_API / Runtime's placement variables in
// MPI codes).
SKEIN_EXPORT Context make_default_context(std::optional<ApiId> api = std::nullopt,
                                          const DeviceFilter& filter = {});

// The process's default context: a convenience for codes with one context (pygpu's
// set_default_context). No Skein call reads it: every call still takes its context, queue or
// array explicitly; get it with default_context() where a code wants one shared context. Setting
// it keeps that context alive until it is replaced or cleared (std::nullopt).
// Threads: both may be called from any number of threads at once (one process-wide mutex).
SKEIN_EXPORT void set_default_context(std::optional<Context> context);
// The context last set, or std::nullopt (pygpu's get_default_context).
SKEIN_EXPORT std::optional<Context> default_context();

// Empties Skein's per-context caches in every live context (PyCUDA's clear_context_caches): the
// programs loaded in each context (what Program reuses when the same source and options are
// compiled again for a device), the generated kernels of ElementwiseKernel, ReductionKernel and
// the array functions, and every ContextMemo's values. Programs, kernels and arrays that exist
// keep what they hold and stay usable. The next Program of a source is loaded anew: from the disk
// compile cache when it is on (Program::from_cache() is then true, and no compiler runs), else
// compiled (SKEIN_DISABLE_CACHE=1; from_cache() is false). The disk cache itself is left alone.
// Contexts held only by those caches (a memoised Program holds its context) are released.
// Threads: may be called while other threads use the contexts; a Program or kernel being made
// meanwhile may land in the emptied cache or not.
SKEIN_EXPORT void clear_context_caches();

// The number of programs the context holds loaded (one per device and compile key), which the
// next Program of the same source and options on that device reuses; 0 after
// clear_context_caches().
SKEIN_EXPORT std::size_t loaded_programs(const Context& context);

// pygpu's GpuContext.largest_memblock: the largest single allocation that device `device_idx` of
// the context can be asked for now, in bytes; a figure of the moment, not a promise (another
// process, context or thread may allocate meanwhile, and fragmentation may refuse less).
// CUDA: the free memory cuMemGetInfo reports (memory_info().free in skein/driver.hpp), shared with
// every process on the device. OpenCL: the device's CL_DEVICE_MAX_MEM_ALLOC_SIZE bounded by the
// estimate of free memory memory_info() gives there (the global memory less what this context's
// Buffers hold: other contexts and processes are not counted). LogicError for a bad index.
SKEIN_EXPORT std::size_t largest_allocation(const Context& context, std::size_t device_idx);

// pygpu's GpuContext.bin_id: names the binaries the device runs, so that compiled code can be
// kept per kind of device. CUDA: "sm_" and the compute capability ("sm_90" for 9.0), the
// architecture NVRTC compiles for. OpenCL: "PLATFORM VERSION / DEVICE / DRIVER VERSION" (from
// CL_PLATFORM_NAME, CL_PLATFORM_VERSION, CL_DEVICE_NAME and CL_DRIVER_VERSION), since an OpenCL
// program binary is only good for one platform, device and driver.
SKEIN_EXPORT std::string binary_id(const Device& device);

}  // namespace skein

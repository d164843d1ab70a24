// SPDX-License-Identifier: BSD-3-Clause
// Driver-level controls of a context's devices (after PyCUDA's driver module): free and total
// memory, context limits, cache configuration, queue priority ranges, peer access, and the
// profiler. Each function takes a context and the index of one of its devices; a bad index raises
// LogicError, and a backend without the feature raises LogicError saying so (see docs/guide.md,
// "Driver controls", for what each backend does).
#pragma once

#include <cstddef>

#include "skein/context.hpp"
#include "skein/export.hpp"

namespace skein {

// Device memory in bytes (PyCUDA's mem_get_info()).
struct MemoryInfo {
  std::size_t free = 0;
  std::size_t total = 0;
  // CUDA: false, `free` is the driver's (cuMemGetInfo), shared with every process on the device.
  // OpenCL: true, no standard query tells free memory: `free` is the device's global memory
  // (CL_DEVICE_GLOBAL_MEM_SIZE) less what this context's Buffers hold now; other contexts,
  // processes and the driver's own use are not counted.
  bool free_is_estimate = false;
};
SKEIN_EXPORT MemoryInfo memory_info(const Context& context, std::size_t device_idx);

// The range of queue priorities of a device, in CUDA's numbers: a lower number is more urgent, so
// `greatest` <= `least` (e.g. -5 and 0). OpenCL has no priorities: the range is {0, 0}.
struct QueuePriorityRange {
  int least = 0;
  int greatest = 0;
  friend bool operator==(const QueuePriorityRange&, const QueuePriorityRange&) = default;
};
// cuCtxGetStreamPriorityRange (PyCUDA's Context.get_stream_priority_range()).
SKEIN_EXPORT QueuePriorityRange queue_priority_range(const Context& context,
                                                     std::size_t device_idx);

// Per-context limits (CUlimit). CUDA only: the limits belong to the device's CUDA context, which
// Skein shares with the CUDA runtime and with other Skein contexts over the same device (primary
// contexts), so a change is seen by all of them.
enum class ContextLimit {
  stack_size,        // CU_LIMIT_STACK_SIZE: bytes of stack per GPU thread
  malloc_heap_size,  // CU_LIMIT_MALLOC_HEAP_SIZE: bytes of the heap of in-kernel malloc()
  printf_fifo_size,  // CU_LIMIT_PRINTF_FIFO_SIZE: bytes of the FIFO of in-kernel printf()
};
SKEIN_EXPORT const char* name(ContextLimit limit);  // "stack_size"
// cuCtxGetLimit / cuCtxSetLimit (PyCUDA's Context.get_limit / set_limit). The driver may round a
// value up (read it back with get_limit); a value it refuses raises an Error naming the limit,
// the value and the device, and leaves the limit as it was.
SKEIN_EXPORT std::size_t get_limit(const Context& context, std::size_t device_idx,
                                   ContextLimit limit);
SKEIN_EXPORT void set_limit(const Context& context, std::size_t device_idx, ContextLimit limit,
                            std::size_t value);

// The preferred split of on-chip memory between L1 cache and shared (local) memory (CUfunc_cache).
// CUDA only; a preference the driver may ignore where the split is fixed. Shared with the CUDA
// runtime and other contexts over the same device, as the limits are.
enum class CacheConfig { prefer_none, prefer_shared, prefer_l1, prefer_equal };
SKEIN_EXPORT const char* name(CacheConfig config);  // "prefer_shared"
// cuCtxGetCacheConfig / cuCtxSetCacheConfig (PyCUDA's Context.get_cache_config / set_cache_config).
// For one kernel, Kernel::set_cache_config (PyCUDA's Function.set_cache_config), whose preference
// wins over the context's for that kernel.
SKEIN_EXPORT CacheConfig get_cache_config(const Context& context, std::size_t device_idx);
SKEIN_EXPORT void set_cache_config(const Context& context, std::size_t device_idx,
                                   CacheConfig config);

// The width of shared memory banks (CUsharedconfig, PyCUDA's shared_config), for
// Kernel::set_shared_config. Devices since Maxwell have 4-byte banks only.
enum class SharedConfig { default_bank_size, four_byte_bank_size, eight_byte_bank_size };
SKEIN_EXPORT const char* name(SharedConfig config);  // "four_byte_bank_size"

// Peer access: whether kernels of device `from` can read and write memory allocated on device
// `to` (Skein turns it on for every pair that can when it makes a context; copies between devices
// work either way, staged through the host without it).
// cuDeviceCanAccessPeer (PyCUDA's Device.can_access_peer): whether the hardware allows it.
// OpenCL: true for any two devices of a context (its buffers belong to the whole context).
SKEIN_EXPORT bool can_access_peer(const Context& context, std::size_t from, std::size_t to);
// Whether it is on now (what kernel launches check before a device reads another's Buffer).
SKEIN_EXPORT bool peer_access_enabled(const Context& context, std::size_t from, std::size_t to);
// cuCtxEnablePeerAccess / cuCtxDisablePeerAccess (PyCUDA's Context.enable_peer_access /
// disable_peer_access). Enabling a pair the hardware cannot connect, or naming one device twice,
// raises LogicError; enabling an enabled pair or disabling a disabled one does nothing. CUDA:
// the setting belongs to the device's CUDA context (shared as the limits are). OpenCL: enabling
// does nothing (always on); disabling raises LogicError (OpenCL cannot turn it off).
SKEIN_EXPORT void enable_peer_access(const Context& context, std::size_t from, std::size_t to);
SKEIN_EXPORT void disable_peer_access(const Context& context, std::size_t from, std::size_t to);

// The profiler's collection (cuProfilerStart / cuProfilerStop, PyCUDA's start_profiler /
// stop_profiler), for every device of the context: with `nsys profile
// --capture-range=cudaProfilerApi` or `ncu --profile-from-start off`, only the work between them is
// recorded. OpenCL: nothing to do (no such call exists), so both return at once.
SKEIN_EXPORT void start_profiler(const Context& context);
SKEIN_EXPORT void stop_profiler(const Context& context);

// A named range on the profiler's timeline (NVTX, in the "Skein" domain, where Skein's own ranges
// are: collectives, kernel launches, HDF5 writes, checkpoints), from construction to destruction,
// on the calling thread. Costs next to nothing when no profiler is attached, and nothing at all
// in a build without the CUDA toolkit. `name` is copied by the profiler at once.
class SKEIN_EXPORT ProfileRange {
 public:
  explicit ProfileRange(const char* name) noexcept;
  ~ProfileRange();
  ProfileRange(const ProfileRange&) = delete;
  ProfileRange& operator=(const ProfileRange&) = delete;

 private:
  bool pushed_ = false;
};

}  // namespace skein

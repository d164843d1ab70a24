// SPDX-License-Identifier: BSD-3-Clause
// Device metadata and occupancy (after PyCUDA's pycuda.tools.DeviceData and OccupancyRecord): how
// many blocks of a kernel can be resident on one multiprocessor of a CUDA device at once, and
// which resource runs out first. The arithmetic is the CUDA occupancy calculator's, so that the
// numbers agree with cuOccupancyMaxActiveBlocksPerMultiprocessor.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "skein/device.hpp"
#include "skein/device_parameters.hpp"
#include "skein/export.hpp"
#include "skein/program.hpp"

namespace skein {

// The limits of one CUDA device that decide occupancy, and the alignments that make global memory
// accesses coalesce. "MP" is a multiprocessor (SM), "block" a thread block (work group).
class SKEIN_EXPORT DeviceData {
 public:
  // The device's limits, as its backend reports them. LogicError for a device that is not a CUDA
  // device (the other backends do not report the per-multiprocessor limits).
  explicit DeviceData(const Device& device);
  // From numbers (a DeviceParameters filled as the CUDA backend fills it: compute_capability,
  // warp_size, max_total_local_size and the *_per_compute_unit / *_per_group fields), for devices
  // that are not at hand. LogicError when one of them is missing.
  explicit DeviceData(const DeviceParameters& params);

  std::pair<int, int> compute_capability() const { return compute_capability_; }
  std::size_t multiprocessors() const { return multiprocessors_; }

  // Threads per block.
  std::size_t max_threads() const { return max_threads_; }
  std::size_t warp_size() const { return warp_size_; }
  // Resident warps and blocks per MP.
  std::size_t warps_per_mp() const { return warps_per_mp_; }
  std::size_t thread_blocks_per_mp() const { return thread_blocks_per_mp_; }
  // 32-bit registers per MP, and at most per block.
  std::size_t registers() const { return registers_; }
  std::size_t registers_per_block() const { return registers_per_block_; }
  // Shared memory per MP, and at most per block (with the kernel opted in to more than the
  // default 48 KiB), in bytes.
  std::size_t shared_memory() const { return shared_memory_; }
  std::size_t shared_memory_per_block() const { return shared_memory_per_block_; }

  // Threads whose shared memory accesses are served together, and so contend for banks: a whole
  // warp on every architecture since Fermi (half a warp before).
  std::size_t smem_granularity() const { return smem_granularity_; }
  // Bytes in which shared memory is given to a block: a block's use is rounded up to this.
  std::size_t smem_alloc_granularity() const { return smem_alloc_granularity_; }
  // Shared memory the driver keeps for itself in every block (1 KiB since sm_80), on top of the
  // kernel's.
  std::size_t smem_reserved_per_block() const { return smem_reserved_per_block_; }
  // Registers are given to each warp separately, in units of this many (regs/thread * warp size
  // rounded up).
  std::size_t register_allocation_unit() const { return register_allocation_unit_; }
  // The register file is split evenly among this many sub-partitions (one per warp scheduler) and
  // a warp takes all its registers from one; so a count of warps that registers allow is a
  // multiple of it.
  std::size_t warp_allocation_granularity() const { return warp_allocation_granularity_; }
  // Registers one thread can address.
  std::size_t max_registers_per_thread() const { return max_registers_per_thread_; }

  // The alignment (bytes) of a base address from which a warp reading consecutive words of
  // `word_size` bytes touches the fewest memory transactions: a warp's span of words, at most one
  // 128-byte cache line. Word sizes: 1, 2, 4, 8, 16 (LogicError otherwise).
  std::size_t align_bytes(std::size_t word_size = 4) const;
  // `bytes` rounded up to a multiple of align_bytes(word_size).
  std::size_t align(std::size_t bytes, std::size_t word_size = 4) const;
  // align_bytes(word_size) in words of that size.
  std::size_t align_words(std::size_t word_size) const;
  // `elements` of `dtype_size` bytes each, rounded up so that the next row starts aligned.
  std::size_t align_dtype(std::size_t elements, std::size_t dtype_size) const;

 private:
  // `where` names the device in error messages.
  DeviceData(const DeviceParameters& params, const std::string& where);

  std::pair<int, int> compute_capability_{0, 0};
  std::size_t multiprocessors_ = 0;
  std::size_t max_threads_ = 0;
  std::size_t warp_size_ = 0;
  std::size_t warps_per_mp_ = 0;
  std::size_t thread_blocks_per_mp_ = 0;
  std::size_t registers_ = 0;
  std::size_t registers_per_block_ = 0;
  std::size_t shared_memory_ = 0;
  std::size_t shared_memory_per_block_ = 0;
  std::size_t smem_granularity_ = 0;
  std::size_t smem_alloc_granularity_ = 0;
  std::size_t smem_reserved_per_block_ = 0;
  std::size_t register_allocation_unit_ = 0;
  std::size_t warp_allocation_granularity_ = 0;
  std::size_t max_registers_per_thread_ = 0;
};

// What stops more blocks from being resident on an MP. When several limits give the same count,
// the first of this order is named: a limit of the device (blocks, then warps) before one a kernel
// could change (registers, then shared memory), since using less of the latter would not help.
enum class OccupancyLimit {
  device,  // the MP's limit on resident blocks
  warps,   // the MP's limit on resident warps (threads)
  regs,    // the register file
  smem,    // shared memory
};
// "device", "warps", "regs", "smem".
SKEIN_EXPORT std::string_view name(OccupancyLimit limit);

// The occupancy of a kernel launched with blocks of `threads` threads, each block using
// `shared_mem` bytes of shared memory (static and dynamic together) and each thread `registers`
// registers (0: not known, no limit). LogicError when one block could not run at all: no threads
// or more than max_threads(), more registers than a thread or a block can have, more shared memory
// than a block can have.
struct SKEIN_EXPORT OccupancyRecord {
  OccupancyRecord(const DeviceData& devdata, std::size_t threads, std::size_t shared_mem = 0,
                  std::size_t registers = 0);

  std::size_t tb_per_mp = 0;  // resident blocks per MP
  OccupancyLimit limited_by = OccupancyLimit::device;
  std::size_t warps_per_mp = 0;  // resident warps per MP
  double occupancy = 0.0;        // warps_per_mp / DeviceData::warps_per_mp(): 0 to 1
  // What one block is given (after rounding up to the allocation units).
  std::size_t registers_per_block = 0;
  std::size_t shared_memory_per_block = 0;  // with the driver's reserved part
};

// The occupancy of a compiled kernel on one device of its program (an index in the program's
// context), from the registers and static shared memory the compiler gave it, with blocks of
// `threads` threads and `local_mem` of dynamic shared memory each (as given to Kernel::prepare).
// LogicError for a device that is not a CUDA device, or when the kernel cannot run such blocks.
SKEIN_EXPORT OccupancyRecord occupancy(const Kernel& kernel, std::size_t device_idx,
                                       std::size_t threads, LocalMem local_mem = {});

}  // namespace skein

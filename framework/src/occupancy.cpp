// SPDX-License-Identifier: BSD-3-Clause
#include "skein/occupancy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "skein/detail/errors.hpp"
#include "skein/api.hpp"
#include "skein/context.hpp"
#include "skein/platform.hpp"
#include "skein/program.hpp"
#include "arithmetic.hpp"

namespace skein {

namespace {

using detail::round_up;

[[noreturn]] void raise_logic(std::string location, std::string where, std::string what,
                              std::string hint) {
  throw LogicError(ErrorInfo{.what = std::move(what),
                             .call = "DeviceData",
                             .device = std::move(where),
                             .hint = std::move(hint),
                             .location = std::move(location)});
}

// The largest cache line a warp's access is split into: global memory is read in 128-byte lines
// (made of 32-byte sectors) on every architecture since Fermi.
constexpr std::size_t kCacheLine = 128;

}  // namespace

DeviceData::DeviceData(const Device& device)
    : DeviceData(
          [&]() -> const DeviceParameters& {
            if (device.platform().api().id() != ApiId::cuda) {
              raise_logic(SKEIN_HERE, "",
                          fmt::format("DeviceData describes CUDA devices; {} is not one",
                                      device.description()),
                          "Occupancy is computed from limits only the CUDA backend reports.");
            }
            return device.params();
          }(),
          device.description()) {}

DeviceData::DeviceData(const DeviceParameters& params)
    : DeviceData(params, params.name.empty() ? std::string("the described device") : params.name) {}

DeviceData::DeviceData(const DeviceParameters& p, const std::string& where) {
  auto need = [&](std::size_t value, const char* field) {
    if (value == 0) {
      raise_logic(SKEIN_HERE, where, fmt::format("DeviceParameters::{} is not known", field),
                  "DeviceData needs the limits a CUDA device reports.");
    }
    return value;
  };
  if (!p.compute_capability) {
    raise_logic(SKEIN_HERE, where, "no compute capability", "DeviceData describes CUDA devices.");
  }
  compute_capability_ = *p.compute_capability;
  const auto [major, minor] = compute_capability_;
  if (major < 3) {
    raise_logic(SKEIN_HERE, where,
                fmt::format("compute capability {}.{} is older than any this knows", major, minor),
                "Kepler (sm_30) and later are described.");
  }
  multiprocessors_ = p.compute_units;
  max_threads_ = need(p.max_total_local_size, "max_total_local_size");
  warp_size_ = need(p.warp_size, "warp_size");
  warps_per_mp_ = need(p.max_threads_per_compute_unit, "max_threads_per_compute_unit") / warp_size_;
  thread_blocks_per_mp_ = need(p.max_groups_per_compute_unit, "max_groups_per_compute_unit");
  registers_ = need(p.registers_per_compute_unit, "registers_per_compute_unit");
  registers_per_block_ = p.registers_per_group ? p.registers_per_group : registers_;
  shared_memory_ = need(p.local_mem_per_compute_unit, "local_mem_per_compute_unit");
  shared_memory_per_block_ = p.local_mem_per_group_optin ? p.local_mem_per_group_optin
                                                         : need(p.local_mem_size, "local_mem_size");

  // The architecture's allocation rules are not device attributes; these are the values of the
  // CUDA Toolkit's occupancy calculator (include/cuda_occupancy.h:
  // cudaOccSMemAllocationGranularity, cudaOccRegAllocationGranularity,
  // cudaOccSubPartitionsPerMultiprocessor, and the driver's reservedSharedMemPerBlock), which are
  // also the rows of NVIDIA's Occupancy Calculator spreadsheet and of the "Compute Capabilities"
  // table of the CUDA C++ Programming Guide. Architectures newer than sm_12x are assumed to keep
  // the latest rules.
  smem_granularity_ = warp_size_;
  smem_alloc_granularity_ = major >= 8 ? 128 : 256;
  // cudaDeviceProp::reservedSharedMemPerBlock: 1 KiB on sm_80 and later, none before.
  smem_reserved_per_block_ = major >= 8 ? 1024 : 0;
  register_allocation_unit_ = 256;
  // GP100 (sm_60) has two sub-partitions per SM; every other architecture since Kepler four.
  warp_allocation_granularity_ = (major == 6 && minor == 0) ? 2 : 4;
  // The instruction set addresses 255 registers per thread (R0..R254; R255 reads as zero).
  max_registers_per_thread_ = 255;
}

std::size_t DeviceData::align_bytes(std::size_t word_size) const {
  if (word_size != 1 && word_size != 2 && word_size != 4 && word_size != 8 && word_size != 16) {
    detail::raise_in(SKEIN_HERE, "DeviceData::align_bytes", "Use 1, 2, 4, 8 or 16.",
                     "no coalescing alignment for words of {} bytes", word_size);
  }
  // A warp reading consecutive words covers warp_size * word_size bytes; starting that span on a
  // multiple of its size (up to a cache line) makes it touch the fewest lines and sectors.
  return std::min(warp_size_ * word_size, kCacheLine);
}

std::size_t DeviceData::align(std::size_t bytes, std::size_t word_size) const {
  return round_up(bytes, align_bytes(word_size));
}

std::size_t DeviceData::align_words(std::size_t word_size) const {
  const std::size_t bytes = align_bytes(word_size);
  if (bytes % word_size != 0) {
    // Cannot happen for the word sizes align_bytes accepts; kept as PyCUDA's check.
    detail::raise_in(SKEIN_HERE, "DeviceData::align_words", "",
                     "alignment of {} bytes is not a whole number of {}-byte words", bytes,
                     word_size);
  }
  return bytes / word_size;
}

std::size_t DeviceData::align_dtype(std::size_t elements, std::size_t dtype_size) const {
  return round_up(elements, align_words(dtype_size));
}

std::string_view name(OccupancyLimit limit) {
  switch (limit) {
    case OccupancyLimit::device: return "device";
    case OccupancyLimit::warps: return "warps";
    case OccupancyLimit::regs: return "regs";
    case OccupancyLimit::smem: return "smem";
  }
  return "unknown";
}

OccupancyRecord::OccupancyRecord(const DeviceData& dev, std::size_t threads, std::size_t shared_mem,
                                 std::size_t registers) {
  const char* call = "OccupancyRecord";
  if (threads == 0 || threads > dev.max_threads()) {
    detail::raise_in(SKEIN_HERE, call, "",
                     "a block of {} threads cannot run: blocks have 1 to {} threads", threads,
                     dev.max_threads());
  }
  // Warps are the unit of scheduling: a partial warp takes a whole warp's slot.
  const std::size_t warps = (threads + dev.warp_size() - 1) / dev.warp_size();

  // Candidates in the order that decides ties (see OccupancyLimit).
  constexpr std::size_t kNoLimit = static_cast<std::size_t>(-1);
  std::array<std::pair<std::size_t, OccupancyLimit>, 4> limits = {{
      {dev.thread_blocks_per_mp(), OccupancyLimit::device},
      {dev.warps_per_mp() / warps, OccupancyLimit::warps},
      {kNoLimit, OccupancyLimit::regs},
      {kNoLimit, OccupancyLimit::smem},
  }};

  if (registers > 0) {
    if (registers > dev.max_registers_per_thread()) {
      detail::raise_in(SKEIN_HERE, call, "",
                       "{} registers per thread is more than the {} a thread can have", registers,
                       dev.max_registers_per_thread());
    }
    // Each warp gets its registers in whole allocation units.
    const std::size_t per_warp =
        round_up(registers * dev.warp_size(), dev.register_allocation_unit());
    registers_per_block = per_warp * warps;
    // The launch check of the hardware counts the block's warps as if spread over all
    // sub-partitions at once, i.e. rounded up to a multiple of them.
    const std::size_t checked = per_warp * round_up(warps, dev.warp_allocation_granularity());
    if (std::max(registers_per_block, checked) > dev.registers_per_block()) {
      detail::raise_in(SKEIN_HERE, call, "Use fewer threads per block or fewer registers.",
                       "a block of {} threads with {} registers each needs {} registers; a block "
                       "can have {}",
                       threads, registers, std::max(registers_per_block, checked),
                       dev.registers_per_block());
    }
    // Warps take their registers within one sub-partition: count the warps that fit in each.
    const std::size_t sub_partitions = dev.warp_allocation_granularity();
    const std::size_t warps_by_regs = dev.registers() / sub_partitions / per_warp * sub_partitions;
    limits[2].first = warps_by_regs / warps;
  }

  if (shared_mem > dev.shared_memory_per_block()) {
    detail::raise_in(SKEIN_HERE, call, "",
                     "{} bytes of shared memory per block is more than the {} a block can have",
                     shared_mem, dev.shared_memory_per_block());
  }
  shared_memory_per_block =
      round_up(shared_mem + dev.smem_reserved_per_block(), dev.smem_alloc_granularity());
  if (shared_memory_per_block > dev.shared_memory()) {
    detail::raise_in(SKEIN_HERE, call, "",
                     "a block needs {} bytes of shared memory (with the driver's reserved part); "
                     "a multiprocessor has {}",
                     shared_memory_per_block, dev.shared_memory());
  }
  if (shared_memory_per_block > 0) limits[3].first = dev.shared_memory() / shared_memory_per_block;

  const auto best =
      std::min_element(limits.begin(), limits.end(), [](const auto& a, const auto& b) {
        return a.first < b.first;  // strict: the first of equal counts wins
      });
  tb_per_mp = best->first;
  limited_by = best->second;
  if (tb_per_mp == 0) {
    // Only when a device reports fewer registers per MP than per block; no block fits.
    detail::raise_in(SKEIN_HERE, call, "", "no block of {} threads fits on a multiprocessor ({})",
                     threads, name(limited_by));
  }
  warps_per_mp = tb_per_mp * warps;
  occupancy = static_cast<double>(warps_per_mp) / static_cast<double>(dev.warps_per_mp());
}

OccupancyRecord occupancy(const Kernel& kernel, std::size_t device_idx, std::size_t threads,
                          LocalMem local_mem) {
  // attributes() checks that the kernel was compiled for this device.
  const KernelAttributes attributes = kernel.attributes(device_idx);
  const DeviceData dev(kernel.program().context().device(device_idx));
  if (attributes.max_total_local_size != 0 && threads > attributes.max_total_local_size) {
    detail::raise_in(SKEIN_HERE, "occupancy",
                     "Its registers (or launch bounds) limit the block size.",
                     "kernel '{}' runs blocks of at most {} threads on device {}, not {}",
                     kernel.name(), attributes.max_total_local_size, device_idx, threads);
  }
  return OccupancyRecord(dev, threads, attributes.local_mem_size + local_mem.bytes,
                         attributes.registers);
}

}  // namespace skein

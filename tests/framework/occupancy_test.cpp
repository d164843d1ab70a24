// SPDX-License-Identifier: BSD-3-Clause
// Device metadata and occupancy: the calculation against numbers worked out by hand for an H100
// (and a few rules of older architectures), on every machine; and on CUDA devices against the
// driver's own cuOccupancyMaxActiveBlocksPerMultiprocessor for real kernels.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <optional>
#include <skein/occupancy.hpp>
#include <skein/program.hpp>
#include <skein/skein.hpp>
#include <string>

#include "backends.hpp"

#if SKEIN_HAS_CUDA
#include <cuda.h>

#include <skein/cuda.hpp>
#endif

namespace skein::test {
namespace {
namespace occupancy_test {

// What the CUDA backend reports for an H100 SXM (sm_90): the limits of the "Compute Capabilities"
// table of the CUDA C++ Programming Guide.
DeviceParameters h100() {
  DeviceParameters p;
  p.type = DeviceType::gpu;
  p.name = "NVIDIA H100 80GB HBM3";
  p.compute_capability = std::pair{9, 0};
  p.compute_units = 132;
  p.warp_size = 32;
  p.max_total_local_size = 1024;
  p.local_mem_size = 48 * 1024;
  p.max_threads_per_compute_unit = 2048;
  p.max_groups_per_compute_unit = 32;
  p.registers_per_compute_unit = 65536;
  p.registers_per_group = 65536;
  p.local_mem_per_compute_unit = 228 * 1024;
  p.local_mem_per_group_optin = 227 * 1024;
  return p;
}

// sm_75 (Turing, e.g. T4): half the warps and blocks of an SM, 64 KiB of shared memory, the older
// 256-byte allocation unit and no reserved shared memory.
DeviceParameters turing() {
  DeviceParameters p = h100();
  p.name = "Tesla T4";
  p.compute_capability = std::pair{7, 5};
  p.compute_units = 40;
  p.max_threads_per_compute_unit = 1024;
  p.max_groups_per_compute_unit = 16;
  p.local_mem_per_compute_unit = 64 * 1024;
  p.local_mem_per_group_optin = 64 * 1024;
  return p;
}

struct Expected {
  std::size_t tb_per_mp;
  OccupancyLimit limited_by;
  std::size_t warps_per_mp;
  double occupancy;
};

void expect_record(const DeviceData& dev, std::size_t threads, std::size_t smem, std::size_t regs,
                   const Expected& e) {
  SCOPED_TRACE(testing::Message() << threads << " threads, " << smem << " B smem, " << regs
                                  << " regs");
  const OccupancyRecord r(dev, threads, smem, regs);
  EXPECT_EQ(r.tb_per_mp, e.tb_per_mp);
  EXPECT_EQ(name(r.limited_by), name(e.limited_by));
  EXPECT_EQ(r.warps_per_mp, e.warps_per_mp);
  EXPECT_DOUBLE_EQ(r.occupancy, e.occupancy);
}

TEST(Occupancy, DeviceDataOfAnH100) {
  const DeviceData dev(h100());
  EXPECT_EQ(dev.compute_capability(), (std::pair{9, 0}));
  EXPECT_EQ(dev.multiprocessors(), 132u);
  EXPECT_EQ(dev.max_threads(), 1024u);
  EXPECT_EQ(dev.warp_size(), 32u);
  EXPECT_EQ(dev.warps_per_mp(), 64u);  // 2048 / 32
  EXPECT_EQ(dev.thread_blocks_per_mp(), 32u);
  EXPECT_EQ(dev.registers(), 65536u);
  EXPECT_EQ(dev.registers_per_block(), 65536u);
  EXPECT_EQ(dev.shared_memory(), 233472u);            // 228 KiB
  EXPECT_EQ(dev.shared_memory_per_block(), 232448u);  // 227 KiB, opted in
  EXPECT_EQ(dev.smem_granularity(), 32u);
  EXPECT_EQ(dev.smem_alloc_granularity(), 128u);
  EXPECT_EQ(dev.smem_reserved_per_block(), 1024u);
  EXPECT_EQ(dev.register_allocation_unit(), 256u);
  EXPECT_EQ(dev.warp_allocation_granularity(), 4u);
  EXPECT_EQ(dev.max_registers_per_thread(), 255u);

  const DeviceData old(turing());
  EXPECT_EQ(old.warps_per_mp(), 32u);
  EXPECT_EQ(old.smem_alloc_granularity(), 256u);
  EXPECT_EQ(old.smem_reserved_per_block(), 0u);
  // Without an opt-in limit, a block has the default per-block shared memory.
  auto p = h100();
  p.local_mem_per_group_optin = 0;
  EXPECT_EQ(DeviceData(p).shared_memory_per_block(), 49152u);
  p.registers_per_group = 0;
  EXPECT_EQ(DeviceData(p).registers_per_block(), 65536u);
}

TEST(Occupancy, DeviceDataNeedsTheCudaLimits) {
  // What the OpenCL backend reports: no per-multiprocessor limits.
  auto p = h100();
  p.max_threads_per_compute_unit = 0;
  try {
    DeviceData{p};
    FAIL();
  } catch (const LogicError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("max_threads_per_compute_unit"), std::string::npos) << what;
    EXPECT_NE(what.find("NVIDIA H100"), std::string::npos) << what;
  }
  p = h100();
  p.compute_capability.reset();
  EXPECT_THROW(DeviceData{p}, LogicError);
  p = h100();
  p.compute_capability = std::pair{2, 0};
  EXPECT_THROW(DeviceData{p}, LogicError);
}

TEST(Occupancy, AlignmentForCoalescing) {
  const DeviceData dev(h100());
  // A warp's 32 words, up to one 128-byte line.
  EXPECT_EQ(dev.align_bytes(), 128u);
  EXPECT_EQ(dev.align_bytes(1), 32u);
  EXPECT_EQ(dev.align_bytes(2), 64u);
  EXPECT_EQ(dev.align_bytes(4), 128u);
  EXPECT_EQ(dev.align_bytes(8), 128u);
  EXPECT_EQ(dev.align_bytes(16), 128u);
  EXPECT_THROW(dev.align_bytes(3), LogicError);
  EXPECT_THROW(dev.align_bytes(0), LogicError);
  EXPECT_THROW(dev.align_bytes(32), LogicError);

  EXPECT_EQ(dev.align(0), 0u);
  EXPECT_EQ(dev.align(1), 128u);
  EXPECT_EQ(dev.align(128), 128u);
  EXPECT_EQ(dev.align(129), 256u);
  EXPECT_EQ(dev.align(129, 1), 160u);  // next multiple of 32
  EXPECT_EQ(dev.align(65, 2), 128u);   // next multiple of 64

  EXPECT_EQ(dev.align_words(1), 32u);
  EXPECT_EQ(dev.align_words(4), 32u);
  EXPECT_EQ(dev.align_words(8), 16u);
  EXPECT_EQ(dev.align_words(16), 8u);

  EXPECT_EQ(dev.align_dtype(100, 4), 128u);  // rows of 32 floats
  EXPECT_EQ(dev.align_dtype(33, 8), 48u);    // rows of 16 doubles
  EXPECT_EQ(dev.align_dtype(16, 8), 16u);
  EXPECT_EQ(dev.align_dtype(0, 4), 0u);
  EXPECT_THROW(dev.align_dtype(10, 12), LogicError);
}

// Expected values worked out by hand. H100: 64 warps, 32 blocks, 65536 registers (16384 in each
// of 4 sub-partitions), 233472 bytes of shared memory per SM; 1024 bytes reserved per block;
// shared memory in units of 128 bytes, registers in units of 256 per warp.
TEST(Occupancy, H100ByHand) {
  const DeviceData dev(h100());
  using L = OccupancyLimit;

  // 256 threads = 8 warps. Warps: 64 / 8 = 8 blocks. Registers: 32 * 32 = 1024 per warp (a
  // multiple of 256); 16384 / 1024 = 16 warps per sub-partition, 64 per SM, 64 / 8 = 8 blocks.
  // Shared memory: only the reserved 1024 bytes, 233472 / 1024 = 228 blocks. Device: 32.
  // Warps and registers tie at 8: the device limit (warps) is named. 8 * 8 = 64 of 64 warps.
  expect_record(dev, 256, 0, 32, {8, L::warps, 64, 1.0});
  {
    const OccupancyRecord r(dev, 256, 0, 32);
    EXPECT_EQ(r.registers_per_block, 8192u);      // 1024 * 8
    EXPECT_EQ(r.shared_memory_per_block, 1024u);  // the reserved part alone
  }

  // 256 threads, 64 registers: 2048 per warp; 16384 / 2048 = 8 warps per sub-partition, 32 per
  // SM; 32 / 8 = 4 blocks (warps would allow 8). 4 * 8 = 32 of 64 warps.
  expect_record(dev, 256, 0, 64, {4, L::regs, 32, 0.5});

  // 128 threads = 4 warps: warps allow 64 / 4 = 16. 48 KiB + 1 KiB reserved = 50176 bytes (392
  // units of 128); 233472 / 50176 = 4.65, so 4 blocks. 4 * 4 = 16 of 64 warps.
  expect_record(dev, 128, 48 * 1024, 0, {4, L::smem, 16, 0.25});

  // 1024 threads = 32 warps: 64 / 32 = 2 blocks, the whole SM.
  expect_record(dev, 1024, 0, 0, {2, L::warps, 64, 1.0});

  // 32 threads = 1 warp: warps would allow 64, the device allows 32 blocks: 32 of 64 warps.
  expect_record(dev, 32, 0, 0, {32, L::device, 32, 0.5});

  // 64 threads = 2 warps: warps allow 32, the device 32: a tie, the device is named.
  expect_record(dev, 64, 0, 0, {32, L::device, 64, 1.0});

  // 100 threads take 4 warps (the partial warp counts whole). 40 registers: 1280 per warp (5
  // units); 16384 / 1280 = 12.8, 12 warps per sub-partition, 48 per SM; 48 / 4 = 12 blocks
  // (warps: 16). 12 * 4 = 48 of 64 warps.
  expect_record(dev, 100, 0, 40, {12, L::regs, 48, 0.75});

  // 33 registers round up like 40: 1056 -> 1280 per warp. 256 threads: 48 / 8 = 6 blocks.
  expect_record(dev, 256, 0, 33, {6, L::regs, 48, 0.75});

  // Warps take registers within a sub-partition: 192 registers = 6144 per warp; 16384 / 6144 =
  // 2.67, 2 warps per sub-partition, 8 per SM (the whole file, 65536 / 6144 = 10.7, would say 10).
  // One-warp blocks: 8 blocks. 8 of 64 warps.
  expect_record(dev, 32, 0, 192, {8, L::regs, 8, 0.125});

  // 32 threads, 10000 bytes: 11024 with the reserved part, 11136 in units of 128 (87 * 128);
  // 233472 / 11136 = 20.97, 20 blocks (device 32, warps 64). 20 of 64 warps.
  expect_record(dev, 32, 10000, 0, {20, L::smem, 20, 0.3125});

  // The largest block allocation: 227 KiB + 1 KiB = 228 KiB, the whole SM: 1 block.
  expect_record(dev, 128, 227 * 1024, 0, {1, L::smem, 4, 0.0625});

  // 1024 threads with 64 registers: 2048 * 32 = 65536, exactly the register file: 1 block (warps
  // would allow 2); 32 of 64 warps.
  expect_record(dev, 1024, 0, 64, {1, L::regs, 32, 0.5});

  // All limits together: 512 threads (16 warps: warps allow 4), 48 registers (1536 per warp;
  // 16384 / 1536 = 10.67, 10 per sub-partition, 40 per SM: 40 / 16 = 2 blocks), 20000 bytes
  // (21024 -> 21120; 233472 / 21120 = 11). 2 * 16 = 32 of 64 warps.
  expect_record(dev, 512, 20000, 48, {2, L::regs, 32, 0.5});
}

TEST(Occupancy, OtherArchitecturesByHand) {
  using L = OccupancyLimit;
  // sm_75: 32 warps, 16 blocks, 64 KiB shared memory in units of 256, nothing reserved.
  const DeviceData t4(turing());
  // 128 threads = 4 warps: warps allow 32 / 4 = 8. 12 KiB = 12288 (48 units): 65536 / 12288 =
  // 5.33, 5 blocks. 5 * 4 = 20 of 32 warps.
  expect_record(t4, 128, 12 * 1024, 0, {5, L::smem, 20, 0.625});
  // 100 bytes take a unit of 256: 65536 / 256 = 256 blocks; 32 threads: the device's 16 blocks.
  expect_record(t4, 32, 100, 0, {16, L::device, 16, 0.5});
  // 1024 threads = 32 warps: the whole SM.
  expect_record(t4, 1024, 0, 0, {1, L::warps, 32, 1.0});

  // sm_60 (GP100): two sub-partitions of 32768 registers. 192 registers = 6144 per warp:
  // 32768 / 6144 = 5.33, 5 warps per sub-partition, 10 per SM: 10 one-warp blocks (sm_90: 8).
  auto p = h100();
  p.compute_capability = std::pair{6, 0};
  const DeviceData gp100(p);
  EXPECT_EQ(gp100.warp_allocation_granularity(), 2u);
  EXPECT_EQ(gp100.smem_alloc_granularity(), 256u);
  expect_record(gp100, 32, 0, 192, {10, L::regs, 10, 10.0 / 64});
}

TEST(Occupancy, BlocksThatCannotRun) {
  const DeviceData dev(h100());
  EXPECT_THROW(OccupancyRecord(dev, 0), LogicError);
  EXPECT_THROW(OccupancyRecord(dev, 1025), LogicError);
  // More shared memory than a block can have (227 KiB), or than the SM has.
  EXPECT_THROW(OccupancyRecord(dev, 32, 227 * 1024 + 1), LogicError);
  EXPECT_THROW(OccupancyRecord(dev, 32, 1 << 20), LogicError);
  // More registers than a thread can address.
  EXPECT_THROW(OccupancyRecord(dev, 32, 0, 256), LogicError);
  // 1024 threads with 65 registers: 2080 -> 2304 per warp, * 32 warps = 73728 > 65536.
  EXPECT_THROW(OccupancyRecord(dev, 1024, 0, 65), LogicError);
  // The hardware's check counts warps in multiples of the 4 sub-partitions: 320 threads = 10
  // warps with 192 registers need 6144 * 10 = 61440 registers, which fit, but are checked as
  // 6144 * 12 = 73728, which do not. With 8 warps, 49152 registers pass both.
  EXPECT_THROW(OccupancyRecord(dev, 320, 0, 192), LogicError);
  EXPECT_EQ(OccupancyRecord(dev, 256, 0, 192).tb_per_mp, 1u);  // 8 warps per SM / 8
  try {
    OccupancyRecord(dev, 2048);
    FAIL();
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("1024"), std::string::npos) << e.what();
  }
}

// --- against the driver, on every backend (the CUDA ones compare) -------------------------------

class Occupancies : public BackendTest {};

// Light: few registers, no shared memory (the device and warp limits decide). Heavy: 20 KiB of
// shared memory and 64 accumulators kept live across a loop. nvcc 13 gives it 72 registers on
// sm_90; there, shared memory limits blocks of 32 and 64 threads (233472 / 21504: 10 blocks),
// registers those of 128 to 512 (2304 per warp, 7 warps per sub-partition: 28 warps per SM), and
// 1024 threads cannot run. The comparison does not depend on these counts.
const char* kKernels = R"(
KERNEL void light(GLOBAL_MEM float* y, GLOBAL_MEM const float* x, int n)
{
    const int i = get_global_id(0);
    if (i < n) y[i] = 2.0f * x[i];
}

#define TILE 5120
#define ACC 64
KERNEL void heavy(GLOBAL_MEM float* out, GLOBAL_MEM const float* in, int n)
{
    LOCAL_MEM float tile[TILE];
    const int lid = get_local_id(0);
    for (int i = lid; i < TILE; i += get_local_size(0)) tile[i] = in[(get_group_id(0) * 7 + i) % n];
    LOCAL_BARRIER;
    float acc[ACC];
    #pragma unroll
    for (int k = 0; k < ACC; ++k) acc[k] = in[(lid + k * 13) % n];
    for (int r = 0; r < n; ++r) {
        const float t = tile[(lid + r * 33) % TILE];
        #pragma unroll
        for (int k = 0; k < ACC; ++k) acc[k] = acc[k] * t + acc[(k + 5) % ACC];
    }
    float s = 0.0f;
    #pragma unroll
    for (int k = 0; k < ACC; ++k) s += acc[k] * (float)(k + 1);
    out[get_global_id(0)] = s;
}
)";

TEST_P(Occupancies, DeviceDataIsForCudaDevices) {
  const auto device = devices().front();
  if (GetParam().api != ApiId::cuda) {
    try {
      DeviceData{device};
      FAIL();
    } catch (const LogicError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("CUDA devices"), std::string::npos) << what;
      EXPECT_NE(what.find(device.name()), std::string::npos) << what;
    }
    auto ctx = context();
    Program program(ctx, kKernels);
    EXPECT_THROW(occupancy(program.kernel("light"), 0, 32), LogicError);
    return;
  }
  const DeviceData dev(device);
  const auto& p = device.params();
  EXPECT_EQ(dev.compute_capability(), *p.compute_capability);
  EXPECT_EQ(dev.multiprocessors(), p.compute_units);
  EXPECT_EQ(dev.max_threads(), p.max_total_local_size);
  EXPECT_EQ(dev.warp_size(), p.warp_size);
  EXPECT_EQ(dev.warps_per_mp() * dev.warp_size(), p.max_threads_per_compute_unit);
  EXPECT_GT(dev.thread_blocks_per_mp(), 0u);
  EXPECT_GE(dev.registers(), dev.registers_per_block());
  EXPECT_GT(dev.registers_per_block(), 0u);
  EXPECT_GE(dev.shared_memory(), dev.shared_memory_per_block());
  EXPECT_GE(dev.shared_memory_per_block(), p.local_mem_size);
}

#if SKEIN_HAS_CUDA
#define SKEIN_TEST_SYMBOL_(x) #x
// The driver's exported name: cuda.h maps some names to versioned ones (cuCtxPushCurrent_v2).
#define SKEIN_TEST_SYMBOL(x) SKEIN_TEST_SYMBOL_(x)

// The driver's functions, looked up directly: tests link no driver, so that they start on machines
// without one; this runs only where the CUDA backend found one.
struct DriverFunctions {
  decltype(&::cuOccupancyMaxActiveBlocksPerMultiprocessor) max_active_blocks = nullptr;
  decltype(&::cuCtxPushCurrent) push = nullptr;
  decltype(&::cuCtxPopCurrent) pop = nullptr;
};

DriverFunctions load_driver() {
  DriverFunctions f;
  // Already loaded by Skein; this takes another reference, kept for the process's life.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return f;
  f.max_active_blocks = reinterpret_cast<decltype(f.max_active_blocks)>(
      dlsym(lib, SKEIN_TEST_SYMBOL(cuOccupancyMaxActiveBlocksPerMultiprocessor)));
  f.push = reinterpret_cast<decltype(f.push)>(dlsym(lib, SKEIN_TEST_SYMBOL(cuCtxPushCurrent)));
  f.pop = reinterpret_cast<decltype(f.pop)>(dlsym(lib, SKEIN_TEST_SYMBOL(cuCtxPopCurrent)));
  return f;
}
#undef SKEIN_TEST_SYMBOL
#undef SKEIN_TEST_SYMBOL_
#endif

TEST_P(Occupancies, AgreeWithTheDriver) {
  if (GetParam().api != ApiId::cuda) GTEST_SKIP() << "occupancy is computed for CUDA devices";
#if !SKEIN_HAS_CUDA
  GTEST_SKIP() << "built without CUDA";
#else
  const auto driver = load_driver();
  ASSERT_TRUE(driver.max_active_blocks && driver.push && driver.pop);
  auto ctx = context();
  Program program(ctx, kKernels);
  const CUcontext cu_ctx = cuda::native_context(ctx, 0);

  for (const char* kernel_name : {"light", "heavy"}) {
    const auto kernel = program.kernel(kernel_name);
    const auto attrs = kernel.attributes(0);
    const auto function = reinterpret_cast<CUfunction>(kernel.native(0));
    SCOPED_TRACE(testing::Message()
                 << kernel_name << ": " << attrs.registers << " registers, " << attrs.local_mem_size
                 << " B shared, at most " << attrs.max_total_local_size << " threads");
    if (std::string(kernel_name) == "heavy") {
      EXPECT_EQ(attrs.local_mem_size, 5120u * 4);
    }

    for (std::size_t threads : {32u, 64u, 128u, 256u, 512u, 1024u}) {
      SCOPED_TRACE(testing::Message() << threads << " threads");
      int blocks = -1;
      ASSERT_EQ(driver.push(cu_ctx), CUDA_SUCCESS);
      // Skein launches with no dynamic shared memory.
      const CUresult status =
          driver.max_active_blocks(&blocks, function, static_cast<int>(threads), 0);
      CUcontext popped = nullptr;
      ASSERT_EQ(driver.pop(&popped), CUDA_SUCCESS);

      std::optional<OccupancyRecord> ours;
      try {
        ours = occupancy(kernel, 0, threads);
      } catch (const LogicError& e) {
        // Blocks the kernel cannot run: the driver says none fit (or refuses the question).
        EXPECT_GT(threads, attrs.max_total_local_size) << e.what();
        if (status == CUDA_SUCCESS) {
          EXPECT_EQ(blocks, 0);
        }
        continue;
      }
      ASSERT_EQ(status, CUDA_SUCCESS);
      EXPECT_EQ(ours->tb_per_mp, static_cast<std::size_t>(blocks))
          << "limited by " << name(ours->limited_by);
      EXPECT_GT(ours->occupancy, 0.0);
      EXPECT_LE(ours->occupancy, 1.0);
    }
  }
#endif
}

SKEIN_INSTANTIATE_BACKENDS(Occupancies);

}  // namespace occupancy_test
}  // namespace
}  // namespace skein::test

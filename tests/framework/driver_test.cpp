// SPDX-License-Identifier: BSD-3-Clause
// Driver controls (skein/driver.hpp, HostBuffer's flags and registration, queue priorities, the
// device memory pool's limit): each checked against a host reference or the device's own report,
// on every backend present; what only CUDA has runs on CUDA and checks the refusal elsewhere.
#include <gtest/gtest.h>

#include <cstring>
#include <skein/driver.hpp>
#include <skein/skein.hpp>

#include "backends.hpp"
#include "checks.hpp"

namespace skein::test {
namespace {
namespace driver_test {

class Driver : public BackendTest {
 protected:
  bool cuda() const { return GetParam().api == ApiId::cuda; }
};

// y[i] = 3 * x[i] + 1 over n ints; and a kernel that writes i * 7 - 2 into out.
const char* kKernels = R"(
KERNEL void affine(GLOBAL_MEM int* y, GLOBAL_MEM const int* x, int n)
{
    const int i = get_global_id(0);
    if (i < n) y[i] = 3 * x[i] + 1;
}
KERNEL void iota7(GLOBAL_MEM int* out, int n)
{
    const int i = get_global_id(0);
    if (i < n) out[i] = i * 7 - 2;
}
)";

constexpr std::size_t kMiB = std::size_t{1} << 20;

// --- 1. memory information and the pool's limit ----------------------------------------------

TEST_P(Driver, MemoryInfoMatchesTheDeviceAndCountsAllocations) {
  auto ctx = context();
  const MemoryInfo before = memory_info(ctx, 0);
  EXPECT_EQ(before.total, ctx.device(0).params().global_mem_size);
  EXPECT_GT(before.free, 0u);
  EXPECT_LE(before.free, before.total);
  EXPECT_EQ(before.free_is_estimate, !cuda());
  const std::size_t size = 64 * kMiB + 12345;
  std::size_t during = 0;
  {
    auto buffer = Buffer::allocate(ctx, 0, size);
    during = memory_info(ctx, 0).free;
    if (cuda()) {
      // The driver's count, in pages: at least the bytes asked (other processes on the device
      // may change it meanwhile; the GPU suite runs alone).
      EXPECT_GE(before.free - during, size);
    } else {
      EXPECT_EQ(before.free - during, size);
    }
  }
  const MemoryInfo after = memory_info(ctx, 0);
  if (!cuda()) {
    EXPECT_EQ(after.free, before.free);
  }
  EXPECT_GT(after.free, during);
  const std::string msg = message_of([&] { memory_info(ctx, 3); });
  EXPECT_TRUE(contains(msg, "device index 3 is out of range")) << msg;
}

TEST_P(Driver, PoolLimitRefusesPastItAndFreesHeldBlocksFirst) {
  auto ctx = context();
  Queue queue(ctx);
  DeviceMemoryPool pool(ctx);
  EXPECT_FALSE(pool.limit(0).has_value());
  const std::size_t request = 600 * 1024;
  const std::size_t block = DeviceMemoryPool::alloc_size(DeviceMemoryPool::bin_number(request));
  pool.set_limit(0, kMiB);
  ASSERT_EQ(pool.limit(0), kMiB);
  auto a = pool.allocate(0, request);
  EXPECT_EQ(pool.managed_bytes(0), block);
  // Data lands in a limited pool's blocks as in any buffer.
  const auto host = random_bytes(request, 5);
  a.set(queue, std::span<const std::byte>(host));
  std::vector<std::byte> back(request);
  a.get(queue, std::span<std::byte>(back));
  EXPECT_TRUE(back == host);
  try {
    (void)pool.allocate(0, request);
    FAIL() << "a second block must pass the limit";
  } catch (const MemoryError& e) {
    EXPECT_EQ(e.requested(), block);
    EXPECT_EQ(e.available(), kMiB - block);
    EXPECT_TRUE(contains(e.what(), "limit")) << e.what();
    EXPECT_TRUE(contains(e.what(), ctx.device(0).name())) << e.what();
  }
  EXPECT_EQ(pool.managed_bytes(0), block);
  a = Buffer();  // back to the pool, held
  EXPECT_EQ(pool.held_blocks(), 1u);
  // Another bin: the held block is freed to make room under the limit.
  auto b = pool.allocate(0, 700 * 1024);
  EXPECT_EQ(pool.held_blocks(), 0u);
  EXPECT_EQ(pool.managed_bytes(0),
            DeviceMemoryPool::alloc_size(DeviceMemoryPool::bin_number(700 * 1024)));
  b = Buffer();
  pool.clear_limit(0);
  EXPECT_FALSE(pool.limit(0).has_value());

  // From free memory: the blocks held now plus the fraction of what is free.
  const std::size_t free_before = memory_info(ctx, 0).free;
  pool.set_limit_from_free_memory(0.5);
  const std::size_t free_after = memory_info(ctx, 0).free;
  const std::size_t managed = pool.managed_bytes(0);
  ASSERT_TRUE(pool.limit(0).has_value());
  EXPECT_GE(*pool.limit(0), managed + std::min(free_before, free_after) / 2 - 1);
  EXPECT_LE(*pool.limit(0), managed + std::max(free_before, free_after) / 2);
  if (!cuda()) {
    EXPECT_EQ(*pool.limit(0), managed + free_before / 2);
  }
  EXPECT_THROW(pool.set_limit_from_free_memory(0.0), LogicError);
  EXPECT_THROW(pool.set_limit_from_free_memory(1.5), LogicError);
  EXPECT_THROW(pool.set_limit(4, 1), LogicError);
}

// --- 2. host memory ----------------------------------------------------------------------------

TEST_P(Driver, RegisteredHostMemoryCarriesAsyncTransfersBothWays) {
  auto ctx = context();
  Queue queue(ctx);
  // The caller's memory, at an odd offset and of an odd size (not page-aligned).
  const std::size_t n = 3 * kMiB + 13;
  std::vector<std::byte> storage(n + 64);
  std::byte* mine = storage.data() + 3;
  {
    HostBuffer registered = HostBuffer::register_memory(ctx, mine, n);
    EXPECT_EQ(registered.data(), mine);
    EXPECT_EQ(registered.size(), n);
    EXPECT_TRUE(registered.registered());
    EXPECT_TRUE(registered.flags().portable);
    const auto reference = random_bytes(n, 11);
    std::memcpy(mine, reference.data(), n);
    auto device = Buffer::allocate(ctx, 0, n);
    device.set(queue, registered.bytes(), Sync::async);
    queue.synchronize();
    std::vector<std::byte> seen(n);
    device.get(queue, std::span<std::byte>(seen));
    EXPECT_TRUE(seen == reference);

    // Device -> the registered memory.
    const auto second = random_bytes(n, 12);
    device.set(queue, std::span<const std::byte>(second));
    device.get(queue, registered.bytes(), Sync::async);
    queue.synchronize();
    EXPECT_EQ(std::memcmp(mine, second.data(), n), 0);
    EXPECT_EQ(storage[2], std::byte{0});  // nothing written outside the range
    EXPECT_EQ(storage[n + 3], std::byte{0});
    if (cuda()) {
      // Registered once: a second registration of the range is refused while the first lives.
      const std::string msg = message_of([&] { (void)HostBuffer::register_memory(ctx, mine, n); });
      EXPECT_TRUE(contains(msg, "already page-locked")) << msg;
    }
  }
  // The registration ended with its last handle: the range can be registered again.
  HostBuffer again = HostBuffer::register_memory(ctx, mine, n);
  EXPECT_EQ(again.data(), mine);
}

TEST_P(Driver, RegistrationRefusesBadInput) {
  auto ctx = context();
  std::vector<int> data(100);
  std::string msg = message_of([&] { (void)HostBuffer::register_memory(ctx, nullptr, 64); });
  EXPECT_TRUE(contains(msg, "pointer is null")) << msg;
  EXPECT_TRUE(contains(msg, "HostBuffer::register_memory")) << msg;
  msg = message_of([&] { (void)HostBuffer::register_memory(ctx, data.data(), 0); });
  EXPECT_TRUE(contains(msg, "size is 0")) << msg;
  msg = message_of([&] {
    (void)HostBuffer::register_memory(ctx, data.data(), 400,
                                      HostMemoryFlags{.write_combined = true});
  });
  EXPECT_TRUE(contains(msg, "write-combined")) << msg;
  EXPECT_THROW(HostBuffer::register_memory(ctx, nullptr, 64), LogicError);
}

TEST_P(Driver, AllocationFlagsKeepTransfersExact) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t n = kMiB + 7;
  for (HostMemoryFlags flags : {HostMemoryFlags{}, HostMemoryFlags{.portable = false},
                                HostMemoryFlags{.write_combined = true}}) {
    SCOPED_TRACE(
        fmt::format("portable {} write_combined {}", flags.portable, flags.write_combined));
    auto pinned = HostBuffer::allocate(ctx, n, flags);
    EXPECT_EQ(pinned.flags(), flags);
    EXPECT_FALSE(pinned.registered());
    const auto reference = random_bytes(n, 21);
    std::memcpy(pinned.data(), reference.data(), n);
    auto device = Buffer::allocate(ctx, 0, n);
    device.set(queue, pinned.bytes(), Sync::async);
    std::vector<std::byte> seen(n);
    device.get(queue, std::span<std::byte>(seen));
    EXPECT_TRUE(seen == reference);
  }
}

TEST_P(Driver, MappedMemoryIsWrittenByKernelsThroughItsDeviceAddress) {
  auto ctx = context();
  Queue queue(ctx);
  const int n = 100003;
  const std::size_t bytes = n * sizeof(int);
  if (!cuda()) {
    std::string msg = message_of(
        [&] { (void)HostBuffer::allocate(ctx, bytes, HostMemoryFlags{.device_mapped = true}); });
    EXPECT_TRUE(contains(msg, "not supported on OpenCL")) << msg;
    std::vector<int> data(n);
    msg = message_of([&] {
      (void)HostBuffer::register_memory(ctx, data.data(), bytes,
                                        HostMemoryFlags{.device_mapped = true});
    });
    EXPECT_TRUE(contains(msg, "not supported on OpenCL")) << msg;
    return;
  }
  Program program(ctx, kKernels);
  // Allocated mapped: a kernel writes, the host reads without a copy.
  auto mapped = HostBuffer::allocate(ctx, bytes, HostMemoryFlags{.device_mapped = true});
  std::fill_n(mapped.as<int>().data(), n, -1);
  Buffer through = mapped.device_buffer(ctx, 0);
  EXPECT_EQ(through.size(), bytes);
  program.kernel("iota7")(queue, std::size_t(n), std::nullopt, through, n);
  queue.synchronize();
  const auto written = mapped.as<int>();
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += written[static_cast<std::size_t>(i)] != i * 7 - 2;
  EXPECT_EQ(wrong, 0);

  // Registered mapped: the caller's vector read by a kernel in place, the result in a Buffer.
  std::vector<int> x = random_values<int>(static_cast<std::size_t>(n), 31);
  for (auto& v : x) v %= 100000;
  auto registered =
      HostBuffer::register_memory(ctx, x.data(), bytes, HostMemoryFlags{.device_mapped = true});
  auto y = Buffer::allocate(ctx, 0, bytes);
  program.kernel("affine")(queue, std::size_t(n), std::nullopt, y, registered.device_buffer(ctx, 0),
                           n);
  std::vector<int> seen(static_cast<std::size_t>(n));
  y.get(queue, std::span<int>(seen));
  wrong = 0;
  for (int i = 0; i < n; ++i) wrong += seen[i] != 3 * x[i] + 1;
  EXPECT_EQ(wrong, 0);

  // Refusals: unmapped memory, another context's memory, a device index out of range.
  auto plain = HostBuffer::allocate(ctx, 64);
  std::string msg = message_of([&] { plain.device_buffer(ctx, 0); });
  EXPECT_TRUE(contains(msg, "not mapped")) << msg;
  auto other = context();
  msg = message_of([&] { mapped.device_buffer(other, 0); });
  EXPECT_TRUE(contains(msg, "another context")) << msg;
  msg = message_of([&] { mapped.device_buffer(ctx, 9); });
  EXPECT_TRUE(contains(msg, "device index 9")) << msg;
}

// --- 6. queues and contexts --------------------------------------------------------------------

TEST_P(Driver, QueuePrioritiesComeFromTheDeviceRange) {
  auto ctx = context();
  const QueuePriorityRange range = queue_priority_range(ctx, 0);
  if (cuda()) {
    EXPECT_LE(range.greatest, range.least);
  } else {
    EXPECT_EQ(range, QueuePriorityRange{});
  }
  Queue high(ctx, QueuePriority::high());
  Queue low(ctx, QueuePriority::low());
  Queue plain(ctx);
  EXPECT_EQ(high.priority(0), range.greatest);
  EXPECT_EQ(low.priority(0), range.least);
  EXPECT_EQ(plain.priority(0), range.least);
  Queue explicit_value(ctx, {0}, QueuePriority::value(range.greatest));
  EXPECT_EQ(explicit_value.priority(0), range.greatest);
  for (int bad : {range.greatest - 1, range.least + 1}) {
    const std::string msg = message_of([&] { Queue(ctx, QueuePriority::value(bad)); });
    EXPECT_TRUE(contains(msg, fmt::format("priority {} is outside the range", bad))) << msg;
    EXPECT_TRUE(contains(msg, ctx.device(0).name())) << msg;
  }
  // Work on a high-priority queue gives the same results.
  Program program(ctx, kKernels);
  const int n = 4099;
  const auto x = random_values<int>(n, 41);
  std::vector<int> xs(x);
  for (auto& v : xs) v %= 1000;
  auto dx = Buffer::allocate(ctx, 0, n * sizeof(int));
  auto dy = Buffer::allocate(ctx, 0, n * sizeof(int));
  dx.set(high, std::span<const int>(xs));
  program.kernel("affine")(high, std::size_t(n), std::nullopt, dy, dx, n);
  std::vector<int> seen(n);
  dy.get(high, std::span<int>(seen));
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += seen[i] != 3 * xs[i] + 1;
  EXPECT_EQ(wrong, 0);
}

TEST_P(Driver, ContextLimitsAreSetAndReadBack) {
  auto ctx = context();
  if (!cuda()) {
    for (ContextLimit limit : {ContextLimit::stack_size, ContextLimit::malloc_heap_size,
                               ContextLimit::printf_fifo_size}) {
      std::string msg = message_of([&] { get_limit(ctx, 0, limit); });
      EXPECT_TRUE(contains(msg, "not supported on OpenCL")) << msg;
      EXPECT_TRUE(contains(msg, name(limit))) << msg;
      msg = message_of([&] { set_limit(ctx, 0, limit, 4096); });
      EXPECT_TRUE(contains(msg, "not supported on OpenCL")) << msg;
    }
    return;
  }
  struct Case {
    ContextLimit limit;
    std::size_t value;
  };
  for (const Case c :
       {Case{ContextLimit::stack_size, 8192}, Case{ContextLimit::printf_fifo_size, 3 * kMiB},
        Case{ContextLimit::malloc_heap_size, 24 * kMiB}}) {
    SCOPED_TRACE(name(c.limit));
    const std::size_t old = get_limit(ctx, 0, c.limit);
    set_limit(ctx, 0, c.limit, c.value);
    const std::size_t now = get_limit(ctx, 0, c.limit);
    EXPECT_GE(now, c.value);            // the driver may round up
    EXPECT_LT(now, c.value + c.value);  // but not by much
    set_limit(ctx, 0, c.limit, old);
    EXPECT_EQ(get_limit(ctx, 0, c.limit), old);
  }
  // A stack of a TiB per thread: refused, said so, and the limit left as it was.
  const std::size_t stack = get_limit(ctx, 0, ContextLimit::stack_size);
  const std::string msg =
      message_of([&] { set_limit(ctx, 0, ContextLimit::stack_size, std::size_t{1} << 40); });
  EXPECT_TRUE(contains(msg, "refused stack_size")) << msg;
  EXPECT_TRUE(contains(msg, "cuCtxSetLimit")) << msg;
  EXPECT_EQ(get_limit(ctx, 0, ContextLimit::stack_size), stack);
  EXPECT_THROW(get_limit(ctx, 2, ContextLimit::stack_size), LogicError);
}

TEST_P(Driver, CacheConfigurationIsSetAndReadBack) {
  auto ctx = context();
  if (!cuda()) {
    const std::string msg = message_of([&] { set_cache_config(ctx, 0, CacheConfig::prefer_l1); });
    EXPECT_TRUE(contains(msg, "not supported on OpenCL")) << msg;
    EXPECT_THROW(get_cache_config(ctx, 0), LogicError);
    return;
  }
  const CacheConfig old = get_cache_config(ctx, 0);
  for (CacheConfig c : {CacheConfig::prefer_shared, CacheConfig::prefer_l1,
                        CacheConfig::prefer_equal, CacheConfig::prefer_none}) {
    SCOPED_TRACE(name(c));
    set_cache_config(ctx, 0, c);
    EXPECT_EQ(get_cache_config(ctx, 0), c);
  }
  set_cache_config(ctx, 0, old);
}

TEST_P(Driver, PeerAccessIsQueriedAndControlled) {
  SKEIN_NEED_DEVICES(2);
  auto ctx = context(2);
  Queue queue(ctx);
  EXPECT_THROW(can_access_peer(ctx, 0, 0), LogicError);
  EXPECT_THROW(enable_peer_access(ctx, 0, 2), LogicError);
  const int n = 1001;
  std::vector<int> x(n);
  for (int i = 0; i < n; ++i) x[i] = i - 500;
  auto on1 = Buffer::allocate(ctx, 1, n * sizeof(int));
  on1.set(queue, std::span<const int>(x));
  Program program(ctx, kKernels);
  Queue first(ctx, {0});
  auto y = Buffer::allocate(ctx, 0, n * sizeof(int));
  auto kernel_reads_peer = [&] {
    program.kernel("affine")(first, std::size_t(n), std::nullopt, y, on1, n);
    std::vector<int> seen(n);
    y.get(first, std::span<int>(seen));
    int wrong = 0;
    for (int i = 0; i < n; ++i) wrong += seen[i] != 3 * x[i] + 1;
    return wrong;
  };
  if (!can_access_peer(ctx, 0, 1)) {
    EXPECT_FALSE(peer_access_enabled(ctx, 0, 1));
    const std::string msg = message_of([&] { enable_peer_access(ctx, 0, 1); });
    EXPECT_TRUE(contains(msg, "cannot access")) << msg;
    GTEST_SKIP() << "devices 0 and 1 cannot access each other's memory";
  }
  EXPECT_TRUE(peer_access_enabled(ctx, 0, 1));  // on from the start
  EXPECT_EQ(kernel_reads_peer(), 0);
  if (!cuda()) {
    const std::string msg = message_of([&] { disable_peer_access(ctx, 0, 1); });
    EXPECT_TRUE(contains(msg, "cannot be turned off on OpenCL")) << msg;
    enable_peer_access(ctx, 0, 1);  // nothing to do
    EXPECT_TRUE(peer_access_enabled(ctx, 0, 1));
    return;
  }
  disable_peer_access(ctx, 0, 1);
  EXPECT_FALSE(peer_access_enabled(ctx, 0, 1));
  disable_peer_access(ctx, 0, 1);  // again: nothing to do
  const std::string msg = message_of([&] { (void)kernel_reads_peer(); });
  EXPECT_TRUE(contains(msg, "cannot access")) << msg;
  // Copies between the devices still work, staged.
  auto copy = Buffer::allocate(ctx, 0, n * sizeof(int));
  copy.set(queue, on1);
  std::vector<int> seen(n);
  copy.get(queue, std::span<int>(seen));
  EXPECT_EQ(seen, x);
  enable_peer_access(ctx, 0, 1);
  EXPECT_TRUE(peer_access_enabled(ctx, 0, 1));
  EXPECT_EQ(kernel_reads_peer(), 0);
}

// --- 7. profiling ------------------------------------------------------------------------------

TEST_P(Driver, ProfilerStartStopAndRangesLeaveResultsExact) {
  auto ctx = context();
  Queue queue(ctx);
  Program program(ctx, kKernels);
  const int n = 5003;
  auto out = Buffer::allocate(ctx, 0, n * sizeof(int));
  start_profiler(ctx);
  {
    ProfileRange outer("driver test");
    ProfileRange inner("iota7");
    program.kernel("iota7")(queue, std::size_t(n), std::nullopt, out, n);
  }
  stop_profiler(ctx);
  std::vector<int> seen(n);
  out.get(queue, std::span<int>(seen));
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += seen[i] != i * 7 - 2;
  EXPECT_EQ(wrong, 0);
}

SKEIN_INSTANTIATE_BACKENDS(Driver);

}  // namespace driver_test
}  // namespace
}  // namespace skein::test

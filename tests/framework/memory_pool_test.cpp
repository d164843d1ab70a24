// SPDX-License-Identifier: BSD-3-Clause
// Memory pools: PyCUDA's bins, exact held/active counts and bytes through allocate and free
// sequences, reuse of held blocks (the same backend allocation), sub-regions and views keeping a
// block active, free_held, stop_holding, the out-of-memory retry, data round trips through arrays
// drawn from a pool on each backend, page-locked pools, thread safety, and the error paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <skein/skein.hpp>
#include <thread>
#include <utility>
#include <vector>

#include "backends.hpp"
#include "checks.hpp"

#if SKEIN_HAS_OPENCL
#include <skein/opencl.hpp>
#endif
#if SKEIN_HAS_CUDA
#include <skein/cuda.hpp>
#endif

namespace skein::test {
namespace {
namespace memory_pool_test {

// The backend's own handle of the allocation behind a buffer (cl_mem, or the device address of
// the allocation's start): the physical identity of a block, as the application sees it.
std::uintptr_t native_allocation(const Buffer& buffer) {
  switch (buffer.context().api().id()) {
#if SKEIN_HAS_OPENCL
    case ApiId::opencl: return reinterpret_cast<std::uintptr_t>(opencl::native_mem(buffer));
#endif
#if SKEIN_HAS_CUDA
    case ApiId::cuda:
      return static_cast<std::uintptr_t>(cuda::native_pointer(buffer)) - buffer.offset();
#endif
    default: return 0;
  }
}

constexpr std::size_t kSizes[] = {0, 1, 7, 1001, 4097, (3u << 20) + 5};

std::size_t block_size(std::size_t nbytes) {
  return DeviceMemoryPool::alloc_size(DeviceMemoryPool::bin_number(nbytes));
}

MemoryPoolStatistics stats(std::size_t held_blocks, std::size_t active_blocks,
                           std::size_t held_bytes, std::size_t active_bytes,
                           std::size_t managed_bytes) {
  return {held_blocks, active_blocks, held_bytes, active_bytes, managed_bytes};
}

[[maybe_unused]] void PrintTo(const MemoryPoolStatistics& s, std::ostream* os) {
  *os << fmt::format("{{held {} blocks / {} B, active {} blocks / {} B, managed {} B}}",
                     s.held_blocks, s.held_bytes, s.active_blocks, s.active_bytes, s.managed_bytes);
}

// --- Bins (no device needed) --------------------------------------------------------------------

// The bins are checked against their definition, by brute force: a bin is the sizes that agree in
// their top bit's position and the two bits below it; a bin's block size is its largest member.
TEST(MemoryPoolBins, MatchTheirDefinitionByBruteForce) {
  auto leading = [](std::size_t s) {
    unsigned l = 0;
    while ((s >> l) > 1) ++l;
    const std::size_t top3 = l >= 2 ? s >> (l - 2) : s << (2 - l);
    return std::pair<unsigned, std::size_t>(l, top3);
  };
  std::map<std::uint32_t, std::pair<std::size_t, std::size_t>> range;  // bin -> [min, max]
  std::uint32_t previous = 0;
  for (std::size_t s = 1; s <= (1u << 16); ++s) {
    const std::uint32_t bin = DeviceMemoryPool::bin_number(s);
    ASSERT_GE(bin, previous) << s;  // monotonic
    previous = bin;
    if (s > 1) {
      // Same bin exactly when the leading bits agree.
      ASSERT_EQ(bin == DeviceMemoryPool::bin_number(s - 1), leading(s) == leading(s - 1)) << s;
    }
    auto [it, fresh] = range.try_emplace(bin, s, s);
    if (!fresh) it->second.second = s;
  }
  for (const auto& [bin, r] : range) {
    if (r.second == (1u << 16)) continue;  // the last bin is cut by the loop
    EXPECT_EQ(DeviceMemoryPool::alloc_size(bin), r.second) << "bin " << bin;
    EXPECT_LT((r.second - r.first) * 4, r.first + 4) << "bin " << bin;  // < 25% apart
  }
}

TEST(MemoryPoolBins, KnownValuesAndExtremes) {
  // Worked by hand from PyCUDA's rule.
  EXPECT_EQ(DeviceMemoryPool::bin_number(1), 0u);
  EXPECT_EQ(DeviceMemoryPool::bin_number(2), 4u);
  EXPECT_EQ(DeviceMemoryPool::bin_number(3), 6u);
  EXPECT_EQ(DeviceMemoryPool::bin_number(1000), 39u);  // exponent 9, mantissa 11b
  EXPECT_EQ(block_size(1), 1u);
  EXPECT_EQ(block_size(2), 2u);
  EXPECT_EQ(block_size(3), 3u);
  EXPECT_EQ(block_size(5), 5u);
  EXPECT_EQ(block_size(8), 9u);  // 8 = 1000b: bin [8, 9]
  EXPECT_EQ(block_size(1000), 1023u);
  EXPECT_EQ(block_size(5000), 5119u);
  EXPECT_EQ(block_size(std::size_t{1} << 20), (std::size_t{5} << 18) - 1);
  EXPECT_EQ(DeviceMemoryPool::bin_number(900), DeviceMemoryPool::bin_number(1000));
  EXPECT_NE(DeviceMemoryPool::bin_number(1023), DeviceMemoryPool::bin_number(1024));

  const std::size_t max = std::numeric_limits<std::size_t>::max();
  EXPECT_EQ(block_size(max), max);
  std::mt19937_64 gen(11);
  for (int i = 0; i < 10000; ++i) {
    const std::size_t s = gen() >> (gen() % 64);
    if (s == 0) continue;
    const std::uint32_t bin = DeviceMemoryPool::bin_number(s);
    const std::size_t a = DeviceMemoryPool::alloc_size(bin);
    ASSERT_GE(a, s);
    ASSERT_EQ(DeviceMemoryPool::bin_number(a), bin);
    // Bins are consecutive from 4 bytes on (below, 1, 2 and 3 bytes have bins 0, 4 and 6).
    if (a != max && s >= 4) {
      ASSERT_EQ(DeviceMemoryPool::bin_number(a + 1), bin + 1);
    }
  }
  EXPECT_THROW(DeviceMemoryPool::alloc_size(64u << 2), LogicError);
}

// --- Device pools -------------------------------------------------------------------------------

class MemoryPool : public BackendTest {};

// A base allocator that records the size of every real allocation and whether it is still alive,
// independently of the pool's own counts.
struct Recorder {
  std::vector<std::pair<std::weak_ptr<const void>, std::size_t>> blocks;
  std::size_t live_bytes() const {
    std::size_t n = 0;
    for (const auto& [w, size] : blocks) n += w.expired() ? 0 : size;
    return n;
  }
  std::size_t live_count() const {
    return static_cast<std::size_t>(std::count_if(
        blocks.begin(), blocks.end(), [](const auto& b) { return !b.first.expired(); }));
  }
};

Allocator recording(const Context& ctx, std::shared_ptr<Recorder> rec,
                    std::size_t limit = std::numeric_limits<std::size_t>::max()) {
  return [ctx, rec, limit](std::size_t device_idx, std::size_t nbytes) {
    const std::size_t used = rec->live_bytes();
    if (nbytes > limit - used) {
      throw MemoryError(ErrorInfo{.what = "simulated device full"}, nbytes, limit - used);
    }
    Buffer b = Buffer::allocate(ctx, device_idx, nbytes);
    rec->blocks.emplace_back(b.adapter(), nbytes);
    return b;
  };
}

TEST_P(MemoryPool, CountsHeldAndActiveBlocksAndBytesExactly) {
  auto ctx = context();
  auto rec = std::make_shared<Recorder>();
  DeviceMemoryPool pool(ctx, recording(ctx, rec));
  EXPECT_EQ(pool.statistics(), MemoryPoolStatistics{});
  {
    Buffer a = pool.allocate(0, 1000);
    EXPECT_EQ(a.size(), 1000u);
    EXPECT_EQ(a.device_idx(), 0u);
    EXPECT_EQ(rec->blocks.back().second, 1023u);  // the block is the bin's size
    EXPECT_EQ(pool.statistics(), stats(0, 1, 0, 1000, 1023));
    Buffer b = pool.allocate(0, 1000);
    Buffer c = pool.allocate(0, 5000);
    EXPECT_EQ(rec->blocks.back().second, 5119u);
    EXPECT_EQ(pool.statistics(), stats(0, 3, 0, 7000, 2 * 1023 + 5119));
    EXPECT_NE(a.adapter().get(), b.adapter().get());
    b = Buffer();
    EXPECT_EQ(pool.statistics(), stats(1, 2, 1023, 6000, 2 * 1023 + 5119));
    EXPECT_EQ(pool.held_blocks(), 1u);
    EXPECT_EQ(pool.active_blocks(), 2u);
    EXPECT_EQ(pool.held_bytes(), 1023u);
    EXPECT_EQ(pool.active_bytes(), 6000u);
    EXPECT_EQ(pool.managed_bytes(), 2 * 1023u + 5119u);
    EXPECT_EQ(rec->live_count(), 3u);  // held, not freed
  }
  EXPECT_EQ(pool.statistics(), stats(3, 0, 2 * 1023 + 5119, 0, 2 * 1023 + 5119));
  EXPECT_EQ(rec->live_count(), 3u);
  pool.free_held();
  EXPECT_EQ(pool.statistics(), MemoryPoolStatistics{});
  EXPECT_EQ(rec->live_count(), 0u);  // really freed

  // Zero bytes: an empty buffer, not counted.
  Buffer empty = pool.allocate(0, 0);
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_EQ(pool.statistics(), MemoryPoolStatistics{});
}

TEST_P(MemoryPool, ReusesHeldBlocksOfTheSameBinOnly) {
  auto ctx = context();
  auto rec = std::make_shared<Recorder>();
  DeviceMemoryPool pool(ctx, recording(ctx, rec));
  Buffer a = pool.allocate(0, 1000);
  const void* physical = a.adapter().get();
  const std::uintptr_t native = native_allocation(a);
  a = Buffer();
  EXPECT_EQ(pool.statistics(), stats(1, 0, 1023, 0, 1023));

  Buffer b = pool.allocate(0, 900);  // same bin as 1000
  EXPECT_EQ(b.adapter().get(), physical);
  EXPECT_EQ(native_allocation(b), native);
  EXPECT_EQ(b.size(), 900u);
  EXPECT_EQ(rec->blocks.size(), 1u);  // no new allocation
  EXPECT_EQ(pool.statistics(), stats(0, 1, 0, 900, 1023));

  Buffer c = pool.allocate(0, 900);  // nothing held: a new block
  EXPECT_NE(c.adapter().get(), physical);
  Buffer d = pool.allocate(0, 1024);  // another bin
  EXPECT_EQ(rec->blocks.size(), 3u);
  c = Buffer();
  Buffer e = pool.allocate(0, 1024);  // the held block of 900's bin does not fit 1024's
  EXPECT_EQ(rec->blocks.size(), 4u);
  EXPECT_EQ(pool.statistics(), stats(1, 3, 1023, 900 + 1024 + 1024, 2 * 1023 + 2 * 1279));
}

TEST_P(MemoryPool, SubRegionsArraysAndViewsKeepTheBlockActive) {
  auto ctx = context();
  Queue queue(ctx);
  DeviceMemoryPool pool(ctx);
  Buffer a = pool.allocate(0, 4096);
  Buffer sub = a.get_sub_region(100, 200);
  Buffer copy = a;
  a = Buffer();
  copy = Buffer();
  EXPECT_EQ(pool.active_blocks(), 1u);  // the sub-region still uses it
  sub = Buffer();
  EXPECT_EQ(pool.statistics(), stats(1, 0, block_size(4096), 0, block_size(4096)));

  std::optional<Array> arr = Array::empty(queue, {1000}, Dtype::float32, 0, pool.allocator());
  EXPECT_EQ(pool.held_blocks(), 1u);  // 4000 bytes: another bin than 4096
  std::optional<Array> view = arr->slice(10, 20);
  arr.reset();
  EXPECT_EQ(pool.active_blocks(), 1u);
  EXPECT_EQ(pool.active_bytes(), 4000u);
  view.reset();
  EXPECT_EQ(pool.statistics(), stats(2, 0, block_size(4096) + block_size(4000), 0,
                                     block_size(4096) + block_size(4000)));
}

TEST_P(MemoryPool, ArraysRoundTripDataThroughPooledAndReusedBlocks) {
  auto ctx = context();
  Queue queue(ctx);
  DeviceMemoryPool pool(ctx);
  std::uint32_t seed = 100;
  for (int round = 0; round < 2; ++round) {  // the second round runs on reused blocks
    for (std::size_t n : kSizes) {
      SCOPED_TRACE(fmt::format("round {}, {} elements", round, n));
      const auto host = random_reals<float>(n, seed++);
      const auto other = random_reals<double>(n, seed++);
      const std::size_t held_before = pool.held_blocks();
      Array a = Array::empty(queue, {n}, Dtype::float32, 0, pool.allocator());
      Array b = Array::empty(queue, {n}, Dtype::float32, 0, pool.allocator());
      Array c = Array::empty(queue, {n}, Dtype::float64, 0, pool.allocator());
      if (n) {
        EXPECT_NE(a.data().adapter().get(), b.data().adapter().get());
        if (round == 1) {
          EXPECT_EQ(pool.held_blocks() + 3, held_before);  // all three reused
        }
      }
      a.set(host);
      c.set(other);
      b.set(a);  // device -> device
      EXPECT_EQ(a.get<float>(), host);
      EXPECT_EQ(b.get<float>(), host);
      EXPECT_EQ(c.get<double>(), other);
      // A reused block holds old data: zeros() must still clear it.
      Array z = Array::zeros(queue, {n}, Dtype::float32, 0, pool.allocator());
      EXPECT_EQ(z.get<float>(), std::vector<float>(n, 0.0f));
    }
  }
  EXPECT_EQ(pool.active_blocks(), 0u);
  EXPECT_EQ(pool.held_bytes(), pool.managed_bytes());
}

// Skein's own array operations take their temporaries (the reductions' scratch) from the queue's
// temporaries_pool(), as the arrays made without an allocator (x, the results): the first call
// makes blocks, later calls of the same size reuse them, and each queue has its own pool.
TEST_P(MemoryPool, ReductionsDrawTheirScratchFromTheQueuesPool) {
  auto ctx = context();
  Queue queue(ctx);
  const DeviceMemoryPool pool = temporaries_pool(queue);
  EXPECT_EQ(pool.managed_bytes(), 0u) << "a new queue's pool is empty";
  std::uint32_t seed = 300;
  std::size_t managed_after_first = 0;
  for (int round = 0; round < 3; ++round) {
    for (std::size_t n : {std::size_t{1}, std::size_t{1000003}}) {
      SCOPED_TRACE(fmt::format("round {}, {} elements", round, n));
      const auto host = random_reals<float>(n, seed++);
      double expected = 0;
      for (float v : host) expected += v;
      const Array x = Array::from_host(queue, host);
      const double got = sum(queue, x).get<float>()[0];
      EXPECT_NEAR(got, expected, 1e-5 * static_cast<double>(n) + 1e-6);
      const double det = sum(queue, x, ReductionArgs{.deterministic = true}).get<float>()[0];
      EXPECT_NEAR(det, expected, 1e-5 * static_cast<double>(n) + 1e-6);
      EXPECT_EQ(pool.active_blocks(), 1u) << "scratch and results go back to the pool after each "
                                             "call (x, from the pool too, lives)";
    }
    if (round == 0) {
      managed_after_first = pool.managed_bytes();
      EXPECT_GT(pool.held_blocks(), 0u);
    } else {
      EXPECT_EQ(pool.managed_bytes(), managed_after_first) << "later calls allocate nothing new";
    }
  }
  // Copies of the queue share the pool; another queue has its own.
  const Queue copy = queue;
  EXPECT_EQ(temporaries_pool(copy).managed_bytes(), managed_after_first);
  Queue other(ctx);
  EXPECT_EQ(temporaries_pool(other).managed_bytes(), 0u);
  pool.free_held();
  EXPECT_EQ(pool.managed_bytes(), 0u);
  EXPECT_EQ(pool.held_blocks(), 0u);
}

TEST_P(MemoryPool, BlocksAreKeptPerDevice) {
  SKEIN_NEED_DEVICES(2);
  auto ctx = context(2);
  Queue queue(ctx);
  DeviceMemoryPool pool(ctx);
  Buffer on1 = pool.allocate(1, 5000);
  EXPECT_EQ(on1.device_idx(), 1u);
  const void* physical = on1.adapter().get();
  on1 = Buffer();
  Buffer on0 = pool.allocate(0, 5000);
  EXPECT_NE(on0.adapter().get(), physical);  // device 1's held block is not used for device 0
  EXPECT_EQ(pool.held_blocks(), 1u);
  Buffer again = pool.allocate(1, 4500);
  EXPECT_EQ(again.adapter().get(), physical);
  EXPECT_EQ(pool.held_blocks(), 0u);

  const auto host = random_reals<float>(1001, 5);
  Array a = Array::empty(queue, {1001}, Dtype::float32, 1, pool.allocator());
  EXPECT_EQ(a.device_idx(), 1u);
  a.set(host);
  Array b = Array::empty(queue, {1001}, Dtype::float32, 0, pool.allocator());
  b.set(a);  // between devices
  EXPECT_EQ(b.get<float>(), host);
}

TEST_P(MemoryPool, FreeHeldAndStopHolding) {
  auto ctx = context();
  auto rec = std::make_shared<Recorder>();
  DeviceMemoryPool pool(ctx, recording(ctx, rec));
  Buffer a = pool.allocate(0, 100);
  Buffer b = pool.allocate(0, 200);
  Buffer c = pool.allocate(0, 300);
  const std::size_t total = block_size(100) + block_size(200) + block_size(300);
  b = Buffer();
  EXPECT_EQ(pool.statistics(), stats(1, 2, block_size(200), 400, total));
  pool.free_held();
  EXPECT_EQ(pool.statistics(), stats(0, 2, 0, 400, total - block_size(200)));
  EXPECT_EQ(rec->live_count(), 2u);

  a = Buffer();
  EXPECT_EQ(pool.held_blocks(), 1u);
  pool.stop_holding();  // frees the held block
  EXPECT_EQ(pool.statistics(), stats(0, 1, 0, 300, block_size(300)));
  EXPECT_EQ(rec->live_count(), 1u);
  c = Buffer();  // freed at once now
  EXPECT_EQ(pool.statistics(), MemoryPoolStatistics{});
  EXPECT_EQ(rec->live_count(), 0u);

  // Still usable: blocks come and go without being held.
  Buffer d = pool.allocate(0, 100);
  EXPECT_EQ(pool.statistics(), stats(0, 1, 0, 100, block_size(100)));
  d = Buffer();
  EXPECT_EQ(pool.statistics(), MemoryPoolStatistics{});
  EXPECT_EQ(rec->live_count(), 0u);
}

TEST_P(MemoryPool, OutOfMemoryFreesHeldBlocksAndRetriesOnce) {
  auto ctx = context();
  auto rec = std::make_shared<Recorder>();
  DeviceMemoryPool pool(ctx, recording(ctx, rec, 3000));  // a "device" of 3000 bytes
  {
    Buffer a = pool.allocate(0, 1000);
    Buffer b = pool.allocate(0, 1000);
  }
  EXPECT_EQ(pool.statistics(), stats(2, 0, 2046, 0, 2046));
  // 2047 more bytes do not fit beside the 2046 held: the pool frees them and tries again.
  Buffer c = pool.allocate(0, 2000);
  EXPECT_EQ(pool.statistics(), stats(0, 1, 0, 2000, 2047));
  EXPECT_EQ(rec->live_bytes(), 2047u);

  // Nothing held: the first failure is raised as it is.
  try {
    pool.allocate(0, 1000);
    ADD_FAILURE() << "no MemoryError";
  } catch (const MemoryError& e) {
    EXPECT_TRUE(contains(e.what(), "simulated device full")) << e.what();
    EXPECT_FALSE(contains(e.what(), "tried again")) << e.what();
    EXPECT_EQ(e.requested(), 1023u);
  }
  EXPECT_EQ(pool.statistics(), stats(0, 1, 0, 2000, 2047));

  // Held blocks freed, still no room: the second failure says what the pool did.
  c = Buffer();
  EXPECT_EQ(pool.held_blocks(), 1u);
  try {
    pool.allocate(0, 4000);
    ADD_FAILURE() << "no MemoryError";
  } catch (const MemoryError& e) {
    EXPECT_TRUE(contains(e.what(), "simulated device full")) << e.what();
    EXPECT_TRUE(contains(e.what(), "freed its 1 held blocks")) << e.what();
    EXPECT_EQ(e.requested(), 4095u);
  }
  EXPECT_EQ(pool.statistics(), MemoryPoolStatistics{});
}

TEST_P(MemoryPool, AbsurdSizeRaisesMemoryErrorOnTheRealDevice) {
  auto ctx = context();
  Queue queue(ctx);
  DeviceMemoryPool pool(ctx);
  { Buffer held = pool.allocate(0, 1000); }
  EXPECT_EQ(pool.held_blocks(), 1u);
  const std::size_t absurd = std::size_t{1} << 60;
  try {
    pool.allocate(0, absurd);
    ADD_FAILURE() << "no MemoryError";
  } catch (const MemoryError& e) {
    EXPECT_GE(e.requested(), absurd);
    EXPECT_TRUE(contains(e.what(), "held blocks")) << e.what();
  }
  EXPECT_EQ(pool.statistics(), MemoryPoolStatistics{});  // the held block was freed for the retry
  EXPECT_THROW(Array::empty(queue, {absurd / 4}, Dtype::float32, 0, pool.allocator()), MemoryError);
  // The pool still works.
  Array a = Array::from_host(queue, std::vector<float>{1, 2, 3});
  Array b = Array::empty(queue, {3}, Dtype::float32, 0, pool.allocator());
  b.set(a);
  EXPECT_EQ(b.get<float>(), (std::vector<float>{1, 2, 3}));
}

TEST_P(MemoryPool, BadRequestsRaiseLogicErrors) {
  auto ctx = context();
  DeviceMemoryPool pool(ctx);
  try {
    pool.allocate(7, 100);
    ADD_FAILURE() << "no LogicError";
  } catch (const LogicError& e) {
    EXPECT_TRUE(contains(e.what(), "DeviceMemoryPool::allocate")) << e.what();
  }
  DeviceMemoryPool too_small(ctx, [ctx](std::size_t device_idx, std::size_t nbytes) {
    return Buffer::allocate(ctx, device_idx, nbytes / 2);
  });
  try {
    too_small.allocate(0, 100);
    ADD_FAILURE() << "no LogicError";
  } catch (const LogicError& e) {
    EXPECT_TRUE(
        contains(e.what(), "base allocator returned 55 bytes on device 0 for a request of 111"))
        << e.what();
  }
  auto other_ctx = context();
  DeviceMemoryPool foreign(ctx, [other_ctx](std::size_t device_idx, std::size_t nbytes) {
    return Buffer::allocate(other_ctx, device_idx, nbytes);
  });
  try {
    foreign.allocate(0, 100);
    ADD_FAILURE() << "no LogicError";
  } catch (const LogicError& e) {
    EXPECT_TRUE(contains(e.what(), "of another context")) << e.what();
  }
  EXPECT_EQ(too_small.statistics(), MemoryPoolStatistics{});
  EXPECT_EQ(foreign.statistics(), MemoryPoolStatistics{});
}

TEST_P(MemoryPool, ThreadsShareOnePool) {
  auto ctx = context();
  DeviceMemoryPool pool(ctx);
  constexpr int kThreads = 4;
  constexpr std::size_t kKeep = 3;
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0};
  // Every block in use by any thread: a block must never be handed out twice at once.
  std::mutex live_mutex;
  std::set<const void*> live_blocks;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 gen(static_cast<std::uint32_t>(t));
      const std::size_t sizes[] = {100, 1000, 5000, 70000};
      std::deque<Buffer> live;
      auto drop_oldest = [&] {
        {
          std::lock_guard lock(live_mutex);
          live_blocks.erase(live.front().adapter().get());  // before the block goes back
        }
        live.pop_front();
      };
      for (int i = 0; i < 300; ++i) {
        Buffer b = pool.allocate(0, sizes[gen() % 4]);
        {
          std::lock_guard lock(live_mutex);
          if (!live_blocks.insert(b.adapter().get()).second) ++errors;
        }
        live.push_back(std::move(b));
        if (live.size() > kKeep) drop_oldest();
      }
      while (!live.empty()) drop_oldest();
    });
  }
  std::thread watcher([&] {
    while (!stop) {
      const auto s = pool.statistics();
      if (s.held_bytes > s.managed_bytes) ++errors;
      pool.free_held();
      std::this_thread::yield();
    }
  });
  for (auto& th : threads) th.join();
  stop = true;
  watcher.join();
  EXPECT_EQ(errors.load(), 0);
  const auto s = pool.statistics();
  EXPECT_EQ(s.active_blocks, 0u);
  EXPECT_EQ(s.active_bytes, 0u);
  EXPECT_EQ(s.held_bytes, s.managed_bytes);
  // A held block serves only requests of its own bin: each of the 4 sizes' bins can hold as many
  // blocks as were ever alive at once (at most kThreads * (kKeep + 1)).
  EXPECT_LE(s.held_blocks, 4 * static_cast<std::size_t>(kThreads) * (kKeep + 1));
  pool.free_held();
  EXPECT_EQ(pool.statistics(), MemoryPoolStatistics{});
}

TEST_P(MemoryPool, OutlivesItsHandle) {
  auto ctx = context();
  Queue queue(ctx);
  std::optional<Array> a;
  {
    DeviceMemoryPool pool(ctx);
    a = Array::empty(queue, {101}, Dtype::int32, 0, pool.allocator());
  }
  const auto host = random_values<std::int32_t>(101, 9);
  a->set(host);
  EXPECT_EQ(a->get<std::int32_t>(), host);
  a.reset();  // the block goes back to a pool nobody holds: freed with it
}

// --- Page-locked pools --------------------------------------------------------------------------

TEST_P(MemoryPool, PageLockedCountsReuseAndRoundTrips) {
  auto ctx = context();
  Queue queue(ctx);
  PageLockedMemoryPool pool(ctx);
  HostBuffer h = pool.allocate(1000);
  EXPECT_EQ(h.size(), 1000u);
  std::byte* data = h.data();
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(pool.statistics(), stats(0, 1, 0, 1000, 1023));
  HostBuffer copy = h;
  h = HostBuffer();
  EXPECT_EQ(pool.active_blocks(), 1u);
  copy = HostBuffer();
  EXPECT_EQ(pool.statistics(), stats(1, 0, 1023, 0, 1023));
  HostBuffer again = pool.allocate(900);
  EXPECT_EQ(again.data(), data);  // the held block
  EXPECT_EQ(again.size(), 900u);
  EXPECT_EQ(pool.statistics(), stats(0, 1, 0, 900, 1023));
  again = HostBuffer();

  EXPECT_EQ(pool.allocate(0).size(), 0u);
  EXPECT_EQ(pool.statistics(), stats(1, 0, 1023, 0, 1023));

  DeviceMemoryPool device_pool(ctx);
  std::uint32_t seed = 40;
  for (int round = 0; round < 2; ++round) {
    for (std::size_t n : kSizes) {
      SCOPED_TRACE(fmt::format("round {}, {} bytes", round, n));
      HostBuffer in = pool.allocate(n);
      HostBuffer out = pool.allocate(n);
      ASSERT_EQ(in.size(), n);
      if (n) {
        ASSERT_NE(in.data(), out.data());
      }
      const auto host = random_bytes(n, seed++);
      std::copy(host.begin(), host.end(), in.data());
      std::fill_n(out.data(), n, std::byte{0xee});
      Buffer buf = device_pool.allocate(0, n);
      buf.set(queue, in.bytes(), Sync::async);
      buf.get(queue, out.bytes(), Sync::async);
      queue.synchronize();
      EXPECT_TRUE(std::equal(host.begin(), host.end(), out.data()));
    }
  }
  EXPECT_EQ(pool.active_blocks(), 0u);
  pool.free_held();
  EXPECT_EQ(pool.statistics(), MemoryPoolStatistics{});

  HostBuffer kept = pool.allocate(5000);
  pool.stop_holding();
  kept = HostBuffer();
  EXPECT_EQ(pool.statistics(), MemoryPoolStatistics{});
}

TEST_P(MemoryPool, PageLockedOutOfMemoryRetriesAndBadBaseAllocator) {
  auto ctx = context();
  // A host with room for 3000 bytes of blocks, counted by the pool itself (the base allocator is
  // called without the pool's lock held, so it may ask the pool).
  const PageLockedMemoryPool* self = nullptr;
  std::vector<const std::byte*> made;
  PageLockedMemoryPool pool(ctx, [&](std::size_t nbytes) {
    const std::size_t used = self->managed_bytes();
    if (nbytes > 3000 - used) {
      throw MemoryError(ErrorInfo{.what = "simulated host full"}, nbytes, 3000 - used);
    }
    HostBuffer b = HostBuffer::allocate(ctx, nbytes);
    made.push_back(b.data());
    return b;
  });
  self = &pool;
  {
    HostBuffer a = pool.allocate(1000);
    HostBuffer b = pool.allocate(1000);
  }
  EXPECT_EQ(pool.statistics(), stats(2, 0, 2046, 0, 2046));
  HostBuffer c = pool.allocate(2000);  // fits only once the held blocks are freed
  EXPECT_EQ(made.size(), 3u);
  EXPECT_EQ(c.data(), made.back());
  EXPECT_EQ(pool.statistics(), stats(0, 1, 0, 2000, 2047));
  std::fill_n(c.data(), c.size(), std::byte{7});  // the block is really there
  c = HostBuffer();
  try {
    pool.allocate(4000);
    ADD_FAILURE() << "no MemoryError";
  } catch (const MemoryError& e) {
    EXPECT_TRUE(contains(e.what(), "simulated host full")) << e.what();
    EXPECT_TRUE(contains(e.what(), "page-locked memory pool had freed its 1 held blocks"))
        << e.what();
  }
  EXPECT_EQ(pool.statistics(), MemoryPoolStatistics{});

  PageLockedMemoryPool bad(
      ctx, [ctx](std::size_t nbytes) { return HostBuffer::allocate(ctx, nbytes / 2); });
  try {
    bad.allocate(100);
    ADD_FAILURE() << "no LogicError";
  } catch (const LogicError& e) {
    EXPECT_TRUE(contains(e.what(), "base allocator returned 55 bytes for a request of 111"))
        << e.what();
  }
  EXPECT_EQ(bad.statistics(), MemoryPoolStatistics{});
}

SKEIN_INSTANTIATE_BACKENDS(MemoryPool);

}  // namespace memory_pool_test
}  // namespace
}  // namespace skein::test

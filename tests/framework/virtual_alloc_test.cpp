// SPDX-License-Identifier: BSD-3-Clause
// Virtual allocations: grunnur's statistics checked exactly for worked examples; the placement
// rule and the no-sharing-with-dependencies guarantee checked against a host model over random
// allocate/free sequences, including what the device memory really holds; temporaries of a chain
// of kernels sharing memory and computing the right result; real allocations from a pool; thread
// safety; and the error paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <skein/skein.hpp>
#include <thread>
#include <utility>
#include <vector>

#include "backends.hpp"
#include "checks.hpp"

namespace skein::test {
namespace {
namespace virtual_alloc_test {

const void* real_of(const Buffer& b) { return b.adapter().get(); }

VirtualAllocationStatistics expected_stats(const std::vector<std::size_t>& reals,
                                           const std::vector<std::size_t>& virtuals) {
  VirtualAllocationStatistics s;
  for (std::size_t r : reals) {
    s.real_size_total += r;
    ++s.real_num;
    ++s.real_sizes[r];
  }
  for (std::size_t v : virtuals) {
    s.virtual_size_total += v;
    ++s.virtual_num;
    ++s.virtual_sizes[v];
  }
  return s;
}

[[maybe_unused]] void PrintTo(const VirtualAllocationStatistics& s, std::ostream* os) {
  *os << "{real " << s.real_num << " / " << s.real_size_total << " B:";
  for (auto [size, n] : s.real_sizes) *os << " " << size << "x" << n;
  *os << "; virtual " << s.virtual_num << " / " << s.virtual_size_total << " B:";
  for (auto [size, n] : s.virtual_sizes) *os << " " << size << "x" << n;
  *os << "}";
}

class VirtualAlloc : public BackendTest {};

TEST_P(VirtualAlloc, ZeroOffsetManagerWorkedExample) {
  auto ctx = context();
  Queue queue(ctx);
  ZeroOffsetManager m(queue);
  EXPECT_EQ(m.statistics(), VirtualAllocationStatistics{});

  Buffer a = m.allocate(0, 100);          // new real R1 (100)
  Buffer b = m.allocate(0, 200, {a});     // R1 too small: new R2 (200)
  Buffer c = m.allocate(0, 50, {a});      // R1 holds a dependency; R2 (b) is free to share
  Buffer d = m.allocate(0, 150, {b, c});  // R1 too small, R2 holds both dependencies: R3 (150)
  Buffer e = m.allocate(0, 80);           // the smallest that fits: R1, beside a
  EXPECT_EQ(a.size(), 100u);
  EXPECT_EQ(c.size(), 50u);
  EXPECT_EQ(c.offset(), 0u);
  EXPECT_EQ(real_of(e), real_of(a));
  EXPECT_EQ(real_of(c), real_of(b));
  EXPECT_NE(real_of(a), real_of(b));
  EXPECT_NE(real_of(d), real_of(a));
  EXPECT_NE(real_of(d), real_of(b));
  EXPECT_EQ(m.statistics(), expected_stats({100, 200, 150}, {100, 200, 50, 150, 80}));

  a = Buffer();  // R1 still holds e
  EXPECT_EQ(m.statistics(), expected_stats({100, 200, 150}, {200, 50, 150, 80}));
  e = Buffer();  // R1 is freed
  EXPECT_EQ(m.statistics(), expected_stats({200, 150}, {200, 50, 150}));
  Buffer f = m.allocate(0, 100, {d});  // R3 (150) is smaller than R2 but holds d: R2
  EXPECT_EQ(real_of(f), real_of(b));
  b = Buffer();
  c = Buffer();
  EXPECT_EQ(m.statistics(), expected_stats({200, 150}, {150, 100}));
  f = Buffer();
  EXPECT_EQ(m.statistics(), expected_stats({150}, {150}));
  Buffer g = m.allocate(0, 150);  // equal size fits: shares R3 with d
  EXPECT_EQ(real_of(g), real_of(d));
  d = Buffer();
  g = Buffer();
  EXPECT_EQ(m.statistics(), VirtualAllocationStatistics{});
}

TEST_P(VirtualAlloc, DependenciesAreSymmetricAndAcceptViews) {
  auto ctx = context();
  Queue queue(ctx);
  ZeroOffsetManager m(queue);
  Buffer x = m.allocate(0, 400);
  Buffer y = m.allocate(0, 400, {x});
  // z names only y; x named nobody, but y named x: z may share with x, not with y.
  Buffer z = m.allocate(0, 400, {y});
  EXPECT_EQ(real_of(z), real_of(x));
  // A sub-region and an array view stand for their virtual buffer.
  Array arr(queue, y, {100}, Dtype::float32);
  Buffer w = m.allocate(0, 400, {x.get_sub_region(10, 20), arr.slice(3, 5).data()});
  EXPECT_NE(real_of(w), real_of(x));
  EXPECT_NE(real_of(w), real_of(y));
  Buffer v =
      m.allocate(0, 400, VirtualDependencies{arr.slice(0, 1), Array(queue, z, {4}, Dtype::uint8)});
  EXPECT_NE(real_of(v), real_of(y));
  EXPECT_NE(real_of(v), real_of(z));
  EXPECT_EQ(real_of(v), real_of(w));
  EXPECT_EQ(m.statistics().real_num, 3u);

  // Buffers that are not virtual, of another manager, or freed are ignored.
  ZeroOffsetManager other(queue);
  Buffer foreign = other.allocate(0, 400);
  Buffer plain = Buffer::allocate(ctx, 0, 400);
  VirtualDependencies gone;
  {
    Buffer tmp = m.allocate(0, 1000);
    gone.add(tmp);
  }
  VirtualDependencies deps{foreign, plain};
  deps.add(gone);
  EXPECT_EQ(deps.size(), 3u);
  Buffer u = m.allocate(0, 400, deps);
  EXPECT_EQ(real_of(u), real_of(x));  // the oldest real allocation of 400 bytes
}

TEST_P(VirtualAlloc, TrivialManagerGivesEveryBufferItsOwnMemory) {
  auto ctx = context();
  Queue queue(ctx);
  TrivialManager m(queue);
  std::vector<Buffer> bufs;
  const std::size_t sizes[] = {100, 100, 7, 1, 4097, 0};
  for (std::size_t n : sizes) bufs.push_back(m.allocate(0, n));
  std::set<const void*> reals;
  for (const auto& b : bufs) reals.insert(real_of(b));
  EXPECT_EQ(reals.size(), bufs.size());
  const std::vector<std::size_t> all(std::begin(sizes), std::end(sizes));
  EXPECT_EQ(m.statistics(), expected_stats(all, all));
  // The data of each lives apart.
  std::uint32_t seed = 1;
  std::vector<std::vector<std::byte>> data;
  for (const auto& b : bufs) {
    data.push_back(random_bytes(b.size(), seed++));
    b.set(queue, std::span<const std::byte>(data.back()));
  }
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    std::vector<std::byte> back(bufs[i].size());
    bufs[i].get(queue, std::span<std::byte>(back));
    EXPECT_TRUE(back == data[i]) << i;
  }
  bufs.erase(bufs.begin());
  EXPECT_EQ(m.statistics(), expected_stats({100, 7, 1, 4097, 0}, {100, 7, 1, 4097, 0}));
  bufs.clear();
  EXPECT_EQ(m.statistics(), VirtualAllocationStatistics{});
}

// What must not share memory really lives apart, and what shares really shares.
TEST_P(VirtualAlloc, DataThroughBuffersThatMayNotShareStaysApart) {
  auto ctx = context();
  Queue queue(ctx);
  ZeroOffsetManager m(queue);
  const std::size_t sizes[] = {4097, 1, 1001, (3u << 20) + 5, 7, 4097};
  std::vector<Buffer> chain;  // each depends on every earlier one: all in use together
  for (std::size_t n : sizes) {
    VirtualDependencies deps(chain);
    chain.push_back(m.allocate(0, n, deps));
  }
  std::set<const void*> reals;
  for (const auto& b : chain) reals.insert(real_of(b));
  EXPECT_EQ(reals.size(), chain.size());
  std::vector<std::vector<std::byte>> data;
  std::uint32_t seed = 10;
  for (const auto& b : chain) {
    data.push_back(random_bytes(b.size(), seed++));
    b.set(queue, std::span<const std::byte>(data.back()));
  }
  for (std::size_t i = 0; i < chain.size(); ++i) {
    std::vector<std::byte> back(chain[i].size());
    chain[i].get(queue, std::span<std::byte>(back));
    EXPECT_TRUE(back == data[i]) << i;
  }

  // Two buffers without a dependency share: the second one's writes show through the first.
  Buffer p = m.allocate(0, 1000, chain);
  Buffer q = m.allocate(0, 600, chain);
  ASSERT_EQ(real_of(p), real_of(q));
  const auto first = random_bytes(1000, 1);
  const auto second = random_bytes(600, 2);
  p.set(queue, std::span<const std::byte>(first));
  q.set(queue, std::span<const std::byte>(second));
  std::vector<std::byte> back(1000);
  p.get(queue, std::span<std::byte>(back));
  EXPECT_TRUE(std::equal(second.begin(), second.end(), back.begin()));
  EXPECT_TRUE(std::equal(first.begin() + 600, first.end(), back.begin() + 600));
}

// Temporaries of a computation: each step's output depends on the inputs it reads; a late
// temporary reuses the memory of an early one that is no longer needed.
TEST_P(VirtualAlloc, KernelChainWithSharedTemporaries) {
  auto ctx = context();
  Queue queue(ctx);
  Program program(ctx, R"(
KERNEL void scale(GLOBAL_MEM float* out, GLOBAL_MEM const float* a, float s, int n)
{
    const int i = get_global_id(0);
    if (i < n) out[i] = s * a[i];
}
KERNEL void combine(GLOBAL_MEM float* out, GLOBAL_MEM const float* a, GLOBAL_MEM const float* b,
                    int n)
{
    const int i = get_global_id(0);
    if (i < n) out[i] = 2.0f * a[i] + b[i];
}
)");
  for (std::size_t n : {std::size_t{1}, std::size_t{1001}, std::size_t{(1u << 20) + 3}}) {
    SCOPED_TRACE(n);
    ZeroOffsetManager m(queue);
    const auto host = random_reals<float>(n, 3);
    Array x = Array::from_host(queue, host);
    Array y = Array::empty(queue, {n}, Dtype::float32);
    const auto N = static_cast<std::int32_t>(n);
    const std::size_t global = (n + 63) / 64 * 64;  // more work items than elements
    auto scale = [&](const Array& out, const Array& a, float s) {
      program.kernel("scale")(queue, global, LaunchSizes{64}, out, a, s, N);
    };
    auto combine = [&](const Array& out, const Array& a, const Array& b) {
      program.kernel("combine")(queue, global, LaunchSizes{64}, out, a, b, N);
    };
    Array t1 = Array::empty(queue, {n}, Dtype::float32, 0, m.allocator());
    scale(t1, x, 3.0f);
    Array t2 = Array::empty(queue, {n}, Dtype::float32, 0, m.allocator({t1}));
    scale(t2, x, 5.0f);
    Array t3 = Array::empty(queue, {n}, Dtype::float32, 0, m.allocator({t1, t2}));
    combine(t3, t1, t2);
    Array t4 = Array::empty(queue, {n}, Dtype::float32, 0, m.allocator({t3}));
    scale(t4, t3, 2.0f);  // overwrites t1's memory, which is no longer read
    combine(y, t4, t3);
    EXPECT_EQ(real_of(t4.data()), real_of(t1.data()));
    EXPECT_NE(real_of(t4.data()), real_of(t2.data()));
    EXPECT_NE(real_of(t4.data()), real_of(t3.data()));
    EXPECT_EQ(m.statistics(), expected_stats({4 * n, 4 * n, 4 * n}, {4 * n, 4 * n, 4 * n, 4 * n}));

    const auto result = y.get<float>();
    for (std::size_t i = 0; i < n; ++i) {
      const float t1h = 3.0f * host[i];
      const float t3h = 2.0f * t1h + 5.0f * host[i];
      const float expected = 2.0f * (2.0f * t3h) + t3h;
      ASSERT_NEAR(result[i], expected, 1e-5f * std::max(1.0f, std::fabs(expected))) << i;
    }
  }

  // Empty arrays are virtual buffers too.
  ZeroOffsetManager m(queue);
  Array empty = Array::empty(queue, {0}, Dtype::float32, 0, m.allocator());
  EXPECT_TRUE(empty.get<float>().empty());
  EXPECT_EQ(m.statistics(), expected_stats({0}, {0}));
}

// Random allocate/free sequences against a host model of the placement rule and of the memory.
void random_sequence(const Queue& queue, bool zero_offset, std::uint32_t seed) {
  const Context& ctx = queue.context();
  const std::size_t num_devices = queue.device_idxs().size();
  struct RealInfo {
    std::size_t size;
    std::size_t order;  // creation order, for the "oldest of equal sizes" rule
    std::size_t device_idx;
  };
  // Every real allocation the manager asks for, recorded independently of the manager.
  auto reals = std::make_shared<std::map<const void*, RealInfo>>();
  auto order = std::make_shared<std::size_t>(0);
  Allocator recording = [ctx, reals, order](std::size_t device_idx, std::size_t nbytes) {
    Buffer b = Buffer::allocate(ctx, device_idx, nbytes);
    (*reals)[b.adapter().get()] = {nbytes, (*order)++, device_idx};
    return b;
  };
  std::optional<VirtualManager> manager;
  if (zero_offset) {
    manager = ZeroOffsetManager(queue, recording);
  } else {
    manager = TrivialManager(queue, recording);
  }
  const VirtualManager& m = *manager;
  // The real allocation (as the allocator above recorded it) a virtual buffer lies in.
  auto real = [&m](const Buffer& b) -> const void* { return m.real_allocation(b).adapter().get(); };

  struct Live {
    Buffer buffer;
    std::set<int> deps;  // declared when allocated, both ways
  };
  std::map<int, Live> live;
  std::mt19937 gen(seed);
  const std::size_t sizes[] = {0, 1, 7, 64, 100, 1000, 4097};
  int next_key = 0;

  auto check_state = [&](const std::string& where) {
    SCOPED_TRACE(where);
    std::vector<std::size_t> real_sizes;
    std::vector<std::size_t> virtual_sizes;
    std::set<const void*> used;
    for (const auto& [key, v] : live) {
      virtual_sizes.push_back(v.buffer.size());
      if (used.insert(real(v.buffer)).second) {
        real_sizes.push_back(reals->at(real(v.buffer)).size);
      }
      for (int d : v.deps) {
        ASSERT_NE(real(v.buffer), real(live.at(d).buffer)) << key << " and " << d;
      }
    }
    ASSERT_EQ(m.statistics(), expected_stats(real_sizes, virtual_sizes));
  };

  for (int step = 0; step < 250; ++step) {
    if (!live.empty() && gen() % 5 < 2) {
      auto it = std::next(live.begin(), static_cast<std::ptrdiff_t>(gen() % live.size()));
      for (int d : it->second.deps) live.at(d).deps.erase(it->first);
      live.erase(it);
      check_state(fmt::format("step {}: free", step));
      continue;
    }
    const std::size_t size = sizes[gen() % std::size(sizes)];
    const std::size_t device_idx = queue.device_idxs()[gen() % num_devices];
    VirtualDependencies deps;
    std::set<int> dep_keys;
    for (const auto& [key, v] : live) {
      if (gen() % 10 < 3) {
        dep_keys.insert(key);
        switch (gen() % 3) {  // the forms a dependency can take
          case 0: deps.add(v.buffer); break;
          case 1: deps.add(v.buffer.get_sub_region(0, v.buffer.size() / 2)); break;
          default: deps.add(Array(queue, v.buffer, {v.buffer.size()}, Dtype::uint8)); break;
        }
      }
    }
    // The expected real allocation: the smallest (then oldest) of the device that fits and holds
    // none of the dependencies; a new one when there is none.
    std::optional<const void*> expected;
    if (zero_offset) {
      std::map<const void*, bool> candidates;  // real -> holds no dependency
      for (const auto& [key, v] : live) {
        const void* r = real(v.buffer);
        const RealInfo& info = reals->at(r);
        if (info.device_idx != device_idx || info.size < size) continue;
        auto [it, fresh] = candidates.try_emplace(r, true);
        if (dep_keys.count(key)) it->second = false;
      }
      for (const auto& [r, ok] : candidates) {
        if (!ok) continue;
        if (!expected || std::pair(reals->at(r).size, reals->at(r).order) <
                             std::pair(reals->at(*expected).size, reals->at(*expected).order)) {
          expected = r;
        }
      }
    }
    std::set<const void*> before;
    for (const auto& [key, v] : live) before.insert(real(v.buffer));
    Buffer b = m.allocate(device_idx, size, deps);
    ASSERT_EQ(b.size(), size);
    ASSERT_EQ(b.device_idx(), device_idx);
    if (expected) {
      ASSERT_EQ(real(b), *expected) << "step " << step;
    } else {
      ASSERT_FALSE(before.count(real(b))) << "step " << step << ": expected a new allocation";
      ASSERT_EQ(reals->at(real(b)).size, size);
    }
    const int key = next_key++;
    for (int d : dep_keys) live.at(d).deps.insert(key);
    live.emplace(key, Live{b, dep_keys});
    check_state(fmt::format("step {}: allocate {} on {}", step, size, device_idx));

    if (step % 50 == 49) {
      // Write every live buffer in turn, then read them all: each must hold what a host model
      // of the real allocations says (later writes show through buffers sharing memory).
      std::map<const void*, std::vector<std::byte>> memory;
      std::map<int, std::vector<std::byte>> written;
      for (const auto& [k, v] : live) {
        auto data = random_bytes(v.buffer.size(), seed + static_cast<std::uint32_t>(k));
        v.buffer.set(queue, std::span<const std::byte>(data));
        auto& mem = memory[real(v.buffer)];
        if (mem.size() < data.size()) mem.resize(data.size());
        std::copy(data.begin(), data.end(), mem.begin());
        written[k] = std::move(data);
      }
      for (const auto& [k, v] : live) {
        std::vector<std::byte> back(v.buffer.size());
        v.buffer.get(queue, std::span<std::byte>(back));
        const auto& mem = memory.at(real(v.buffer));
        ASSERT_TRUE(std::equal(back.begin(), back.end(), mem.begin())) << "buffer " << k;
        // Buffers that may not share still hold their own data.
        bool overwritten = false;
        for (const auto& [k2, v2] : live) {
          if (k2 > k && real(v2.buffer) == real(v.buffer) && v2.buffer.size() > 0) {
            overwritten = true;
          }
        }
        if (!overwritten) {
          ASSERT_TRUE(back == written.at(k)) << "buffer " << k;
        }
      }
    }
  }
  live.clear();
  EXPECT_EQ(m.statistics(), VirtualAllocationStatistics{});
}

TEST_P(VirtualAlloc, RandomSequencesMatchTheHostModel) {
  auto ctx = context();
  Queue queue(ctx);
  for (std::uint32_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(seed);
    random_sequence(queue, true, seed);
    random_sequence(queue, false, seed);
  }
}

TEST_P(VirtualAlloc, RandomSequencesOnTwoDevices) {
  SKEIN_NEED_DEVICES(2);
  auto ctx = context(2);
  Queue queue(ctx);
  random_sequence(queue, true, 7);
  random_sequence(queue, false, 7);
}

TEST_P(VirtualAlloc, DevicesNeverShareAndQueueDevicesAreChecked) {
  SKEIN_NEED_DEVICES(2);
  auto ctx = context(2);
  Queue queue(ctx);
  ZeroOffsetManager m(queue);
  Buffer a = m.allocate(0, 1000);
  Buffer b = m.allocate(1, 1000);
  EXPECT_NE(real_of(a), real_of(b));
  EXPECT_EQ(m.statistics(), expected_stats({1000, 1000}, {1000, 1000}));
  const auto host = random_reals<float>(250, 4);
  Array on1 = Array::empty(queue, {250}, Dtype::float32, 1, m.allocator({b}));
  on1.set(host);
  EXPECT_EQ(on1.get<float>(), host);
  EXPECT_NE(real_of(on1.data()), real_of(a));  // another device
  EXPECT_NE(real_of(on1.data()), real_of(b));  // a dependency

  ZeroOffsetManager only0(Queue(ctx, {0}));
  try {
    only0.allocate(1, 10);
    ADD_FAILURE() << "no LogicError";
  } catch (const LogicError& e) {
    EXPECT_TRUE(contains(e.what(), "device 1 is not in the manager's queue (its devices: 0)"))
        << e.what();
  }
}

TEST_P(VirtualAlloc, RealAllocationsFromAPool) {
  auto ctx = context();
  Queue queue(ctx);
  DeviceMemoryPool pool(ctx);
  ZeroOffsetManager m(queue, pool.allocator());
  {
    Buffer a = m.allocate(0, 1000);
    Buffer b = m.allocate(0, 1000, {a});
    Buffer c = m.allocate(0, 900);  // shares a's real allocation
    EXPECT_EQ(real_of(c), real_of(a));
    EXPECT_EQ(pool.active_blocks(), 2u);
    EXPECT_EQ(pool.active_bytes(), 2000u);
    const auto data = random_bytes(900, 5);
    c.set(queue, std::span<const std::byte>(data));
    std::vector<std::byte> back(900);
    c.get(queue, std::span<std::byte>(back));
    EXPECT_TRUE(back == data);
  }
  EXPECT_EQ(m.statistics(), VirtualAllocationStatistics{});
  EXPECT_EQ(pool.active_blocks(), 0u);
  EXPECT_EQ(pool.held_blocks(), 2u);
  Buffer d = m.allocate(0, 950);  // a new real allocation, from a held block
  EXPECT_EQ(pool.held_blocks(), 1u);
  EXPECT_EQ(pool.active_bytes(), 950u);
}

TEST_P(VirtualAlloc, ThreadsShareOneManager) {
  auto ctx = context();
  Queue queue(ctx);
  ZeroOffsetManager m(queue);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 gen(static_cast<std::uint32_t>(t));
      std::vector<Buffer> mine;
      for (int i = 0; i < 200; ++i) {
        // Each new buffer depends on all this thread's live ones.
        Buffer b = m.allocate(0, 64 * (1 + gen() % 8), mine);
        for (const auto& other : mine) {
          if (real_of(other) == real_of(b)) ++errors;
        }
        mine.push_back(std::move(b));
        if (mine.size() > 4) mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(gen() % 5));
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(m.statistics(), VirtualAllocationStatistics{});
}

TEST_P(VirtualAlloc, BadRequestsRaiseTypedErrors) {
  auto ctx = context();
  Queue queue(ctx);
  ZeroOffsetManager m(queue);
  try {
    m.allocate(9, 10);
    ADD_FAILURE() << "no LogicError";
  } catch (const LogicError& e) {
    EXPECT_TRUE(contains(e.what(), "ZeroOffsetManager::allocate")) << e.what();
  }
  EXPECT_THROW(m.allocate(0, std::size_t{1} << 60), MemoryError);
  EXPECT_THROW(Array::empty(queue, {std::size_t{1} << 58}, Dtype::float32, 0, m.allocator()),
               MemoryError);
  EXPECT_EQ(m.statistics(), VirtualAllocationStatistics{});

  TrivialManager small(queue, [ctx](std::size_t device_idx, std::size_t nbytes) {
    return Buffer::allocate(ctx, device_idx, nbytes / 2);
  });
  try {
    small.allocate(0, 100);
    ADD_FAILURE() << "no LogicError";
  } catch (const LogicError& e) {
    EXPECT_TRUE(contains(e.what(),
                         "TrivialManager::allocate: the real allocator returned 50 bytes on "
                         "device 0 for a request of 100 bytes"))
        << e.what();
  }
  EXPECT_EQ(small.statistics(), VirtualAllocationStatistics{});
}

SKEIN_INSTANTIATE_BACKENDS(VirtualAlloc);

}  // namespace virtual_alloc_test
}  // namespace
}  // namespace skein::test

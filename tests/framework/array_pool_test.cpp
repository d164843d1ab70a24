// SPDX-License-Identifier: BSD-3-Clause
// Arrays made without an allocator come from their queue's pool (temporaries_pool): the results
// of Skein's calls against the host, reuse of a block by later work of the same queue while
// earlier work still runs (stream order), the switch (Context::set_array_pool, SKEIN_ARRAY_POOL
// and its bad values), the trim when memory runs short (a pool limit, a request the device
// refuses), exported blocks never reused, and copies between queues ordered.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <set>
#include <skein/skein.hpp>
#include <vector>

#include "backends.hpp"
#include "checks.hpp"
#include "scoped_env.hpp"
#include "skein/detail/adapter.hpp"

#if SKEIN_HAS_DLPACK
#include <skein/dlpack.hpp>
#endif
#if SKEIN_HAS_OPENCL
#include <skein/opencl.hpp>
#endif
#if SKEIN_HAS_CUDA
#include <skein/cuda.hpp>
#endif

namespace skein::test {
namespace {
namespace array_pool_test {

class ArrayPool : public BackendTest {};

// The backend's allocation behind an array (its identity, without handing its address out).
const void* block_of(const Array& a) { return a.data().adapter().get(); }

// A kernel that keeps the device busy for a while (a chain of dependent multiply-adds per work
// item), so that what is enqueued after it on the same queue is still waiting when the host goes
// on: on PoCL's CPU devices about 0.1 s, on a GPU well under a millisecond.
const char* kSpin = R"(
KERNEL void spin(GLOBAL_MEM float* x, unsigned int iters)
{
    const unsigned int i = (unsigned int)get_global_id(0);
    float v = x[i];
    for (unsigned int k = 0; k < iters; ++k) v = v * 0.999999f + 0.000001f;
    x[i] = v;
}
)";

struct Spinner {
  Program program;
  Array scratch;
  explicit Spinner(const Queue& queue)
      : program(queue.context(), kSpin),
        scratch(Array::zeros(queue, {256}, Dtype::float32, std::nullopt,
                             [ctx = queue.context()](std::size_t d, std::size_t n) {
                               return Buffer::allocate(ctx, d, n);
                             })) {}
  void operator()(const Queue& queue, std::uint32_t iters = 200000) const {
    program.kernel("spin")(queue, LaunchSizes{256}, LaunchSizes{64}, scratch, iters);
  }
};

double host_sum(const std::vector<float>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0, [](double a, float b) { return a + b; });
}

// Results of Skein's calls against the host; while they live their blocks are the pool's active
// ones, and once they go a later round of the same calls allocates nothing new.
TEST_P(ArrayPool, ResultsComeFromTheQueuesPoolAndMatchTheHost) {
  auto ctx = context();
  EXPECT_TRUE(ctx.array_pool()) << "on by default";
  Queue queue(ctx);
  const DeviceMemoryPool pool = temporaries_pool(queue);
  const std::size_t n = 10007;
  const auto host = random_reals<float>(n, 11);
  std::vector<std::int32_t> idx = {5, 0, 10006, 77, 5};
  std::size_t managed_after_first = 0;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(fmt::format("round {}", round));
    {
      const Array x = Array::from_host(queue, host);
      EXPECT_EQ(pool.active_blocks(), 1u) << "from_host's array is the pool's";
      const Array s = sum(queue, x);
      const Array y = astype(queue, x, Dtype::float64);
      const Array c = copy(queue, x);
      const Array t = take(queue, x, Array::from_host(queue, idx));
      const Array cat = concatenate(queue, {x, c});
      const Array z = Array::zeros(queue, {n}, Dtype::int16);
      const Array e = Array::empty(queue, {3, 5}, Dtype::complex64);
      EXPECT_EQ(pool.active_blocks(), 8u) << "every array above is an active block of the pool";

      EXPECT_NEAR(s.get<float>()[0], host_sum(host), 1e-3 * n);
      const auto yd = y.get<double>();
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(yd[i], static_cast<double>(host[i])) << i;
      EXPECT_EQ(c.get<float>(), host);
      const auto tv = t.get<float>();
      for (std::size_t k = 0; k < idx.size(); ++k)
        EXPECT_EQ(tv[k], host[static_cast<std::size_t>(idx[k])]);
      const auto cv = cat.get<float>();
      EXPECT_TRUE(std::equal(host.begin(), host.end(), cv.begin()));
      EXPECT_TRUE(std::equal(host.begin(), host.end(), cv.begin() + n));
      EXPECT_EQ(z.get<std::int16_t>(), std::vector<std::int16_t>(n, 0))
          << "zeros clears a reused block";
      EXPECT_EQ(e.size(), 15u);
    }
    EXPECT_EQ(pool.active_blocks(), 0u) << "the arrays' blocks came back";
    if (round == 0) {
      managed_after_first = pool.managed_bytes();
      EXPECT_GT(pool.held_blocks(), 0u);
    } else {
      EXPECT_EQ(pool.managed_bytes(), managed_after_first) << "later rounds allocate nothing new";
    }
  }
  // Another queue has its own pool; its arrays do not touch this one.
  Queue other(ctx);
  const Array o = Array::from_host(other, host);
  EXPECT_EQ(pool.active_blocks(), 0u);
  EXPECT_EQ(temporaries_pool(other).active_blocks(), 1u);
  // An explicit allocator is still used as given.
  DeviceMemoryPool mine(ctx);
  const Array m = Array::empty(queue, {100}, Dtype::float32, std::nullopt, mine.allocator());
  EXPECT_EQ(mine.active_blocks(), 1u);
  EXPECT_EQ(pool.active_blocks(), 0u);
}

// A block freed by one call is reused by the next call on the queue while the work enqueued
// before is still waiting behind a slow kernel: each result still matches the host, since the
// queue runs its work in order.
void stream_ordered_reuse(const Context& ctx, bool expect_reuse) {
  Queue queue(ctx);
  const Spinner spin(queue);
  const std::size_t n = 4099;
  const auto host = random_reals<float>(n, 21);
  const double want = host_sum(host);
  const Array x = Array::from_host(queue, host);
  queue.synchronize();
  spin(queue);  // everything below waits behind it
  std::vector<Array> sums;
  std::set<const void*> blocks;
  const int steps = 24;
  for (int i = 0; i < steps; ++i) {
    // A temporary result (its block comes back at the end of the step), written and read by
    // queued work; the next step's astype gets the same block while this step's work waits.
    const Array t = astype(queue, x, Dtype::float64);
    scale(queue, static_cast<double>(i + 1), t, t);
    sums.push_back(sum(queue, t));
    blocks.insert(block_of(t));
  }
  const bool queued = !queue.record_marker(queue.device_idxs().front()).query();
  if (expect_reuse) {
    EXPECT_EQ(blocks.size(), 1u) << "every step's temporary is the same block";
    EXPECT_EQ(temporaries_pool(queue).active_blocks(), sums.size() + 1) << "x and the sums";
  } else {
    EXPECT_EQ(temporaries_pool(queue).active_blocks(), 0u) << "plain allocations";
  }
  for (int i = 0; i < steps; ++i) {
    const double got = sums[static_cast<std::size_t>(i)].get<double>()[0];
    EXPECT_NEAR(got, (i + 1) * want, 1e-9 * std::abs((i + 1) * want) + 1e-6) << "step " << i;
  }
  std::printf("[          ] work was %s queued when the steps ended\n",
              queued ? "still" : "no longer");
}

TEST_P(ArrayPool, ReuseFollowsTheQueuesOrderWithWorkStillQueued) {
  auto ctx = context();
  stream_ordered_reuse(ctx, true);
}

// The switch in code: arrays made afterwards get plain allocations; the pool sees none of them.
TEST_P(ArrayPool, OffGivesPlainAllocations) {
  auto ctx = context();
  Queue queue(ctx);
  const DeviceMemoryPool pool = temporaries_pool(queue);
  const auto host = random_reals<float>(5000, 31);
  const Array before = Array::from_host(queue, host);
  ctx.set_array_pool(false);
  EXPECT_FALSE(ctx.array_pool());
  EXPECT_FALSE(Context(ctx).array_pool()) << "copies are the same context";
  {
    const Array x = Array::from_host(queue, host);
    const Array y = astype(queue, x, Dtype::float64);
    const Array s = sum(queue, x);
    EXPECT_EQ(pool.active_blocks(), 1u) << "only the array made before the switch";
    EXPECT_EQ(y.get<double>()[4999], static_cast<double>(host[4999]));
    EXPECT_NEAR(s.get<float>()[0], host_sum(host), 1e-3 * 5000);
    EXPECT_EQ(x.data().size(), x.nbytes()) << "exactly the array's bytes";
  }
  EXPECT_EQ(pool.active_blocks(), 1u);
  const std::size_t held = pool.held_blocks();
  { const Array x = Array::from_host(queue, host); }
  EXPECT_EQ(pool.held_blocks(), held) << "a plain allocation is freed, not held";
  // Stream order holds for plain allocations too (each freed with the device done with it).
  stream_ordered_reuse(ctx, false);
  ctx.set_array_pool(true);
  {
    const Array x = Array::from_host(queue, host);
    EXPECT_EQ(pool.active_blocks(), 2u);
  }
}

// SKEIN_ARRAY_POOL is read when a context is made: 0 turns the pool off for it, 1 on, and a value
// it does not take raises LogicError naming the variable there (never later, from a call that
// makes an array).
TEST_P(ArrayPool, EnvironmentSwitchIsReadWhenTheContextIsMade) {
  {
    ScopedEnv off("SKEIN_ARRAY_POOL", "0");
    auto ctx = context();
    EXPECT_FALSE(ctx.array_pool());
    Queue queue(ctx);
    const Array x = Array::zeros(queue, {100}, Dtype::float32);
    EXPECT_EQ(temporaries_pool(queue).active_blocks(), 0u);
  }
  {
    ScopedEnv on("SKEIN_ARRAY_POOL", "yes");
    EXPECT_TRUE(context().array_pool());
  }
  {
    ScopedEnv empty("SKEIN_ARRAY_POOL", "");
    EXPECT_TRUE(context().array_pool()) << "empty is unset";
  }
  for (const char* bad : {"maybe", "2", "offf"}) {
    ScopedEnv v("SKEIN_ARRAY_POOL", bad);
    expect_logic_error([&] { (void)context(); },
                       {fmt::format("SKEIN_ARRAY_POOL='{}'", bad), "Context"});
  }
}

// Out of memory, as far as it can be made to happen anywhere: (1) past a limit set on the queue's
// pool, a new result makes the pool free its held blocks and try again; (2) a request the device
// refuses makes every queue pool of the context give back what it holds on that device (after
// its work there), and the allocation is tried again before MemoryError.
TEST_P(ArrayPool, MemoryShortTrimsThePoolsAndRetries) {
  auto ctx = context();
  Queue queue(ctx);
  const DeviceMemoryPool pool = temporaries_pool(queue);
  const auto host = random_reals<float>(1 << 16, 41);
  {
    // Held blocks of several bins.
    const Array a = Array::from_host(queue, host);
    const Array b = astype(queue, a, Dtype::float64);
    const Array c = Array::empty(queue, {3000}, Dtype::float32);
  }
  ASSERT_EQ(pool.held_blocks(), 3u);
  pool.set_limit(0, pool.managed_bytes() + 1024);
  {
    // A bin nothing holds, past the limit with the held blocks: they are freed and it fits.
    const Array big =
        Array::from_host(queue, std::vector<float>(host.begin(), host.begin() + 40000));
    EXPECT_EQ(pool.held_blocks(), 0u);
    EXPECT_EQ(pool.active_blocks(), 1u);
    EXPECT_EQ(big.get<float>()[39999], host[39999]);
    // Past the limit even with nothing held: MemoryError naming the limit, no plain allocation
    // behind the code's back.
    try {
      (void)Array::empty(queue, {1 << 18}, Dtype::float64);
      ADD_FAILURE() << "no MemoryError";
    } catch (const MemoryError& e) {
      EXPECT_TRUE(contains(e.what(), "limit")) << e.what();
    }
  }
  pool.clear_limit(0);

  // A second queue's pool holds blocks too; a request no device can satisfy trims both.
  Queue second(ctx);
  const DeviceMemoryPool pool2 = temporaries_pool(second);
  {
    const Array a = Array::from_host(queue, host);
    const Array b = Array::from_host(second, host);
    const Spinner spin(second);
    spin(second, 20000);  // the second queue is busy when the trim waits for it
  }
  ASSERT_GT(pool.held_blocks(), 0u);
  ASSERT_GT(pool2.held_blocks(), 0u);
  const std::size_t huge = std::size_t{1} << 62;
  EXPECT_THROW((void)Buffer::allocate(ctx, 0, huge), MemoryError);
  EXPECT_EQ(pool.held_blocks(), 0u) << "trimmed";
  EXPECT_EQ(pool2.held_blocks(), 0u) << "trimmed";
  EXPECT_EQ(pool.managed_bytes(), 0u);
  // The same through an array: trimmed, tried again, and MemoryError.
  { const Array a = Array::from_host(queue, host); }
  ASSERT_EQ(pool.held_blocks(), 1u);
  EXPECT_THROW((void)Array::empty(queue, {huge / 8}, Dtype::float64), MemoryError);
  EXPECT_EQ(pool.held_blocks(), 0u);
  // And the pool works on afterwards.
  const Array again = Array::from_host(queue, host);
  EXPECT_EQ(again.get<float>(), host);
}

// Large arrays (1 MiB and more) are not binned in a queue's pool: a new block is the request
// rounded up to 64 KiB (a bin would add up to a quarter), and a held block is reused by a request
// it exceeds by at most an eighth.
TEST_P(ArrayPool, LargeArraysTakeTheirSizeNotABin) {
  auto ctx = context();
  Queue queue(ctx);
  const DeviceMemoryPool pool = temporaries_pool(queue);
  constexpr std::size_t kib = 1024, mib = kib * kib;
  auto floats = [](std::size_t bytes) { return Shape{bytes / 4}; };
  const void* first = nullptr;
  {
    const Array a = Array::empty(queue, floats(5 * mib + 4), Dtype::float32);
    EXPECT_EQ(pool.managed_bytes(), 5 * mib + 64 * kib);
    first = block_of(a);
  }
  {
    const Array b = Array::empty(queue, floats(4 * mib + 800 * kib), Dtype::float32);
    EXPECT_EQ(block_of(b), first) << "within an eighth: the held block";
    EXPECT_EQ(pool.managed_bytes(), 5 * mib + 64 * kib);
    const Array c = Array::empty(queue, floats(4 * mib), Dtype::float32);
    EXPECT_NE(block_of(c), first);
    EXPECT_EQ(pool.managed_bytes(), 9 * mib + 64 * kib) << "a new block of exactly 4 MiB";
    const Array d = Array::empty(queue, floats(mib - 4), Dtype::float32);
    EXPECT_EQ(pool.managed_bytes(), 10 * mib + 64 * kib - 1) << "below 1 MiB: its bin's size";
  }
  {
    const Array e = Array::empty(queue, floats(3 * mib), Dtype::float32);
    EXPECT_EQ(pool.managed_bytes(), 13 * mib + 64 * kib - 1)
        << "the held 4 MiB block is more than an eighth larger: a new one";
  }
  // A pool made by the code keeps PyCUDA's bins whatever the size.
  DeviceMemoryPool mine(ctx);
  const Buffer m = mine.allocate(0, 5 * mib + 4);
  EXPECT_EQ(mine.managed_bytes(),
            DeviceMemoryPool::alloc_size(DeviceMemoryPool::bin_number(5 * mib + 4)));
}

// Blocks on another device are not trimmed for a request on device 0.
TEST_P(ArrayPool, TrimIsPerDevice) {
  SKEIN_NEED_DEVICES(2);
  auto ctx = context(2);
  Queue queue(ctx);
  const DeviceMemoryPool pool = temporaries_pool(queue);
  const auto host = random_reals<float>(1000, 51);
  {
    const Array a = Array::from_host(queue, host, {}, 0);
    const Array b = Array::from_host(queue, host, {}, 1);
  }
  ASSERT_EQ(pool.held_blocks(), 2u);
  EXPECT_THROW((void)Buffer::allocate(ctx, 0, std::size_t{1} << 62), MemoryError);
  EXPECT_EQ(pool.held_blocks(), 1u) << "device 1's block is kept";
  const Array c = Array::from_host(queue, host, {}, 1);
  EXPECT_EQ(pool.held_blocks(), 0u) << "and reused";
  EXPECT_EQ(c.get<float>(), host);
}

// A block of a queue's pool whose address went to the application (a native handle, DLPack) is
// freed when it comes back, not held: work Skein does not see may still use it.
TEST_P(ArrayPool, ExportedBlocksAreNeverReused) {
  auto ctx = context();
  Queue queue(ctx);
  const DeviceMemoryPool pool = temporaries_pool(queue);
  const auto host = random_reals<float>(1000, 61);
  auto native = [](const Array& a) -> std::uintptr_t {
    switch (a.queue().context().api().id()) {
#if SKEIN_HAS_OPENCL
      case ApiId::opencl: return reinterpret_cast<std::uintptr_t>(opencl::native_mem(a.data()));
#endif
#if SKEIN_HAS_CUDA
      case ApiId::cuda: return static_cast<std::uintptr_t>(cuda::native_pointer(a.data()));
#endif
      default: return 0;
    }
  };
  {
    const Array a = Array::from_host(queue, host);
    EXPECT_NE(native(a.slice(10, 20)), 0u) << "a view's handle marks the whole block";
    EXPECT_EQ(pool.active_blocks(), 1u);
  }
  EXPECT_EQ(pool.active_blocks(), 0u);
  EXPECT_EQ(pool.held_blocks(), 0u) << "freed, not held";
  EXPECT_EQ(pool.managed_bytes(), 0u);
  {
    const Array a = Array::from_host(queue, host);  // not exported: held as usual
  }
  EXPECT_EQ(pool.held_blocks(), 1u);
  {
    // A pool the application makes keeps PyCUDA's rules: its exported blocks are held all the same.
    DeviceMemoryPool mine(ctx);
    {
      const Array a = Array::empty(queue, {1000}, Dtype::float32, std::nullopt, mine.allocator());
      EXPECT_NE(native(a), 0u);
    }
    EXPECT_EQ(mine.held_blocks(), 1u);
  }
#if SKEIN_HAS_DLPACK
  pool.free_held();
  DLManagedTensor* tensor = nullptr;
  {
    const Array a = Array::from_host(queue, host);
    tensor = to_dlpack(a);
  }
  EXPECT_EQ(pool.active_blocks(), 1u) << "the tensor holds the array";
  tensor->deleter(tensor);
  EXPECT_EQ(pool.active_blocks(), 0u);
  EXPECT_EQ(pool.held_blocks(), 0u) << "freed once the consumer let go, not reused";
#endif
}

// transfer() and Array::set(const Array&) between two queues: the copy reads what the source's
// queue wrote (it waits for it), and the source's queue reuses the source's block only after the
// copy (it waits for the copy), even with the copying queue busy.
TEST_P(ArrayPool, CopiesBetweenQueuesAreOrderedBothWays) {
  auto ctx = context();
  Queue q1(ctx), q2(ctx);
  const Spinner spin1(q1), spin2(q2);
  const std::size_t n = 3001;
  const auto host = random_reals<float>(n, 71);
  for (int variant = 0; variant < 2; ++variant) {
    SCOPED_TRACE(variant == 0 ? "transfer" : "Array::set");
    // Before: the source is written on q1 behind a slow kernel; the copy on q2 must see it.
    {
      const Array src = Array::zeros(q1, {n}, Dtype::float32);
      q1.synchronize();
      spin1(q1);
      src.set(std::span<const float>(host), Sync::async);
      const Array dst = variant == 0 ? transfer(src, q2) : [&] {
        Array d = Array::empty(q2, {n}, Dtype::float32);
        d.set(src);
        return d;
      }();
      EXPECT_EQ(dst.get<float>(), host);
      q1.synchronize();
    }
    // After: the copy on q2 waits behind a slow kernel; the source goes, and q1 at once reuses
    // its block for other values. The copy must have read the old ones.
    {
      std::optional<Array> src = Array::from_host(q1, host);
      q1.synchronize();
      const void* block = block_of(*src);
      spin2(q2);
      const Array dst = variant == 0 ? transfer(*src, q2) : [&] {
        Array d = Array::empty(q2, {n}, Dtype::float32);
        d.set(*src);
        return d;
      }();
      src.reset();
      const Array reused = Array::empty(q1, {n}, Dtype::float32);
      EXPECT_EQ(block_of(reused), block) << "q1 reuses the source's block";
      fill(q1, reused, -7.0f);
      EXPECT_EQ(dst.get<float>(), host);
      EXPECT_EQ(reused.get<float>()[0], -7.0f);
    }
  }
}

SKEIN_INSTANTIATE_BACKENDS(ArrayPool);

}  // namespace array_pool_test
}  // namespace
}  // namespace skein::test

// SPDX-License-Identifier: BSD-3-Clause
// Packing of virtual allocations (grunnur's pack, pack_on_alloc, pack_on_free): live virtual
// buffers move to smaller real allocations with their contents, ordered with the kernels enqueued
// before and after on the manager's queue; memory totals drop as the statistics say; views stay
// valid; exported buffers stay put; a failed allocation leaves everything as it was.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <skein/skein.hpp>
#include <stdexcept>
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
namespace virtual_pack_test {

class VirtualPack : public BackendTest {};

// Integer kernels: exact on every device, so results compare equal with the host's.
const char* kKernels = R"(
KERNEL void affine(GLOBAL_MEM int* out, GLOBAL_MEM const int* in, int n)
{
    const int i = get_global_id(0);
    if (i < n) out[i] = 3 * in[i] + 1;
}
KERNEL void bump(GLOBAL_MEM int* y, int n)
{
    const int i = get_global_id(0);
    if (i < n) y[i] += 1;
}
)";

std::vector<std::int32_t> values(std::size_t n, std::int32_t base) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = base + static_cast<std::int32_t>(i * 7 % 1000);
  return v;
}

std::vector<std::int32_t> affine_ref(const std::vector<std::int32_t>& x) {
  std::vector<std::int32_t> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = 3 * x[i] + 1;
  return y;
}

std::size_t bytes(std::size_t n) { return n * sizeof(std::int32_t); }

TEST_P(VirtualPack, PackKeepsContentsAcrossKernelsAndShrinksTheTotals) {
  const Context ctx = context();
  Queue queue(ctx);
  const Program program(ctx, kKernels);
  const Kernel affine = program.kernel("affine"), bump = program.kernel("bump");
  for (std::size_t n : {1u, 63u, 65u, 100003u}) {
    SCOPED_TRACE(n);
    ZeroOffsetManager m(queue);
    Buffer big = m.allocate(0, bytes(n) + 4096);
    Buffer small = m.allocate(0, bytes(n));  // no dependency: shares big's allocation
    ASSERT_EQ(m.statistics().real_num, 1u);
    ASSERT_EQ(m.statistics().real_size_total, bytes(n) + 4096);
    const Buffer real_before = m.real_allocation(small);

    const auto x = values(n, 11);
    small.set(queue, std::span<const std::int32_t>(x));
    Array vsmall(queue, small, {n}, Dtype::int32);
    auto out1 = Array::zeros(queue, {n}, Dtype::int32);
    const auto sn = static_cast<std::int32_t>(n);
    // Enqueued before the pack, still running or queued when it starts.
    affine(queue, n, std::nullopt, out1, vsmall, sn);

    big = Buffer();  // the allocation is now larger than what it holds
    EXPECT_EQ(m.statistics().real_size_total, bytes(n) + 4096);
    m.pack();
    const auto stats = m.statistics();
    EXPECT_EQ(stats.real_num, 1u);
    EXPECT_EQ(stats.real_size_total, bytes(n));
    EXPECT_EQ(stats.virtual_size_total, bytes(n));
    const Buffer real_after = m.real_allocation(small);
    EXPECT_NE(real_after.adapter(), real_before.adapter());
    EXPECT_EQ(real_after.size(), bytes(n));

    // After the pack: the same handles read and write the moved memory.
    auto out2 = Array::zeros(queue, {n}, Dtype::int32);
    affine(queue, n, std::nullopt, out2, vsmall, sn);
    bump(queue, n, std::nullopt, vsmall, sn);
    const auto ref = affine_ref(x);
    EXPECT_EQ(out1.get<std::int32_t>(), ref);
    EXPECT_EQ(out2.get<std::int32_t>(), ref);
    auto bumped = x;
    for (auto& v : bumped) v += 1;
    EXPECT_EQ(vsmall.get<std::int32_t>(), bumped);
    // A view at an offset reads the moved memory too.
    if (n > 2) {
      const Array tail = vsmall.slice(1, n);
      EXPECT_EQ(tail.get<std::int32_t>(),
                std::vector<std::int32_t>(bumped.begin() + 1, bumped.end()));
    }
    // Packing again changes nothing.
    m.pack();
    EXPECT_EQ(m.statistics(), stats);
    EXPECT_EQ(m.real_allocation(small).adapter(), real_after.adapter());
  }
}

TEST_P(VirtualPack, SharedAllocationsMoveTogetherAndDependenciesStayApart) {
  const Context ctx = context();
  Queue queue(ctx);
  ZeroOffsetManager m(queue);
  Buffer big = m.allocate(0, 4000);
  Buffer a = m.allocate(0, 400);       // with big
  Buffer b = m.allocate(0, 800, {a});  // apart from a (big's holds a): a new allocation
  Buffer c = m.allocate(0, 200, {b});  // apart from b: with big and a
  ASSERT_EQ(m.real_allocation(c).adapter(), m.real_allocation(a).adapter());
  ASSERT_NE(m.real_allocation(b).adapter(), m.real_allocation(a).adapter());
  const auto xa = values(100, 5), xb = values(200, 9);
  a.set(queue, std::span<const std::int32_t>(xa));  // c shares these bytes: it reads them too
  b.set(queue, std::span<const std::int32_t>(xb));
  big = Buffer();
  m.pack();  // big's real shrinks to 400 (a's); b's stays 800
  const auto s = m.statistics();
  EXPECT_EQ(s.real_size_total, 1200u);
  EXPECT_EQ(s.real_num, 2u);
  EXPECT_EQ(m.real_allocation(c).adapter(), m.real_allocation(a).adapter());
  EXPECT_NE(m.real_allocation(b).adapter(), m.real_allocation(a).adapter());
  std::vector<std::int32_t> ra(100), rb(200), rc(50);
  a.get(queue, std::span<std::int32_t>(ra));
  b.get(queue, std::span<std::int32_t>(rb));
  c.get(queue, std::span<std::int32_t>(rc));
  EXPECT_EQ(ra, xa);
  EXPECT_EQ(rb, xb);
  EXPECT_EQ(rc, std::vector<std::int32_t>(xa.begin(), xa.begin() + 50));
}

TEST_P(VirtualPack, PackOnFreeShrinksWhenTheLargestGoes) {
  const Context ctx = context();
  Queue queue(ctx);
  const Program program(ctx, kKernels);
  ZeroOffsetManager m(queue, {}, {.pack_on_free = true});
  const std::size_t n = 65;
  Buffer big = m.allocate(0, 1 << 20);
  Buffer small = m.allocate(0, bytes(n));
  Buffer mid = m.allocate(0, 4096);
  const auto x = values(n, 3);
  small.set(queue, std::span<const std::int32_t>(x));
  Array vsmall(queue, small, {n}, Dtype::int32);
  program.kernel("bump")(queue, n, std::nullopt, vsmall, static_cast<std::int32_t>(n));
  big = Buffer();  // shrinks to mid's 4096 at once
  EXPECT_EQ(m.statistics().real_size_total, 4096u);
  mid = Buffer();  // and to small's
  EXPECT_EQ(m.statistics().real_size_total, bytes(n));
  auto y = x;
  for (auto& v : y) v += 1;
  EXPECT_EQ(vsmall.get<std::int32_t>(), y);
  small = Buffer();
  { const Array gone = std::move(vsmall); }
  EXPECT_EQ(m.statistics(), VirtualAllocationStatistics{});
}

TEST_P(VirtualPack, PackOnAllocGrowsASmallerAllocationInsteadOfAddingOne) {
  const Context ctx = context();
  Queue queue(ctx);
  for (bool pack_on_alloc : {false, true}) {
    SCOPED_TRACE(pack_on_alloc);
    ZeroOffsetManager m(queue, {}, {.pack_on_alloc = pack_on_alloc});
    Buffer a = m.allocate(0, 400);
    const auto xa = values(100, 21);
    a.set(queue, std::span<const std::int32_t>(xa));
    Buffer b = m.allocate(0, 4000);  // no dependency on a
    const auto s = m.statistics();
    if (pack_on_alloc) {
      EXPECT_EQ(s.real_num, 1u);
      EXPECT_EQ(s.real_size_total, 4000u);
      EXPECT_EQ(m.real_allocation(a).adapter(), m.real_allocation(b).adapter());
    } else {
      EXPECT_EQ(s.real_num, 2u);
      EXPECT_EQ(s.real_size_total, 4400u);
    }
    std::vector<std::int32_t> ra(100);
    a.get(queue, std::span<std::int32_t>(ra));
    EXPECT_EQ(ra, xa);  // kept through the growth
    // A dependency keeps them apart: a new allocation.
    Buffer c = m.allocate(0, 8000, {a, b});
    EXPECT_NE(m.real_allocation(c).adapter(), m.real_allocation(a).adapter());
    EXPECT_EQ(m.statistics().real_num, s.real_num + 1);
  }
}

TEST_P(VirtualPack, TrivialManagerPackChangesNothing) {
  const Context ctx = context();
  Queue queue(ctx);
  TrivialManager m(queue, {}, {.pack_on_alloc = true, .pack_on_free = true});
  Buffer a = m.allocate(0, 100), b = m.allocate(0, 300);
  const auto before = m.statistics();
  m.pack();
  EXPECT_EQ(m.statistics(), before);
  a = Buffer();
  EXPECT_EQ(m.statistics().real_size_total, 300u);
}

TEST_P(VirtualPack, AnAddressHandedOutStaysPut) {
  const Context ctx = context();
  Queue queue(ctx);
  ZeroOffsetManager m(queue);
  Buffer big = m.allocate(0, 8192);
  Buffer small = m.allocate(0, 64);
  const auto x = values(16, 1);
  small.set(queue, std::span<const std::int32_t>(x));
  std::uintptr_t address = 0;
#if SKEIN_HAS_CUDA
  if (GetParam().api == ApiId::cuda)
    address = static_cast<std::uintptr_t>(cuda::native_pointer(small));
#endif
#if SKEIN_HAS_OPENCL
  if (GetParam().api == ApiId::opencl)
    address = reinterpret_cast<std::uintptr_t>(opencl::native_mem(small));
#endif
  ASSERT_NE(address, 0u);
  const Buffer real = m.real_allocation(small);
  big = Buffer();
  m.pack();
  EXPECT_EQ(m.statistics().real_size_total, 8192u);  // not moved
  EXPECT_EQ(m.real_allocation(small).adapter(), real.adapter());
  std::vector<std::int32_t> r(16);
  small.get(queue, std::span<std::int32_t>(r));
  EXPECT_EQ(r, x);
}

TEST_P(VirtualPack, FailedAllocationLeavesTheAllocationAsItWasAndALaterPackWorks) {
  const Context ctx = context();
  Queue queue(ctx);
  bool refuse = false;
  Allocator allocator = [&](std::size_t device_idx, std::size_t nbytes) {
    if (refuse) {
      throw MemoryError(ErrorInfo{.what = "refused by the test's allocator"}, nbytes, 0);
    }
    return Buffer::allocate(ctx, device_idx, nbytes);
  };
  ZeroOffsetManager m(queue, allocator);
  Buffer big = m.allocate(0, 4096);
  Buffer small = m.allocate(0, 256);
  const auto x = values(64, 40);
  small.set(queue, std::span<const std::int32_t>(x));
  big = Buffer();
  refuse = true;
  const auto before = m.statistics();
  EXPECT_THROW(m.pack(), MemoryError);
  EXPECT_EQ(m.statistics(), before);
  std::vector<std::int32_t> r(64);
  small.get(queue, std::span<std::int32_t>(r));
  EXPECT_EQ(r, x);
  refuse = false;
  m.pack();
  EXPECT_EQ(m.statistics().real_size_total, 256u);
  small.get(queue, std::span<std::int32_t>(r));
  EXPECT_EQ(r, x);
}

SKEIN_INSTANTIATE_BACKENDS(VirtualPack);

}  // namespace virtual_pack_test
}  // namespace
}  // namespace skein::test

// SPDX-License-Identifier: BSD-3-Clause
// Buffers: host <-> device round trips of every dtype and edge size, sub-regions, copies within a
// device and between devices of a context, page-locked memory, and the error paths.
#include <gtest/gtest.h>

#include <skein/skein.hpp>

#include "backends.hpp"
#include "sanitizers.hpp"

namespace skein::test {
namespace {
namespace buffer_test {

// Element counts: empty, one, odd, a little over a power of two, and large (several MiB).
constexpr std::size_t kSizes[] = {0, 1, 7, 1001, 4097, (3u << 20) + 5};

class Buffers : public BackendTest {};

TEST_P(Buffers, RoundTripEveryDtypeAndSize) {
  auto ctx = context();
  Queue queue(ctx);
  std::uint32_t seed = 1;
  for (Dtype dtype : all_dtypes) {
    for (std::size_t n : kSizes) {
      // A Buffer holds bytes: the dtype only scales the count. Under the sanitizers the
      // several-MiB count for the first dtype only (support/sanitizers.hpp); each of the others
      // was AddressSanitizer's checks on up to 48 MiB of host data.
      if (kUnderSanitizers && n == kSizes[std::size(kSizes) - 1] && dtype != all_dtypes[0])
        continue;
      SCOPED_TRACE(fmt::format("{} x {}", name(dtype), n));
      const std::size_t nbytes = n * itemsize(dtype);
      const auto host = random_bytes(nbytes, seed++);
      auto buf = Buffer::allocate(ctx, 0, nbytes);
      EXPECT_EQ(buf.size(), nbytes);
      EXPECT_EQ(buf.offset(), 0u);
      buf.set(queue, std::span<const std::byte>(host));
      std::vector<std::byte> back(nbytes, std::byte{0x5a});
      buf.get(queue, std::span<std::byte>(back));
      EXPECT_TRUE(back == host);
    }
  }
}

TEST_P(Buffers, AsyncTransfersThroughPageLockedMemory) {
  auto ctx = context();
  Queue queue(ctx);
  for (std::size_t n : kSizes) {
    SCOPED_TRACE(n);
    auto pinned_in = HostBuffer::allocate(ctx, n);
    auto pinned_out = HostBuffer::allocate(ctx, n);
    ASSERT_EQ(pinned_in.size(), n);
    const auto host = random_bytes(n, 77 + static_cast<std::uint32_t>(n));
    std::copy(host.begin(), host.end(), pinned_in.data());
    std::fill_n(pinned_out.data(), n, std::byte{0xee});
    auto buf = Buffer::allocate(ctx, 0, n);
    buf.set(queue, pinned_in.bytes(), Sync::async);
    buf.get(queue, pinned_out.bytes(), Sync::async);
    queue.synchronize();
    EXPECT_TRUE(std::equal(host.begin(), host.end(), pinned_out.data()));
  }
}

TEST_P(Buffers, SubRegionsReadAndWriteOnlyTheirBytes) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t n = 10007;
  const auto host = random_bytes(n, 3);
  auto buf = Buffer::allocate(ctx, 0, n);
  buf.set(queue, std::span<const std::byte>(host));

  for (auto [origin, size] : {std::pair<std::size_t, std::size_t>{0, n},
                              {0, 0},
                              {1, 1},
                              {13, 999},
                              {n - 1, 1},
                              {n, 0},
                              {4096, 4096}}) {
    SCOPED_TRACE(fmt::format("[{}, +{})", origin, size));
    auto sub = buf.get_sub_region(origin, size);
    EXPECT_EQ(sub.offset(), origin);
    EXPECT_EQ(sub.size(), size);
    std::vector<std::byte> part(size);
    sub.get(queue, std::span<std::byte>(part));
    EXPECT_TRUE(std::equal(part.begin(), part.end(), host.begin() + origin));
  }

  // A nested region's offset adds up; writing it changes only its bytes.
  auto outer = buf.get_sub_region(100, 5000);
  auto inner = outer.get_sub_region(33, 777);
  EXPECT_EQ(inner.offset(), 133u);
  const auto patch = random_bytes(777, 4);
  inner.set(queue, std::span<const std::byte>(patch));
  auto expected = host;
  std::copy(patch.begin(), patch.end(), expected.begin() + 133);
  std::vector<std::byte> back(n);
  buf.get(queue, std::span<std::byte>(back));
  EXPECT_TRUE(back == expected);

  EXPECT_THROW(buf.get_sub_region(n, 1), LogicError);
  EXPECT_THROW(buf.get_sub_region(n + 1, 0), LogicError);
  EXPECT_THROW(outer.get_sub_region(4000, 1001), LogicError);
  EXPECT_THROW(buf.get_sub_region(1, std::numeric_limits<std::size_t>::max()), LogicError);
}

TEST_P(Buffers, DeviceToDeviceCopiesOnOneDevice) {
  auto ctx = context();
  Queue queue(ctx);
  for (std::size_t n : kSizes) {
    SCOPED_TRACE(n);
    const auto host = random_bytes(n, 11 + static_cast<std::uint32_t>(n));
    auto a = Buffer::allocate(ctx, 0, n);
    auto b = Buffer::allocate(ctx, 0, n);
    a.set(queue, std::span<const std::byte>(host));
    b.set(queue, a);
    std::vector<std::byte> back(n);
    b.get(queue, std::span<std::byte>(back));
    EXPECT_TRUE(back == host);
  }
  // Overlap-free copy between regions of one allocation.
  const auto host = random_bytes(4000, 12);
  auto buf = Buffer::allocate(ctx, 0, 4000);
  buf.set(queue, std::span<const std::byte>(host));
  buf.get_sub_region(2000, 1000).set(queue, buf.get_sub_region(1, 1000), Sync::blocking);
  std::vector<std::byte> back(4000);
  buf.get(queue, std::span<std::byte>(back));
  auto expected = host;
  std::copy(host.begin() + 1, host.begin() + 1001, expected.begin() + 2000);
  EXPECT_TRUE(back == expected);
}

TEST_P(Buffers, CopiesBetweenDevicesOfAContext) {
  SKEIN_NEED_DEVICES(2);
  const std::size_t ndev = std::min<std::size_t>(devices().size(), 4);
  auto ctx = context(ndev);
  Queue queue(ctx);
  for (std::size_t n : kSizes) {
    SCOPED_TRACE(n);
    const auto host = random_bytes(n, 21 + static_cast<std::uint32_t>(n));
    // Around a ring of devices: 0 -> 1 -> ... -> ndev-1 -> 0.
    std::vector<Buffer> bufs;
    for (std::size_t d = 0; d < ndev; ++d) bufs.push_back(Buffer::allocate(ctx, d, n));
    bufs[0].set(queue, std::span<const std::byte>(host));
    for (std::size_t d = 1; d < ndev; ++d) bufs[d].set(queue, bufs[d - 1]);
    auto back_home = Buffer::allocate(ctx, 0, n);
    back_home.set(queue, bufs[ndev - 1]);
    for (std::size_t d = 0; d < ndev; ++d) {
      std::vector<std::byte> back(n);
      bufs[d].get(queue, std::span<std::byte>(back));
      EXPECT_TRUE(back == host) << "device " << d;
    }
    std::vector<std::byte> back(n);
    back_home.get(queue, std::span<std::byte>(back));
    EXPECT_TRUE(back == host);
  }
  // Sub-region to sub-region across devices.
  const auto host = random_bytes(3000, 5);
  auto src = Buffer::allocate(ctx, 1, 3000);
  auto dst = Buffer::allocate(ctx, 0, 3000);
  src.set(queue, std::span<const std::byte>(host));
  dst.set(queue, std::span<const std::byte>(std::vector<std::byte>(3000, std::byte{0})));
  dst.get_sub_region(500, 1001).set(queue, src.get_sub_region(7, 1001), Sync::blocking);
  std::vector<std::byte> back(3000);
  dst.get(queue, std::span<std::byte>(back));
  std::vector<std::byte> expected(3000, std::byte{0});
  std::copy(host.begin() + 7, host.begin() + 1008, expected.begin() + 500);
  EXPECT_TRUE(back == expected);
}

TEST_P(Buffers, BadArgumentsRaiseLogicErrors) {
  auto ctx = context();
  Queue queue(ctx);
  auto buf = Buffer::allocate(ctx, 0, 64);
  std::vector<std::byte> small(63), large(65);
  EXPECT_THROW(buf.set(queue, std::span<const std::byte>(small)), LogicError);
  EXPECT_THROW(buf.get(queue, std::span<std::byte>(large)), LogicError);
  auto other = Buffer::allocate(ctx, 0, 32);
  EXPECT_THROW(buf.set(queue, other), LogicError);
  try {
    (void)Buffer::allocate(ctx, 5, 16);
    FAIL();
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("device index 5"), std::string::npos) << e.what();
  }
  // A queue of another context.
  auto ctx2 = context();
  Queue queue2(ctx2);
  EXPECT_THROW(buf.set(queue2, std::span<const std::byte>(std::vector<std::byte>(64))), LogicError);
}

TEST_P(Buffers, AllocationLargerThanTheDeviceIsAMemoryError) {
  auto ctx = context();
  const auto& p = ctx.devices().front().params();
  const std::size_t too_big = std::max(p.global_mem_size, p.max_alloc_size) * 4;
  try {
    (void)Buffer::allocate(ctx, 0, too_big);
    FAIL() << "allocating " << too_big << " bytes must fail";
  } catch (const MemoryError& e) {
    EXPECT_EQ(e.requested(), too_big);
    EXPECT_GT(e.available(), 0u);
    EXPECT_LT(e.available(), too_big);
    const std::string msg = e.what();
    EXPECT_NE(msg.find(ctx.devices().front().name()), std::string::npos) << msg;
  }
}

SKEIN_INSTANTIATE_BACKENDS(Buffers);

}  // namespace buffer_test
}  // namespace
}  // namespace skein::test

// SPDX-License-Identifier: BSD-3-Clause
// Events: recorded on a device's queue; wait, query, elapsed time, and cross-device ordering.
#include <gtest/gtest.h>

#include <skein/skein.hpp>

#include "backends.hpp"

namespace skein::test {
namespace {
namespace event_test {

class Events : public BackendTest {};

TEST_P(Events, WaitQueryAndElapsedTime) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t n = 32u << 20;
  auto a = Buffer::allocate(ctx, 0, n);
  auto b = Buffer::allocate(ctx, 0, n);
  a.set(queue, std::span<const std::byte>(random_bytes(n, 9)));
  auto start = queue.record_event(0);
  for (int i = 0; i < 4; ++i) b.set(queue, a);
  auto end = queue.record_event(0);
  end.wait();
  EXPECT_TRUE(end.query());
  EXPECT_TRUE(start.query());
  const double ms = end.time_since(start);
  EXPECT_GT(ms, 0.0);
  EXPECT_LT(ms, 60'000.0);
  EXPECT_DOUBLE_EQ(start.time_till(end), ms);
  Event empty;
  EXPECT_FALSE(empty.valid());
  EXPECT_THROW(empty.wait(), LogicError);
  EXPECT_THROW(queue.wait_for(empty), LogicError);
}

// Markers (untimed events) order work like events: a copy that waits for one sees the data the
// work before it wrote; timing them is refused where they carry no timing (CUDA).
TEST_P(Events, MarkersOrderWorkAndRefuseTiming) {
  auto ctx = context();
  Queue producer(ctx), consumer(ctx);
  const std::size_t n = 16u << 20;
  const auto data = random_bytes(n, 21);
  auto a = Buffer::allocate(ctx, 0, n);
  auto b = Buffer::allocate(ctx, 0, n);
  a.set(producer, std::span<const std::byte>(data), Sync::async);
  const Event marker = producer.record_marker(0);
  consumer.wait_for(marker, 0);
  b.set(consumer, a);
  std::vector<std::byte> back(n);
  b.get(consumer, std::span<std::byte>(back));
  EXPECT_TRUE(marker.query());
  EXPECT_EQ(back, data);
  for (int i = 0; i < 300; ++i) (void)producer.record_marker(0);  // recycled, never exhausted
  producer.synchronize();
  if (GetParam().api == ApiId::cuda) {
    const Event timed = producer.record_event(0);
    timed.wait();
    EXPECT_THROW((void)marker.time_since(timed), LogicError);
    EXPECT_THROW((void)timed.time_since(marker), LogicError);
  }
}

TEST_P(Events, AnotherDeviceWaitsForAnEvent) {
  SKEIN_NEED_DEVICES(2);
  auto ctx = context(2);
  Queue queue(ctx);
  const std::size_t n = 8u << 20;
  const auto host = random_bytes(n, 10);
  auto src = Buffer::allocate(ctx, 0, n);
  auto dst = Buffer::allocate(ctx, 1, n);
  src.set(queue, std::span<const std::byte>(host), Sync::async);
  auto written = queue.record_event(0);
  queue.wait_for(written, 1);
  dst.set(queue, src, Sync::async);
  queue.synchronize();
  std::vector<std::byte> back(n);
  dst.get(queue, std::span<std::byte>(back));
  EXPECT_TRUE(back == host);
}

SKEIN_INSTANTIATE_BACKENDS(Events);

}  // namespace event_test
}  // namespace
}  // namespace skein::test

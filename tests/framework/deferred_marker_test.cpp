// SPDX-License-Identifier: BSD-3-Clause
// Events recorded when first needed (skein/detail/deferred_marker.hpp, the events collectives
// return): they complete only after the work enqueued before them, whoever records them and when;
// calls in a row share one; Skein's next work on the device records it first, or drops it when
// nobody holds it; it outlives its queue.
#include <gtest/gtest.h>

#include <skein/skein.hpp>

#include <atomic>
#include <thread>

#include "backends.hpp"
#include "skein/detail/deferred_marker.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"

namespace skein::test {
namespace {
namespace deferred_marker_test {

class DeferredMarkers : public BackendTest {};

bool pending(const Queue& queue, std::size_t device_idx) {
  auto& slots = *detail::impl_of(queue)->markers;
  std::lock_guard lock(slots.mutex);
  return device_idx < slots.pending.size() && slots.pending[device_idx] != nullptr;
}

// Another queue that waits for the marker sees what the work before it wrote: the copy made on
// that queue after the wait returns the data.
TEST_P(DeferredMarkers, OrderWorkAfterThem) {
  auto ctx = context();
  Queue producer(ctx), consumer(ctx);
  const std::size_t n = 16u << 20;
  const auto data = random_bytes(n, 31);
  auto a = Buffer::allocate(ctx, 0, n);
  auto b = Buffer::allocate(ctx, 0, n);
  auto c = Buffer::allocate(ctx, 0, n);
  a.set(producer, std::span<const std::byte>(data), Sync::async);
  b.set(producer, a, Sync::async);
  const Event marker = detail::defer_marker(producer, 0);
  EXPECT_TRUE(pending(producer, 0));
  consumer.wait_for(marker, 0);  // records it
  EXPECT_FALSE(pending(producer, 0));
  c.set(consumer, b, Sync::async);
  std::vector<std::byte> back(n);
  c.get(consumer, std::span<std::byte>(back));
  EXPECT_EQ(back, data);
  EXPECT_TRUE(marker.query());
  marker.wait();
}

// Calls in a row share a marker; work Skein enqueues next records it first (so a later marker is
// another event), and the event the marker stands for stays the same.
TEST_P(DeferredMarkers, CallsInARowShareOneUntilSkeinEnqueues) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t n = 1u << 20;
  const auto data = random_bytes(n, 32);
  auto a = Buffer::allocate(ctx, 0, n);
  a.set(queue, std::span<const std::byte>(data), Sync::async);
  const Event first = detail::defer_marker(queue, 0);
  const Event second = detail::defer_marker(queue, 0);
  EXPECT_EQ(first.adapter(), second.adapter());
  auto b = Buffer::allocate(ctx, 0, n);
  b.set(queue, a, Sync::async);  // takes the device's queue: records the marker before the copy
  EXPECT_FALSE(pending(queue, 0));
  detail::EventAdapter& recorded = first.adapter()->recorded();
  EXPECT_NE(&recorded, first.adapter().get());
  EXPECT_EQ(&recorded, &second.adapter()->recorded());
  const Event third = detail::defer_marker(queue, 0);
  EXPECT_NE(third.adapter(), first.adapter());
  third.wait();
  std::vector<std::byte> back(n);
  b.get(queue, std::span<std::byte>(back));
  EXPECT_EQ(back, data);
  EXPECT_TRUE(first.query());
}

// A marker nobody holds is dropped, unrecorded, when Skein next takes the device's queue.
TEST_P(DeferredMarkers, OneNobodyHoldsIsDropped) {
  auto ctx = context();
  Queue queue(ctx);
  auto a = Buffer::allocate(ctx, 0, 4096);
  std::weak_ptr<detail::EventAdapter> gone;
  {
    const Event unused = detail::defer_marker(queue, 0);
    gone = unused.adapter();
  }
  EXPECT_TRUE(pending(queue, 0));
  EXPECT_FALSE(gone.expired());  // the queue's slot holds it
  a.set(queue, std::span<const std::byte>(random_bytes(4096, 33)));
  EXPECT_FALSE(pending(queue, 0));
  EXPECT_TRUE(gone.expired());
  EXPECT_FALSE(detail::impl_of(queue)->markers->any.load());
}

// A marker still pending when its queue goes is recorded then: waiting for it afterwards returns
// once the work is done, and the data is there.
TEST_P(DeferredMarkers, OutliveTheirQueue) {
  auto ctx = context();
  const std::size_t n = 8u << 20;
  const auto data = random_bytes(n, 34);
  auto a = Buffer::allocate(ctx, 0, n);
  auto b = Buffer::allocate(ctx, 0, n);
  Event marker;
  {
    Queue queue(ctx);
    a.set(queue, std::span<const std::byte>(data), Sync::async);
    b.set(queue, a, Sync::async);
    marker = detail::defer_marker(queue, 0);
  }
  marker.wait();
  EXPECT_TRUE(marker.query());
  Queue reader(ctx);
  std::vector<std::byte> back(n);
  b.get(reader, std::span<std::byte>(back));
  EXPECT_EQ(back, data);
}

// One thread enqueues copies and defers markers while another waits for each marker it is given:
// every wait returns only once that copy's data is in place (checked by copying it on a third
// queue that waits for the marker).
TEST_P(DeferredMarkers, RecordedFromAnotherThread) {
  auto ctx = context();
  Queue queue(ctx), reader(ctx);
  const std::size_t n = 1u << 20;
  constexpr int kRounds = 20;
  std::vector<Buffer> copies;
  auto src = Buffer::allocate(ctx, 0, n);
  const auto data = random_bytes(n, 35);
  src.set(queue, std::span<const std::byte>(data));
  for (int i = 0; i < kRounds; ++i) copies.push_back(Buffer::allocate(ctx, 0, n));
  std::vector<Event> markers(kRounds);
  std::atomic<int> ready{0};
  std::thread waiter([&] {
    for (int i = 0; i < kRounds; ++i) {
      while (ready.load() <= i) std::this_thread::yield();
      markers[static_cast<std::size_t>(i)].wait();
    }
  });
  for (int i = 0; i < kRounds; ++i) {
    // The copy records the previous marker (when the waiter has not already) from this thread.
    copies[static_cast<std::size_t>(i)].set(queue, src, Sync::async);
    markers[static_cast<std::size_t>(i)] = detail::defer_marker(queue, 0);
    ready.store(i + 1);
  }
  waiter.join();
  for (int i = 0; i < kRounds; ++i) {
    reader.wait_for(markers[static_cast<std::size_t>(i)], 0);
    std::vector<std::byte> back(n);
    copies[static_cast<std::size_t>(i)].get(reader, std::span<std::byte>(back));
    EXPECT_EQ(back, data) << "copy " << i;
  }
}

SKEIN_INSTANTIATE_BACKENDS(DeferredMarkers);

}  // namespace deferred_marker_test
}  // namespace
}  // namespace skein::test

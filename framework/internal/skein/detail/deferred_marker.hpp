// SPDX-License-Identifier: BSD-3-Clause
// Events recorded only when first needed: the events a collective returns.
//
// Recording an event after every call costs about a microsecond of host time on CUDA (take an
// event, cuEventRecord, give it back), as much as a third of what NCCL itself takes for an 8-byte
// all_reduce; most of those events are never looked at. A call that returns such an event instead
// registers a marker on its queue's device (defer_marker); the backend's event is recorded at the
// first of:
//   - a use of the event: Event::wait, Event::query, Queue::wait_for (on any queue), time_since;
//   - the next time Skein hands out the device's backend queue (Queue::device_queue: every kernel,
//     copy or fill Skein enqueues there, and cuda::native_stream / opencl::native_queue), so that
//     the event does not include that work; a marker that nobody holds any more is dropped there
//     instead, unrecorded;
//   - the queue's destruction.
// Calls on the same device between two of those share one marker. So the event completes once its
// call is done, and at the latest once the calls enqueued after it on the same device before any of
// the above are done too (other collectives; work on the backend queue that the application
// enqueued through a native handle taken earlier).
//
// Results (skein/detail/pending_results.hpp): the event's host completions confirm what the
// device held when the marker was recorded.
//
// Threads: a marker is attached to the device only after the call's work is enqueued, and recorded
// later than that, under the queue's marker lock; so an event never completes before its call,
// whichever thread records it.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "skein/detail/adapter.hpp"
#include "skein/event.hpp"
#include "skein/export.hpp"
#include "skein/queue.hpp"

namespace skein::detail {

class DeferredMarker;

// A queue's markers not yet recorded, one per device at most. Owned by the queue (Queue::Impl) and
// by its markers, so that a marker outliving its queue can still tell that it was recorded.
struct MarkerSlots {
  std::mutex mutex;
  // Whether any device has a pending marker: Queue::device_queue pays one load otherwise.
  std::atomic<bool> any{false};
  // The queue (its backend queues and held results), set when it is made; null once it is gone.
  Queue::Impl* owner = nullptr;
  std::vector<std::shared_ptr<DeferredMarker>> pending;  // by device index
  // Before Skein enqueues work on `device_idx`: records its marker, or drops it when only this
  // holds it.
  void settle(std::size_t device_idx);
  // The queue is going: records every pending marker (a failure is kept for its event's users).
  void close() noexcept;
  void update_any() noexcept;
};

class SKEIN_EXPORT DeferredMarker final : public EventAdapter {
 public:
  DeferredMarker(std::shared_ptr<MarkerSlots> slots, std::size_t device_idx)
      : slots_(std::move(slots)), device_idx_(device_idx) {}
  void wait() override { recorded().wait(); }
  bool query() override { return recorded().query(); }
  double time_since(EventAdapter& start) override {
    return recorded().time_since(start.recorded());
  }
  EventAdapter& recorded() override;
  std::shared_ptr<const PendingResults> held_results() const override { return results_; }

  // Under slots_->mutex, while the queue exists.
  void record_locked();

 private:
  friend struct MarkerSlots;
  std::shared_ptr<MarkerSlots> slots_;
  std::size_t device_idx_;
  std::atomic<bool> done_{false};  // event_ (or failure_) is set
  std::shared_ptr<EventAdapter> event_;
  // The results held on the device when it was recorded (every call it stands for, and perhaps
  // calls after them): taken then rather than per call, which cost an allocation each.
  std::shared_ptr<const PendingResults> results_;
  std::string failure_;  // why it could not be recorded when its queue went
};

// An event for the work enqueued so far on `queue`'s device `device_idx`, recorded when first
// needed (above). For calls whose work is already enqueued.
SKEIN_EXPORT Event defer_marker(const Queue& queue, std::size_t device_idx);
// The device's backend queue, without settling its marker: for the calls that defer markers,
// which get their backend queues before they enqueue.
SKEIN_EXPORT QueueAdapter& unsettled_device_queue(const Queue& queue, std::size_t device_idx);

}  // namespace skein::detail

// SPDX-License-Identifier: BSD-3-Clause
// Events recorded when first needed (skein/detail/deferred_marker.hpp).
#include "skein/detail/deferred_marker.hpp"

#include <algorithm>
#include <exception>

#include "skein/detail/errors.hpp"
#include "skein/detail/front.hpp"

namespace skein::detail {

void MarkerSlots::update_any() noexcept {
  any.store(std::any_of(pending.begin(), pending.end(), [](const auto& m) { return m != nullptr; }),
            std::memory_order_release);
}

void MarkerSlots::settle(std::size_t device_idx) {
  std::lock_guard lock(mutex);
  if (device_idx >= pending.size() || !pending[device_idx]) return;
  // Held only here: nobody can ever ask for it.
  if (pending[device_idx].use_count() == 1) {
    pending[device_idx].reset();
    update_any();
    return;
  }
  // Keeps it alive while record_locked() takes it off the slot.
  const std::shared_ptr<DeferredMarker> marker = pending[device_idx];
  marker->record_locked();
}

void MarkerSlots::close() noexcept {
  std::lock_guard lock(mutex);
  for (auto& slot : pending) {
    if (!slot) continue;
    const std::shared_ptr<DeferredMarker> marker = slot;
    if (marker.use_count() > 2) {
      try {
        marker->record_locked();
      } catch (const std::exception& e) {
        marker->failure_ = e.what();
        marker->done_.store(true, std::memory_order_release);
      }
    }
    slot.reset();
  }
  owner = nullptr;
  any.store(false, std::memory_order_release);
}

void DeferredMarker::record_locked() {
  if (done_.load(std::memory_order_relaxed)) return;
  if (slots_->owner == nullptr) {  // not reached: close() records every marker still held
    failure_ = "it was not recorded before its queue went";
    done_.store(true, std::memory_order_release);
    return;
  }
  Queue::Impl& queue = *slots_->owner;
  event_ = queue.queues[device_idx_]->record_untimed();
  results_ = results_for_event(queue, device_idx_);
  done_.store(true, std::memory_order_release);
  if (device_idx_ < slots_->pending.size() && slots_->pending[device_idx_].get() == this) {
    slots_->pending[device_idx_].reset();
    slots_->update_any();
  }
}

EventAdapter& DeferredMarker::recorded() {
  if (!done_.load(std::memory_order_acquire)) {
    std::lock_guard lock(slots_->mutex);
    // A queue that is gone recorded its markers as it went (close()).
    if (!done_.load(std::memory_order_relaxed)) record_locked();
  }
  if (!event_) {
    raise_in(SKEIN_HERE, "Event", "Keep the queue until its events are used.",
             "the queue of this collective's event was destroyed, and the event could not be "
             "recorded then: {}",
             failure_);
  }
  return *event_;
}

}  // namespace skein::detail

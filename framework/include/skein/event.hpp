// SPDX-License-Identifier: BSD-3-Clause
// A point in a device's queue.
#pragma once

#include <memory>

#include "skein/export.hpp"

namespace skein {

namespace detail {
class EventAdapter;
class PendingResults;
struct EventAccess;
}  // namespace detail

// A cheap handle: copies are the same event.
// Threads: an Event and its copies may be waited for, queried and timed from any number of threads
// at once (the backends' event calls are thread-safe, and the CUDA backend's event pool is locked).
class SKEIN_EXPORT Event {
 public:
  Event() = default;
  explicit Event(std::shared_ptr<detail::EventAdapter> adapter) : adapter_(std::move(adapter)) {}

  // Blocks until all work before the event is done. When that work includes results the host
  // may have only once confirmed (a collective over NCCL, whose agreement check runs alongside),
  // it confirms them first and raises what the check found instead: a LogicError for calls the
  // ranks did not agree on, a TimeoutError when the check did not complete in time.
  void wait() const;
  // True when all work before the event is done (and confirmed, as for wait(), which raises the
  // same errors here).
  bool query() const;
  // Milliseconds from `start` to this event; both must be done and on the same device.
  double time_since(const Event& start) const;
  double time_till(const Event& end) const { return end.time_since(*this); }
  bool valid() const { return adapter_ != nullptr; }

  const std::shared_ptr<detail::EventAdapter>& adapter() const { return adapter_; }

 private:
  friend struct detail::EventAccess;
  std::shared_ptr<detail::EventAdapter> adapter_;
  // What its host completions confirm first (skein/detail/pending_results.hpp); null when nothing.
  std::shared_ptr<const detail::PendingResults> results_;
};

}  // namespace skein

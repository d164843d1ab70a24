// SPDX-License-Identifier: BSD-3-Clause
// Results that the host may have only once something outside the queue has confirmed them.
//
// A collective over NCCL is enqueued before the ranks have compared what they were asked to do
// (the agreement check runs alongside, on the host): its output on a device is right only if every
// rank made the same call. The layer that enqueues such work registers it here, on the queue and
// device that hold it (hold_results); every host completion of that work then confirms it first:
// Queue::synchronize, Event::wait and Event::query (for events recorded after it, or on queues
// that waited for such an event), and the blocking copies to the host (Buffer::get, Array::get).
// A confirmation waits for the check (microseconds when the ranks agree) and raises what it found
// otherwise, before the host waits for the device, so that neither a wrong value nor a hang on
// work the other ranks never joined reaches the caller. Nothing here sits on the launch path: a
// registration is a push onto a small per-device list.
//
// A check that failed stays failed: every later host completion on that queue raises again (make
// a new Queue, and new arrays, to go on), so that code which catches the first error and reads
// the data anyway still cannot read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "skein/event.hpp"
#include "skein/export.hpp"
#include "skein/queue.hpp"

namespace skein::detail {

// One source of confirmations (a Communicator's agreement check). Tickets number its work in the
// order it is confirmed: confirming ticket t confirms every ticket below it.
class SKEIN_EXPORT ResultCheck {
 public:
  virtual ~ResultCheck() = default;
  // Whether everything up to `ticket` is confirmed and right. Cheap; never blocks or throws.
  virtual bool confirmed(std::uint64_t ticket) const noexcept = 0;
  // One step without blocking: raises what makes the results unusable, when that is known;
  // otherwise returns confirmed(ticket). `call` names the host completion that asks.
  virtual bool poll(std::uint64_t ticket, const char* call) = 0;
  // Returns once everything up to `ticket` is confirmed, or raises what makes it unusable (a
  // LogicError for calls the ranks did not agree on, a TimeoutError after the check's deadline).
  virtual void confirm(std::uint64_t ticket, const char* call) = 0;
};

// What a queue's device, or an event, still has to confirm: at most one ticket per check (the
// highest). Copies are cheap while it is empty.
class SKEIN_EXPORT PendingResults {
 public:
  void add(const std::shared_ptr<ResultCheck>& check, std::uint64_t ticket);
  void add(const PendingResults& other);
  // Drops what is confirmed.
  void prune() noexcept;
  bool empty() const noexcept { return items_.empty(); }
  std::size_t size() const noexcept { return items_.size(); }
  // Blocks until everything is confirmed; raises the first failure.
  void confirm(const char* call) const;
  // Without blocking: whether everything is confirmed; raises a failure already known.
  bool poll(const char* call) const;

 private:
  std::vector<std::pair<std::shared_ptr<ResultCheck>, std::uint64_t>> items_;
};

// Registers work just enqueued on `queue`'s device `device_idx` whose results `check` must confirm
// (up to `ticket`) before the host may have them. Events recorded on that device afterwards carry
// it too.
SKEIN_EXPORT void hold_results(const Queue& queue, std::size_t device_idx,
                               const std::shared_ptr<ResultCheck>& check, std::uint64_t ticket);
// Confirms what `queue`'s device holds (blocking); raises as PendingResults::confirm. For host
// completions outside Queue and Event (a blocking copy to the host).
SKEIN_EXPORT void confirm_results(const Queue& queue, std::size_t device_idx, const char* call);
// What `queue`'s device `from` holds becomes held by its device `to` as well (work on `to` now
// waits for work on `from`: a copy between devices, wait_for_queue).
SKEIN_EXPORT void pass_results(const Queue& queue, std::size_t from, std::size_t to);

// The pending results an event carries (null when none), for the framework's own use.
struct EventAccess {
  static const std::shared_ptr<const PendingResults>& results(const Event& e) { return e.results_; }
  static void set_results(Event& e, std::shared_ptr<const PendingResults> results) {
    e.results_ = std::move(results);
  }
};

}  // namespace skein::detail

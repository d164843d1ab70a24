// SPDX-License-Identifier: BSD-3-Clause
// A queue over some or all devices of a context: one stream / command queue per device.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "skein/context.hpp"
#include "skein/event.hpp"
#include "skein/export.hpp"

namespace skein {

namespace detail {
class QueueAdapter;
struct ImplAccess;
}  // namespace detail

// The priority of a new queue's streams (PyCUDA's Stream(priority=...)), resolved per device
// against its range (queue_priority_range() in skein/driver.hpp): low() is the range's least
// urgent end, the default of every queue; high() its most urgent end; value(p) a number of the
// range in CUDA's terms (lower is more urgent). On CUDA, work of a high-priority stream is
// scheduled before pending work of lower ones (e.g. halo exchanges ahead of the interior update).
// OpenCL has no priorities (the range is {0, 0}): low() and high() both give 0, and value(p)
// refuses any p but 0.
class QueuePriority {
 public:
  constexpr QueuePriority() = default;
  static constexpr QueuePriority low() { return QueuePriority(Kind::low, 0); }
  static constexpr QueuePriority high() { return QueuePriority(Kind::high, 0); }
  static constexpr QueuePriority value(int priority) {
    return QueuePriority(Kind::value, priority);
  }

  enum class Kind { low, high, value };
  constexpr Kind kind() const { return kind_; }
  constexpr int number() const { return number_; }

 private:
  constexpr QueuePriority(Kind kind, int number) : kind_(kind), number_(number) {}
  Kind kind_ = Kind::low;
  int number_ = 0;
};

// Whether a queue's CUDA streams wait for the legacy default stream (stream 0) and it for them
// (PyCUDA's Stream(flags): 0 is blocking, CU_STREAM_NON_BLOCKING is not). Skein's queues are
// non_blocking unless asked: work of other libraries on stream 0 then does not serialise with
// them. blocking: work enqueued on stream 0 (a cudaMemcpy, a kernel launched on stream 0 by the
// application) starts after the queue's earlier work and before its later work. OpenCL has no
// default queue to order with: both are accepted and mean the same there.
enum class QueueSync { non_blocking, blocking };

// Flags of a recorded event (PyCUDA's event_flags). OpenCL has neither: disable_timing makes
// time_since() refuse the event as on CUDA; blocking_sync is accepted and changes nothing (the
// OpenCL driver decides how clWaitForEvents waits).
struct EventFlags {
  // CU_EVENT_BLOCKING_SYNC: Event::wait() sleeps until the event is done instead of spinning, as
  // ContextScheduling::blocking_sync does for the whole context.
  bool blocking_sync = false;
  // CU_EVENT_DISABLE_TIMING: cheaper; Event::time_since() refuses it (as record_marker()).
  bool disable_timing = false;
};

// A cheap handle: copies are the same queue (the same streams / command queues and pool).
// Threads: a Queue and its copies may take work from several threads at once (CUDA streams and
// OpenCL command queues accept it, the temporaries pool is locked, and the CUDA backend's event
// for copies between devices is made and recorded under a lock), the threads' work landing in the
// order their calls happen: give each thread its own Queue to keep its work in its order.
class SKEIN_EXPORT Queue {
 public:
  // A queue on every device of the context.
  explicit Queue(const Context& context);
  // A queue on the given devices (indices in the context).
  Queue(const Context& context, std::vector<std::size_t> device_idxs);
  // With a priority (every device of the queue): a priority outside a device's range raises
  // LogicError naming the device and its range.
  Queue(const Context& context, std::vector<std::size_t> device_idxs, QueuePriority priority);
  Queue(const Context& context, QueuePriority priority);
  // With a priority and QueueSync (blocking: cuStreamCreateWithPriority without
  // CU_STREAM_NON_BLOCKING).
  Queue(const Context& context, std::vector<std::size_t> device_idxs, QueuePriority priority,
        QueueSync sync);
  static Queue on_device_idxs(const Context& context, std::vector<std::size_t> device_idxs) {
    return Queue(context, std::move(device_idxs));
  }

  const Context& context() const;
  const std::vector<std::size_t>& device_idxs() const;
  bool has_device(std::size_t device_idx) const;
  // The priority of the queue's stream on one device, as the driver reports it
  // (cuStreamGetPriority; 0 on OpenCL).
  int priority(std::size_t device_idx) const;
  // Whether the queue's stream on one device is blocking (cuStreamGetFlags; for a stream of the
  // application's too). OpenCL: what the queue was made with.
  QueueSync sync(std::size_t device_idx) const;

  // Blocks until the work enqueued on every device of the queue is done.
  void synchronize() const;
  void synchronize(std::size_t device_idx) const;

  // Records an event after the work enqueued so far on one device.
  Event record_event(std::size_t device_idx) const;
  // The same without timing: cheaper to record (CUDA), for events that only say when work is done
  // (wait, query, Queue::wait_for); time_since() refuses it.
  Event record_marker(std::size_t device_idx) const;
  // The same with flags (PyCUDA's Event(flags).record(stream)): record_event(d, {}) is
  // record_event(d), record_event(d, {.disable_timing = true}) is record_marker(d).
  Event record_event(std::size_t device_idx, const EventFlags& flags) const;
  // Later work on `device_idx` (every device, in the overload without it) waits for `event`.
  void wait_for(const Event& event, std::size_t device_idx) const;
  void wait_for(const Event& event) const;

  // The backend queue of one device (throws LogicError naming the queue's devices otherwise).
  detail::QueueAdapter& device_queue(std::size_t device_idx) const;

  friend bool operator==(const Queue& a, const Queue& b) { return a.impl_ == b.impl_; }

  struct Impl;

 private:
  friend struct detail::ImplAccess;
  explicit Queue(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  const std::shared_ptr<Impl>& impl() const { return impl_; }
  std::shared_ptr<Impl> impl_;
};

}  // namespace skein

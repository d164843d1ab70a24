// SPDX-License-Identifier: BSD-3-Clause
#include "skein/queue.hpp"

#include <fmt/ranges.h>

#include <algorithm>

#include "skein/detail/errors.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"
#include "skein/detail/pending_results.hpp"

namespace skein {

namespace {
std::vector<std::size_t> all_indices(const Context& context) {
  std::vector<std::size_t> idxs(context.num_devices());
  for (std::size_t i = 0; i < idxs.size(); ++i) idxs[i] = i;
  return idxs;
}
}  // namespace

Queue::Queue(const Context& context) : Queue(context, all_indices(context)) {}

Queue::Queue(const Context& context, std::vector<std::size_t> device_idxs)
    : Queue(context, std::move(device_idxs), QueuePriority::low()) {}

Queue::Queue(const Context& context, QueuePriority priority)
    : Queue(context, all_indices(context), priority) {}

Queue::Queue(const Context& context, std::vector<std::size_t> device_idxs, QueuePriority priority)
    : Queue(context, std::move(device_idxs), priority, QueueSync::non_blocking) {}

Queue::Queue(const Context& context, std::vector<std::size_t> device_idxs, QueuePriority priority,
             QueueSync sync) {
  if (device_idxs.empty()) {
    detail::raise_in(SKEIN_HERE, "Queue", "Give at least one device index.",
                     "a queue needs at least one device");
  }
  auto impl = std::make_shared<Impl>(context);
  impl->queues.resize(context.num_devices());
  for (std::size_t idx : device_idxs) {
    detail::check_device_idx(context, idx, "Queue");
    if (impl->queues[idx]) {
      detail::raise_in(SKEIN_HERE, "Queue", "List each device index once.",
                       "device index {} is given twice", idx);
    }
    auto& adapter = *detail::impl_of(context)->adapter;
    const QueuePriorityRange range = adapter.queue_priority_range(idx);
    int number = range.least;
    if (priority.kind() == QueuePriority::Kind::high) number = range.greatest;
    if (priority.kind() == QueuePriority::Kind::value) {
      number = priority.number();
      // CUDA's numbers: greatest <= least.
      if (number < range.greatest || number > range.least) {
        detail::raise_in(SKEIN_HERE, "Queue",
                         "Pick a priority in the device's range (queue_priority_range()), or "
                         "QueuePriority::high() / low() for its ends.",
                         "priority {} is outside the range of {}: {} (most urgent) to {} (least "
                         "urgent)",
                         number, context.device(idx).description(), range.greatest, range.least);
      }
    }
    impl->queues[idx] = adapter.make_queue(idx, number, sync);
  }
  impl->device_idxs = std::move(device_idxs);
  impl_ = std::move(impl);
}

namespace detail {
Queue wrap_queue(const Context& context, std::vector<std::size_t> device_idxs,
                 std::vector<std::unique_ptr<QueueAdapter>> queues, const char* call) {
  if (device_idxs.empty() || device_idxs.size() != queues.size()) {
    raise_in(SKEIN_HERE, call, "Give one native queue per device index.",
             "{} device index(es) and {} native queue(s) were given", device_idxs.size(),
             queues.size());
  }
  auto impl = std::make_shared<Queue::Impl>(context);
  impl->queues.resize(context.num_devices());
  for (std::size_t i = 0; i < device_idxs.size(); ++i) {
    const std::size_t idx = device_idxs[i];
    check_device_idx(context, idx, call);
    if (impl->queues[idx]) {
      raise_in(SKEIN_HERE, call, "List each device index once.", "device index {} is given twice",
               idx);
    }
    impl->queues[idx] = std::move(queues[i]);
  }
  impl->device_idxs = std::move(device_idxs);
  return ImplAccess::make<Queue>(std::move(impl));
}
}  // namespace detail

const Context& Queue::context() const { return impl_->context; }
const std::vector<std::size_t>& Queue::device_idxs() const { return impl_->device_idxs; }

bool Queue::has_device(std::size_t device_idx) const {
  return device_idx < impl_->queues.size() && impl_->queues[device_idx] != nullptr;
}

int Queue::priority(std::size_t device_idx) const { return device_queue(device_idx).priority(); }

QueueSync Queue::sync(std::size_t device_idx) const { return device_queue(device_idx).sync(); }

Queue::Impl::~Impl() { markers->close(); }

detail::QueueAdapter& Queue::device_queue(std::size_t device_idx) const {
  detail::QueueAdapter& adapter = detail::unsettled_device_queue(*this, device_idx);
  // Work enqueued from here on is not part of a pending marker's event: record it first.
  if (impl_->markers->any.load(std::memory_order_acquire)) impl_->markers->settle(device_idx);
  return adapter;
}

detail::QueueAdapter& detail::unsettled_device_queue(const Queue& queue, std::size_t device_idx) {
  const auto& impl = detail::impl_of(queue);
  if (!queue.has_device(device_idx)) {
    detail::raise_in(SKEIN_HERE, "Queue::device_queue",
                     "Use a queue that includes the device, e.g. Queue(context).",
                     "device {} is not in this queue (its devices: {})", device_idx,
                     fmt::join(impl->device_idxs, ", "));
  }
  return *impl->queues[device_idx];
}

// Results held on the queue's devices are confirmed before the host waits for them: work that
// the other ranks never joined may never finish (skein/detail/pending_results.hpp).
void Queue::synchronize() const {
  if (impl_->holds_results.load(std::memory_order_acquire)) {
    for (std::size_t idx : impl_->device_idxs)
      detail::confirm_results(*this, idx, "Queue::synchronize");
  }
  for (std::size_t idx : impl_->device_idxs) impl_->queues[idx]->synchronize();
}

void Queue::synchronize(std::size_t device_idx) const {
  detail::QueueAdapter& adapter = device_queue(device_idx);
  detail::confirm_results(*this, device_idx, "Queue::synchronize");
  adapter.synchronize();
}

namespace {
Event with_results(Event event, Queue::Impl& impl, std::size_t device_idx) {
  if (auto results = detail::results_for_event(impl, device_idx)) {
    detail::EventAccess::set_results(event, std::move(results));
  }
  return event;
}
}  // namespace

Event Queue::record_event(std::size_t device_idx) const {
  return with_results(Event(device_queue(device_idx).record()), *impl_, device_idx);
}

Event Queue::record_marker(std::size_t device_idx) const {
  return with_results(Event(device_queue(device_idx).record_untimed()), *impl_, device_idx);
}

Event Queue::record_event(std::size_t device_idx, const EventFlags& flags) const {
  return with_results(Event(device_queue(device_idx).record_flags(flags)), *impl_, device_idx);
}

Event detail::defer_marker(const Queue& queue, std::size_t device_idx) {
  const auto& impl = detail::impl_of(queue);
  (void)unsettled_device_queue(queue, device_idx);  // refuses a device the queue lacks
  std::shared_ptr<EventAdapter> marker;
  {
    MarkerSlots& slots = *impl->markers;
    std::lock_guard lock(slots.mutex);
    if (slots.pending.size() <= device_idx) slots.pending.resize(impl->queues.size());
    auto& pending = slots.pending[device_idx];
    if (!pending) {
      pending = std::make_shared<DeferredMarker>(impl->markers, device_idx);
      slots.any.store(true, std::memory_order_release);
    }
    marker = pending;
  }
  // Its results are taken when it is recorded (DeferredMarker::held_results).
  return Event(std::move(marker));
}

void Queue::wait_for(const Event& event, std::size_t device_idx) const {
  if (!event.valid()) {
    detail::raise_in(SKEIN_HERE, "Queue::wait_for", "Pass an event from record_event().",
                     "the event is empty");
  }
  device_queue(device_idx).wait_for(event.adapter()->recorded());
  // Later work on the device depends on the event's work: so do its host completions.
  if (const auto& results = detail::EventAccess::results(event)) {
    detail::take_results(*impl_, device_idx, *results);
  }
  if (const auto held = event.adapter()->held_results())
    detail::take_results(*impl_, device_idx, *held);
}

void Queue::wait_for(const Event& event) const {
  for (std::size_t idx : impl_->device_idxs) wait_for(event, idx);
}

}  // namespace skein

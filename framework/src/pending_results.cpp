// SPDX-License-Identifier: BSD-3-Clause
// Results confirmed before the host has them (skein/detail/pending_results.hpp): the sets, and
// the queues' per-device lists.
#include "skein/detail/pending_results.hpp"

#include <algorithm>
#include <mutex>

#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"

namespace skein::detail {

void PendingResults::add(const std::shared_ptr<ResultCheck>& check, std::uint64_t ticket) {
  for (auto& [c, t] : items_) {
    if (c == check) {
      t = std::max(t, ticket);
      return;
    }
  }
  items_.emplace_back(check, ticket);
}

void PendingResults::add(const PendingResults& other) {
  for (const auto& [c, t] : other.items_) add(c, t);
}

void PendingResults::prune() noexcept {
  std::erase_if(items_, [](const auto& item) { return item.first->confirmed(item.second); });
}

void PendingResults::confirm(const char* call) const {
  for (const auto& [c, t] : items_) {
    if (!c->confirmed(t)) c->confirm(t, call);
  }
}

bool PendingResults::poll(const char* call) const {
  bool all = true;
  for (const auto& [c, t] : items_) {
    if (!c->confirmed(t) && !c->poll(t, call)) all = false;
  }
  return all;
}

namespace {

// Under the queue's results_mutex: the device's set, made to exist.
PendingResults& set_of(Queue::Impl& impl, std::size_t idx) {
  if (impl.results.size() <= idx) {
    impl.results.resize(std::max(impl.queues.size(), idx + 1));
    impl.results_snapshots.resize(impl.results.size());
  }
  return impl.results[idx];
}

// Under the lock: after a change of device idx's set, its snapshot is made again when asked.
void changed(Queue::Impl& impl, std::size_t idx) { impl.results_snapshots[idx].reset(); }

// Under the lock: drops what is confirmed from device idx's set.
void prune_at(Queue::Impl& impl, std::size_t idx) {
  PendingResults& p = set_of(impl, idx);
  const std::size_t before = p.size();
  p.prune();
  if (p.size() != before) changed(impl, idx);
}

// Under the lock: whether any device still holds results.
void update_holds(Queue::Impl& impl) {
  const bool any = std::any_of(impl.results.begin(), impl.results.end(),
                               [](const PendingResults& p) { return !p.empty(); });
  impl.holds_results.store(any, std::memory_order_release);
}

// What device `idx` holds, pruned (empty when nothing).
PendingResults held_on(Queue::Impl& impl, std::size_t idx) {
  std::lock_guard lock(impl.results_mutex);
  prune_at(impl, idx);
  update_holds(impl);
  return impl.results[idx];
}

}  // namespace

void hold_results(const Queue& queue, std::size_t device_idx,
                  const std::shared_ptr<ResultCheck>& check, std::uint64_t ticket) {
  Queue::Impl& impl = *impl_of(queue);
  std::lock_guard lock(impl.results_mutex);
  prune_at(impl, device_idx);
  impl.results[device_idx].add(check, ticket);
  changed(impl, device_idx);
  impl.holds_results.store(true, std::memory_order_release);
}

void confirm_results(const Queue& queue, std::size_t device_idx, const char* call) {
  Queue::Impl& impl = *impl_of(queue);
  if (!impl.holds_results.load(std::memory_order_acquire)) return;
  const PendingResults held = held_on(impl, device_idx);
  if (held.empty()) return;
  held.confirm(call);
  std::lock_guard lock(impl.results_mutex);
  prune_at(impl, device_idx);
  update_holds(impl);
}

void pass_results(const Queue& queue, std::size_t from, std::size_t to) {
  Queue::Impl& impl = *impl_of(queue);
  if (!impl.holds_results.load(std::memory_order_acquire)) return;
  std::lock_guard lock(impl.results_mutex);
  prune_at(impl, from);
  if (impl.results[from].empty()) return;
  const PendingResults moved = impl.results[from];
  set_of(impl, to).add(moved);
  changed(impl, to);
}

// Queue's side (queue.cpp): the results an event recorded on `device_idx` now carries, and the
// results an event brings to a device that waits for it.
std::shared_ptr<const PendingResults> results_for_event(Queue::Impl& impl, std::size_t device_idx) {
  if (!impl.holds_results.load(std::memory_order_acquire)) return nullptr;
  std::lock_guard lock(impl.results_mutex);
  prune_at(impl, device_idx);
  update_holds(impl);
  if (impl.results[device_idx].empty()) return nullptr;
  auto& snapshot = impl.results_snapshots[device_idx];
  if (!snapshot) snapshot = std::make_shared<const PendingResults>(impl.results[device_idx]);
  return snapshot;
}

void take_results(Queue::Impl& impl, std::size_t device_idx, const PendingResults& results) {
  std::lock_guard lock(impl.results_mutex);
  set_of(impl, device_idx).add(results);
  changed(impl, device_idx);
  prune_at(impl, device_idx);
  update_holds(impl);
}

}  // namespace skein::detail

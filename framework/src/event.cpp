// SPDX-License-Identifier: BSD-3-Clause
#include "skein/event.hpp"

#include "skein/detail/adapter.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/pending_results.hpp"

namespace skein {

namespace {
detail::EventAdapter& checked(const std::shared_ptr<detail::EventAdapter>& adapter,
                              const char* call) {
  if (!adapter) {
    detail::raise_in(SKEIN_HERE, call, "Use an event from Queue::record_event().",
                     "the event is empty");
  }
  return *adapter;
}
}  // namespace

void Event::wait() const {
  detail::EventAdapter& adapter = checked(adapter_, "Event::wait");
  detail::EventAdapter& recorded = adapter.recorded();
  // Confirmed before the wait: work the other ranks never joined may never finish.
  if (results_) results_->confirm("Event::wait");
  if (const auto held = adapter.held_results()) held->confirm("Event::wait");
  recorded.wait();
}

bool Event::query() const {
  detail::EventAdapter& adapter = checked(adapter_, "Event::query");
  detail::EventAdapter& recorded = adapter.recorded();
  if (results_ && !results_->poll("Event::query")) return false;
  if (const auto held = adapter.held_results(); held && !held->poll("Event::query")) return false;
  return recorded.query();
}
double Event::time_since(const Event& start) const {
  return checked(adapter_, "Event::time_since")
      .recorded()
      .time_since(checked(start.adapter_, "Event::time_since").recorded());
}

}  // namespace skein

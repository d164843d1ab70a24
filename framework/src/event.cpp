// SPDX-License-Identifier: BSD-3-Clause
#include "skein/event.hpp"

#include "skein/detail/adapter.hpp"
#include "skein/detail/errors.hpp"

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

void Event::wait() const { checked(adapter_, "Event::wait").wait(); }
bool Event::query() const { return checked(adapter_, "Event::query").query(); }
double Event::time_since(const Event& start) const {
  return checked(adapter_, "Event::time_since")
      .time_since(checked(start.adapter_, "Event::time_since"));
}

}  // namespace skein

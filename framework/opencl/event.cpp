// SPDX-License-Identifier: BSD-3-Clause
#include "adapters.hpp"
#include "check.hpp"
#include "skein/detail/errors.hpp"

namespace skein::detail::opencl {

OclEvent::~OclEvent() { clReleaseEvent(event_); }

void OclEvent::wait() { SKEIN_CL_CHECK(clWaitForEvents(1, &event_), device_); }

bool OclEvent::query() {
  cl_int status = CL_COMPLETE;
  SKEIN_CL_CHECK(
      clGetEventInfo(event_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status, nullptr),
      device_);
  if (status < 0) raise_error(status, "the event's command", device_, SKEIN_HERE);
  return status == CL_COMPLETE;
}

double OclEvent::time_since(EventAdapter& start) {
  auto& begin = static_cast<OclEvent&>(start);
  if (!timed_ || !begin.timed_) {
    raise_in(SKEIN_HERE, "Event::time_since", "Record the events with Queue::record_event().",
             "an event recorded without timing (EventFlags::disable_timing) cannot be timed");
  }
  wait();
  begin.wait();
  cl_ulong t0 = 0, t1 = 0;
  SKEIN_CL_CHECK(
      clGetEventProfilingInfo(begin.event_, CL_PROFILING_COMMAND_END, sizeof(t0), &t0, nullptr),
      device_);
  SKEIN_CL_CHECK(
      clGetEventProfilingInfo(event_, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, nullptr), device_);
  return (static_cast<double>(t1) - static_cast<double>(t0)) * 1e-6;
}

}  // namespace skein::detail::opencl

// SPDX-License-Identifier: BSD-3-Clause
// The Communicator's watchdog thread (asynchronous backends: calls past their deadline, errors that
// arrive later, the agreement check's rounds) and the verdicts it finds, raised by the next call.
#include "communicator_impl.hpp"

#include "skein/detail/watch_order.hpp"

namespace skein {

void Communicator::Impl::start_watchdog() {
  watchdog = std::thread([this] { watchdog_loop(); });
}

void Communicator::Impl::watchdog_loop() {
  // Calls do not wake this thread (a wake-up costs the caller a system call, which small
  // collectives would feel): it looks every 5 ms while there is work (calls to compare or to
  // watch), else every 100 ms, which is nothing against timeouts of seconds.
  // The calls' watches move from `watches` (pushed by the calls, under the mutex) to `watched`,
  // this thread's own, and their events are asked without the mutex: a call never waits for
  // this thread's queries.
  std::deque<Watch> watched;
  std::unique_lock lock(mutex);
  while (!stop) {
    // Calls compared alongside need a round now and then (host completions that wait for a
    // verdict run the rounds themselves): every 5 ms, as for watched calls. The thread often
    // shares a core with the launching thread (Open MPI binds a job of one or two ranks to one
    // core per rank), so fewer wake-ups leave it more of the core.
    const bool busy = (thread_multiple && comparing()) || !watches.empty() || !watched.empty();
    const auto period = busy ? std::chrono::microseconds(5000) : std::chrono::microseconds(100000);
    wake.wait_for(lock, period);
    if (stop) break;
    if (thread_multiple && !watchdog_failure && comparing()) {
      // Shared with the host completions that wait for a verdict (progress_mutex comes first).
      lock.unlock();
      progress_shared();
      lock.lock();
    }
    if (watchdog_failure) {
      watched.clear();
      continue;
    }
    const auto now = CollectiveClock::now();
    if (in_call && now >= in_call->deadline) {
      backend->abort();
      const double waited = std::chrono::duration<double>(now - in_call->start).count();
      set_failure_locked(
          Verdict{Failure::timeout,
                  fmt::format("{} did not return within SKEIN_COLLECTIVE_TIMEOUT={} s "
                              "(waited {:.1f} s)",
                              in_call->label.str(), timeout_s, waited),
                  {}});
      in_call.reset();
      watches.clear();
      watched.clear();
      continue;
    }
    if (watchdog_failure) continue;
    for (auto& w : watches) watched.push_back(std::move(w));
    watches.clear();
    if (watched.empty()) continue;
    lock.unlock();
    // The completed calls go, oldest first (detail::completed_front: a run of calls on the same
    // streams is settled by asking its last call, then by halving).
    std::optional<Verdict> verdict;
    while (!watched.empty()) {
      const auto [finished, run] = detail::completed_front(
          watched.size(), [&](std::size_t i) { return watched[i].same_streams(watched.front()); },
          [&](std::size_t i) { return watched[i].done(); });
      watched.erase(watched.begin(), watched.begin() + static_cast<std::ptrdiff_t>(finished));
      if (finished == run) continue;
      // The oldest call still running: an asynchronous error, or its deadline, ends the watch.
      const Watch& w = watched.front();
      std::string error = backend->async_error();
      if (error.empty() && now < w.deadline) break;
      const double waited = std::chrono::duration<double>(now - w.start).count();
      if (!error.empty()) {
        verdict = Verdict{Failure::error, fmt::format("{} failed: {}", w.label.str(), error), {}};
      } else {
        verdict = Verdict{Failure::timeout,
                          fmt::format("{} did not finish within SKEIN_COLLECTIVE_TIMEOUT={} s "
                                      "(waited {:.1f} s)",
                                      w.label.str(), timeout_s, waited),
                          {}};
      }
      break;
    }
    lock.lock();
    if (verdict && !watchdog_failure) {
      backend->abort();
      set_failure_locked(std::move(*verdict));
      watches.clear();
      watched.clear();
    }
  }
}

void Communicator::Impl::raise_verdict(const Verdict& v, const std::string& call) {
  results->fail(v);
  switch (v.kind) {
    case Failure::mismatch:
      throw LogicError(ErrorInfo{
          .what = v.message + "; the communicator was aborted",
          .call = v.call.empty() ? call : v.call,
          .hint =
              "Every rank must make the same collective calls, in the same order, with the "
              "same counts, dtypes, roots and reductions. Create a new Communicator to go on."});
    case Failure::timeout:
      throw TimeoutError(
          ErrorInfo{.what = v.message + "; the communicator was aborted",
                    .call = call,
                    .hint = "Another rank probably did not make this call, or failed. Create a new "
                            "Communicator to go on."});
    case Failure::error: break;
  }
  throw RuntimeError(
      ErrorInfo{.what = v.message + "; the communicator was aborted",
                .call = call,
                .hint = "Another rank probably failed. Create a new Communicator to go on."});
}

void Communicator::Impl::check_usable(const std::string& call) {
#if SKEIN_HAS_MPI
  // Below MPI_THREAD_MULTIPLE the calling thread compares the calls compared alongside, every
  // few calls (a round costs an MPI call; a mismatch becomes the failure raised below).
  if (!thread_multiple && broken.empty() && ++calls_since_progress >= 8 && comparing()) {
    calls_since_progress = 0;
    progress_shared();
  }
#endif
  if (watchdog.joinable() && watchdog_failed.load(std::memory_order_acquire)) {
    std::lock_guard lock(mutex);
    if (watchdog_failure && broken.empty()) {
      backend->abort();
      broken = watchdog_failure->message;
      raise_verdict(*watchdog_failure, call);
    }
  }
  if (!broken.empty()) {
    throw RuntimeError(
        ErrorInfo{.what = fmt::format("the communicator was aborted earlier ({})", broken),
                  .call = call,
                  .hint = "Create a new Communicator."});
  }
}

}  // namespace skein

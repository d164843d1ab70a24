// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Internal: which of the watchdog's oldest calls completed, asking as few of them as the streams'
// order allows (communicator.cpp, Communicator::Impl::watchdog_loop).
#include <cstddef>
#include <utility>

namespace skein::detail {

// Of `n` calls, oldest first: `same(i)` says whether call i ran on the same queue and devices as
// call 0, and `done(i)` whether it completed (queries its events). Calls on the same streams
// complete in the order they were made, so the run of calls like call 0 (its first `run`) is
// settled by asking its last call, and, when that one is still running, by halving the run.
// Returns {finished, run}: calls 0 .. finished-1 completed; finished < run means call `finished`
// is still running (asked). Costs O(n) `same` and O(log run) `done` calls; n >= 1.
template <class Same, class Done>
std::pair<std::size_t, std::size_t> completed_front(std::size_t n, Same&& same, Done&& done) {
  std::size_t run = 1;
  while (run < n && same(run)) ++run;
  if (done(run - 1)) return {run, run};
  std::size_t lo = 0, hi = run - 1;  // the first call still running lies in [lo, hi]
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (done(mid)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return {lo, run};
}

}  // namespace skein::detail

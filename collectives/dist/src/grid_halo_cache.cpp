// SPDX-License-Identifier: BSD-3-Clause
// The routines of the halo exchange, kept per GridArray (grid_halo_cache.hpp).
#include "grid_halo_cache.hpp"

#include <algorithm>

namespace skein::detail::grid {

std::shared_ptr<CachedRoutine> HaloCache::find(const Queue& queue, std::span<const Dtype> dtypes,
                                               const std::function<HaloRoutine()>& make) {
  const std::lock_guard lock(mutex_);
  ++clock_;
  for (Entry& e : entries_) {
    if (e.queue == queue &&
        std::equal(e.dtypes.begin(), e.dtypes.end(), dtypes.begin(), dtypes.end())) {
      e.last_used = clock_;
      return e.routine;
    }
  }
  // Made under the lock: making one talks to no other rank, so nothing waits on another thread.
  auto routine = std::make_shared<CachedRoutine>();
  routine->routine = make();
  ++made_;
  if (entries_.size() >= kMaxRoutines) {
    entries_.erase(
        std::min_element(entries_.begin(), entries_.end(),
                         [](const Entry& a, const Entry& b) { return a.last_used < b.last_used; }));
  }
  entries_.push_back(
      Entry{queue, std::vector<Dtype>(dtypes.begin(), dtypes.end()), routine, clock_});
  return routine;
}

std::size_t HaloCache::size() const {
  const std::lock_guard lock(mutex_);
  return entries_.size();
}

std::size_t HaloCache::made() const {
  const std::lock_guard lock(mutex_);
  return made_;
}

}  // namespace skein::detail::grid

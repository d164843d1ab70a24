// SPDX-License-Identifier: BSD-3-Clause
// Where the halo exchange keeps its routines (grid_halo_plan.hpp), so that a repeated call plans,
// compiles and allocates nothing.
//
// Each GridArray (and its copies, which share it) holds one cache, made with the array; an
// exchange uses the cache of its first array. A routine depends only on what is fixed for that
// cache's life, the layout and the communicator (the array's own), and on the call's dtypes and
// queue, which are its key; the arrays themselves are given to every call (their blocks may be
// other arrays' of the same layout), so a routine never outlives the memory it reads or writes
// and nothing in it goes stale. The cache keeps the queue of each routine alive, and at most
// kMaxRoutines routines, dropping the least recently used (its staging is freed when its last
// launch is done: plain allocations, whose release waits for the device).
//
// Threads: find() may be called from several threads at once; a routine is run under its own
// lock, so two calls on one queue from two threads take turns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "grid_halo_plan.hpp"
#include "skein/dtype.hpp"
#include "skein/grid_array.hpp"
#include "skein/queue.hpp"

namespace skein::detail::grid {

// A routine with the lock its runs take.
struct CachedRoutine {
  HaloRoutine routine;
  std::mutex running;
};

class HaloCache {
 public:
  static constexpr std::size_t kMaxRoutines = 8;

  // The routine for (queue, dtypes), made by `make` on first use.
  std::shared_ptr<CachedRoutine> find(const Queue& queue, std::span<const Dtype> dtypes,
                                      const std::function<HaloRoutine()>& make);
  // How many routines are kept, and how many were made in all (for the tests).
  std::size_t size() const;
  std::size_t made() const;

 private:
  struct Entry {
    Queue queue;
    std::vector<Dtype> dtypes;
    std::shared_ptr<CachedRoutine> routine;
    std::uint64_t last_used = 0;
  };
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
  std::uint64_t clock_ = 0;
  std::size_t made_ = 0;
};

// The cache of a GridArray (a private member of the public class).
struct GridArrayAccess {
  static HaloCache& halo_cache(const GridArray& a) { return *a.halo_cache_; }
};

}  // namespace skein::detail::grid

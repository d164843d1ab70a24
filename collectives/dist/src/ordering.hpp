// SPDX-License-Identifier: BSD-3-Clause
// Ordering work across queues, for the distributed arrays (dist_array.cpp) and their operations
// (dist_ops.cpp).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "skein/array.hpp"
#include "skein/queue.hpp"

namespace skein::detail {

// Operands may use different queues (a DistArray or ReplicatedArray makes its own unless it is
// given one), while an operation enqueues its work on one queue. So that calls stay ordered on
// each operand's queue, the work first waits for what the other operands' queues already hold on
// the local devices, and their later work waits for it (device-side markers, untimed events;
// nothing blocks): a write through another operand's queue neither overtakes nor is overtaken by
// the operation.
class Ordering {
 public:
  Ordering(const Queue& work, std::vector<std::size_t> devices)
      : work_(work), devices_(std::move(devices)) {}

  // Work enqueued on the work queue from now on runs after what `queue` holds now.
  void join(const Queue& queue) {
    if (queue == work_) return;
    for (const auto& q : others_) {
      if (q == queue) return;
    }
    for (std::size_t d : devices_) work_.wait_for(queue.record_marker(d), d);
    others_.push_back(queue);
  }

  // The same on one device only (a per-member array's queue, which may hold only that device):
  // work enqueued on the work queue from now on runs after what `queue` holds on `device` now.
  void join_device(const Queue& queue, std::size_t device) {
    if (queue == work_) return;
    for (const auto& q : others_) {
      if (q == queue) return;
    }
    for (const auto& [q, d] : single_) {
      if (q == queue && d == device) return;
    }
    work_.wait_for(queue.record_marker(device), device);
    single_.emplace_back(queue, device);
  }

  // Work enqueued on the joined queues from now on runs after what the work queue holds now.
  void release() const {
    for (const auto& [q, d] : single_) q.wait_for(work_.record_marker(d), d);
    if (others_.empty()) return;
    for (std::size_t d : devices_) {
      const Event done = work_.record_marker(d);
      for (const auto& q : others_) q.wait_for(done, d);
    }
  }

 private:
  Queue work_;
  std::vector<std::size_t> devices_;
  std::vector<Queue> others_;
  std::vector<std::pair<Queue, std::size_t>> single_;
};

// Joins each per-member array's queue on its device (Ordering::join_device).
inline void join_per_member(Ordering& order, const std::vector<Array>& arrays) {
  for (const Array& a : arrays) order.join_device(a.queue(), a.device_idx());
}

}  // namespace skein::detail

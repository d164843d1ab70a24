// SPDX-License-Identifier: BSD-3-Clause
// One time step of skein-heat, u -> v, as --halo-exchange says: the same for the row split
// (DistArray, heat_solver.hpp's Stencil) and the process grid (GridArray, heat_solver3d.hpp's
// GridStencil). `Kernels` has step(u, v) over whole blocks, and step_interior(u, v) on the fields'
// queue and step_edges(u, v) on the halo queue for the overlapped form.
//
// serial      u.exchange_halos() on the fields' queue, then Kernels::step.
// overlapped  a second queue (the halo queue, of --halo-priority) moves the halos and runs the edge
//             kernel while the fields' queue updates the interior. Per step: a marker is recorded
//             on the fields' queue (the previous step's interior), the interior kernel is enqueued
//             there; on the halo queue the exchange (with the MPI backend the host waits for its
//             messages here while the devices compute the interior), a wait for the marker (the
//             edge kernel reads points the previous interior wrote, and writes points of `v` the
//             previous interior read), the edge kernel; then the fields' queue waits for the halo
//             queue, so that the next step, and whatever comes after on the fields' queue, sees the
//             whole step. The exchange itself waits for nothing but the halo queue's own work:
//             every cell it sends lies next to the halo, which the previous step's edge kernel
//             wrote there, and the ghost cells it writes are read by nobody but that queue's edge
//             kernels. Only the first step after synchronize() has the halo queue wait for the
//             fields' queue first (the fields were written there). Between steps the fields' queue
//             may read the fields, not write them.
// Nothing waits on the host in a step: the queues are ordered by events on the devices.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include <skein/event.hpp>
#include <skein/queue.hpp>

namespace skein::heat {

template <class Field, class Kernels>
class HaloStepper {
 public:
  // `halo_queue`: the overlapped step's queue (the one `kernels` launches its edges on); none: the
  // serial step.
  HaloStepper(const Field& field, const Kernels& kernels, std::optional<Queue> halo_queue)
      : kernels_(kernels), queue_(field.queue()), halo_queue_(std::move(halo_queue)) {
    if (halo_queue_) {
      for (const auto& b : field.blocks()) {
        if (b.interior.size() > 0) devices_.push_back(b.device_idx);
      }
    }
  }
  bool overlapped() const { return halo_queue_.has_value(); }

  // v = step(u), enqueued.
  void operator()(const Field& u, const Field& v) const {
    if (!halo_queue_) {
      u.exchange_halos();
      kernels_.step(u, v);
      return;
    }
    markers_.clear();
    for (std::size_t d : devices_) markers_.push_back(queue_.record_marker(d));
    if (!ordered_) {
      for (std::size_t i = 0; i < devices_.size(); ++i)
        halo_queue_->wait_for(markers_[i], devices_[i]);
      ordered_ = true;
    }
    kernels_.step_interior(u, v);
    u.exchange_halos(*halo_queue_);
    for (std::size_t i = 0; i < devices_.size(); ++i)
      halo_queue_->wait_for(markers_[i], devices_[i]);
    kernels_.step_edges(u, v);
    for (std::size_t d : devices_) queue_.wait_for(halo_queue_->record_marker(d), d);
  }

  // The step's kernels without the exchange (for the halo time a step leaves exposed), on the same
  // queues. Writes v only.
  void kernels_only(const Field& u, const Field& v) const {
    if (!halo_queue_) {
      kernels_.step(u, v);
      return;
    }
    for (std::size_t d : devices_) halo_queue_->wait_for(queue_.record_marker(d), d);
    kernels_.step_interior(u, v);
    kernels_.step_edges(u, v);
    for (std::size_t d : devices_) queue_.wait_for(halo_queue_->record_marker(d), d);
  }

  // Waits for both queues; the next step orders the halo queue after the fields' queue again.
  void synchronize() const {
    if (halo_queue_) halo_queue_->synchronize();
    queue_.synchronize();
    ordered_ = false;
  }

 private:
  const Kernels& kernels_;
  Queue queue_;
  std::optional<Queue> halo_queue_;
  std::vector<std::size_t> devices_;    // of the blocks with points
  mutable std::vector<Event> markers_;  // per step: the fields' queue before the interior
  mutable bool ordered_ = false;        // the halo queue is after the fields' last writes
};

}  // namespace skein::heat

// SPDX-License-Identifier: BSD-3-Clause
// The grid path's time step, serial or overlapped (heat_step3d.hpp).
#include "heat_step3d.hpp"

#include <utility>

namespace skein::heat {

GridStepper::GridStepper(const GridArray& field, const GridStencil& stencil, std::optional<Queue> halo_queue)
    : stencil_(stencil), queue_(field.queue()), halo_queue_(std::move(halo_queue)) {
  if (halo_queue_) {
    for (const LocalGridBlock& b : field.blocks()) {
      if (!b.block.empty()) devices_.push_back(b.device_idx);
    }
  }
}

void GridStepper::operator()(const GridArray& u, const GridArray& v) const {
  if (!halo_queue_) {
    u.exchange_halos();
    stencil_.step(u, v);
    return;
  }
  markers_.clear();
  for (std::size_t d : devices_) markers_.push_back(queue_.record_marker(d));
  if (!ordered_) {
    for (std::size_t i = 0; i < devices_.size(); ++i) halo_queue_->wait_for(markers_[i], devices_[i]);
    ordered_ = true;
  }
  stencil_.step_interior(u, v);
  u.exchange_halos(*halo_queue_);
  for (std::size_t i = 0; i < devices_.size(); ++i) halo_queue_->wait_for(markers_[i], devices_[i]);
  stencil_.step_shell(u, v);
  for (std::size_t d : devices_) queue_.wait_for(halo_queue_->record_marker(d), d);
}

void GridStepper::kernels_only(const GridArray& u, const GridArray& v) const {
  if (!halo_queue_) {
    stencil_.step(u, v);
    return;
  }
  for (std::size_t d : devices_) halo_queue_->wait_for(queue_.record_marker(d), d);
  stencil_.step_interior(u, v);
  stencil_.step_shell(u, v);
  for (std::size_t d : devices_) queue_.wait_for(halo_queue_->record_marker(d), d);
}

void GridStepper::synchronize() const {
  if (halo_queue_) halo_queue_->synchronize();
  queue_.synchronize();
  ordered_ = false;
}

}  // namespace skein::heat

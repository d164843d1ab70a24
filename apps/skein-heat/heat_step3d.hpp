// SPDX-License-Identifier: BSD-3-Clause
// One time step of skein-heat on a process grid, as --halo-exchange says (the grid form of
// main.cpp's Stepper for the row split).
//
// serial      u.exchange_halos() on the fields' queue, then GridStencil::step over whole blocks.
// overlapped  a second queue (the halo queue, of --halo-priority) moves the halos and runs the
//             shell kernel while the fields' queue updates the interior boxes (GridSplit). Per
//             step: a marker is recorded on the fields' queue (the previous step's interior), the
//             interior kernel is enqueued there; on the halo queue the exchange (with the MPI
//             backend the host waits for its messages here while the devices compute the
//             interior), a wait for the marker (the shell reads points the previous interior
//             wrote, and writes points of `out` the previous interior read), the shell kernel;
//             then the fields' queue waits for the halo queue, so that the next step, and whatever
//             comes after on the fields' queue, sees the whole step. The exchange itself waits for
//             nothing but the halo queue's own work: every cell it sends lies in the shell, which
//             the previous step's shell kernel wrote there, and the ghost cells it writes are read
//             by nobody but that queue's shell kernels. Only the first step after synchronize()
//             has the halo queue wait for the fields' queue first (the fields were written there).
//             Between steps the fields' queue may read the fields, not write them.
// Nothing waits on the host in a step: the queues are ordered by events on the devices.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include <skein/event.hpp>
#include <skein/grid_array.hpp>
#include <skein/queue.hpp>

#include "heat_solver3d.hpp"

namespace skein::heat {

class GridStepper {
 public:
  // `halo_queue`: the overlapped step's queue (the one `stencil` launches its shells on); none:
  // the serial step.
  GridStepper(const GridArray& field, const GridStencil& stencil, std::optional<Queue> halo_queue);
  bool overlapped() const { return halo_queue_.has_value(); }

  // v = step(u), enqueued.
  void operator()(const GridArray& u, const GridArray& v) const;
  // The step's kernels without the exchange (for the halo time a step leaves exposed), on the
  // same queues. Writes v only.
  void kernels_only(const GridArray& u, const GridArray& v) const;
  // Waits for both queues; the next step orders the halo queue after the fields' queue again.
  void synchronize() const;

 private:
  const GridStencil& stencil_;
  Queue queue_;
  std::optional<Queue> halo_queue_;
  std::vector<std::size_t> devices_;           // of the blocks with points
  mutable std::vector<Event> markers_;         // per step: the fields' queue before the interior
  mutable bool ordered_ = false;               // the halo queue is after the fields' last writes
};

}  // namespace skein::heat

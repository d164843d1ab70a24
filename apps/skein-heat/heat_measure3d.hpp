// SPDX-License-Identifier: BSD-3-Clause
// What skein-heat's run on a process grid reports about its speed (the summary and --json): the
// same figures as the row split's (main.cpp's measure), measured the same way. Every figure is
// the slowest rank's / device's:
//   t_step       the median over the report intervals of the slowest rank's wall time per step
//   floor        the stencil's memory floor: the bytes one step must move on a device (read its
//                block's points once, write them once) at the bandwidth of a plain device copy of
//                as many bytes, measured here on the same device (one contiguous copy of the
//                block's points from the field into a scratch array)
//   t_kernel     the whole-block stencil kernel alone, device time
//   t_halo       one halo exchange alone, wall time
//   t_compute    the step's kernels without the exchange (interior and shell when overlapped),
//                wall time per step: the step time beyond it is the exchange left exposed
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <skein/grid_array.hpp>

#include "heat_solver3d.hpp"
#include "heat_step3d.hpp"

namespace skein::heat {

struct GridPerformance {
  double t_step = 0;       // s per step, median over the report intervals
  double t_step_mean = 0;  // s per step over the whole loop (checkpoints and reports excluded)
  double t_kernel = 0;
  double t_halo = 0;
  double t_compute = 0;
  bool overlapped = false;
  double floor = 0;                // bytes per step per device / copy bandwidth
  double copy_gbps = 0;            // device copy (read + write) of the slowest device
  std::size_t bytes_per_step = 0;  // on the busiest device
  std::size_t shell_points = 0;    // of the busiest device's block (0 when serial)
  std::size_t intervals = 0;
};

// Collective. `interval_times`: this rank's seconds per step of each report interval; `loop_s`
// the time loop's seconds without reports and checkpoints, over `steps` steps. Writes v and u's
// halos (u's points are left as they are): call it after the check and before anything else
// reads v.
GridPerformance measure_grid(const GridArray& u, const GridArray& v, const GridStencil& stencil,
                             const GridStepper& stepper, const std::vector<double>& interval_times,
                             double loop_s, std::int64_t steps);

}  // namespace skein::heat

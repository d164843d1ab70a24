// SPDX-License-Identifier: BSD-3-Clause
// What skein-heat's run on a process grid says at its end (rank 0): the summary on stdout and the
// --json file, with the row split's words and fields where they apply (main.cpp) and the grid's
// own (nz, boundary, process grid, layout, the block per device of --weak).
#pragma once

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <skein/checkpoint.hpp>
#include <skein/grid_layout.hpp>

#include "heat_checkpoint3d.hpp"
#include "heat_measure3d.hpp"
#include "heat_solver3d.hpp"

namespace skein::heat {

// What the time loop did.
struct GridLoop {
  double residual = NAN;  // of the last step, when a report came after it
  std::size_t checkpoints_written = 0;
  double loop_s = 0;                   // the steps' wall time (reports and checkpoints excluded)
  std::vector<double> interval_times;  // seconds per step of each report interval, this rank
};

struct GridReport {
  const GridRunOptions& o;      // with the global grid (nx, ny, nz) where --weak multiplied it
  const GridRunOptions& given;  // as given (with --weak: the block per device)
  const GridProblem& problem;
  const GridLayout& layout;
  std::size_t devices = 0;
  int ranks = 0;
  std::string api;
  std::string halo_mode;           // overlapped, serial, or none (one member, open walls: no halos)
  std::string halo_priority;       // of the overlapped step
  std::string tile3d;              // the kernel's work groups: XxYxZ/unroll (GridTile)
  std::string kernel3d;            // and the kernel: march or shared (GridKernel)
  std::size_t steps_per_pass = 1;  // time steps per launch (--steps-per-pass)
  GridStart start;
  GridLoop loop;
  double run_s = 0;
  CheckResult result;
  std::optional<GridPerformance> perf;  // when steps ran
  std::vector<CheckpointInfo> kept;
};

void print_grid_summary(const GridReport& report);
void write_grid_json(const GridReport& report);

}  // namespace skein::heat

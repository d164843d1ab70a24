// SPDX-License-Identifier: BSD-3-Clause
// Checkpoints of skein-heat's run on a process grid (--checkpoint-every, --restart with --nz,
// --grid or --boundary): the same files and semantics as the 2-D run's (main.cpp): DIR/checkpoints
// of CheckpointManager, the field "u" with the problem's parameters as attributes, --restart from
// the newest complete checkpoint (on any process grid and number of ranks: the field is stored
// whole), refused when its grid, dtype or parameters differ from the options; a fresh start over
// old checkpoints refused unless --overwrite (which deletes them).
#pragma once

#include <cstdint>
#include <optional>

#include <skein/checkpoint.hpp>
#include <skein/communicator.hpp>
#include <skein/grid_array.hpp>
#include <skein/hdf5.hpp>

#include "heat_solver3d.hpp"

namespace skein::heat {

// The problem's parameters, stored on checkpoints and heat.h5: nx, ny, nz, kx, ky, kz, alpha, dt,
// dtype, boundary, program.
hdf5::Attributes grid_attributes(const GridRunOptions& options, const GridProblem& problem);

// What prepare_grid_checkpoints found.
struct GridStart {
  std::int64_t step = 0;  // the first step to take from (the restored checkpoint's, or 0)
  std::optional<CheckpointInfo> restored;
};

// Collective. With --out: makes DIR, opens DIR/checkpoints into `manager`; with --restart reads the
// newest complete checkpoint into `u` (AgreedError, on every rank, when there is none or it does
// not fit the options; status 2 for a damaged one), else refuses old checkpoints unless --overwrite
// deletes them. Without --out nothing (the caller refused --restart and --checkpoint-every).
GridStart prepare_grid_checkpoints(Communicator& comm, const GridRunOptions& options,
                                   const GridProblem& problem, const hdf5::Attributes& attributes,
                                   const GridArray& u, std::optional<CheckpointManager>& manager);

}  // namespace skein::heat

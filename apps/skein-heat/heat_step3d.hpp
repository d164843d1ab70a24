// SPDX-License-Identifier: BSD-3-Clause
// One time step of skein-heat on a process grid, as --halo-exchange says: heat_stepper.hpp's
// HaloStepper over GridArrays and GridStencil (interior boxes, then the shell of each block).
#pragma once

#include <skein/grid_array.hpp>

#include "heat_solver3d.hpp"
#include "heat_stepper.hpp"

namespace skein::heat {

using GridStepper = HaloStepper<GridArray, GridStencil>;

}  // namespace skein::heat

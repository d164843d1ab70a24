// SPDX-License-Identifier: BSD-3-Clause
// Skein's umbrella header (the top target, Skein::skein): everything a simulation code uses. The
// framework (<skein/framework.hpp>, Skein::framework) and the layers across ranks: the MPI-aware
// runtime and the Communicator (Skein::comm), distributed arrays and their operations
// (Skein::dist), HDF5 files and checkpoints (Skein::io). A program that needs no MPI includes
// <skein/framework.hpp> instead and links Skein::framework alone.
#pragma once

#include "skein/framework.hpp"

#include "skein/communicator.hpp"  // Skein::comm
#include "skein/runtime.hpp"

#include "skein/dist_array.hpp"  // Skein::dist
#include "skein/dist_ops.hpp"
#include "skein/dist_reductions.hpp"
#include "skein/dist_fused.hpp"
#include "skein/dist_stencil.hpp"
#include "skein/grid_array.hpp"
#include "skein/grid_layout.hpp"

#include "skein/checkpoint.hpp"  // Skein::io
#include "skein/hdf5.hpp"

// Skein's umbrella header (the top target, Skein::skein): everything a simulation code uses. The
// framework (<skein/framework.hpp>, Skein::framework) and the collectives layer
// (Skein::collectives): the MPI-aware runtime, the Communicator, distributed arrays, HDF5 files
// and checkpoints. A program that needs no MPI includes <skein/framework.hpp> instead and links
// Skein::framework alone.
#pragma once

#include "skein/framework.hpp"

#include "skein/checkpoint.hpp"
#include "skein/communicator.hpp"
#include "skein/dist_array.hpp"
#include "skein/dist_ops.hpp"
#include "skein/hdf5.hpp"
#include "skein/runtime.hpp"

// Skein's umbrella header: everything a simulation code uses.
#pragma once

#include "skein/config.hpp"
#include "skein/api.hpp"
#include "skein/array.hpp"
#include "skein/blas.hpp"
#include "skein/buffer.hpp"
#include "skein/context.hpp"
#include "skein/ctypes.hpp"
#include "skein/device.hpp"
#include "skein/device_parameters.hpp"
#include "skein/dtype.hpp"
#include "skein/elementwise.hpp"
#include "skein/error.hpp"
#include "skein/event.hpp"
#include "skein/functions.hpp"
#include "skein/memory_pool.hpp"
#include "skein/multi_device.hpp"
#include "skein/occupancy.hpp"
#include "skein/platform.hpp"
#include "skein/program.hpp"
#include "skein/queue.hpp"
#include "skein/reduction.hpp"
#include "skein/static_kernel.hpp"
#include "skein/template.hpp"
#include "skein/virtual_alloc.hpp"

// The collectives layer (Skein::collectives, part of Skein::skein): the MPI-aware runtime and the
// Communicator.
#if __has_include(<skein/communicator.hpp>)
#include "skein/checkpoint.hpp"
#include "skein/communicator.hpp"
#include "skein/dist_array.hpp"
#include "skein/dist_ops.hpp"
#include "skein/hdf5.hpp"
#include "skein/runtime.hpp"
#endif

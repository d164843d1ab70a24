// SPDX-License-Identifier: BSD-3-Clause
// io's internal interface, for tests: how many bytes of dataset elements passed through this
// process's host buffers in hdf5::File's transfers. Each piece a transfer moves is counted once,
// where it lands in host memory: on the parallel path every rank counts only its own rows or
// blocks; through rank 0, rank 0 counts every rank's (and each other rank its own). So a test can
// tell that a GridArray's blocks did not pass through rank 0. MPI-IO's own aggregation inside
// HDF5's collective calls (two-phase I/O, which may gather other ranks' data on aggregator ranks)
// is not Skein's and is not counted.
#pragma once

#include <cstdint>

#include "skein/export.hpp"

namespace skein::detail {

// Since the process started; 0 in a build without HDF5.
SKEIN_EXPORT std::uint64_t hdf5_staged_bytes();

}  // namespace skein::detail

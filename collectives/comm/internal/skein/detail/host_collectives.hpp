// SPDX-License-Identifier: BSD-3-Clause
// The reduction of host values over a Communicator's ranks, for the layers above (the distributed
// reductions to one value: dist::sum, min, max, dot). A collective call like the Communicator's
// own: counted, compared across ranks by the agreement check, given up on at the
// SKEIN_COLLECTIVE_TIMEOUT, and refused on a communicator that was aborted.
#pragma once

#include <cstddef>
#include <span>

#include "skein/communicator.hpp"
#include "skein/dtype.hpp"
#include "skein/export.hpp"

namespace skein::detail {

// LogicError naming `call` between comm.group_start() and group_end(): for calls that return a
// value computed by collectives, which a group only runs at its end.
SKEIN_EXPORT void require_outside_group(Communicator& comm, const char* call);

// Raises what ended the communicator, if anything did (the watchdog's TimeoutError or mismatch, an
// earlier failure): for calls that read a collective's result on the host after waiting for the
// devices, since an NCCL call the watchdog aborted lets the wait return with the result unwritten.
SKEIN_EXPORT void require_usable(Communicator& comm, const char* call);

// `values` holds this rank's values: one or more blocks of `count` elements of `dtype` (e.g. one
// per local device), at most 96 bytes a block. On return its first block holds the reduction
// with `op` (not avg) of every block of every rank: this rank's blocks in order, then the ranks'
// results, gathered and combined in rank order (with the MPI backend's agreement check, the
// check's own MPI reduction carries and combines them instead). Every rank has the same result,
// bit for bit (min and max over NaN aside). One MPI exchange. `call` names the caller in errors.
// Raises LogicError inside a group, or where the ranks made different calls.
SKEIN_EXPORT void all_reduce_host(Communicator& comm, std::span<std::byte> values,
                                  std::size_t count, Dtype dtype, ReduceOp op, const char* call);

}  // namespace skein::detail

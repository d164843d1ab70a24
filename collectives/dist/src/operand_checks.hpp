// SPDX-License-Identifier: BSD-3-Clause
// Whether the distributed operands of one operation agree (dist_ops.cpp, grid_ops.cpp,
// dist_stencil.cpp): LogicError on every rank otherwise (layouts are the same on every rank,
// checked when the arrays were made).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "skein/dist_array.hpp"
#include "skein/dist_ops.hpp"
#include "skein/grid_array.hpp"

namespace skein::dist::checks {

// One communicator and the same rows on every member.
void check_same_layout(const DistArray& a, const DistArray& b, const char* call, const char* what);
// The same layout and the same global shape (a layout only fixes the rows).
void check_same_shape(const DistArray& a, const DistArray& b, const char* call, const char* what);
// The points on the same members: one communicator, global shape, components, grid and split along
// every axis (halo widths, stencils and boundaries may differ).
void check_same_points(const GridArray& a, const GridArray& b, const char* call, const char* what);

// The per-member operands among `args` (DistOperand::per_member): one array per local block, array
// i on devices[i] of `queue`'s context. LogicError naming `call`, `rank`, the operand, the block
// and the devices otherwise (raised on this rank only: the arrays are this rank's).
void check_per_member(std::span<const DistOperand> args, const Queue& queue,
                      std::span<const std::size_t> devices, int rank, const char* call);

}  // namespace skein::dist::checks

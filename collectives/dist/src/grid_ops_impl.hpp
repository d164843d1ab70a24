// SPDX-License-Identifier: BSD-3-Clause
// What dist::elementwise (dist_ops.cpp) hands to grid_ops.cpp when its operands are GridArrays.
#pragma once

#include <span>

#include "skein/dist_ops.hpp"

namespace skein::dist::on_grids {

// dist::elementwise over GridArrays' points: every array operand a GridArray of one point layout
// (LogicError on every rank otherwise, a DistArray among them included).
void elementwise(const ElementwiseKernel& kernel, std::span<const DistOperand> args);

}  // namespace skein::dist::on_grids

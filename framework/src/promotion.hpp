// SPDX-License-Identifier: BSD-3-Clause
// skein::result_type (skein/operand.hpp) over the addresses of operands, for the built-in
// operations: they ask it of their arguments without copying them (a copy of an array operand is
// two atomic reference counts) and without allocating.
#pragma once

#include <span>

#include "skein/dtype.hpp"

namespace skein {
class Operand;
}  // namespace skein

namespace skein::detail {

Dtype result_type_of(std::span<const Operand* const> operands);

}  // namespace skein::detail

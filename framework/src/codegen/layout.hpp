// SPDX-License-Identifier: BSD-3-Clause
// Part of the code-generation module (see types.hpp): the layout class of a set of arrays viewed
// with one (broadcast) shape, which decides between a generated kernel's contiguous and strided
// paths and gives the strided path its arguments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace skein::detail::codegen {

// The layout of a set of arrays of one (broadcast) shape: dimensions of extent 1 dropped and
// neighbours merged where every array allows it. Byte strides per array, C order.
struct Layout {
  std::vector<std::uint64_t> shape;                 // collapsed, at least 1 dimension
  std::vector<std::vector<std::uint64_t>> strides;  // [array][dim], bytes
  std::uint64_t size = 0;
  bool contiguous = false;  // one dimension, every stride the array's itemsize
};
// What make_layout needs of an array (outputs to be allocated have no Array yet;
// kernel_operands.hpp's shape_of gives an Array's): its Shape and byte Strides (skein/array.hpp's
// types) and itemsize.
struct ArrayShape {
  std::vector<std::size_t> shape;
  std::vector<std::size_t> strides;
  std::size_t itemsize = 1;
};
// `arrays` viewed with `shape` (each broadcast to it: missing / extent-1 dimensions get stride 0).
Layout make_layout(const std::vector<std::size_t>& shape, std::span<const ArrayShape> arrays);

}  // namespace skein::detail::codegen

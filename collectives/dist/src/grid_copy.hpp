// SPDX-License-Identifier: BSD-3-Clause
// Copies of boxes of elements between device arrays on one device, with signed strides: the pack
// and unpack kernels of the grid halo exchange and of GridArray's scatter and gather. One kernel
// source for both backends (the prelude's names), one kernel per element size (1, 2, 4, 8, 16
// bytes: the copy moves bits, so any dtype of that size), and one batched kernel that makes many
// box copies (of any element sizes, between up to kBatchSlots arrays) in one launch, from a table
// of boxes kept on the device.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "skein/array.hpp"
#include "skein/program.hpp"
#include "skein/queue.hpp"

namespace skein::detail::grid {

// A box of up to four axes (unused leading axes have extent 1) over an array's elements: element
// (i0, i1, i2, i3) is at offset + i0 * strides[0] + ... + i3 * strides[3], in elements.
struct BoxView {
  Array array;  // its own offset counts too; the box must stay inside it
  std::int64_t offset = 0;
  std::array<std::int64_t, 4> strides{};
};

// The box copy kernels of one queue's context, compiled (or found in the context's cache) once.
class BoxCopier {
 public:
  explicit BoxCopier(const Queue& queue);
  // Enqueues on the queue (on dst's device, which must be src's) the copy of `extent` elements
  // from src's box to dst's. Both arrays' elements are `unit` bytes (their dtypes may differ in
  // name). A stride of 0 in src repeats one element (fills).
  void operator()(std::size_t unit, const BoxView& dst, const BoxView& src,
                  const std::array<std::int64_t, 4>& extent) const;

 private:
  Queue queue_;
  Program program_;
  std::map<std::size_t, Kernel> kernels_;  // by element size
};

// One copy of a batch: `extent` elements of `unit` bytes from the box at src_offset, src_strides
// (in elements) of slot src_slot to the box of slot dst_slot. A src stride of 0 repeats one
// element (fills).
struct BatchCopy {
  std::size_t unit = 8;
  std::size_t dst_slot = 0, src_slot = 0;
  std::int64_t dst_offset = 0, src_offset = 0;
  std::array<std::int64_t, 4> dst_strides{}, src_strides{};
  std::array<std::int64_t, 4> extent{1, 1, 1, 1};
};

// How many arrays one launch of a batch reads and writes.
inline constexpr std::size_t kBatchSlots = 8;

// A batch of box copies on one device, made once: its table on the device and its launch
// prepared. Each launch gives the arrays of the slots anew (their memory may change between
// launches; their layout may not), so the batch holds none of them.
class BoxBatch {
 public:
  // Copies that name slots >= kBatchSlots, or elements of another size than 1, 2, 4, 8 or 16
  // bytes, raise LogicError. An empty batch launches nothing.
  BoxBatch(const Queue& queue, std::size_t device_idx, std::span<const BatchCopy> copies);
  // Enqueues every copy on the device's queue. slots[i] is slot i's array, on the device (or
  // viewed from it); the slots no copy names may be any array on the device. The boxes must lie
  // inside their arrays, and no copy's destination may overlap another's source or destination.
  void operator()(std::span<const Array> slots) const;
  std::size_t device_idx() const { return device_idx_; }
  std::size_t size() const { return count_; }
  const Array& table() const { return *table_; }  // when size() > 0

 private:
  std::size_t device_idx_ = 0;
  std::size_t count_ = 0;
  std::optional<Array> table_;
  std::optional<PreparedKernel> launch_;
};

// C-ordered strides (elements) of a contiguous box of `extent`.
std::array<std::int64_t, 4> contiguous(const std::array<std::int64_t, 4>& extent);

}  // namespace skein::detail::grid

// Geometry of GridArray blocks in the copy's four axes: the layout's axes at the end of the first
// three (leading ones of extent 1), the components as the fourth.
namespace skein {
class GridLayout;
}  // namespace skein

namespace skein::detail::grid {

// The slot of a layout axis among the first three of the copy's axes.
inline std::size_t slot(std::size_t ndim, std::size_t axis) { return 3 - ndim + axis; }

// Element strides of member's block with its halo (C order).
std::array<std::int64_t, 4> block_strides(const GridLayout& layout, std::size_t member);

// The box of the member's points (without the halo) in its block with the halo, and its extent.
BoxView interior_box(const GridLayout& layout, std::size_t member, const Array& with_halo);
std::array<std::int64_t, 4> interior_extent(const GridLayout& layout, std::size_t member);

}  // namespace skein::detail::grid

// SPDX-License-Identifier: BSD-3-Clause
// Reshapes (Array::reshape in skein/array.hpp, skein::reshape in skein/array_ops.hpp): a view when
// the array's strides allow one (NumPy's rule), else, for skein::reshape only, a copy.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "skein/array.hpp"
#include "skein/array_ops.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/impl_access.hpp"

namespace skein {

namespace {
// Strides that show the elements of (shape, strides), read in C order, as `new_shape` (the same
// number of elements, not 0) in C order, when some do. The axes longer than 1 of both shapes are
// matched in consecutive groups of equal size; a view exists when each group of old axes is dense
// in C order (each axis' stride its inner neighbour's times that one's size): the group's new axes
// then step through the same run. Otherwise nothing, and `bad` holds the group's first and last
// old axis.
std::optional<Strides> c_view_strides(const Shape& shape, const Strides& strides,
                                      const Shape& new_shape, std::size_t itemsize,
                                      std::pair<std::size_t, std::size_t>& bad) {
  std::vector<std::size_t> olds, news;  // the axes longer than 1
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1) olds.push_back(i);
  for (std::size_t j = 0; j < new_shape.size(); ++j)
    if (new_shape[j] != 1) news.push_back(j);
  Strides out(new_shape.size(), 0);
  std::size_t i = 0, j = 0;
  // Both lists multiply to the same size with factors >= 2, so they end in the same group.
  while (i < olds.size() && j < news.size()) {
    std::size_t i_end = i + 1, j_end = j + 1;
    std::size_t old_size = shape[olds[i]], new_size = new_shape[news[j]];
    while (old_size != new_size) {
      if (old_size < new_size) {
        old_size *= shape[olds[i_end++]];
      } else {
        new_size *= new_shape[news[j_end++]];
      }
    }
    for (std::size_t k = i; k + 1 < i_end; ++k) {
      if (strides[olds[k]] != shape[olds[k + 1]] * strides[olds[k + 1]]) {
        bad = {olds[i], olds[i_end - 1]};
        return std::nullopt;
      }
    }
    std::size_t stride = strides[olds[i_end - 1]];
    for (std::size_t k = j_end; k-- > j;) {
      out[news[k]] = stride;
      stride *= new_shape[news[k]];
    }
    i = i_end;
    j = j_end;
  }
  // Axes of size 1 take any stride: the one they would have in a dense layout.
  std::size_t inner = itemsize;
  for (std::size_t k = new_shape.size(); k-- > 0;) {
    if (new_shape[k] == 1) {
      out[k] = inner;
    } else {
      inner = out[k] * new_shape[k];
    }
  }
  return out;
}

template <class V>
V reversed_axes(V v) {
  std::reverse(v.begin(), v.end());
  return v;
}

// The view of `a` as `shape` (the same number of elements) in `order`, or nothing; then `bad`
// holds the first and last axis of `a` that no view can merge or split.
std::optional<Array> reshaped_view(const Array& a, const Shape& shape, Order order,
                                   std::pair<std::size_t, std::size_t>& bad) {
  const bool f = order == Order::F;
  // A block dense in the order asked for (which includes every empty array): fresh strides.
  if (f ? a.is_f_contiguous() : a.is_c_contiguous()) {
    Strides strides =
        f ? fortran_strides(shape, a.itemsize()) : contiguous_strides(shape, a.itemsize());
    return Array(a.queue(), a.data(), shape, a.dtype(), std::move(strides), a.offset());
  }
  // F order is C order with the axes of both shapes reversed.
  auto strides = f ? c_view_strides(reversed_axes(a.shape()), reversed_axes(a.strides()),
                                    reversed_axes(shape), a.itemsize(), bad)
                   : c_view_strides(a.shape(), a.strides(), shape, a.itemsize(), bad);
  if (!strides) {
    if (f) bad = {a.ndim() - 1 - bad.second, a.ndim() - 1 - bad.first};
    return std::nullopt;
  }
  return Array(a.queue(), a.data(), shape, a.dtype(),
               f ? reversed_axes(std::move(*strides)) : std::move(*strides), a.offset());
}

void check_reshape_size(const Array& a, const Shape& shape, const char* call) {
  if (shape_size(shape) != a.size()) {
    detail::raise_in(SKEIN_HERE, call, "Keep the number of elements.",
                     "cannot reshape {} ({} elements) to {} ({} elements)", to_string(a.shape()),
                     a.size(), to_string(shape), shape_size(shape));
  }
}
}  // namespace

Array Array::reshape(Shape shape, Order order) const {
  check_reshape_size(*this, shape, "Array::reshape");
  std::pair<std::size_t, std::size_t> bad{0, 0};
  if (auto view = reshaped_view(*this, shape, order, bad)) return *view;
  detail::raise_in(SKEIN_HERE, "Array::reshape",
                   "skein::reshape(queue, a, shape, order) copies when no view exists.",
                   "no view of shape {} (strides {}) has shape {} in {} order: axes {} to {}, "
                   "which the new shape merges or splits, are not dense in that order",
                   to_string(s_->shape), to_string(s_->strides), to_string(shape),
                   order == Order::F ? 'F' : 'C', bad.first, bad.second);
}

Array reshape(const Queue& queue, const Array& a, Shape shape, Order order) {
  constexpr const char* call = "skein::reshape";
  check_reshape_size(a, shape, call);
  if (a.data().context_id() != detail::impl_of(queue.context()).get() ||
      !queue.has_device(a.device_idx())) {
    detail::raise_in(SKEIN_HERE, call, "Use a queue of the array's context with its device.",
                     "the array (device {}) is not on a device of the queue (devices {} of its "
                     "context)",
                     a.device_idx(), fmt::join(queue.device_idxs(), ", "));
  }
  std::pair<std::size_t, std::size_t> bad{0, 0};
  if (auto view = reshaped_view(a, shape, order, bad)) return *view;
  // A new array dense in `order`, seen with a's shape in that order, takes a's elements.
  Array out = Array::empty(queue, shape, a.dtype(), order, a.device_idx());
  const Strides as_a = order == Order::F ? fortran_strides(a.shape(), a.itemsize())
                                         : contiguous_strides(a.shape(), a.itemsize());
  copy_rect(queue, Array(queue, out.data(), a.shape(), a.dtype(), as_a, out.offset()), a);
  return out;
}

}  // namespace skein

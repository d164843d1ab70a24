// SPDX-License-Identifier: BSD-3-Clause
// pygpu's array operations (skein/array_ops.hpp): copies in a memory order, atleast_1d/2d/3d,
// concatenate, stack, vstack, hstack, dstack, split, array_split, hsplit, vsplit, dsplit, take,
// transfer between contexts, may_share_memory. reshape is in array_reshape.cpp.
#include "skein/array_ops.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "skein/context.hpp"
#include "skein/detail/array_pool.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/impl_access.hpp"
#include "skein/elementwise.hpp"
#include "skein/reduction.hpp"

namespace skein {

namespace {

void check_context(const Queue& queue, const Array& a, const std::string& call, const char* what) {
  if (a.data().context_id() != detail::impl_of(queue.context()).get()) {
    detail::raise_in(SKEIN_HERE, call,
                     "Use a queue of the array's context, or copy the array there first with "
                     "transfer().",
                     "{} belongs to another context than the queue", what);
  }
  if (!queue.has_device(a.device_idx())) {
    detail::raise_in(SKEIN_HERE, call, "Use a queue that includes the array's device.",
                     "{} is on device {}, which is not in the queue (its devices: {})", what,
                     a.device_idx(), fmt::join(queue.device_idxs(), ", "));
  }
}

// The same elements as a C-contiguous array with exactly C strides (what raw kernel arguments
// need): `a` itself, a re-described `a` (dimensions of size 1 with other strides), or a copy.
Array c_exact(const Queue& queue, const Array& a) {
  if (a.is_contiguous()) return a;
  if (a.is_c_contiguous()) return Array(queue, a.data(), a.shape(), a.dtype(), {}, a.offset());
  return copy(queue, a, Order::C);
}

// Bytes from element (0, ..., 0) to one past the last element (0 for an empty array).
std::size_t extent_bytes(const Array& a) {
  if (a.size() == 0) return 0;
  std::size_t last = 0;
  for (std::size_t d = 0; d < a.ndim(); ++d) last += (a.shape()[d] - 1) * a.strides()[d];
  return last + a.itemsize();
}

void check_same(const Queue& queue, const std::vector<Array>& arrays, const char* call) {
  if (arrays.empty()) {
    detail::raise_in(SKEIN_HERE, call, "Pass at least one array.", "no arrays were given");
  }
  const Array& first = arrays.front();
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    const Array& a = arrays[k];
    check_context(queue, a, call, fmt::format("array {}", k).c_str());
    if (a.dtype() != first.dtype()) {
      detail::raise_in(SKEIN_HERE, call, "Convert the arrays to one dtype first (astype()).",
                       "array {} has dtype {}, array 0 has {}", k, name(a.dtype()),
                       name(first.dtype()));
    }
    if (a.device_idx() != first.device_idx()) {
      detail::raise_in(SKEIN_HERE, call, "Copy the arrays to one device first (transfer()).",
                       "array {} is on device {}, array 0 on device {}", k, a.device_idx(),
                       first.device_idx());
    }
    if (a.ndim() != first.ndim()) {
      detail::raise_in(SKEIN_HERE, call, "Give arrays with the same number of dimensions.",
                       "array {} has shape {}, array 0 has shape {}", k, to_string(a.shape()),
                       to_string(first.shape()));
    }
  }
}

// Copies each array into the view of `out` that `dst_of(k)` gives.
template <class F>
void copy_parts(const Queue& queue, const std::vector<Array>& arrays, F&& dst_of) {
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    if (arrays[k].size() == 0) continue;
    copy(queue, Operand(arrays[k]), dst_of(k));
  }
}

// The multi-index of flat position `flat` (C order) in `shape`.
std::vector<std::uint64_t> detail_unravel(std::uint64_t flat, const Shape& shape) {
  std::vector<std::uint64_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

Dtype uint_of_size(std::size_t bytes) {
  switch (bytes) {
    case 1: return Dtype::uint8;
    case 2: return Dtype::uint16;
    case 4: return Dtype::uint32;
    default: return Dtype::uint64;
  }
}

// The gather: y[o, t, r] = a[o, k, r] over (outer, indices, inner) in units of U, k being index j
// wrapped modulo na (clip == 0; also raise, whose indices are known to be in [-na, na)) or
// clamped to [0, na) (clip == 1). One program per (U, I), for signed and unsigned I alike.
const ElementwiseKernel& take_kernel() {
  static const ElementwiseKernel k(
      "raw U a, I j, uint64 na, uint64 ni, uint64 inner, int32 clip", "U y",
      "uint64_t _t_k;\n"
      "if (j < 0) {\n"
      "    const uint64_t _t_m = (uint64_t)0 - (uint64_t)(int64_t)j;  /* |j| */\n"
      "    const uint64_t _t_r = _t_m % na;\n"
      "    _t_k = clip ? 0 : (_t_r == 0 ? 0 : na - _t_r);\n"
      "} else {\n"
      "    const uint64_t _t_u = (uint64_t)j;\n"
      "    _t_k = clip ? (_t_u >= na ? na - 1 : _t_u) : _t_u % na;\n"
      "}\n"
      "const uint64_t _t_o = (uint64_t)i / (ni * inner);\n"
      "const uint64_t _t_i = (uint64_t)i % inner;\n"
      "y = a[(_t_o * na + _t_k) * inner + _t_i]",
      {.name = "skein_take"});
  return k;
}

// The flat position (C order) of the first index outside [-na, na), or UINT64_MAX (a reduction,
// one program per index dtype).
const ReductionKernel& first_bad_kernel() {
  static const ReductionKernel k("I j, uint64 na", "uint64 y",
                                 "(j < 0 ? (uint64_t)0 - (uint64_t)(int64_t)j > na : (uint64_t)j "
                                 ">= na) ? (uint64_t)i : ~(uint64_t)0",
                                 "a < b ? a : b", "~(uint64_t)0", {.name = "skein_take_check"});
  return k;
}

// The element at flat position `flat` (C order) of an integer array, in words (waits).
std::string index_at(const Array& indices, std::uint64_t flat) {
  std::size_t element = 0;
  for (std::size_t d = indices.ndim(); d-- > 0;) {
    element += (flat % indices.shape()[d]) * (indices.strides()[d] / indices.itemsize());
    flat /= indices.shape()[d];
  }
  std::vector<std::byte> bytes(indices.itemsize());
  indices.view(element, {1}).get(std::span(bytes));
  return visit_dtype(indices.dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_integral_v<T>) {
      std::memcpy(&v, bytes.data(), sizeof(T));
      return std::to_string(v);
    } else {
      return std::string("?");
    }
  });
}

}  // namespace

Array copy(const Queue& queue, const Array& a, Order order) {
  check_context(queue, a, "skein::copy", "the array");
  Array out = Array::empty(queue, a.shape(), a.dtype(), order, a.device_idx());
  if (out.size() > 0) copy(queue, Operand(a), out);
  return out;
}

Array ascontiguousarray(const Queue& queue, const Array& a) {
  check_context(queue, a, "skein::ascontiguousarray", "the array");
  return a.is_c_contiguous() ? a : copy(queue, a, Order::C);
}

Array asfortranarray(const Queue& queue, const Array& a) {
  check_context(queue, a, "skein::asfortranarray", "the array");
  return a.is_f_contiguous() ? a : copy(queue, a, Order::F);
}

Array concatenate(const Queue& queue, const std::vector<Array>& arrays, std::size_t axis) {
  const char* call = "skein::concatenate";
  check_same(queue, arrays, call);
  const Array& first = arrays.front();
  if (axis >= first.ndim()) {
    detail::raise_in(SKEIN_HERE, call,
                     "Give an existing axis (0 .. ndim-1); stack() adds a new one.",
                     "axis {} is past the {} dimension(s) of shape {}", axis, first.ndim(),
                     to_string(first.shape()));
  }
  Shape shape = first.shape();
  shape[axis] = 0;
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    for (std::size_t d = 0; d < shape.size(); ++d) {
      if (d != axis && arrays[k].shape()[d] != first.shape()[d]) {
        detail::raise_in(SKEIN_HERE, call,
                         "Give arrays whose sizes agree on every axis but the one joined.",
                         "array {} has shape {}, array 0 has shape {}: they differ on axis {} "
                         "(joining along axis {})",
                         k, to_string(arrays[k].shape()), to_string(first.shape()), d, axis);
      }
    }
    shape[axis] += arrays[k].shape()[axis];
  }
  Array out = Array::empty(queue, shape, first.dtype(), first.device_idx());
  std::vector<std::size_t> start(arrays.size(), 0);
  for (std::size_t k = 1; k < arrays.size(); ++k)
    start[k] = start[k - 1] + arrays[k - 1].shape()[axis];
  copy_parts(queue, arrays, [&](std::size_t k) {
    return out.view(start[k] * (out.strides()[axis] / out.itemsize()), arrays[k].shape(),
                    out.strides());
  });
  return out;
}

Array stack(const Queue& queue, const std::vector<Array>& arrays, std::size_t axis) {
  const char* call = "skein::stack";
  check_same(queue, arrays, call);
  const Array& first = arrays.front();
  if (axis > first.ndim()) {
    detail::raise_in(SKEIN_HERE, call, "Give a new axis position in 0 .. ndim.",
                     "axis {} is past position {} for arrays of shape {}", axis, first.ndim(),
                     to_string(first.shape()));
  }
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    if (arrays[k].shape() != first.shape()) {
      detail::raise_in(SKEIN_HERE, call, "Give arrays of one shape.",
                       "array {} has shape {}, array 0 has shape {}", k,
                       to_string(arrays[k].shape()), to_string(first.shape()));
    }
  }
  Shape shape = first.shape();
  shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(axis), arrays.size());
  Array out = Array::empty(queue, shape, first.dtype(), first.device_idx());
  Strides part_strides = out.strides();
  const std::size_t step = part_strides[axis] / out.itemsize();
  part_strides.erase(part_strides.begin() + static_cast<std::ptrdiff_t>(axis));
  copy_parts(queue, arrays,
             [&](std::size_t k) { return out.view(k * step, first.shape(), part_strides); });
  return out;
}

namespace {
// `a` seen with extra dimensions of size 1: `before` of them in front, `after` at the end.
Array with_unit_dims(const Array& a, std::size_t before, std::size_t after) {
  Shape shape(before, 1);
  Strides strides(before, a.itemsize());
  shape.insert(shape.end(), a.shape().begin(), a.shape().end());
  strides.insert(strides.end(), a.strides().begin(), a.strides().end());
  shape.insert(shape.end(), after, 1);
  strides.insert(strides.end(), after, a.itemsize());
  return Array(a.queue(), a.data(), std::move(shape), a.dtype(), std::move(strides), a.offset());
}

std::vector<Array> map_arrays(const std::vector<Array>& arrays, Array (*f)(const Array&)) {
  std::vector<Array> out;
  out.reserve(arrays.size());
  for (const Array& a : arrays) out.push_back(f(a));
  return out;
}

// The part [begin, end) of `a` along `axis`, a view.
Array part(const Array& a, std::size_t axis, std::size_t begin, std::size_t end) {
  Shape shape = a.shape();
  shape[axis] = end - begin;
  return Array(a.queue(), a.data(), std::move(shape), a.dtype(), a.strides(),
               a.offset() + begin * a.strides()[axis]);
}

void check_split_axis(const Array& a, std::size_t axis, const char* call) {
  if (axis >= a.ndim()) {
    detail::raise_in(SKEIN_HERE, call, "Give an axis below the array's number of dimensions.",
                     "axis {} of an array of shape {}", axis, to_string(a.shape()));
  }
}

std::vector<Array> sections_of(const Array& a, std::size_t sections, std::size_t axis,
                               const char* call) {
  check_split_axis(a, axis, call);
  if (sections == 0) {
    detail::raise_in(SKEIN_HERE, call, "Ask for at least one section.",
                     "0 sections of axis {} of shape {}", axis, to_string(a.shape()));
  }
  const std::size_t n = a.shape()[axis], base = n / sections, longer = n % sections;
  std::vector<Array> out;
  std::size_t begin = 0;
  for (std::size_t k = 0; k < sections; ++k) {
    const std::size_t len = base + (k < longer ? 1 : 0);
    out.push_back(part(a, axis, begin, begin + len));
    begin += len;
  }
  return out;
}
}  // namespace

Array atleast_1d(const Array& a) { return a.ndim() >= 1 ? a : with_unit_dims(a, 1, 0); }

Array atleast_2d(const Array& a) { return a.ndim() >= 2 ? a : with_unit_dims(a, 2 - a.ndim(), 0); }

Array atleast_3d(const Array& a) {
  switch (a.ndim()) {
    case 0: return with_unit_dims(a, 3, 0);
    case 1: return with_unit_dims(a, 1, 1);
    case 2: return with_unit_dims(a, 0, 1);
    default: return a;
  }
}

Array vstack(const Queue& queue, const std::vector<Array>& arrays) {
  return concatenate(queue, map_arrays(arrays, &atleast_2d), 0);
}

Array hstack(const Queue& queue, const std::vector<Array>& arrays) {
  const std::vector<Array> parts = map_arrays(arrays, &atleast_1d);
  return concatenate(queue, parts, !parts.empty() && parts.front().ndim() == 1 ? 0 : 1);
}

Array dstack(const Queue& queue, const std::vector<Array>& arrays) {
  return concatenate(queue, map_arrays(arrays, &atleast_3d), 2);
}

namespace {
std::vector<Array> equal_sections(const Array& a, std::size_t sections, std::size_t axis,
                                  const char* call) {
  check_split_axis(a, axis, call);
  if (sections != 0 && a.shape()[axis] % sections != 0) {
    detail::raise_in(SKEIN_HERE, call,
                     "Ask for a number of sections that divides the axis, or use array_split().",
                     "array split does not result in an equal division: axis {} of shape {} ({} "
                     "elements) does not split into {} equal sections",
                     axis, to_string(a.shape()), a.shape()[axis], sections);
  }
  return sections_of(a, sections, axis, call);
}
}  // namespace

std::vector<Array> split(const Array& a, std::size_t sections, std::size_t axis) {
  return equal_sections(a, sections, axis, "skein::split");
}

std::vector<Array> split(const Array& a, const std::vector<std::size_t>& indices,
                         std::size_t axis) {
  check_split_axis(a, axis, "skein::split");
  const std::size_t n = a.shape()[axis];
  std::vector<Array> out;
  std::size_t begin = 0;
  for (std::size_t k = 0; k <= indices.size(); ++k) {
    const std::size_t end = k < indices.size() ? std::min(indices[k], n) : n;
    out.push_back(part(a, axis, begin, std::max(begin, end)));
    begin = end;
  }
  return out;
}

std::vector<Array> array_split(const Array& a, std::size_t sections, std::size_t axis) {
  return sections_of(a, sections, axis, "skein::array_split");
}

namespace {
// The axis that hsplit, vsplit or dsplit (`name`) splits, after NumPy's check of the dimensions.
std::size_t directional_axis(const Array& a, std::size_t min_ndim, std::size_t axis,
                             const char* name) {
  if (a.ndim() < min_ndim) {
    detail::raise_in(SKEIN_HERE, fmt::format("skein::{}", name),
                     min_ndim == 1 ? "Give an array with at least 1 dimension (atleast_1d())."
                                   : "Give an array with enough dimensions (atleast_2d(), "
                                     "atleast_3d()), or split() along an axis it has.",
                     "{} only works on arrays of {} or more dimensions; this one has shape {}",
                     name, min_ndim, to_string(a.shape()));
  }
  return axis;
}

std::size_t hsplit_axis(const Array& a) {
  return directional_axis(a, 1, a.ndim() == 1 ? 0 : 1, "hsplit");
}
}  // namespace

std::vector<Array> hsplit(const Array& a, std::size_t sections) {
  return equal_sections(a, sections, hsplit_axis(a), "skein::hsplit");
}
std::vector<Array> hsplit(const Array& a, const std::vector<std::size_t>& indices) {
  return split(a, indices, hsplit_axis(a));
}
std::vector<Array> vsplit(const Array& a, std::size_t sections) {
  return equal_sections(a, sections, directional_axis(a, 2, 0, "vsplit"), "skein::vsplit");
}
std::vector<Array> vsplit(const Array& a, const std::vector<std::size_t>& indices) {
  return split(a, indices, directional_axis(a, 2, 0, "vsplit"));
}
std::vector<Array> dsplit(const Array& a, std::size_t sections) {
  return equal_sections(a, sections, directional_axis(a, 3, 2, "dsplit"), "skein::dsplit");
}
std::vector<Array> dsplit(const Array& a, const std::vector<std::size_t>& indices) {
  return split(a, indices, directional_axis(a, 3, 2, "dsplit"));
}

Array take(const Queue& queue, const Array& a, const Array& indices, std::size_t axis,
           TakeMode mode) {
  const char* call = "skein::take";
  check_context(queue, a, call, "the array");
  check_context(queue, indices, call, "the index array");
  if (!is_integer(indices.dtype())) {
    detail::raise_in(SKEIN_HERE, call,
                     "Pass indices of an integer dtype (astype(..., Dtype::int64)).",
                     "the index array has dtype {}", name(indices.dtype()));
  }
  if (indices.device_idx() != a.device_idx()) {
    detail::raise_in(SKEIN_HERE, call, "Put the indices on the array's device.",
                     "the array is on device {}, the indices on device {}", a.device_idx(),
                     indices.device_idx());
  }
  if (axis >= a.ndim()) {
    detail::raise_in(SKEIN_HERE, call, "Give an axis below the array's number of dimensions.",
                     "axis {} of an array of shape {}", axis, to_string(a.shape()));
  }
  const std::uint64_t na = a.shape()[axis];
  if (na == 0 && indices.size() > 0) {
    detail::raise_in(SKEIN_HERE, call, "Take from an axis with elements, or pass no indices.",
                     "cannot take {} element(s) from axis {} of shape {}, which is empty",
                     indices.size(), axis, to_string(a.shape()));
  }
  Shape shape(a.shape().begin(), a.shape().begin() + static_cast<std::ptrdiff_t>(axis));
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), a.shape().begin() + static_cast<std::ptrdiff_t>(axis) + 1,
               a.shape().end());
  Array out = Array::empty(queue, shape, a.dtype(), a.device_idx());
  if (out.size() == 0) return out;
  if (mode == TakeMode::raise) {
    const auto bad = reduction_value<std::uint64_t>(first_bad_kernel()(queue, {indices, na}));
    if (bad != ~std::uint64_t{0}) {
      std::string where;
      for (auto x : detail_unravel(bad, indices.shape()))
        where += (where.empty() ? "" : ", ") + std::to_string(x);
      detail::raise_in(SKEIN_HERE, call,
                       "Use indices in [-n, n) for an axis of n elements, or TakeMode::wrap or "
                       "TakeMode::clip.",
                       "indices[{}] = {} is out of range for axis {} of size {} (array shape {})",
                       where, index_at(indices, bad), axis, na, to_string(a.shape()));
    }
  }
  std::uint64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= a.shape()[d];
  for (std::size_t d = axis + 1; d < a.ndim(); ++d) inner *= a.shape()[d];
  const std::size_t unit = std::min<std::size_t>(a.itemsize(), 8);
  inner *= a.itemsize() / unit;
  const Dtype u = uint_of_size(unit);
  const Array ac = c_exact(queue, a);
  const Array ic = c_exact(queue, indices);
  const std::uint64_t ni = indices.size();
  const Array src(queue, ac.data(), {ac.size() * (a.itemsize() / unit)}, u, {}, ac.offset());
  const Array idx(queue, ic.data(), {outer, ni, inner}, indices.dtype(), {0, indices.itemsize(), 0},
                  ic.offset());
  const Array dst(queue, out.data(), {outer, ni, inner}, u, {}, out.offset());
  take_kernel()(queue,
                {src, idx, na, ni, inner, std::int32_t{mode == TakeMode::clip ? 1 : 0}, dst});
  return out;
}

Array transfer(const Array& a, const Queue& dest, std::optional<std::size_t> device_idx) {
  Array out = Array::empty(dest, a.shape(), a.dtype(), device_idx);
  if (out.size() == 0) return out;
  if (a.data().context_id() == detail::impl_of(dest.context()).get() &&
      dest.has_device(a.device_idx())) {
    // Read on `dest`, after what a's queue holds; a's queue may reuse its memory once a goes, so
    // its later work waits for the copy (the pools' rule, memory_pool.hpp).
    const detail::CrossQueueRead order(dest, a);
    const Array src = c_exact(dest, a);
    out.set(src);
    order.release();
    return out;
  }
  std::vector<std::byte> host(a.nbytes());
  a.get(std::span(host));
  out.set(std::span<const std::byte>(host));
  return out;
}

bool may_share_memory(const Array& a, const Array& b) {
  if (a.size() == 0 || b.size() == 0) return false;
  if (a.data().adapter() != b.data().adapter()) return false;
  const std::size_t a0 = a.data().offset() + a.offset(), b0 = b.data().offset() + b.offset();
  return a0 < b0 + extent_bytes(b) && b0 < a0 + extent_bytes(a);
}

}  // namespace skein

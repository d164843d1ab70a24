// SPDX-License-Identifier: BSD-3-Clause
// Operations on whole arrays after pygpu's (and NumPy's) array API: copies in a memory order,
// reshape (a view or a copy), atleast_1d/2d/3d, concatenate and stack (and vstack, hstack,
// dstack), split (and hsplit, vsplit, dsplit), take (gather by index), copies into another
// context, and may_share_memory. Views without copies (transpose, Fortran-ordered arrays,
// flags) are members of Array (skein/array.hpp); reductions along any axes are ReductionArgs::axis
// / axes (skein/reduction.hpp).
//
// Every function here that makes device work enqueues it on `queue` (on the device of its array
// arguments, which must all be on one device of the queue's context) and returns without waiting,
// except where said otherwise.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "skein/array.hpp"
#include "skein/export.hpp"
#include "skein/queue.hpp"

namespace skein {

// A new array with a's values in `order` (pygpu's copy(order=)); any layout of a.
SKEIN_EXPORT Array copy(const Queue& queue, const Array& a, Order order = Order::C);
// a itself when it is already C- (Fortran-) contiguous (Array::is_c_contiguous(),
// is_f_contiguous()), otherwise copy(queue, a, Order::C / Order::F) (pygpu's ascontiguousarray,
// asfortranarray).
SKEIN_EXPORT Array ascontiguousarray(const Queue& queue, const Array& a);
SKEIN_EXPORT Array asfortranarray(const Queue& queue, const Array& a);

// NumPy's and pygpu's reshape(a, shape, order): a's elements read in `order` and placed in that
// order into an array of `shape` (the same number of elements). Returns a view sharing a's buffer
// (and a's queue) whenever one exists (Array::reshape says when: NumPy's rule), with no device
// work; otherwise a new array on `queue`, dense in `order`, holding a copy enqueued there (as
// copy_rect: ordering against other queues' work on `a` is the caller's);
// may_share_memory(result, a) or ArrayFlags::owndata tell which. LogicError when the sizes differ
// or `queue` is of another context or lacks a's device.
SKEIN_EXPORT Array reshape(const Queue& queue, const Array& a, Shape shape, Order order = Order::C);

// NumPy's atleast_1d, atleast_2d, atleast_3d (pygpu.operations'): `a` itself when it has at least
// that many dimensions, otherwise a view (no copy) with axes of size 1 added: a 0-d array becomes
// (1), (1, 1) or (1, 1, 1); a 1-D array (N) becomes (1, N) or (1, N, 1); a 2-D array (M, N)
// becomes (M, N, 1).
SKEIN_EXPORT Array atleast_1d(const Array& a);
SKEIN_EXPORT Array atleast_2d(const Array& a);
SKEIN_EXPORT Array atleast_3d(const Array& a);

// NumPy's concatenate: the arrays joined along an existing axis. They must have one dtype, one
// number of dimensions, equal sizes except along `axis`, and be on one device; at least one.
// The result is a new C-ordered array on their device.
SKEIN_EXPORT Array concatenate(const Queue& queue, const std::vector<Array>& arrays,
                               std::size_t axis = 0);
// NumPy's stack: the arrays (one dtype, equal shapes, one device; at least one) joined along a new
// axis at position `axis` (0 .. ndim).
SKEIN_EXPORT Array stack(const Queue& queue, const std::vector<Array>& arrays,
                         std::size_t axis = 0);

// NumPy's vstack, hstack, dstack (pygpu.operations'): concatenate along axis 0 after atleast_2d
// (a 0-d array or (N) becomes a row (1, N)); along axis 0 after atleast_1d for 0-d and 1-D
// arrays, 1 otherwise; along axis 2 after atleast_3d ((N) becomes (1, N, 1), (M, N) (M, N, 1)).
SKEIN_EXPORT Array vstack(const Queue& queue, const std::vector<Array>& arrays);
SKEIN_EXPORT Array hstack(const Queue& queue, const std::vector<Array>& arrays);
SKEIN_EXPORT Array dstack(const Queue& queue, const std::vector<Array>& arrays);

// NumPy's split and array_split: views of `a` (no copy, no device work) along `axis`.
// split(a, sections): that many equal parts (LogicError when they cannot be equal);
// array_split(a, sections): the first shape[axis] % sections parts one element longer;
// split(a, indices): the parts [0, i0), [i0, i1), ..., [ik, shape[axis]), indices past the end
// taken as the end (a part is empty when an index is below the one before, as NumPy).
SKEIN_EXPORT std::vector<Array> split(const Array& a, std::size_t sections, std::size_t axis = 0);
SKEIN_EXPORT std::vector<Array> split(const Array& a, const std::vector<std::size_t>& indices,
                                      std::size_t axis = 0);
SKEIN_EXPORT std::vector<Array> array_split(const Array& a, std::size_t sections,
                                            std::size_t axis = 0);
// NumPy's hsplit, vsplit, dsplit: split() along axis 1 (axis 0 for a 1-D array), 0 and 2, views
// in equal sections or at the indices. LogicError for arrays with fewer dimensions than they need
// (1, 2, 3: "hsplit only works on arrays of 1 or more dimensions", as NumPy) and, as split(), for
// sections that cannot be equal.
SKEIN_EXPORT std::vector<Array> hsplit(const Array& a, std::size_t sections);
SKEIN_EXPORT std::vector<Array> hsplit(const Array& a, const std::vector<std::size_t>& indices);
SKEIN_EXPORT std::vector<Array> vsplit(const Array& a, std::size_t sections);
SKEIN_EXPORT std::vector<Array> vsplit(const Array& a, const std::vector<std::size_t>& indices);
SKEIN_EXPORT std::vector<Array> dsplit(const Array& a, std::size_t sections);
SKEIN_EXPORT std::vector<Array> dsplit(const Array& a, const std::vector<std::size_t>& indices);

// What take() does with an index outside [-n, n) for an axis of n elements (NumPy's mode=).
enum class TakeMode {
  raise,  // LogicError naming the first index out of range and its position; take() then waits
          // for the queue (a reduction over the indices is read back before the gather).
          // Negative indices count from the end.
  wrap,   // index modulo n (negative ones too): no wait
  clip,   // clamped to [0, n - 1] (a negative index gives 0, as NumPy): no wait
};
// NumPy's take (pygpu's take1 is axis 0 with 1-D indices): out[..., idx..., ...] = a[...,
// indices[idx...],
// ...], the shape a.shape[:axis] + indices.shape + a.shape[axis + 1:]. `indices` is an array of any
// integer dtype and shape on a's device; a any layout and dtype. The result is a new C-ordered
// array. An empty axis with a non-empty `indices` is a LogicError in every mode.
SKEIN_EXPORT Array take(const Queue& queue, const Array& a, const Array& indices,
                        std::size_t axis = 0, TakeMode mode = TakeMode::raise);

// pygpu's transfer(new_ctx): a new C-ordered copy of `a` on device `device_idx` of `dest`'s context
// (by default dest's first device). Within a's own context, when `dest` includes a's device: device
// copies enqueued on `dest`, nothing waited for on the host; when a.queue() is another queue, the
// copies wait (on the device) for the work it holds, and its later work waits for the copies (so
// that it reuses a's memory from its pool only after them: memory_pool.hpp). Work of other queues
// on `a` is the caller's to order, as for Buffer::set. Otherwise (another context: another API,
// platform, or a context over the same devices; or a queue without a's device) it goes through the
// host and waits: for a.queue(), then for the copy on `dest`.
SKEIN_EXPORT Array transfer(const Array& a, const Queue& dest,
                            std::optional<std::size_t> device_idx = std::nullopt);

// NumPy's and pygpu's may_share_memory: false when a and b certainly use no common byte (other
// allocations, or byte ranges from the first to the last element that do not overlap); true
// otherwise (which includes interleaved views that touch no common element). Empty arrays share
// nothing. Buffers made from one foreign pointer twice (cuda::buffer_from_native) count as
// different allocations.
SKEIN_EXPORT bool may_share_memory(const Array& a, const Array& b);

}  // namespace skein

// SPDX-License-Identifier: BSD-3-Clause
// An n-dimensional array on one device of a context: shape, strides, dtype, and a buffer.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "skein/buffer.hpp"
#include "skein/dtype.hpp"
#include "skein/error.hpp"
#include "skein/export.hpp"
#include "skein/queue.hpp"

namespace skein {

using Shape = std::vector<std::size_t>;
using Strides = std::vector<std::size_t>;  // in bytes, as NumPy's

// Makes the buffer of a new array: (device index in the context, bytes) -> Buffer.
using Allocator = std::function<Buffer(std::size_t device_idx, std::size_t nbytes)>;

SKEIN_EXPORT std::size_t shape_size(const Shape& shape);
SKEIN_EXPORT Strides contiguous_strides(const Shape& shape, std::size_t itemsize);
// Column-major strides (NumPy's order='F'): the first index varies fastest.
SKEIN_EXPORT Strides fortran_strides(const Shape& shape, std::size_t itemsize);

// Memory layout of a new array (NumPy's and pygpu's order=): C is row-major (the last index varies
// fastest), F column-major (the first index varies fastest).
enum class Order { C, F };
SKEIN_EXPORT std::string to_string(const Shape& shape);

// NumPy's and pygpu's array flags (Array::flags()), read from the array's layout when asked.
struct ArrayFlags {
  // Array::is_c_contiguous() and is_f_contiguous() (NumPy's rules: dimensions of size 1 do not
  // count; an empty, a 0-d or a 1-D dense array is both).
  bool c_contiguous = false;
  bool f_contiguous = false;
  // The first element's address and the byte stride of every axis longer than 1 are multiples
  // of alignment_of(dtype) (skein/ctypes.hpp: the kernel type's alignment, the whole itemsize, so
  // stricter than NumPy's for complex dtypes); an empty array is aligned (NumPy's rule). The
  // address is the device pointer on CUDA, and on OpenCL the byte offset into the cl_mem, whose
  // start the implementation aligns to the device's base_address_align. Kernels read an element
  // of an unaligned array with misaligned accesses: copy() it first.
  bool aligned = false;
  // True for every Skein array: Skein has no read-only arrays.
  bool writeable = true;
  // The array's buffer was allocated for it: true for an array made by Array::empty, zeros,
  // from_host, empty_pitched and every Skein call that returns a new array (copy, concatenate,
  // take, astype, skein::reshape when it copies, ...), and for the copies of its handle; false
  // for views of another array (slice, view, reshape, transpose, indexing, split and atleast_nd
  // parts, single_device_view, a reshape that returned a view) and for arrays over an existing
  // buffer (the constructor Array(queue, buffer, ...), DLPack and other imports). Unlike NumPy's,
  // it does not follow a view's base: a view never owns, whatever it was made from.
  bool owndata = false;

  // NumPy's combinations: aligned and writeable; behaved and C-contiguous; behaved,
  // F-contiguous and not C-contiguous; F-contiguous and not C-contiguous; either contiguity.
  bool behaved() const { return aligned && writeable; }
  bool carray() const { return behaved() && c_contiguous; }
  bool farray() const { return behaved() && f_contiguous && !c_contiguous; }
  bool fnc() const { return f_contiguous && !c_contiguous; }
  bool forc() const { return f_contiguous || c_contiguous; }
  friend bool operator==(const ArrayFlags&, const ArrayFlags&) = default;
};

namespace detail {
// An array's fields, shared by its copies (an Array never changes once made): a copy of an Array
// is one reference count, not a copy of its shape and strides.
struct ArrayState {
  Queue queue;
  Buffer data;
  std::size_t device_idx = 0;
  Shape shape{};
  Strides strides{};
  Dtype dtype = Dtype::uint8;
  std::size_t offset = 0;
  bool owns_data = false;  // ArrayFlags::owndata
};
}  // namespace detail

// A cheap handle: copies and views share the buffer; a copy costs one reference count.
// Threads: an Array never changes once made (its queue, buffer, shape and strides are fixed), so
// it and its copies may be used from any number of threads at once; its transfers and fills are
// enqueued on queue(), whose rules apply, and ordering the threads' accesses to the shared device
// memory is the caller's business.
class SKEIN_EXPORT Array {
 public:
  // A new array on `device_idx` of the queue's context (by default the queue's first device).
  // Without an allocator its memory comes from the queue's pool (temporaries_pool() in
  // skein/memory_pool.hpp: reused by the queue's later work once the array's last handle goes),
  // or, with the context's array pool off (Context::set_array_pool, SKEIN_ARRAY_POOL=0), from
  // Buffer::allocate; every call of Skein's that returns a new array makes it this way.
  [[nodiscard]] static Array empty(const Queue& queue, Shape shape, Dtype dtype,
                                   std::optional<std::size_t> device_idx = std::nullopt,
                                   const Allocator& allocator = {});
  [[nodiscard]] static Array zeros(const Queue& queue, Shape shape, Dtype dtype,
                                   std::optional<std::size_t> device_idx = std::nullopt,
                                   const Allocator& allocator = {});
  // The same in the given memory order (pygpu's empty(..., order='F')).
  [[nodiscard]] static Array empty(const Queue& queue, Shape shape, Dtype dtype, Order order,
                                   std::optional<std::size_t> device_idx = std::nullopt,
                                   const Allocator& allocator = {});
  [[nodiscard]] static Array zeros(const Queue& queue, Shape shape, Dtype dtype, Order order,
                                   std::optional<std::size_t> device_idx = std::nullopt,
                                   const Allocator& allocator = {});
  // A new array holding a copy of host data; the shape defaults to 1-D.
  template <class T>
  [[nodiscard]] static Array from_host(const Queue& queue, std::span<const T> host,
                                       Shape shape = {},
                                       std::optional<std::size_t> device_idx = std::nullopt) {
    if (shape.empty()) shape = {host.size()};
    Array a = empty(queue, std::move(shape), dtype_of<T>, device_idx);
    a.set(host);
    return a;
  }
  template <class T>
  [[nodiscard]] static Array from_host(const Queue& queue, const std::vector<T>& host,
                                       Shape shape = {},
                                       std::optional<std::size_t> device_idx = std::nullopt) {
    return from_host(queue, std::span<const T>(host), std::move(shape), device_idx);
  }
  // An array over an existing buffer (no copy).
  Array(Queue queue, Buffer data, Shape shape, Dtype dtype, Strides strides = {},
        std::size_t offset = 0);

  const Queue& queue() const { return s_->queue; }
  const Buffer& data() const { return s_->data; }
  std::size_t device_idx() const { return s_->device_idx; }
  const Shape& shape() const { return s_->shape; }
  const Strides& strides() const { return s_->strides; }
  Dtype dtype() const { return s_->dtype; }
  std::size_t ndim() const { return s_->shape.size(); }
  std::size_t size() const { return shape_size(s_->shape); }  // elements
  std::size_t itemsize() const { return skein::itemsize(s_->dtype); }
  std::size_t nbytes() const { return size() * itemsize(); }
  // Byte offset of element (0, ..., 0) in data().
  std::size_t offset() const { return s_->offset; }
  // Exactly C-ordered strides (what raw kernel arguments need; set() and get() of such arrays are
  // one plain transfer).
  bool is_contiguous() const;
  // NumPy's flags (pygpu's flags.c_contiguous, f_contiguous): the elements fill a block of size()
  // items in C (row-major) / Fortran (column-major) order; strides of dimensions of size 1 do not
  // count, and an empty array is both. A 1-D contiguous array is both.
  bool is_c_contiguous() const;
  bool is_f_contiguous() const;
  // NumPy's and pygpu's flags (ArrayFlags above says what each means). No device work; on CUDA it
  // reads the buffer's device address, on OpenCL nothing.
  ArrayFlags flags() const;

  // A new array whose rows (the last axis) start at a multiple of the device's preferred pitch:
  // C order, strides()[ndim - 2] is the row pitch in bytes (>= shape.back() * itemsize), and the
  // outer strides follow from it (PyCUDA's mem_alloc_pitch). CUDA: cuMemAllocPitch; OpenCL: rows
  // padded to the device's base address alignment. Copies between such arrays and dense ones go
  // through cuMemcpy2D/3D and clEnqueue*BufferRect (set, get, copy_rect).
  [[nodiscard]] static Array empty_pitched(const Queue& queue, Shape shape, Dtype dtype,
                                           std::optional<std::size_t> device_idx = std::nullopt);

  // Device -> host into `dest` (dest.size() == size(), C order); works for strided views too: one
  // 2-D or 3-D rectangular copy (cuMemcpy2D/3D, clEnqueueReadBufferRect) when the view's layout is
  // a rectangle of up to three dimensions, else a copy kernel into a contiguous device temporary
  // and a plain transfer.
  void get(std::span<std::byte> dest, Sync sync = Sync::blocking) const;
  template <class T>
  void get(std::span<T> dest, Sync sync = Sync::blocking) const {
    check_host_type(dtype_of<T>, "get");
    get(std::as_writable_bytes(dest), sync);
  }
  template <class T>
  [[nodiscard]] std::vector<T> get() const {
    std::vector<T> out(size());
    get(std::span<T>(out));
    return out;
  }
  // Host -> device from `src` (src.size() == size(), C order); any view, as get(): a rectangular
  // copy (cuMemcpy2D/3D, clEnqueueWriteBufferRect) when the view is a rectangle of up to three
  // dimensions, else a plain transfer to a contiguous device temporary and a copy kernel from it
  // (then, with Sync::blocking, the call waits for that kernel too).
  void set(std::span<const std::byte> src, Sync sync = Sync::blocking) const;
  template <class T>
  void set(std::span<const T> src, Sync sync = Sync::blocking) const {
    check_host_type(dtype_of<T>, "set");
    set(std::as_bytes(src), sync);
  }
  template <class T>
  void set(const std::vector<T>& src, Sync sync = Sync::blocking) const {
    set(std::span<const T>(src), sync);
  }
  // Device -> device copy from an array of the same shape and dtype, any layouts:
  // copy_rect(queue(), *this, src). When src.queue() is another queue of the context, the copy
  // waits (on the device) for the work it holds, and its later work waits for the copy (it may
  // reuse src's memory from its pool once src goes: skein/memory_pool.hpp); nothing blocks.
  void set(const Array& src) const;
  // Fills with zero bytes; any view (a memset of the bytes a dense view spans, else a fill kernel).
  void fill_zero() const;

  // Rows [begin, end) along axis 0: a view sharing the buffer.
  [[nodiscard]] Array slice(std::size_t begin, std::size_t end) const;
  // A view with an explicit element offset, shape and strides (bytes); checked against the buffer.
  [[nodiscard]] Array view(std::size_t element_offset, Shape shape, Strides strides = {}) const;
  // The same elements seen as another shape with the same number of elements, as a view sharing
  // the buffer (NumPy's reshape when it returns a view): the elements are read from this array
  // and placed in the result in `order`, C (row-major: the last index varies fastest) or F
  // (column-major: the first index varies fastest). A view exists when the array is contiguous
  // in that order, or when every group of this array's axes that the new shape merges or splits
  // is itself dense in that order (NumPy's rule; dimensions of size 1 do not matter): e.g. a
  // transposed matrix reshaped in F order, or rows [b, e) of a C array reshaped in C order.
  // LogicError when the sizes differ, and when no view exists (the message says which axes):
  // skein::reshape (skein/array_ops.hpp) then makes a copy.
  [[nodiscard]] Array reshape(Shape shape, Order order = Order::C) const;
  // Views with the axes permuted (NumPy's and pygpu's transpose, T): transpose() reverses them,
  // transpose(axes) puts the input's axis axes[k] at position k (a permutation of 0 .. ndim-1).
  // No copy: the result shares the buffer (copy() or ascontiguousarray() in
  // skein/array_ops.hpp make a C-ordered copy).
  [[nodiscard]] Array transpose() const;
  [[nodiscard]] Array transpose(const std::vector<std::size_t>& axes) const;
  // The same memory used from another device of the queue (peer access on CUDA; OpenCL buffers
  // belong to the whole context).
  Array single_device_view(std::size_t device_idx) const;

 private:
  void check_host_type(Dtype host, const char* call) const;
  // The constructor's checks and the state they give (owns_data false).
  static std::shared_ptr<detail::ArrayState> checked_state(Queue queue, Buffer data, Shape shape,
                                                           Dtype dtype, Strides strides,
                                                           std::size_t offset);

  explicit Array(std::shared_ptr<const detail::ArrayState> state) : s_(std::move(state)) {}

  std::shared_ptr<const detail::ArrayState> s_;
};

// Device -> device copy of `src` into `dst` (PyCUDA's Memcpy2D and Memcpy3D between device
// arrays): equal shapes and dtypes, any strides, on one device or two devices of the queue's
// context, enqueued on `queue` (after the work enqueued so far on src's device, as Buffer::set).
// The bytes are copied as they are (no conversion: skein::copy converts). Where the pair of
// layouts is a rectangle of up to three dimensions (rows of contiguous bytes, pitched rows and
// slices; dimensions of size 1 and dense runs of dimensions merged) it is one cuMemcpy2DAsync /
// cuMemcpy3DAsync (the peer form between devices) or clEnqueueCopyBufferRect; otherwise the copy
// kernel (skein::copy), through contiguous temporaries between devices. LogicError for different
// shapes or dtypes, arrays of another context or on a device the queue lacks, and overlapping views
// of one allocation.
SKEIN_EXPORT void copy_rect(const Queue& queue, const Array& dst, const Array& src,
                            Sync sync = Sync::async);

}  // namespace skein

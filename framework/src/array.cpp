#include "skein/array.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <numeric>

#include "skein/detail/errors.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"

namespace skein {

std::size_t shape_size(const Shape& shape) {
  return std::accumulate(shape.begin(), shape.end(), std::size_t{1}, std::multiplies<>());
}

Strides contiguous_strides(const Shape& shape, std::size_t itemsize) {
  Strides strides(shape.size());
  std::size_t stride = itemsize;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

Strides fortran_strides(const Shape& shape, std::size_t itemsize) {
  Strides strides(shape.size());
  std::size_t stride = itemsize;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

std::string to_string(const Shape& shape) { return fmt::format("({})", fmt::join(shape, ", ")); }

namespace {
// Bytes from element (0, ..., 0) to one past the last element; 0 for an empty array.
std::size_t extent_bytes(const Shape& shape, const Strides& strides, std::size_t itemsize) {
  if (shape_size(shape) == 0) return 0;
  std::size_t last = 0;
  for (std::size_t i = 0; i < shape.size(); ++i) last += (shape[i] - 1) * strides[i];
  return last + itemsize;
}

std::size_t default_device(const Queue& queue, std::optional<std::size_t> device_idx,
                           const char* call) {
  const std::size_t idx = device_idx.value_or(queue.device_idxs().front());
  if (!queue.has_device(idx)) {
    detail::raise_in(SKEIN_HERE, call, "Pick one of the queue's devices.",
                     "device {} is not in the queue (its devices: {})", idx,
                     fmt::join(queue.device_idxs(), ", "));
  }
  return idx;
}
}  // namespace

Array::Array(Queue queue, Buffer data, Shape shape, Dtype dtype, Strides strides,
             std::size_t offset)
    : queue_(std::move(queue)),
      data_(std::move(data)),
      device_idx_(data_.device_idx()),
      shape_(std::move(shape)),
      strides_(strides.empty() ? contiguous_strides(shape_, skein::itemsize(dtype))
                               : std::move(strides)),
      dtype_(dtype),
      offset_(offset) {
  if (strides_.size() != shape_.size()) {
    detail::raise_in(SKEIN_HERE, "Array", "Give one stride per dimension.",
                     "shape {} has {} dimension(s) but {} stride(s) were given",
                     to_string(shape_), shape_.size(), strides_.size());
  }
  const std::size_t extent = extent_bytes(shape_, strides_, itemsize());
  if (extent > 0 && (offset_ > data_.size() || extent > data_.size() - offset_)) {
    detail::raise_in(SKEIN_HERE, "Array",
                     "Allocate a larger buffer or use a smaller shape.",
                     "an array of shape {} and dtype {} at offset {} needs {} bytes, but the "
                     "buffer has {}",
                     to_string(shape_), name(dtype_), offset_, offset_ + extent, data_.size());
  }
  if (!(queue_.context() == data_.context())) {
    detail::raise_in(SKEIN_HERE, "Array", "Use a queue of the buffer's context.",
                     "the queue and the buffer belong to different contexts");
  }
}

Array Array::empty(const Queue& queue, Shape shape, Dtype dtype,
                   std::optional<std::size_t> device_idx, const Allocator& allocator) {
  const std::size_t idx = default_device(queue, device_idx, "Array::empty");
  const std::size_t nbytes = shape_size(shape) * skein::itemsize(dtype);
  Buffer buffer = allocator ? allocator(idx, nbytes) : Buffer::allocate(queue.context(), idx, nbytes);
  if (buffer.size() < nbytes || buffer.device_idx() != idx) {
    detail::raise_in(SKEIN_HERE, "Array::empty",
                     "The allocator must return a buffer of at least the requested size on the "
                     "requested device.",
                     "the allocator returned {} bytes on device {} for a request of {} bytes on "
                     "device {}",
                     buffer.size(), buffer.device_idx(), nbytes, idx);
  }
  return Array(queue, std::move(buffer), std::move(shape), dtype);
}

Array Array::zeros(const Queue& queue, Shape shape, Dtype dtype,
                   std::optional<std::size_t> device_idx, const Allocator& allocator) {
  Array a = empty(queue, std::move(shape), dtype, device_idx, allocator);
  a.fill_zero();
  return a;
}

bool Array::is_contiguous() const { return strides_ == contiguous_strides(shape_, itemsize()); }

Array Array::empty(const Queue& queue, Shape shape, Dtype dtype, Order order,
                   std::optional<std::size_t> device_idx, const Allocator& allocator) {
  Array a = empty(queue, std::move(shape), dtype, device_idx, allocator);
  if (order == Order::F) a.strides_ = fortran_strides(a.shape_, a.itemsize());
  return a;
}

Array Array::zeros(const Queue& queue, Shape shape, Dtype dtype, Order order,
                   std::optional<std::size_t> device_idx, const Allocator& allocator) {
  Array a = empty(queue, std::move(shape), dtype, order, device_idx, allocator);
  if (a.nbytes() > 0) {
    queue.device_queue(a.device_idx_).fill_zero(*a.data_.adapter(), a.data_.offset() + a.offset_,
                                                a.nbytes());
  }
  return a;
}

namespace {
// NumPy's rule: the strides of dimensions of size > 1, walked from the fastest, are those of a
// dense block.
bool dense_in(const Shape& shape, const Strides& strides, std::size_t itemsize, bool fortran) {
  if (shape_size(shape) == 0) return true;
  std::size_t expected = itemsize;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    const std::size_t d = fortran ? k : shape.size() - 1 - k;
    if (shape[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}
}  // namespace

bool Array::is_c_contiguous() const { return dense_in(shape_, strides_, itemsize(), false); }
bool Array::is_f_contiguous() const { return dense_in(shape_, strides_, itemsize(), true); }

Array Array::transpose() const {
  std::vector<std::size_t> axes(shape_.size());
  for (std::size_t k = 0; k < axes.size(); ++k) axes[k] = axes.size() - 1 - k;
  return transpose(axes);
}

Array Array::transpose(const std::vector<std::size_t>& axes) const {
  std::vector<bool> seen(shape_.size(), false);
  bool ok = axes.size() == shape_.size();
  for (std::size_t k = 0; ok && k < axes.size(); ++k) {
    ok = axes[k] < shape_.size() && !seen[axes[k]];
    if (ok) seen[axes[k]] = true;
  }
  if (!ok) {
    detail::raise_in(SKEIN_HERE, "Array::transpose",
                     "Give each axis 0 .. ndim-1 exactly once (a permutation).",
                     "axes ({}) are not a permutation of the {} axes of an array of shape {}",
                     fmt::join(axes, ", "), shape_.size(), to_string(shape_));
  }
  Shape shape(axes.size());
  Strides strides(axes.size());
  for (std::size_t k = 0; k < axes.size(); ++k) {
    shape[k] = shape_[axes[k]];
    strides[k] = strides_[axes[k]];
  }
  return Array(queue_, data_, std::move(shape), dtype_, std::move(strides), offset_);
}

void Array::check_host_type(Dtype host, const char* call) const {
  if (host != dtype_) {
    detail::raise_in(SKEIN_HERE, fmt::format("Array::{}", call),
                     "Use host data of the array's dtype, or convert first.",
                     "host type {} does not match the array's dtype {}", name(host), name(dtype_));
  }
}

void Array::get(std::span<std::byte> dest, Sync sync) const {
  if (dest.size() != nbytes()) {
    detail::raise_in(SKEIN_HERE, "Array::get", "The destination must hold exactly size() elements.",
                     "destination has {} bytes; the array of shape {} and dtype {} has {}",
                     dest.size(), to_string(shape_), name(dtype_), nbytes());
  }
  if (nbytes() == 0) return;
  if (is_contiguous()) {
    data_.get_sub_region(offset_, nbytes()).get(queue_, dest, sync);
    return;
  }
  // A strided view: bring the bytes it spans to the host and gather its elements there.
  const std::size_t extent = extent_bytes(shape_, strides_, itemsize());
  std::vector<std::byte> staging(extent);
  data_.get_sub_region(offset_, extent).get(queue_, std::span(staging), Sync::blocking);
  const std::size_t n = size();
  const std::size_t item = itemsize();
  std::vector<std::size_t> index(shape_.size(), 0);
  for (std::size_t flat = 0; flat < n; ++flat) {
    std::size_t src = 0;
    for (std::size_t d = 0; d < shape_.size(); ++d) src += index[d] * strides_[d];
    std::memcpy(dest.data() + flat * item, staging.data() + src, item);
    for (std::size_t d = shape_.size(); d-- > 0;) {
      if (++index[d] < shape_[d]) break;
      index[d] = 0;
    }
  }
}

void Array::set(std::span<const std::byte> src, Sync sync) const {
  if (src.size() != nbytes()) {
    detail::raise_in(SKEIN_HERE, "Array::set", "The source must hold exactly size() elements.",
                     "source has {} bytes; the array of shape {} and dtype {} has {}", src.size(),
                     to_string(shape_), name(dtype_), nbytes());
  }
  if (!is_contiguous()) {
    detail::raise_in(SKEIN_HERE, "Array::set",
                     "Set the contiguous parent array, or copy into a contiguous array first.",
                     "setting a strided view from the host is not supported");
  }
  if (nbytes() == 0) return;
  data_.get_sub_region(offset_, nbytes()).set(queue_, src, sync);
}

void Array::set(const Array& src) const {
  if (src.shape_ != shape_ || src.dtype_ != dtype_) {
    detail::raise_in(SKEIN_HERE, "Array::set", "Copy between arrays of equal shape and dtype.",
                     "source has shape {} and dtype {}, destination shape {} and dtype {}",
                     to_string(src.shape_), name(src.dtype_), to_string(shape_), name(dtype_));
  }
  if (!is_contiguous() || !src.is_contiguous()) {
    detail::raise_in(SKEIN_HERE, "Array::set", "Copy between contiguous arrays.",
                     "device-to-device copies of strided views are not supported");
  }
  if (nbytes() == 0) return;
  data_.get_sub_region(offset_, nbytes())
      .set(queue_, src.data_.get_sub_region(src.offset_, nbytes()));
}

void Array::fill_zero() const {
  if (!is_contiguous()) {
    detail::raise_in(SKEIN_HERE, "Array::fill_zero", "Fill the contiguous parent array.",
                     "filling a strided view is not supported");
  }
  if (nbytes() == 0) return;
  queue_.device_queue(device_idx_).fill_zero(*data_.adapter(), data_.offset() + offset_, nbytes());
}

Array Array::slice(std::size_t begin, std::size_t end) const {
  if (shape_.empty() || begin > end || end > shape_[0]) {
    detail::raise_in(SKEIN_HERE, "Array::slice", "Slice within [0, shape[0]].",
                     "rows [{}, {}) are out of range for shape {}", begin, end, to_string(shape_));
  }
  Shape shape = shape_;
  shape[0] = end - begin;
  return Array(queue_, data_, std::move(shape), dtype_, strides_, offset_ + begin * strides_[0]);
}

Array Array::view(std::size_t element_offset, Shape shape, Strides strides) const {
  return Array(queue_, data_, std::move(shape), dtype_, std::move(strides),
               offset_ + element_offset * itemsize());
}

Array Array::reshape(Shape shape) const {
  if (shape_size(shape) != size()) {
    detail::raise_in(SKEIN_HERE, "Array::reshape", "Keep the number of elements.",
                     "cannot reshape {} ({} elements) to {} ({} elements)", to_string(shape_),
                     size(), to_string(shape), shape_size(shape));
  }
  if (!is_contiguous()) {
    detail::raise_in(SKEIN_HERE, "Array::reshape", "Reshape a contiguous array.",
                     "the array is a strided view");
  }
  return Array(queue_, data_, std::move(shape), dtype_, {}, offset_);
}

Array Array::single_device_view(std::size_t device_idx) const {
  if (!queue_.has_device(device_idx)) {
    detail::raise_in(SKEIN_HERE, "Array::single_device_view", "Pick one of the queue's devices.",
                     "device {} is not in the array's queue", device_idx);
  }
  if (!detail::impl_of(queue_.context())->adapter->can_access(device_idx, device_idx_)) {
    detail::raise_in(SKEIN_HERE, "Array::single_device_view",
                     "Copy the data to that device instead (Array::set).",
                     "device {} cannot access memory of device {} (no peer access)", device_idx,
                     device_idx_);
  }
  Array result = *this;
  result.device_idx_ = device_idx;
  return result;
}

}  // namespace skein

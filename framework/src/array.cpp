// SPDX-License-Identifier: BSD-3-Clause
#include "skein/array.hpp"
#include "skein/memory_pool.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <optional>

#include "skein/ctypes.hpp"
#include "skein/detail/adapter.hpp"
#include "skein/detail/array_pool.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"
#include "codegen/launch.hpp"
#include "codegen/programs.hpp"
#include "codegen/skeletons.hpp"
#include "codegen/types.hpp"
#include "strided_copy.hpp"

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

// The rectangle (up to three dimensions) that walks the elements of a shape in two layouts at
// once, or nothing when there is none. Offsets are left 0 (the caller adds them). Dimensions of
// size 1 are dropped, and neighbours that are dense in both layouts merged; the innermost run is
// the row when it is dense (stride = itemsize) in both, else rows are one element wide. Empty
// shapes are the caller's business.
std::optional<detail::RectRegion> plan_rect(const Shape& shape, const Strides& dst,
                                            const Strides& src, std::size_t itemsize) {
  struct Dim {
    std::size_t n, dst, src;
  };
  std::vector<Dim> dims;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    const Dim d{shape[i], dst[i], src[i]};
    if (!dims.empty() && dims.back().dst == d.n * d.dst && dims.back().src == d.n * d.src) {
      dims.back() = Dim{dims.back().n * d.n, d.dst, d.src};
    } else {
      dims.push_back(d);
    }
  }
  std::size_t width = itemsize;
  if (!dims.empty() && dims.back().dst == itemsize && dims.back().src == itemsize) {
    width = dims.back().n * itemsize;
    dims.pop_back();
  }
  if (dims.size() > 2) return std::nullopt;
  auto pitches_ok = [&](std::size_t height, std::size_t depth, std::size_t row, std::size_t slice) {
    if (row < width) return false;
    return depth == 1 || (slice % row == 0 && slice / row >= height);
  };
  // Rows and slices: the inner dimension first, then (3-D) the outer; the other order is tried
  // too, as the copy may walk the two in either order.
  auto attempt = [&](const Dim& row, const Dim& slice) -> std::optional<detail::RectRegion> {
    detail::RectRegion r;
    r.width = width;
    r.height = row.n;
    r.depth = slice.n;
    r.dst_row_pitch = row.n == 1 ? width : row.dst;
    r.src_row_pitch = row.n == 1 ? width : row.src;
    r.dst_slice_pitch = slice.n == 1 ? r.height * r.dst_row_pitch : slice.dst;
    r.src_slice_pitch = slice.n == 1 ? r.height * r.src_row_pitch : slice.src;
    if (!pitches_ok(r.height, r.depth, r.dst_row_pitch, r.dst_slice_pitch) ||
        !pitches_ok(r.height, r.depth, r.src_row_pitch, r.src_slice_pitch)) {
      return std::nullopt;
    }
    return r;
  };
  const Dim one{1, 0, 0};
  if (dims.empty()) return attempt(one, one);
  if (dims.size() == 1) return attempt(dims[0], one);
  if (auto r = attempt(dims[1], dims[0])) return r;
  return attempt(dims[0], dims[1]);
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
    : s_(checked_state(std::move(queue), std::move(data), std::move(shape), dtype,
                       std::move(strides), offset)) {}

std::shared_ptr<detail::ArrayState> Array::checked_state(Queue queue, Buffer data, Shape shape,
                                                         Dtype dtype, Strides strides,
                                                         std::size_t offset) {
  if (strides.empty()) strides = contiguous_strides(shape, skein::itemsize(dtype));
  if (strides.size() != shape.size()) {
    detail::raise_in(SKEIN_HERE, "Array", "Give one stride per dimension.",
                     "shape {} has {} dimension(s) but {} stride(s) were given", to_string(shape),
                     shape.size(), strides.size());
  }
  const std::size_t extent = extent_bytes(shape, strides, skein::itemsize(dtype));
  if (extent > 0 && (offset > data.size() || extent > data.size() - offset)) {
    detail::raise_in(SKEIN_HERE, "Array", "Allocate a larger buffer or use a smaller shape.",
                     "an array of shape {} and dtype {} at offset {} needs {} bytes, but the "
                     "buffer has {}",
                     to_string(shape), name(dtype), offset, offset + extent, data.size());
  }
  if (!(queue.context() == data.context())) {
    detail::raise_in(SKEIN_HERE, "Array", "Use a queue of the buffer's context.",
                     "the queue and the buffer belong to different contexts");
  }
  const std::size_t device_idx = data.device_idx();
  return std::make_shared<detail::ArrayState>(
      detail::ArrayState{std::move(queue), std::move(data), device_idx, std::move(shape),
                         std::move(strides), dtype, offset});
}

Array Array::empty(const Queue& queue, Shape shape, Dtype dtype,
                   std::optional<std::size_t> device_idx, const Allocator& allocator) {
  const std::size_t idx = default_device(queue, device_idx, "Array::empty");
  const std::size_t nbytes = shape_size(shape) * skein::itemsize(dtype);
  Buffer buffer =
      allocator ? allocator(idx, nbytes) : detail::allocate_array_memory(queue, idx, nbytes);
  if (buffer.size() < nbytes || buffer.device_idx() != idx) {
    detail::raise_in(SKEIN_HERE, "Array::empty",
                     "The allocator must return a buffer of at least the requested size on the "
                     "requested device.",
                     "the allocator returned {} bytes on device {} for a request of {} bytes on "
                     "device {}",
                     buffer.size(), buffer.device_idx(), nbytes, idx);
  }
  auto state = checked_state(queue, std::move(buffer), std::move(shape), dtype, {}, 0);
  state->owns_data = true;
  return Array(std::move(state));
}

Array Array::zeros(const Queue& queue, Shape shape, Dtype dtype,
                   std::optional<std::size_t> device_idx, const Allocator& allocator) {
  Array a = empty(queue, std::move(shape), dtype, device_idx, allocator);
  a.fill_zero();
  return a;
}

bool Array::is_contiguous() const {
  return s_->strides == contiguous_strides(s_->shape, itemsize());
}

Array Array::empty(const Queue& queue, Shape shape, Dtype dtype, Order order,
                   std::optional<std::size_t> device_idx, const Allocator& allocator) {
  Array a = empty(queue, std::move(shape), dtype, device_idx, allocator);
  if (order == Order::F) {
    auto state = std::make_shared<detail::ArrayState>(*a.s_);
    state->strides = fortran_strides(state->shape, a.itemsize());
    return Array(std::shared_ptr<const detail::ArrayState>(std::move(state)));
  }
  return a;
}

Array Array::zeros(const Queue& queue, Shape shape, Dtype dtype, Order order,
                   std::optional<std::size_t> device_idx, const Allocator& allocator) {
  Array a = empty(queue, std::move(shape), dtype, order, device_idx, allocator);
  if (a.nbytes() > 0) {
    queue.device_queue(a.s_->device_idx)
        .fill_zero(*a.s_->data.adapter(), a.s_->data.offset() + a.s_->offset, a.nbytes());
  }
  return a;
}

Array Array::empty_pitched(const Queue& queue, Shape shape, Dtype dtype,
                           std::optional<std::size_t> device_idx) {
  const std::size_t idx = default_device(queue, device_idx, "Array::empty_pitched");
  if (shape.empty()) return empty(queue, std::move(shape), dtype, idx);
  const std::size_t item = skein::itemsize(dtype);
  const std::size_t width = shape.back() * item;
  const std::size_t rows = shape_size(shape) / std::max<std::size_t>(shape.back(), 1);
  if (shape_size(shape) == 0) {
    return empty(queue, std::move(shape), dtype, idx);
  }
  auto [adapter, pitch] =
      detail::impl_of(queue.context())->adapter->allocate_pitched(idx, width, rows, item);
  Buffer buffer(queue.context(), std::move(adapter), idx, 0, pitch * rows);
  Strides strides(shape.size());
  strides.back() = item;
  std::size_t stride = pitch;
  for (std::size_t i = shape.size() - 1; i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  auto state =
      checked_state(queue, std::move(buffer), std::move(shape), dtype, std::move(strides), 0);
  state->owns_data = true;
  return Array(std::move(state));
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

bool Array::is_c_contiguous() const { return dense_in(s_->shape, s_->strides, itemsize(), false); }
bool Array::is_f_contiguous() const { return dense_in(s_->shape, s_->strides, itemsize(), true); }

ArrayFlags Array::flags() const {
  ArrayFlags f;
  f.c_contiguous = is_c_contiguous();
  f.f_contiguous = is_f_contiguous();
  f.writeable = true;
  f.owndata = s_->owns_data;
  // OpenCL's cl_mem starts aligned (CL_DEVICE_MEM_BASE_ADDR_ALIGN) and its address is not known;
  // CUDA's device pointer is the address.
  std::uintptr_t address = s_->data.offset() + s_->offset;
  if (s_->queue.context().api().id() == ApiId::cuda) address += s_->data.adapter()->native();
  std::uintptr_t bits = address;
  for (std::size_t i = 0; i < s_->shape.size(); ++i) {
    if (s_->shape[i] > 1) bits |= s_->strides[i];
  }
  f.aligned = size() == 0 || bits % alignment_of(s_->dtype) == 0;
  return f;
}

Array Array::transpose() const {
  std::vector<std::size_t> axes(s_->shape.size());
  for (std::size_t k = 0; k < axes.size(); ++k) axes[k] = axes.size() - 1 - k;
  return transpose(axes);
}

Array Array::transpose(const std::vector<std::size_t>& axes) const {
  std::vector<bool> seen(s_->shape.size(), false);
  bool ok = axes.size() == s_->shape.size();
  for (std::size_t k = 0; ok && k < axes.size(); ++k) {
    ok = axes[k] < s_->shape.size() && !seen[axes[k]];
    if (ok) seen[axes[k]] = true;
  }
  if (!ok) {
    detail::raise_in(SKEIN_HERE, "Array::transpose",
                     "Give each axis 0 .. ndim-1 exactly once (a permutation).",
                     "axes ({}) are not a permutation of the {} axes of an array of shape {}",
                     fmt::join(axes, ", "), s_->shape.size(), to_string(s_->shape));
  }
  Shape shape(axes.size());
  Strides strides(axes.size());
  for (std::size_t k = 0; k < axes.size(); ++k) {
    shape[k] = s_->shape[axes[k]];
    strides[k] = s_->strides[axes[k]];
  }
  return Array(s_->queue, s_->data, std::move(shape), s_->dtype, std::move(strides), s_->offset);
}

void Array::check_host_type(Dtype host, const char* call) const {
  if (host != s_->dtype) {
    detail::raise_in(SKEIN_HERE, fmt::format("Array::{}", call),
                     "Use host data of the array's dtype, or convert first.",
                     "host type {} does not match the array's dtype {}", name(host),
                     name(s_->dtype));
  }
}

void Array::get(std::span<std::byte> dest, Sync sync) const {
  if (dest.size() != nbytes()) {
    detail::raise_in(SKEIN_HERE, "Array::get", "The destination must hold exactly size() elements.",
                     "destination has {} bytes; the array of shape {} and dtype {} has {}",
                     dest.size(), to_string(s_->shape), name(s_->dtype), nbytes());
  }
  if (nbytes() == 0) return;
  if (is_contiguous()) {
    s_->data.get_sub_region(s_->offset, nbytes()).get(s_->queue, dest, sync);
    return;
  }
  // A strided view: one rectangular copy when its layout is one, else gathered on the device.
  const Strides dense = contiguous_strides(s_->shape, itemsize());
  if (auto region = plan_rect(s_->shape, dense, s_->strides, itemsize())) {
    region->src_offset = s_->data.offset() + s_->offset;
    if (sync == Sync::blocking) detail::confirm_results(s_->queue, s_->device_idx, "Array::get");
    if (s_->queue.device_queue(s_->device_idx)
            .read_rect(dest.data(), *s_->data.adapter(), *region, sync == Sync::blocking)) {
      return;
    }
  }
  // From the queue's temporaries: reused only by later work on this queue, so an asynchronous
  // read never sees its staging freed or reused under it.
  Array staging = empty(s_->queue, s_->shape, s_->dtype, s_->device_idx,
                        temporaries_pool(s_->queue).allocator());
  detail::strided_copy(s_->queue, *this, staging);
  staging.get(dest, sync);
}

void Array::set(std::span<const std::byte> src, Sync sync) const {
  if (src.size() != nbytes()) {
    detail::raise_in(SKEIN_HERE, "Array::set", "The source must hold exactly size() elements.",
                     "source has {} bytes; the array of shape {} and dtype {} has {}", src.size(),
                     to_string(s_->shape), name(s_->dtype), nbytes());
  }
  if (nbytes() == 0) return;
  if (is_contiguous()) {
    s_->data.get_sub_region(s_->offset, nbytes()).set(s_->queue, src, sync);
    return;
  }
  const Strides dense = contiguous_strides(s_->shape, itemsize());
  if (auto region = plan_rect(s_->shape, s_->strides, dense, itemsize())) {
    region->dst_offset = s_->data.offset() + s_->offset;
    if (s_->queue.device_queue(s_->device_idx)
            .write_rect(*s_->data.adapter(), src.data(), *region, sync == Sync::blocking)) {
      return;
    }
  }
  // Not a rectangle: through a contiguous device temporary, scattered by the copy kernel.
  Array staging = empty(s_->queue, s_->shape, s_->dtype, s_->device_idx,
                        temporaries_pool(s_->queue).allocator());
  staging.set(src, sync);
  detail::strided_copy(s_->queue, staging, *this);
  if (sync == Sync::blocking) s_->queue.device_queue(s_->device_idx).synchronize();
}

void Array::set(const Array& src) const {
  // A source of another queue: its queue may reuse its memory once it goes (the pools' rule).
  const detail::CrossQueueRead order(s_->queue, src);
  copy_rect(s_->queue, *this, src);
  order.release();
}

void Array::fill_zero() const {
  if (nbytes() == 0) return;
  // A view whose elements fill the bytes they span (a dense block, the axes in any order, as a
  // transposed array): one memset.
  std::vector<std::pair<std::size_t, std::size_t>> dims;  // (stride, size) of axes of size > 1
  for (std::size_t i = 0; i < s_->shape.size(); ++i) {
    if (s_->shape[i] != 1) dims.emplace_back(s_->strides[i], s_->shape[i]);
  }
  std::sort(dims.begin(), dims.end());
  std::size_t expected = itemsize();
  bool dense = true;
  for (const auto& [stride, n] : dims) {
    dense = dense && stride == expected;
    expected *= n;
  }
  if (dense) {
    s_->queue.device_queue(s_->device_idx)
        .fill_zero(*s_->data.adapter(), s_->data.offset() + s_->offset, nbytes());
    return;
  }
  // Zero bytes are the zero of every dtype.
  detail::strided_fill_zero(s_->queue, *this);
}

Array Array::slice(std::size_t begin, std::size_t end) const {
  if (s_->shape.empty() || begin > end || end > s_->shape[0]) {
    detail::raise_in(SKEIN_HERE, "Array::slice", "Slice within [0, shape[0]].",
                     "rows [{}, {}) are out of range for shape {}", begin, end,
                     to_string(s_->shape));
  }
  Shape shape = s_->shape;
  shape[0] = end - begin;
  return Array(s_->queue, s_->data, std::move(shape), s_->dtype, s_->strides,
               s_->offset + begin * s_->strides[0]);
}

Array Array::view(std::size_t element_offset, Shape shape, Strides strides) const {
  return Array(s_->queue, s_->data, std::move(shape), s_->dtype, std::move(strides),
               s_->offset + element_offset * itemsize());
}

Array Array::single_device_view(std::size_t device_idx) const {
  if (!s_->queue.has_device(device_idx)) {
    detail::raise_in(SKEIN_HERE, "Array::single_device_view", "Pick one of the queue's devices.",
                     "device {} is not in the array's queue", device_idx);
  }
  if (!detail::impl_of(s_->queue.context())->adapter->can_access(device_idx, s_->device_idx)) {
    detail::raise_in(SKEIN_HERE, "Array::single_device_view",
                     "Copy the data to that device instead (Array::set).",
                     "device {} cannot access memory of device {} (no peer access)", device_idx,
                     s_->device_idx);
  }
  auto state = std::make_shared<detail::ArrayState>(*s_);
  state->device_idx = device_idx;
  state->owns_data = false;
  return Array(std::shared_ptr<const detail::ArrayState>(std::move(state)));
}

namespace {

// Rectangles on one device: a kernel that copies rows of 16-, 4- or 1-byte units, a group per
// row (grid-stride), the threads of a group along the row. cuMemcpy2D/3D between two places of
// device memory runs at about 0.44 of a contiguous copy on an H200 (16 KiB rows, 4096 x 4096
// float32); this reads and writes at the copy's bandwidth.
void copy_rows(const Queue& queue, std::size_t device, const Array& dst, const Array& src,
               const detail::RectRegion& region) {
  const std::size_t unit = [&] {
    std::size_t all = region.width | region.dst_offset | region.src_offset | region.dst_row_pitch |
                      region.src_row_pitch | region.dst_slice_pitch | region.src_slice_pitch;
    const bool aligned_base = queue.context().api().id() == ApiId::cuda ||
                              queue.context().device(device).params().base_address_align >= 16;
    if (!aligned_base) all |= 1;
    return all % 16 == 0 ? std::size_t{16} : all % 4 == 0 ? std::size_t{4} : std::size_t{1};
  }();
  static const std::uint64_t owner = detail::codegen::new_cache_owner();
  const char* type = unit == 16 ? "uint4" : unit == 4 ? "uint32_t" : "uint8_t";
  const auto program = detail::codegen::cached_program(
      owner, queue.context(), type,
      [&] {
        return detail::codegen::render_skeleton("copy_rows.tmpl",
                                                {{"unit", type},
                                                 {"dst_param", detail::codegen::array_param("d")},
                                                 {"src_param", detail::codegen::array_param("s")}});
      },
      {"skein_copy_rows"}, ProgramOptions{.name = "skein_copy_rows"});
  const std::uint64_t rows = std::uint64_t{region.height} * region.depth;
  detail::codegen::ArgPack pack;
  pack.buffer(dst.data(), region.dst_offset - dst.data().offset());
  pack.buffer(src.data(), region.src_offset - src.data().offset());
  for (std::uint64_t v :
       {std::uint64_t{region.dst_row_pitch}, std::uint64_t{region.dst_slice_pitch},
        std::uint64_t{region.src_row_pitch}, std::uint64_t{region.src_slice_pitch},
        std::uint64_t{region.width / unit}, std::uint64_t{region.height}, rows}) {
    pack.value(v);
  }
  const std::size_t groups = static_cast<std::size_t>(
      std::min<std::uint64_t>(rows, program->resident("skein_copy_rows", device) * 4));
  detail::codegen::launch(program->kernel("skein_copy_rows"), queue, device,
                          std::max<std::size_t>(groups, 1), program->local_size[device], pack);
}

}  // namespace

void copy_rect(const Queue& queue, const Array& dst, const Array& src, Sync sync) {
  constexpr const char* call = "skein::copy_rect";
  if (src.shape() != dst.shape() || src.dtype() != dst.dtype()) {
    detail::raise_in(SKEIN_HERE, call, "Copy between arrays of equal shape and dtype.",
                     "source has shape {} and dtype {}, destination shape {} and dtype {}",
                     to_string(src.shape()), name(src.dtype()), to_string(dst.shape()),
                     name(dst.dtype()));
  }
  if (!(dst.data().context() == queue.context()) || !(src.data().context() == queue.context())) {
    detail::raise_in(SKEIN_HERE, call, "Copy between arrays of the queue's context.",
                     "the {} belongs to another context than the queue",
                     dst.data().context() == queue.context() ? "source" : "destination");
  }
  for (const Array* a : {&dst, &src}) {
    if (!queue.has_device(a->device_idx())) {
      detail::raise_in(SKEIN_HERE, call, "Use a queue that includes both arrays' devices.",
                       "the {} is on device {}, which is not in the queue",
                       a == &dst ? "destination" : "source", a->device_idx());
    }
  }
  const std::size_t nbytes = dst.nbytes();
  if (nbytes == 0) return;
  const std::size_t item = dst.itemsize();
  const std::size_t dst_begin = dst.data().offset() + dst.offset();
  const std::size_t src_begin = src.data().offset() + src.offset();
  if (dst.data().adapter() == src.data().adapter()) {
    const std::size_t dst_end = dst_begin + extent_bytes(dst.shape(), dst.strides(), item);
    const std::size_t src_end = src_begin + extent_bytes(src.shape(), src.strides(), item);
    if (dst_begin < src_end && src_begin < dst_end) {
      detail::raise_in(SKEIN_HERE, call,
                       "Copy the source to a new array first (skein::copy(queue, src)).",
                       "the source (bytes [{}, {})) and destination (bytes [{}, {})) overlap in "
                       "one allocation",
                       src_begin, src_end, dst_begin, dst_end);
    }
  }
  auto& dst_queue = queue.device_queue(dst.device_idx());
  auto finish = [&] {
    if (sync == Sync::blocking) dst_queue.synchronize();
  };
  if (dst.is_contiguous() && src.is_contiguous()) {
    dst.data()
        .get_sub_region(dst.offset(), nbytes)
        .set(queue, src.data().get_sub_region(src.offset(), nbytes), sync);
    return;
  }
  if (auto region = plan_rect(dst.shape(), dst.strides(), src.strides(), item)) {
    region->dst_offset = dst_begin;
    region->src_offset = src_begin;
    if (src.device_idx() == dst.device_idx()) {
      copy_rows(queue, dst.device_idx(), dst, src, *region);
      finish();
      return;
    } else {
      // As Buffer::set: after the work so far on the source's device; later work there waits.
      auto& src_queue = queue.device_queue(src.device_idx());
      dst_queue.wait_for_queue(src_queue);
      detail::pass_results(queue, src.device_idx(), dst.device_idx());
      if (dst_queue.copy_rect(*dst.data().adapter(), *src.data().adapter(), *region)) {
        src_queue.wait_for_queue(dst_queue);
        finish();
        return;
      }
    }
  }
  // Not a rectangle: the copy kernel, on one device; between devices through contiguous copies.
  if (src.device_idx() == dst.device_idx()) {
    detail::strided_copy(queue, src, dst);
  } else {
    Array there = src;
    if (!src.is_contiguous()) {
      there = Array::empty(queue, src.shape(), src.dtype(), src.device_idx(),
                           temporaries_pool(queue).allocator());
      detail::strided_copy(queue, src, there);
    }
    Array here = dst.is_contiguous()
                     ? dst
                     : Array::empty(queue, dst.shape(), dst.dtype(), dst.device_idx(),
                                    temporaries_pool(queue).allocator());
    here.data()
        .get_sub_region(here.offset(), nbytes)
        .set(queue, there.data().get_sub_region(there.offset(), nbytes));
    if (!dst.is_contiguous()) detail::strided_copy(queue, here, dst);
  }
  finish();
}

}  // namespace skein

// SPDX-License-Identifier: BSD-3-Clause
// The halo exchange of GridArrays (exchange_halos in grid_array.hpp).
//
// The plan comes from the layout alone, so every rank computes the same one: each ghost region
// of each member with points (a face, and with a box stencil an edge or a corner: one direction
// -1, 0 or +1 per axis) is either left alone (beyond an open side), filled with a constant, or
// copied from one box of one member's points, mirrored along the axes where a reflecting wall
// maps it back into the domain. Regions copied from one member to another travel together: the
// source packs them, for every array, into one message (segments aligned to 16 bytes), which
// goes to the destination by a device copy when both are on this rank and by Communicator
// send/recv, grouped, when not; the destination unpacks it. The layout's checks make each source
// box lie inside the source's points.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <complex>
#include <cstring>
#include <map>
#include <optional>

#include "dist_transport.hpp"
#include "grid_copy.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/host_collectives.hpp"
#include "skein/error.hpp"
#include "skein/grid_array.hpp"

namespace skein {

using namespace detail::transport;

namespace {

using Int4 = std::array<std::int64_t, 4>;

// One ghost region of a destination block, in the copy's four axes (grid_copy.hpp).
struct HaloRegion {
  std::size_t dst = 0;  // member
  Int4 extent{1, 1, 1, 1};
  Int4 dst_start{0, 0, 0, 0};  // in the destination's block with halo
  // A copy: the source member, the start of the first cell in its block with halo, and the step
  // along each axis (-1 where mirrored).
  std::size_t src = 0;
  Int4 src_start{0, 0, 0, 0};
  Int4 src_step{1, 1, 1, 1};
  std::optional<double> constant;  // set: filled with this instead
};

// What one axis of a region is: inside the domain (from position `pos`, starting at global
// `start`, stepping `step`), beyond an open side, or beyond a constant one.
struct AxisPart {
  enum Kind { copy, open, constant } kind = copy;
  std::size_t pos = 0;
  std::int64_t start = 0;  // global
  int step = 1;
  double value = 0;
  std::int64_t dst_start = 0;  // in the destination's block with halo
  std::int64_t extent = 0;
};

// The grid position along `axis` holding global index x (never an empty one).
std::size_t position_of(const GridLayout& layout, std::size_t axis, std::size_t x) {
  const auto& sizes = layout.sizes(axis);
  std::size_t begin = 0;
  for (std::size_t p = 0; p < sizes.size(); ++p) {
    if (x < begin + sizes[p]) return p;
    begin += sizes[p];
  }
  return sizes.size() - 1;  // unreachable: x is inside the axis
}

AxisPart axis_part(const GridLayout& layout, const GridBlock& b, std::size_t pos, std::size_t axis, int dir) {
  const auto h = static_cast<std::int64_t>(layout.halo(axis));
  const auto off = static_cast<std::int64_t>(b.offset[axis]);
  const auto n = static_cast<std::int64_t>(b.extent[axis]);
  const auto N = static_cast<std::int64_t>(layout.shape()[axis]);
  AxisPart p;
  if (dir == 0) {
    p.pos = pos;
    p.start = off;
    p.dst_start = h;
    p.extent = n;
    return p;
  }
  p.extent = h;
  p.dst_start = dir < 0 ? 0 : h + n;
  const std::int64_t first = dir < 0 ? off - h : off + n;  // global index of the region's first cell
  if (first >= 0 && first + h <= N) {
    p.pos = position_of(layout, axis, static_cast<std::size_t>(first));
    p.start = first;
    return p;
  }
  const Boundary& side = dir < 0 ? layout.lower(axis) : layout.upper(axis);
  switch (side.kind) {
    case BoundaryKind::open: p.kind = AxisPart::open; break;
    case BoundaryKind::constant:
      p.kind = AxisPart::constant;
      p.value = side.value;
      break;
    case BoundaryKind::periodic:
      p.start = dir < 0 ? N - h : 0;
      p.pos = position_of(layout, axis, static_cast<std::size_t>(p.start));
      break;
    case BoundaryKind::reflect:
      // Ghost j of the region (global -h + j, or N + j) mirrors global h - 1 - j (or N - 1 - j).
      p.start = dir < 0 ? h - 1 : N - 1;
      p.step = -1;
      p.pos = pos;
      break;
  }
  return p;
}

// Every region of the layout's members with points that an exchange writes, in one order on
// every rank: by destination member, then direction.
std::vector<HaloRegion> plan_regions(const GridLayout& layout) {
  const std::size_t n = layout.ndim();
  std::vector<HaloRegion> out;
  std::size_t directions = 1;
  for (std::size_t a = 0; a < n; ++a) directions *= 3;
  for (std::size_t m = 0; m < layout.members(); ++m) {
    const GridBlock b = layout.block(m);
    if (b.empty()) continue;
    const auto coords = layout.coords(m);
    for (std::size_t code = 0; code < directions; ++code) {
      std::array<int, 3> dir{0, 0, 0};
      std::size_t c = code, nonzero = 0;
      bool skip = false;
      for (std::size_t a = 0; a < n; ++a, c /= 3) {
        dir[a] = static_cast<int>(c % 3) - 1;
        if (dir[a] != 0) ++nonzero;
        if (dir[a] != 0 && layout.halo(a) == 0) skip = true;
      }
      if (nonzero == 0 || skip || (layout.stencil() == Stencil::star && nonzero > 1)) continue;
      HaloRegion r;
      r.dst = m;
      r.extent[3] = static_cast<std::int64_t>(layout.components());
      std::vector<std::size_t> src_coords(n);
      bool open = false;
      for (std::size_t a = 0; a < n; ++a) {
        const AxisPart p = axis_part(layout, b, coords[a], a, dir[a]);
        const std::size_t k = detail::grid::slot(n, a);
        r.extent[k] = p.extent;
        r.dst_start[k] = p.dst_start;
        open = open || p.kind == AxisPart::open;
        if (p.kind == AxisPart::constant && !r.constant) r.constant = p.value;
        src_coords[a] = p.pos;
        r.src_start[k] = p.start;  // global for now
        r.src_step[k] = p.step;
      }
      if (open) continue;
      if (!r.constant) {
        r.src = layout.member_at(src_coords);
        const GridBlock s = layout.block(r.src);
        for (std::size_t a = 0; a < n; ++a) {
          const std::size_t k = detail::grid::slot(n, a);
          r.src_start[k] += static_cast<std::int64_t>(layout.halo(a)) - static_cast<std::int64_t>(s.offset[a]);
        }
      }
      out.push_back(r);
    }
  }
  return out;
}

std::int64_t cells(const Int4& e) { return e[0] * e[1] * e[2] * e[3]; }

std::int64_t dot(const Int4& a, const Int4& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]; }

constexpr std::size_t kAlign = 16;

std::size_t aligned(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// A constant in a dtype's bytes (complex: the real part).
std::vector<std::byte> constant_bytes(double v, Dtype dtype) {
  std::vector<std::byte> out(itemsize(dtype));
  auto put = [&](auto x) { std::memcpy(out.data(), &x, sizeof x); };
  switch (dtype) {
    case Dtype::int8: put(static_cast<std::int8_t>(v)); break;
    case Dtype::int16: put(static_cast<std::int16_t>(v)); break;
    case Dtype::int32: put(static_cast<std::int32_t>(v)); break;
    case Dtype::int64: put(static_cast<std::int64_t>(v)); break;
    case Dtype::uint8: put(static_cast<std::uint8_t>(v)); break;
    case Dtype::uint16: put(static_cast<std::uint16_t>(v)); break;
    case Dtype::uint32: put(static_cast<std::uint32_t>(v)); break;
    case Dtype::uint64: put(static_cast<std::uint64_t>(v)); break;
    case Dtype::float16: put(float16(static_cast<float>(v))); break;
    case Dtype::bfloat16: put(bfloat16(static_cast<float>(v))); break;
    case Dtype::float32: put(static_cast<float>(v)); break;
    case Dtype::float64: put(v); break;
    case Dtype::complex64: put(std::complex<float>(static_cast<float>(v), 0)); break;
    case Dtype::complex128: put(std::complex<double>(v, 0)); break;
  }
  return out;
}

void check_arrays(const Queue& queue, std::span<const GridArray> arrays) {
  const char* call = "exchange_halos";
  const GridArray& first = arrays[0];
  for (std::size_t i = 1; i < arrays.size(); ++i) {
    if (!(arrays[i].layout() == first.layout()) || arrays[i].communicator() != first.communicator()) {
      detail::raise_in(SKEIN_HERE, call,
                       "Exchange arrays of one layout and one communicator together (or call once "
                       "per layout).",
                       "array {} has {}layout {}; array 0 has {}", i,
                       arrays[i].communicator() != first.communicator() ? "another communicator and " : "",
                       arrays[i].layout().describe(), first.layout().describe());
    }
  }
  if (!(queue.context() == first.queue().context())) {
    detail::raise_in(SKEIN_HERE, call, "Give a queue of the arrays' context.",
                     "the queue is of another context than the arrays (rank {})", first.rank());
  }
  for (const auto& b : first.blocks()) {
    if (!queue.has_device(b.device_idx)) {
      detail::raise_in(SKEIN_HERE, call, "Give a queue with every device of the arrays' queue.",
                       "the queue has no device {}, where local block {} lives (rank {})", b.device_idx,
                       b.local_device, first.rank());
    }
  }
}

// The regions from one source member to one destination, and their message.
struct Message {
  std::vector<const HaloRegion*> regions;
  std::size_t bytes = 0;
  std::optional<Array> packed;  // at the source, when it is local
  std::optional<Array> data;    // at the destination, when it is local
};

// The size of one (array, region) segment of a message; segments go array-major.
std::size_t segment_bytes(const HaloRegion& r, Dtype dtype) {
  return aligned(static_cast<std::size_t>(cells(r.extent)) * itemsize(dtype));
}

// One exchange_halos call on this rank.
class HaloExchange {
 public:
  HaloExchange(const Queue& queue, std::span<const GridArray> arrays)
      : queue_(queue), arrays_(arrays), layout_(arrays[0].layout()), copy_(queue),
        comm_(arrays[0].communicator()),
        first_(layout_.first_member_of_rank(arrays[0].rank())), local_(arrays[0].local_size()) {}

  void run() {
    regions_ = plan_regions(layout_);
    for (const HaloRegion& r : regions_) {
      if (r.constant) {
        if (is_local(r.dst)) fill_constant(r);
      } else if (is_local(r.src) || is_local(r.dst)) {
        Message& msg = messages_[{r.src, r.dst}];
        msg.regions.push_back(&r);
        for (const GridArray& a : arrays_) msg.bytes += segment_bytes(r, a.dtype());
      }
    }
    for (auto& [key, msg] : messages_) {
      if (is_local(key.first)) pack(key.first, key.second, msg);
    }
    transfer_between_ranks();
    for (const auto& [key, msg] : messages_) {
      if (is_local(key.second)) unpack(key.second, msg);
    }
  }

 private:
  bool is_local(std::size_t m) const { return m >= first_ && m < first_ + local_; }
  const LocalGridBlock& block_of(const GridArray& a, std::size_t m) const { return a.blocks()[m - first_]; }
  std::size_t device_of(std::size_t m) const { return block_of(arrays_[0], m).device_idx; }

  // Calls f(array, region, byte offset) for each segment of a message, in its order.
  template <class F>
  void for_each_segment(const Message& msg, F&& f) const {
    std::size_t offset = 0;
    for (const GridArray& a : arrays_) {
      for (const HaloRegion* r : msg.regions) {
        f(a, *r, offset);
        offset += segment_bytes(*r, a.dtype());
      }
    }
  }

  // In place, from a one-element array (a source stride of 0).
  void fill_constant(const HaloRegion& r) const {
    const Int4 strides = detail::grid::block_strides(layout_, r.dst);
    for (const GridArray& a : arrays_) {
      const LocalGridBlock& b = block_of(a, r.dst);
      const Array value = Array::empty(queue_, {1}, a.dtype(), b.device_idx, temporaries(queue_));
      value.set(constant_bytes(*r.constant, a.dtype()));
      copy_(itemsize(a.dtype()), {b.with_halo, dot(r.dst_start, strides), strides}, {value, 0, {0, 0, 0, 0}},
            r.extent);
    }
  }

  // At a local source: every segment into one buffer; to a local destination by a device copy
  // (none on the same device).
  void pack(std::size_t src, std::size_t dst, Message& msg) const {
    const Array buffer = Array::empty(queue_, {msg.bytes}, Dtype::uint8, device_of(src), temporaries(queue_));
    const Int4 strides = detail::grid::block_strides(layout_, src);
    for_each_segment(msg, [&](const GridArray& a, const HaloRegion& r, std::size_t offset) {
      const std::size_t unit = itemsize(a.dtype());
      Int4 steps{};
      for (std::size_t k = 0; k < 4; ++k) steps[k] = strides[k] * r.src_step[k];
      copy_(unit, {buffer, static_cast<std::int64_t>(offset / unit), detail::grid::contiguous(r.extent)},
            {block_of(a, src).with_halo, dot(r.src_start, strides), steps}, r.extent);
    });
    msg.packed = buffer;
    if (!is_local(dst)) return;
    if (device_of(dst) == buffer.device_idx()) {
      msg.data = buffer;
    } else {
      msg.data = Array::empty(queue_, {msg.bytes}, Dtype::uint8, device_of(dst), temporaries(queue_));
      msg.data->set(buffer);
    }
  }

  // Between ranks: one send and one recv per pair of members, all in one group.
  void transfer_between_ranks() {
    bool remote = false;
    for (const auto& [key, msg] : messages_) remote = remote || !is_local(key.first) || !is_local(key.second);
    if (!remote) return;
    in_group(comm_, [&] {
      for (auto& [key, msg] : messages_) {
        const auto [src, dst] = key;
        if (is_local(src) && !is_local(dst)) {
          comm_.send(queue_, src - first_, *msg.packed, static_cast<int>(dst));
        } else if (!is_local(src) && is_local(dst)) {
          msg.data = Array::empty(queue_, {msg.bytes}, Dtype::uint8, device_of(dst), temporaries(queue_));
          comm_.recv(queue_, dst - first_, *msg.data, static_cast<int>(src));
        }
      }
    });
    // A receive the watchdog aborted leaves the buffers unwritten: raise rather than unpack them.
    detail::require_usable(comm_, "exchange_halos");
  }

  void unpack(std::size_t dst, const Message& msg) const {
    const Int4 strides = detail::grid::block_strides(layout_, dst);
    for_each_segment(msg, [&](const GridArray& a, const HaloRegion& r, std::size_t offset) {
      const std::size_t unit = itemsize(a.dtype());
      copy_(unit, {block_of(a, dst).with_halo, dot(r.dst_start, strides), strides},
            {*msg.data, static_cast<std::int64_t>(offset / unit), detail::grid::contiguous(r.extent)}, r.extent);
    });
  }

  const Queue& queue_;
  std::span<const GridArray> arrays_;
  const GridLayout& layout_;
  detail::grid::BoxCopier copy_;
  Communicator& comm_;
  std::size_t first_ = 0;  // this rank's first member
  std::size_t local_ = 0;  // and its number of members
  std::vector<HaloRegion> regions_;
  std::map<std::pair<std::size_t, std::size_t>, Message> messages_;  // by (source, destination)
};

}  // namespace

void exchange_halos(std::span<const GridArray> arrays) {
  if (arrays.empty()) return;
  exchange_halos(arrays[0].queue(), arrays);
}

void exchange_halos(const Queue& queue, std::span<const GridArray> arrays) {
  if (arrays.empty()) return;
  check_arrays(queue, arrays);
  HaloExchange(queue, arrays).run();
}

}  // namespace skein

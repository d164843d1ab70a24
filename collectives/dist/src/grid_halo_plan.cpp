// SPDX-License-Identifier: BSD-3-Clause
// The plan of a halo exchange and this rank's routine for it (grid_halo_plan.hpp).
#include "grid_halo_plan.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <complex>
#include <cstring>
#include <map>
#include <tuple>
#include <utility>

#include "dist_transport.hpp"
#include "skein/buffer.hpp"
#include "skein/detail/errors.hpp"
#include "skein/error.hpp"

namespace skein::detail::grid {

namespace {

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

AxisPart axis_part(const GridLayout& layout, const GridBlock& b, std::size_t pos, std::size_t axis,
                   int dir) {
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
  const std::int64_t first =
      dir < 0 ? off - h : off + n;  // global index of the region's first cell
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

}  // namespace

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
      r.dir = dir;
      r.extent[3] = static_cast<std::int64_t>(layout.components());
      std::vector<std::size_t> src_coords(n);
      bool open = false;
      for (std::size_t a = 0; a < n; ++a) {
        const AxisPart p = axis_part(layout, b, coords[a], a, dir[a]);
        const std::size_t k = slot(n, a);
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
          const std::size_t k = slot(n, a);
          r.src_start[k] +=
              static_cast<std::int64_t>(layout.halo(a)) - static_cast<std::int64_t>(s.offset[a]);
        }
      }
      out.push_back(r);
    }
  }
  return out;
}

bool whole_planes(const GridLayout& layout, const HaloRegion& r) {
  const std::size_t n = layout.ndim();
  if (r.constant || r.src == r.dst || r.dir[0] == 0) return false;
  bool other_halos = false;
  for (std::size_t a = 1; a < n; ++a) {
    if (r.dir[a] != 0) return false;
    other_halos = other_halos || layout.halo(a) > 0;
  }
  for (const auto step : r.src_step) {
    if (step != 1) return false;
  }
  return layout.stencil() == Stencil::star || !other_halos;
}

PlaneRange plane_range(const GridLayout& layout, const HaloRegion& r) {
  const Shape dst = layout.block_shape(r.dst, true), src = layout.block_shape(r.src, true);
  if (dst.size() != src.size() || !std::equal(dst.begin() + 1, dst.end(), src.begin() + 1)) {
    detail::raise_in(
        SKEIN_HERE, "exchange_halos", "Report this: it is a bug in Skein's halo exchange.",
        "members {} and {}, neighbours along axis 0, have blocks of other shapes along the "
        "other axes ({} and {})",
        r.dst, r.src, fmt::format("{}", fmt::join(dst, "x")),
        fmt::format("{}", fmt::join(src, "x")));
  }
  std::size_t plane = 1;  // elements of one plane along axis 0, components included
  for (std::size_t a = 1; a < dst.size(); ++a) plane *= dst[a];
  const std::size_t k = slot(layout.ndim(), 0);
  return PlaneRange{static_cast<std::size_t>(r.dst_start[k]) * plane,
                    static_cast<std::size_t>(r.src_start[k]) * plane,
                    static_cast<std::size_t>(r.extent[k]) * plane};
}

namespace {

std::int64_t cells(const Int4& e) { return e[0] * e[1] * e[2] * e[3]; }

std::int64_t dot(const Int4& a, const Int4& b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
}

constexpr std::size_t kAlign = 16;

std::size_t aligned(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// A constant in a dtype's bytes (complex: the real part).
std::vector<std::byte> constant_bytes(double v, Dtype dtype) {
  if (is_record(dtype)) detail::raise_record_dtype(dtype, "skein::dist grid boundary constant");
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

// The copies of one phase of a routine, grouped into launches per device of at most kBatchSlots
// arrays each (in the order they were added, a new launch when one is full).
class BatchBuilder {
 public:
  explicit BatchBuilder(const Queue& queue) : queue_(queue) {}

  void add(std::size_t device, const SlotSource& dst, const SlotSource& src, BatchCopy copy) {
    Open& open = open_[device];
    std::size_t need = (find(open, dst) ? 0 : 1) + (find(open, src) || same(dst, src) ? 0 : 1);
    if (open.slots.size() + need > kBatchSlots) flush(device, open);
    copy.dst_slot = slot(open, dst);
    copy.src_slot = slot(open, src);
    open.copies.push_back(copy);
  }

  std::vector<PlannedBatch> finish() {
    for (auto& [device, open] : open_) flush(device, open);
    return std::move(done_);
  }

 private:
  struct Open {
    std::vector<SlotSource> slots;
    std::vector<BatchCopy> copies;
  };

  static bool same(const SlotSource& a, const SlotSource& b) {
    if (a.is_block != b.is_block) return false;
    if (a.is_block) return a.array == b.array && a.local == b.local;
    return a.fixed->data().adapter() == b.fixed->data().adapter() &&
           a.fixed->offset() == b.fixed->offset() &&
           a.fixed->data().offset() == b.fixed->data().offset();
  }
  static std::optional<std::size_t> find(const Open& open, const SlotSource& s) {
    for (std::size_t i = 0; i < open.slots.size(); ++i) {
      if (same(open.slots[i], s)) return i;
    }
    return std::nullopt;
  }
  static std::size_t slot(Open& open, const SlotSource& s) {
    if (auto i = find(open, s)) return *i;
    open.slots.push_back(s);
    return open.slots.size() - 1;
  }
  void flush(std::size_t device, Open& open) {
    if (!open.copies.empty()) {
      done_.push_back(PlannedBatch{BoxBatch(queue_, device, open.copies), std::move(open.slots)});
    }
    open = Open{};
  }

  const Queue& queue_;
  std::map<std::size_t, Open> open_;
  std::vector<PlannedBatch> done_;
};

SlotSource block_slot(std::size_t array, std::size_t local) {
  return SlotSource{true, array, local, {}};
}
SlotSource fixed_slot(const Array& a) { return SlotSource{false, 0, 0, a}; }

// Staging and constants: plain allocations held by the routine, used on its queue only.
Array routine_buffer(const Queue& queue, std::size_t device, std::size_t bytes) {
  return Array::empty(queue, {bytes}, Dtype::uint8, device,
                      [context = queue.context()](std::size_t d, std::size_t n) {
                        return Buffer::allocate(context, d, n);
                      });
}

// The constants of the regions filled with one, per device: one buffer per device holding each
// (array, value) once, 16-byte aligned. Keyed by (device, array, the value's bits): byte offset.
struct Constants {
  std::map<std::size_t, Array> buffers;
  std::map<std::tuple<std::size_t, std::size_t, std::uint64_t>, std::size_t> offsets;
};

Constants make_constants(const Queue& queue, const std::vector<HaloRegion>& regions,
                         std::span<const Dtype> dtypes, std::size_t first,
                         std::span<const std::size_t> devices) {
  Constants c;
  std::map<std::size_t, std::vector<std::byte>> bytes;
  for (const HaloRegion& r : regions) {
    if (!r.constant || r.dst < first || r.dst >= first + devices.size()) continue;
    const std::size_t device = devices[r.dst - first];
    for (std::size_t k = 0; k < dtypes.size(); ++k) {
      const auto key = std::tuple{device, k, std::bit_cast<std::uint64_t>(*r.constant)};
      if (c.offsets.contains(key)) continue;
      auto& data = bytes[device];
      c.offsets[key] = data.size();
      const auto value = constant_bytes(*r.constant, dtypes[k]);
      data.insert(data.end(), value.begin(), value.end());
      data.resize(aligned(data.size()));
    }
  }
  for (const auto& [device, data] : bytes) {
    Array a = routine_buffer(queue, device, data.size());
    a.set(std::span<const std::byte>(data));
    c.buffers.emplace(device, a);
  }
  return c;
}

// This rank's members: first.. on devices[local].
struct Where {
  std::size_t first = 0;
  std::span<const std::size_t> devices;
  CollectiveBackend backend = CollectiveBackend::mpi;  // the communicator's
  bool on_arrays_queue = true;                         // the exchange runs on the arrays' queue
  bool is_local(std::size_t m) const { return m >= first && m < first + devices.size(); }
  std::size_t device_of(std::size_t m) const { return devices[m - first]; }
};

// A message from this rank's member `src` to its member `dst` (on another device): a device copy,
// or a send and its recv next to each other in the exchange's group (send_recv_inside_rank in
// dist_transport.hpp: NCCL, small messages), so that the sends from src to dst and the recvs at dst
// from src are issued in one order, the messages'.
void add_inside_rank(const Where& at, std::size_t src, std::size_t dst, const TransferData& from,
                     const TransferData& to, HaloRoutine& out) {
  if (transport::send_recv_inside_rank(at.backend, from.bytes, at.on_arrays_queue)) {
    out.transfers.push_back({src - at.first, from, static_cast<int>(dst), true});
    out.transfers.push_back({dst - at.first, to, static_cast<int>(src), false});
  } else {
    out.device_copies.push_back({from, to});
  }
}

using MessageMap = std::map<std::pair<std::size_t, std::size_t>, std::vector<const HaloRegion*>>;

constexpr std::size_t kMessageAlign = 256;  // where each message starts in its device's staging

// The messages between devices: every message that leaves a device is packed into that device's
// one outgoing staging buffer, every one that arrives is received into its one incoming buffer (a
// message at a time, each at its own offset), so that one launch packs (or unpacks) all of a
// device's messages for up to kBatchSlots - 1 arrays whatever the number of neighbours.
void add_messages(const Queue& queue, const GridLayout& layout, std::span<const Dtype> dtypes,
                  const MessageMap& messages, const Where& at, BatchBuilder& packs,
                  BatchBuilder& unpacks, HaloRoutine& out) {
  std::map<std::pair<std::size_t, std::size_t>, std::size_t> bytes_of, out_at, in_at;
  std::map<std::size_t, std::size_t> out_bytes, in_bytes;  // per device
  for (const auto& [key, message] : messages) {
    std::size_t bytes = 0;
    for (const Dtype dtype : dtypes) {
      for (const HaloRegion* r : message)
        bytes += aligned(static_cast<std::size_t>(cells(r->extent)) * itemsize(dtype));
    }
    bytes_of[key] = bytes;
    auto place = [&](std::size_t& used) {
      const std::size_t where = used;
      used = (used + bytes + kMessageAlign - 1) / kMessageAlign * kMessageAlign;
      return where;
    };
    if (at.is_local(key.first)) out_at[key] = place(out_bytes[at.device_of(key.first)]);
    if (at.is_local(key.second)) in_at[key] = place(in_bytes[at.device_of(key.second)]);
  }
  std::map<std::size_t, Array> outgoing, incoming;
  for (const auto& [device, bytes] : out_bytes)
    outgoing.emplace(device, routine_buffer(queue, device, bytes));
  for (const auto& [device, bytes] : in_bytes)
    incoming.emplace(device, routine_buffer(queue, device, bytes));
  auto view = [&](const Array& arena, std::size_t offset, std::size_t bytes) {
    return Array(queue, arena.data().get_sub_region(arena.offset() + offset, bytes), {bytes},
                 Dtype::uint8);
  };
  for (const auto& [key, message] : messages) {
    const auto [src, dst] = key;
    const bool from_here = at.is_local(src), to_here = at.is_local(dst);
    std::size_t offset = 0;
    for (std::size_t k = 0; k < dtypes.size(); ++k) {
      const std::size_t unit = itemsize(dtypes[k]);
      for (const HaloRegion* r : message) {
        if (from_here) {
          const Int4 strides = block_strides(layout, src);
          Int4 steps{};
          for (std::size_t a = 0; a < 4; ++a) steps[a] = strides[a] * r->src_step[a];
          packs.add(at.device_of(src), fixed_slot(outgoing.at(at.device_of(src))),
                    block_slot(k, src - at.first),
                    {.unit = unit,
                     .dst_offset = static_cast<std::int64_t>((out_at.at(key) + offset) / unit),
                     .src_offset = dot(r->src_start, strides),
                     .dst_strides = contiguous(r->extent),
                     .src_strides = steps,
                     .extent = r->extent});
        }
        if (to_here) {
          const Int4 strides = block_strides(layout, dst);
          unpacks.add(at.device_of(dst), block_slot(k, dst - at.first),
                      fixed_slot(incoming.at(at.device_of(dst))),
                      {.unit = unit,
                       .dst_offset = dot(r->dst_start, strides),
                       .src_offset = static_cast<std::int64_t>((in_at.at(key) + offset) / unit),
                       .dst_strides = strides,
                       .src_strides = contiguous(r->extent),
                       .extent = r->extent});
        }
        offset += aligned(static_cast<std::size_t>(cells(r->extent)) * unit);
      }
    }
    const std::size_t bytes = bytes_of.at(key);
    auto staged = [&](const Array& arena, std::size_t offset) {
      return TransferData{.staging = view(arena, offset, bytes), .bytes = bytes};
    };
    if (from_here && to_here) {
      add_inside_rank(at, src, dst, staged(outgoing.at(at.device_of(src)), out_at.at(key)),
                      staged(incoming.at(at.device_of(dst)), in_at.at(key)), out);
    } else if (from_here) {
      out.transfers.push_back({src - at.first,
                               staged(outgoing.at(at.device_of(src)), out_at.at(key)),
                               static_cast<int>(dst), true});
    } else {
      out.transfers.push_back({dst - at.first,
                               staged(incoming.at(at.device_of(dst)), in_at.at(key)),
                               static_cast<int>(src), false});
    }
  }
}

// A face that moves as whole planes (whole_planes()): one device copy or one transfer per array,
// straight between the blocks, after the staged messages (so that the two sides of a pair issue
// their transfers in one order: the staged message, then the planes in the regions' order).
void add_planes(const GridLayout& layout, std::span<const Dtype> dtypes, const HaloRegion& r,
                const Where& at, HaloRoutine& out) {
  const PlaneRange range = plane_range(layout, r);
  const bool from_here = at.is_local(r.src), to_here = at.is_local(r.dst);
  for (std::size_t k = 0; k < dtypes.size(); ++k) {
    const std::size_t unit = itemsize(dtypes[k]);
    // `local` only means something on the side that is this rank's (the other is not used).
    const TransferData from{.array = k,
                            .local = from_here ? r.src - at.first : 0,
                            .offset = range.src_offset * unit,
                            .bytes = range.count * unit};
    const TransferData to{.array = k,
                          .local = to_here ? r.dst - at.first : 0,
                          .offset = range.dst_offset * unit,
                          .bytes = range.count * unit};
    if (from_here && to_here) {
      add_inside_rank(at, r.src, r.dst, from, to, out);
    } else if (from_here) {
      out.transfers.push_back({from.local, from, static_cast<int>(r.dst), true});
    } else {
      out.transfers.push_back({to.local, to, static_cast<int>(r.src), false});
    }
  }
  ++out.plane_faces;
}

}  // namespace

HaloRoutine make_halo_routine(const Queue& queue, const GridLayout& layout,
                              std::span<const Dtype> dtypes, std::size_t first,
                              std::span<const std::size_t> devices, CollectiveBackend backend,
                              bool on_arrays_queue) {
  const auto regions = plan_regions(layout);
  auto is_local = [&](std::size_t m) { return m >= first && m < first + devices.size(); };
  auto device_of = [&](std::size_t m) { return devices[m - first]; };
  const Constants constants = make_constants(queue, regions, dtypes, first, devices);
  BatchBuilder packs(queue), direct(queue), unpacks(queue);
  MessageMap messages;  // (src, dst)
  std::vector<const HaloRegion*> planes;
  for (const HaloRegion& r : regions) {
    if (r.constant) {
      if (!is_local(r.dst)) continue;
      const std::size_t device = device_of(r.dst);
      const Int4 strides = block_strides(layout, r.dst);
      for (std::size_t k = 0; k < dtypes.size(); ++k) {
        const std::size_t unit = itemsize(dtypes[k]);
        const std::size_t at =
            constants.offsets.at({device, k, std::bit_cast<std::uint64_t>(*r.constant)});
        direct.add(device, block_slot(k, r.dst - first), fixed_slot(constants.buffers.at(device)),
                   {.unit = unit,
                    .dst_offset = dot(r.dst_start, strides),
                    .src_offset = static_cast<std::int64_t>(at / unit),
                    .dst_strides = strides,
                    .src_strides = {0, 0, 0, 0},
                    .extent = r.extent});
      }
    } else if (is_local(r.src) && is_local(r.dst) && device_of(r.src) == device_of(r.dst)) {
      // Same device: from the points to the ghost cells, nothing staged.
      const Int4 dst_strides = block_strides(layout, r.dst),
                 src_strides = block_strides(layout, r.src);
      Int4 steps{};
      for (std::size_t a = 0; a < 4; ++a) steps[a] = src_strides[a] * r.src_step[a];
      for (std::size_t k = 0; k < dtypes.size(); ++k) {
        direct.add(device_of(r.dst), block_slot(k, r.dst - first), block_slot(k, r.src - first),
                   {.unit = itemsize(dtypes[k]),
                    .dst_offset = dot(r.dst_start, dst_strides),
                    .src_offset = dot(r.src_start, src_strides),
                    .dst_strides = dst_strides,
                    .src_strides = steps,
                    .extent = r.extent});
      }
    } else if ((is_local(r.src) || is_local(r.dst)) && whole_planes(layout, r)) {
      planes.push_back(&r);
    } else if (is_local(r.src) || is_local(r.dst)) {
      messages[{r.src, r.dst}].push_back(&r);
    }
  }
  HaloRoutine out;
  const Where at{first, devices, backend, on_arrays_queue};
  add_messages(queue, layout, dtypes, messages, at, packs, unpacks, out);
  for (const HaloRegion* r : planes) add_planes(layout, dtypes, *r, at, out);
  out.messages = messages.size();
  out.packs = packs.finish();
  out.direct = direct.finish();
  out.unpacks = unpacks.finish();
  return out;
}

}  // namespace skein::detail::grid

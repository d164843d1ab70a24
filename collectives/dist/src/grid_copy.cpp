// SPDX-License-Identifier: BSD-3-Clause
// The box copy kernel (grid_copy.hpp).
#include "grid_copy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "skein/detail/errors.hpp"
#include "skein/error.hpp"
#include "skein/grid_layout.hpp"
#include "skein/program.hpp"

namespace skein::detail::grid {

namespace {

// One kernel per element size. A grid-stride loop over the box's elements in C order: any number
// of work items covers any box.
constexpr const char* kCopyBoxSource = R"(
typedef struct { uint64_t lo, hi; } skein_grid_u128;
#define SKEIN_GRID_COPY_BOX(NAME, T)                                                          \
KERNEL void NAME(GLOBAL_MEM T* dst, GLOBAL_MEM const T* src,                                  \
                 int64_t d_off, int64_t d0, int64_t d1, int64_t d2, int64_t d3,                \
                 int64_t s_off, int64_t s0, int64_t s1, int64_t s2, int64_t s3,                \
                 int64_t n0, int64_t n1, int64_t n2, int64_t n3)                               \
{                                                                                             \
    const int64_t total = n0 * n1 * n2 * n3;                                                  \
    for (int64_t i = (int64_t)get_global_id(0); i < total; i += (int64_t)get_global_size(0)) { \
        int64_t t = i;                                                                        \
        const int64_t i3 = t % n3; t /= n3;                                                   \
        const int64_t i2 = t % n2; t /= n2;                                                   \
        const int64_t i1 = t % n1;                                                            \
        const int64_t i0 = t / n1;                                                            \
        dst[d_off + i0 * d0 + i1 * d1 + i2 * d2 + i3 * d3] =                                  \
            src[s_off + i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3];                               \
    }                                                                                         \
}
SKEIN_GRID_COPY_BOX(skein_grid_copy_box_1, uint8_t)
SKEIN_GRID_COPY_BOX(skein_grid_copy_box_2, uint16_t)
SKEIN_GRID_COPY_BOX(skein_grid_copy_box_4, uint32_t)
SKEIN_GRID_COPY_BOX(skein_grid_copy_box_8, uint64_t)
SKEIN_GRID_COPY_BOX(skein_grid_copy_box_16, skein_grid_u128)

/* The batched copy: work-group row y (get_global_id(1)) makes copy y of the table, a grid-stride
   loop over its elements; 32-bit index arithmetic where the box has fewer than 2^31 elements
   (64-bit division is several times slower on GPUs, and the loop would be bound by it). A table
   row: dst offset, 4 dst strides, src offset, 4 src strides, n1, n2, n3, total, then
   unit | dst slot << 8 | src slot << 16, and one unused value. */
#define SKEIN_GRID_SLOT(k) ((k) == 0 ? p0 : (k) == 1 ? p1 : (k) == 2 ? p2 : (k) == 3 ? p3 \
                          : (k) == 4 ? p4 : (k) == 5 ? p5 : (k) == 6 ? p6 : p7)
#define SKEIN_GRID_BATCH_LOOP(IT, T)                                                            \
    for (IT i = (IT)get_global_id(0); i < (IT)total; i += (IT)get_global_size(0)) {            \
        IT t = i;                                                                                \
        const IT i3 = t % (IT)n3; t /= (IT)n3;                                                   \
        const IT i2 = t % (IT)n2; t /= (IT)n2;                                                   \
        const IT i1 = t % (IT)n1;                                                                \
        const IT i0 = t / (IT)n1;                                                                \
        ((GLOBAL_MEM T*)dst)[d_off + (int64_t)i0 * d0 + (int64_t)i1 * d1 + (int64_t)i2 * d2      \
                             + (int64_t)i3 * d3] =                                               \
            ((GLOBAL_MEM const T*)src)[s_off + (int64_t)i0 * s0 + (int64_t)i1 * s1              \
                                       + (int64_t)i2 * s2 + (int64_t)i3 * s3];                   \
    }
#define SKEIN_GRID_BATCH_UNIT(T)                                                                 \
    if (total <= 2147483647) { SKEIN_GRID_BATCH_LOOP(uint32_t, T) }                             \
    else { SKEIN_GRID_BATCH_LOOP(int64_t, T) }
KERNEL void skein_grid_copy_boxes(GLOBAL_MEM const int64_t* table, int count,
                                  GLOBAL_MEM uint8_t* p0, GLOBAL_MEM uint8_t* p1,
                                  GLOBAL_MEM uint8_t* p2, GLOBAL_MEM uint8_t* p3,
                                  GLOBAL_MEM uint8_t* p4, GLOBAL_MEM uint8_t* p5,
                                  GLOBAL_MEM uint8_t* p6, GLOBAL_MEM uint8_t* p7)
{
    const int c = (int)get_global_id(1);
    if (c >= count) return;
    GLOBAL_MEM const int64_t* r = table + 16 * c;
    const int64_t d_off = r[0], d0 = r[1], d1 = r[2], d2 = r[3], d3 = r[4];
    const int64_t s_off = r[5], s0 = r[6], s1 = r[7], s2 = r[8], s3 = r[9];
    const int64_t n1 = r[10], n2 = r[11], n3 = r[12], total = r[13];
    const int unit = (int)(r[14] & 255), dk = (int)((r[14] >> 8) & 255), sk = (int)((r[14] >> 16) & 255);
    GLOBAL_MEM uint8_t* dst = SKEIN_GRID_SLOT(dk);
    GLOBAL_MEM uint8_t* src = SKEIN_GRID_SLOT(sk);
    if (unit == 8) {
        SKEIN_GRID_BATCH_UNIT(uint64_t)
    } else if (unit == 4) {
        SKEIN_GRID_BATCH_UNIT(uint32_t)
    } else if (unit == 2) {
        SKEIN_GRID_BATCH_UNIT(uint16_t)
    } else if (unit == 1) {
        SKEIN_GRID_BATCH_UNIT(uint8_t)
    } else {
        SKEIN_GRID_BATCH_UNIT(skein_grid_u128)
    }
}
)";

constexpr std::size_t kTableRow = 16;  // int64 values per copy in a batch's table

constexpr std::size_t kLocal = 128;
constexpr std::size_t kMaxGroups = 4096;

}  // namespace

std::array<std::int64_t, 4> contiguous(const std::array<std::int64_t, 4>& extent) {
  std::array<std::int64_t, 4> s{};
  std::int64_t step = 1;
  for (std::size_t a = 4; a-- > 0;) {
    s[a] = step;
    step *= extent[a];
  }
  return s;
}

BoxCopier::BoxCopier(const Queue& queue)
    // Programs are kept by the context: one compilation per context and device.
    : queue_(queue), program_(queue.context(), kCopyBoxSource, {.name = "skein_grid_copy_box"}) {
  for (std::size_t unit : {1u, 2u, 4u, 8u, 16u}) {
    kernels_.emplace(unit, program_.kernel(fmt::format("skein_grid_copy_box_{}", unit)));
  }
}

void BoxCopier::operator()(std::size_t unit, const BoxView& dst, const BoxView& src,
                           const std::array<std::int64_t, 4>& extent) const {
  std::int64_t total = 1;
  for (auto e : extent) total *= e;
  if (total == 0) return;
  const auto kernel = kernels_.find(unit);
  if (kernel == kernels_.end()) {
    detail::raise_in(SKEIN_HERE, "GridArray", "Use a dtype of 1, 2, 4, 8 or 16 bytes.",
                     "no box copy for elements of {} bytes", unit);
  }
  const auto groups =
      std::min<std::size_t>((static_cast<std::size_t>(total) + kLocal - 1) / kLocal, kMaxGroups);
  const auto prepared =
      kernel->second.prepare(queue_, LaunchSizes(groups * kLocal), LaunchSizes(kLocal));
  const std::size_t devices[] = {dst.array.device_idx()};
  prepared.on_devices(std::span<const std::size_t>(devices), dst.array, src.array, dst.offset,
                      dst.strides[0], dst.strides[1], dst.strides[2], dst.strides[3], src.offset,
                      src.strides[0], src.strides[1], src.strides[2], src.strides[3], extent[0],
                      extent[1], extent[2], extent[3]);
}

BoxBatch::BoxBatch(const Queue& queue, std::size_t device_idx, std::span<const BatchCopy> copies)
    : device_idx_(device_idx) {
  std::vector<std::int64_t> table;
  std::int64_t largest = 0;
  for (const BatchCopy& c : copies) {
    std::int64_t total = 1;
    for (auto e : c.extent) total *= e;
    if (total == 0) continue;
    if (c.unit != 1 && c.unit != 2 && c.unit != 4 && c.unit != 8 && c.unit != 16) {
      detail::raise_in(SKEIN_HERE, "GridArray", "Use a dtype of 1, 2, 4, 8 or 16 bytes.",
                       "no box copy for elements of {} bytes", c.unit);
    }
    if (c.dst_slot >= kBatchSlots || c.src_slot >= kBatchSlots) {
      detail::raise_in(SKEIN_HERE, "GridArray", "Split the batch (an internal error of Skein's).",
                       "a batched box copy names slot {} of {}", std::max(c.dst_slot, c.src_slot),
                       kBatchSlots);
    }
    const auto& d = c.dst_strides;
    const auto& s = c.src_strides;
    const auto& n = c.extent;
    const std::int64_t packed =
        static_cast<std::int64_t>(c.unit | c.dst_slot << 8 | c.src_slot << 16);
    table.insert(table.end(), {c.dst_offset, d[0], d[1], d[2], d[3], c.src_offset, s[0], s[1], s[2],
                               s[3], n[1], n[2], n[3], total, packed, 0});
    largest = std::max(largest, total);
  }
  count_ = table.size() / kTableRow;
  if (count_ == 0) return;
  table_ = Array::empty(queue, {table.size()}, Dtype::int64, device_idx,
                        [context = queue.context()](std::size_t device, std::size_t nbytes) {
                          return Buffer::allocate(context, device, nbytes);
                        });
  table_->set(std::span<const std::int64_t>(table));
  const Program program(queue.context(), kCopyBoxSource, {.name = "skein_grid_copy_box"});
  const auto groups = std::min<std::size_t>(
      (static_cast<std::size_t>(largest) + kLocal - 1) / kLocal, kMaxGroups / 4);
  launch_ = program.kernel("skein_grid_copy_boxes")
                .prepare(queue, LaunchSizes(WorkSize{groups * kLocal, count_}),
                         LaunchSizes(WorkSize{kLocal, 1}));
}

void BoxBatch::operator()(std::span<const Array> slots) const {
  if (count_ == 0) return;
  if (slots.size() != kBatchSlots) {
    detail::raise_in(
        SKEIN_HERE, "GridArray", "Give every slot an array (an internal error of Skein's).",
        "a batched box copy was given {} arrays for {} slots", slots.size(), kBatchSlots);
  }
  const std::size_t devices[] = {device_idx_};
  launch_->on_devices(std::span<const std::size_t>(devices), *table_,
                      static_cast<std::int32_t>(count_), slots[0], slots[1], slots[2], slots[3],
                      slots[4], slots[5], slots[6], slots[7]);
}

}  // namespace skein::detail::grid

namespace skein::detail::grid {

std::array<std::int64_t, 4> block_strides(const GridLayout& layout, std::size_t member) {
  const Shape s = layout.block_shape(member, true);
  std::array<std::int64_t, 4> extent{1, 1, 1, static_cast<std::int64_t>(layout.components())};
  for (std::size_t a = 0; a < layout.ndim(); ++a) {
    extent[slot(layout.ndim(), a)] = static_cast<std::int64_t>(s[a]);
  }
  return contiguous(extent);
}

std::array<std::int64_t, 4> interior_extent(const GridLayout& layout, std::size_t member) {
  const GridBlock b = layout.block(member);
  std::array<std::int64_t, 4> extent{1, 1, 1, static_cast<std::int64_t>(layout.components())};
  for (std::size_t a = 0; a < layout.ndim(); ++a) {
    extent[slot(layout.ndim(), a)] = static_cast<std::int64_t>(b.extent[a]);
  }
  return extent;
}

BoxView interior_box(const GridLayout& layout, std::size_t member, const Array& with_halo) {
  BoxView v{with_halo, 0, block_strides(layout, member)};
  for (std::size_t a = 0; a < layout.ndim(); ++a) {
    v.offset += static_cast<std::int64_t>(layout.halo(a)) * v.strides[slot(layout.ndim(), a)];
  }
  return v;
}

}  // namespace skein::detail::grid

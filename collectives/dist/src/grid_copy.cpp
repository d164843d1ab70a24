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
)";

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
  const auto groups = std::min<std::size_t>((static_cast<std::size_t>(total) + kLocal - 1) / kLocal, kMaxGroups);
  const auto prepared = kernel->second.prepare(queue_, LaunchSizes(groups * kLocal), LaunchSizes(kLocal));
  const std::size_t devices[] = {dst.array.device_idx()};
  prepared.on_devices(std::span<const std::size_t>(devices), dst.array, src.array, dst.offset,
                      dst.strides[0], dst.strides[1], dst.strides[2], dst.strides[3], src.offset,
                      src.strides[0], src.strides[1], src.strides[2], src.strides[3], extent[0],
                      extent[1], extent[2], extent[3]);
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

// SPDX-License-Identifier: BSD-3-Clause
// Boxes and their pieces, selections, the count of staged bytes, rows as boxes, and the choice
// between the two transfer paths (hdf5_transfer.hpp).
#include "hdf5_transfer.hpp"

#include <cstdint>

#include "skein/detail/hdf5_staging.hpp"

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>

namespace skein {

namespace {
std::atomic<std::uint64_t> staged_bytes{0};
}  // namespace

std::uint64_t detail::hdf5_staged_bytes() { return staged_bytes.load(); }

namespace hdf5 {

namespace internal {

void count_staged(std::size_t bytes) { staged_bytes += bytes; }

std::size_t rows_of(const Shape& shape) { return shape.empty() ? 1 : shape[0]; }

std::size_t row_elements(const Shape& shape) {
  std::size_t n = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

std::vector<Piece> pieces_of(const std::vector<Box>& boxes, Dtype dtype, std::size_t max_bytes) {
  std::vector<Piece> pieces;
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    const Box& box = boxes[i];
    if (box.extent.empty()) {
      pieces.push_back({i, box});
      continue;
    }
    if (box.elements() == 0) continue;
    const std::size_t plane_bytes = box.elements() / box.extent[0] * itemsize(dtype);
    const std::size_t per_piece = std::max<std::size_t>(1, max_bytes / plane_bytes);
    for (std::size_t begin = 0; begin < box.extent[0]; begin += per_piece) {
      Piece piece{i, box};
      piece.part.offset[0] = box.offset[0] + begin;
      piece.part.extent[0] = std::min(per_piece, box.extent[0] - begin);
      pieces.push_back(std::move(piece));
    }
  }
  return pieces;
}

std::size_t rounds_of(const File::Impl::BoxPlan& plan, std::size_t max_bytes) {
  if (shape_size(plan.shape) == 0) return 0;
  std::size_t rounds = 0;
  for (const auto& boxes : plan.rank_boxes)
    rounds = std::max(rounds, pieces_of(boxes, plan.dtype, max_bytes).size());
  return rounds;
}

Box rows_box(const Shape& shape, RowRange rows) {
  Box box;
  if (shape.empty()) return box;
  box.offset.assign(shape.size(), 0);
  box.extent.assign(shape.begin(), shape.end());
  box.offset[0] = rows.begin;
  box.extent[0] = rows.size();
  return box;
}

RowRange box_rows(const Box& box) {
  if (box.extent.empty()) return {0, 1};
  return {box.offset[0], box.offset[0] + box.extent[0]};
}

std::string describe_box(const Box& box, const Shape& shape) {
  if (box.extent.empty()) return "the element";
  bool whole_rows = true;
  for (std::size_t a = 1; a < box.extent.size(); ++a) {
    whole_rows = whole_rows && box.offset[a] == 0 && box.extent[a] == shape[a];
  }
  if (whole_rows) return fmt::format("rows [{}, {})", box.offset[0], box.offset[0] + box.extent[0]);
  std::vector<std::string> ranges;
  for (std::size_t a = 0; a < box.extent.size(); ++a) {
    ranges.push_back(fmt::format("{}:{}", box.offset[a], box.offset[a] + box.extent[a]));
  }
  return fmt::format("the box [{}]", fmt::join(ranges, ", "));
}

void select_box(hid_t space, const Shape& shape, const Box* box, const std::string& where) {
  if (!box || box->elements() == 0 || shape_size(shape) == 0) {
    SKEIN_H5_CHECK(H5Sselect_none, (space), where);
    return;
  }
  if (shape.empty()) {
    SKEIN_H5_CHECK(H5Sselect_all, (space), where);
    return;
  }
  const std::vector<hsize_t> start(box->offset.begin(), box->offset.end());
  const std::vector<hsize_t> count(box->extent.begin(), box->extent.end());
  SKEIN_H5_CHECK(H5Sselect_hyperslab,
                 (space, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr), where);
}

Handle memory_space(std::size_t elements, const std::string& where) {
  const hsize_t n = std::max<std::size_t>(elements, 1);
  Handle space(SKEIN_H5_CHECK(H5Screate_simple, (1, &n, nullptr), where), H5Sclose);
  if (elements == 0) SKEIN_H5_CHECK(H5Sselect_none, (space.get()), where);
  return space;
}

namespace {

// A RowPlan as the BoxPlan of one box per rank that has rows; its callbacks call the RowPlan's.
File::Impl::BoxPlan boxes_of(const File::Impl::RowPlan& rows) {
  File::Impl::BoxPlan plan;
  plan.shape = rows.shape;
  plan.dtype = rows.dtype;
  for (const RowRange& r : rows.rank_rows) {
    std::vector<Box> boxes;
    if (!r.empty()) boxes.push_back(rows_box(rows.shape, r));
    plan.rank_boxes.push_back(std::move(boxes));
  }
  if (rows.fetch) {
    plan.fetch = [&rows](std::size_t, const Box& part, std::span<std::byte> dest) {
      rows.fetch(box_rows(part), dest);
    };
  }
  if (rows.store) {
    plan.store = [&rows](std::size_t, const Box& part, std::span<const std::byte> src) {
      rows.store(box_rows(part), src);
    };
  }
  return plan;
}

}  // namespace

}  // namespace internal

void File::Impl::write_boxes(hid_t dataset, const std::string& name, const BoxPlan& plan,
                             const std::string& call) {
  if (parallel) {
    write_boxes_parallel(dataset, name, plan, call);
  } else {
    write_boxes_rank0(dataset, name, plan, call);
  }
}

void File::Impl::read_boxes(hid_t dataset, const std::string& name, const BoxPlan& plan,
                            const std::string& call) {
  if (parallel) {
    read_boxes_parallel(dataset, name, plan, call);
  } else {
    read_boxes_rank0(dataset, name, plan, call);
  }
}

void File::Impl::write_rows(hid_t dataset, const std::string& name, const RowPlan& plan,
                            const std::string& call) {
  write_boxes(dataset, name, boxes_of(plan), call);
}

void File::Impl::read_rows(hid_t dataset, const std::string& name, const RowPlan& plan,
                           const std::string& call) {
  read_boxes(dataset, name, boxes_of(plan), call);
}

}  // namespace hdf5
}  // namespace skein

#else

namespace skein {
std::uint64_t detail::hdf5_staged_bytes() { return 0; }
}  // namespace skein

#endif

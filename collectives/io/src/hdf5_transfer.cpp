// SPDX-License-Identifier: BSD-3-Clause
// Rows and their pieces, selections of rows, and the choice between the two transfer paths
// (hdf5_transfer.hpp).
#include "hdf5_transfer.hpp"

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI
#include <algorithm>

namespace skein::hdf5 {

namespace internal {

// Rows along the first axis (a 0-D dataset is one row) and elements per row.
std::size_t rows_of(const Shape& shape) { return shape.empty() ? 1 : shape[0]; }
std::size_t row_elements(const Shape& shape) {
  std::size_t n = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

std::size_t rows_per_piece(const Shape& shape, Dtype dtype, std::size_t max_bytes) {
  const std::size_t row_bytes = row_elements(shape) * itemsize(dtype);
  return std::max<std::size_t>(1, row_bytes == 0 ? rows_of(shape) : max_bytes / row_bytes);
}

// The k-th piece of `range` (empty past its end).
RowRange piece_of(RowRange range, std::size_t per_piece, std::size_t k) {
  const std::size_t begin = range.begin + k * per_piece;
  if (begin >= range.end) return {range.end, range.end};
  return {begin, std::min(range.end, begin + per_piece)};
}

std::size_t pieces_of(RowRange range, std::size_t per_piece) {
  return (range.size() + per_piece - 1) / per_piece;
}

// Selects rows [begin, end) of a dataspace of `shape` (none when empty).
void select_rows(hid_t space, const Shape& shape, RowRange rows, const std::string& where) {
  if (rows.empty() || shape_size(shape) == 0) {
    SKEIN_H5_CHECK(H5Sselect_none, (space), where);
    return;
  }
  if (shape.empty()) {
    SKEIN_H5_CHECK(H5Sselect_all, (space), where);
    return;
  }
  std::vector<hsize_t> start(shape.size(), 0), count(shape.begin(), shape.end());
  start[0] = rows.begin;
  count[0] = rows.size();
  SKEIN_H5_CHECK(H5Sselect_hyperslab, (space, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr),
                 where);
}

// A memory dataspace of n elements; with none, a 1-element space with nothing selected (HDF5
// wants a space even for a rank that moves nothing in a collective transfer).
Handle memory_space(std::size_t elements, const std::string& where) {
  const hsize_t n = std::max<std::size_t>(elements, 1);
  Handle space(SKEIN_H5_CHECK(H5Screate_simple, (1, &n, nullptr), where), H5Sclose);
  if (elements == 0) SKEIN_H5_CHECK(H5Sselect_none, (space.get()), where);
  return space;
}

}  // namespace internal

// Parallel: in rounds, each a collective H5Dwrite in which every rank writes its next piece (or
// nothing). Through rank 0: rank 0 takes each rank's pieces in turn (its own from its devices,
// the others' as messages) and writes them.
void File::Impl::write_rows(hid_t dataset, const std::string& name, const RowPlan& plan,
                            const std::string& call) {
  if (parallel) {
    write_rows_parallel(dataset, name, plan, call);
  } else {
    write_rows_rank0(dataset, name, plan, call);
  }
}

// The mirror of write_rows.
void File::Impl::read_rows(hid_t dataset, const std::string& name, const RowPlan& plan,
                           const std::string& call) {
  if (parallel) {
    read_rows_parallel(dataset, name, plan, call);
  } else {
    read_rows_rank0(dataset, name, plan, call);
  }
}

}  // namespace skein::hdf5

#endif

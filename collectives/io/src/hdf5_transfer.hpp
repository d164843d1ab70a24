// SPDX-License-Identifier: BSD-3-Clause
// What the two transfer paths (hdf5_transfer_parallel.cpp, hdf5_transfer_rank0.cpp) share: rows
// and their pieces, selections, and the state of one transfer loop on one rank.
//
// Rows: a dataset of shape (n, ...) is moved in pieces of whole rows along the first axis. Every
// rank owns one contiguous range of rows (a DistArray rank's blocks are consecutive); a piece is
// at most FileOptions::max_bytes_per_call bytes (at least one row). A 0-D (scalar) dataset is one
// row of one element.
#pragma once

#include "hdf5_impl.hpp"

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI
#include <cstddef>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace skein::hdf5::internal {

std::size_t rows_per_piece(const Shape& shape, Dtype dtype, std::size_t max_bytes);
// The k-th piece of `range` (empty past its end), and how many there are.
RowRange piece_of(RowRange range, std::size_t per_piece, std::size_t k);
std::size_t pieces_of(RowRange range, std::size_t per_piece);

// Selects rows [begin, end) of a dataspace of `shape` (none when empty).
void select_rows(hid_t space, const Shape& shape, RowRange rows, const std::string& where);
// A memory dataspace of n elements; with none, a 1-element space with nothing selected (HDF5
// wants a space even for a rank that moves nothing in a collective transfer).
Handle memory_space(std::size_t elements, const std::string& where);

// One rank's state in a transfer loop: the first failure (the loop goes on, with empty
// selections or messages, so that collective calls and messages still pair up) and the host
// buffer of one piece.
struct TransferState {
  explicit TransferState(detail::Agreement& a) : agreement(a) {}
  // Inside a catch block: keeps the first failure. After a timeout the ranks no longer pair up,
  // and MPI may still use the buffer: then out at once (rethrows).
  void remember() {
    if (!failure) failure = std::current_exception();
    if (!agreement.broken().empty()) throw;
  }

  detail::Agreement& agreement;
  std::exception_ptr failure;
  // Owned through `owner`: after a timeout MPI may still write it, and it is kept until exit.
  std::shared_ptr<std::vector<std::byte>> owner = std::make_shared<std::vector<std::byte>>();
  std::vector<std::byte>& buffer = *owner;
};

}  // namespace skein::hdf5::internal

#endif

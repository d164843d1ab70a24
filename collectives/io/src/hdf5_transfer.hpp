// SPDX-License-Identifier: BSD-3-Clause
// What the two transfer paths (hdf5_transfer_parallel.cpp, hdf5_transfer_rank0.cpp) share: boxes
// and their pieces, selections, and the state of one transfer loop on one rank.
//
// Boxes: every rank moves its own boxes of the dataset (File::Impl::BoxPlan): a DistArray rank
// one box of whole rows (its blocks are consecutive), a GridArray rank one box per member with
// points (the member's block: its points along each axis, the components axis whole). Each box is
// moved in pieces along its first axis, a piece at most FileOptions::max_bytes_per_call bytes (at
// least one plane of the box), each piece a hyperslab of the dataset and a contiguous C-ordered
// host buffer. A 0-D (scalar) dataset is one box of one element, with no axes.
//
// On the parallel path the pieces move in rounds: in round k every rank moves its k-th piece (of
// all its boxes, in order) with one collective H5Dwrite / H5Dread; a rank with fewer pieces (or
// none, or one that failed) takes part with an empty selection. Through rank 0, rank 0 moves
// every rank's pieces in turn, the other ranks' as messages.
#pragma once

#include "hdf5_impl.hpp"

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI
#include <cstddef>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace skein::hdf5::internal {

// One piece of a rank's boxes: `part` of its box number `box`.
struct Piece {
  std::size_t box = 0;
  Box part;
};

// The pieces of `boxes`, in order: each split along its first axis into pieces of at most
// max_bytes (at least one plane of the box); a box without elements has none, a 0-D box is one.
std::vector<Piece> pieces_of(const std::vector<Box>& boxes, Dtype dtype, std::size_t max_bytes);
// The most pieces of any rank: the rounds of the parallel path (0 for a dataset without elements).
std::size_t rounds_of(const File::Impl::BoxPlan& plan, std::size_t max_bytes);

// Rows [begin, end) of a dataset of `shape` as a box, and back (a 0-D dataset's box is row 0).
Box rows_box(const Shape& shape, RowRange rows);
RowRange box_rows(const Box& box);
// A piece in words, for messages: "rows [4, 8)" when it spans whole rows of `shape`, else
// "the box [0:2, 3:5, 0:3]".
std::string describe_box(const Box& box, const Shape& shape);

// Selects `box` of a dataspace of `shape` (nothing when `box` is null).
void select_box(hid_t space, const Shape& shape, const Box* box, const std::string& where);
// A memory dataspace of n elements; with none, a 1-element space with nothing selected (HDF5
// wants a space even for a rank that moves nothing in a collective transfer).
Handle memory_space(std::size_t elements, const std::string& where);

// Counts the bytes of dataset elements that passed through this process's host buffers in the
// transfers (skein/detail/hdf5_staging.hpp reads it, for tests).
void count_staged(std::size_t bytes);

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

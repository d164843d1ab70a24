// SPDX-License-Identifier: BSD-3-Clause
// The path to the file through rank 0 (HDF5 without MPI-IO, FileOptions::serial or
// SKEIN_HDF5_SERIAL=1): only rank 0 has the file open. Writing, rank 0 takes each rank's pieces
// in turn (its own from its devices, the others' as messages) and writes each as its hyperslab;
// reading, it reads each rank's pieces and sends them on. So rank 0 holds one piece at a time
// (at most FileOptions::max_bytes_per_call bytes), never the whole array. A rank that failed
// still sends (an empty message) or receives every piece, so that the messages pair up; an empty
// message tells the other side the piece is missing (hdf5_transfer.hpp).
#include "hdf5_transfer.hpp"

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI
#include <optional>

namespace skein::hdf5 {

void File::Impl::write_boxes_rank0(hid_t dataset, const std::string& name, const BoxPlan& plan,
                                   const std::string& call) {
  const std::string where = fmt::format("writing dataset '{}' of HDF5 file '{}'", name, path);
  const std::size_t unit = itemsize(plan.dtype);
  TransferState t(agreement);
  if (shape_size(plan.shape) == 0) {
    share_failure(t.failure, call);
    return;
  }
  if (rank != 0) {
    for (const Piece& piece : pieces_of(plan.rank_boxes[static_cast<std::size_t>(rank)], plan.dtype,
                                        options.max_bytes_per_call)) {
      t.buffer.resize(piece.part.elements() * unit);
      std::size_t count = t.buffer.size();
      try {
        if (t.failure) {
          count = 0;
        } else {
          plan.fetch(piece.box, piece.part, t.buffer);
          count_staged(count);
        }
      } catch (...) {
        t.remember();
        count = 0;  // an empty message tells rank 0 this piece is missing
      }
      try {
        agreement.send(call, std::as_bytes(std::span(t.buffer).first(count)), 0, kTransferTag,
                       t.owner);
      } catch (...) {
        t.remember();
      }
    }
    share_failure(t.failure, call);
    return;
  }
  Handle type, dxpl;
  try {
    QuietHdf5Errors quiet;
    type = transfer_type(dataset, plan.dtype);
    dxpl = transfer_list();
  } catch (...) {
    t.remember();
  }
  for (int r = 0; r < size; ++r) {
    for (const Piece& piece : pieces_of(plan.rank_boxes[static_cast<std::size_t>(r)], plan.dtype,
                                        options.max_bytes_per_call)) {
      t.buffer.resize(piece.part.elements() * unit);
      try {
        if (r == 0) {
          if (!t.failure) plan.fetch(piece.box, piece.part, t.buffer);
        } else {
          // Received even after a failure: the sender must not be left waiting.
          const std::size_t got = agreement.receive(
              call, std::as_writable_bytes(std::span(t.buffer)), r, kTransferTag, t.owner);
          if (got != t.buffer.size() && !t.failure) {
            throw RuntimeError(ErrorInfo{
                .what = fmt::format("rank {} could not send {} of dataset '{}' (it says why)", r,
                                    describe_box(piece.part, plan.shape), name),
                .call = call});
          }
        }
        if (!t.failure) {
          count_staged(t.buffer.size());
          QuietHdf5Errors quiet;
          Handle space(SKEIN_H5_CHECK(H5Dget_space, (dataset), where), H5Sclose);
          select_box(space.get(), plan.shape, &piece.part, where);
          Handle mem = memory_space(piece.part.elements(), where);
          SKEIN_H5_CHECK(H5Dwrite,
                         (dataset, type.get(), mem.get(), space.get(), dxpl.get(), t.buffer.data()),
                         where);
        }
      } catch (...) {
        t.remember();
      }
    }
  }
  share_failure(t.failure, call);
}

void File::Impl::read_boxes_rank0(hid_t dataset, const std::string& name, const BoxPlan& plan,
                                  const std::string& call) {
  const std::string where = fmt::format("reading dataset '{}' of HDF5 file '{}'", name, path);
  const std::size_t unit = itemsize(plan.dtype);
  TransferState t(agreement);
  if (shape_size(plan.shape) == 0) {
    share_failure(t.failure, call);
    return;
  }
  if (rank != 0) {
    // A short message means rank 0 failed: its error (a damaged chunk, say) is shared below and
    // raised here as "rank 0 failed ...: <its message>", which says more than this rank knows.
    std::optional<Box> missing;
    for (const Piece& piece : pieces_of(plan.rank_boxes[static_cast<std::size_t>(rank)], plan.dtype,
                                        options.max_bytes_per_call)) {
      t.buffer.resize(piece.part.elements() * unit);
      try {
        const std::size_t got = agreement.receive(call, std::as_writable_bytes(std::span(t.buffer)),
                                                  0, kTransferTag, t.owner);
        if (got == t.buffer.size()) {
          count_staged(got);
          if (!t.failure && !missing) plan.store(piece.box, piece.part, t.buffer);
        } else if (!missing) {
          missing = piece.part;
        }
      } catch (...) {
        t.remember();
      }
    }
    if (missing && !t.failure) {
      share_failure(t.failure, call);  // raises rank 0's error, which it always has then
      throw RuntimeError(
          ErrorInfo{.what = fmt::format("rank 0 could not read {} of dataset '{}' for this rank",
                                        describe_box(*missing, plan.shape), name),
                    .call = call});
    }
    share_failure(t.failure, call);
    return;
  }
  Handle type, dxpl;
  try {
    QuietHdf5Errors quiet;
    type = transfer_type(dataset, plan.dtype);
    dxpl = transfer_list();
  } catch (...) {
    t.remember();
  }
  for (int r = 0; r < size; ++r) {
    for (const Piece& piece : pieces_of(plan.rank_boxes[static_cast<std::size_t>(r)], plan.dtype,
                                        options.max_bytes_per_call)) {
      t.buffer.resize(piece.part.elements() * unit);
      bool read = false;
      try {
        if (!t.failure) {
          QuietHdf5Errors quiet;
          Handle space(SKEIN_H5_CHECK(H5Dget_space, (dataset), where), H5Sclose);
          select_box(space.get(), plan.shape, &piece.part, where);
          Handle mem = memory_space(piece.part.elements(), where);
          read_checked(dataset, type.get(), mem.get(), space.get(), dxpl.get(), t.buffer.data(),
                       name, describe_box(piece.part, plan.shape), call);
          read = true;
          count_staged(t.buffer.size());
        }
      } catch (...) {
        t.remember();
      }
      try {
        if (r == 0) {
          if (read) plan.store(piece.box, piece.part, t.buffer);
        } else {
          // Sent even after a failure (empty): the receiver must not be left waiting.
          agreement.send(call, std::as_bytes(std::span(t.buffer).first(read ? t.buffer.size() : 0)),
                         r, kTransferTag, t.owner);
        }
      } catch (...) {
        t.remember();
      }
    }
  }
  share_failure(t.failure, call);
}

}  // namespace skein::hdf5

#endif

// SPDX-License-Identifier: BSD-3-Clause
// The path to the file through rank 0 (HDF5 without MPI-IO, FileOptions::serial or
// SKEIN_HDF5_SERIAL=1): only rank 0 has the file open. Writing, rank 0 takes each rank's pieces
// in turn (its own from its devices, the others' as messages) and writes them; reading, it reads
// each rank's pieces and sends them on. A rank that failed still sends (an empty message) or
// receives every piece, so that the messages pair up; an empty message tells the other side the
// piece is missing.
#include "hdf5_transfer.hpp"

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI
#include <optional>

namespace skein::hdf5 {

void File::Impl::write_rows_rank0(hid_t dataset, const std::string& name, const RowPlan& plan,
                                  const std::string& call) {
  const std::size_t per_piece = rows_per_piece(plan.shape, plan.dtype, options.max_bytes_per_call);
  const std::size_t row_bytes = row_elements(plan.shape) * itemsize(plan.dtype);
  const std::string where = fmt::format("writing dataset '{}' of HDF5 file '{}'", name, path);
  TransferState t(agreement);
  if (shape_size(plan.shape) == 0) {
    share_failure(t.failure, call);
    return;
  }
  if (rank == 0) {
    Handle type, dxpl;
    try {
      QuietHdf5Errors quiet;
      type = transfer_type(dataset, plan.dtype);
      dxpl = transfer_list();
    } catch (...) {
      t.remember();
    }
    for (int r = 0; r < size; ++r) {
      const RowRange rows = plan.rank_rows[static_cast<std::size_t>(r)];
      for (std::size_t k = 0; k < pieces_of(rows, per_piece); ++k) {
        const RowRange piece = piece_of(rows, per_piece, k);
        t.buffer.resize(piece.size() * row_bytes);
        try {
          if (r == 0) {
            if (!t.failure) plan.fetch(piece, t.buffer);
          } else {
            // Received even after a failure: the sender must not be left waiting.
            const std::size_t got = agreement.receive(call, std::as_writable_bytes(std::span(t.buffer)), r,
                                                      kTransferTag, t.owner);
            if (got != t.buffer.size() && !t.failure) {
              throw RuntimeError(ErrorInfo{
                  .what = fmt::format("rank {} could not send rows [{}, {}) of dataset '{}' (it "
                                      "says why)",
                                      r, piece.begin, piece.end, name),
                  .call = call});
            }
          }
          if (!t.failure) {
            QuietHdf5Errors quiet;
            Handle space(SKEIN_H5_CHECK(H5Dget_space, (dataset), where), H5Sclose);
            select_rows(space.get(), plan.shape, piece, where);
            Handle mem = memory_space(piece.size() * row_elements(plan.shape), where);
            SKEIN_H5_CHECK(H5Dwrite, (dataset, type.get(), mem.get(), space.get(), dxpl.get(), t.buffer.data()),
                           where);
          }
        } catch (...) {
          t.remember();
        }
      }
    }
  } else {
    const RowRange rows = plan.rank_rows[static_cast<std::size_t>(rank)];
    for (std::size_t k = 0; k < pieces_of(rows, per_piece); ++k) {
      const RowRange piece = piece_of(rows, per_piece, k);
      t.buffer.resize(piece.size() * row_bytes);
      int count = static_cast<int>(t.buffer.size());
      try {
        if (t.failure) {
          count = 0;
        } else {
          plan.fetch(piece, t.buffer);
        }
      } catch (...) {
        t.remember();
        count = 0;  // an empty message tells rank 0 this piece is missing
      }
      try {
        agreement.send(call, std::as_bytes(std::span(t.buffer).first(static_cast<std::size_t>(count))), 0,
                       kTransferTag, t.owner);
      } catch (...) {
        t.remember();
      }
    }
  }
  share_failure(t.failure, call);
}

void File::Impl::read_rows_rank0(hid_t dataset, const std::string& name, const RowPlan& plan,
                                 const std::string& call) {
  const std::size_t per_piece = rows_per_piece(plan.shape, plan.dtype, options.max_bytes_per_call);
  const std::size_t row_bytes = row_elements(plan.shape) * itemsize(plan.dtype);
  const std::string where = fmt::format("reading dataset '{}' of HDF5 file '{}'", name, path);
  TransferState t(agreement);
  if (shape_size(plan.shape) == 0) {
    share_failure(t.failure, call);
    return;
  }
  if (rank == 0) {
    Handle type, dxpl;
    try {
      QuietHdf5Errors quiet;
      type = transfer_type(dataset, plan.dtype);
      dxpl = transfer_list();
    } catch (...) {
      t.remember();
    }
    for (int r = 0; r < size; ++r) {
      const RowRange rows = plan.rank_rows[static_cast<std::size_t>(r)];
      for (std::size_t k = 0; k < pieces_of(rows, per_piece); ++k) {
        const RowRange piece = piece_of(rows, per_piece, k);
        t.buffer.resize(piece.size() * row_bytes);
        bool read = false;
        try {
          if (!t.failure) {
            QuietHdf5Errors quiet;
            Handle space(SKEIN_H5_CHECK(H5Dget_space, (dataset), where), H5Sclose);
            select_rows(space.get(), plan.shape, piece, where);
            Handle mem = memory_space(piece.size() * row_elements(plan.shape), where);
            read_checked(dataset, type.get(), mem.get(), space.get(), dxpl.get(), t.buffer.data(), name,
                         piece, call);
            read = true;
          }
        } catch (...) {
          t.remember();
        }
        try {
          if (r == 0) {
            if (read) plan.store(piece, t.buffer);
          } else {
            // Sent even after a failure (empty): the receiver must not be left waiting.
            agreement.send(call, std::as_bytes(std::span(t.buffer).first(read ? t.buffer.size() : 0)), r,
                           kTransferTag, t.owner);
          }
        } catch (...) {
          t.remember();
        }
      }
    }
  } else {
    // A short message means rank 0 failed: its error (a damaged chunk, say) is shared below and
    // raised here as "rank 0 failed ...: <its message>", which says more than this rank knows.
    std::optional<RowRange> missing;
    const RowRange rows = plan.rank_rows[static_cast<std::size_t>(rank)];
    for (std::size_t k = 0; k < pieces_of(rows, per_piece); ++k) {
      const RowRange piece = piece_of(rows, per_piece, k);
      t.buffer.resize(piece.size() * row_bytes);
      try {
        const std::size_t got = agreement.receive(call, std::as_writable_bytes(std::span(t.buffer)), 0,
                                                  kTransferTag, t.owner);
        if (got == t.buffer.size()) {
          if (!t.failure && !missing) plan.store(piece, t.buffer);
        } else if (!missing) {
          missing = piece;
        }
      } catch (...) {
        t.remember();
      }
    }
    if (missing && !t.failure) {
      share_failure(t.failure, call);  // raises rank 0's error, which it always has then
      throw RuntimeError(ErrorInfo{
          .what = fmt::format("rank 0 could not read rows [{}, {}) of dataset '{}' for this rank",
                              missing->begin, missing->end, name),
          .call = call});
    }
  }
  share_failure(t.failure, call);
}

}  // namespace skein::hdf5

#endif

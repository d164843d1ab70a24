// SPDX-License-Identifier: BSD-3-Clause
// The parallel path to the file (HDF5 with MPI-IO): every rank moves its own rows with
// collective H5Dwrite / H5Dread calls, in rounds of one piece per rank; a rank with fewer pieces
// (or none, or one that failed) takes part with an empty selection, so the collectives pair up.
#include "hdf5_transfer.hpp"

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI
#include <algorithm>

namespace skein::hdf5 {

void File::Impl::write_rows_parallel(hid_t dataset, const std::string& name, const RowPlan& plan,
                                     const std::string& call) {
  const std::size_t per_piece = rows_per_piece(plan.shape, plan.dtype, options.max_bytes_per_call);
  const std::size_t row_bytes = row_elements(plan.shape) * itemsize(plan.dtype);
  const std::string where = fmt::format("writing dataset '{}' of HDF5 file '{}'", name, path);
  TransferState t(agreement);
  std::size_t rounds = 0;
  for (const auto& r : plan.rank_rows) rounds = std::max(rounds, pieces_of(r, per_piece));
  if (shape_size(plan.shape) == 0) rounds = 0;
  const RowRange mine = plan.rank_rows[static_cast<std::size_t>(rank)];
  for (std::size_t k = 0; k < rounds; ++k) {
    // A rank that failed goes on with empty selections: the others wait for it in each round.
    RowRange piece = t.failure ? RowRange{} : piece_of(mine, per_piece, k);
    try {
      QuietHdf5Errors quiet;
      t.buffer.resize(piece.size() * row_bytes);
      if (!piece.empty()) plan.fetch(piece, t.buffer);
    } catch (...) {
      t.remember();
      piece = {};
    }
    try {
      QuietHdf5Errors quiet;
      Handle space(SKEIN_H5_CHECK(H5Dget_space, (dataset), where), H5Sclose);
      select_rows(space.get(), plan.shape, piece, where);
      Handle mem = memory_space(piece.size() * row_elements(plan.shape), where);
      Handle type = transfer_type(dataset, plan.dtype);
      Handle dxpl = transfer_list();
      static std::byte dummy[16];
      SKEIN_H5_CHECK(H5Dwrite, (dataset, type.get(), mem.get(), space.get(), dxpl.get(),
                                t.buffer.empty() ? dummy : t.buffer.data()),
                     where);
    } catch (...) {
      t.remember();
    }
  }
  share_failure(t.failure, call);
}

void File::Impl::read_rows_parallel(hid_t dataset, const std::string& name, const RowPlan& plan,
                                    const std::string& call) {
  const std::size_t per_piece = rows_per_piece(plan.shape, plan.dtype, options.max_bytes_per_call);
  const std::size_t row_bytes = row_elements(plan.shape) * itemsize(plan.dtype);
  const std::string where = fmt::format("reading dataset '{}' of HDF5 file '{}'", name, path);
  TransferState t(agreement);
  std::size_t rounds = 0;
  for (const auto& r : plan.rank_rows) rounds = std::max(rounds, pieces_of(r, per_piece));
  if (shape_size(plan.shape) == 0) rounds = 0;
  const RowRange mine = plan.rank_rows[static_cast<std::size_t>(rank)];
  for (std::size_t k = 0; k < rounds; ++k) {
    const RowRange piece = t.failure ? RowRange{} : piece_of(mine, per_piece, k);
    t.buffer.resize(piece.size() * row_bytes);
    bool read = false;
    try {
      QuietHdf5Errors quiet;
      Handle space(SKEIN_H5_CHECK(H5Dget_space, (dataset), where), H5Sclose);
      select_rows(space.get(), plan.shape, piece, where);
      Handle mem = memory_space(piece.size() * row_elements(plan.shape), where);
      Handle type = transfer_type(dataset, plan.dtype);
      Handle dxpl = transfer_list();
      static std::byte dummy[16];
      read_checked(dataset, type.get(), mem.get(), space.get(), dxpl.get(),
                   t.buffer.empty() ? dummy : t.buffer.data(), name, piece, call);
      read = true;
    } catch (...) {
      t.remember();
    }
    try {
      if (read && !piece.empty()) plan.store(piece, t.buffer);
    } catch (...) {
      t.remember();
    }
  }
  share_failure(t.failure, call);
}

}  // namespace skein::hdf5

#endif

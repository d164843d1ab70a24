// SPDX-License-Identifier: BSD-3-Clause
// The parallel path to the file (HDF5 with MPI-IO): every rank moves its own boxes (its rows, its
// members' blocks) between its host buffer and their hyperslabs of the dataset, with collective
// H5Dwrite / H5Dread calls in rounds of one piece per rank; a rank with fewer pieces (or none, or
// one that failed) takes part with an empty selection, so the collectives pair up
// (hdf5_transfer.hpp).
#include "hdf5_transfer.hpp"

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI

namespace skein::hdf5 {

void File::Impl::write_boxes_parallel(hid_t dataset, const std::string& name, const BoxPlan& plan,
                                      const std::string& call) {
  const std::string where = fmt::format("writing dataset '{}' of HDF5 file '{}'", name, path);
  const std::size_t unit = itemsize(plan.dtype);
  const std::vector<Piece> mine = pieces_of(plan.rank_boxes[static_cast<std::size_t>(rank)],
                                            plan.dtype, options.max_bytes_per_call);
  const std::size_t rounds = rounds_of(plan, options.max_bytes_per_call);
  TransferState t(agreement);
  for (std::size_t k = 0; k < rounds; ++k) {
    // A rank that failed goes on with empty selections: the others wait for it in each round.
    const Piece* piece = t.failure || k >= mine.size() ? nullptr : &mine[k];
    try {
      QuietHdf5Errors quiet;
      t.buffer.resize(piece ? piece->part.elements() * unit : 0);
      if (piece) {
        plan.fetch(piece->box, piece->part, t.buffer);
        count_staged(t.buffer.size());
      }
    } catch (...) {
      t.remember();
      piece = nullptr;
    }
    try {
      QuietHdf5Errors quiet;
      Handle space(SKEIN_H5_CHECK(H5Dget_space, (dataset), where), H5Sclose);
      select_box(space.get(), plan.shape, piece ? &piece->part : nullptr, where);
      Handle mem = memory_space(piece ? piece->part.elements() : 0, where);
      Handle type = transfer_type(dataset, plan.dtype);
      Handle dxpl = transfer_list();
      static std::byte dummy[16];
      SKEIN_H5_CHECK(H5Dwrite,
                     (dataset, type.get(), mem.get(), space.get(), dxpl.get(),
                      t.buffer.empty() ? dummy : t.buffer.data()),
                     where);
    } catch (...) {
      t.remember();
    }
  }
  share_failure(t.failure, call);
}

void File::Impl::read_boxes_parallel(hid_t dataset, const std::string& name, const BoxPlan& plan,
                                     const std::string& call) {
  const std::string where = fmt::format("reading dataset '{}' of HDF5 file '{}'", name, path);
  const std::size_t unit = itemsize(plan.dtype);
  const std::vector<Piece> mine = pieces_of(plan.rank_boxes[static_cast<std::size_t>(rank)],
                                            plan.dtype, options.max_bytes_per_call);
  const std::size_t rounds = rounds_of(plan, options.max_bytes_per_call);
  TransferState t(agreement);
  for (std::size_t k = 0; k < rounds; ++k) {
    const Piece* piece = t.failure || k >= mine.size() ? nullptr : &mine[k];
    t.buffer.resize(piece ? piece->part.elements() * unit : 0);
    bool read = false;
    try {
      QuietHdf5Errors quiet;
      Handle space(SKEIN_H5_CHECK(H5Dget_space, (dataset), where), H5Sclose);
      select_box(space.get(), plan.shape, piece ? &piece->part : nullptr, where);
      Handle mem = memory_space(piece ? piece->part.elements() : 0, where);
      Handle type = transfer_type(dataset, plan.dtype);
      Handle dxpl = transfer_list();
      static std::byte dummy[16];
      read_checked(dataset, type.get(), mem.get(), space.get(), dxpl.get(),
                   t.buffer.empty() ? dummy : t.buffer.data(), name,
                   piece ? describe_box(piece->part, plan.shape) : "nothing", call);
      read = true;
    } catch (...) {
      t.remember();
    }
    try {
      if (read && piece) {
        count_staged(t.buffer.size());
        plan.store(piece->box, piece->part, t.buffer);
      }
    } catch (...) {
      t.remember();
    }
  }
  share_failure(t.failure, call);
}

}  // namespace skein::hdf5

#endif

// SPDX-License-Identifier: BSD-3-Clause
// Verification on read: HDF5 checks each chunk's Fletcher32 checksum (WriteOptions::checksum) on
// every read; a read that fails because of one raises a RuntimeError that says so plainly, with
// the file, the dataset and the rows, instead of HDF5's stack alone.
#include "hdf5_impl.hpp"

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI
#include <algorithm>

namespace skein::hdf5 {

void File::Impl::read_checked(hid_t dataset, hid_t type, hid_t mem, hid_t space, hid_t dxpl,
                              void* buffer, const std::string& name, const std::string& what,
                              const std::string& call) const {
  if (H5Dread(dataset, type, mem, space, dxpl, buffer) >= 0) return;
  std::vector<std::string> lines = hdf5_error_lines();
  const bool checksum = std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("Fletcher32") != std::string::npos;
  });
  const std::string where =
      fmt::format("reading {} of dataset '{}' of HDF5 file '{}'", what, name, path);
  if (!checksum) {
    throw RuntimeError(ErrorInfo{
        .what = fmt::format("{}: {}", where, hdf5_error_stack(std::move(lines))),
        .call = "H5Dread",
        .hint = "HDF5's messages above say what failed: a file that is not HDF5 or is damaged, "
                "or a file system that lost it.",
        .location = SKEIN_HERE});
  }
  throw RuntimeError(ErrorInfo{
      .what = fmt::format("the Fletcher32 checksum failed {}: the file was changed or damaged "
                          "after it was written ({})",
                          where, hdf5_error_stack(std::move(lines))),
      .call = call,
      .hint = "Do not use this dataset's values: restore the file from a good copy or write it "
              "again. HDF5 checks each chunk's checksum on every read; h5py and h5dump refuse "
              "the damaged chunk too.",
      .location = SKEIN_HERE});
}
}  // namespace skein::hdf5

#endif

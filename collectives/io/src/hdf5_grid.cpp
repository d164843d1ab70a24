// SPDX-License-Identifier: BSD-3-Clause
// HDF5 files of GridArrays (skein/hdf5.hpp's File::write / File::read of a GridArray).
//
// A GridArray's global array is one dataset of its layout's global shape, written and read here
// through File's own collective calls (write_host, read_host_bytes), so it shares their agreement
// between ranks, error sharing, attributes, checksums and both paths to the file. The blocks travel
// through rank 0 (GridArray::gather_bytes / scatter): simple and correct on any process grid, but
// rank 0 holds the whole array on its host, and a read holds it on every rank. A parallel path
// (each member's block a hyperslab written by its own rank with collective MPI-IO) needs File's
// transfer loop generalised from rows to N-D boxes: not done yet.
#include <fmt/format.h>

#include <string>

#include "skein/detail/errors.hpp"
#include "skein/error.hpp"
#include "skein/grid_array.hpp"
#include "skein/hdf5.hpp"

namespace skein::hdf5 {

void File::write(const std::string& name, const GridArray& array, const WriteOptions& options) {
  const GridLayout& layout = array.layout();
  // Through rank 0: the root's host holds the whole array, the others pass nothing.
  const std::vector<std::byte> host = array.gather_bytes(0);
  // write_host refuses user attributes named skein_*, so the layout goes in after it.
  write_host(name, std::span<const std::byte>(host), layout.global_shape(), array.dtype(), 0, options);
  set_attribute(name, "skein_layout", layout.describe());
}

void File::read(const std::string& name, const GridArray& array) {
  const GridLayout& layout = array.layout();
  const DatasetInfo found = info(name);
  if (found.shape != layout.global_shape() || found.dtype != array.dtype()) {
    detail::raise_in(SKEIN_HERE, "hdf5::File::read",
                     "Read it into a GridArray of the dataset's global shape and dtype (any process grid).",
                     "dataset '{}' of HDF5 file '{}' is {} {}, the GridArray {} {}", name, path(),
                     skein::name(found.dtype), skein::to_string(found.shape), skein::name(array.dtype()),
                     skein::to_string(layout.global_shape()));
  }
  const std::vector<std::byte> host = read_host_bytes(name);
  array.scatter(std::span<const std::byte>(array.rank() == 0 ? host : std::vector<std::byte>{}), 0);
}

}  // namespace skein::hdf5

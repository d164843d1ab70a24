// SPDX-License-Identifier: BSD-3-Clause
// File::Impl: an open HDF5 file's state on one rank (path, the ranks' Agreement, which path to the
// file, the HDF5 handle), shared by the HDF5 files' sources (hdf5_*.cpp). The methods say where
// they are defined. Only for builds with HDF5 and MPI.
#pragma once

#include "hdf5_support.hpp"

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI
#include <exception>
#include <functional>
#include <memory>
#include <span>

#include "skein/detail/agreement.hpp"

namespace skein::hdf5 {

namespace internal {

// A box of a dataset: its first index and extent along each axis (no axes: the one element of a
// 0-D dataset).
struct Box {
  std::vector<std::size_t> offset;
  std::vector<std::size_t> extent;
  std::size_t elements() const {
    std::size_t n = 1;
    for (auto e : extent) n *= e;
    return n;
  }
};

}  // namespace internal

struct File::Impl {
  std::string path;
  // The ranks' own duplicate of the caller's communicator, with its deadlines: HDF5's and our
  // messages never meet others'.
  detail::Agreement agreement;
  MPI_Comm comm = MPI_COMM_NULL;  // agreement.comm() while open
  int rank = 0;
  int size = 1;
  bool parallel = false;
  bool writable = false;
  FileOptions options;
  Handle file;  // open on the file ranks

  ~Impl() {
    if (file.valid() && parallel && !agreement.broken().empty()) {
      // H5Fclose is collective on the parallel path; after a timeout the other ranks are not
      // coming: the handle is left open rather than waited on forever.
      (void)file.release();
    }
    file.reset();  // before the communicator (HDF5 holds a duplicate of its own, but in order)
  }

  // Whether this rank opens the file: every rank on the parallel path, rank 0 otherwise.
  bool has_file() const { return parallel || rank == 0; }

  // The transfer property list: collective MPI-IO on the parallel path (filtered datasets need
  // it, and it lets MPI-IO aggregate the ranks' rows into large writes).
  Handle transfer_list() const {
    Handle dxpl(SKEIN_H5_CHECK(H5Pcreate, (H5P_DATASET_XFER), path), H5Pclose);
    // Reads verify the Fletcher32 checksums (HDF5's default, stated so that it stays so).
    SKEIN_H5_CHECK(H5Pset_edc_check, (dxpl.get(), H5Z_ENABLE_EDC), path);
#ifdef H5_HAVE_PARALLEL
    if (parallel) SKEIN_H5_CHECK(H5Pset_dxpl_mpio, (dxpl.get(), H5FD_MPIO_COLLECTIVE), path);
#endif
    return dxpl;
  }

  // ---- agreement between ranks ----

  // Every rank must make the same call: compares a hash of `description` (which holds the call
  // and its arguments) across ranks. On a mismatch every rank raises, naming rank 0's call.
  void agree_on_call(const std::string& call, const std::string& description) {
    agreement.agree_on_call(call, description);
  }

  std::string broadcast_string(const std::string& call, const std::string& text, int root) {
    return agreement.broadcast_string(call, text, root);
  }

  void share_failure(std::exception_ptr mine, const std::string& call) {
    agreement.share_failure(std::move(mine), call, fmt::format("on HDF5 file '{}'", path));
  }

  // Runs `f` on the file ranks, shares any failure, and returns its
  // result on every rank: through rank 0 it travels from rank 0.
  std::string on_file_ranks(const std::string& call, const std::function<std::string()>& f) {
    std::string result;
    std::exception_ptr failure;
    if (has_file()) {
      try {
        QuietHdf5Errors quiet;
        result = f();
      } catch (...) {
        failure = std::current_exception();
      }
    }
    share_failure(failure, call);
    if (!parallel) result = broadcast_string(call, result, 0);
    return result;
  }

  // A distributed array's communicator must be the file's: as many ranks, and this rank the same.
  void check_array_ranks(std::size_t array_ranks, int array_rank, const std::string& call) const {
    if (array_ranks != static_cast<std::size_t>(size) || array_rank != rank) {
      detail::raise_in(
          SKEIN_HERE, call,
          "Open or create the file over the array's communicator (File::open(comm, ...), "
          "File::create(comm, ...)).",
          "the array's communicator has {} ranks (this is its rank {}), the file's {} "
          "(this is its rank {})",
          array_ranks, array_rank, size, rank);
    }
  }

  void check_writable(const std::string& call) const {
    if (!writable) {
      detail::raise_in(SKEIN_HERE, call,
                       "Open the file with Access::read_write, or create it with File::create.",
                       "HDF5 file '{}' is open read-only", path);
    }
  }

  // The memory type to move a dataset's elements with: the dtype's, with a complex compound's
  // member names taken from the file (HDF5 matches compound members by name).
  Handle transfer_type(hid_t dataset, Dtype dtype) const {
    if (!is_complex(dtype)) return type_of(dtype);
    Handle file_type(SKEIN_H5_CHECK(H5Dget_type, (dataset), path), H5Tclose);
    std::string why;
    const auto t = dtype_of_type(file_type.get(), why);
    return t ? type_of(dtype, t->real_name, t->imag_name) : type_of(dtype);
  }

  Handle open_object(const std::string& object) const {
    return Handle(SKEIN_H5_CHECK(H5Oopen, (file.get(), object.c_str(), H5P_DEFAULT),
                                 fmt::format("opening '{}' in HDF5 file '{}'", object, path)),
                  H5Oclose);
  }

  // Whether `name` exists as a link (each group along the path first: H5Lexists fails on a
  // missing intermediate group), whether it is a dataset, and the dataset opened (LogicError
  // naming the file's datasets when there is none). In hdf5_datasets.cpp.
  bool link_exists(const std::string& name) const;
  bool is_dataset(const std::string& name) const;
  Handle open_dataset(const std::string& name, const std::string& call) const;

  std::vector<std::string> list_datasets(const std::string& group) const;
  DatasetInfo read_info(hid_t dataset, const std::string& name) const;

  // Moves boxes of a dataset between the file and the ranks (hdf5_transfer.hpp says how; the two
  // paths are hdf5_transfer_parallel.cpp and hdf5_transfer_rank0.cpp). Every rank passes the
  // same shape, dtype and rank_boxes (they come from layouts every rank holds).
  struct BoxPlan {
    Shape shape;
    Dtype dtype = Dtype::uint8;
    std::vector<std::vector<Box>> rank_boxes;  // per rank: the boxes it moves, in order
    // A piece `part` of this rank's box number `box` to / from the host: part.elements()
    // elements in C order.
    std::function<void(std::size_t box, const Box& part, std::span<std::byte>)> fetch;
    std::function<void(std::size_t box, const Box& part, std::span<const std::byte>)> store;
  };
  void write_boxes(hid_t dataset, const std::string& name, const BoxPlan& plan,
                   const std::string& call);
  void read_boxes(hid_t dataset, const std::string& name, const BoxPlan& plan,
                  const std::string& call);
  void write_boxes_parallel(hid_t dataset, const std::string& name, const BoxPlan& plan,
                            const std::string& call);
  void read_boxes_parallel(hid_t dataset, const std::string& name, const BoxPlan& plan,
                           const std::string& call);
  void write_boxes_rank0(hid_t dataset, const std::string& name, const BoxPlan& plan,
                         const std::string& call);
  void read_boxes_rank0(hid_t dataset, const std::string& name, const BoxPlan& plan,
                        const std::string& call);

  // Rows, the case of one box of whole rows per rank (a DistArray's, or one rank's whole
  // dataset): moved as such a BoxPlan.
  struct RowPlan {
    Shape shape;
    Dtype dtype = Dtype::uint8;
    std::vector<RowRange> rank_rows;  // per rank: the rows it moves
    // This rank's rows [begin, end) to / from the host (bytes of whole rows).
    std::function<void(RowRange, std::span<std::byte>)> fetch;
    std::function<void(RowRange, std::span<const std::byte>)> store;
  };
  void write_rows(hid_t dataset, const std::string& name, const RowPlan& plan,
                  const std::string& call);
  void read_rows(hid_t dataset, const std::string& name, const RowPlan& plan,
                 const std::string& call);

  // H5Dread of `what` ("rows [4, 8)", hdf5_transfer.hpp's describe_box) of dataset `name`. A
  // chunk whose Fletcher32 checksum does not match (the file changed after it was written) is
  // named as such: HDF5 says so only deep in its stack (hdf5_verify.cpp).
  void read_checked(hid_t dataset, hid_t type, hid_t mem, hid_t space, hid_t dxpl, void* buffer,
                    const std::string& name, const std::string& what,
                    const std::string& call) const;
};

namespace internal {

// Creates (or, with overwrite, reopens) a dataset and writes Skein's and the user's attributes
// (hdf5_datasets.cpp).
Handle make_dataset(File::Impl& f, const std::string& name, const Shape& shape, Dtype dtype,
                    const WriteOptions& o, const Attributes& skein_attributes,
                    const std::string& call);

}  // namespace internal

}  // namespace skein::hdf5

#endif

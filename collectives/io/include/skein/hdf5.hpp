// SPDX-License-Identifier: BSD-3-Clause
// HDF5 files of distributed arrays, written and read by every rank together.
//
// A DistArray is stored as one HDF5 dataset of its global shape: each rank writes the rows its
// devices own (interior rows, never halos) as a hyperslab of the dataset, and reading selects the
// rows the *reading* array's layout owns. A GridArray the same way, each member's block a box
// (hyperslab) of the dataset. So a file does not remember how it was split: it can be
// read back with another number of ranks, devices or another row split, and by any HDF5 tool
// (h5py, h5dump) as a plain array.
//
//   auto f = skein::hdf5::File::create(comm, "out.h5");        // every rank
//   f.write("fields/u", u, {.step = step, .time = t});          // u: a DistArray
//   ...
//   auto g = skein::hdf5::File::open(comm, "out.h5");
//   g.read("fields/u", v);       // v: any layout, the same global shape and dtype
//
// Two ways to the file, chosen when it is opened:
//   - parallel: HDF5 built with MPI-IO (SKEIN_HAS_HDF5_PARALLEL). Every rank opens the file and
//     moves its own rows (or blocks) with collective MPI-IO transfers.
//   - through rank 0: HDF5 without MPI-IO (as on machines with the serial libhdf5), or asked for
//     with FileOptions::serial / SKEIN_HDF5_SERIAL=1. Only rank 0 opens the file; the other ranks
//     send it their rows (and receive theirs) piece by piece, so rank 0 never holds more than
//     FileOptions::max_bytes_per_call of them. Correct but slower; rank 0 says so once in the log.
// Both write the same file.
//
// Types (HDF5's native little-endian types, as h5py writes them):
//   int8 ... uint64, float32, float64  the matching HDF5 integer and IEEE float types
//   float16                            IEEE binary16 (a 2-byte H5T_FLOAT: sign 15, exponent
//                                      10-14, mantissa 0-9, bias 15): h5py reads it as float16
//   bfloat16                           a 2-byte H5T_FLOAT with bfloat16's fields (exponent 7-14,
//                                      mantissa 0-6, bias 127). Skein reads it back bit for bit;
//                                      HDF5 tools convert it like any float: h5dump prints the
//                                      values, h5py (NumPy has no bfloat16) reads it as float32,
//                                      exactly, since every bfloat16 is a float32
//   complex64, complex128              a compound {r, i} of two floats, as h5py writes complex
//                                      numbers: h5py reads it as complex
// Reading maps the file's type back (also for files made by other tools: any integer, 2-, 4- and
// 8-byte floats, compounds {r, i} or {real, imag}); a type with no Skein dtype is an error naming
// it.
//
// Attributes Skein writes (h5dump -A shows them):
//   on the file (root group)  skein_version ("0.1.0"), skein_format_version (format_version)
//   on each array's dataset   skein_dtype ("float32"), skein_global_shape ([rows, cols]),
//                             skein_layout (the writer's split, in words), skein_row_starts (the
//                             first row of each member's block, and the row count), and
//                             skein_step / skein_time when WriteOptions gives them
// plus any user attributes (WriteOptions::attributes, File::set_attribute).
//
// Checksums (WriteOptions::checksum, on by default): every dataset Skein creates carries HDF5's
// Fletcher32 filter, a 4-byte checksum per chunk that HDF5 checks on every read. A byte changed in
// the file after it was written (disk, copy, transfer) makes the read raise a RuntimeError on every
// rank naming the file and the dataset and saying that the checksum failed, instead of returning
// wrong values; h5py and h5dump check it too. checksum = false writes an unfiltered dataset,
// contiguous unless chunking or compression is asked for. HDF5 chunks neither 0-D (scalar) nor
// empty datasets: those stay contiguous, without a checksum.
//
// Chunking and compression (WriteOptions): filters (the checksum, deflate) need a chunked dataset,
// so without chunk_rows Skein picks chunks of about 1 MiB. Parallel HDF5 writes filtered
// datasets only with collective transfers and from 1.10.2 on: Skein's transfers are collective,
// and the element types in memory are the file's, so HDF5 never falls back to independent ones.
// A parallel HDF5 older than 1.10.2 refuses filtered writes, the default checksum included (a
// RuntimeError naming the dataset and HDF5's reason): write with checksum = false and without
// compression there, or through rank 0.
//
// Every call marked collective must be made by every rank of the file's communicator in the same
// order with the same arguments. The ranks compare a fingerprint of each call first, so a
// mismatch raises LogicError on every rank instead of hanging in MPI-IO; an error on one rank
// (a file that cannot be created, a device transfer that failed) is shared, and every rank raises
// (the rank where it happened its own error, the others one naming that rank and its message).
// HDF5's own error printing is turned off during Skein's calls: its error stack becomes part of
// the RuntimeError's message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "skein/array.hpp"
#include "skein/config.hpp"
#include "skein/dist_array.hpp"
#include "skein/dtype.hpp"
#include "skein/export.hpp"

#if SKEIN_HAS_MPI
#include <mpi.h>
#endif

namespace skein {

class Communicator;
class GridArray;

namespace hdf5 {

// The version of the attributes and type mappings described above (skein_format_version). A later
// Skein that changes them writes a higher number and still reads this one.
inline constexpr std::int64_t format_version = 1;

// Whether this build of Skein has HDF5 at all, and with MPI-IO.
SKEIN_EXPORT bool available();
SKEIN_EXPORT bool parallel_available();
// "HDF5 1.10.8 (parallel, MPI-IO)" or why there is none.
SKEIN_EXPORT std::string library_description();

// Attribute values: what HDF5 tools show as a scalar or a 1-D array of integers or floats, or a
// string (stored as variable-length UTF-8, which h5py reads as str).
using AttributeValue =
    std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>, std::vector<double>>;
using Attributes = std::map<std::string, AttributeValue>;
// "42", "0.5", "\"text\"", "[1, 2, 3]", for messages and logs.
SKEIN_EXPORT std::string to_string(const AttributeValue& value);

enum class Access { read_only, read_write };

struct FileOptions {
  // Every transfer goes through rank 0 even where HDF5 has MPI-IO (SKEIN_HDF5_SERIAL=1 does the
  // same for every file). Without MPI-IO in HDF5 this is the only way, and is taken by itself.
  bool serial = false;
  // The most bytes one rank moves in one HDF5 transfer (and, through rank 0, in one message):
  // bounds the host memory used beside the arrays and keeps MPI-IO's counts below 2^31. Every
  // rank must pass the same value. At least one row always moves.
  std::size_t max_bytes_per_call = std::size_t{256} << 20;
};

struct WriteOptions {
  // Rows per chunk (the chunk spans all columns). 0: rows for about 1 MiB per chunk when the
  // checksum or compression needs chunks, else a contiguous dataset. Clamped to the rows there are.
  std::size_t chunk_rows = 0;
  // HDF5's Fletcher32 checksum filter on the dataset's chunks (see above); false: no checksum.
  bool checksum = true;
  // Deflate (gzip) level 1 to 9; 0: no compression.
  int compression = 0;
  // The shuffle filter before deflate (groups the bytes of each element: compresses floats
  // better). Only with compression.
  bool shuffle = true;
  // Simulation step and time, stored as skein_step / skein_time on the dataset.
  std::optional<std::int64_t> step{};
  std::optional<double> time{};
  // User attributes of the dataset (names starting with "skein_" are Skein's and refused).
  Attributes attributes{};
  // Whether an existing dataset of the same name, global shape and dtype may be written over
  // (Skein's attributes and the ones given here are rewritten, a step or time not given here is
  // removed, other user attributes stay); otherwise an existing name is an error.
  bool overwrite = false;
};

// What a dataset holds, from the file.
struct SKEIN_EXPORT DatasetInfo {
  std::string name{};
  Shape shape{};
  Dtype dtype = Dtype::uint8;
  std::size_t chunk_rows = 0;  // 0: not chunked
  int compression = 0;         // deflate level; 0: none
  bool checksum = false;       // whether the chunks carry a Fletcher32 checksum
  std::optional<std::int64_t> step{};
  std::optional<double> time{};
  std::string layout{};     // skein_layout: how the writer split the rows ("" if not Skein's)
  Attributes attributes{};  // every attribute HDF5 can show as an AttributeValue, skein_* included
  // "u: float64 (1000, 7), chunks of 64 rows, deflate 4, fletcher32, step 10, time 0.5"
  std::string describe() const;
};

// An HDF5 file open on every rank of a communicator (or on rank 0 only, see above). Move-only.
// close() and the destructor close it: collective, like every call that touches the file.
// Threads: one thread at a time per File, as for the MPI communicator it duplicates (its state is
// not locked), and creating or opening one over a Communicator is a call on that Communicator.
// Skein takes no lock around HDF5, which is thread-safe only when built so, so unless yours is,
// no two threads may be in HDF5 at once: not two Files, a File and a CheckpointManager, or a File
// and the application's own HDF5 calls (Skein also switches HDF5's error printing during a call).
class SKEIN_EXPORT File {
 public:
  // Collective. Creates the file (replacing an existing one) and writes the root attributes
  // skein_version and skein_format_version. Over the ranks of `comm` (the ranks of the arrays
  // written to it) or of an MPI communicator, which must be the arrays' ranks in the same order.
  static File create(Communicator& comm, const std::string& path, FileOptions options = {});
  // Collective. Opens an existing file.
  static File open(Communicator& comm, const std::string& path, Access access = Access::read_only,
                   FileOptions options = {});
#if SKEIN_HAS_MPI
  static File create(MPI_Comm comm, const std::string& path, FileOptions options = {});
  static File open(MPI_Comm comm, const std::string& path, Access access = Access::read_only,
                   FileOptions options = {});
#endif

  File(File&&) noexcept;
  File& operator=(File&&) noexcept;
  // Closes the file if it is open (collective then). Never throws: errors go to the log; call
  // close() to see them as exceptions.
  ~File();

  const std::string& path() const;
  bool is_open() const;
  // True when every rank reads and writes through MPI-IO; false when through rank 0.
  bool parallel() const;
  // This process's rank and the number of ranks of the file's communicator.
  int rank() const;
  int ranks() const;

  // Collective: the distributed array's global array as dataset `name` ("u", or "fields/u":
  // groups are created as needed). Each rank writes its own rows from its devices.
  void write(const std::string& name, const DistArray& array, const WriteOptions& options = {});
  // Collective: dataset `name` into an existing distributed array of any layout, of the dataset's
  // global shape and dtype (else LogicError naming both). Fills the interior rows; halo rows are
  // left as they were (call exchange_halos()).
  void read(const std::string& name, const DistArray& array);

  // Collective: a GridArray's global array (its layout's global_shape(): the points' axes, then
  // the components axis when there is one) as dataset `name`; halos are not written. Each member's
  // block (its points, the components axis whole) is a hyperslab of it, so h5py reads it whole.
  // Each rank stages its own members' blocks on its host, in pieces of at most
  // FileOptions::max_bytes_per_call bytes: on the parallel path it writes them itself with
  // collective MPI-IO transfers (a rank whose members own no points takes part with an empty
  // selection); through rank 0 it sends them to rank 0, which writes one piece at a time, so no
  // rank holds the whole array (hdf5_grid.cpp). Every WriteOptions applies, on both paths: chunks
  // of chunk_rows along the first axis, the checksum, deflate and shuffle. Attributes as for
  // DistArrays, skein_layout holding GridLayout::describe() (no skein_row_starts).
  void write(const std::string& name, const GridArray& array, const WriteOptions& options = {});
  // Collective: dataset `name` into a GridArray of any layout (another process grid, another number
  // of ranks) of the dataset's shape and dtype (else LogicError naming both, on every rank). Each
  // rank reads its own members' hyperslabs (through rank 0: rank 0 reads them and sends them on,
  // piece by piece). Fills every block's points; halos are left as they were (call
  // exchange_halos()).
  void read(const std::string& name, const GridArray& array);

  // Collective: a replicated array, from rank 0's first device.
  void write(const std::string& name, const ReplicatedArray& array,
             const WriteOptions& options = {});
  // Collective: into every device of every rank.
  void read(const std::string& name, const ReplicatedArray& array);

  // Collective: host data of rank `root_rank` (the other ranks' `data` is not read) as a dataset
  // of `shape`: by default 1-D with the root's element count; Shape{} makes a scalar (0-D) one.
  void write_host(const std::string& name, std::span<const std::byte> data,
                  const std::optional<Shape>& shape, Dtype dtype, int root_rank = 0,
                  const WriteOptions& options = {});
  template <class T>
  void write_host(const std::string& name, std::span<const T> data,
                  const std::optional<Shape>& shape = std::nullopt, int root_rank = 0,
                  const WriteOptions& options = {}) {
    write_host(name, std::as_bytes(data), shape, dtype_of<T>, root_rank, options);
  }
  template <class T>
  void write_host(const std::string& name, const std::vector<T>& data,
                  const std::optional<Shape>& shape = std::nullopt, int root_rank = 0,
                  const WriteOptions& options = {}) {
    write_host(name, std::span<const T>(data), shape, root_rank, options);
  }
  // Collective: the whole dataset on every rank's host (row-major), in its own dtype.
  std::vector<std::byte> read_host_bytes(const std::string& name);
  // The same as T, which must be the dataset's dtype (else LogicError naming both).
  template <class T>
  std::vector<T> read_host(const std::string& name) {
    const std::vector<std::byte> bytes = read_host_bytes_as(name, dtype_of<T>);
    std::vector<T> out(bytes.size() / sizeof(T));
    if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }

  // Collective: what a dataset holds (the same on every rank).
  DatasetInfo info(const std::string& name);
  // Collective: whether `name` is a dataset in the file.
  bool exists(const std::string& name);
  // Collective: the names of the datasets under a group (recursively, as "group/name"), sorted.
  std::vector<std::string> datasets(const std::string& group = "/");

  // Collective: sets (or replaces) an attribute of a dataset or group ("/" is the file). Every
  // rank must pass the same value (checked).
  void set_attribute(const std::string& object, const std::string& name,
                     const AttributeValue& value);
  // Collective: the attributes of a dataset or group that HDF5 can show as AttributeValues.
  Attributes attributes(const std::string& object = "/");
  // Collective: one attribute, nullopt when the object has none of that name.
  std::optional<AttributeValue> attribute(const std::string& object, const std::string& name);

  // Collective: pushes HDF5's buffers to the file (H5Fflush; on the parallel path that includes
  // MPI_File_sync, which asks the file system to store every rank's data). CheckpointManager
  // also fsync()s its files.
  void flush();
  // Collective: closes the file; the File is empty afterwards (is_open() false).
  void close();

  struct Impl;

 private:
  explicit File(std::unique_ptr<Impl> impl);
  std::vector<std::byte> read_host_bytes_as(const std::string& name, std::optional<Dtype> expected);
  Impl& checked(const char* call) const;

  std::unique_ptr<Impl> impl_;
};

}  // namespace hdf5
}  // namespace skein

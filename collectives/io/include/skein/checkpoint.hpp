// SPDX-License-Identifier: BSD-3-Clause
// Checkpoint and restart of distributed arrays, safe against a job killed at any moment.
//
// A checkpoint of step N is one HDF5 file (see <skein/hdf5.hpp>) in the checkpoint directory,
// made in this order:
//   1. written as  DIR/.checkpoint-<N>.h5.tmp        (every rank its rows; root attributes
//                                                       skein_checkpoint_step / _time and the
//                                                       user's attributes)
//   2. flushed and closed (MPI_File_sync on the parallel path), fsync()ed by rank 0
//   3. renamed to  DIR/checkpoint-<N>.h5              and the directory fsync()ed
//   4. the completion marker DIR/checkpoint-<N>.done  JSON: step, time, file name, size, SHA-256
//      of the file, the arrays' dtypes and shapes;     written as a temporary, fsync()ed, renamed
//   5. older checkpoints pruned to the newest `keep`  (marker first, then file)
// (N is zero-padded to 10 digits so that names sort by step.) A checkpoint is *complete* when its
// marker exists: a job killed before step 4 leaves at most a temporary or an unmarked file,
// which restarts ignore and the next write of that step replaces.
//
//   skein::CheckpointManager checkpoints(comm, "run/checkpoints", {.keep = 3});
//   const skein::CheckpointArrays arrays = {{"u", u}, {"v", v}};   // DistArray / ReplicatedArray /
// GridArray
//   std::int64_t step = 0;
//   if (auto restored = checkpoints.restore_latest(arrays)) step = restored->step;
//   for (++step; step <= last; ++step) {
//     advance(u, v);
//     checkpoints.write(step, t, arrays, {{"dt", dt}});
//   }
//
// Restart: latest_complete() takes the newest checkpoint that has a marker and checks its file
// against it (size and SHA-256, which reads the whole file on rank 0). A file that does not match
// (truncated, changed, damaged) is refused with a CheckpointError naming the file and what did not
// match; with OnCorrupt::fall_back the manager says so in the log (a warning of rank 0, see
// <skein/log.hpp>) and takes the next older one instead. Restarting is the application's choice, so
// refusing is the default: a silent step back could hide lost work. Rank 0 decides and broadcasts,
// so every rank restarts from the same one.
//
// Arrays are restored into arrays of any layout (another number of ranks or devices than wrote
// them) with the same global shape and dtype. The bytes are the ones written, so a run restarted
// from a checkpoint continues bit for bit like the uninterrupted run. A GridArray is stored as its
// global array (GridLayout::global_shape(), components last) and restores onto any GridLayout of
// that shape: another process grid, another number of ranks or devices (its halos are not
// written: exchange_halos() after a restore). Every array is one global dataset, so an array
// written as one kind may be restored into another of the same shape and dtype (a DistArray's
// checkpoint into a GridArray, say). A target of another global shape or dtype than the
// checkpoint's raises LogicError on every rank before anything is read.
//
// The directory must be one every rank sees at the same path (a shared file system) on the
// parallel HDF5 path; through rank 0 only rank 0 touches it. One job writes to a directory at a
// time. Every call is collective over the manager's communicator.
//
// The tests of the above kill a rank after each stage of a write (tests/collectives/
// checkpoint_main.cpp, through an observer of the stages that is not part of the public
// interface); CheckpointOptions::after_stage is the public hook, on rank 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "skein/config.hpp"
#include "skein/dist_array.hpp"
#include "skein/error.hpp"
#include "skein/export.hpp"
#include "skein/grid_array.hpp"
#include "skein/hdf5.hpp"

#if SKEIN_HAS_MPI
#include <mpi.h>
#endif

namespace skein {

// A checkpoint that cannot be used: its file does not match its completion marker (truncated,
// changed or damaged after it was written), the file is missing, or the marker is unreadable. The
// message names the files and what did not match.
class SKEIN_EXPORT CheckpointError : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};

// The arrays of a checkpoint, by name (the names of the HDF5 datasets).
using CheckpointArray = std::variant<DistArray, ReplicatedArray, GridArray>;
using CheckpointArrays = std::map<std::string, CheckpointArray>;

// The version of the marker's JSON ("format_version").
inline constexpr int checkpoint_format_version = 1;

struct CheckpointInfo {
  struct ArrayEntry {
    Dtype dtype = Dtype::uint8;
    Shape shape{};
    bool replicated = false;  // written from a ReplicatedArray (marker kind "replicated")
    bool grid = false;        // written from a GridArray (kind "grid"; else "distributed")
    friend bool operator==(const ArrayEntry&, const ArrayEntry&) = default;
  };
  std::int64_t step = 0;
  double time = 0;
  std::filesystem::path file{};    // DIR/checkpoint-<step>.h5
  std::filesystem::path marker{};  // DIR/checkpoint-<step>.done
  std::uint64_t bytes = 0;         // of the file
  std::string sha256{};            // of the file, lower-case hex
  int ranks = 0;                   // that wrote it
  std::map<std::string, ArrayEntry> arrays{};
  // The user attributes given to write(): in write()'s and restore()'s results (from the file);
  // empty in list()'s and latest_complete()'s, which read only markers.
  hdf5::Attributes attributes{};
};

// The stages of a checkpoint write (see the top of this file), for the after_stage hook.
enum class CheckpointStage {
  created,  // the temporary file exists (collectively created), no array written yet
  written,  // every array is in the temporary file, which is not yet closed or synced
  renamed,  // the file is synced and has its final name, but there is no marker yet
  marked,   // the marker is written (the checkpoint is complete), older ones not yet pruned
};
SKEIN_EXPORT std::string_view name(CheckpointStage stage);

enum class OnCorrupt {
  refuse,     // latest_complete() raises CheckpointError
  fall_back,  // says so in the log (rank 0) and takes the next older complete checkpoint
};

struct CheckpointOptions {
  // How many complete checkpoints to keep (the newest); 0 keeps them all.
  std::size_t keep = 2;
  OnCorrupt on_corrupt = OnCorrupt::refuse;
  // How the files are opened (the path through rank 0, transfer sizes).
  hdf5::FileOptions file{};
  // Chunking and compression of the arrays' datasets. Its step, time and attributes are unused:
  // write() sets the step and time, and takes the user attributes separately.
  hdf5::WriteOptions write{};
  // Called on rank 0 after each stage of every write, with the step (for tests: throwing here
  // abandons the write at that point, as a crash would, but leaves the process running).
  std::function<void(CheckpointStage, std::int64_t step)> after_stage{};
};

// Threads: as hdf5::File, which it uses: one thread at a time per manager (its state is not
// locked), no other HDF5 use at the same time unless HDF5 is built thread-safe, and its creation
// over a Communicator is a call on that Communicator; after_stage runs on the thread calling
// write().
class SKEIN_EXPORT CheckpointManager {
 public:
  // Collective: over the ranks of `comm` (the arrays' communicator) or an MPI communicator that
  // has the arrays' ranks in the same order. Rank 0 creates the directory if needed.
  CheckpointManager(Communicator& comm, std::filesystem::path directory,
                    CheckpointOptions options = {});
#if SKEIN_HAS_MPI
  CheckpointManager(MPI_Comm comm, std::filesystem::path directory, CheckpointOptions options = {});
#endif
  ~CheckpointManager();
  CheckpointManager(CheckpointManager&&) noexcept;
  CheckpointManager& operator=(CheckpointManager&&) noexcept;

  const std::filesystem::path& directory() const;
  const CheckpointOptions& options() const;

  // Collective: writes the checkpoint of `step` (>= 0) with the arrays and user attributes
  // (stored on the file's root group; names starting with skein_ are refused), then prunes. A
  // complete checkpoint of the same step is replaced (its marker goes first).
  CheckpointInfo write(std::int64_t step, double time, const CheckpointArrays& arrays,
                       const hdf5::Attributes& attributes = {});

  // Collective: the complete checkpoints (those with a readable marker), oldest first. Their
  // files are not checked (that reads them): latest_complete() and verify() do.
  std::vector<CheckpointInfo> list();
  // Collective: the newest complete checkpoint whose file matches its marker; nullopt when there
  // is none. See OnCorrupt for a newest one that does not match.
  std::optional<CheckpointInfo> latest_complete();
  // Collective: checks the checkpoint of `step` against its marker (CheckpointError when its
  // marker or file is missing or does not match).
  CheckpointInfo verify(std::int64_t step);
  // Collective: reads a checkpoint's arrays into `arrays` (every name must be in the checkpoint,
  // with its global shape and dtype; any layout). Returns its info with the user attributes.
  // The file is checked against the marker's size, not its checksum (latest_complete() and
  // verify() did that).
  CheckpointInfo restore(const CheckpointInfo& checkpoint, const CheckpointArrays& arrays);
  // Collective: restore(latest_complete()), or nullopt (nothing read) when there is none.
  std::optional<CheckpointInfo> restore_latest(const CheckpointArrays& arrays);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace skein

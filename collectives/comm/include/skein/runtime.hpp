// SPDX-License-Identifier: BSD-3-Clause
// The per-rank runtime: MPI (initialised by Skein, or adopted from the simulation code), the
// rank's place on its node, and the devices that belong to this rank.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skein/api.hpp"
#include "skein/config.hpp"
#include "skein/context.hpp"
#include "skein/export.hpp"

#if SKEIN_HAS_MPI
#include <mpi.h>
#endif

namespace skein {

// How a rank chooses its devices. Each field left empty is taken from the environment:
//   SKEIN_API               cuda | opencl (default: CUDA when available, else OpenCL)
//   SKEIN_DEVICES           comma-separated regular expressions on device names
//   SKEIN_DEVICES_PER_RANK  devices per rank (default: the node's devices shared out evenly)
//   SKEIN_DEVICE            index of this rank's first device among the node's matching devices
//                           (PyCUDA's CUDA_DEVICE; overrides the even share-out)
//   SKEIN_SHARE_DEVICES     1: ranks may share devices (otherwise two ranks never do)
// CUDA_VISIBLE_DEVICES and Slurm's GPU binding act before Skein sees the devices: a rank that sees
// one GPU uses it. An invalid value raises LogicError naming the variable.
struct SKEIN_EXPORT PlacementOptions {
  std::optional<ApiId> api{};
  std::optional<std::vector<std::string>> device_masks{};
  std::optional<std::size_t> devices_per_rank{};
  std::optional<std::size_t> device_index{};
  std::optional<bool> share_devices{};

  // Fills the empty fields from the environment (throws LogicError for an invalid value).
  static PlacementOptions from_environment(PlacementOptions given);
  // The environment's choices alone. (Not a default argument of the call above: GCC cannot use
  // the members' default initializers as one before the end of the class.)
  static PlacementOptions from_environment();
};

inline PlacementOptions PlacementOptions::from_environment() {
  return from_environment(PlacementOptions{});
}

// Where one rank runs and what it uses.
struct RankPlacement {
  int rank = 0;
  std::string host{};
  int local_rank = 0;
  int local_size = 1;
  std::vector<std::string> devices{};     // descriptions, e.g. "CUDA device 1 (NVIDIA H200)"
  std::vector<std::string> device_ids{};  // PCI bus ids where known, else platform:index
};

// This rank's runtime. Not copyable.
// Threads: once constructed it never changes, so its accessors may be called from any number of
// threads at once. The MPI constructors and the destructor make collective MPI calls (and the
// destructor MPI_Finalize when Skein initialised MPI, which MPI wants on the thread that
// initialised it): construct and destroy it on one thread, the one that initialises MPI.
class SKEIN_EXPORT Runtime {
 public:
  // Single-rank runtime without MPI (also what a build without MPI offers).
  explicit Runtime(PlacementOptions options = {});
#if SKEIN_HAS_MPI
  // Initialises MPI unless it is already initialised; then works on MPI_COMM_WORLD.
  Runtime(int* argc, char*** argv, PlacementOptions options = {});
  // Adopts the simulation code's MPI and works on `comm` (e.g. a sub-communicator). MPI must be
  // initialised; Skein will not finalise it.
  explicit Runtime(MPI_Comm comm, PlacementOptions options = {});
  // Skein's own duplicate of the communicator (MPI_COMM_SELF when the runtime does not use MPI):
  // Skein's messages never mix with the application's.
  MPI_Comm comm() const;
  // The thread support MPI gave (MPI_THREAD_*): what MPI_Init_thread returned when Skein
  // initialised MPI (it asks for MPI_THREAD_MULTIPLE, so that each Communicator's watchdog thread
  // can compare the ranks' NCCL calls while the application runs), else what MPI_Query_thread
  // says. Below MPI_THREAD_MULTIPLE the calling thread compares them at the next call.
  int mpi_thread_level() const;
#endif
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  int rank() const;
  int size() const;
  int local_rank() const;
  int local_size() const;
  const std::string& host() const;
  bool uses_mpi() const;
  bool initialised_mpi() const;  // whether Skein called MPI_Init (and will call MPI_Finalize)

  // This rank's devices, in one context.
  const Context& context() const;
  // Every rank's placement, gathered (the same on every rank).
  const std::vector<RankPlacement>& placement() const;
  // The rank -> host -> devices map as a table, for logs and skein-info --ranks.
  std::string placement_table() const;


 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace skein

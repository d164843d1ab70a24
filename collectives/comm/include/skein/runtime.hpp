// SPDX-License-Identifier: BSD-3-Clause
// The per-rank runtime: MPI (initialised by Skein, or adopted from the simulation code), the
// rank's place on its node, and the devices that belong to this rank.
#pragma once

#include <concepts>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skein/api.hpp"
#include "skein/config.hpp"
#include "skein/context.hpp"
#include "skein/export.hpp"
#include "skein/log.hpp"

#if SKEIN_HAS_MPI
#include <mpi.h>
#endif

namespace skein {

// How a rank chooses its devices. Each field left empty is taken from the environment (a field
// given in code wins over its variable, unlike CommunicatorOptions and RuntimeOptions::log_level,
// whose variables override the code: placement kept the rule it had before those existed):
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

// The Runtime's settings in code, for the designated initializers of its constructors:
//   skein::Runtime runtime(&argc, &argv, {.placement = {.devices_per_rank = 1},
//                                         .log_level = skein::LogLevel::info});
//   placement  how the rank chooses its devices (PlacementOptions: a field left empty is taken from
//              its variable, a field given here wins over it)
//   log_level  Skein's log level (<skein/log.hpp>), set when the Runtime is made; empty leaves the
//              level as it is. SKEIN_LOG_LEVEL, when set, overrides it.
// Runtime::options() gives the settings in effect.
struct RuntimeOptions {
  PlacementOptions placement{};
  std::optional<LogLevel> log_level{};
};

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
  // Each constructor takes PlacementOptions (as before RuntimeOptions existed) or RuntimeOptions.
  // The RuntimeOptions ones are templates only so that a call with `{}`, or with PlacementOptions'
  // fields in braces, still chooses the PlacementOptions one (a non-template wins a tie) instead of
  // being ambiguous; they take nothing but a RuntimeOptions.

  // Single-rank runtime without MPI (also what a build without MPI offers).
  explicit Runtime(PlacementOptions options = {});
  template <std::same_as<RuntimeOptions> Options = RuntimeOptions>
  explicit Runtime(const Options& options) : Runtime(WithOptions{}, options) {}
#if SKEIN_HAS_MPI
  // Initialises MPI unless it is already initialised; then works on MPI_COMM_WORLD.
  Runtime(int* argc, char*** argv, PlacementOptions options = {});
  template <std::same_as<RuntimeOptions> Options = RuntimeOptions>
  Runtime(int* argc, char*** argv, const Options& options)
      : Runtime(WithOptions{}, argc, argv, options) {}
  // Adopts the simulation code's MPI and works on `comm` (e.g. a sub-communicator). MPI must be
  // initialised; Skein will not finalise it.
  explicit Runtime(MPI_Comm comm, PlacementOptions options = {});
  template <std::same_as<RuntimeOptions> Options = RuntimeOptions>
  Runtime(MPI_Comm comm, const Options& options) : Runtime(WithOptions{}, comm, options) {}
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
  // The settings in effect: the placement options with the environment's values filled in, and
  // the log level in effect when the Runtime was made.
  const RuntimeOptions& options() const;

 private:
  struct WithOptions {};
  Runtime(WithOptions, const RuntimeOptions& options);
#if SKEIN_HAS_MPI
  Runtime(WithOptions, int* argc, char*** argv, const RuntimeOptions& options);
  Runtime(WithOptions, MPI_Comm comm, const RuntimeOptions& options);
#endif
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace skein

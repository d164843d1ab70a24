// SPDX-License-Identifier: BSD-3-Clause
// The set-ups the distributed-array MPI tests share (dist_array, dist_ops, hdf5 and checkpoint
// tests): the devices the suite runs on, the two ways of placing them (the Runtime's own
// placement, exactly two devices per rank) and a scratch directory every rank sees; with them the
// checks for errors (checks.hpp) and for agreement between ranks (mpi_support.hpp).
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <skein/communicator.hpp>
#include <skein/runtime.hpp>
#include <skein/skein.hpp>
#include <span>
#include <string>
#include <vector>

#include "checks.hpp"
#include "mpi_support.hpp"

namespace skein::test {

// The API the suite runs on, as the Runtime picks it: CUDA where SKEIN_API=cuda (the GPU
// machines run the suite over NCCL that way), else OpenCL (PoCL in CI).
inline ApiId suite_api() {
  const char* api = std::getenv("SKEIN_API");
  return api != nullptr && std::string(api) == "cuda" ? ApiId::cuda : ApiId::opencl;
}

// The devices of the first platform of `api` that has any (empty when none has). Throws when the
// API cannot be used at all.
inline std::vector<Device> platform_devices(ApiId api) {
  const auto found = platforms_and_devices_by_mask(Api::from_id(api), 1);
  if (found.empty()) return {};
  return found.front().second;
}

// The same for the suite's API, empty where it cannot be used at all.
inline std::vector<Device> suite_devices_or_none() {
  try {
    return platform_devices(suite_api());
  } catch (const Error&) {
    return {};
  }
}

// A communicator over this rank's devices, and the Runtime behind it where there is one.
struct Rig {
  std::unique_ptr<Runtime> runtime;
  std::unique_ptr<Communicator> comm;
  std::size_t M() const { return comm->size(); }        // members: the devices of every rank
  std::size_t L() const { return comm->local_size(); }  // this rank's
  int R() const { return world_size(); }
};

// The Runtime's own placement on MPI_COMM_WORLD: devices of its own per rank (4, 2, 1, 1 PoCL
// devices for 1, 2, 3, 4 ranks).
inline Rig runtime_rig() {
  Rig s;
  s.runtime = std::make_unique<Runtime>(MPI_COMM_WORLD);
  s.comm = std::make_unique<Communicator>(*s.runtime);
  return s;
}

// Exactly two of `devices` per rank: rank r takes devices 2r and 2r+1, modulo their count, so
// that ranks share devices where there are too few (which only the MPI backend allows).
inline Rig two_per_rank_rig(const std::vector<Device>& devices,
                            CollectiveBackend backend = CollectiveBackend::automatic) {
  Rig s;
  const std::size_t r = static_cast<std::size_t>(world_rank());
  const std::vector<Device> mine = {devices[(2 * r) % devices.size()],
                                    devices[(2 * r + 1) % devices.size()]};
  const Context context = Context::from_devices(std::span<const Device>(mine));
  s.comm = std::make_unique<Communicator>(MPI_COMM_WORLD, context, std::vector<std::size_t>{0, 1},
                                          backend);
  return s;
}

// Another layout than the Runtime's, to read into what was written on it: two devices per rank
// over the MPI backend (ranks may share devices here, which NCCL refuses); with fewer than two
// devices there is no second one to take, so another communicator over the Runtime's.
inline Rig another_layout_rig() {
  const auto devices = suite_devices_or_none();
  if (devices.size() < 2) return runtime_rig();
  return two_per_rank_rig(devices, CollectiveBackend::mpi);
}

// The two set-ups of the parameterised distributed-array suites, run over the devices of one API.
enum class Placement { runtime, two_per_rank };

inline std::string placement_name(const testing::TestParamInfo<Placement>& info) {
  return info.param == Placement::runtime ? "RuntimePlacement" : "TwoDevicesPerRank";
}

// Why `placement` cannot run with the devices of `api` on this many ranks (nullopt: it can). The
// Runtime gives each rank devices of its own; the other set-up takes two per rank, shared between
// ranks where there are too few, except on CUDA, where the default backend (NCCL) refuses one GPU
// in two members.
inline std::optional<std::string> placement_skip_reason(Placement placement, ApiId api) {
  const std::size_t devices = platform_devices(api).size();
  const auto ranks = static_cast<std::size_t>(world_size());
  if (placement == Placement::runtime && devices < ranks) return "needs an OpenCL device per rank";
  if (placement == Placement::two_per_rank && devices < 2) {
    return "needs an OpenCL platform with 2 devices";
  }
  if (placement == Placement::two_per_rank && api == ApiId::cuda && devices < 2 * ranks) {
    return "needs two GPUs per rank";
  }
  return std::nullopt;
}

// The rig of `placement` over the devices of `api`.
inline Rig placement_rig(Placement placement, ApiId api) {
  return placement == Placement::runtime ? runtime_rig() : two_per_rank_rig(platform_devices(api));
}

// A suite run once per placement (instantiated with testing::Values(Placement::runtime,
// Placement::two_per_rank) and placement_name) over the suite's devices: skipped where the
// placement cannot run; s_ is its rig.
class PlacementTest : public testing::TestWithParam<Placement> {
 protected:
  void SetUp() override {
    if (const auto why = placement_skip_reason(GetParam(), suite_api())) GTEST_SKIP() << *why;
    s_ = placement_rig(GetParam(), suite_api());
  }
  Rig s_;
};

// A scratch directory every rank sees (rank 0 makes it under /tmp, named after `prefix`), removed
// at the end once every rank is done with it.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix) {
    char name[256] = {};
    if (world_rank() == 0) {
      std::string pattern = "/tmp/" + prefix + "-XXXXXX";
      const char* made = mkdtemp(pattern.data());
      std::snprintf(name, sizeof name, "%s", made ? made : "");
    }
    MPI_Bcast(name, sizeof name, MPI_CHAR, 0, MPI_COMM_WORLD);
    path_ = name;
  }
  ~TempDir() {
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0 && !path_.empty()) std::filesystem::remove_all(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path sub(const std::string& name) const { return path_ / name; }
  std::string file(const std::string& name) const { return sub(name).string(); }

 private:
  std::filesystem::path path_;
};

// The checks (on_every_rank, expect_logic_error, expect_error) are in mpi_support.hpp and
// checks.hpp.

}  // namespace skein::test

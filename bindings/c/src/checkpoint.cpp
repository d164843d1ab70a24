// SPDX-License-Identifier: BSD-3-Clause
// skein_checkpoint_*: a skein::CheckpointManager writing grids under names and restoring the
// newest complete checkpoint. Builds without HDF5 or MPI answer SKEIN_ERROR_UNSUPPORTED.
#include <memory>
#include <string>

#include "errors.hpp"
#include "handles.hpp"
#include "skein/checkpoint.hpp"
#include "skein/config.h"

namespace skein::capi {

namespace {

CheckpointManager& manager_of(skein_checkpoint* checkpoints) {
  require(checkpoints, "checkpoints");
  return *checkpoints->manager;
}

CheckpointArrays named_grids(const char* const* names, const skein_grid* const* grids,
                             std::size_t count) {
  if (count == 0) {
    invalid("count is 0", "Pass at least one grid and its name.");
  }
  require(names, "names");
  require(grids, "grids");
  CheckpointArrays arrays;
  for (std::size_t i = 0; i < count; ++i) {
    // Appended piece by piece: GCC 12 takes "[" + std::to_string(i) for an overlapping copy
    // (a false -Wrestrict).
    std::string at = "[";
    at += std::to_string(i);
    at += "]";
    if (names[i] == nullptr) invalid("names" + at + " is NULL", "Name every grid.");
    if (grids[i] == nullptr)
      invalid("grids" + at + " is NULL", "Pass grids made by skein_grid_create.");
    if (!arrays.emplace(names[i], grids[i]->grid).second) {
      invalid(std::string("names") + at + " \"" + names[i] + "\" is given twice",
              "Give each grid a name of its own.");
    }
  }
  return arrays;
}

}  // namespace

}  // namespace skein::capi

using namespace skein::capi;

extern "C" {

skein_status skein_checkpoint_create(skein_communicator* comm, const char* directory, size_t keep,
                                     skein_checkpoint** checkpoints) {
  const char* function = "skein_checkpoint_create";
  return guard(function, [&] {
    need_hdf5(function);
    require(comm, "comm");
    require(directory, "directory");
    require(checkpoints, "checkpoints");
    skein::CheckpointOptions options;
    options.keep = keep;
    auto manager = std::make_unique<skein::CheckpointManager>(*comm->comm, directory, options);
    *checkpoints = new skein_checkpoint{std::move(manager)};
  });
}

skein_status skein_checkpoint_destroy(skein_checkpoint* checkpoints) {
  return guard("skein_checkpoint_destroy", [&] { delete checkpoints; });
}

skein_status skein_checkpoint_write(skein_checkpoint* checkpoints, int64_t step, double time,
                                    const char* const* names, const skein_grid* const* grids,
                                    size_t count) {
  return guard("skein_checkpoint_write", [&] {
    skein::CheckpointManager& m = manager_of(checkpoints);
    if (step < 0) invalid("step is " + std::to_string(step), "Pass a step >= 0.");
    m.write(step, time, named_grids(names, grids, count));
  });
}

skein_status skein_checkpoint_restore_latest(skein_checkpoint* checkpoints,
                                             const char* const* names,
                                             const skein_grid* const* grids, size_t count,
                                             int* restored, int64_t* step, double* time) {
  return guard("skein_checkpoint_restore_latest", [&] {
    skein::CheckpointManager& m = manager_of(checkpoints);
    require(restored, "restored");
    const auto info = m.restore_latest(named_grids(names, grids, count));
    *restored = info ? 1 : 0;
    if (info && step != nullptr) *step = info->step;
    if (info && time != nullptr) *time = info->time;
  });
}

}  // extern "C"

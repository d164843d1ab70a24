// SPDX-License-Identifier: BSD-3-Clause
// Checkpoints of skein-heat's run on a process grid (heat_checkpoint3d.hpp). The messages are the
// 2-D run's (main.cpp), so that scripts and people see the same words on both paths.
#include "heat_checkpoint3d.hpp"

#include <mpi.h>

#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "heat_errors.hpp"

namespace skein::heat {

namespace {

namespace fs = std::filesystem;

// Rank 0 does something with the file system; its outcome is shared so that every rank raises.
template <class F>
void grid_root_does(Communicator& comm, F&& f) {
  int rank = 0;
  MPI_Comm_rank(comm.mpi_comm(), &rank);
  int ok = 1;
  std::string message;
  if (rank == 0) {
    try {
      f();
    } catch (const std::exception& e) {
      ok = 0;
      message = e.what();
    }
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, comm.mpi_comm());
  if (!ok)
    throw RuntimeError(
        rank == 0 ? message : "rank 0 failed to prepare the output directory (see its message)");
}

// The newest complete checkpoint, checked against the options, or AgreedError on every rank.
CheckpointInfo latest_fitting(CheckpointManager& manager, const GridProblem& problem,
                              const fs::path& dir) {
  std::optional<CheckpointInfo> latest;
  try {
    latest = manager.latest_complete();
  } catch (const CheckpointError& e) {
    throw AgreedError(
        fmt::format("--restart: the newest checkpoint cannot be used: {}", e.info().what),
        fmt::format(
            "move the damaged checkpoint (its .h5 and .done files) out of {} to restart from "
            "the one before, or start again with --overwrite",
            dir.string()),
        2);
  }
  if (!latest) {
    throw AgreedError(
        fmt::format("--restart: there is no complete checkpoint in {}", dir.string()),
        "run without --restart first (with --checkpoint-every N), or give the --out of that run");
  }
  const auto entry = latest->arrays.find("u");
  if (entry == latest->arrays.end()) {
    throw AgreedError(
        fmt::format("--restart: the checkpoint {} has no array 'u': it is not skein-heat's",
                    latest->file.string()));
  }
  const Shape want(problem.n.begin(), problem.n.end());
  if (entry->second.shape != want || entry->second.dtype != problem.dtype) {
    throw AgreedError(
        fmt::format("--restart: the checkpoint {} holds a {} grid of {} ({}), but the options ask "
                    "for {} of {}",
                    latest->file.string(), to_string(entry->second.shape),
                    name(entry->second.dtype), problem.ndim() == 3 ? "z x y x x" : "rows x columns",
                    to_string(want), name(problem.dtype)),
        "give the same --nx, --ny, --nz and --dtype as the run that wrote it (any --grid and "
        "number "
        "of ranks)");
  }
  return *latest;
}

}  // namespace

hdf5::Attributes grid_attributes(const GridRunOptions& o, const GridProblem& p) {
  return {{"nx", static_cast<std::int64_t>(o.nx)},
          {"ny", static_cast<std::int64_t>(o.ny)},
          {"nz", static_cast<std::int64_t>(o.nz)},
          {"kx", static_cast<std::int64_t>(o.modes[0])},
          {"ky", static_cast<std::int64_t>(o.modes[1])},
          {"kz", static_cast<std::int64_t>(o.nz > 0 ? o.modes[2] : 0)},
          {"alpha", o.alpha},
          {"dt", p.dt},
          {"dtype", o.dtype},
          {"boundary", o.boundary},
          {"program", std::string("skein-heat")}};
}

GridStart prepare_grid_checkpoints(Communicator& comm, const GridRunOptions& o,
                                   const GridProblem& problem, const hdf5::Attributes& attributes,
                                   const GridArray& u, std::optional<CheckpointManager>& manager) {
  GridStart start;
  if (o.out.empty()) return start;
  const fs::path out_dir = o.out;
  const fs::path dir = out_dir / "checkpoints";
  grid_root_does(comm, [&] { fs::create_directories(out_dir); });
  CheckpointOptions options;
  options.keep = o.keep;
  manager.emplace(comm, dir, options);
  if (o.restart) {
    const CheckpointInfo latest = latest_fitting(*manager, problem, dir);
    CheckpointInfo restored = manager->restore(latest, {{"u", u}});
    // The same grid with other parameters would continue another problem: refuse that too.
    for (const char* key : {"kx", "ky", "kz", "alpha", "dt", "boundary"}) {
      const auto it = restored.attributes.find(key);
      const auto& want = attributes.at(key);
      if (it == restored.attributes.end() || it->second != want) {
        throw AgreedError(
            fmt::format("--restart: the checkpoint {} has {} = {}, the options give {}",
                        latest.file.string(), key,
                        it == restored.attributes.end() ? "(none)" : hdf5::to_string(it->second),
                        hdf5::to_string(want)),
            "give the same --modes, --mode-z, --alpha, --dt-factor, --boundary and grid as the run "
            "that wrote it");
      }
    }
    if (restored.step > o.steps) {
      throw AgreedError(
          fmt::format("--restart: the newest checkpoint is at step {}, past --steps {}",
                      restored.step, o.steps),
          "give --steps of at least the checkpoint's step");
    }
    start.step = restored.step;
    start.restored = std::move(restored);
    return start;
  }
  const auto old = manager->list();
  if (!old.empty()) {
    if (!o.overwrite) {
      throw AgreedError(fmt::format("{} holds checkpoints of an earlier run (newest: step {})",
                                    dir.string(), old.back().step),
                        "pass --restart to continue from it, --overwrite to start again (deletes "
                        "them), or another "
                        "--out");
    }
    grid_root_does(comm, [&] {
      for (const auto& c : old) {
        fs::remove(c.marker);  // the marker first: a checkpoint without one is incomplete
        fs::remove(c.file);
      }
    });
  }
  return start;
}

}  // namespace skein::heat

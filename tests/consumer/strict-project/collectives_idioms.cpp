// SPDX-License-Identifier: BSD-3-Clause
// The collectives' documented idioms (docs/guide.md's "Distributed arrays", "Domains over process
// grids", "Files: HDF5 and checkpoints", the headers' examples), each checked against the host:
// DistArray with a periodic Halo{...}, deterministic dist:: reductions, GridLayout from GridOptions
// given both ways, HDF5 files of distributed and grid arrays with WriteOptions{...}, and a
// CheckpointManager with CheckpointOptions{...} restored into fresh arrays.
#include "idioms.hpp"

#include <skein/skein.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace strict {
namespace {

std::vector<double> ramp(std::size_t n, std::size_t period) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<double>(i % period);
  return v;
}

double host_sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

void check_dist_array(skein::Communicator& comm, const skein::Queue& queue, int rank,
                      Checker& check) {
  const std::size_t rows = 23, cols = 6;
  const auto global = ramp(rows * cols, 13);
  const skein::DistArray u(comm, queue,
                           skein::BlockLayout::over(comm, {rows, cols}, skein::RowSplit::even(),
                                                    skein::Halo{.width = 1, .periodic = true}),
                           skein::Dtype::float64);
  u.scatter(global, /*root_rank=*/0);
  u.exchange_halos();
  // Periodic: the halo row above member 0's block is the last global row.
  for (const skein::LocalBlock& b : u.blocks()) {
    if (b.member != 0) continue;
    const auto with_halo = b.with_halo.get<double>();
    bool wrapped = with_halo.size() >= cols;
    for (std::size_t c = 0; wrapped && c < cols; ++c)
      wrapped = with_halo[c] == global[(rows - 1) * cols + c];
    check.expect(wrapped, "Halo{.width = 1, .periodic = true}");
  }
  check.expect(skein::dist::sum(u, {.deterministic = true}) == host_sum(global),
               "dist::sum {.deterministic = true}");
  const auto back = u.gather<double>(/*root_rank=*/0);
  if (rank == 0) check.expect(back == global, "DistArray scatter and gather");
}

void check_grid_and_hdf5(skein::Communicator& comm, const skein::Queue& queue, int rank,
                         const std::string& directory, Checker& check) {
  // Designated initializers (docs/examples/domains.cpp) ...
  const std::size_t nx = 14, ny = 10;
  const skein::GridLayout written =
      skein::GridLayout::over(comm, {nx, ny},
                              {.halo = {1},
                               .stencil = skein::Stencil::star,
                               .lower = {skein::Boundary::reflect(), skein::Boundary::periodic()},
                               .upper = {skein::Boundary::reflect(), skein::Boundary::periodic()}});
  const skein::GridArray a(comm, queue, written, skein::Dtype::float64);
  const auto global = ramp(nx * ny, 17);
  a.scatter(global, /*root_rank=*/0);
  const std::string path = directory + "/strict.h5";
  {
    auto f = skein::hdf5::File::create(comm, path);
    f.write("fields/a", a, {.step = 3, .time = 0.5});
    f.close();
  }
  // ... and member by member (the guide's "HDF5 of grid arrays").
  skein::GridOptions options;
  options.halo = {1};
  options.grid = {1, 0};  // another process grid: all members along the second axis
  const skein::GridArray b(comm, queue, skein::GridLayout::over(comm, {nx, ny}, options),
                           skein::Dtype::float64);
  auto g = skein::hdf5::File::open(comm, path);
  g.read("fields/a", b);
  const skein::hdf5::DatasetInfo info = g.info("fields/a");
  check.expect(info.step == 3 && info.time == 0.5, "WriteOptions{.step = 3, .time = 0.5}");
  const auto read = b.gather<double>(/*root_rank=*/0);
  if (rank == 0) check.expect(read == global, "GridArray through HDF5 onto another process grid");
  check.expect(skein::dist::sum(b) == host_sum(global), "dist::sum of a GridArray");
}

void check_checkpoints(skein::Communicator& comm, const skein::Queue& queue, int rank,
                       const std::string& directory, Checker& check) {
  const std::size_t rows = 19, cols = 4;
  const auto layout = skein::BlockLayout::over(comm, {rows, cols});
  const skein::DistArray u(comm, queue, layout, skein::Dtype::float64);
  const skein::GridArray g(comm, queue, skein::GridLayout::over(comm, {rows, cols}, {.halo = {1}}),
                           skein::Dtype::float64);
  const auto u0 = ramp(rows * cols, 7), g0 = ramp(rows * cols, 5);
  u.scatter(u0, 0);
  g.scatter(g0, 0);
  const std::string dir = directory + "/checkpoints";
  {
    skein::CheckpointManager checkpoints(comm, dir, {.keep = 3});
    const skein::CheckpointArrays arrays = {{"u", u}, {"g", g}};
    for (std::int64_t step = 1; step <= 4; ++step) {
      checkpoints.write(step, 0.25 * static_cast<double>(step), arrays, {{"dt", 0.25}});
    }
    check.expect(checkpoints.list().size() == 3, "CheckpointOptions{.keep = 3}");
  }
  // A restart into fresh arrays, of another layout.
  const skein::DistArray v(comm, queue,
                           skein::BlockLayout::over(comm, {rows, cols}, skein::RowSplit::even(),
                                                    skein::Halo{.width = 1}),
                           skein::Dtype::float64);
  const skein::GridArray h(comm, queue,
                           skein::GridLayout::over(comm, {rows, cols}, {.grid = {0, 1}}),
                           skein::Dtype::float64);
  skein::CheckpointManager restarted(comm, dir,
                                     {.keep = 3, .on_corrupt = skein::OnCorrupt::fall_back});
  std::int64_t step = 0;
  if (auto restored = restarted.restore_latest({{"u", v}, {"g", h}})) step = restored->step;
  check.expect(step == 4, "restore_latest finds the newest checkpoint");
  const auto vu = v.gather<double>(0);
  const auto hg = h.gather<double>(0);
  if (rank == 0) check.expect(vu == u0 && hg == g0, "a checkpoint restored bit for bit");
}

}  // namespace

void check_collectives(const skein::Runtime& runtime, const std::string& directory,
                       Checker& check) {
  skein::Communicator comm(runtime);
  const skein::Queue queue(comm.context());
  const int rank = runtime.rank();
  check_dist_array(comm, queue, rank, check);
  std::filesystem::create_directories(directory);  // every rank: the same path, idempotent
  check_grid_and_hdf5(comm, queue, rank, directory, check);
  check_checkpoints(comm, queue, rank, directory, check);
}

}  // namespace strict

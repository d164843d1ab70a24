// SPDX-License-Identifier: BSD-3-Clause
// skein-checkpoint-loop: a small deterministic simulation that checkpoints its distributed arrays
// after every step, for the kill-and-restart tests (tests/collectives/checkpoint_kill.cmake, and
// the application-level ones that kill a job in the middle of a checkpoint).
//
//   mpirun -np 4 skein-checkpoint-loop --dir DIR --steps N --out FILE
//          [--rows R] [--cols C] [--keep K] [--compress LEVEL] [--serial] [--fall-back]
//          [--kill [RANK@]W:STAGE]
//
// It resumes from the newest complete checkpoint in DIR when there is one (printing "resumed
// from step S"), else starts from the initial state ("fresh start"); then runs the steps up to N,
// writing checkpoint s after step s; then rank 0 writes the final arrays' bytes (u as float64,
// then n as int64, row-major) to FILE. So a run killed at any point and run again with the same
// arguments must end with a FILE bit-identical to an uninterrupted run's, also on another number
// of ranks. --kill makes rank RANK (0 by default) SIGKILL itself after stage STAGE (created,
// written, renamed, marked: see CheckpointStage; the last two happen on rank 0 alone) of its W-th
// checkpoint write (tests/support/checkpoint_kill.hpp): a job killed in the middle of a
// checkpoint, on demand.
//
// The update is a heat-like stencil with a nonlinear term on a periodic grid: each element needs
// its four neighbours (rows from the halo exchange, columns within the row), so a lost, repeated
// or mis-restored step, or a halo from the wrong step, changes every later value. It runs on the
// host from the blocks' bytes, so its results do not depend on the devices or the layout.
// Exit status: 0 done, 2 a Skein error (printed), 1 bad arguments.
#include <mpi.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <skein/checkpoint.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "checkpoint_kill.hpp"

namespace {

using namespace skein;

struct Args {
  std::string dir;
  std::string out;
  std::int64_t steps = 6;
  std::size_t rows = 64;
  std::size_t cols = 48;
  std::size_t keep = 2;
  int compress = 0;
  bool serial = false;
  bool fall_back = false;
  std::optional<test::CheckpointKill> kill;
};

bool parse(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (k == "--dir")
      a.dir = value();
    else if (k == "--out")
      a.out = value();
    else if (k == "--steps")
      a.steps = std::atoll(value().c_str());
    else if (k == "--rows")
      a.rows = static_cast<std::size_t>(std::atoll(value().c_str()));
    else if (k == "--cols")
      a.cols = static_cast<std::size_t>(std::atoll(value().c_str()));
    else if (k == "--keep")
      a.keep = static_cast<std::size_t>(std::atoll(value().c_str()));
    else if (k == "--compress")
      a.compress = std::atoi(value().c_str());
    else if (k == "--serial")
      a.serial = true;
    else if (k == "--fall-back")
      a.fall_back = true;
    else if (k == "--kill") {
      a.kill = test::parse_checkpoint_kill(value());
      if (!a.kill) return false;
    } else
      return false;
  }
  return !a.dir.empty() && !a.out.empty() && a.steps >= 0 && a.rows > 0 && a.cols > 0;
}

double initial(std::size_t r, std::size_t c) {
  return std::sin(0.1 * static_cast<double>(r)) * std::cos(0.2 * static_cast<double>(c)) +
         0.001 * static_cast<double>((r * 7 + c * 13) % 17);
}

// One step on this rank's blocks: u from its halo-framed block, n counts positive values per row.
void update(const DistArray& u, const DistArray& n, std::int64_t step) {
  u.exchange_halos();
  const std::size_t cols = u.layout().row_size();
  for (std::size_t l = 0; l < u.local_size(); ++l) {
    const RowRange rows = u.local_rows(l);
    if (rows.empty()) continue;
    const std::vector<double> h = u.local_with_halo(l).get<double>();  // rows.size() + 2 rows
    std::vector<double> next(rows.size() * cols);
    std::vector<std::int64_t> counts = n.local(l).get<std::int64_t>();
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const double* up = &h[i * cols];
      const double* row = &h[(i + 1) * cols];
      const double* down = &h[(i + 2) * cols];
      for (std::size_t c = 0; c < cols; ++c) {
        const double v = row[c];
        const double laplacian =
            up[c] + down[c] + row[(c + cols - 1) % cols] + row[(c + 1) % cols] - 4 * v;
        const double x = v + 0.1 * laplacian + 0.01 * std::sin(v * static_cast<double>(step));
        next[i * cols + c] = x;
        counts[i] += x > 0 ? 1 : 0;
      }
    }
    u.local(l).set(next);
    n.local(l).set(counts);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse(argc, argv, args)) {
    std::fprintf(
        stderr,
        "usage: skein-checkpoint-loop --dir DIR --steps N --out FILE [--rows R] [--cols C] "
        "[--keep K] [--compress LEVEL] [--serial] [--fall-back] [--kill [RANK@]W:STAGE]\n");
    return 1;
  }
  Runtime runtime(&argc, &argv);
  const bool root = runtime.rank() == 0;
  if (args.kill) test::install_checkpoint_kill(*args.kill, "checkpoint-loop");
  try {
    Communicator comm(runtime);
    DistArray u(comm, Shape{args.rows, args.cols}, Dtype::float64, RowSplit::even(), Halo{1, true});
    DistArray n(comm, Shape{args.rows}, Dtype::int64);
    CheckpointOptions options;
    options.keep = args.keep;
    options.on_corrupt = args.fall_back ? OnCorrupt::fall_back : OnCorrupt::refuse;
    options.file.serial = args.serial;
    options.write.compression = args.compress;
    CheckpointManager checkpoints(comm, args.dir, options);
    const CheckpointArrays arrays = {{"u", u}, {"n", n}};

    std::int64_t start = 0;
    if (const auto restored = checkpoints.restore_latest(arrays)) {
      start = restored->step;
      const auto it = restored->attributes.find("rows");
      if (it == restored->attributes.end() ||
          std::get<std::int64_t>(it->second) != static_cast<std::int64_t>(args.rows)) {
        if (root)
          std::fprintf(stderr,
                       "checkpoint-loop: the checkpoint's 'rows' attribute does not match\n");
        return 2;
      }
      if (root)
        std::printf("resumed from step %lld on %d rank(s)\n", static_cast<long long>(start),
                    runtime.size());
    } else {
      const RowRange mine = u.rank_rows();
      std::vector<double> rows;
      for (std::size_t r = mine.begin; r < mine.end; ++r) {
        for (std::size_t c = 0; c < args.cols; ++c) rows.push_back(initial(r, c));
      }
      u.scatter_local(rows);
      n.fill_zero();
      if (root) std::printf("fresh start on %d rank(s)\n", runtime.size());
    }
    std::fflush(stdout);

    for (std::int64_t step = start + 1; step <= args.steps; ++step) {
      update(u, n, step);
      checkpoints.write(step, 0.01 * static_cast<double>(step), arrays,
                        {{"rows", static_cast<std::int64_t>(args.rows)},
                         {"program", std::string("skein-checkpoint-loop")}});
    }

    const auto final_u = u.gather<double>(0);
    const auto final_n = n.gather<std::int64_t>(0);
    if (root) {
      std::ofstream out(args.out, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(final_u.data()),
                static_cast<std::streamsize>(final_u.size() * sizeof(double)));
      out.write(reinterpret_cast<const char*>(final_n.data()),
                static_cast<std::streamsize>(final_n.size() * sizeof(std::int64_t)));
      if (!out) {
        std::fprintf(stderr, "checkpoint-loop: cannot write %s\n", args.out.c_str());
        return 2;
      }
      std::printf("done: %lld steps, %zu checkpoint(s) kept\n", static_cast<long long>(args.steps),
                  checkpoints.list().size());
    } else {
      (void)checkpoints.list();  // collective
    }
    return 0;
  } catch (const CheckpointError& e) {
    std::fprintf(stderr, "checkpoint-loop: rank %d: CheckpointError: %s\n", runtime.rank(),
                 e.what());
    return 2;
  } catch (const skein::Error& e) {
    std::fprintf(stderr, "checkpoint-loop: rank %d: %s\n", runtime.rank(), e.what());
    return 2;
  }
}

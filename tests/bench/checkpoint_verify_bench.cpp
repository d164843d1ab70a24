// SPDX-License-Identifier: BSD-3-Clause
// How long verifying a checkpoint takes (CheckpointManager::verify: the file read back and its
// SHA-256 compared with the marker's), beside `sha256sum` of the same file as the peer, in one run:
//   skein-bench-checkpoint-verify [--gib G] [--dir D] [--repeat R]
// Writes one checkpoint of a float64 DistArray of G GiB (default 1) into D, verifies it R times
// (default 3; the file is in the page cache after the write, as it is for both), then runs
// `sha256sum` on it R times, and prints the best times and the ratio. Checks that both digests
// are the same.
#include <skein_cli/cli.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "skein/skein.hpp"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  double gib = 1.0;
  std::string dir = "checkpoint-verify-bench";
  int repeat = 3;
  skein::cli::Parser app(
      "Times CheckpointManager::verify against sha256sum on one checkpoint file");
  app.add_option("--gib", gib, "size of the array in GiB").positive();
  app.add_option("--dir", dir, "where the checkpoint goes (removed afterwards)");
  app.add_option("--repeat", repeat, "timed repetitions of each").positive();
  if (auto status = app.parse(argc, argv)) return *status;
  skein::Runtime runtime(&argc, &argv);
  int status = 0;
  try {
    skein::Communicator comm(runtime);
    const auto elements = static_cast<std::size_t>(gib * double(1ull << 30) / 8.0);
    const std::size_t cols = 1024;
    skein::DistArray u(comm, skein::Shape{elements / cols, cols}, skein::Dtype::float64);
    u.fill_zero();  // the file is written uncompressed: its size is the array's
    fs::remove_all(dir);
    skein::CheckpointManager m(comm, dir);
    const skein::CheckpointInfo info = m.write(1, 0.0, {{"u", u}});
    using clock = std::chrono::steady_clock;
    double best_skein = 1e30, best_peer = 1e30;
    for (int r = 0; r < repeat; ++r) {
      const auto t0 = clock::now();
      const skein::CheckpointInfo v = m.verify(1);
      best_skein = std::min(best_skein, std::chrono::duration<double>(clock::now() - t0).count());
      if (v.sha256 != info.sha256) throw std::runtime_error("verify() gave another digest");
    }
    std::string peer_digest;
    if (runtime.rank() == 0) {
      for (int r = 0; r < repeat; ++r) {
        const auto t0 = clock::now();
        FILE* p = popen(fmt::format("sha256sum '{}'", info.file.string()).c_str(), "r");
        char buf[129] = {};
        if (p == nullptr || std::fscanf(p, "%128s", buf) != 1)
          throw std::runtime_error("sha256sum failed");
        pclose(p);
        best_peer = std::min(best_peer, std::chrono::duration<double>(clock::now() - t0).count());
        peer_digest = buf;
      }
      const double mib = static_cast<double>(fs::file_size(info.file)) / double(1 << 20);
      std::printf("checkpoint file: %.1f MiB\n", mib);
      std::printf("CheckpointManager::verify: %.3f s (%.0f MiB/s)\n", best_skein, mib / best_skein);
      std::printf("sha256sum:                 %.3f s (%.0f MiB/s)\n", best_peer, mib / best_peer);
      std::printf("verify / sha256sum time:   %.2f; digests %s\n", best_skein / best_peer,
                  peer_digest == info.sha256 ? "agree" : "DIFFER");
      if (peer_digest != info.sha256) status = 1;
    }
    fs::remove_all(dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "skein-bench-checkpoint-verify: %s\n", e.what());
    return 1;
  }
  return status;
}

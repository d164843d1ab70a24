// SPDX-License-Identifier: BSD-3-Clause
// skein-bench: Skein's array kernels on distributed arrays against their reference, measured in
// the same run, under mpirun:
//
//   mpirun -np 4 skein-bench axpy --size 268435456 --dtype float32
//   mpirun -np 1 skein-bench gemm --size 16384 --devices-per-rank 4
//   mpirun -np 4 skein-bench scaling --op axpy --size 268435456 --max-devices-per-rank 1
//       --svg scaling.svg --json scaling.json   (one command)
//
//   axpy     z = a * x + y over x, y, z split across every device; GB/s counts 3 arrays (bytes
//            read and written). Reference: a device-to-device copy of the same blocks (2 arrays).
//   sum      the sum of x to one value on every rank (per device, then all_reduce); GB/s counts
//            the bytes read. Reference: the same device-to-device copy.
//   gemm     C = A @ B, A and C split by rows, B on every device; TFLOP/s = 2 n^3 / time.
//            Reference: cuBLAS (CUDA) or CLBlast (OpenCL) called directly on the same blocks.
//   scaling  one of those (--op) on 1 rank x 1, 2, 4 ... K devices, then on 2, 4 ... R ranks x K
//            devices, in one mpirun (scaling.cpp): speed-up, efficiency, the reference's speed-up,
//            as a table, JSON and an SVG plot.
//
// Each figure is the median of --repeat timed runs after warm-up; a run is timed on the host from
// a barrier to the end of the slowest rank's work. Rank 0 prints the table (and --json FILE).
#include <mpi.h>

#include <fmt/format.h>

#include <skein_cli/cli.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <skein/communicator.hpp>
#include <skein/runtime.hpp>
#include <string>
#include <vector>

#include "bench.hpp"
#include "skein/detail/leak_check.hpp"

namespace {

using skein_bench::Options;

int bench(const Options& o, const skein::Runtime& runtime) {
  const skein_bench::Measurement m = skein_bench::measure(o, o.size, runtime);
  unsigned long long all_devices = runtime.context().num_devices();
  MPI_Allreduce(MPI_IN_PLACE, &all_devices, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, runtime.comm());
  if (runtime.rank() != 0) return 0;
  fmt::print("# skein-bench {}: size {}, {}, {} device(s) on {} rank(s) ({}, {}), median of {}\n",
             o.what, o.size, o.dtype, all_devices, runtime.size(), m.api, m.backend, o.repeat);
  fmt::print("# {:<20} {:>12} {:>12} {:>8}  {}\n", "what", "skein", "reference", "ratio",
             "reference is");
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : m.rows) {
    fmt::print("  {:<20} {:>12.1f} {:>12.1f} {:>8.3f}  {} ({})\n", r.what, r.skein, r.peer,
               r.skein / r.peer, r.reference, r.unit);
    out.push_back({{"what", r.what},
                   {"unit", r.unit},
                   {"skein", r.skein},
                   {"reference", r.peer},
                   {"ratio", r.skein / r.peer},
                   {"reference_is", r.reference}});
  }
  if (!o.json_file.empty()) {
    std::ofstream(o.json_file) << nlohmann::json{{"tool", "skein-bench"},
                                                 {"benchmark", o.what},
                                                 {"size", o.size},
                                                 {"dtype", o.dtype},
                                                 {"devices", all_devices},
                                                 {"ranks", runtime.size()},
                                                 {"rows", out}}
                                      .dump(2)
                               << "\n";
  }
  return 0;
}

int run(const Options& o, int* argc, char*** argv) {
  skein::PlacementOptions placement;
  if (o.devices_per_rank > 0) placement.devices_per_rank = o.devices_per_rank;
  skein::Runtime runtime(argc, argv, placement);
  try {
    return bench(o, runtime);
  } catch (const std::exception& e) {
    // One rank failing must end the job, not leave the others waiting in a collective.
    std::fprintf(stderr, "skein-bench: rank %d: %s\n", runtime.rank(), e.what());
    std::fflush(stderr);
    MPI_Abort(runtime.comm(), 1);
    return 1;
  }
}

// The scaling mode makes a runtime per configuration on sub-communicators, so it starts MPI
// itself (the runtimes adopt it) and finalises it at the end.
int run_scaling(const Options& o, int* argc, char*** argv) {
  int provided = 0;
  {
    // What Open MPI keeps until exit is left out of a sanitizer build's leak check.
    skein::detail::LeakCheckPause pause;
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int status = 1;
  try {
    status = skein_bench::run_scaling(o);
  } catch (const std::exception& e) {
    // Raised on every rank alike (output files, the placement check): rank 0 says it once.
    if (rank == 0) std::fprintf(stderr, "skein-bench: %s\n", e.what());
    status = 1;
  }
  skein::detail::LeakCheckPause pause;
  MPI_Finalize();
  return status;
}

void add_common(skein::cli::Command& sub, Options& o) {
  sub.add_option("--dtype", o.dtype).one_of({"float32", "float64"});
  sub.add_option("--repeat", o.repeat, "Timed runs (the median is reported)").range(1, 100000);
  sub.add_option("--warmup", o.warmup).range(0, 100000);
  sub.add_option("--json", o.json_file, "Also write the table to this JSON file (rank 0)");
}

}  // namespace

int main(int argc, char** argv) {
  skein::cli::Parser app{
      "Skein's array kernels on distributed arrays against their reference in the same "
      "run (run under mpirun)"};
  Options o;
  app.require_subcommand();
  for (const char* name : {"axpy", "sum", "gemm"}) {
    auto sub = app.add_subcommand(name, std::string(name) == "gemm"
                                            ? "C = A @ B against cuBLAS / CLBlast called directly"
                                            : std::string(name) + " against a device copy");
    sub.add_option("--size", o.size, std::string(name) == "gemm" ? "Matrix side" : "Elements")
        .required()
        .range(std::size_t{1}, std::size_t{1} << 40);
    sub.add_option("--devices-per-rank", o.devices_per_rank,
                   "Devices each rank drives (default: an even share)");
    add_common(sub, o);
  }
  auto scaling = app.add_subcommand(
      "scaling",
      "One operation on 1 rank x 1..K devices, then 2..R ranks x K devices (R: the "
      "mpirun's ranks), as a table, JSON and an SVG plot");
  scaling.add_option("--op", o.what, "The operation measured")
      .required()
      .one_of({"axpy", "sum", "gemm"});
  scaling
      .add_option("--size", o.size,
                  "Elements (gemm: matrix side) of every configuration; with --weak, per device "
                  "(gemm: the side at 1 device, growing with the cube root of the devices)")
      .required()
      .range(std::size_t{1}, std::size_t{1} << 40);
  scaling.add_flag("--weak", o.weak, "Weak scaling: the same work per device (default: strong)");
  scaling
      .add_option("--max-devices-per-rank", o.max_devices_per_rank,
                  "K: the most devices a rank drives (default: each rank's even share of its "
                  "node's devices)")
      .range(std::size_t{1}, std::size_t{1} << 16);
  scaling.add_option("--svg", o.svg_file, "Draw the speed-ups to this SVG file (rank 0)");
  add_common(scaling, o);
  if (auto status = app.parse(argc, argv)) return *status;
  const std::string mode = app.chosen_subcommand();
  if (mode != "scaling") o.what = mode;
  try {
    return mode == "scaling" ? run_scaling(o, &argc, &argv) : run(o, &argc, &argv);
  } catch (const std::exception& e) {
    // The runtime itself failed (placement, MPI): every rank sees that on its own.
    std::fprintf(stderr, "skein-bench: %s\n", e.what());
    return 1;
  }
}

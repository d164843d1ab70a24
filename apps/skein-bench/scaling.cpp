// SPDX-License-Identifier: BSD-3-Clause
// The scaling run: one operation measured on 1 device, then on growing sets of devices and ranks,
// all in one mpirun:
//
//   1 rank  x 1, 2, 4, ... K devices      (one rank driving more devices)
//   2, 4, ... R ranks x K devices each     (more ranks)
//
// R is the mpirun's rank count and K is --max-devices-per-rank. Each configuration gets its own
// sub-communicator of the first r ranks (MPI_Comm_split) and its own skein::Runtime on it, as a
// simulation code that adopts MPI would; the ranks left out wait at a barrier without using a
// core. Strong scaling keeps the global size; weak scaling (--weak) keeps the size per device.
// Rank 0 prints the table, and writes it as JSON (--json) and as an SVG plot (--svg).
#include <mpi.h>

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <skein/error.hpp>
#include <skein/runtime.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "svg_plot.hpp"

namespace skein_bench {
namespace {

struct Configuration {
  int ranks = 1;
  std::size_t devices_per_rank = 1;
  std::size_t devices() const { return static_cast<std::size_t>(ranks) * devices_per_rank; }
};

struct Result {
  Configuration config;
  std::size_t size = 0;  // the global problem size of this configuration
  Row row;               // the operation's main figure and its reference
  double speedup = 0, reference_speedup = 0, efficiency = 0;
};

// 1, 2, 4, ... below n, then n itself (n >= 1).
std::vector<std::size_t> doubling(std::size_t n) {
  std::vector<std::size_t> steps;
  for (std::size_t s = 1; s < n; s *= 2) steps.push_back(s);
  steps.push_back(n);
  return steps;
}

std::vector<Configuration> configurations(int world_size, std::size_t k) {
  std::vector<Configuration> configs;
  for (std::size_t d : doubling(k)) configs.push_back({1, d});
  for (std::size_t r : doubling(static_cast<std::size_t>(world_size))) {
    if (r > 1) configs.push_back({static_cast<int>(r), k});
  }
  return configs;
}

// Weak scaling keeps the work per device: n elements per device for axpy and sum; for gemm
// (2 n^3 flops) the side grows with the cube root of the device count.
std::size_t problem_size(const Options& o, std::size_t devices) {
  if (!o.weak) return o.size;
  if (o.what == "gemm") {
    return static_cast<std::size_t>(
        std::llround(static_cast<double>(o.size) * std::cbrt(static_cast<double>(devices))));
  }
  return o.size * devices;
}

// Waits for every rank of `comm` without keeping a core busy: a rank that sits out a
// configuration must not take CPU time from the ranks being measured (PoCL's devices are the
// same cores), which a spinning MPI_Barrier would.
void quiet_barrier(MPI_Comm comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibarrier(comm, &request);
  int done = 0;
  for (MPI_Test(&request, &done, MPI_STATUS_IGNORE); !done;
       MPI_Test(&request, &done, MPI_STATUS_IGNORE)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// K, checked before any measurement: the largest configuration (every rank with K devices) is
// placed once on MPI_COMM_WORLD, where a placement that cannot be met fails on every rank alike
// (the Runtime's error, naming the devices), rather than in the middle of the run. Every other
// configuration uses a part of the same devices. Without --max-devices-per-rank, K is the
// Runtime's even share of each node's devices (the smallest over the ranks).
std::size_t devices_per_rank(const Options& o) {
  skein::PlacementOptions placement;
  if (o.max_devices_per_rank > 0) placement.devices_per_rank = o.max_devices_per_rank;
  unsigned long long k = 0;
  {
    const skein::Runtime probe(MPI_COMM_WORLD, placement);
    k = probe.context().num_devices();
  }
  MPI_Allreduce(MPI_IN_PLACE, &k, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  return static_cast<std::size_t>(k);
}

// Rank 0 opens the output files before any measurement, so that a wrong path fails at once (on
// every rank) instead of after the whole run.
void check_outputs(const Options& o, int rank) {
  std::string bad;
  if (rank == 0) {
    for (const std::string* file : {&o.json_file, &o.svg_file}) {
      if (!file->empty() && !std::ofstream(*file)) bad = *file;
    }
  }
  unsigned long long length = bad.size();
  MPI_Bcast(&length, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  bad.resize(length);
  MPI_Bcast(bad.data(), static_cast<int>(length), MPI_CHAR, 0, MPI_COMM_WORLD);
  if (!bad.empty()) {
    throw skein::LogicError(skein::ErrorInfo{
        .what = fmt::format("cannot write '{}' on rank 0", bad),
        .call = "skein-bench scaling --json/--svg",
        .hint = "Give a file in a directory that exists and that rank 0 may write to."});
  }
}

std::string size_text(const Options& o, std::size_t size) {
  return o.what == "gemm" ? fmt::format("{0}x{0}", size) : fmt::format("{}", size);
}

// --size in words: "100003 elements", "side 4096 at 1 device", ...
std::string size_description(const Options& o) {
  if (o.what == "gemm") {
    return fmt::format("matrix side {}{}", o.size, o.weak ? " at 1 device" : "");
  }
  return fmt::format("{} elements{}", o.size, o.weak ? " per device" : "");
}

nlohmann::json to_json(const Options& o, const std::vector<Result>& results,
                       const Measurement& first) {
  nlohmann::json configs = nlohmann::json::array();
  for (const auto& r : results) {
    configs.push_back({{"ranks", r.config.ranks},
                       {"devices_per_rank", r.config.devices_per_rank},
                       {"devices", r.config.devices()},
                       {"size", r.size},
                       {"time_s", r.row.seconds},
                       {"skein", r.row.skein},
                       {"reference_time_s", r.row.reference_seconds},
                       {"reference", r.row.peer},
                       {"ratio", r.row.skein / r.row.peer},
                       {"speedup", r.speedup},
                       {"efficiency", r.efficiency},
                       {"reference_speedup", r.reference_speedup}});
  }
  return {{"tool", "skein-bench"},
          {"mode", "scaling"},
          {"benchmark", o.what},
          {"scaling", o.weak ? "weak" : "strong"},
          {"size", o.size},
          {"size_is", size_description(o)},
          {"dtype", o.dtype},
          {"unit", results.front().row.unit},
          {"reference_is", results.front().row.reference},
          {"api", first.api},
          {"backend", first.backend},
          {"device", first.device},
          {"repeat", o.repeat},
          {"configurations", configs}};
}

LineChart to_chart(const Options& o, const std::vector<Result>& results, const Measurement& first) {
  LineChart chart;
  chart.title =
      fmt::format("skein-bench {} ({}), {} scaling", o.what, o.dtype, o.weak ? "weak" : "strong");
  chart.subtitle = fmt::format("{}; {}, {}; median of {}", size_description(o), first.api,
                               first.backend, o.repeat);
  chart.x_label = "devices (ranks x devices per rank)";
  chart.y_label =
      o.weak ? "scaled speed-up (figure / figure on 1 device)" : "speed-up over 1 device";
  PlotSeries skein{
      .name = fmt::format("Skein {}", o.what), .css_class = "skein", .colour = "#1f77b4"};
  PlotSeries reference{.name = fmt::format("reference ({})", results.front().row.reference),
                       .css_class = "reference",
                       .colour = "#ff7f0e",
                       .dashed = true};
  PlotSeries ideal{.name = "ideal (linear)",
                   .css_class = "ideal",
                   .colour = "#888888",
                   .dashed = true,
                   .markers = false};
  for (const auto& r : results) {
    const double d = static_cast<double>(r.config.devices());
    chart.x_ticks.push_back(d);
    const std::string where = fmt::format("{}x{}", r.config.ranks, r.config.devices_per_rank);
    skein.points.push_back(
        {d, r.speedup, fmt::format("{}: {:.3g} {}", where, r.row.skein, r.row.unit),
         fmt::format("{} rank(s) x {} device(s): {:.4g} {}, speed-up {:.3f}, efficiency {:.3f}",
                     r.config.ranks, r.config.devices_per_rank, r.row.skein, r.row.unit, r.speedup,
                     r.efficiency)});
    reference.points.push_back(
        {d, r.reference_speedup, "",
         fmt::format("{} rank(s) x {} device(s): reference {:.4g} {}, speed-up {:.3f}",
                     r.config.ranks, r.config.devices_per_rank, r.row.peer, r.row.unit,
                     r.reference_speedup)});
    ideal.points.push_back({d, d, "", ""});
  }
  chart.series = {ideal, reference, skein};
  return chart;
}

void print_table(const Options& o, const std::vector<Result>& results, const Measurement& first) {
  const std::string& unit = results.front().row.unit;
  fmt::print("# skein-bench scaling {}: {} scaling, {}, {}, {} ({}), median of {}\n", o.what,
             o.weak ? "weak" : "strong", size_description(o), o.dtype, first.api, first.backend,
             o.repeat);
  fmt::print("# reference: {}, measured in the same run on the same devices\n",
             results.front().row.reference);
  fmt::print("# {:>5} {:>7} {:>7} {:>14} {:>11} {:>10} {:>10} {:>7} {:>8} {:>6} {:>8}\n", "ranks",
             "dev/rk", "devices", "size", "time [s]", "skein", "reference", "ratio", "speed-up",
             "effic.", "ref s-u");
  for (const auto& r : results) {
    fmt::print(
        "  {:>5} {:>7} {:>7} {:>14} {:>11.4g} {:>10.4g} {:>10.4g} {:>7.3f} {:>8.3f} "
        "{:>6.3f} {:>8.3f}\n",
        r.config.ranks, r.config.devices_per_rank, r.config.devices(), size_text(o, r.size),
        r.row.seconds, r.row.skein, r.row.peer, r.row.skein / r.row.peer, r.speedup, r.efficiency,
        r.reference_speedup);
  }
  fmt::print(
      "# skein and reference in {}; speed-up = figure / figure on 1 device; efficiency = "
      "speed-up / devices\n",
      unit);
  std::fflush(stdout);
}

}  // namespace

int run_scaling(const Options& o) {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  check_outputs(o, rank);
  const std::size_t k = devices_per_rank(o);

  std::vector<Result> results;
  Measurement first;
  for (const Configuration& c : configurations(world, k)) {
    MPI_Comm sub = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, rank < c.ranks ? 0 : MPI_UNDEFINED, rank, &sub);
    if (sub != MPI_COMM_NULL) {
      try {
        skein::PlacementOptions placement;
        placement.devices_per_rank = c.devices_per_rank;
        const skein::Runtime runtime(sub, placement);
        const std::size_t size = problem_size(o, c.devices());
        Measurement m = measure(o, size, runtime);
        if (results.empty()) first = m;
        results.push_back({c, size, m.rows.front()});
      } catch (const std::exception& e) {
        // The ranks left out of this configuration wait at the barrier below: only MPI_Abort ends
        // them. Every rank of the configuration reports what it saw.
        std::fprintf(stderr, "skein-bench scaling: %d rank(s) x %zu device(s): rank %d: %s\n",
                     c.ranks, c.devices_per_rank, rank, e.what());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      MPI_Comm_free(&sub);
    }
    quiet_barrier(MPI_COMM_WORLD);
  }

  if (rank == 0) {
    // Speed-ups against the first configuration (1 rank, 1 device) of the same run. Weak scaling
    // does more work on more devices, so the figures (work per second) are compared, not times;
    // for strong scaling the two are the same.
    const Row& base = results.front().row;
    for (auto& r : results) {
      r.speedup = r.row.skein / base.skein;
      r.reference_speedup = r.row.peer / base.peer;
      r.efficiency = r.speedup / static_cast<double>(r.config.devices());
    }
    print_table(o, results, first);
    if (!o.json_file.empty()) {
      std::ofstream(o.json_file) << to_json(o, results, first).dump(2) << "\n";
    }
    if (!o.svg_file.empty()) std::ofstream(o.svg_file) << render_svg(to_chart(o, results, first));
  }
  return 0;
}

}  // namespace skein_bench

// SPDX-License-Identifier: BSD-3-Clause
// The summary and --json of skein-heat's run on a process grid (heat_report3d.hpp).
#include "heat_report3d.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "heat_timing.hpp"

namespace skein::heat {

namespace {

void print_performance(const GridReport& r, const GridPerformance& p) {
  const double points = static_cast<double>(r.layout.points());
  const double exposed = std::max(0.0, p.t_step - p.t_compute);
  fmt::print("  step time   {} (median of {} interval(s); mean {}), {:.3g} Gpoints/s\n",
             format_time(p.t_step), p.intervals, format_time(p.t_step_mean),
             points / p.t_step / 1e9);
  fmt::print(
      "  floor       {} per step: {} read + written per device at {:.1f} GB/s (device copy, "
      "measured); "
      "floor / step = {:.3f}\n",
      format_time(p.floor), format_bytes(p.bytes_per_step), p.copy_gbps, p.floor / p.t_step);
  fmt::print(
      "  kernel      {} per step (device time, {} kernel {}{}), floor / kernel = {:.3f}; halo "
      "exchange {} = {:.1f} % of a step\n",
      format_time(p.t_kernel), r.kernel3d, r.tile3d,
      r.steps_per_pass == 2 ? ", two steps per launch: half a launch" : "", p.floor / p.t_kernel,
      format_time(p.t_halo), 100 * p.t_halo / p.t_step);
  fmt::print(
      "  halo        {}: the step's kernels alone take {} per step; exposed halo time (step - "
      "kernels) {} "
      "= {:.1f} % of a step\n",
      r.halo_mode == "none" ? std::string("none to move (one member, open walls)")
      : p.overlapped
          ? fmt::format("overlapped with the interior (shell of {} points after the exchange)",
                        p.shell_points)
          : std::string("exchanged before the kernel"),
      format_time(p.t_compute), format_time(exposed), 100 * exposed / p.t_step);
}

}  // namespace

void print_grid_summary(const GridReport& r) {
  const GridRunOptions& o = r.o;
  const double time = static_cast<double>(o.steps) * r.problem.dt;
  fmt::print("skein-heat summary\n");
  fmt::print("  grid        {} points, {}, {} walls, {} device(s) on {} rank(s), process grid {}\n",
             r.layout.points(), o.dtype, o.boundary, r.devices, r.ranks,
             fmt::join(r.layout.grid(), " x "));
  fmt::print("  steps       {} (this run: {}{}), t = {:.6g}, {:.3f} s in all\n", o.steps,
             o.steps - r.start.step,
             r.start.step > 0 ? fmt::format(", restarted at step {}", r.start.step) : "", time,
             r.run_s);
  if (!std::isnan(r.loop.residual)) {
    fmt::print("  residual    {:.3e} (max |u_new - u_old| of the last step)\n", r.loop.residual);
  }
  fmt::print("  check       max |u - lambda^n u0| = {:.3e}, tolerance {:.3e}: {}\n",
             r.result.max_error, r.result.tolerance, r.result.passed() ? "passed" : "FAILED");
  if (r.perf) print_performance(r, *r.perf);
  if (!o.out.empty()) {
    fmt::print("  files       {}\n", (std::filesystem::path(o.out) / "heat.h5").string());
    if (r.loop.checkpoints_written > 0 || !r.kept.empty()) {
      fmt::print("  checkpoints {} written, {} kept in {}{}\n", r.loop.checkpoints_written,
                 r.kept.size(), (std::filesystem::path(o.out) / "checkpoints").string(),
                 r.kept.empty() ? "" : fmt::format(" (newest: step {})", r.kept.back().step));
    }
  }
  if (!r.result.passed()) {
    fmt::print(stderr,
               "skein-heat: CHECK FAILED: the final field differs from the discrete analytic "
               "solution by {:.3e}, "
               "{:.3g} times the tolerance {:.3e}\n",
               r.result.max_error, r.result.max_error / r.result.tolerance, r.result.tolerance);
  }
  std::fflush(stdout);
}

void write_grid_json(const GridReport& r) {
  const GridRunOptions& o = r.o;
  const auto per_device = [&](std::size_t n) {
    return o.weak ? nlohmann::json(n) : nlohmann::json(nullptr);
  };
  nlohmann::json files = nlohmann::json::array();
  if (!o.out.empty()) files.push_back((std::filesystem::path(o.out) / "heat.h5").string());
  nlohmann::json j = {{"tool", "skein-heat"},
                      {"api", r.api},
                      {"devices", r.devices},
                      {"ranks", r.ranks},
                      {"nx", o.nx},
                      {"ny", o.ny},
                      {"nz", o.nz},
                      {"nx_per_device", per_device(r.given.nx)},
                      {"ny_per_device", per_device(r.given.ny)},
                      {"nz_per_device", per_device(r.given.nz)},
                      {"points", r.layout.points()},
                      {"boundary", o.boundary},
                      {"process_grid", r.layout.grid()},
                      {"layout", r.layout.describe()},
                      {"weak", o.weak},
                      {"dtype", o.dtype},
                      {"steps", o.steps},
                      {"start_step", r.start.step},
                      {"time", static_cast<double>(o.steps) * r.problem.dt},
                      {"dt", r.problem.dt},
                      {"run_s", r.run_s},
                      {"residual", std::isnan(r.loop.residual) ? nlohmann::json(nullptr)
                                                               : nlohmann::json(r.loop.residual)},
                      {"check",
                       {{"passed", r.result.passed()},
                        {"max_error", r.result.max_error},
                        {"tolerance", r.result.tolerance}}},
                      {"checkpoints_written", r.loop.checkpoints_written},
                      {"files", files}};
  if (r.perf) {
    const GridPerformance& p = *r.perf;
    const double exposed = std::max(0.0, p.t_step - p.t_compute);
    j["t_step_s"] = p.t_step;
    j["t_step_mean_s"] = p.t_step_mean;
    j["t_kernel_s"] = p.t_kernel;
    j["t_halo_s"] = p.t_halo;
    j["halo_share"] = p.t_halo / p.t_step;
    j["halo_exchange"] = r.halo_mode;
    j["tile3d"] = r.tile3d;
    j["kernel3d"] = r.kernel3d;
    j["steps_per_pass"] = r.steps_per_pass;
    if (p.overlapped) {
      j["halo_priority"] = r.halo_priority;
      j["shell_points_per_device"] = p.shell_points;
    }
    j["t_compute_s"] = p.t_compute;
    j["halo_exposed_s"] = exposed;
    j["halo_exposed_share"] = exposed / p.t_step;
    j["floor_s"] = p.floor;
    j["floor_ratio"] = p.floor / p.t_step;
    j["kernel_floor_ratio"] = p.floor / p.t_kernel;
    j["copy_GBps"] = p.copy_gbps;
    j["bytes_per_step_per_device"] = p.bytes_per_step;
    j["bandwidth_GBps"] = static_cast<double>(p.bytes_per_step) / p.t_step / 1e9;
    j["points_per_s"] = static_cast<double>(r.layout.points()) / p.t_step;
    j["intervals"] = p.intervals;
  }
  std::ofstream(o.json_file) << j.dump(2) << "\n";
}

}  // namespace skein::heat

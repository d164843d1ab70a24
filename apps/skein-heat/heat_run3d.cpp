// SPDX-License-Identifier: BSD-3-Clause
// skein-heat on a process grid (--nz, --grid, --boundary): the run of heat_solver3d.hpp's problem
// over GridLayout / GridArray, one halo exchange (GridArray::exchange_halos, on the field's queue)
// and one stencil kernel per step; checkpoints and --restart as the 2-D run's (heat_checkpoint3d),
// which continue bit for bit on any process grid: every point's update reads only its own and its
// neighbours' values, in the same order whatever block it is in.
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <skein/checkpoint.hpp>
#include <skein/communicator.hpp>
#include <skein/hdf5.hpp>
#include <skein/runtime.hpp>

#include "heat_checkpoint3d.hpp"
#include "heat_errors.hpp"
#include "heat_solver3d.hpp"

namespace skein::heat {

namespace {

using Clock = std::chrono::steady_clock;

GridProblem make_problem(const GridRunOptions& o, BoundaryKind walls, Dtype dtype) {
  const bool three = o.nz > 0;
  std::vector<std::size_t> n = three ? std::vector<std::size_t>{o.nz, o.ny, o.nx} : std::vector<std::size_t>{o.ny, o.nx};
  std::vector<int> k = three ? std::vector<int>{o.modes[2], o.modes[1], o.modes[0]} : std::vector<int>{o.modes[1], o.modes[0]};
  try {
    return GridProblem::make(std::move(n), std::move(k), walls, o.alpha, o.dt_factor, dtype);
  } catch (const LogicError& e) {
    throw AgreedError(e.info().what, e.info().hint);
  }
}

GridLayout make_layout(Communicator& comm, const GridProblem& problem, const std::string& grid_text) {
  std::vector<std::size_t> grid;
  try {
    grid = parse_grid(grid_text, problem.ndim());
  } catch (const LogicError& e) {
    throw AgreedError(e.info().what, e.info().hint);
  }
  try {
    return GridLayout::over(comm, Shape(problem.n.begin(), problem.n.end()), grid_options(problem, grid));
  } catch (const LogicError& e) {
    throw AgreedError(fmt::format("--grid {}: {}", grid_text, e.info().what),
                      fmt::format("give a grid whose counts multiply to the {} member(s) (devices of all ranks), "
                                  "or leave --grid out",
                                  comm.size()));
  }
}

void write_field(Communicator& comm, const GridRunOptions& o, const GridProblem& p, const hdf5::Attributes& attributes,
                 const GridArray& u) {
  auto file = hdf5::File::create(comm, (std::filesystem::path(o.out) / "heat.h5").string());
  hdf5::WriteOptions write;
  const double time = static_cast<double>(o.steps) * p.dt;
  write.step = o.steps;
  write.time = time;
  write.attributes = attributes;
  write.attributes["step"] = o.steps;
  write.attributes["time"] = time;
  file.write("u", u, write);
  file.close();
}

// What the time loop did.
struct GridLoop {
  double residual = NAN;  // of the last step, when a report came after it
  std::size_t checkpoints_written = 0;
  double loop_s = 0;  // the loop's wall time (reports and checkpoints included)
};

// Steps `u` from `start` to o.steps (u and v swap every step), with a progress line every
// --report-every steps and a checkpoint every --checkpoint-every.
GridLoop advance(const GridRunOptions& o, const GridProblem& problem, const GridStencil& stencil, GridArray& u,
                 GridArray& v, std::optional<CheckpointManager>& checkpoints, const hdf5::Attributes& attributes,
                 std::int64_t start, bool root) {
  GridLoop loop;
  const Queue queue = u.queue();
  const auto t0 = Clock::now();
  for (std::int64_t step = start; step < o.steps;) {
    u.exchange_halos();
    stencil.step(u, v);
    std::swap(u, v);
    ++step;
    if (step == o.steps || (o.report_every > 0 && step % o.report_every == 0)) {
      queue.synchronize();
      loop.residual = max_difference(u, v);
      if (root) {
        fmt::print("step {:>9}/{}  t = {:<10.6g}  residual {:.3e}  elapsed {:.2f} s\n", step, o.steps,
                   static_cast<double>(step) * problem.dt, loop.residual,
                   std::chrono::duration<double>(Clock::now() - t0).count());
        std::fflush(stdout);
      }
    }
    if (checkpoints && o.checkpoint_every > 0 && step % o.checkpoint_every == 0) {
      queue.synchronize();
      const auto info = checkpoints->write(step, static_cast<double>(step) * problem.dt, {{"u", u}}, attributes);
      ++loop.checkpoints_written;
      if (root) {
        fmt::print("  checkpoint {} ({})\n", info.file.string(), format_bytes(info.bytes));
        std::fflush(stdout);
      }
    }
  }
  queue.synchronize();
  loop.loop_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return loop;
}

// What the summary and --json say about a run.
struct GridReport {
  const GridRunOptions& o;
  const GridProblem& problem;
  const GridLayout& layout;
  std::size_t devices = 0;
  int ranks = 0;
  std::string api;
  GridStart start;
  GridLoop loop;
  double run_s = 0;
  CheckResult result;
  std::vector<CheckpointInfo> kept;
};

void print_summary(const GridReport& r) {
  const GridRunOptions& o = r.o;
  const double time = static_cast<double>(o.steps) * r.problem.dt;
  fmt::print("skein-heat summary\n");
  fmt::print("  grid        {} points, {}, {} walls, {} device(s) on {} rank(s), process grid {}\n", r.layout.points(),
             o.dtype, o.boundary, r.devices, r.ranks, fmt::join(r.layout.grid(), " x "));
  fmt::print("  steps       {} (this run: {}{}), t = {:.6g}, {:.3f} s in all\n", o.steps, o.steps - r.start.step,
             r.start.step > 0 ? fmt::format(", restarted at step {}", r.start.step) : "", time, r.run_s);
  if (!std::isnan(r.loop.residual)) {
    fmt::print("  residual    {:.3e} (max |u_new - u_old| of the last step)\n", r.loop.residual);
  }
  fmt::print("  check       max |u - lambda^n u0| = {:.3e}, tolerance {:.3e}: {}\n", r.result.max_error,
             r.result.tolerance, r.result.passed() ? "passed" : "FAILED");
  if (!o.out.empty()) {
    fmt::print("  files       {}\n", (std::filesystem::path(o.out) / "heat.h5").string());
    if (r.loop.checkpoints_written > 0 || !r.kept.empty()) {
      fmt::print("  checkpoints {} written, {} kept in {}{}\n", r.loop.checkpoints_written, r.kept.size(),
                 (std::filesystem::path(o.out) / "checkpoints").string(),
                 r.kept.empty() ? "" : fmt::format(" (newest: step {})", r.kept.back().step));
    }
  }
  if (!r.result.passed()) {
    fmt::print(stderr,
               "skein-heat: CHECK FAILED: the final field differs from the discrete analytic solution by {:.3e}, "
               "{:.3g} times the tolerance {:.3e}\n",
               r.result.max_error, r.result.max_error / r.result.tolerance, r.result.tolerance);
  }
  std::fflush(stdout);
}

// --json: the 2-D run's fields where they apply, and the grid's own (nz, boundary, process grid).
void write_json(const GridReport& r) {
  const GridRunOptions& o = r.o;
  const std::int64_t steps_run = o.steps - r.start.step;
  nlohmann::json files = nlohmann::json::array();
  if (!o.out.empty()) files.push_back((std::filesystem::path(o.out) / "heat.h5").string());
  nlohmann::json j = {
      {"tool", "skein-heat"},
      {"api", r.api},
      {"devices", r.devices},
      {"ranks", r.ranks},
      {"nx", o.nx},
      {"ny", o.ny},
      {"nz", o.nz},
      {"boundary", o.boundary},
      {"process_grid", r.layout.grid()},
      {"layout", r.layout.describe()},
      {"weak", false},
      {"dtype", o.dtype},
      {"steps", o.steps},
      {"start_step", r.start.step},
      {"time", static_cast<double>(o.steps) * r.problem.dt},
      {"dt", r.problem.dt},
      {"run_s", r.run_s},
      {"residual", std::isnan(r.loop.residual) ? nlohmann::json(nullptr) : nlohmann::json(r.loop.residual)},
      {"check", {{"passed", r.result.passed()}, {"max_error", r.result.max_error}, {"tolerance", r.result.tolerance}}},
      {"checkpoints_written", r.loop.checkpoints_written},
      {"files", files}};
  // The mean over the loop (reports and checkpoints included): the 2-D run's per-interval median
  // and device figures are not measured on a grid yet.
  if (steps_run > 0) j["t_step_mean_s"] = r.loop.loop_s / static_cast<double>(steps_run);
  std::ofstream(o.json_file) << j.dump(2) << "\n";
}

}  // namespace

int run_grid(const GridRunOptions& o, const Runtime& runtime) {
  const bool root = runtime.rank() == 0;
  Communicator comm(runtime);
  const Dtype dtype = o.dtype == "float32" ? Dtype::float32 : Dtype::float64;
  if (o.modes.size() != 3) throw AgreedError("a run on a process grid needs three modes");
  BoundaryKind walls = BoundaryKind::open;
  try {
    walls = parse_walls(o.boundary);
  } catch (const LogicError& e) {
    throw AgreedError(e.info().what, e.info().hint);
  }
  const GridProblem problem = make_problem(o, walls, dtype);
  const GridLayout layout = make_layout(comm, problem, o.grid);
  const Queue queue(comm.context());
  GridArray u(comm, queue, layout, dtype);
  GridArray v(comm, queue, layout, dtype);
  const GridStencil stencil(u, problem);
  if (root) {
    fmt::print("skein-heat: {} grid, {} walls, {}, on {} device(s) of {} rank(s) ({}, {})\n",
               o.nz > 0 ? fmt::format("{} x {} x {} (x, y, z)", o.nx, o.ny, o.nz) : fmt::format("{} x {}", o.nx, o.ny),
               o.boundary, o.dtype, comm.size(), runtime.size(), comm.context().api().name(),
               comm.backend_description());
    fmt::print("  layout: {}\n", layout.describe());
    fmt::print("  alpha {}, dt {:.6g} (factor {}), lambda {:.17g}\n", o.alpha, problem.dt, o.dt_factor,
               problem.lambda());
    std::fflush(stdout);
  }
  const hdf5::Attributes attributes = grid_attributes(o, problem);
  std::optional<CheckpointManager> checkpoints;
  const GridStart start = prepare_grid_checkpoints(comm, o, problem, attributes, u, checkpoints);
  if (start.restored) {
    if (root) {
      fmt::print("  restarted from {} (step {}, written by {} rank(s))\n", start.restored->file.string(), start.step,
                 start.restored->ranks);
    }
  } else {
    set_initial(u, problem);
  }
  const auto t0 = Clock::now();
  GridReport report{.o = o, .problem = problem, .layout = layout};
  report.loop = advance(o, problem, stencil, u, v, checkpoints, attributes, start.step, root);
  report.run_s = std::chrono::duration<double>(Clock::now() - t0).count();
  report.result = check(u, problem, o.steps);
  if (!o.out.empty()) write_field(comm, o, problem, attributes, u);
  if (checkpoints) report.kept = checkpoints->list();
  report.devices = comm.size();
  report.ranks = runtime.size();
  report.api = std::string(comm.context().api().name());
  report.start = start;
  if (root) {
    print_summary(report);
    if (!o.json_file.empty()) write_json(report);
  }
  return report.result.passed() ? 0 : 3;
}

}  // namespace skein::heat

// SPDX-License-Identifier: BSD-3-Clause
// skein-heat on a process grid (--nz, --grid, --boundary): the run of heat_solver3d.hpp's problem
// over GridLayout / GridArray, one step per heat_step3d.hpp's GridStepper (by default the halos
// move on a second queue while the interior is computed, --halo-exchange overlapped; serial:
// exchange, then one kernel); checkpoints and --restart as the 2-D run's (heat_checkpoint3d),
// which continue bit for bit on any process grid: every point's update reads only its own and its
// neighbours' values, in the same order whatever block it is in and whichever kernel computes it.
// --weak keeps every member's block at --nx x --ny (x --nz) and grows the global grid with the
// process grid (GridRunOptions::weak). The speed figures are heat_measure3d.hpp's, reported by
// heat_report3d.hpp.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <skein/checkpoint.hpp>
#include <skein/communicator.hpp>
#include <skein/hdf5.hpp>
#include <skein/runtime.hpp>

#include "heat_checkpoint3d.hpp"
#include "heat_errors.hpp"
#include "heat_measure3d.hpp"
#include "heat_report3d.hpp"
#include "heat_solver3d.hpp"
#include "heat_step3d.hpp"
#include "heat_timing.hpp"

namespace skein::heat {

namespace {

GridProblem make_problem(const GridRunOptions& o, BoundaryKind walls, Dtype dtype) {
  const bool three = o.nz > 0;
  std::vector<std::size_t> n =
      three ? std::vector<std::size_t>{o.nz, o.ny, o.nx} : std::vector<std::size_t>{o.ny, o.nx};
  std::vector<int> k = three ? std::vector<int>{o.modes[2], o.modes[1], o.modes[0]}
                             : std::vector<int>{o.modes[1], o.modes[0]};
  try {
    return GridProblem::make(std::move(n), std::move(k), walls, o.alpha, o.dt_factor, dtype);
  } catch (const LogicError& e) {
    throw AgreedError(e.info().what, e.info().hint);
  }
}

GridLayout make_layout(Communicator& comm, const GridProblem& problem, const std::string& grid_text,
                       std::size_t halo) {
  std::vector<std::size_t> grid;
  try {
    grid = parse_grid(grid_text, problem.ndim());
  } catch (const LogicError& e) {
    throw AgreedError(e.info().what, e.info().hint);
  }
  try {
    return GridLayout::over(comm, Shape(problem.n.begin(), problem.n.end()),
                            grid_options(problem, grid, halo));
  } catch (const LogicError& e) {
    throw AgreedError(
        fmt::format("--grid {}: {}", grid_text, e.info().what),
        fmt::format("give a grid whose counts multiply to the {} member(s) (devices of all ranks), "
                    "or leave --grid out{}",
                    comm.size(),
                    halo > 1 ? "; with --steps-per-pass 2 every block needs at least 2 points "
                               "along an axis split between members (or leave --steps-per-pass at "
                               "1)"
                             : ""));
  }
}

void write_field(Communicator& comm, const GridRunOptions& o, const GridProblem& p,
                 const hdf5::Attributes& attributes, const GridArray& u) {
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

// "64x8x2/2": a tile as --tile3d/--unroll3d give it (and the JSON's tile3d).
std::string tile_text(const GridTile& t) {
  return fmt::format("{}x{}x{}/{}", t.local_x, t.local_y, t.zchunk, t.unroll);
}

std::int64_t next_multiple(std::int64_t step, std::int64_t every) {
  return every > 0 ? (step / every + 1) * every : INT64_MAX;
}

// Steps `u` from `start` to o.steps (u and v swap every call of a stepper), in intervals that end
// at every --report-every step (a residual and a progress line) and --checkpoint-every step (a
// checkpoint); each interval's steps are timed alone. `single` makes one step a call; `pass`, where
// given, two: an interval then makes its steps by passes but the last one or two alone, so that
// the residual is the last step's. One warm-up call of each into v first (which the first real
// step overwrites): first launches and first messages are not timed.
GridLoop advance(const GridRunOptions& o, const GridProblem& problem, const GridStepper& single,
                 const GridStepper* pass, GridArray& u, GridArray& v,
                 std::optional<CheckpointManager>& checkpoints, const hdf5::Attributes& attributes,
                 std::int64_t start, bool root) {
  GridLoop loop;
  const auto t0 = Clock::now();
  if (start < o.steps) {
    if (pass) {
      (*pass)(u, v);
      pass->synchronize();
    }
    single(u, v);
    single.synchronize();
  }
  for (std::int64_t step = start; step < o.steps;) {
    const std::int64_t stop = std::min(
        {o.steps, next_multiple(step, o.report_every), next_multiple(step, o.checkpoint_every)});
    const std::int64_t n = stop - step;
    const auto interval_start = Clock::now();
    if (pass && n > 2) {
      for (std::int64_t k = 0; k < (n - 1) / 2; ++k, step += 2) {
        (*pass)(u, v);
        std::swap(u, v);
      }
      pass->synchronize();  // the single steps' first exchange after the passes' writes
    }
    for (; step < stop; ++step) {
      single(u, v);
      std::swap(u, v);
    }
    single.synchronize();
    const double t = seconds(interval_start);
    loop.loop_s += t;
    loop.interval_times.push_back(t / static_cast<double>(n));
    if (step == o.steps || (o.report_every > 0 && step % o.report_every == 0)) {
      loop.residual = max_difference(u, v);
      if (root) {
        fmt::print(
            "step {:>9}/{}  t = {:<10.6g}  residual {:.3e}  {:10.1f} steps/s  elapsed {:.2f} s\n",
            step, o.steps, static_cast<double>(step) * problem.dt, loop.residual,
            static_cast<double>(n) / t, seconds(t0));
        std::fflush(stdout);
      }
    }
    if (checkpoints && o.checkpoint_every > 0 && step % o.checkpoint_every == 0) {
      const auto info =
          checkpoints->write(step, static_cast<double>(step) * problem.dt, {{"u", u}}, attributes);
      ++loop.checkpoints_written;
      if (root) {
        fmt::print("  checkpoint {} ({})\n", info.file.string(), format_bytes(info.bytes));
        std::fflush(stdout);
      }
    }
  }
  return loop;
}

// --weak: the options with the global grid, each member's block the given --nx x --ny (x --nz)
// on --grid or on the grid GridLayout chooses for a domain of one block's shape (as square as it
// can: 2 members 2 x 1 x 1, 4 members 2 x 2 x 1, 8 members 2 x 2 x 2 for a cube), written back
// into `grid` so that the layout takes it as given. Without --weak the options as they are.
GridRunOptions resolve_weak(const GridRunOptions& given, std::size_t members) {
  if (!given.weak) return given;
  GridRunOptions o = given;
  const bool three = given.nz > 0;
  const Shape block = three ? Shape{given.nz, given.ny, given.nx} : Shape{given.ny, given.nx};
  std::vector<std::size_t> grid;
  try {
    grid = parse_grid(given.grid, block.size());
  } catch (const LogicError& e) {
    throw AgreedError(e.info().what, e.info().hint);
  }
  try {
    grid = GridLayout::choose_grid(members, block, grid);
  } catch (const LogicError& e) {
    throw AgreedError(
        fmt::format("--weak --grid {}: {}", given.grid.empty() ? "auto" : given.grid,
                    e.info().what),
        fmt::format("give a grid whose counts multiply to the {} member(s) (devices of all ranks), "
                    "or leave --grid out",
                    members));
  }
  std::size_t* axes[3] = {&o.nz, &o.ny, &o.nx};
  for (std::size_t a = 0; a < block.size(); ++a) *axes[a + (three ? 0 : 1)] = block[a] * grid[a];
  o.grid = fmt::format("{}", fmt::join(grid, "x"));
  return o;
}

}  // namespace

int run_grid(const GridRunOptions& given, const Runtime& runtime) {
  const bool root = runtime.rank() == 0;
  Communicator comm(runtime);
  const Dtype dtype = given.dtype == "float32" ? Dtype::float32 : Dtype::float64;
  if (given.modes.size() != 3) throw AgreedError("a run on a process grid needs three modes");
  BoundaryKind walls = BoundaryKind::open;
  try {
    walls = parse_walls(given.boundary);
  } catch (const LogicError& e) {
    throw AgreedError(e.info().what, e.info().hint);
  }
  const GridRunOptions o = resolve_weak(given, comm.size());
  const GridProblem problem = make_problem(o, walls, dtype);
  const std::size_t per = o.steps_per_pass;
  if (per == 2 && (o.nz == 0 || o.kernel3d != "march")) {
    throw AgreedError(
        fmt::format("--steps-per-pass 2 {}",
                    o.nz == 0 ? "in 2-D" : "with --kernel3d " + o.kernel3d),
        "two steps per launch run in 3-D (--nz) with the march kernel: give --nz, leave "
        "--kernel3d out, or leave --steps-per-pass at 1");
  }
  const GridLayout layout = make_layout(comm, problem, o.grid, per);
  const Queue queue(comm.context());
  GridArray u(comm, queue, layout, dtype);
  GridArray v(comm, queue, layout, dtype);
  // The overlapped step's second queue, where there are halos to move (more than one member, or
  // walls that wrap around or mirror); high priority by default, as the row split's.
  std::optional<Queue> halo_queue;
  const bool exchanges = layout.members() > 1 || walls != BoundaryKind::open;
  if (o.halo_exchange == "overlapped" && exchanges) {
    halo_queue.emplace(queue.context(), queue.device_idxs(),
                       o.halo_priority == "high" ? QueuePriority::high() : QueuePriority::low());
  }
  GridTile tile = o.tile3d == "auto" ? default_grid_tile(dtype, per) : parse_tile(o.tile3d);
  tile.steps = per;
  if (o.unroll3d > 0) {
    tile.unroll = o.unroll3d;
  } else if (o.tile3d != "auto") {
    tile.unroll = std::min<std::size_t>(tile.zchunk, 16);
  }
  tile.kernel = parse_grid_kernel(o.kernel3d);
  const GridStencil stencil(u, problem, halo_queue, tile);
  tile = stencil.tile();  // what runs (the default made smaller where a device needs it)
  const GridStepper stepper(u, stencil, halo_queue);
  // Two steps per launch: the single steps (the last of each interval) by the one-step kernel's
  // default tile on the same field.
  std::optional<GridStencil> one;
  std::optional<GridStepper> one_stepper;
  if (per == 2) {
    one.emplace(u, problem, halo_queue);
    one_stepper.emplace(u, *one, halo_queue);
  }
  if (root) {
    fmt::print(
        "skein-heat: {} grid{}, {} walls, {}, on {} device(s) of {} rank(s) ({}, {})\n",
        o.nz > 0 ? fmt::format("{} x {} x {} (x, y, z)", o.nx, o.ny, o.nz)
                 : fmt::format("{} x {}", o.nx, o.ny),
        o.weak ? (o.nz > 0 ? fmt::format(", {} x {} x {} per device", given.nx, given.ny, given.nz)
                           : fmt::format(", {} x {} per device", given.nx, given.ny))
               : "",
        o.boundary, o.dtype, comm.size(), runtime.size(), comm.context().api().name(),
        comm.backend_description());
    fmt::print("  layout: {}\n", layout.describe());
    if (o.nz > 0) {
      fmt::print("  kernel: {}, work groups {} x {} over {} planes, unrolled {}{}\n",
                 name(tile.kernel), tile.local_x, tile.local_y, tile.zchunk, tile.unroll,
                 per == 2 ? fmt::format("; two steps per launch (groups of {} x {} items), the "
                                        "last step of an interval alone ({})",
                                        tile.local_x + 2, tile.local_y + 2, tile_text(one->tile()))
                          : std::string());
    }
    fmt::print("  halo exchange: {}\n",
               !exchanges ? "none (one member, open walls)"
               : halo_queue
                   ? fmt::format("overlapped (a second queue of {} priority)", o.halo_priority)
                   : std::string("serial"));
    fmt::print("  alpha {}, dt {:.6g} (factor {}), lambda {:.17g}\n", o.alpha, problem.dt,
               o.dt_factor, problem.lambda());
    std::fflush(stdout);
  }
  const hdf5::Attributes attributes = grid_attributes(o, problem);
  std::optional<CheckpointManager> checkpoints;
  const GridStart start = prepare_grid_checkpoints(comm, o, problem, attributes, u, checkpoints);
  if (start.restored) {
    if (root) {
      fmt::print("  restarted from {} (step {}, written by {} rank(s))\n",
                 start.restored->file.string(), start.step, start.restored->ranks);
    }
  } else {
    set_initial(u, problem);
  }
  const auto t0 = Clock::now();
  GridReport report{.o = o, .given = given, .problem = problem, .layout = layout};
  report.loop =
      advance(o, problem, one_stepper ? *one_stepper : stepper, one_stepper ? &stepper : nullptr, u,
              v, checkpoints, attributes, start.step, root);
  report.run_s = seconds(t0);
  report.result = check(u, problem, o.steps);
  if (!report.loop.interval_times.empty()) {
    report.perf = measure_grid(u, v, stencil, stepper, report.loop.interval_times,
                               report.loop.loop_s, o.steps - start.step);
  }
  if (!o.out.empty()) write_field(comm, o, problem, attributes, u);
  if (checkpoints) report.kept = checkpoints->list();
  report.devices = comm.size();
  report.ranks = runtime.size();
  report.api = std::string(comm.context().api().name());
  report.halo_mode = !exchanges ? "none" : halo_queue ? "overlapped" : "serial";
  report.halo_priority = o.halo_priority;
  report.tile3d = tile_text(tile);
  report.steps_per_pass = per;
  report.kernel3d = name(tile.kernel);
  report.start = start;
  if (root) {
    print_grid_summary(report);
    if (!o.json_file.empty()) write_grid_json(report);
  }
  return report.result.passed() ? 0 : 3;
}

}  // namespace skein::heat

// SPDX-License-Identifier: BSD-3-Clause
// skein-heat: 2-D heat diffusion on a grid split by rows over every device of every rank, the
// sample simulation code of Skein; with --nz, --grid or --boundary, 2-D or 3-D on a process grid
// (heat_run3d.cpp, whose top says what it adds: the same --halo-exchange, --halo-priority, --weak
// and --json, with every device's block --nx x --ny x --nz under --weak). Under mpirun:
//
//   mpirun -np 2 skein-heat --nx 1024 --ny 1024 --steps 2000 --out run1 --checkpoint-every 500
//   mpirun -np 2 skein-heat --nx 1024 --ny 1024 --steps 4000 --out run1 --restart
//   mpirun -np 4 skein-heat --nx 16384 --ny 8192 --weak --steps 500 --json weak4.json
//   mpirun -np 4 skein-heat --nx 512 --ny 512 --nz 512 --weak --steps 1000 --json weak3d4.json
//
// What it solves: u_t = alpha (u_xx + u_yy) on the unit square with u = 0 on the boundary and
// u0 = sin(kx pi x) sin(ky pi y), by the explicit 5-point (FTCS) step of heat_solver.hpp. Each
// step is a halo exchange (DistArray::exchange_halos: device copies between a rank's devices,
// Communicator send/recv between ranks) and the stencil kernels, with nothing waited for on the
// host. By default (--halo-exchange overlapped) the exchange runs on a second queue (of the
// device's highest priority; --halo-priority) while the kernel updates every block's interior
// rows, and a second kernel updates the two edge rows of each block, which read the halos, on that
// queue after them; --halo-exchange serial exchanges first, then runs one kernel.
// --stencil-variant picks how the stencil kernel maps its work items onto the grid (rows, aligned,
// flat: heat_solver.hpp's StencilVariant), all giving the same bits; --stencil-shape tunes it.
// Every --report-every steps the ranks agree on the residual max |u_new - u_old| and rank 0
// prints a progress line. At the end the field is checked against the exact solution of
// the discrete problem (lambda^n u0, see heat_solver.hpp) with a tolerance derived from the dtype
// and the number of steps; the distance to the continuous solution (the truncation error) is
// printed for information.
//
// Files (--out DIR): DIR/heat.h5 holds the final field (dataset "u", with its step, time, grid
// and parameters as attributes); DIR/checkpoints/ holds checkpoints (CheckpointManager: written
// atomically, checksummed, the newest --keep kept). --restart continues from the newest complete
// checkpoint, also on another number of ranks or devices, and ends bit-identical to an
// uninterrupted run: the stencil rounds the same way everywhere and the residual only reads the
// field. --png FILE writes an image of the final field.
//
// Performance (the summary, and --json FILE): the step time (median over the report intervals of
// the slowest rank's wall time per step, after one warm-up step), against the stencil's memory
// floor: the bytes one step must move per device (read the block, write the block) at the
// device-to-device copy bandwidth measured in the same run on the same devices; and the share of
// a step the halo exchange takes. With several devices the slowest device's figures count.
//
// Exit status: 0 done and the check passed; 1 bad options or a checkpoint that does not fit them
// (said on rank 0); 2 another error (said by the rank where it happened, the job is aborted);
// 3 the check failed (by how much is said).
#include <mpi.h>

#include <skein_cli/cli.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <skein/checkpoint.hpp>
#include <skein/dist_array.hpp>
#include <skein/hdf5.hpp>
#include <skein/runtime.hpp>
#include <skein/skein.hpp>

#include "heat_errors.hpp"
#include "heat_png.hpp"
#include "heat_solver.hpp"
#include "heat_solver3d.hpp"
#include "heat_stepper.hpp"
#include "heat_timing.hpp"

namespace {

namespace fs = std::filesystem;
using skein::DistArray;
using skein::Dtype;
using skein::heat::Clock;
using skein::heat::device_ms;
using skein::heat::format_time;
using skein::heat::median;
using skein::heat::seconds;
// Errors every rank raises alike (heat_errors.hpp).
using skein::heat::AgreedError;
using UsageError = AgreedError;

struct Options {
  std::size_t nx = 256, ny = 256;
  std::int64_t steps = 1000;
  std::string dtype = "float64";
  double alpha = 1.0;
  double dt_factor = 0.2;
  std::vector<int> modes = {1, 1};
  std::int64_t report_every = 100;
  std::int64_t checkpoint_every = 0;
  std::size_t keep = 2;
  std::string out;
  bool restart = false;
  bool overwrite = false;
  std::string png;
  std::size_t png_max_side = 1024;
  bool weak = false;
  std::size_t devices_per_rank = 0;
  std::string json_file;
  std::string halo_exchange = "overlapped";
  std::string halo_priority = "high";
  std::string tile3d = "auto";  // the process-grid kernel's work groups (heat_solver3d.hpp)
  std::size_t unroll3d = 0;
  std::string kernel3d = "march";
  std::size_t steps_per_pass = 1;
  std::string stencil_variant = "auto";
  std::vector<std::size_t> stencil_shape;  // R, LX, LY; empty: the variant's
  // A run on a process grid (heat_run3d.cpp) when any of these is given.
  std::size_t nz = 0;
  int mode_z = 1;
  std::string grid;
  std::string boundary = "open";
  bool on_grid() const { return nz > 0 || !grid.empty() || boundary != "open"; }
};

// --nz, --grid or --boundary: the run on a process grid (heat_run3d.cpp); the options it does not
// take (--png, --stencil-variant, --stencil-shape) are refused on every rank.
int simulate_grid(const Options& o, const skein::Runtime& runtime) {
  if (!o.png.empty()) {
    throw UsageError("--png is not available on a process grid (--nz, --grid, --boundary)",
                     "leave it out, or run the 2-D row split without --nz, --grid and --boundary");
  }
  if (o.stencil_variant != "auto" || !o.stencil_shape.empty()) {
    throw UsageError(
        "--stencil-variant and --stencil-shape are not available on a process grid (--nz, --grid, "
        "--boundary): its stencil kernel has one shape",
        "leave them out, or run the 2-D row split without --nz, --grid and --boundary");
  }
  if (o.modes.size() != 2) throw UsageError("--modes needs two numbers", "e.g. --modes 1,2");
  if (o.out.empty() && (o.restart || o.checkpoint_every > 0)) {
    throw UsageError(o.restart ? "--restart needs --out DIR (the directory with the checkpoints)"
                               : "--checkpoint-every needs --out DIR (where the checkpoints go)");
  }
  if (o.restart && o.overwrite) throw UsageError("--restart and --overwrite exclude each other");
  if (!o.out.empty() && !skein::hdf5::available()) {
    throw UsageError("--out needs HDF5, and this Skein was built without it",
                     "install libhdf5-openmpi-dev (tools/install-deps.sh) and rebuild");
  }
  skein::heat::GridRunOptions g;
  g.nx = o.nx;
  g.ny = o.ny;
  g.nz = o.nz;
  g.steps = o.steps;
  g.dtype = o.dtype;
  g.alpha = o.alpha;
  g.dt_factor = o.dt_factor;
  g.modes = {o.modes[0], o.modes[1], o.mode_z};
  g.grid = o.grid;
  g.boundary = o.boundary;
  g.out = o.out;
  g.report_every = o.report_every;
  g.checkpoint_every = o.checkpoint_every;
  g.keep = o.keep;
  g.restart = o.restart;
  g.overwrite = o.overwrite;
  g.json_file = o.json_file;
  g.weak = o.weak;
  g.halo_exchange = o.halo_exchange;
  g.halo_priority = o.halo_priority;
  g.tile3d = o.tile3d;
  g.unroll3d = o.unroll3d;
  g.kernel3d = o.kernel3d;
  g.steps_per_pass = o.steps_per_pass;
  return skein::heat::run_grid(g, runtime);
}

// One time step, u -> v, as --halo-exchange says (heat_stepper.hpp: the interior rows on the
// fields' queue while the halo queue moves the halos and then updates the edge rows).
using Stepper = skein::heat::HaloStepper<DistArray, skein::heat::Stencil>;

// What the summary and --json report about speed; every figure is the slowest rank's / device's.
struct Performance {
  double t_step = 0;        // s per step, median over the report intervals
  double t_step_mean = 0;   // s per step over the whole loop (checkpoints and reports excluded)
  double t_kernel = 0;      // the stencil kernel alone, device time
  double t_halo = 0;        // one halo exchange, wall time
  double t_compute = 0;     // s per step of the step's kernels alone (no exchange), wall time
  bool overlapped = false;  // --halo-exchange overlapped (with more than one member)
  double floor = 0;         // bytes per step per device / copy bandwidth
  double copy_gbps = 0;     // device-to-device copy (read + write) of the slowest device
  std::size_t bytes_per_step = 0;  // on the busiest device
  std::size_t intervals = 0;
};

Performance measure(const DistArray& u, const DistArray& v, const skein::heat::Stencil& stencil,
                    const Stepper& stepper, const std::vector<double>& interval_times,
                    double loop_time, std::int64_t steps) {
  const MPI_Comm comm = u.communicator().mpi_comm();
  const skein::Queue& queue = u.queue();
  Performance p;
  // Per-interval step times: the slowest rank's.
  std::vector<double> times = interval_times;
  MPI_Allreduce(MPI_IN_PLACE, times.data(), static_cast<int>(times.size()), MPI_DOUBLE, MPI_MAX,
                comm);
  p.t_step = median(times);
  p.intervals = times.size();
  p.t_step_mean = loop_time / static_cast<double>(std::max<std::int64_t>(steps, 1));
  MPI_Allreduce(MPI_IN_PLACE, &p.t_step_mean, 1, MPI_DOUBLE, MPI_MAX, comm);

  // Device figures, one device at a time. These write only v (the previous step's field, which
  // nothing reads any more) and u's halo rows, never u's interior.
  constexpr int repeat = 5, per = 10;
  double floor = 0, kernel = 0, copy_bps = 0;
  bool any = false;
  std::size_t bytes = 0;
  for (std::size_t l = 0; l < u.local_size(); ++l) {
    const skein::LocalBlock& b = u.block(l);
    if (b.rows.empty()) continue;
    const double copy_ms =
        device_ms(queue, b.device_idx, repeat, per, [&] { v.local(l).set(b.interior); });
    const double kernel_ms =
        device_ms(queue, b.device_idx, repeat, per, [&] { stencil.step_block(u, v, l); });
    const std::size_t block_bytes = stencil.bytes_per_step(u, l);
    const double bps = static_cast<double>(block_bytes) / (copy_ms * 1e-3);  // read + write
    floor = std::max(floor, copy_ms * 1e-3);
    kernel = std::max(kernel, kernel_ms * 1e-3);
    copy_bps = any ? std::min(copy_bps, bps) : bps;
    bytes = std::max(bytes, block_bytes);
    any = true;
  }
  double maxima[3] = {floor, kernel, any ? -copy_bps : -INFINITY};
  MPI_Allreduce(MPI_IN_PLACE, maxima, 3, MPI_DOUBLE, MPI_MAX, comm);
  p.floor = maxima[0];
  p.t_kernel = maxima[1];
  p.copy_gbps = -maxima[2] / 1e9;
  unsigned long long b64 = bytes;
  MPI_Allreduce(MPI_IN_PLACE, &b64, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
  p.bytes_per_step = b64;

  // The halo exchange alone (it rewrites u's halo rows with the values they already hold).
  std::vector<double> halo;
  for (int i = 0; i <= repeat; ++i) {
    MPI_Barrier(comm);
    const auto start = Clock::now();
    u.exchange_halos();
    queue.synchronize();
    double s = seconds(start);
    MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, comm);
    if (i > 0) halo.push_back(s);
  }
  p.t_halo = median(halo);

  // The step's kernels alone, every rank at once, timed like the steps (wall time per step of a
  // batch, the slowest rank's): the step time beyond this is the halo exchange left exposed.
  // (Ranks that share a device share it here too.) Writes v only.
  std::vector<double> compute;
  const int batch = static_cast<int>(std::clamp<std::int64_t>(steps, 1, 50));
  for (int i = 0; i <= repeat; ++i) {
    MPI_Barrier(comm);
    const auto start = Clock::now();
    for (int k = 0; k < batch; ++k) stepper.kernels_only(u, v);
    stepper.synchronize();
    double s = seconds(start) / batch;
    MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, comm);
    if (i > 0) compute.push_back(s);
  }
  p.t_compute = median(compute);
  p.overlapped = stepper.overlapped();
  return p;
}

// Rank 0 does something with the file system; its outcome is shared so that every rank raises.
template <class F>
void on_root(const skein::Runtime& runtime, F&& f) {
  int ok = 1;
  std::string message;
  if (runtime.rank() == 0) {
    try {
      f();
    } catch (const std::exception& e) {
      ok = 0;
      message = e.what();
    }
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, runtime.comm());
  if (!ok) {
    throw skein::RuntimeError(
        runtime.rank() == 0 ? message
                            : "rank 0 failed to prepare the output directory (see its message)");
  }
}

// --- the 2-D row split, step by step (simulate() at the end calls them in order) ---

// The settings of the run that need the runtime (the global rows with --weak) or that every rank
// checks alike (UsageError on every rank).
struct RowSetup {
  Dtype dtype = Dtype::float64;
  std::size_t ny = 0;  // global rows: --ny, times the devices with --weak
  skein::heat::Problem problem;
  skein::heat::StencilConfig stencil;  // without the edges' queue, which the field's set-up adds
};

RowSetup check_row_options(const Options& o, std::size_t devices) {
  RowSetup s;
  s.dtype = o.dtype == "float32" ? Dtype::float32 : Dtype::float64;
  s.ny = o.weak ? o.ny * devices : o.ny;
  if (o.modes.size() != 2) throw UsageError("--modes needs two numbers", "e.g. --modes 1,2");
  try {
    s.problem = skein::heat::Problem::make(o.nx, s.ny, o.modes[0], o.modes[1], o.alpha, o.dt_factor,
                                           s.dtype);
  } catch (const skein::LogicError& e) {
    throw UsageError(e.info().what, e.info().hint);
  }
  s.stencil.variant = skein::heat::parse_stencil_variant(o.stencil_variant);
  if (!o.stencil_shape.empty()) {
    s.stencil.rows_per_item = static_cast<unsigned>(o.stencil_shape[0]);
    s.stencil.local_x = o.stencil_shape[1];
    s.stencil.local_y = o.stencil_shape[2];
  }
  try {
    (void)skein::heat::stencil_shape(s.stencil, o.nx, s.dtype);
  } catch (const skein::LogicError& e) {
    throw UsageError(fmt::format("--stencil-shape: {}", e.info().what), e.info().hint);
  }
  if (o.out.empty() && (o.restart || o.checkpoint_every > 0)) {
    throw UsageError(o.restart ? "--restart needs --out DIR (the directory with the checkpoints)"
                               : "--checkpoint-every needs --out DIR (where the checkpoints go)");
  }
  if (!o.out.empty() && !skein::hdf5::available()) {
    throw UsageError("--out needs HDF5, and this Skein was built without it",
                     "install libhdf5-openmpi-dev (tools/install-deps.sh) and rebuild");
  }
  if (!o.png.empty() && !skein::heat::png_available()) {
    throw UsageError(fmt::format("--png {}: this skein-heat was built without libpng", o.png),
                     "install libpng-dev (tools/install-deps.sh) and rebuild, or leave out --png");
  }
  if (o.restart && o.overwrite) throw UsageError("--restart and --overwrite exclude each other");
  return s;
}

// The overlapped step's second queue (with one member there are no halos to move: the plain
// step, and no queue). High priority by default: on CUDA its copies' and edge kernel's blocks are
// scheduled ahead of the interior's waiting ones (of this rank, and of every rank under MPS).
std::optional<skein::Queue> make_halo_queue(const Options& o, const skein::Communicator& comm,
                                            const skein::Queue& queue) {
  std::optional<skein::Queue> halo_queue;
  if (o.halo_exchange == "overlapped" && comm.size() > 1) {
    halo_queue.emplace(
        queue.context(), queue.device_idxs(),
        o.halo_priority == "high" ? skein::QueuePriority::high() : skein::QueuePriority::low());
  }
  return halo_queue;
}

void print_row_header(const Options& o, const skein::Runtime& runtime,
                      const skein::Communicator& comm, const RowSetup& s,
                      const skein::BlockLayout& layout, const skein::heat::Stencil& stencil) {
  fmt::print(
      "skein-heat: {} x {} grid ({} columns x {} rows{}), {}, on {} device(s) of {} rank(s) ({}, "
      "{})\n",
      o.nx, s.ny, o.nx, s.ny, o.weak ? fmt::format(", {} per device", o.ny) : "", o.dtype,
      comm.size(), runtime.size(), comm.context().api().name(), comm.backend_description());
  fmt::print("  layout: {}\n", layout.describe());
  fmt::print("  stencil: {}{}\n", stencil.shape().describe(),
             s.stencil.variant == skein::heat::StencilVariant::automatic
                 ? " (--stencil-variant auto)"
                 : "");
  fmt::print("  alpha {}, dt {:.6g} (factor {}), mode ({}, {}), lambda {:.17g}\n", o.alpha,
             s.problem.dt, o.dt_factor, o.modes[0], o.modes[1], s.problem.lambda());
  std::fflush(stdout);
}

// The problem's parameters, stored on the checkpoints and heat.h5 (and compared on --restart).
skein::hdf5::Attributes row_attributes(const Options& o, const RowSetup& s) {
  return {{"nx", static_cast<std::int64_t>(o.nx)},
          {"ny", static_cast<std::int64_t>(s.ny)},
          {"kx", static_cast<std::int64_t>(o.modes[0])},
          {"ky", static_cast<std::int64_t>(o.modes[1])},
          {"alpha", o.alpha},
          {"dt", s.problem.dt},
          {"dtype", o.dtype},
          {"program", std::string("skein-heat")}};
}

// With --out: makes the directory (rank 0) and opens its checkpoints/; without, none.
std::optional<skein::CheckpointManager> open_checkpoints(const Options& o,
                                                         const skein::Runtime& runtime,
                                                         skein::Communicator& comm) {
  std::optional<skein::CheckpointManager> checkpoints;
  if (!o.out.empty()) {
    const fs::path out_dir = o.out;
    on_root(runtime, [&] { fs::create_directories(out_dir); });
    skein::CheckpointOptions options;
    options.keep = o.keep;
    checkpoints.emplace(comm, out_dir / "checkpoints", options);
  }
  return checkpoints;
}

// --restart: reads the newest complete checkpoint into u and returns its step; refused on every
// rank (UsageError; AgreedError with status 2 for a damaged one) when there is none, or when its
// grid, dtype or parameters are not the options'.
std::int64_t restore_checkpoint(const Options& o, const RowSetup& s,
                                skein::CheckpointManager& checkpoints,
                                const skein::hdf5::Attributes& attributes, const DistArray& u,
                                bool root) {
  const fs::path dir = fs::path(o.out) / "checkpoints";
  std::optional<skein::CheckpointInfo> latest;
  try {
    latest = checkpoints.latest_complete();
  } catch (const skein::CheckpointError& e) {
    // Rank 0 checked the file and every rank raises: refuse on every rank, with what to do here.
    throw AgreedError(
        fmt::format("--restart: the newest checkpoint cannot be used: {}", e.info().what),
        fmt::format(
            "move the damaged checkpoint (its .h5 and .done files) out of {} to restart from "
            "the one before, or start again with --overwrite",
            dir.string()),
        2);
  }
  if (!latest) {
    throw UsageError(
        fmt::format("--restart: there is no complete checkpoint in {}", dir.string()),
        "run without --restart first (with --checkpoint-every N), or give the --out of that run");
  }
  const auto entry = latest->arrays.find("u");
  if (entry == latest->arrays.end()) {
    throw UsageError(
        fmt::format("--restart: the checkpoint {} has no array 'u': it is not skein-heat's",
                    latest->file.string()));
  }
  if (entry->second.shape != skein::Shape{s.ny, o.nx} || entry->second.dtype != s.dtype) {
    throw UsageError(
        fmt::format(
            "--restart: the checkpoint {} holds a {} grid of {} (rows x columns), but the options "
            "ask for {} of {}",
            latest->file.string(), skein::to_string(entry->second.shape),
            skein::name(entry->second.dtype), skein::to_string(skein::Shape{s.ny, o.nx}), o.dtype),
        "give the same --nx, --ny (and --weak with as many devices) and --dtype as the run that "
        "wrote it");
  }
  const skein::CheckpointInfo restored = checkpoints.restore(*latest, {{"u", u}});
  // The same grid with other parameters would continue another problem: refuse that too.
  for (const char* key : {"kx", "ky", "alpha", "dt"}) {
    const auto it = restored.attributes.find(key);
    const auto want = attributes.at(key);
    if (it == restored.attributes.end() || it->second != want) {
      throw UsageError(
          fmt::format(
              "--restart: the checkpoint {} has {} = {}, the options give {}",
              latest->file.string(), key,
              it == restored.attributes.end() ? "(none)" : skein::hdf5::to_string(it->second),
              skein::hdf5::to_string(want)),
          "give the same --modes, --alpha, --dt-factor and grid as the run that wrote it");
    }
  }
  const std::int64_t start = restored.step;
  if (start > o.steps) {
    throw UsageError(fmt::format("--restart: the newest checkpoint is at step {}, past --steps {}",
                                 start, o.steps),
                     "give --steps of at least the checkpoint's step");
  }
  if (root)
    fmt::print("  restarted from {} (step {}, written by {} rank(s))\n", latest->file.string(),
               start, latest->ranks);
  return start;
}

// A fresh start over the checkpoints of an earlier run: refused (UsageError), unless --overwrite,
// which deletes them (rank 0).
void clear_old_checkpoints(const Options& o, const skein::Runtime& runtime,
                           skein::CheckpointManager& checkpoints) {
  const auto old = checkpoints.list();
  if (old.empty()) return;
  if (!o.overwrite) {
    throw UsageError(
        fmt::format("{} holds checkpoints of an earlier run (newest: step {})",
                    (fs::path(o.out) / "checkpoints").string(), old.back().step),
        "pass --restart to continue from it, --overwrite to start again (deletes them), or "
        "another --out");
  }
  on_root(runtime, [&] {
    for (const auto& c : old) {
      fs::remove(c.marker);  // the marker first: a checkpoint without one is incomplete
      fs::remove(c.file);
    }
  });
}

// What the time loop did.
struct RowLoop {
  std::vector<double> interval_times;  // seconds per step of each report interval, this rank
  double loop_time = 0;                // the steps' wall time (reports and checkpoints excluded)
  double residual = NAN;               // of the last step, when a report came after it
  std::size_t checkpoints_written = 0;
};

// Steps u from `start` to --steps (u and v swap every step), in intervals that end at every
// --report-every step (a residual and a progress line, its time since `run_start`) and
// --checkpoint-every step (a checkpoint); each interval's steps are timed alone. One warm-up step
// into v first (which the first real step overwrites): first launches, MPI's first messages and
// staging buffers are not timed.
RowLoop advance(const Options& o, const skein::heat::Problem& problem, const Stepper& stepper,
                DistArray& u, DistArray& v, std::optional<skein::CheckpointManager>& checkpoints,
                const skein::hdf5::Attributes& attributes, std::int64_t start,
                Clock::time_point run_start, bool root) {
  RowLoop loop;
  if (start < o.steps) {
    stepper(u, v);
    stepper.synchronize();
  }
  const auto next_multiple = [](std::int64_t step, std::int64_t every) {
    return every > 0 ? (step / every + 1) * every : INT64_MAX;
  };
  std::int64_t step = start;
  while (step < o.steps) {
    const std::int64_t stop = std::min(
        {o.steps, next_multiple(step, o.report_every), next_multiple(step, o.checkpoint_every)});
    const std::int64_t n = stop - step;
    const auto interval_start = Clock::now();
    for (; step < stop; ++step) {
      stepper(u, v);
      std::swap(u, v);
    }
    stepper.synchronize();
    const double t = seconds(interval_start);
    loop.loop_time += t;
    loop.interval_times.push_back(t / static_cast<double>(n));

    if (step == o.steps || (o.report_every > 0 && step % o.report_every == 0)) {
      loop.residual = skein::heat::max_difference(u, v);
      if (root) {
        fmt::print(
            "step {:>9}/{}  t = {:<10.6g}  residual {:.3e}  {:10.1f} steps/s  elapsed {:.2f} s\n",
            step, o.steps, static_cast<double>(step) * problem.dt, loop.residual,
            static_cast<double>(n) / t, seconds(run_start));
        std::fflush(stdout);
      }
    }
    if (checkpoints && o.checkpoint_every > 0 && step % o.checkpoint_every == 0) {
      const auto info =
          checkpoints->write(step, static_cast<double>(step) * problem.dt, {{"u", u}}, attributes);
      ++loop.checkpoints_written;
      if (root) {
        fmt::print("  checkpoint {} ({})\n", info.file.string(), skein::format_bytes(info.bytes));
        std::fflush(stdout);
      }
    }
  }
  return loop;
}

// The files of the end of the run: DIR/heat.h5 (collective) with --out, the image with --png.
struct RowFiles {
  std::vector<std::string> paths;
  std::optional<skein::heat::ImageInfo> image;
};

RowFiles write_files(const Options& o, skein::Communicator& comm,
                     const skein::heat::Problem& problem, const skein::hdf5::Attributes& attributes,
                     const DistArray& u) {
  RowFiles files;
  const double time = static_cast<double>(o.steps) * problem.dt;
  if (!o.out.empty()) {
    const std::string path = (fs::path(o.out) / "heat.h5").string();
    auto file = skein::hdf5::File::create(comm, path);
    skein::hdf5::WriteOptions write;
    write.step = o.steps;
    write.time = time;
    write.attributes = attributes;
    write.attributes["step"] = o.steps;
    write.attributes["time"] = time;
    file.write("u", u, write);
    file.close();
    files.paths.push_back(path);
  }
  if (!o.png.empty()) {
    files.image = skein::heat::write_png(u, o.png, o.png_max_side);
    files.paths.push_back(o.png);
  }
  return files;
}

// Everything the summary and --json say (rank 0).
struct RowReport {
  const Options& o;
  const RowSetup& setup;
  const skein::heat::StencilShape& shape;
  std::size_t devices = 0;
  int ranks = 0;
  std::string api;
  std::int64_t start = 0;
  RowLoop loop;
  double run_time = 0;
  skein::heat::CheckResult check;
  std::optional<Performance> perf;  // when steps ran
  RowFiles files;
  std::vector<skein::CheckpointInfo> kept;
};

void print_performance(const RowReport& r) {
  const Performance& perf = *r.perf;
  fmt::print("  step time   {} (median of {} interval(s); mean {}), {:.3g} Gpoints/s\n",
             format_time(perf.t_step), perf.intervals, format_time(perf.t_step_mean),
             static_cast<double>(r.o.nx * r.setup.ny) / perf.t_step / 1e9);
  fmt::print(
      "  floor       {} per step: {} read + written per device at {:.1f} GB/s (device copy, "
      "measured); "
      "floor / step = {:.3f}\n",
      format_time(perf.floor), skein::format_bytes(perf.bytes_per_step), perf.copy_gbps,
      perf.floor / perf.t_step);
  fmt::print(
      "  kernel      {} per step (device time), floor / kernel = {:.3f}; halo exchange {} = {:.1f} "
      "% of a "
      "step\n",
      format_time(perf.t_kernel), perf.floor / perf.t_kernel, format_time(perf.t_halo),
      100 * perf.t_halo / perf.t_step);
  fmt::print("  stencil     {}\n", r.shape.describe());
  const double exposed = std::max(0.0, perf.t_step - perf.t_compute);
  fmt::print(
      "  halo        {}: the step's kernels alone take {} per step; exposed halo time "
      "(step - kernels) {} = {:.1f} % of a step\n",
      perf.overlapped ? "overlapped with the interior" : "exchanged before the kernel",
      format_time(perf.t_compute), format_time(exposed), 100 * exposed / perf.t_step);
}

void print_row_summary(const RowReport& r) {
  const Options& o = r.o;
  const std::size_t ny = r.setup.ny;
  const double time = static_cast<double>(o.steps) * r.setup.problem.dt;
  const fs::path out_dir = o.out;
  fmt::print("skein-heat summary\n");
  fmt::print("  grid        {} x {} ({} points), {}, {} device(s) on {} rank(s)\n", o.nx, ny,
             o.nx * ny, o.dtype, r.devices, r.ranks);
  fmt::print("  steps       {} (this run: {}{}), t = {:.6g}, {:.3f} s in all\n", o.steps,
             o.steps - r.start, r.start > 0 ? fmt::format(", restarted at step {}", r.start) : "",
             time, r.run_time);
  if (!std::isnan(r.loop.residual)) {
    fmt::print("  residual    {:.3e} (max |u_new - u_old| of the last step)\n", r.loop.residual);
  }
  fmt::print("  check       max |u - lambda^n u0| = {:.3e}, tolerance {:.3e}: {}\n",
             r.check.max_error, r.check.tolerance, r.check.passed() ? "passed" : "FAILED");
  fmt::print(
      "              max |u - exp(-(kx^2+ky^2) pi^2 alpha t) u0| = {:.3e} (truncation error, for "
      "information)\n",
      r.check.max_error_continuous);
  if (r.perf) print_performance(r);
  if (const auto& image = r.files.image) {
    fmt::print("  image       {}: {} x {} pixels{}, colours from {:.3g} to {:.3g}\n", o.png,
               image->width, image->height,
               image->downsampled ? fmt::format(" (the {} x {} grid sampled: --png-size {})", o.nx,
                                                ny, o.png_max_side)
                                  : "",
               image->min, image->max);
  }
  if (!o.out.empty()) {
    fmt::print("  files       {}\n", (out_dir / "heat.h5").string());
    if (r.loop.checkpoints_written > 0 || !r.kept.empty()) {
      fmt::print("  checkpoints {} written, {} kept in {}{}\n", r.loop.checkpoints_written,
                 r.kept.size(), (out_dir / "checkpoints").string(),
                 r.kept.empty() ? "" : fmt::format(" (newest: step {})", r.kept.back().step));
    }
  }
  if (!r.check.passed()) {
    fmt::print(stderr,
               "skein-heat: CHECK FAILED: the final field differs from the discrete analytic "
               "solution by {:.3e}, "
               "{:.3g} times the tolerance {:.3e}\n",
               r.check.max_error, r.check.max_error / r.check.tolerance, r.check.tolerance);
  }
}

void add_performance(nlohmann::json& j, const RowReport& r) {
  const Performance& perf = *r.perf;
  j["t_step_s"] = perf.t_step;
  j["t_step_mean_s"] = perf.t_step_mean;
  j["t_kernel_s"] = perf.t_kernel;
  j["t_halo_s"] = perf.t_halo;
  j["halo_share"] = perf.t_halo / perf.t_step;
  j["halo_exchange"] = perf.overlapped ? "overlapped" : "serial";
  if (perf.overlapped) j["halo_priority"] = r.o.halo_priority;
  j["t_compute_s"] = perf.t_compute;
  j["halo_exposed_s"] = std::max(0.0, perf.t_step - perf.t_compute);
  j["halo_exposed_share"] = std::max(0.0, perf.t_step - perf.t_compute) / perf.t_step;
  j["floor_s"] = perf.floor;
  j["floor_ratio"] = perf.floor / perf.t_step;
  j["kernel_floor_ratio"] = perf.floor / perf.t_kernel;
  j["copy_GBps"] = perf.copy_gbps;
  j["bytes_per_step_per_device"] = perf.bytes_per_step;
  j["bandwidth_GBps"] = static_cast<double>(perf.bytes_per_step) / perf.t_step / 1e9;
  j["points_per_s"] = static_cast<double>(r.o.nx * r.setup.ny) / perf.t_step;
  j["intervals"] = perf.intervals;
}

void write_row_json(const RowReport& r) {
  const Options& o = r.o;
  const double residual = r.loop.residual;
  nlohmann::json j = {
      {"tool", "skein-heat"},
      {"api", r.api},
      {"devices", r.devices},
      {"ranks", r.ranks},
      {"nx", o.nx},
      {"ny", r.setup.ny},
      {"ny_per_device", o.weak ? nlohmann::json(o.ny) : nlohmann::json(nullptr)},
      {"weak", o.weak},
      {"dtype", o.dtype},
      {"steps", o.steps},
      {"start_step", r.start},
      {"time", static_cast<double>(o.steps) * r.setup.problem.dt},
      {"dt", r.setup.problem.dt},
      {"run_s", r.run_time},
      {"residual", std::isnan(residual) ? nlohmann::json(nullptr) : nlohmann::json(residual)},
      {"check",
       {{"passed", r.check.passed()},
        {"max_error", r.check.max_error},
        {"tolerance", r.check.tolerance},
        {"max_error_continuous", r.check.max_error_continuous}}},
      {"stencil_variant", skein::heat::name(r.shape.variant)},
      {"stencil_shape",
       {{"elements_per_item", r.shape.w},
        {"rows_per_item", r.shape.r},
        {"local", {r.shape.local_x, r.shape.local_y}}}},
      {"files", r.files.paths}};
  if (r.perf) add_performance(j, r);
  std::ofstream(o.json_file) << j.dump(2) << "\n";
}

// The 2-D run: a field of ny rows x nx columns split by rows over every device of every rank,
// stepped from u into v and back; checked against the exact solution at the end.
int simulate(const Options& o, const skein::Runtime& runtime) {
  const bool root = runtime.rank() == 0;
  skein::Communicator comm(runtime);
  const skein::Queue queue(comm.context());
  const RowSetup setup = check_row_options(o, comm.size());
  const skein::heat::Problem& problem = setup.problem;

  // The field: two arrays with one halo row, stepped from one into the other.
  const skein::BlockLayout layout = skein::BlockLayout::over(
      comm, {setup.ny, o.nx}, skein::RowSplit::even(), skein::Halo{1, false});
  DistArray u(comm, queue, layout, setup.dtype);
  DistArray v(comm, queue, layout, setup.dtype);
  const std::optional<skein::Queue> halo_queue = make_halo_queue(o, comm, queue);
  skein::heat::StencilConfig stencil_config = setup.stencil;
  stencil_config.edges_queue = halo_queue;
  const skein::heat::Stencil stencil(u, problem, stencil_config);
  const Stepper stepper(u, stencil, halo_queue);
  if (root) print_row_header(o, runtime, comm, setup, layout, stencil);

  // Where the run starts: a checkpoint with --restart, else the initial condition.
  const skein::hdf5::Attributes attributes = row_attributes(o, setup);
  std::optional<skein::CheckpointManager> checkpoints = open_checkpoints(o, runtime, comm);
  std::int64_t start = 0;
  if (o.restart) {
    start = restore_checkpoint(o, setup, *checkpoints, attributes, u, root);
  } else {
    if (checkpoints) clear_old_checkpoints(o, runtime, *checkpoints);
    skein::heat::set_initial(u, problem);
  }

  const auto run_start = Clock::now();
  RowReport report{.o = o, .setup = setup, .shape = stencil.shape()};
  report.loop = advance(o, problem, stepper, u, v, checkpoints, attributes, start, run_start, root);
  report.run_time = seconds(run_start);
  report.check = skein::heat::check(u, problem, o.steps);
  if (!report.loop.interval_times.empty()) {
    report.perf = measure(u, v, stencil, stepper, report.loop.interval_times, report.loop.loop_time,
                          o.steps - start);
  }
  report.files = write_files(o, comm, problem, attributes, u);
  if (checkpoints) report.kept = checkpoints->list();
  report.devices = comm.size();
  report.ranks = runtime.size();
  report.api = std::string(comm.context().api().name());
  report.start = start;
  if (root) {
    print_row_summary(report);
    if (!o.json_file.empty()) write_row_json(report);
    std::fflush(stdout);
  }
  return report.check.passed() ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  skein::cli::Parser app{
      "skein-heat: 2-D heat diffusion on every device of every rank (run under mpirun), "
      "checked against the analytic solution"};
  Options o;
  app.show_defaults();  // --help shows the defaults
  app.add_option("--nx", o.nx, "Interior grid points along x (columns)")
      .range(std::size_t{1}, (std::size_t{1} << 32) - 1);
  app.add_option("--ny", o.ny, "Interior grid points along y (rows; per device with --weak)")
      .range(std::size_t{1}, (std::size_t{1} << 32) - 1);
  app.add_option("--steps", o.steps, "Time steps (the step to end at, also after --restart)")
      .range(std::int64_t{0}, std::int64_t{1} << 40);
  app.add_option("--dtype", o.dtype, "float32 or float64").one_of({"float32", "float64"});
  app.add_option("--alpha", o.alpha, "Diffusivity");
  app.add_option("--dt-factor", o.dt_factor, "dt = factor * min(hx, hy)^2 / alpha, in (0, 0.25]");
  app.add_option("--modes", o.modes,
                 "Mode KX,KY of the initial condition sin(KX pi x) sin(KY pi y)")
      .delimiter(',')
      .expected(2);
  app.add_option("--report-every", o.report_every,
                 "Residual and a progress line every N steps (0: only at the end)")
      .range(std::int64_t{0}, std::int64_t{1} << 40);
  app.add_option("--checkpoint-every", o.checkpoint_every,
                 "A checkpoint every N steps in DIR/checkpoints (0: none)")
      .range(std::int64_t{0}, std::int64_t{1} << 40);
  app.add_option("--keep", o.keep, "Checkpoints kept (the newest; 0: all)");
  app.add_option("--out", o.out, "Directory for heat.h5 (the final field) and checkpoints/");
  app.add_flag("--restart", o.restart, "Continue from the newest complete checkpoint in --out");
  app.add_flag("--overwrite", o.overwrite,
               "Start again even though --out holds checkpoints (deletes them)");
  app.add_option("--png", o.png, "Write an image of the final field to this PNG file");
  app.add_option("--png-size", o.png_max_side,
                 "Most pixels per side of the image (larger grids are sampled)")
      .range(std::size_t{1}, std::size_t{16384});
  app.add_flag(
      "--weak", o.weak,
      "For weak scaling: --ny is rows per device (global rows = ny x devices); on a process grid "
      "every device's block is --nx x --ny (x --nz), the global grid that times the process grid");
  app.add_option("--devices-per-rank", o.devices_per_rank,
                 "Devices each rank drives (default: SKEIN_DEVICES_PER_RANK or an even share)");
  app.add_option("--json", o.json_file, "Also write the summary to this JSON file (rank 0)");
  app.add_option("--halo-exchange", o.halo_exchange,
                 "overlapped: halos move on a second queue while the interior is computed; serial: "
                 "exchange, then compute")
      .one_of({"overlapped", "serial"});
  app.add_option(
         "--halo-priority", o.halo_priority,
         "The priority of the overlapped step's halo queue (its copies and edge kernel): high "
         "(the device's most urgent, the default) or low (that of every other queue)")
      .one_of({"high", "low"});
  app.add_option("--tile3d", o.tile3d,
                 "On a process grid (--nz or --grid): the stencil kernel's work groups as XxYxZ, X "
                 "x Y items each marching along z over Z planes, or auto (the default: 64x8x2 for "
                 "float64, 64x8x4 for float32, the fastest measured on an H200); a tuning knob, "
                 "every tile gives the same bits");
  app.add_option("--unroll3d", o.unroll3d,
                 "On a process grid: unroll the kernel's march along z this many times (1: as the "
                 "compiler chooses; default 0: auto's 2 for float64 and 4 for float32, the whole "
                 "march, or a given tile's Z up to 16)")
      .range(std::size_t{0}, std::size_t{64});
  app.add_option("--kernel3d", o.kernel3d,
                 "On a process grid in 3-D: how the kernel finds the x/y neighbours: march (the "
                 "default: from global memory), shared (each plane's tile loaded once into local "
                 "memory), column2 / column4 (2 / 4 points along y per item, the y neighbours "
                 "inside from registers); all give the same bits");
  app.add_option("--steps-per-pass", o.steps_per_pass,
                 "On a process grid in 3-D: time steps per kernel launch, 1 (the default) or 2 "
                 "(each launch reads the field once for two steps; a halo of 2 exchanged every "
                 "second step; the march kernel only); both give the same bits")
      .range(std::size_t{1}, std::size_t{2});
  app.add_option("--stencil-variant", o.stencil_variant,
                 "How the stencil kernel's work items map onto the grid: rows (W columns x R rows "
                 "each), aligned (one element per row, each warp on aligned 128-byte lines), flat "
                 "(one aligned 16-byte vector per row, rows seen as the flat array), auto (what "
                 "suits the grid: flat for float32 rows of odd width, rows otherwise); all give "
                 "the same bits")
      .one_of({"auto", "rows", "aligned", "flat"});
  app.add_option("--stencil-shape", o.stencil_shape,
                 "R,LX,LY: the stencil's rows per work item (1-16) and work groups of LX x LY work "
                 "items, for tuning (default: the variant's)")
      .delimiter(',')
      .expected(3)
      .range(std::size_t{1}, std::size_t{1024});
  app.add_option("--nz", o.nz,
                 "Interior grid points along z: a 3-D run (7-point stencil) on a process grid")
      .range(std::size_t{1}, (std::size_t{1} << 32) - 1);
  app.add_option("--mode-z", o.mode_z, "Mode KZ of the initial condition along z (3-D runs)");
  app.add_option(
      "--grid", o.grid,
      "Process grid PxQ (2-D) or PxQxR (3-D, z x y x x) over every device of every rank, 0 for an "
      "axis chosen by the app (default: chosen); runs on a process grid");
  app.add_option(
         "--boundary", o.boundary,
         "Walls: open (u = 0 beyond them, the 2-D default), periodic or reflect (zero flux); "
         "other than open runs on a process grid")
      .one_of({"open", "periodic", "reflect"});
  if (auto status = app.parse(argc, argv)) return *status;

  try {
    skein::PlacementOptions placement;
    if (o.devices_per_rank > 0) placement.devices_per_rank = o.devices_per_rank;
    skein::Runtime runtime(&argc, &argv, placement);
    try {
      return o.on_grid() ? simulate_grid(o, runtime) : simulate(o, runtime);
    } catch (const AgreedError& e) {
      if (runtime.rank() == 0) {
        fmt::print(stderr, "skein-heat: error: {}\n", e.info().what);
        if (!e.info().hint.empty()) fmt::print(stderr, "  what to do: {}\n", e.info().hint);
      }
      return e.status();
    } catch (const std::exception& e) {
      // One rank failing must end the job, not leave the others waiting in a collective.
      std::fprintf(stderr, "skein-heat: rank %d: %s\n", runtime.rank(), e.what());
      std::fflush(stderr);
      if (runtime.size() > 1) MPI_Abort(runtime.comm(), 2);
      return 2;
    }
  } catch (const std::exception& e) {
    // The runtime itself failed (placement, MPI): every rank sees that on its own.
    std::fprintf(stderr, "skein-heat: %s\n", e.what());
    return 2;
  }
}

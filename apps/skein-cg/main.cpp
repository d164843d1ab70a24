// SPDX-License-Identifier: BSD-3-Clause
// skein-cg: conjugate gradients for the 2-D Poisson equation, on every device of every rank, under
// mpirun:
//
//   mpirun -np 4 skein-cg --nx 4096 --ny 4096 --dtype float64
//   mpirun -np 2 skein-cg --nx 2048 --ny 512 --weak --report-every 50     (512 rows per device)
//   mpirun -np 2 skein-cg --nx 33 --ny 29 --deterministic --json cg.json
//
// The system A x = b (cg_poisson.hpp): A is the 5-point Poisson matrix on an nx x ny grid; b is
// A x* for a known x* (so the error of x can be measured too), or all ones with --rhs ones.
//
// How it maps onto Skein: every vector is a DistArray of ny rows x nx columns split by rows over
// every device of every rank, with one halo row above and below each block, or with --grid PxQ a
// GridArray over a P x Q grid of the devices (P along the rows), one ghost cell on every side.
//   matvec          exchange_halos(), then the stencil kernel of A (cg_poisson.hpp) over every
//                   local block (dist::stencil), with p . w in the same pass (dist::stencil_reduce)
//   vector updates  x += alpha p and r -= alpha w with r . r in one pass (dist::update_and_reduce),
//                   p = r + beta p with dist::axpy
//   forms           --form fused (the above: 11 vector passes per iteration), unfused (each step
//                   its own call, 14), pipelined (one overlapped reduction per iteration, 17),
//                   single-reduction (Chronopoulos-Gear: 11 passes, one collective per iteration,
//                   dist::*_members then dist::combine_members; cg_single.hpp): see cg_solver.hpp.
//                   In the fast mode the fused form keeps p . w and r . r on the devices
//                   (dist::*_to_devices, read by the next kernels as raw parameters) and the host
//                   reads them one iteration late (cg_device.hpp; --scalars host: the host reads
//                   them in every iteration)
//   dots            reduction kernels, then all_reduce over every device, or with --dot blas
//                   dist::blas_dot (cuBLAS / CLBlast; the unfused form). With --deterministic, the
//                   deterministic reductions: every dot is the same canonical tree over global
//                   indices, so the iterations and x are bit-identical on any number of devices
//                   and ranks, and between the fused and unfused forms
// x* and b = A x* are made on the devices: x* by a stencil kernel of the global coordinates, b by
// the stencil of A in double (rounded once to the dtype).
//
// Checks (exit status 1 on every rank when one fails):
//   converged   the residual CG updates fell to --tol (relative to ||b||) within --max-iters
//   true        ||b - A x|| / ||b|| from a fresh matvec is within residual_bound()
//   host        on grids of up to 2^20 points (or with --check-host), rank 0 gathers x and
//               recomputes ||b - A x|| / ||b|| in double with its own stencil (host_apply): within
//               the same bound
// Rank 0 prints the progress every --report-every iterations, then a summary (and --json FILE)
// with the time per iteration against its memory floor: the 11 vector passes a CG iteration needs
// at least (read p, write w; read x, p, r, w, write x, r; read r, p, write p) at the device copy's
// bandwidth measured in the same run, and the passes the form makes.
#include <mpi.h>

#include <fmt/format.h>
#include <skein_cli/cli.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <skein/dist_ops.hpp>
#include <skein/runtime.hpp>
#include <skein/skein.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "cg_poisson.hpp"
#include "cg_solver.hpp"

namespace {

using skein::DistArray;
using skein::Dtype;
using skein_cg::Grid;

struct Options {
  std::size_t nx = 256;
  std::size_t ny = 256;
  std::optional<double> tol;  // default by dtype: default_tol()
  std::size_t max_iters = 10000;
  std::string dtype = "float64";
  std::string rhs = "solution";   // solution: b = A x*; ones: b = 1
  std::string dot = "reduction";  // reduction | blas
  std::string form = "fused";     // fused | unfused | pipelined | single-reduction
  // Where the fused form keeps p . w and r . r in the fast mode: device | host | auto (device
  // where the communicator has several members: one member has no exchange to wait for, and the
  // host's reads cost it less than the second queue's copies).
  std::string scalars = "auto";
  // With scalars on the devices, p's halo exchange overlapped with the stencil's interior:
  // on | off | auto (on where a rank drives several devices, whose faces are peer copies; off where
  // each rank has one device: on 2 x H200 the interior/edges split then cost more than the NCCL
  // send/recv it hid, docs/performance.md).
  std::string halo_overlap = "auto";
  // With scalars on the devices (the fused form): r . r combined on a second queue while x is
  // updated: on | off | auto (on over NCCL with several members; off for the MPI backend, whose
  // all_reduce waits on the host: docs/performance.md).
  std::string reduce_overlap = "auto";
  std::string grid;  // PxQ: a GridArray over a P x Q grid of the devices
  std::size_t report_every = 100;
  std::size_t warmup = 0;  // iterations run and discarded before the timed solve
  bool deterministic = false;
  bool step_times = false;
  bool weak = false;
  bool check_host = false;
  std::size_t devices_per_rank = 0;
  std::string json_file;
};

// The host check gathers x on rank 0: automatic up to this many points.
constexpr std::size_t kHostCheckPoints = std::size_t{1} << 20;
// The fewest vector passes a CG iteration makes (cg_solver.hpp): the floor's count.
constexpr std::size_t kFloorPasses = 11;

// A tolerance each dtype reaches comfortably on the grids CG is practical for.
double default_tol(Dtype dtype) { return dtype == Dtype::float32 ? 1e-6 : 1e-10; }

// The largest ||b - A x|| / ||b|| to accept for a CG that stopped at `tol`. Floating point CG
// cannot get closer than rounding allows: forming b - A x in precision eps loses about
// eps * ||A|| * ||x|| (||A||_2 < 8 here), and the residual CG updates drifts from the true one by
// such terms at each iteration, which add up like a random walk over the iterations (Greenbaum,
// "Iterative Methods for Solving Linear Systems", 7.3). With float64 and a moderate tol the
// first term dominates; with float32 the second can, on grids where ||x|| >> ||b||.
double residual_bound(double tol, double eps, std::size_t iterations, double x_over_b) {
  const double norm_a = 8;
  return tol + 2 * eps * norm_a * (1 + std::sqrt(static_cast<double>(iterations))) * x_over_b;
}

// FNV-1a over x's bytes: a compact fingerprint to compare runs on different rank counts.
std::string fnv1a64(std::span<const std::byte> bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (std::byte b : bytes) {
    h ^= static_cast<std::uint64_t>(b);
    h *= 0x100000001b3ULL;
  }
  return fmt::format("{:016x}", h);
}

// --grid PxQ: {P, Q}, or empty.
std::vector<std::size_t> parse_grid(const std::string& text) {
  if (text.empty()) return {};
  const auto x = text.find('x');
  std::size_t p = 0, q = 0;
  if (x == std::string::npos || std::sscanf(text.c_str(), "%zux%zu", &p, &q) != 2 || p == 0 ||
      q == 0) {
    throw skein::LogicError(
        skein::ErrorInfo{.what = fmt::format("--grid is '{}'", text),
                         .call = "skein-cg",
                         .hint = "Give the process grid as PxQ, e.g. 2x2 (P along the rows)."});
  }
  return {p, q};
}

// What the run measured and checked, for the summary.
struct Outcome {
  skein_cg::CgResult cg;
  double true_residual = 0, bound = 0, b_norm = 0, x_norm = 0;
  std::optional<double> error, host_residual;
  std::string checksum;
  double copy_seconds = 0, copy_gbps = 0;
  bool true_ok = false, host_ok = false, passed = false;
};

// The problem's vectors on one kind of distributed array (V), made by `make(halo, dtype)`.
template <class T, class V, class Make>
Outcome run_problem(const Options& o, const skein::Runtime& runtime, const Grid& grid,
                    const Make& make) {
  const Dtype dtype = skein::dtype_of<T>;
  const bool printer = runtime.rank() == 0;
  skein_cg::CgSettings settings{.tol = o.tol.value_or(default_tol(dtype)),
                                .max_iters = o.max_iters,
                                .form = o.form,
                                .deterministic = o.deterministic,
                                .blas_dots = o.dot == "blas",
                                .device_scalars = o.scalars == "device",
                                .halo_overlap = o.halo_overlap == "on",
                                .reduce_overlap = o.reduce_overlap == "on",
                                .report_every = o.report_every,
                                .printer = printer,
                                .step_times = o.step_times};
  const bool pipelined = o.form == "pipelined";
  const bool single = o.form == "single-reduction";
  const V b = make(false, dtype);
  skein_cg::CgVectors<V> v{make(false, dtype),
                           make(pipelined || single, dtype),
                           make(true, dtype),
                           make(pipelined, dtype),
                           {},
                           {},
                           {}};
  if (pipelined) {
    v.s.emplace(make(false, dtype));
    v.z.emplace(make(false, dtype));
    v.q.emplace(make(false, dtype));
  }
  if (single) v.s.emplace(make(false, dtype));
  if (settings.device_scalars && settings.reduce_overlap) v.p_next.emplace(make(true, dtype));
  const skein_cg::PoissonKernels a;
  std::optional<V> x_exact;
  if (o.rhs == "ones") {
    skein::dist::fill(b, skein::Operand(T{1}));
  } else {
    // x* from the global coordinates, b = A x* in double, each rounded once to T.
    const V x64 = make(true, Dtype::float64), b64 = make(false, Dtype::float64);
    skein::dist::stencil(skein_cg::exact_solution_kernel(), {x64});
    x64.exchange_halos();
    skein::dist::stencil(a.apply, {x64, b64});
    const skein::ElementwiseKernel round("double a", "T out", "out = (T)a", {.name = "cg_round"});
    x_exact.emplace(make(false, dtype));
    skein::dist::elementwise(round, {x64, *x_exact});
    skein::dist::elementwise(round, {b64, b});
  }
  Outcome out;
  if (o.warmup > 0) {
    // Compiles (or loads) every kernel of the loop, as a benchmark's warm-up: then the solve
    // again from x = 0.
    skein_cg::CgSettings warm = settings;
    warm.max_iters = o.warmup;
    warm.report_every = 0;
    warm.step_times = false;
    (void)skein_cg::conjugate_gradients<T>(warm, a, b, v, runtime.comm());
  }
  out.cg = skein_cg::conjugate_gradients<T>(settings, a, b, v, runtime.comm());

  // The true residual, from scratch: r = b - A x with a fresh matvec (p and w are free now).
  const skein::dist::DistReductionOptions reduction{.deterministic = o.deterministic};
  skein::dist::copy(v.x, v.p);
  v.p.exchange_halos();
  skein::dist::stencil(a.apply, {v.p, v.w});
  skein::dist::axpy(skein::Operand(T{-1}), v.w, b, v.r);
  out.b_norm = skein::dist::nrm2(b, reduction);
  out.x_norm = skein::dist::nrm2(v.x, reduction);
  out.true_residual = out.b_norm == 0 ? 0 : skein::dist::nrm2(v.r, reduction) / out.b_norm;
  out.bound = residual_bound(settings.tol, std::numeric_limits<T>::epsilon(), out.cg.iterations,
                             out.b_norm == 0 ? 0 : out.x_norm / out.b_norm);
  if (x_exact) {
    skein::dist::axpy(skein::Operand(T{-1}), *x_exact, v.x, v.r);  // r = x - x*
    out.error = skein::dist::nrm2(v.r, reduction) / skein::dist::nrm2(*x_exact, reduction);
  }

  // The host check: x gathered to rank 0, b - A x in double with the host's own stencil and the
  // host's own x* (exact_rhs_rows).
  if (o.check_host || grid.size() <= kHostCheckPoints) {
    const std::vector<T> xs = v.x.template gather<T>(0);
    double value = 0;
    if (printer) {
      out.checksum = fnv1a64(std::as_bytes(std::span<const T>(xs)));
      const std::vector<double> xd(xs.begin(), xs.end());
      std::vector<double> bd = o.rhs == "ones" ? std::vector<double>(grid.size(), 1.0)
                                               : skein_cg::exact_rhs_rows(grid, 0, grid.ny);
      for (double& e : bd) e = static_cast<double>(static_cast<T>(e));  // b as the devices hold it
      std::vector<double> ax(grid.size());
      skein_cg::host_apply(grid, xd, ax);
      double rr = 0, bb = 0;
      for (std::size_t k = 0; k < grid.size(); ++k) {
        rr += (bd[k] - ax[k]) * (bd[k] - ax[k]);
        bb += bd[k] * bd[k];
      }
      value = bb == 0 ? std::sqrt(rr) : std::sqrt(rr / bb);
    }
    MPI_Bcast(&value, 1, MPI_DOUBLE, 0, runtime.comm());
    out.host_residual = value;
  }
  out.true_ok = out.true_residual <= out.bound;
  out.host_ok = !out.host_residual || *out.host_residual <= out.bound;
  out.passed = out.cg.converged && out.true_ok && out.host_ok;

  // The device copy's time per vector (reads one, writes one: 2 passes), on the slowest rank, in
  // batches of 10 copies (so that the launch and the wait weigh little), median of 5 batches
  // after one warm-up. Writes w only.
  constexpr int kCopies = 10;
  std::vector<double> copies;
  for (int i = 0; i <= 5; ++i) {
    v.w.queue().synchronize();
    MPI_Barrier(runtime.comm());
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < kCopies; ++k) skein::dist::copy(v.r, v.w);
    v.w.queue().synchronize();
    double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / kCopies;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, runtime.comm());
    if (i > 0) copies.push_back(t);
  }
  std::sort(copies.begin(), copies.end());
  out.copy_seconds = copies[copies.size() / 2];
  out.copy_gbps =
      2.0 * static_cast<double>(grid.size() * skein::itemsize(dtype)) / out.copy_seconds / 1e9;
  return out;
}

void print_summary(const Options& o, const Grid& grid, double tol, const Outcome& out) {
  auto verdict = [](bool ok) { return ok ? "ok" : "FAILED"; };
  const auto& cg = out.cg;
  const Dtype dtype = o.dtype == "float32" ? Dtype::float32 : Dtype::float64;
  fmt::print("# summary\n");
  if (cg.converged) {
    fmt::print("  converged                  yes, after {} iterations\n", cg.iterations);
  } else if (cg.breakdown) {
    fmt::print(
        "  converged                  no: CG broke down after {} iterations (p . A p <= 0 or not "
        "finite)\n",
        cg.iterations);
  } else {
    fmt::print("  converged                  no, not within {} iterations\n", o.max_iters);
  }
  fmt::print("  relative residual (CG)     {:.3e}  (tol {:.1e})\n", cg.relative_residual, tol);
  fmt::print("  true relative residual     {:.3e}  (bound {:.3e}: {})\n", out.true_residual,
             out.bound, verdict(out.true_ok));
  if (out.bound >= 0.1) {
    // Then even a wrong x could pass: say so rather than pretend the check is tight.
    fmt::print(
        "  note: {} rounding alone allows residuals near {:.1e} here (||x|| / ||b|| = {:.3g}); "
        "float64 "
        "checks this grid tightly\n",
        o.dtype, out.bound, out.b_norm == 0 ? 0 : out.x_norm / out.b_norm);
  }
  if (out.host_residual) {
    fmt::print("  host check, in double      {:.3e}  ({})\n", *out.host_residual,
               verdict(out.host_ok));
  } else {
    fmt::print("  host check                 skipped: over {} points (--check-host forces it)\n",
               kHostCheckPoints);
  }
  if (out.error) fmt::print("  error ||x - x*|| / ||x*||  {:.3e}\n", *out.error);
  const double per_iteration =
      cg.iterations > 0 ? cg.seconds / static_cast<double>(cg.iterations) : 0;
  const double vector_bytes = static_cast<double>(grid.size() * skein::itemsize(dtype));
  const std::size_t passes = skein_cg::passes_per_iteration(
      {.form = o.form, .deterministic = o.deterministic, .blas_dots = o.dot == "blas"});
  fmt::print(
      "  time                       {:.4f} s, {:.3f} ms per iteration, {:.2f} GB/s ({} vector "
      "passes per "
      "iteration, form {})\n",
      cg.seconds, per_iteration * 1e3,
      per_iteration > 0 ? static_cast<double>(passes) * vector_bytes / per_iteration / 1e9 : 0.0,
      passes, o.form);
  if (per_iteration > 0) {
    const double floor = static_cast<double>(kFloorPasses) / 2 * out.copy_seconds;
    fmt::print(
        "  floor                      {:.3f} ms per iteration: {} vector passes at the device "
        "copy's {:.1f} "
        "GB/s (measured); floor / iteration = {:.3f}\n",
        floor * 1e3, kFloorPasses, out.copy_gbps, floor / per_iteration);
  }
  if (!out.checksum.empty()) fmt::print("  x fingerprint (FNV-1a)     {}\n", out.checksum);
  std::fflush(stdout);
  if (!cg.converged) {
    fmt::print(
        stderr,
        "skein-cg: did not converge: relative residual {:.3e} > tol {:.1e} after {} iterations{}\n",
        cg.relative_residual, tol, cg.iterations,
        cg.breakdown ? " (breakdown)" : "; raise --max-iters or --tol");
  }
  if (!out.true_ok) {
    fmt::print(stderr, "skein-cg: true relative residual {:.3e} exceeds the bound {:.3e}\n",
               out.true_residual, out.bound);
  }
  if (!out.host_ok) {
    fmt::print(stderr,
               "skein-cg: host-computed relative residual {:.3e} exceeds the bound {:.3e}\n",
               *out.host_residual, out.bound);
  }
}

nlohmann::json summary_json(const Options& o, const Grid& grid, double tol, const Outcome& out,
                            const skein::Runtime& runtime, std::size_t devices) {
  const auto& cg = out.cg;
  const Dtype dtype = o.dtype == "float32" ? Dtype::float32 : Dtype::float64;
  const double per_iteration =
      cg.iterations > 0 ? cg.seconds / static_cast<double>(cg.iterations) : 0;
  const double floor = static_cast<double>(kFloorPasses) / 2 * out.copy_seconds;
  const std::size_t passes = skein_cg::passes_per_iteration(
      {.form = o.form, .deterministic = o.deterministic, .blas_dots = o.dot == "blas"});
  const double vector_bytes = static_cast<double>(grid.size() * skein::itemsize(dtype));
  return nlohmann::json{
      {"tool", "skein-cg"},
      {"nx", grid.nx},
      {"ny", grid.ny},
      {"unknowns", grid.size()},
      {"dtype", o.dtype},
      {"rhs", o.rhs},
      {"dot", o.dot},
      {"form", o.form},
      {"scalars", o.scalars},
      {"halo_overlap", o.halo_overlap},
      {"reduce_overlap", o.reduce_overlap},
      {"grid", o.grid.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.grid)},
      {"deterministic", o.deterministic},
      {"ranks", runtime.size()},
      {"devices", devices},
      {"api", std::string(runtime.context().api().name())},
      {"tol", tol},
      {"max_iters", o.max_iters},
      {"converged", cg.converged},
      {"breakdown", cg.breakdown},
      {"iterations", cg.iterations},
      {"relative_residual", cg.relative_residual},
      {"true_relative_residual", out.true_residual},
      {"residual_bound", out.bound},
      {"host_relative_residual", out.host_residual ? nlohmann::json(*out.host_residual) : nullptr},
      {"error", out.error ? nlohmann::json(*out.error) : nullptr},
      {"seconds", cg.seconds},
      {"seconds_per_iteration", per_iteration},
      {"passes_per_iteration", passes},
      {"gb_per_s",
       per_iteration > 0 ? static_cast<double>(passes) * vector_bytes / per_iteration / 1e9 : 0.0},
      {"copy_gb_per_s", out.copy_gbps},
      {"floor_passes", kFloorPasses},
      {"floor_seconds_per_iteration", floor},
      {"floor_ratio",
       per_iteration > 0 ? nlohmann::json(floor / per_iteration) : nlohmann::json(nullptr)},
      {"x_fnv1a64", out.checksum.empty() ? nlohmann::json(nullptr) : nlohmann::json(out.checksum)},
      {"passed", out.passed}};
}

// `o` with its automatic choices made for `comm` (scalars, halo_overlap; host scalars where the
// form or a flag needs them).
Options resolved(Options o, const skein::Communicator& comm) {
  if (o.scalars == "auto") o.scalars = comm.size() > 1 ? "device" : "host";
  if ((o.form != "fused" && o.form != "single-reduction") || o.deterministic || o.step_times)
    o.scalars = "host";
  if (o.halo_overlap == "auto") o.halo_overlap = comm.local_size() > 1 ? "on" : "off";
  if (o.reduce_overlap == "auto") {
    o.reduce_overlap =
        comm.backend() == skein::CollectiveBackend::nccl && comm.size() > 1 ? "on" : "off";
  }
  if (o.scalars == "host") o.halo_overlap = "off";
  if (o.scalars == "host" || o.form != "fused") o.reduce_overlap = "off";
  return o;
}

template <class T>
int solve(const Options& given, const skein::Runtime& runtime) {
  skein::Communicator comm(runtime);
  const Options o = resolved(given, comm);
  const skein::Queue queue(runtime.context());
  const Dtype dtype = skein::dtype_of<T>;
  const bool printer = runtime.rank() == 0;
  const Grid grid{o.nx, o.weak ? o.ny * comm.size() : o.ny};
  const double tol = o.tol.value_or(default_tol(dtype));
  const std::vector<std::size_t> pq = parse_grid(o.grid);
  if (!pq.empty() && pq[0] * pq[1] != comm.size()) {
    throw skein::LogicError(skein::ErrorInfo{
        .what = fmt::format("--grid {} has {} places for {} devices", o.grid, pq[0] * pq[1],
                            comm.size()),
        .call = "skein-cg",
        .hint = "Give a grid of as many places as there are devices (ranks x devices per rank)."});
  }
  if (printer) {
    fmt::print("# skein-cg: 2-D Poisson, {} x {} grid ({} unknowns{}), {}, b = {}\n", grid.nx,
               grid.ny, grid.size(), o.weak ? fmt::format(", {} rows per device", o.ny) : "",
               o.dtype, o.rhs == "ones" ? "1" : "A x*");
    fmt::print("# {} device(s) on {} rank(s), {}, {}; {}\n", comm.size(), runtime.size(),
               std::string(runtime.context().api().name()), comm.backend_description(),
               pq.empty() ? "row blocks" : fmt::format("a {} x {} process grid", pq[0], pq[1]));
    const bool on_devices = o.scalars == "device";
    fmt::print("# form {}; dots: {}{}{}; tol {:.1e}, at most {} iterations\n", o.form,
               o.dot == "blas" ? "BLAS (cuBLAS / CLBlast)" : "reduction kernels",
               o.deterministic ? ", deterministic" : "",
               on_devices
                   ? fmt::format(", scalars on the devices, halo overlap {}, reduce overlap {}",
                                 o.halo_overlap, o.reduce_overlap)
                   : std::string(),
               tol, o.max_iters);
    std::fflush(stdout);
  }
  Outcome out;
  if (pq.empty()) {
    // One layout for the vectors with a halo and one without: equal row splits, so every block of
    // every vector lines up.
    const skein::BlockLayout halo_rows = skein::BlockLayout::over(
        comm, {grid.ny, grid.nx}, skein::RowSplit::even(), skein::Halo{.width = 1});
    auto make = [&](bool, Dtype d) { return DistArray(comm, queue, halo_rows, d); };
    out = run_problem<T, DistArray>(o, runtime, grid, make);
  } else {
    const skein::GridLayout with_halo =
        skein::GridLayout::over(comm, {grid.ny, grid.nx}, {.grid = pq, .halo = {1}});
    const skein::GridLayout plain = skein::GridLayout::over(comm, {grid.ny, grid.nx}, {.grid = pq});
    auto make = [&](bool halo, Dtype d) {
      return skein::GridArray(comm, queue, halo ? with_halo : plain, d);
    };
    out = run_problem<T, skein::GridArray>(o, runtime, grid, make);
  }
  if (printer) {
    print_summary(o, grid, tol, out);
    if (!o.json_file.empty()) {
      std::ofstream file(o.json_file);
      file << summary_json(o, grid, tol, out, runtime, comm.size()).dump(2) << "\n";
      if (!file) {
        fmt::print(stderr, "skein-cg: could not write {}\n", o.json_file);
        return 1;  // only rank 0 writes: the others finish with their own verdict
      }
    }
  }
  return out.passed ? 0 : 1;
}

int run(const Options& o, int* argc, char*** argv) {
  skein::PlacementOptions placement;
  if (o.devices_per_rank > 0) placement.devices_per_rank = o.devices_per_rank;
  skein::Runtime runtime(argc, argv, placement);
  try {
    return o.dtype == "float32" ? solve<float>(o, runtime) : solve<double>(o, runtime);
  } catch (const std::exception& e) {
    // One rank failing must end the job, not leave the others waiting in a collective.
    std::fprintf(stderr, "skein-cg: rank %d: %s\n", runtime.rank(), e.what());
    std::fflush(stderr);
    MPI_Abort(runtime.comm(), 1);
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  skein::cli::Parser app{
      "Conjugate gradients for the 2-D Poisson equation on every device of every rank "
      "(run under mpirun); checks the final residual"};
  Options o;
  app.show_defaults();
  app.add_option("--nx", o.nx, "Grid columns").range(std::size_t{1}, std::size_t{1} << 32);
  app.add_option("--ny", o.ny, "Grid rows (per device with --weak)")
      .range(std::size_t{1}, std::size_t{1} << 32);
  app.add_option("--tol", o.tol,
                 "Stop when ||r|| / ||b|| <= tol, 0 < tol < 1 (default 1e-6 for float32, 1e-10 "
                 "for float64)")
      .check(
          [](const std::string& text) -> std::string {
            char* end = nullptr;
            const double v = std::strtod(text.c_str(), &end);
            if (text.empty() || end != text.c_str() + text.size()) {
              return "tol is '" + text + "', not a number";
            }
            return v > 0 && v < 1 ? ""
                                  : "tol is " + text +
                                        "; it must be in (0, 1): the relative residual to reach, "
                                        "e.g. 1e-8";
          },
          "in (0, 1)");
  app.add_option("--max-iters", o.max_iters, "At most this many iterations")
      .range(std::size_t{0}, std::size_t{1} << 40);
  app.add_option("--dtype", o.dtype, "float32 or float64").one_of({"float32", "float64"});
  app.add_option("--rhs", o.rhs, "solution: b = A x* for a known x*; ones: b = 1")
      .one_of({"solution", "ones"});
  auto dot =
      app.add_option("--dot", o.dot, "Dot products: reduction (kernels) or blas (cuBLAS / CLBlast)")
          .one_of({"reduction", "blas"});
  auto form =
      app.add_option(
             "--form", o.form,
             "fused: matvec with p . w, and the update with r . r, one pass each (11 vector passes "
             "per iteration); unfused: each step its own call (14); pipelined: one reduction per "
             "iteration, overlapped with the matvec (17); single-reduction: Chronopoulos-Gear, "
             "one collective per iteration (11; row blocks, fast mode)")
          .one_of({"fused", "unfused", "pipelined", "single-reduction"});
  app.add_option(
         "--scalars", o.scalars,
         "Fused and single-reduction forms, fast mode: device keeps the iteration's dot "
         "products on the devices and reads them "
         "one iteration late (the host never waits inside an iteration); host reads them in "
         "every iteration; auto: device on several devices, host on one (--step-times and "
         "--deterministic use host)")
      .one_of({"auto", "device", "host"});
  app.add_option("--halo-overlap", o.halo_overlap,
                 "With scalars on the devices: p's halo exchange on a second queue while the "
                 "stencil computes the interior (on), or before it (off); auto: on where a rank "
                 "drives several devices")
      .one_of({"auto", "on", "off"});
  app.add_option(
         "--reduce-overlap", o.reduce_overlap,
         "With scalars on the devices, the fused form: r . r and p . w combined over the "
         "devices on a second queue, each while half of x is updated (on; p in two buffers), "
         "or before (off); auto: on over NCCL with several devices")
      .one_of({"auto", "on", "off"});
  app.add_option(
      "--grid", o.grid,
      "Split the grid over a P x Q grid of the devices (PxQ, P along the rows; P * Q = devices) "
      "instead of row blocks");
  app.add_option(
      "--warmup", o.warmup,
      "Run this many iterations first and discard them (the kernels compiled or loaded before the "
      "timed solve, as a benchmark's warm-up)");
  app.add_option("--report-every", o.report_every,
                 "Print the residual every N iterations (0: never)");
  app.add_flag("--deterministic", o.deterministic,
               "Deterministic reductions: the same iterations and bit-identical x on any number of "
               "devices and ranks")
      .excludes(dot);
  app.add_flag("--step-times", o.step_times,
               "Wait after each step of the loop and print each step's mean time (a diagnosis; "
               "slower overall)");
  app.add_flag("--weak", o.weak,
               "--ny is per device (weak scaling): the grid has ny x devices rows");
  app.add_flag(
      "--check-host", o.check_host,
      "Gather x to rank 0 and check the residual on the host even on grids over 2^20 points");
  app.add_option("--devices-per-rank", o.devices_per_rank,
                 "Devices each rank drives (default: an even share)");
  app.add_option("--json", o.json_file, "Also write the summary to this JSON file (rank 0)");
  if (auto status = app.parse(argc, argv)) return *status;
  if (o.dot == "blas" && (o.form != "fused" && o.form != "unfused")) {
    std::fprintf(
        stderr,
        "skein-cg: --dot blas is for the unfused form (the fused and pipelined forms reduce in "
        "their own kernels); drop --form %s\n",
        o.form.c_str());
    return 1;
  }
  if (o.dot == "blas") o.form = "unfused";  // BLAS dots: the unfused form's calls
  if (o.form == "single-reduction" && (o.deterministic || !o.grid.empty())) {
    std::fprintf(stderr,
                 "skein-cg: --form single-reduction runs on row blocks in the fast mode (its "
                 "reductions are member values combined once, which have no canonical tree; its "
                 "updated r has halos, which a GridArray updated by a fused kernel cannot have); "
                 "drop %s or use --form fused\n",
                 o.deterministic ? "--deterministic" : "--grid");
    return 1;
  }
  if (o.dot == "blas" && !o.grid.empty()) {
    std::fprintf(
        stderr,
        "skein-cg: --dot blas needs row blocks (dist::blas_dot takes DistArrays); drop --grid\n");
    return 1;
  }
  (void)form;
  if (o.ny > (std::size_t{1} << 40) / o.nx) {
    std::fprintf(stderr,
                 "skein-cg: --nx %zu x --ny %zu is too large a grid (at most 2^40 points)\n", o.nx,
                 o.ny);
    return 1;
  }
  try {
    return run(o, &argc, &argv);
  } catch (const std::exception& e) {
    // The runtime itself failed (placement, MPI): every rank sees that on its own.
    std::fprintf(stderr, "skein-cg: %s\n", e.what());
    return 1;
  }
}

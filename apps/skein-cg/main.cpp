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
// every device of every rank, with one halo row above and below each block.
//   matvec          exchange_halos() (device copies within a rank, Communicator send/recv
//                   between ranks), then one stencil kernel per device (PoissonOperator)
//   vector updates  skein::dist elementwise kernels: x += alpha p and r -= alpha q fused in one
//                   kernel, p = r + beta p with dist::axpy
//   dots            dist::dot (reduction kernels, then all_reduce over every device), or with
//                   --dot blas dist::blas_dot (cuBLAS / CLBlast, then all_reduce). With
//                   --deterministic, the deterministic reductions: every dot is the same canonical
//                   tree over global indices, so the iterations and x are bit-identical on any
//                   number of devices and ranks
//
// Checks (exit status 1 on every rank when one fails):
//   converged   the residual CG updates fell to --tol (relative to ||b||) within --max-iters
//   true        ||b - A x|| / ||b|| from a fresh matvec is within residual_bound()
//   host        on grids of up to 2^20 points (or with --check-host), rank 0 gathers x and
//               recomputes ||b - A x|| / ||b|| in double with its own stencil (host_apply): within
//               the same bound
// Rank 0 prints the progress every --report-every iterations, then a summary (and --json FILE)
// with the time per iteration against its memory floor: the iteration's 14 vector passes at the
// device copy bandwidth measured in the same run.
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
  std::size_t report_every = 100;
  bool deterministic = false;
  bool weak = false;
  bool check_host = false;
  std::size_t devices_per_rank = 0;
  std::string json_file;
};

// The host check gathers x on rank 0: automatic up to this many points.
constexpr std::size_t kHostCheckPoints = std::size_t{1} << 20;

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

template <class T>
std::vector<T> rounded(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

struct CgResult {
  std::size_t iterations = 0;
  double relative_residual = 0;  // as CG updated it: ||r_k|| / ||b||
  bool converged = false;
  bool breakdown = false;  // p . A p <= 0 or not finite: A not SPD in this precision, or overflow
  double seconds = 0;      // the iterations, on the slowest rank
};

// Conjugate gradients from x = 0 (Saad, Algorithm 6.18). r, p, q are work vectors.
template <class T>
CgResult conjugate_gradients(const Options& o, double tol, const skein_cg::PoissonOperator& a,
                             const DistArray& b, const DistArray& x, const DistArray& r,
                             const DistArray& p, const DistArray& q,
                             const skein::Runtime& runtime) {
  const bool printer = runtime.rank() == 0;
  const skein::dist::DistReductionOptions reduction{.deterministic = o.deterministic};
  auto dot = [&](const DistArray& u, const DistArray& v) {
    return o.dot == "blas" ? skein::dist::blas_dot(u, v) : skein::dist::dot(u, v, reduction);
  };
  // x += alpha p and r -= alpha q in one pass over the four vectors (in place: each element is
  // read before it is written).
  const skein::ElementwiseKernel update("T alpha, T p, T q, T x, T r", "T x_out, T r_out",
                                        "x_out = x + alpha * p; r_out = r - alpha * q;",
                                        {.name = "cg_update"});
  CgResult result;
  x.fill_zero();
  skein::dist::copy(b, r);
  skein::dist::copy(r, p);
  const double b_norm = std::sqrt(dot(b, b));
  double rr = dot(r, r);
  if (b_norm == 0) {  // x = 0 solves it exactly
    result.converged = true;
    return result;
  }
  result.relative_residual = std::sqrt(rr) / b_norm;

  x.queue().synchronize();
  MPI_Barrier(runtime.comm());
  const auto start = std::chrono::steady_clock::now();
  // The loop's decisions use values that went through all_reduce, which are equal on every rank:
  // every rank takes the same number of iterations (a rank leaving early would leave the others
  // waiting in a collective).
  while (result.relative_residual > tol && result.iterations < o.max_iters) {
    a.apply(p, q);
    const double pq = dot(p, q);
    if (!(pq > 0) || !std::isfinite(pq)) {
      result.breakdown = true;
      break;
    }
    const double alpha = rr / pq;
    skein::dist::elementwise(update, {static_cast<T>(alpha), p, q, x, r, x, r});
    const double rr_next = dot(r, r);
    ++result.iterations;
    result.relative_residual = std::sqrt(rr_next) / b_norm;
    if (!std::isfinite(rr_next)) {
      result.breakdown = true;
      break;
    }
    if (printer && o.report_every > 0 && result.iterations % o.report_every == 0) {
      fmt::print("  iteration {:7}  relative residual {:.3e}\n", result.iterations,
                 result.relative_residual);
      std::fflush(stdout);
    }
    const double beta = rr_next / rr;
    rr = rr_next;
    skein::dist::axpy(skein::Operand(static_cast<T>(beta)), p, r, p);  // p = beta p + r
  }
  x.queue().synchronize();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, runtime.comm());
  result.seconds = seconds;
  result.converged = !result.breakdown && result.relative_residual <= tol;
  return result;
}

template <class T>
int solve(const Options& o, const skein::Runtime& runtime) {
  skein::Communicator comm(runtime);
  const skein::Queue queue(runtime.context());
  const Dtype dtype = skein::dtype_of<T>;
  const bool printer = runtime.rank() == 0;
  const Grid grid{o.nx, o.weak ? o.ny * comm.size() : o.ny};
  const double tol = o.tol.value_or(default_tol(dtype));
  const double eps = std::numeric_limits<T>::epsilon();

  // One layout for every vector: the halo is only needed by p (the matvec's input), but equal
  // layouts keep every block equally aligned, so the elementwise kernels take their vector path.
  const skein::BlockLayout layout = skein::BlockLayout::over(
      comm, {grid.ny, grid.nx}, skein::RowSplit::even(), skein::Halo{.width = 1});
  auto vector = [&] { return DistArray(comm, queue, layout, dtype); };
  DistArray b = vector();  // filled once, below (scatter_local is not const)
  const DistArray x = vector(), r = vector(), p = vector(), q = vector();
  std::optional<DistArray> x_exact;
  const skein::RowRange mine = layout.rank_rows(runtime.rank());
  if (o.rhs == "ones") {
    skein::dist::fill(b, skein::Operand(T{1}));
  } else {
    // Each rank makes its own rows (b in double, rounded once to T): nothing goes through rank 0.
    b.scatter_local(rounded<T>(skein_cg::exact_rhs_rows(grid, mine.begin, mine.end)));
    x_exact.emplace(vector());
    x_exact->scatter_local(rounded<T>(skein_cg::exact_solution_rows(grid, mine.begin, mine.end)));
  }
  const skein_cg::PoissonOperator a(p);

  if (printer) {
    fmt::print("# skein-cg: 2-D Poisson, {} x {} grid ({} unknowns{}), {}, b = {}\n", grid.nx,
               grid.ny, grid.size(), o.weak ? fmt::format(", {} rows per device", o.ny) : "",
               o.dtype, o.rhs == "ones" ? "1" : "A x*");
    fmt::print("# {} device(s) on {} rank(s), {}, {}\n", comm.size(), runtime.size(),
               std::string(runtime.context().api().name()), comm.backend_description());
    fmt::print("# dots: {}{}; tol {:.1e}, at most {} iterations\n",
               o.dot == "blas" ? "BLAS (cuBLAS / CLBlast)" : "reduction kernels",
               o.deterministic ? ", deterministic" : "", tol, o.max_iters);
    std::fflush(stdout);
  }

  const CgResult cg = conjugate_gradients<T>(o, tol, a, b, x, r, p, q, runtime);

  // The true residual, from scratch: r = b - A x with a fresh matvec (p is free now).
  const skein::dist::DistReductionOptions reduction{.deterministic = o.deterministic};
  skein::dist::copy(x, p);
  a.apply(p, q);
  skein::dist::axpy(skein::Operand(T{-1}), q, b, r);
  const double b_norm = skein::dist::nrm2(b, reduction);
  const double x_norm = skein::dist::nrm2(x, reduction);
  const double true_residual = b_norm == 0 ? 0 : skein::dist::nrm2(r, reduction) / b_norm;
  const double bound = residual_bound(tol, eps, cg.iterations, b_norm == 0 ? 0 : x_norm / b_norm);
  std::optional<double> error;
  if (x_exact) {
    skein::dist::axpy(skein::Operand(T{-1}), *x_exact, x, r);  // r = x - x*
    error = skein::dist::nrm2(r, reduction) / skein::dist::nrm2(*x_exact, reduction);
  }

  // The host check: x gathered to rank 0, b - A x in double with the host's own stencil.
  std::optional<double> host_residual;
  std::string checksum;
  if (o.check_host || grid.size() <= kHostCheckPoints) {
    const std::vector<T> xs = x.gather<T>(0);
    double value = 0;
    if (printer) {
      checksum = fnv1a64(std::as_bytes(std::span<const T>(xs)));
      const std::vector<double> xd(xs.begin(), xs.end());
      std::vector<double> bd = o.rhs == "ones" ? std::vector<double>(grid.size(), 1.0)
                                               : skein_cg::exact_rhs_rows(grid, 0, grid.ny);
      for (double& v : bd) v = static_cast<double>(static_cast<T>(v));  // b as the devices hold it
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
    host_residual = value;
  }

  const bool true_ok = true_residual <= bound;
  const bool host_ok = !host_residual || *host_residual <= bound;
  const bool passed = cg.converged && true_ok && host_ok;
  // Per iteration: the matvec reads p and writes q (2 vectors), p . q reads 2, the fused update
  // reads 4 and writes 2, r . r reads 1, p = beta p + r reads 2 and writes 1: 14 vectors.
  const double bytes_per_iteration =
      14.0 * static_cast<double>(grid.size() * skein::itemsize(dtype));
  const double per_iteration =
      cg.iterations > 0 ? cg.seconds / static_cast<double>(cg.iterations) : 0;
  const double gbps = per_iteration > 0 ? bytes_per_iteration / per_iteration / 1e9 : 0;
  // The iteration's memory floor: its 14 vector passes at the device copy's bandwidth, measured
  // here on the same devices (a copy of one vector reads one and writes one: 2 passes). The
  // slowest rank's time per copy in batches of 10 copies (so that the launch and the wait weigh
  // little), median of 5 batches after one warm-up. Writes q only.
  constexpr int kCopies = 10;
  std::vector<double> copies;
  for (int i = 0; i <= 5; ++i) {
    q.queue().synchronize();
    MPI_Barrier(runtime.comm());
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < kCopies; ++k) skein::dist::copy(r, q);
    q.queue().synchronize();
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / kCopies;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, runtime.comm());
    if (i > 0) copies.push_back(t);
  }
  std::sort(copies.begin(), copies.end());
  const double copy_seconds = copies[copies.size() / 2];
  const double floor_per_iteration = 7.0 * copy_seconds;
  const double copy_gbps = 2.0 * static_cast<double>(grid.size() * skein::itemsize(dtype)) /
                           copy_seconds / 1e9;

  if (printer) {
    auto verdict = [](bool ok) { return ok ? "ok" : "FAILED"; };
    fmt::print("# summary\n");
    if (cg.converged) {
      fmt::print("  converged                  yes, after {} iterations\n", cg.iterations);
    } else if (cg.breakdown) {
      fmt::print(
          "  converged                  no: CG broke down after {} iterations (p . A p <= 0 or "
          "not finite)\n",
          cg.iterations);
    } else {
      fmt::print("  converged                  no, not within {} iterations\n", o.max_iters);
    }
    fmt::print("  relative residual (CG)     {:.3e}  (tol {:.1e})\n", cg.relative_residual, tol);
    fmt::print("  true relative residual     {:.3e}  (bound {:.3e}: {})\n", true_residual, bound,
               verdict(true_ok));
    if (bound >= 0.1) {
      // Then even a wrong x could pass: say so rather than pretend the check is tight.
      fmt::print(
          "  note: {} rounding alone allows residuals near {:.1e} here (||x|| / ||b|| = {:.3g}); "
          "float64 checks this grid tightly\n",
          o.dtype, bound, b_norm == 0 ? 0 : x_norm / b_norm);
    }
    if (host_residual) {
      fmt::print("  host check, in double      {:.3e}  ({})\n", *host_residual, verdict(host_ok));
    } else {
      fmt::print("  host check                 skipped: over {} points (--check-host forces it)\n",
                 kHostCheckPoints);
    }
    if (error) fmt::print("  error ||x - x*|| / ||x*||  {:.3e}\n", *error);
    fmt::print("  time                       {:.4f} s, {:.3f} ms per iteration, {:.2f} GB/s\n",
               cg.seconds, per_iteration * 1e3, gbps);
    if (per_iteration > 0) {
      fmt::print("  floor                      {:.3f} ms per iteration: 14 vector passes at the device "
                 "copy's {:.1f} GB/s (measured); floor / iteration = {:.3f}\n",
                 floor_per_iteration * 1e3, copy_gbps, floor_per_iteration / per_iteration);
    }
    if (!checksum.empty()) fmt::print("  x fingerprint (FNV-1a)     {}\n", checksum);
    std::fflush(stdout);

    if (!cg.converged) {
      fmt::print(stderr,
                 "skein-cg: did not converge: relative residual {:.3e} > tol {:.1e} after {} "
                 "iterations{}\n",
                 cg.relative_residual, tol, cg.iterations,
                 cg.breakdown ? " (breakdown)" : "; raise --max-iters or --tol");
    }
    if (!true_ok) {
      fmt::print(stderr, "skein-cg: true relative residual {:.3e} exceeds the bound {:.3e}\n",
                 true_residual, bound);
    }
    if (!host_ok) {
      fmt::print(stderr,
                 "skein-cg: host-computed relative residual {:.3e} exceeds the bound {:.3e}\n",
                 *host_residual, bound);
    }

    if (!o.json_file.empty()) {
      nlohmann::json j{
          {"tool", "skein-cg"},
          {"nx", grid.nx},
          {"ny", grid.ny},
          {"unknowns", grid.size()},
          {"dtype", o.dtype},
          {"rhs", o.rhs},
          {"dot", o.dot},
          {"deterministic", o.deterministic},
          {"ranks", runtime.size()},
          {"devices", comm.size()},
          {"api", std::string(runtime.context().api().name())},
          {"tol", tol},
          {"max_iters", o.max_iters},
          {"converged", cg.converged},
          {"breakdown", cg.breakdown},
          {"iterations", cg.iterations},
          {"relative_residual", cg.relative_residual},
          {"true_relative_residual", true_residual},
          {"residual_bound", bound},
          {"host_relative_residual", host_residual ? nlohmann::json(*host_residual) : nullptr},
          {"error", error ? nlohmann::json(*error) : nullptr},
          {"seconds", cg.seconds},
          {"seconds_per_iteration", per_iteration},
          {"gb_per_s", gbps},
          {"copy_gb_per_s", copy_gbps},
          {"floor_seconds_per_iteration", floor_per_iteration},
          {"floor_ratio", per_iteration > 0 ? nlohmann::json(floor_per_iteration / per_iteration)
                                            : nlohmann::json(nullptr)},
          {"x_fnv1a64", checksum.empty() ? nlohmann::json(nullptr) : nlohmann::json(checksum)},
          {"passed", passed}};
      std::ofstream out(o.json_file);
      out << j.dump(2) << "\n";
      if (!out) {
        fmt::print(stderr, "skein-cg: could not write {}\n", o.json_file);
        return 1;  // only rank 0 writes: the others finish with their own verdict
      }
    }
  }
  return passed ? 0 : 1;
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
  app.add_option("--nx", o.nx, "Grid columns")
      .range(std::size_t{1}, std::size_t{1} << 32);
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
  app.add_option("--dtype", o.dtype, "float32 or float64")
      .one_of({"float32", "float64"});
  app.add_option("--rhs", o.rhs, "solution: b = A x* for a known x*; ones: b = 1")
      .one_of({"solution", "ones"});
  auto dot =
      app.add_option("--dot", o.dot, "Dot products: reduction (kernels) or blas (cuBLAS / CLBlast)")
          .one_of({"reduction", "blas"});
  app.add_option("--report-every", o.report_every,
                 "Print the residual every N iterations (0: never)");
  app.add_flag("--deterministic", o.deterministic,
               "Deterministic reductions: the same iterations and bit-identical x on any number of "
               "devices and ranks")
      .excludes(dot);
  app.add_flag("--weak", o.weak,
               "--ny is per device (weak scaling): the grid has ny x devices rows");
  app.add_flag(
      "--check-host", o.check_host,
      "Gather x to rank 0 and check the residual on the host even on grids over 2^20 points");
  app.add_option("--devices-per-rank", o.devices_per_rank,
                 "Devices each rank drives (default: an even share)");
  app.add_option("--json", o.json_file, "Also write the summary to this JSON file (rank 0)");
  if (auto status = app.parse(argc, argv)) return *status;
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

// SPDX-License-Identifier: BSD-3-Clause
// skein-heat on a process grid (--nz, --grid, --boundary): the run of heat_solver3d.hpp's problem
// over GridLayout / GridArray, one halo exchange (GridArray::exchange_halos, on the field's queue)
// and one stencil kernel per step.
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <skein/communicator.hpp>
#include <skein/hdf5.hpp>
#include <skein/runtime.hpp>

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

void write_field(Communicator& comm, const GridRunOptions& o, const GridProblem& p, const GridArray& u) {
  const std::filesystem::path dir = o.out;
  int rank = 0;
  MPI_Comm_rank(comm.mpi_comm(), &rank);
  int ok = 1;
  std::string message;
  if (rank == 0) {
    try {
      std::filesystem::create_directories(dir);
    } catch (const std::exception& e) {
      ok = 0;
      message = e.what();
    }
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, comm.mpi_comm());
  if (!ok) throw RuntimeError(rank == 0 ? message : "rank 0 could not create the output directory");
  auto file = hdf5::File::create(comm, (dir / "heat.h5").string());
  hdf5::WriteOptions write;
  write.step = o.steps;
  write.time = static_cast<double>(o.steps) * p.dt;
  write.attributes = {{"nx", static_cast<std::int64_t>(o.nx)}, {"ny", static_cast<std::int64_t>(o.ny)},
                      {"nz", static_cast<std::int64_t>(o.nz)}, {"boundary", o.boundary},
                      {"alpha", o.alpha}, {"dt", p.dt}, {"dtype", o.dtype},
                      {"program", std::string("skein-heat")}};
  file.write("u", u, write);
  file.close();
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
  set_initial(u, problem);
  const auto start = Clock::now();
  double residual = NAN;
  for (std::int64_t step = 0; step < o.steps;) {
    u.exchange_halos();
    stencil.step(u, v);
    std::swap(u, v);
    ++step;
    if (step == o.steps || (o.report_every > 0 && step % o.report_every == 0)) {
      queue.synchronize();
      residual = max_difference(u, v);
      if (root) {
        fmt::print("step {:>9}/{}  t = {:<10.6g}  residual {:.3e}  elapsed {:.2f} s\n", step, o.steps,
                   static_cast<double>(step) * problem.dt, residual,
                   std::chrono::duration<double>(Clock::now() - start).count());
        std::fflush(stdout);
      }
    }
  }
  queue.synchronize();
  const double run_time = std::chrono::duration<double>(Clock::now() - start).count();
  const CheckResult result = check(u, problem, o.steps);
  if (!o.out.empty()) write_field(comm, o, problem, u);
  if (root) {
    fmt::print("skein-heat summary\n");
    fmt::print("  grid        {} points, {}, {} walls, {} device(s) on {} rank(s), process grid {}\n",
               layout.points(), o.dtype, o.boundary, comm.size(), runtime.size(), fmt::join(layout.grid(), " x "));
    fmt::print("  steps       {}, t = {:.6g}, {:.3f} s in all\n", o.steps, static_cast<double>(o.steps) * problem.dt,
               run_time);
    if (!std::isnan(residual)) fmt::print("  residual    {:.3e} (max |u_new - u_old| of the last step)\n", residual);
    fmt::print("  check       max |u - lambda^n u0| = {:.3e}, tolerance {:.3e}: {}\n", result.max_error,
               result.tolerance, result.passed() ? "passed" : "FAILED");
    if (!o.out.empty()) fmt::print("  files       {}\n", (std::filesystem::path(o.out) / "heat.h5").string());
    if (!result.passed()) {
      fmt::print(stderr,
                 "skein-heat: CHECK FAILED: the final field differs from the discrete analytic solution by {:.3e}, "
                 "{:.3g} times the tolerance {:.3e}\n",
                 result.max_error, result.max_error / result.tolerance, result.tolerance);
    }
    std::fflush(stdout);
  }
  return result.passed() ? 0 : 3;
}

}  // namespace skein::heat

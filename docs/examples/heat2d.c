/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * heat2d: the 2-D heat equation u_t = alpha (u_xx + u_yy) on the unit square from C, over every
 * device of every MPI rank, through Skein's C API (<skein/skein.h>).
 *
 * The field u[y][x] (ny rows of nx points, C order) is split over a process grid of the devices,
 * each block with one halo cell; the boundary is u = 0 (constant halos). Each step exchanges the
 * halos and runs the explicit 5-point (FTCS) step as a Skein stencil kernel, one source for CUDA
 * and OpenCL; every `report` steps the kernel also reduces max |v - u| on each device, and the
 * devices' values are combined by skein_all_reduce: the residual. At the end the field is checked
 * against the exact solution of the discrete problem, lambda^n u0, as skein-heat checks its own
 * (apps/skein-heat/heat_solver.hpp: u0 = sin(kx pi x) sin(ky pi y) is an eigenvector of the
 * step), then written to an HDF5 file with what it was checked against, and read back.
 *
 *   mpirun -n 2 ./heat2d [output.h5]
 *   cc -std=c11 heat2d.c $(pkg-config --cflags --libs skein) -lm -o heat2d
 *
 * Exits 0 when the check passes (on every rank: the values compared are the same everywhere).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <skein/skein.h>

/* Any failure: say which call failed and why (Skein's message names the rank, device and what
 * to do), then leave; mpirun ends the other ranks. */
static void check(skein_status status, const char* call) {
  if (status == SKEIN_SUCCESS) return;
  fprintf(stderr, "heat2d: %s failed (%s): %s\n", call, skein_status_name(status),
          skein_last_error_message());
  exit(EXIT_FAILURE);
}
#define CHECK(call) check((call), #call)

enum { NX = 64, NY = 48, KX = 1, KY = 1, STEPS = 100, REPORT = 25 };
static const double kPi = 3.14159265358979323846;

static skein_operand grid_operand(const skein_grid* grid) {
  skein_operand operand = {SKEIN_OPERAND_GRID, grid, 0.0, 0};
  return operand;
}
static skein_operand real_operand(double value) {
  skein_operand operand = {SKEIN_OPERAND_FLOAT64, NULL, value, 0};
  return operand;
}

/* lambda^steps u0 (scale = lambda^steps) or u0 (scale = 1) into this rank's blocks of `u`. */
static void set_mode(const skein_grid* u, double scale, double hx, double hy) {
  size_t local = 0;
  CHECK(skein_grid_local_count(u, &local));
  for (size_t l = 0; l < local; ++l) {
    size_t offset[2], extent[2]; /* {y, x} */
    CHECK(skein_grid_local_block(u, l, SKEIN_ORDER_C, offset, extent));
    const size_t points = extent[0] * extent[1];
    double* host = malloc((points > 0 ? points : 1) * sizeof(double));
    if (host == NULL) check(SKEIN_ERROR_INTERNAL, "malloc");
    for (size_t r = 0; r < extent[0]; ++r) {
      const double y = (double)(offset[0] + r + 1) * hy;
      for (size_t c = 0; c < extent[1]; ++c) {
        const double x = (double)(offset[1] + c + 1) * hx;
        host[r * extent[1] + c] = scale * sin(KX * kPi * x) * sin(KY * kPi * y);
      }
    }
    CHECK(skein_grid_local_from_host(u, l, host, points * sizeof(double)));
    free(host);
  }
}

/* max |a - b| over the whole grid (collective): b - a into `work`, then its extremes. */
static double max_difference(const skein_grid* a, const skein_grid* b, const skein_grid* work) {
  double lo = 0, hi = 0;
  CHECK(skein_grid_axpy(-1.0, a, b, work));
  CHECK(skein_grid_min(work, &lo));
  CHECK(skein_grid_max(work, &hi));
  return fmax(hi, -lo);
}

int main(int argc, char** argv) {
  const char* output = argc > 1 ? argv[1] : "heat2d.h5";
  skein_runtime* runtime = NULL;
  CHECK(skein_runtime_create(&argc, &argv, NULL, &runtime));
  int rank = 0, ranks = 1;
  CHECK(skein_runtime_rank(runtime, &rank));
  CHECK(skein_runtime_size(runtime, &ranks));
  skein_communicator* comm = NULL;
  CHECK(skein_communicator_create(runtime, NULL, &comm));
  skein_queue* queue = NULL;
  CHECK(skein_queue_create(runtime, &queue));

  /* The problem and the step's coefficients: u' = c0 u + rx (west + east) + ry (south + north). */
  const double alpha = 1.0, hx = 1.0 / (NX + 1), hy = 1.0 / (NY + 1);
  const double dt = 0.2 * fmin(hx, hy) * fmin(hx, hy) / alpha;
  const double rx = alpha * dt / (hx * hx), ry = alpha * dt / (hy * hy);
  const double c0 = 1 - 2 * rx - 2 * ry;
  const double lambda = c0 + 2 * rx * cos(KX * kPi * hx) + 2 * ry * cos(KY * kPi * hy);

  /* Three fields on a process grid chosen for the devices, one halo cell, u = 0 outside. */
  const size_t shape[2] = {NY, NX}, halo[2] = {1, 1};
  const skein_boundary zero[2] = {{SKEIN_BOUNDARY_CONSTANT, 0.0}, {SKEIN_BOUNDARY_CONSTANT, 0.0}};
  skein_grid_options options;
  skein_grid_options_init(&options);
  options.halo = halo;
  options.lower = zero;
  options.upper = zero;
  skein_grid *u = NULL, *v = NULL, *work = NULL;
  CHECK(skein_grid_create(comm, queue, 2, shape, SKEIN_FLOAT64, &options, &u));
  CHECK(skein_grid_create(comm, queue, 2, shape, SKEIN_FLOAT64, &options, &v));
  CHECK(skein_grid_create(comm, queue, 2, shape, SKEIN_FLOAT64, &options, &work));
  size_t process_grid[2], local = 0;
  CHECK(skein_grid_process_grid(u, SKEIN_ORDER_C, process_grid));
  CHECK(skein_grid_local_count(u, &local));
  if (rank == 0) {
    printf("heat2d: %d x %d points on a %zu x %zu process grid (%d rank(s)), %d steps\n", NY, NX,
           process_grid[0], process_grid[1], ranks, STEPS);
  }
  set_mode(u, 1.0, hx, hy);

  /* The step, and max |v - u| over the points it updates. */
  skein_kernel* step = NULL;
  CHECK(skein_kernel_create_stencil(
      "double u, double c0, double rx, double ry", "double v",
      "v = c0 * u + rx * (u(0, -1) + u(0, 1)) + ry * (u(-1, 0) + u(1, 0))", "fabs(v - u)",
      "fmax(a, b)", "0", "heat_step", &step));

  /* One residual value per local device, combined across the ranks by all_reduce. */
  skein_array** residual = calloc(local > 0 ? local : 1, sizeof(skein_array*));
  if (residual == NULL) check(SKEIN_ERROR_INTERNAL, "calloc");
  const size_t one = 1;
  for (size_t l = 0; l < local; ++l) {
    CHECK(skein_array_create(queue, l, SKEIN_FLOAT64, 1, &one, SKEIN_ORDER_C, &residual[l]));
  }

  for (int n = 1; n <= STEPS; ++n) {
    CHECK(skein_grid_exchange_halos(u));
    const skein_operand args[5] = {grid_operand(u), real_operand(c0), real_operand(rx),
                                   real_operand(ry), grid_operand(v)};
    if (n % REPORT == 0) {
      CHECK(skein_grid_stencil_reduce(step, args, 5, SKEIN_REGION_ALL, residual, local));
      CHECK(skein_all_reduce(comm, queue, residual, residual, local, SKEIN_MAX));
      double change = 0;
      CHECK(skein_array_to_host(residual[0], &change, sizeof change));
      if (rank == 0) printf("heat2d: step %3d  max |u' - u| = %.6e\n", n, change);
    } else {
      CHECK(skein_grid_stencil(step, args, 5, SKEIN_REGION_ALL));
    }
    skein_grid* swap = u;
    u = v;
    v = swap;
  }

  /* The check: lambda^n u0 exactly, up to rounding (skein-heat's bound: each step adds a few
   * units of rounding of the field's size, and the step is a contraction). */
  set_mode(v, pow(lambda, STEPS), hx, hy);
  const double error = max_difference(u, v, work);
  const double l = fabs(lambda), sum = (1 - pow(l, STEPS)) / (1 - l);
  const double tolerance = 8 * 0x1p-53 * (2 + sum);

  /* The field and what it was checked against into an HDF5 file, then read back into v. */
  skein_hdf5_file* file = NULL;
  CHECK(skein_hdf5_create(comm, output, &file));
  CHECK(skein_hdf5_write_grid(file, "u", u));
  CHECK(skein_hdf5_set_attribute(file, "u", "time", STEPS * dt));
  CHECK(skein_hdf5_set_attribute(file, "u", "lambda", lambda));
  CHECK(skein_hdf5_set_attribute(file, "/", "steps", STEPS));
  CHECK(skein_hdf5_set_attribute(file, "/", "max_error", error));
  CHECK(skein_hdf5_close(file));
  CHECK(skein_hdf5_open(comm, output, 0, &file));
  CHECK(skein_hdf5_read_grid(file, "u", v));
  double time = 0;
  CHECK(skein_hdf5_get_attribute(file, "u", "time", &time));
  CHECK(skein_hdf5_close(file));
  const int reread = max_difference(u, v, work) == 0 && time == STEPS * dt;

  const int passed = error <= tolerance && reread;
  if (rank == 0) {
    printf("heat2d: max |u - lambda^n u0| = %.3e (tolerance %.3e); %s read back %s\n", error,
           tolerance, output, reread ? "identical" : "DIFFERENT");
    printf("heat2d: %s\n", passed ? "PASSED" : "FAILED");
  }

  for (size_t l = 0; l < local; ++l) CHECK(skein_array_destroy(residual[l]));
  free(residual);
  CHECK(skein_kernel_destroy(step));
  CHECK(skein_grid_destroy(work));
  CHECK(skein_grid_destroy(v));
  CHECK(skein_grid_destroy(u));
  CHECK(skein_queue_destroy(queue));
  CHECK(skein_communicator_destroy(comm));
  CHECK(skein_runtime_destroy(runtime));
  return passed ? EXIT_SUCCESS : EXIT_FAILURE;
}

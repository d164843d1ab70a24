// SPDX-License-Identifier: BSD-3-Clause
// The speed figures of skein-heat's run on a process grid (heat_measure3d.hpp).
#include "heat_measure3d.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>

#include <skein/array.hpp>

#include "heat_timing.hpp"

namespace skein::heat {

namespace {

constexpr int repeat = 5, per = 10;

struct DeviceFigures {
  double floor = 0, kernel = 0, copy_bps = 0;
  std::size_t bytes = 0, shell = 0;
};

// The floor and the kernel on every local block, one device at a time; the slowest rank's.
DeviceFigures device_figures(const GridArray& u, const GridArray& v, const GridStencil& stencil,
                             bool overlapped) {
  const MPI_Comm comm = u.communicator().mpi_comm();
  const Queue& queue = u.queue();
  DeviceFigures f;
  bool any = false;
  for (std::size_t l = 0; l < u.local_size(); ++l) {
    const LocalGridBlock& b = u.block(l);
    if (b.block.empty()) continue;
    const std::size_t points = b.block.points();
    // As many bytes as the stencil moves, in one contiguous copy: the block's first `points`
    // elements, halo and all, into a scratch array (u is only read).
    const Array source = b.with_halo.reshape({b.with_halo.size()}).slice(0, points);
    const Array scratch = Array::empty(queue, {points}, u.dtype(), b.device_idx);
    const double copy_ms =
        device_ms(queue, b.device_idx, repeat, per, [&] { scratch.set(source); });
    // Per step: a launch makes stencil.steps() of them.
    const double kernel_ms =
        device_ms(queue, b.device_idx, repeat, per, [&] { stencil.step_block(u, v, l); }) /
        static_cast<double>(stencil.steps());
    const std::size_t bytes = stencil.bytes_per_step(u, l);
    const double bps = static_cast<double>(bytes) / (copy_ms * 1e-3);
    f.floor = std::max(f.floor, copy_ms * 1e-3);
    f.kernel = std::max(f.kernel, kernel_ms * 1e-3);
    f.copy_bps = any ? std::min(f.copy_bps, bps) : bps;
    f.bytes = std::max(f.bytes, bytes);
    if (overlapped) f.shell = std::max(f.shell, stencil.split(l).shell_points());
    any = true;
  }
  double maxima[3] = {f.floor, f.kernel, any ? -f.copy_bps : -INFINITY};
  MPI_Allreduce(MPI_IN_PLACE, maxima, 3, MPI_DOUBLE, MPI_MAX, comm);
  unsigned long long counts[2] = {f.bytes, f.shell};
  MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
  return {maxima[0], maxima[1], -maxima[2], static_cast<std::size_t>(counts[0]),
          static_cast<std::size_t>(counts[1])};
}

// The median over `repeat` rounds (after one warm-up) of the slowest rank's wall time of f.
template <class F>
double wall_median(MPI_Comm comm, F&& f) {
  std::vector<double> times;
  for (int i = 0; i <= repeat; ++i) {
    MPI_Barrier(comm);
    const auto start = Clock::now();
    double s = f();
    if (s < 0) s = seconds(start);
    MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, comm);
    if (i > 0) times.push_back(s);
  }
  return median(times);
}

}  // namespace

GridPerformance measure_grid(const GridArray& u, const GridArray& v, const GridStencil& stencil,
                             const GridStepper& stepper, const std::vector<double>& interval_times,
                             double loop_s, std::int64_t steps) {
  const MPI_Comm comm = u.communicator().mpi_comm();
  GridPerformance p;
  std::vector<double> times = interval_times;
  MPI_Allreduce(MPI_IN_PLACE, times.data(), static_cast<int>(times.size()), MPI_DOUBLE, MPI_MAX,
                comm);
  p.t_step = median(times);
  p.intervals = times.size();
  p.t_step_mean = loop_s / static_cast<double>(std::max<std::int64_t>(steps, 1));
  MPI_Allreduce(MPI_IN_PLACE, &p.t_step_mean, 1, MPI_DOUBLE, MPI_MAX, comm);
  p.overlapped = stepper.overlapped();

  const DeviceFigures f = device_figures(u, v, stencil, p.overlapped);
  p.floor = f.floor;
  p.t_kernel = f.kernel;
  p.copy_gbps = f.copy_bps / 1e9;
  p.bytes_per_step = f.bytes;
  p.shell_points = f.shell;

  // The exchange alone (it rewrites u's ghost cells with the values they already hold), per step:
  // with two steps per launch one exchange serves two.
  const auto steps_per_call = static_cast<double>(stencil.steps());
  p.t_halo = wall_median(comm,
                         [&] {
                           u.exchange_halos();
                           u.queue().synchronize();
                           return -1.0;
                         }) /
             steps_per_call;
  // The step's kernels alone, every rank at once, timed like the steps (a batch of them).
  const int batch = static_cast<int>(std::clamp<std::int64_t>(steps, 1, 50));
  p.t_compute = wall_median(comm, [&] {
    const auto start = Clock::now();
    for (int k = 0; k < batch; ++k) stepper.kernels_only(u, v);
    stepper.synchronize();
    return seconds(start) / batch / steps_per_call;
  });
  return p;
}

}  // namespace skein::heat

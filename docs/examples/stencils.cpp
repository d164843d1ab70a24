// SPDX-License-Identifier: BSD-3-Clause
// Heat diffusion on a periodic 3-D domain over a process grid of every device of every MPI rank,
// written with stencil kernels: the initial state from the global coordinates, then steps of the
// 7-point stencil with the halo exchange overlapped with the interior's update, and the result
// checked on the devices against the exact discrete solution (a separable cosine mode decays by
// the same factor every step), so every rank knows whether it passed.
// Built by the `docs-examples` target (docs/CMakeLists.txt); quoted in docs/guide.md. Run with
//   POCL_DEVICES="pthread pthread pthread pthread" mpirun -n 2 ./stencils
#include <skein/skein.hpp>

#include <cmath>
#include <iostream>
#include <utility>
#include <vector>

int main(int argc, char** argv) try {
  skein::Runtime runtime(&argc, &argv);
  try {
    skein::Communicator comm(runtime);
    const std::size_t nz = 24, ny = 20, nx = 16;
    const int steps = 40;
    const double r = 0.1;  // D dt / h^2, stable below 1/6
    const std::vector<skein::Boundary> wrap(3, skein::Boundary::periodic());
    const skein::GridLayout layout =
        skein::GridLayout::over(comm, {nz, ny, nx}, {.halo = {1}, .lower = wrap, .upper = wrap});
    const skein::Queue queue(comm.context());
    skein::GridArray u(comm, queue, layout, skein::Dtype::float64);
    skein::GridArray next(comm, queue, layout, skein::Dtype::float64);

    // The mode cos(2 pi z / nz) cos(4 pi y / ny) cos(2 pi x / nx), times `scale`.
    const skein::StencilKernel mode(
        "double scale", "double out",
        "const double tau = 6.283185307179586;"
        "out = scale * cos(tau * gidx[0] / gshape[0])"
        " * cos(2 * tau * gidx[1] / gshape[1]) * cos(tau * gidx[2] / gshape[2])",
        {.name = "cosine_mode"});
    const skein::StencilKernel heat(
        "double u, double r", "double out",
        "out = u + r * (u(-1, 0, 0) + u(1, 0, 0) + u(0, -1, 0) + u(0, 1, 0)"
        " + u(0, 0, -1) + u(0, 0, 1) - 6 * u)",
        {.name = "heat7"});
    skein::dist::stencil(mode, {1.0, u});

    // The exchange on a second queue while the interior is updated; the points next to the halos
    // once the ghost cells are in.
    const skein::Queue halo_queue(comm.context(), queue.device_idxs());
    for (int step = 0; step < steps; ++step) {
      for (std::size_t d : queue.device_idxs()) halo_queue.wait_for(queue.record_marker(d), d);
      u.exchange_halos(halo_queue);
      skein::dist::stencil(heat, {u, r, next}, skein::StencilRegion::interior);
      for (std::size_t d : queue.device_idxs()) queue.wait_for(halo_queue.record_marker(d), d);
      skein::dist::stencil(heat, {u, r, next}, skein::StencilRegion::edges);
      std::swap(u, next);
    }

    // Each step multiplies the mode by lambda = 1 + r * sum over axes of (2 cos(2 pi k / n) - 2).
    const double tau = 6.283185307179586;
    const double lambda = 1 + r * ((2 * std::cos(tau / static_cast<double>(nz)) - 2) +
                                   (2 * std::cos(2 * tau / static_cast<double>(ny)) - 2) +
                                   (2 * std::cos(tau / static_cast<double>(nx)) - 2));
    skein::dist::stencil(mode, {std::pow(lambda, steps), next});  // the exact solution
    const skein::ElementwiseKernel diff("double a, double b", "double d", "d = fabs(a - b)",
                                        {.name = "error_of"});
    skein::dist::elementwise(diff, {u, next, next});
    const double error = skein::dist::max(next);  // the same value on every rank
    const bool ok = error < 1e-12;
    if (runtime.rank() == 0) {
      std::cout << "grid " << layout.grid()[0] << " x " << layout.grid()[1] << " x "
                << layout.grid()[2] << ", max error " << error << ": " << (ok ? "ok" : "MISMATCH")
                << "\n";
    }
    return ok ? 0 : 1;
  } catch (const skein::Error& e) {  // every rank reports its own error, before MPI ends
    std::cerr << e.what() << "\n";
    return 1;
  }
} catch (const skein::Error& e) {  // the Runtime could not start (MPI, devices, environment)
  std::cerr << e.what() << "\n";
  return 1;
}

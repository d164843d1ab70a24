// SPDX-License-Identifier: BSD-3-Clause
// Conjugate gradients for the 2-D Poisson equation (5-point stencil, zero values outside the grid)
// on row blocks over every device of every MPI rank, written with a stencil kernel that also
// gives p . A p, and an update of x and r that also gives r . r: two passes over memory and two
// reductions per iteration, no launcher of the user's. The residual is checked at the end with a
// fresh matvec, so every rank knows whether it passed.
// Built by the `docs-examples` target (docs/CMakeLists.txt); quoted in docs/guide.md. Run with
//   POCL_DEVICES="pthread pthread pthread pthread" mpirun -n 2 ./cg
#include <skein/skein.hpp>

#include <cmath>
#include <iostream>

int main(int argc, char** argv) try {
  skein::Runtime runtime(&argc, &argv);
  try {
    namespace dist = skein::dist;
    skein::Communicator comm(runtime);
    const std::size_t ny = 29, nx = 23;  // rows split over the devices, one halo row each side
    const skein::BlockLayout layout =
        skein::BlockLayout::over(comm, {ny, nx}, skein::RowSplit::even(), skein::Halo{.width = 1});
    const skein::Queue queue(comm.context());
    auto vector = [&] { return skein::DistArray(comm, queue, layout, skein::Dtype::float64); };
    const skein::DistArray b = vector(), x = vector(), r = vector(), p = vector(), w = vector();

    // w = A p, and p . w in the same pass. The boundary comes from the global coordinates.
    const char* stencil =
        "w = 4 * p - (gidx[0] > 0 ? p(-1, 0) : 0.0) - (gidx[0] + 1 < gshape[0] ? p(1, 0) : 0.0)"
        " - (gidx[1] > 0 ? p(0, -1) : 0.0) - (gidx[1] + 1 < gshape[1] ? p(0, 1) : 0.0)";
    const skein::StencilKernel apply(
        "double p", "double w", stencil,
        {.name = "poisson", .reduction = skein::StencilReduction{.map = "p * w"}});
    // x += alpha p; r -= alpha w, and r . r of the new r, in one pass.
    const skein::FusedKernel update("double p, double w, double alpha", "double x, double r",
                                    "x += alpha * p; r -= alpha * w", "double rr", "r * r", "a + b",
                                    "0", {.name = "cg_update"});

    dist::fill(b, skein::Operand(1.0));
    dist::fill(x, skein::Operand(0.0));
    dist::copy(b, r);
    dist::copy(b, p);
    double rr = dist::dots({{r, r}}).at(0);
    const double b_norm = std::sqrt(rr), tol = 1e-10;
    int iterations = 0;
    while (std::sqrt(rr) > tol * b_norm && iterations < 1000) {
      p.exchange_halos();
      const double pw = dist::stencil_reduce(apply, {p, w}, skein::ReduceOp::sum);
      const double alpha = rr / pw;
      const double rr_next =
          dist::update_and_reduce(update, {p, w, alpha, x, r}, skein::ReduceOp::sum);
      dist::axpy(skein::Operand(rr_next / rr), p, r, p);  // p = beta p + r
      rr = rr_next;
      ++iterations;
    }

    // The true residual b - A x, from a fresh matvec.
    dist::copy(x, p);
    p.exchange_halos();
    (void)dist::stencil_reduce(apply, {p, w}, skein::ReduceOp::sum);
    dist::axpy(skein::Operand(-1.0), w, b, r);       // r = b - A x
    const double residual = dist::nrm2(r) / b_norm;  // the same value on every rank
    const bool ok = residual < 1e-9;
    if (runtime.rank() == 0) {
      std::cout << "CG on " << ny << " x " << nx << ": " << iterations << " iterations, residual "
                << residual << ": " << (ok ? "ok" : "NOT CONVERGED") << "\n";
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

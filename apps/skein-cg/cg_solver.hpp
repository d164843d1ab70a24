// SPDX-License-Identifier: BSD-3-Clause
// Conjugate gradients on Skein's building blocks, over DistArrays (row blocks) or GridArrays (a
// 2-D process grid): the same code for both (V), three forms of the iteration.
//
//   fused      (default) w = A p and p . w in one stencil pass (dist::stencil_reduce), the update
//              of x and r with r . r in one pass (dist::update_and_reduce), p = r + beta p:
//              11 vector passes per iteration, two reductions. In the fast mode p . w and r . r
//              stay on the devices and the host reads them one iteration late (cg_device.hpp;
//              --scalars host: read in every iteration, classic_cg). In the deterministic mode the
//              stencil's reduction has no canonical tree: p . w is a deterministic dist::dots
//              after the plain stencil (13 passes). (Folding p = r + beta p into the matvec, which
//              saves a pass, was slower on an H200: the stencil then computes p at every
//              neighbour, docs/performance.md.)
//   unfused    each step its own call, as a port of a CG onto plain kernels writes it: stencil,
//              p . w, the update, r . r, p = r + beta p (14 passes). In the deterministic mode its
//              iterations and x are bit-identical to the fused form's (the same canonical trees,
//              no FP contraction in the updates).
//   single-reduction  Chronopoulos and Gear's CG (cg_single.hpp): the fused form's 11 passes with
//              one collective per iteration instead of two (row blocks, fast mode).
//   pipelined  Ghysels and Vanroose's pipelined CG ("Hiding global synchronization latency in
//              the preconditioned Conjugate Gradient algorithm", 2014, Alg. 4 unpreconditioned):
//              one reduction per iteration (r . r and w . r batched), begun before the matvec
//              q = A w and waited for after it, so the collective overlaps the stencil; one
//              update kernel for z, s, p, x, r, w (17 passes).
//
// Decisions use values that went through all_reduce, equal on every rank: every rank takes the
// same number of iterations.
#pragma once

#include <mpi.h>

#include <cmath>
#include <optional>
#include <type_traits>
#include <vector>

#include <skein/skein.hpp>

#include "cg_device.hpp"
#include "cg_poisson.hpp"
#include "cg_single.hpp"
#include "cg_solver_common.hpp"

namespace skein_cg {

// CG from x = 0 (Saad, Algorithm 6.18), in the fused or the unfused form.
template <class T, class V>
CgResult classic_cg(const CgSettings& s, const PoissonKernels& a, const V& b, const CgVectors<V>& v,
                    MPI_Comm comm) {
  const bool fused = s.form == "fused";
  // x += alpha p; r -= alpha w, and with it r . r (fused), or alone (unfused). No FP contraction
  // in either, so that both give the same bits.
  const skein::FusedKernel update_rr("T p, T w, T alpha", "T x, T r",
                                     "x += alpha * p; r -= alpha * w", "T rr", "r * r", "a + b",
                                     "0", {.name = "cg_update_rr"});
  const skein::ElementwiseKernel update("T alpha, T p, T w, T x, T r", "T x_out, T r_out",
                                        "x_out = x + alpha * p; r_out = r - alpha * w;",
                                        {.name = "cg_update", .fp_contract = false});
  // The fused update on GridArrays in the deterministic mode needs blocks that are ranges of
  // global indices (a grid split along axis 0 only): otherwise the unfused update.
  bool fuse_update = fused;
  if constexpr (std::is_same_v<V, skein::GridArray>) {
    fuse_update = fused && (!s.deterministic || b.layout().grid()[1] == 1);
  }
  const skein::dist::DistReductionOptions reduction{.deterministic = s.deterministic};
  CgResult result;
  skein::dist::fill(v.x, skein::Operand(T{0}));
  skein::dist::copy(b, v.r);
  skein::dist::copy(b, v.p);
  const double b_norm = std::sqrt(detail::dot(s, b, b));
  double rr = detail::dot(s, v.r, v.r);
  if (b_norm == 0) {  // x = 0 solves it exactly
    result.converged = true;
    return result;
  }
  result.relative_residual = std::sqrt(rr) / b_norm;
  const auto start = detail::start_clock(v.x, comm);
  detail::StepTimes steps(s, v.x.queue());
  while (result.relative_residual > s.tol && result.iterations < s.max_iters) {
    steps.restart();
    double pw = 0;
    if (fused && !s.deterministic) {
      v.p.exchange_halos();
      pw = skein::dist::stencil_reduce(a.apply_dot, {v.p, v.w}, skein::ReduceOp::sum);
    } else {
      v.p.exchange_halos();
      skein::dist::stencil(a.apply, {v.p, v.w});
      pw = detail::dot(s, v.p, v.w);
    }
    steps.mark("matvec (+ p.w)");
    if (!(pw > 0) || !std::isfinite(pw)) {
      result.breakdown = true;
      break;
    }
    const double alpha = rr / pw;
    double rr_next = 0;
    if (fuse_update) {
      rr_next = skein::dist::update_and_reduce(
          update_rr, {v.p, v.w, static_cast<T>(alpha), v.x, v.r}, skein::ReduceOp::sum, reduction);
    } else {
      skein::dist::elementwise(update, {static_cast<T>(alpha), v.p, v.w, v.x, v.r, v.x, v.r});
      rr_next = detail::dot(s, v.r, v.r);
    }
    steps.mark("update x, r (+ r.r)");
    ++result.iterations;
    result.relative_residual = std::sqrt(rr_next) / b_norm;
    if (!std::isfinite(rr_next)) {
      result.breakdown = true;
      break;
    }
    detail::report(s, result);
    const double beta = rr_next / rr;
    rr = rr_next;
    skein::dist::axpy(skein::Operand(static_cast<T>(beta)), v.p, v.r, v.p);  // p = beta p + r
    steps.mark("p = r + beta p");
  }
  detail::stop_clock(result, v.x, start, comm, s.tol);
  steps.print();
  return result;
}

// Pipelined CG from x = 0 (Ghysels and Vanroose, Alg. 4 without a preconditioner).
template <class T, class V>
CgResult pipelined_cg(const CgSettings& s, const PoissonKernels& a, const V& b,
                      const CgVectors<V>& v, MPI_Comm comm) {
  const skein::ElementwiseKernel update(
      "T alpha, T beta, T q, T z, T w, T s, T r, T p, T x",
      "T z_out, T s_out, T p_out, T x_out, T r_out, T w_out",
      "const T zn = q + beta * z; const T sn = w + beta * s; const T pn = r + beta * p;"
      "z_out = zn; s_out = sn; p_out = pn; x_out = x + alpha * pn; r_out = r - alpha * sn; w_out = "
      "w - alpha * zn;",
      {.name = "cg_pipelined_update", .fp_contract = false});
  const skein::dist::DistReductionOptions reduction{.deterministic = s.deterministic};
  CgResult result;
  skein::dist::fill(v.x, skein::Operand(T{0}));
  const V &sv = v.s.value(), &z = v.z.value(), &q = v.q.value();
  for (const V* e : {&v.p, &sv, &z}) skein::dist::fill(*e, skein::Operand(T{0}));
  skein::dist::copy(b, v.r);
  v.r.exchange_halos();
  skein::dist::stencil(a.apply, {v.r, v.w});  // w = A r
  const double b_norm = std::sqrt(detail::dot(s, b, b));
  if (b_norm == 0) {
    result.converged = true;
    return result;
  }
  double gamma_old = 0, alpha_old = 0;
  const auto start = detail::start_clock(v.x, comm);
  for (;;) {
    // gamma = r . r and delta = w . r in one collective, overlapped with q = A w.
    skein::dist::PendingValues pending =
        skein::dist::begin_dots({{v.r, v.r}, {v.w, v.r}}, reduction);
    v.w.exchange_halos();
    skein::dist::stencil(a.apply, {v.w, q});
    const std::vector<double> values = pending.wait();
    const double gamma = values.at(0), delta = values.at(1);
    result.relative_residual = std::sqrt(gamma) / b_norm;
    if (!std::isfinite(gamma) || !std::isfinite(delta)) {
      result.breakdown = true;
      break;
    }
    if (result.relative_residual <= s.tol || result.iterations >= s.max_iters) break;
    const double beta = result.iterations == 0 ? 0 : gamma / gamma_old;
    const double denominator = result.iterations == 0 ? delta : delta - beta * gamma / alpha_old;
    if (!(denominator > 0)) {
      result.breakdown = true;
      break;
    }
    const double alpha = gamma / denominator;
    skein::dist::elementwise(update, {static_cast<T>(alpha), static_cast<T>(beta), q, z, v.w, sv,
                                      v.r, v.p, v.x, z, sv, v.p, v.x, v.r, v.w});
    gamma_old = gamma;
    alpha_old = alpha;
    ++result.iterations;
    detail::report(s, result);
  }
  detail::stop_clock(result, v.x, start, comm, s.tol);
  return result;
}

template <class T, class V>
CgResult conjugate_gradients(const CgSettings& s, const PoissonKernels& a, const V& b,
                             const CgVectors<V>& v, MPI_Comm comm) {
  if (s.form == "pipelined") return pipelined_cg<T>(s, a, b, v, comm);
  if (s.form == "single-reduction") return single_reduction_cg<T>(s, a, b, v, comm);
  if (s.form == "fused" && !s.deterministic && s.device_scalars) {
    return device_scalar_cg<T>(s, a, b, v, comm);
  }
  return classic_cg<T>(s, a, b, v, comm);
}

}  // namespace skein_cg

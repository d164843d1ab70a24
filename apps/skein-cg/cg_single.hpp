// SPDX-License-Identifier: BSD-3-Clause
// The single-reduction CG (--form single-reduction): Chronopoulos and Gear's s-step CG for s = 1
// ("s-step iterative methods for symmetric linear systems", J. Comput. Appl. Math. 25, 1989;
// PETSc's KSPCG with -ksp_cg_single_reduction), unpreconditioned, from x = 0. Each iteration makes
// the same 11 vector passes as the fused form and ONE collective instead of two:
//
//   update   p = r + beta p; s = w + beta s; x += alpha p; r -= alpha s, with r . r (9 passes)
//   matvec   r's halo exchange, w = A r with w . r (2 passes)
//   combine  r . r and w . r of every member in one all_reduce (dist::combine_members)
//   scalars  gamma = r . r, delta = w . r; beta = gamma / gamma_old;
//            mu = p . A p = delta - beta^2 mu_old; alpha = gamma / mu
//
// The two reductions are member values (dist::update_and_reduce_members into slot 0,
// dist::stencil_reduce_members into slot 1) combined once. Row blocks only (r is read by the
// stencil, so it has halo rows; a GridArray with halos cannot be a fused kernel's updated array).
//
// Scalars on the host (--scalars host): the host reads gamma and delta after the combine in every
// iteration and passes alpha and beta to the update. Scalars on the devices (device): the update
// computes alpha and beta from the combined values and the previous iteration's (gamma, mu), which
// a one-item kernel per member keeps on the devices; the host reads the values one iteration late
// (as cg_device.hpp does, with the same freezing of the iterations launched after convergence)
// and runs the same recurrence in double for its decisions.
#pragma once

#include <mpi.h>

#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include <skein/skein.hpp>

#include "cg_device.hpp"
#include "cg_poisson.hpp"
#include "cg_solver_common.hpp"

namespace skein_cg {

namespace detail {

// One array of `count` float64 per local member of `v`, on its device, from the queue's pool.
template <class V>
std::vector<skein::Array> member_slots(const V& v, std::size_t count = 2) {
  std::vector<skein::Array> out;
  for (std::size_t i = 0; i < v.local_size(); ++i)
    out.push_back(
        skein::Array::empty(v.queue(), {count}, skein::Dtype::float64, v.block(i).device_idx));
  return out;
}

// Element j of each member's array, as one-element views.
inline std::vector<skein::Array> slot_views(const std::vector<skein::Array>& arrays,
                                            std::size_t j) {
  std::vector<skein::Array> out;
  for (const skein::Array& a : arrays) out.push_back(a.view(j, {1}));
  return out;
}

// The recurrence of the scalars, as the kernels compute it: from gamma and delta of this iteration
// and (gamma_old, mu_old) of the previous one (gamma_old = inf before the first: beta = 0).
struct SingleScalars {
  double beta = 0, mu = 0;
};
inline SingleScalars single_scalars(double gamma, double delta, double gamma_old, double mu_old) {
  const double beta = gamma_old > 0 ? gamma / gamma_old : 0.0;
  return {beta, delta - beta * beta * mu_old};
}

// r . r into slot 0 of `v` (the update) was made by the caller; this adds w = A r with w . r into
// slot 1 (r's halos exchanged first, or on `overlap`'s queue while the interior is computed), then
// combines both over every member in one all_reduce.
template <class V>
void single_matvec(const PoissonKernels& a, const CgVectors<V>& v,
                   const std::vector<skein::Array>& values,
                   const std::optional<skein::dist::HaloOverlap>& overlap) {
  if (overlap) {
    skein::dist::stencil_reduce_members(a.apply_dot, {v.r, v.w}, values, 1, *overlap);
  } else {
    v.r.exchange_halos();
    skein::dist::stencil_reduce_members(a.apply_dot, {v.r, v.w}, values, 1);
  }
  skein::dist::combine_members(v.r, values, skein::ReduceOp::sum);
}

// The form's kernels: the update with alpha and beta from the host, or computed from the devices'
// values (frozen, alpha = beta = 0, once gamma <= stop2 or mu <= 0: x and r then stay as they are),
// and the one-item kernel that keeps the next (gamma_old, mu_old) on the devices.
struct SingleKernels {
  skein::FusedKernel host_update{
      "T alpha, T beta, T w",
      "T p, T s, T x, T r",
      "p = r + beta * p; s = w + beta * s; x += alpha * p; r -= alpha * s",
      "float64 rr",
      "(double)r * (double)r",
      "a + b",
      "0",
      {.reduce_type = skein::Dtype::float64, .name = "cg_single_update"}};
  skein::FusedKernel device_update{
      "raw float64 v, raw float64 st, float64 stop2, T w",
      "T p, T s, T x, T r",
      "const double beta_k = st[0] > 0 ? v[0] / st[0] : 0.0;"
      "const double mu = v[1] - beta_k * beta_k * st[1];"
      "const int go = v[0] > stop2 && mu > 0;"
      "const T alpha = (T)(go ? v[0] / mu : 0.0), beta = (T)(go ? beta_k : 0.0);"
      "p = r + beta * p; s = w + beta * s; x += alpha * p; r -= alpha * s",
      "float64 rr",
      "(double)r * (double)r",
      "a + b",
      "0",
      {.reduce_type = skein::Dtype::float64, .name = "cg_single_update_dev"}};
  // Element 0 gamma, element 1 mu, as the update computed them.
  skein::ElementwiseKernel next_state{"raw float64 v, raw float64 st",
                                      "float64 out",
                                      "const double beta_k = st[0] > 0 ? v[0] / st[0] : 0.0;"
                                      "out = i == 0 ? v[0] : v[1] - beta_k * beta_k * st[1]",
                                      {.name = "cg_single_state"}};
};

}  // namespace detail

// The single-reduction CG from x = 0 (fast mode, DistArrays).
template <class T, class V>
CgResult single_reduction_cg(const CgSettings& s, const PoissonKernels& a, const V& b,
                             const CgVectors<V>& v, MPI_Comm comm) {
  const V& sv = v.s.value();
  const detail::SingleKernels kernels;
  CgResult result;
  skein::dist::fill(v.x, skein::Operand(T{0}));
  skein::dist::fill(v.p, skein::Operand(T{0}));
  skein::dist::fill(sv, skein::Operand(T{0}));
  skein::dist::copy(b, v.r);
  const double b_norm = std::sqrt(detail::dot(s, b, b));
  if (b_norm == 0) {
    result.converged = true;
    return result;
  }
  const double stop2 = (s.tol * b_norm) * (s.tol * b_norm);
  const skein::Queue& queue = v.x.queue();
  const std::vector<std::size_t> devices = detail::member_devices(v.x);
  std::optional<skein::dist::HaloOverlap> overlap;
  if (s.device_scalars && s.halo_overlap) {
    overlap = skein::dist::HaloOverlap{
        .halo_queue = skein::Queue(queue.context(), devices, skein::QueuePriority::high()),
        .exchange = {v.r}};
  }
  // gamma_0 and delta_0: r . r by the update's reduction is not there yet, so a dot for slot 0.
  std::vector<skein::Array> values = detail::member_slots(v.x);
  bool converged = false;
  {
    const double gamma0 = detail::dot(s, v.r, v.r);
    result.relative_residual = std::sqrt(gamma0) / b_norm;  // x = 0 (before any iteration)
    converged = !(gamma0 > stop2);
    v.r.exchange_halos();
    const double delta0 =
        skein::dist::stencil_reduce(a.apply_dot, {v.r, v.w}, skein::ReduceOp::sum);
    const std::vector<double> host{gamma0, delta0};
    for (std::size_t i = 0; i < values.size(); ++i)
      values[i] = skein::Array::from_host(queue, host, {}, devices[i]);
  }
  const auto start = detail::start_clock(v.x, comm);
  // The host's recurrence: decides on gamma_k, delta_k as the kernels do.
  double gamma_old = std::numeric_limits<double>::infinity(), mu_old = 0;
  // Whether the host, having read iteration k's (gamma_k, delta_k), goes on; sets alpha, beta.
  double alpha = 0, beta = 0;
  auto goes_on = [&](std::size_t k, double gamma, double delta) {
    result.iterations = k;
    result.relative_residual = std::sqrt(gamma) / b_norm;
    if (!std::isfinite(gamma) || !std::isfinite(delta)) {
      result.breakdown = true;
      return false;
    }
    if (k > 0) detail::report(s, result);
    converged = !(gamma > stop2);
    if (converged || k >= s.max_iters) return false;
    const detail::SingleScalars sc = detail::single_scalars(gamma, delta, gamma_old, mu_old);
    if (!(sc.mu > 0) || !std::isfinite(sc.mu)) {
      result.breakdown = true;
      return false;
    }
    alpha = gamma / sc.mu;
    beta = sc.beta;
    gamma_old = gamma;
    mu_old = sc.mu;
    return true;
  };
  if (!s.device_scalars) {
    std::vector<double> host(2);
    values[0].get(std::span<double>(host));
    bool go = goes_on(0, host[0], host[1]);
    while (go) {
      const std::vector<skein::Array> next = detail::member_slots(v.x);
      skein::dist::update_and_reduce_members(
          kernels.host_update,
          {static_cast<T>(alpha), static_cast<T>(beta), v.w, v.p, sv, v.x, v.r}, next, 0);
      detail::single_matvec(a, v, next, overlap);
      next[0].get(std::span<double>(host));
      go = goes_on(result.iterations + 1, host[0], host[1]);
    }
  } else {
    // (gamma_old, mu_old) on the devices, two sets used in turn.
    const std::vector<double> first_state{std::numeric_limits<double>::infinity(), 0.0};
    std::vector<skein::Array> state[2];
    for (std::size_t i = 0; i < devices.size(); ++i) {
      state[0].push_back(skein::Array::from_host(queue, first_state, {}, devices[i]));
      state[1].push_back(skein::Array::empty(queue, {2}, skein::Dtype::float64, devices[i]));
    }
    detail::LaggedValues lagged(queue, devices.at(0));
    lagged.push(0, detail::slot_views(values, 1), detail::slot_views(values, 0));
    std::size_t launched = 0, read = 0;
    bool go = s.max_iters > 0;
    while (go) {
      if (launched < s.max_iters) {
        const std::size_t k = launched++;
        const std::vector<skein::Array>& st = state[k % 2];
        const std::vector<skein::Array> next = detail::member_slots(v.x);
        skein::dist::update_and_reduce_members(
            kernels.device_update, {values, st, stop2, v.w, v.p, sv, v.x, v.r}, next, 0);
        for (std::size_t i = 0; i < devices.size(); ++i)
          kernels.next_state(queue, {values[i], st[i], state[(k + 1) % 2][i]});
        detail::single_matvec(a, v, next, overlap);
        lagged.push(k + 1, detail::slot_views(next, 1), detail::slot_views(next, 0));
        values = next;
      }
      // Read one iteration behind the launches (or catch up once every iteration is launched).
      if (launched - read >= 1 || launched == s.max_iters) {
        const std::size_t k = read++;
        const auto [delta, gamma] = lagged.read(k);
        go = goes_on(k, gamma, delta);
      }
    }
    // Iterations launched past the one the host stopped at were frozen on the devices (or, after
    // a breakdown, may have changed x once more: the result says breakdown either way).
  }
  detail::stop_clock(result, v.x, start, comm, s.tol);
  result.converged = !result.breakdown && converged;
  return result;
}

}  // namespace skein_cg

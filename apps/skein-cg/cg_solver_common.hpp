// SPDX-License-Identifier: BSD-3-Clause
// What skein-cg's CG forms share (cg_solver.hpp, cg_device.hpp): settings, result, work vectors,
// and the timing, reporting and dot helpers. The forms themselves are described in cg_solver.hpp.

#pragma once

#include <mpi.h>

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <tuple>
#include <vector>
#include <type_traits>
#include <utility>

#include <skein/skein.hpp>

#include "cg_poisson.hpp"

namespace skein_cg {

struct CgSettings {
  double tol = 1e-10;
  std::size_t max_iters = 10000;
  std::string form = "fused";  // fused | unfused | pipelined | single-reduction
  bool deterministic = false;
  bool blas_dots = false;  // dist::blas_dot (DistArrays, the unfused form only)
  // The fused and single-reduction forms in the fast mode keep p . w and r . r on the devices
  // (cg_device.hpp); false: the host reads them in every iteration (classic_cg), as before.
  bool device_scalars = true;
  // With device_scalars: p's (single-reduction: r's) halo exchange overlapped with the stencil's
  // interior (dist::HaloOverlap), else exchanged before the stencil.
  bool halo_overlap = true;
  // With device_scalars (the fused form): r . r combined on a second queue while x is updated
  // (cg_device.hpp), else in the fused update's call before x's next use.
  bool reduce_overlap = false;
  std::size_t report_every = 0;
  bool printer = false;  // this rank prints the progress
  // Waits for the queue after each step of the loop and prints each step's mean time at the end
  // (a diagnosis of where an iteration's time goes: the waits make the whole slower).
  bool step_times = false;
};

struct CgResult {
  std::size_t iterations = 0;
  double relative_residual = 0;  // as CG updated it: ||r_k|| / ||b||
  bool converged = false;
  bool breakdown = false;  // p . A p <= 0 or not finite: A not SPD in this precision, or overflow
  double seconds = 0;      // the iterations, on the slowest rank
};

// The memory passes over a vector one iteration of `form` makes (see above).
inline std::size_t passes_per_iteration(const CgSettings& s) {
  if (s.form == "pipelined") return 17;
  if (s.form == "unfused") return 14;
  return s.deterministic ? 13 : 11;
}

// The work vectors. p (and for the pipelined form r and w, for the single-reduction form r) are
// read by the stencil: they have the halo; the others may not (a GridArray updated by a fused
// kernel must have none).
template <class V>
struct CgVectors {
  V x, r, p, w;
  std::optional<V> s, z, q;  // the pipelined form's only (s: the single-reduction form's too)
  // p's second buffer, with the halo (the fused form with the scalars on the devices and the
  // reduce overlap: p = r + beta p goes into the other buffer, so that the last half of x's
  // update, which reads the old p, runs beside the next iteration's p . w combine).
  std::optional<V> p_next;
};

namespace detail {

// Per-step wall times when CgSettings::step_times is on (else nothing).
class StepTimes {
 public:
  StepTimes(const CgSettings& s, const skein::Queue& queue)
      : on_(s.step_times && s.printer), queue_(queue) {}
  void mark(const char* step) {
    if (!on_) return;
    queue_.synchronize();
    const auto now = std::chrono::steady_clock::now();
    auto& [name, seconds, count] = find(step);
    (void)name;
    seconds += std::chrono::duration<double>(now - last_).count();
    count += 1;
    last_ = now;
  }
  void restart() {
    if (!on_) return;
    queue_.synchronize();
    last_ = std::chrono::steady_clock::now();
  }
  void print() const {
    for (const auto& [name, seconds, count] : steps_) {
      fmt::print("  step {:24} {:9.1f} us mean over {} calls\n", name,
                 seconds / static_cast<double>(count) * 1e6, count);
    }
  }

 private:
  std::tuple<std::string, double, std::size_t>& find(const char* step) {
    for (auto& e : steps_) {
      if (std::get<0>(e) == step) return e;
    }
    return steps_.emplace_back(step, 0.0, 0);
  }
  bool on_;
  skein::Queue queue_;
  std::chrono::steady_clock::time_point last_{};
  std::vector<std::tuple<std::string, double, std::size_t>> steps_;
};

template <class V>
double dot(const CgSettings& s, const V& a, const V& b) {
  if constexpr (std::is_same_v<V, skein::DistArray>) {
    if (s.blas_dots) return skein::dist::blas_dot(a, b);
  }
  return skein::dist::dots({{a, b}}, {.deterministic = s.deterministic}).at(0);
}

inline void report(const CgSettings& s, const CgResult& result) {
  if (s.printer && s.report_every > 0 && result.iterations % s.report_every == 0) {
    fmt::print("  iteration {:7}  relative residual {:.3e}\n", result.iterations,
               result.relative_residual);
    std::fflush(stdout);
  }
}

// Ends the timing: the iterations' wall time on the slowest rank.
template <class V>
void stop_clock(CgResult& result, const V& x, std::chrono::steady_clock::time_point start,
                MPI_Comm comm, double tol) {
  x.queue().synchronize();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, comm);
  result.seconds = seconds;
  result.converged = !result.breakdown && result.relative_residual <= tol;
}

template <class V>
std::chrono::steady_clock::time_point start_clock(const V& x, MPI_Comm comm) {
  x.queue().synchronize();
  MPI_Barrier(comm);
  return std::chrono::steady_clock::now();
}

}  // namespace detail

}  // namespace skein_cg

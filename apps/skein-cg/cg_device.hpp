// SPDX-License-Identifier: BSD-3-Clause
// The fused CG with its scalars on the devices (the default of the fast mode, --scalars device):
// the same 11 vector passes and kernels' arithmetic as classic_cg's fused form, but p . w and r . r
// stay where they were reduced, and (CgSettings::halo_overlap) p's halo exchange runs on a second
// queue while the stencil computes the interior (dist::HaloOverlap).
// dist::stencil_reduce_to_devices and dist::update_and_reduce_to_devices leave each value on every
// member's device (over NCCL the all_reduce is enqueued on the queue), and the next kernels read
// them there as `raw` parameters (alpha = rr / pw in the update, beta = rr_next / rr in p = r +
// beta p). With CgSettings::reduce_overlap the update is three kernels (r with r . r, then x
// in two halves: the same passes) and both values are combined on a second queue: r . r while the
// first half of x (rows [0, h) of each block, h = half its rows) is updated, and the next
// iteration's p . w while the second half is (dist::*_reduce_members, then dist::combine_members
// on that queue), so that each all_reduce (or the peers' combine) waits for no kernel but the one
// before it. The second half reads the p of its own iteration after p = r + beta p has made the
// next one: p has two buffers (CgVectors::p_next), and each iteration writes the next p into the
// other. The host never waits inside an iteration: it reads each iteration's two values one
// iteration later, copied on a second queue into page-locked memory, and decides from them.
//
// The decisions are the synchronous form's. The kernels apply an iteration only while
// rr > stop2 = (tol ||b||)^2 and pw > 0 (alpha = 0 otherwise), so the iteration that the host
// launches before it has read that the previous one converged changes neither x nor r; the host
// stops at the first iteration whose rr <= stop2, compared in the same precision as the kernels
// compare it, and reports the iterations up to there. A breakdown (pw <= 0 or not finite) is
// seen one iteration late: the iteration launched meanwhile may have updated x once more (the
// result says breakdown either way).
#pragma once

#include <mpi.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include <skein/skein.hpp>

#include "cg_poisson.hpp"
#include "cg_solver_common.hpp"

namespace skein_cg {

namespace detail {

// The local members' device indices, in local block order.
template <class V>
std::vector<std::size_t> member_devices(const V& v) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < v.local_size(); ++i) out.push_back(v.block(i).device_idx);
  return out;
}

// One value per local member's device (what the *_to_devices reductions give), from the host.
inline std::vector<skein::Array> member_values(const skein::Queue& queue,
                                               const std::vector<std::size_t>& devices,
                                               double value) {
  std::vector<skein::Array> out;
  const std::vector<double> host{value};
  for (std::size_t d : devices) out.push_back(skein::Array::from_host(queue, host, {}, d));
  return out;
}

// An iteration's p . w and r . r, copied to the host on a second queue.
class LaggedValues {
 public:
  LaggedValues(const skein::Queue& queue, std::size_t device)
      : queue_(queue),
        copies_(queue.context(), std::vector<std::size_t>{device}),
        device_(device),
        host_(skein::HostBuffer::allocate(queue.context(), 2 * kSlots * sizeof(double))) {}
  LaggedValues(const LaggedValues&) = delete;
  LaggedValues& operator=(const LaggedValues&) = delete;
  // The copies of the iterations pushed but never read (launched past the one the host stopped
  // at) may still be writing host_: they are waited for before it is freed. Freed under them, an
  // OpenCL implementation's copy (PoCL's worker threads) wrote into memory malloc had handed out
  // again, and skein-cg crashed later in malloc (apps.cg.single.one_column, now and then). A
  // failed wait leaves the memory to the process.
  ~LaggedValues() {
    try {
      copies_.synchronize();
    } catch (...) {
      static_cast<void>(new skein::HostBuffer(std::move(host_)));  // never freed, on purpose
    }
  }

  // Enqueues the copies of iteration k's values (member 0's arrays) behind the work so far.
  void push(std::size_t k, const std::vector<skein::Array>& pw,
            const std::vector<skein::Array>& rr) {
    Slot& s = slots_[k % kSlots];
    s.pw = pw.at(0);
    s.rr = rr.at(0);
    copies_.wait_for(queue_.record_marker(device_), device_);
    auto bytes = host_.bytes().subspan((k % kSlots) * 2 * sizeof(double), 2 * sizeof(double));
    on_copies(*s.pw).get(bytes.first(sizeof(double)), skein::Sync::async);
    on_copies(*s.rr).get(bytes.last(sizeof(double)), skein::Sync::async);
    s.done = copies_.record_marker(device_);
  }
  // Iteration k's values (p . w, r . r): waits for their copies.
  std::array<double, 2> read(std::size_t k) {
    Slot& s = slots_[k % kSlots];
    s.done.wait();
    std::array<double, 2> v{};
    std::memcpy(v.data(), host_.bytes().data() + (k % kSlots) * 2 * sizeof(double),
                2 * sizeof(double));
    s.pw.reset();  // the device values may go back to their pool
    s.rr.reset();
    return v;
  }

 private:
  static constexpr std::size_t kSlots = 4;
  struct Slot {
    std::optional<skein::Array> pw, rr;  // kept until their copies are read
    skein::Event done;
  };
  skein::Array on_copies(const skein::Array& a) const {
    return skein::Array(copies_, a.data(), a.shape(), a.dtype(), a.strides(), a.offset());
  }
  skein::Queue queue_, copies_;
  std::size_t device_;
  skein::HostBuffer host_;
  std::array<Slot, kSlots> slots_;
};

// The kernels of device_scalar_cg (T in their sources: the vectors' type, bound at each call).
struct DeviceCgKernels {
  // x += alpha p; r -= alpha w with alpha = rr / pw read on the device, and r . r (in double).
  skein::FusedKernel update_rr{
      "raw float64 rr, raw float64 pw, float64 stop2, T p, T w",
      "T x, T r",
      "const T alpha = (T)(rr[0] > stop2 && pw[0] > 0 ? rr[0] / pw[0] : 0.0);"
      "x += alpha * p; r -= alpha * w",
      "float64 rr_next",
      "(double)r * (double)r",
      "a + b",
      "0",
      {.reduce_type = skein::Dtype::float64, .name = "cg_update_rr_dev"}};
  // The same update in separate kernels, for the reduce overlap (CgSettings::reduce_overlap): r
  // and r . r first, then x (in halves, beside each combine: the same passes, the same arithmetic
  // per element as written; the compiler may contract x + alpha p into an FMA in one kernel and
  // not the other, so x's last bits may differ from the fused update's). x's update runs a group
  // per chunk of its range, so that its groups end throughout the launch and the combine's kernel
  // (NCCL's all_reduce, or the peers' combine) starts as soon as a multiprocessor has room instead
  // of after the update (as many groups as fit at once, looping, leave none).
  skein::FusedKernel update_r{
      "raw float64 rr, raw float64 pw, float64 stop2, T w",
      "T r",
      "const T alpha = (T)(rr[0] > stop2 && pw[0] > 0 ? rr[0] / pw[0] : 0.0);"
      "r -= alpha * w",
      "float64 rr_next",
      "(double)r * (double)r",
      "a + b",
      "0",
      {.reduce_type = skein::Dtype::float64, .name = "cg_update_r_dev"}};
  skein::ElementwiseKernel update_x{
      "raw float64 rr, raw float64 pw, float64 stop2, T x, T p",
      "T x_out",
      "const T alpha = (T)(rr[0] > stop2 && pw[0] > 0 ? rr[0] / pw[0] : 0.0);"
      "x_out = x + alpha * p",
      {.name = "cg_update_x_dev", .groups = skein::LaunchGroups::per_chunk}};
  // p = r + beta p, beta = rr_next / rr (0 once converged: the frozen iterations stay finite).
  skein::ElementwiseKernel next_p{"raw float64 rr_next, raw float64 rr, float64 stop2, T r, T p",
                                  "T p_out",
                                  "p_out = r + (T)(rr[0] > stop2 ? rr_next[0] / rr[0] : 0.0) * p",
                                  {.name = "cg_next_p_dev"}};
};

// One float64 array per local member's device (the *_members reductions' `into`).
inline std::vector<skein::Array> member_arrays(const skein::Queue& queue,
                                               const std::vector<std::size_t>& devices) {
  std::vector<skein::Array> out;
  for (std::size_t d : devices)
    out.push_back(skein::Array::empty(queue, {1}, skein::Dtype::float64, d));
  return out;
}

// The iterations of the reduce overlap (CgSettings::reduce_overlap; the comment at the top of
// this file): both combines on `reduce_queue`, each beside one half of x's update, and p in two
// buffers (v.p and v.p_next, swapped every iteration).
template <class V>
class OverlappedIterations {
 public:
  OverlappedIterations(const DeviceCgKernels& kern, const PoissonKernels& a, const CgVectors<V>& v,
                       std::vector<std::size_t> devices, skein::Queue reduce_queue, double stop2,
                       const std::optional<skein::dist::HaloOverlap>& overlap,
                       const std::optional<skein::dist::HaloOverlap>& overlap_next)
      : kern_(kern),
        a_(a),
        v_(v),
        queue_(v.x.queue()),
        devices_(std::move(devices)),
        reduce_queue_(std::move(reduce_queue)),
        stop2_(stop2),
        overlap_(overlap),
        overlap_next_(overlap_next),
        p_now_(&v.p),
        p_other_(&v.p_next.value()) {}

  // Enqueues one iteration from rr (r . r of the one before); returns its p . w and r . r.
  std::pair<std::vector<skein::Array>, std::vector<skein::Array>> launch(
      const std::vector<skein::Array>& rr) {
    const V& p = *p_now_;
    std::vector<skein::Array> pw = member_arrays(queue_, devices_);
    if (overlap_) {
      skein::dist::stencil_reduce_members(a_.apply_dot, {p, v_.w}, pw, 0,
                                          p_now_ == &v_.p ? *overlap_ : *overlap_next_);
    } else {
      p.exchange_halos();
      skein::dist::stencil_reduce_members(a_.apply_dot, {p, v_.w}, pw, 0);
    }
    std::vector<skein::Event> combined =
        skein::dist::combine_members(v_.r, pw, skein::ReduceOp::sum, reduce_queue_);
    finish();  // the previous iteration's second half of x, beside p . w's combine
    wait_for(combined);
    std::vector<skein::Array> rr_next = member_arrays(queue_, devices_);
    skein::dist::update_and_reduce_members(kern_.update_r, {rr, pw, stop2_, v_.w, v_.r}, rr_next,
                                           0);
    combined = skein::dist::combine_members(v_.r, rr_next, skein::ReduceOp::sum, reduce_queue_);
    update_x_half(p, rr, pw, true);  // beside r . r's combine
    wait_for(combined);
    skein::dist::elementwise(kern_.next_p, {rr_next, rr, stop2_, v_.r, p, *p_other_});
    deferred_.emplace(rr, pw);
    std::swap(p_now_, p_other_);
    return {std::move(pw), std::move(rr_next)};
  }

  // Enqueues the second half of the last launched iteration's x update (p_other_ holds its p).
  void finish() {
    if (!deferred_) return;
    update_x_half(*p_other_, deferred_->first, deferred_->second, false);
    deferred_.reset();
  }

 private:
  void wait_for(const std::vector<skein::Event>& events) const {
    for (std::size_t i = 0; i < devices_.size(); ++i) queue_.wait_for(events[i], devices_[i]);
  }
  // x += alpha p (alpha from rr and pw, one per local member) over the first or the second half
  // of each local block's rows.
  void update_x_half(const V& p, const std::vector<skein::Array>& rr,
                     const std::vector<skein::Array>& pw, bool first) const {
    for (std::size_t i = 0; i < devices_.size(); ++i) {
      const skein::Array xa = v_.x.local(i);  // the block's points, without a halo
      const std::size_t rows = xa.shape().empty() ? 0 : xa.shape()[0], half = rows / 2;
      const std::size_t begin = first ? 0 : half, end = first ? half : rows;
      if (begin == end || xa.size() == 0) continue;
      const skein::Array xv = xa.slice(begin, end);
      kern_.update_x(queue_, {rr[i], pw[i], stop2_, xv, p.local(i).slice(begin, end), xv});
    }
  }

  const DeviceCgKernels& kern_;
  const PoissonKernels& a_;
  const CgVectors<V>& v_;
  skein::Queue queue_;
  std::vector<std::size_t> devices_;
  skein::Queue reduce_queue_;
  double stop2_;
  const std::optional<skein::dist::HaloOverlap>& overlap_;
  const std::optional<skein::dist::HaloOverlap>& overlap_next_;
  const V* p_now_;
  const V* p_other_;
  // The last iteration's rr and pw while its second half of x is still to be updated.
  std::optional<std::pair<std::vector<skein::Array>, std::vector<skein::Array>>> deferred_;
};

}  // namespace detail

// CG from x = 0, the fused form with the scalars on the devices (fast mode only).
template <class T, class V>
CgResult device_scalar_cg(const CgSettings& s, const PoissonKernels& a, const V& b,
                          const CgVectors<V>& v, MPI_Comm comm) {
  const detail::DeviceCgKernels kern;
  CgResult result;
  skein::dist::fill(v.x, skein::Operand(T{0}));
  skein::dist::copy(b, v.r);
  skein::dist::copy(b, v.p);
  const double b_norm = std::sqrt(detail::dot(s, b, b));
  const double rr0 = detail::dot(s, v.r, v.r);
  if (b_norm == 0) {
    result.converged = true;
    return result;
  }
  result.relative_residual = std::sqrt(rr0) / b_norm;
  const double stop2 = (s.tol * b_norm) * (s.tol * b_norm);
  const skein::Queue& queue = v.x.queue();
  const std::vector<std::size_t> devices = detail::member_devices(v.x);
  std::vector<skein::Array> rr = detail::member_values(queue, devices, rr0);
  detail::LaggedValues lagged(queue, devices.at(0));
  // p's halos move on a second queue (high priority: the exchange's kernels go ahead of the
  // stencil's pending blocks) while the stencil computes the interior.
  std::optional<skein::dist::HaloOverlap> overlap, overlap_next;
  if (s.halo_overlap) {
    overlap = skein::dist::HaloOverlap{
        .halo_queue = skein::Queue(queue.context(), devices, skein::QueuePriority::high()),
        .exchange = {v.p}};
    if (v.p_next)
      overlap_next =
          skein::dist::HaloOverlap{.halo_queue = overlap->halo_queue, .exchange = {*v.p_next}};
  }
  // r . r is combined on this queue while x is updated (high priority: its kernels go ahead of
  // the update's pending blocks).
  std::optional<skein::Queue> reduce_queue;
  if (s.reduce_overlap) {
    if (!v.p_next) throw skein::LogicError("device_scalar_cg: the reduce overlap needs p_next");
    reduce_queue = overlap ? overlap->halo_queue
                           : skein::Queue(queue.context(), devices, skein::QueuePriority::high());
  }
  const auto start = detail::start_clock(v.x, comm);
  bool converged = false;
  // Whether the host, having read iteration k's values, goes on.
  auto goes_on = [&](std::size_t k, double pw, double rr_k) {
    if (!(pw > 0) || !std::isfinite(pw)) {
      result.breakdown = true;
      return false;
    }
    result.iterations = k;
    result.relative_residual = std::sqrt(rr_k) / b_norm;
    if (!std::isfinite(rr_k)) {
      result.breakdown = true;
      return false;
    }
    detail::report(s, result);
    converged = !(rr_k > stop2);
    return !converged && k < s.max_iters;
  };
  converged = !(rr0 > stop2);
  bool go = !converged && s.max_iters > 0;
  std::size_t launched = 0, read = 0;
  std::optional<detail::OverlappedIterations<V>> overlapped;
  if (reduce_queue)
    overlapped.emplace(kern, a, v, devices, *reduce_queue, stop2, overlap, overlap_next);
  while (go) {
    if (launched < s.max_iters) {
      const std::size_t k = ++launched;
      std::vector<skein::Array> pw, rr_next;
      if (overlapped) {
        std::tie(pw, rr_next) = overlapped->launch(rr);
      } else {
        if (overlap) {
          pw = skein::dist::stencil_reduce_to_devices(a.apply_dot, {v.p, v.w}, skein::ReduceOp::sum,
                                                      *overlap);
        } else {
          v.p.exchange_halos();
          pw =
              skein::dist::stencil_reduce_to_devices(a.apply_dot, {v.p, v.w}, skein::ReduceOp::sum);
        }
        rr_next = skein::dist::update_and_reduce_to_devices(
            kern.update_rr, {rr, pw, stop2, v.p, v.w, v.x, v.r}, skein::ReduceOp::sum);
        skein::dist::elementwise(kern.next_p, {rr_next, rr, stop2, v.r, v.p, v.p});
      }
      lagged.push(k, pw, rr_next);
      rr = std::move(rr_next);
    }
    // Read one iteration behind the launches (or catch up once every iteration is launched).
    if (launched - read >= 2 || launched == s.max_iters) {
      const std::size_t k = ++read;
      const auto [pw, rr_k] = lagged.read(k);
      go = goes_on(k, pw, rr_k);
    }
  }
  if (overlapped) overlapped->finish();
  detail::stop_clock(result, v.x, start, comm, s.tol);
  // Stopped where the kernels stopped applying iterations (rr <= stop2), whatever the rounding of
  // the relative residual against tol.
  result.converged = !result.breakdown && converged;
  return result;
}

}  // namespace skein_cg

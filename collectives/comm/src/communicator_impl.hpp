// SPDX-License-Identifier: BSD-3-Clause
// The Communicator's state (Communicator::Impl) and what its sources share: communicator.cpp (the
// public calls, their checks and the launch), make_communicator.cpp (creation), watchdog.cpp (the
// watchdog thread and the verdicts it finds), agreement_results.cpp (calls compared alongside and
// the host completions that wait for them), exchange.cpp (the synchronous backend's per-call
// check), host_all_reduce.cpp (reductions of host values). Private to the comm library.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "skein/config.hpp"
#if SKEIN_HAS_MPI
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

#include "call_ledger.hpp"
#include "fingerprint.hpp"
#include "skein/communicator.hpp"
#include "skein/detail/adapter.hpp"
#include "skein/detail/agreement.hpp"
#include "skein/detail/backend.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/pending_results.hpp"
#if SKEIN_HAS_MPI
#include "skein/detail/mpi_util.hpp"
#endif

namespace skein {

using detail::call_name_of;
using detail::call_of;
using detail::CallLabel;
using detail::CollectiveClock;
using detail::describe_differences;
using detail::digest;
using detail::Fingerprint;
using detail::has_root;
using detail::is_reduction;
using detail::kHostAllReduce;
using detail::label_of;
using detail::label_parts;
using detail::ranks_list;

inline long long ns_since(CollectiveClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(CollectiveClock::now() - t).count();
}

// What a synchronous backend's agreement exchange carries (one per call, on the persistent
// request): the largest digest and the largest complement of a digest (every rank learns the
// largest and the smallest digest), and, for a small all_reduce, this rank's data, reduced
// alongside the digests when every rank's digest is the same and every rank carried its data.
// One fixed size whatever the call, so that the exchanges of ranks that made different calls
// still pair up, and say so.
constexpr std::size_t kCarriedBytes = 96;
struct AgreementRecord {
  std::uint64_t max_digest = 0;      // MPI: MAX
  std::uint64_t max_complement = 0;  // MAX of ~digest
  std::int32_t carried = 0;          // MIN: 1 when `payload` holds this rank's data
  std::int32_t dtype = 0;            // the payload's, and its reduction
  std::int32_t reduction = 0;
  std::uint32_t bytes = 0;
  std::byte payload[kCarriedBytes] = {};
};
static_assert(sizeof(AgreementRecord) == 32 + kCarriedBytes);

struct AgreementResults;

struct Communicator::Impl {
#if SKEIN_HAS_MPI
  MPI_Comm comm = MPI_COMM_NULL;       // Skein's own duplicate, with MPI_ERRORS_RETURN
  MPI_Comm fp_comm = MPI_COMM_NULL;    // the agreement check's digests
  MPI_Comm diag_comm = MPI_COMM_NULL;  // the fingerprints themselves, after a mismatch
  MPI_Comm host_comm = MPI_COMM_NULL;  // detail::all_reduce_host's gathers, apart from the data's
#endif
  int mpi_rank = 0;
  int mpi_size = 1;
  Context context;
  std::vector<std::size_t> device_idxs;
  detail::MemberMap map;
  std::size_t first_member = 0;
  std::unique_ptr<detail::CollectiveBackendAdapter> backend;
  // The settings in effect (Communicator::options()); timeout_s and check_agreement below are
  // their copies that the calls read.
  CommunicatorOptions options;
  bool check_agreement = false;
  // MPI_THREAD_MULTIPLE: the watchdog posts and tests an asynchronous backend's agreement
  // exchanges; below it, the calling thread does, at the next call.
  bool thread_multiple = false;
  // Whether calls return before their agreement exchange is compared (asynchronous backends; the
  // tests also set it for the MPI backend, see compare_alongside_for_testing).
  bool async_agreement = false;
  double timeout_s = 300.0;
  std::uint64_t collective_sequence = 0;
  std::uint64_t p2p_sequence = 0;
  int group_depth = 0;
  std::uint64_t group_sequence = 0;
  // Set once the backend was aborted: every later call raises this.
  std::string broken;
  // The agreement check's verdicts, for the host completions of an asynchronous backend's calls
  // (detail::ResultCheck): each call holds its results on its queue under its sequence number
  // until every call up to it was compared.
  std::shared_ptr<AgreementResults> results;

  // One call's agreement check: its fingerprint, and the MPI_Iallreduce (MPI_MAX over the digest
  // and its complement: every rank learns the largest and the smallest digest) that compares it.
  // Shared, so that a request MPI still owns after a failure keeps its buffers (keep_until_exit).
  struct Exchange {
    Fingerprint mine;
    std::uint64_t send[2] = {0, 0};
    std::uint64_t recv[2] = {0, 0};
#if SKEIN_HAS_MPI
    MPI_Request request = MPI_REQUEST_NULL;
#endif
    bool posted = false;
    bool done = false;
    bool abandoned = false;   // given up on: registered with detail::abandon once
    bool persistent = false;  // went through the persistent request (below)
  };
#if SKEIN_HAS_MPI
  // A synchronous backend's exchanges, one at a time: a persistent MPI_Allreduce (MPI 4, or Open
  // MPI's MPIX_ extension), so that starting one costs a fraction of a microsecond instead of the
  // few microseconds of building a non-blocking collective's schedule each call. Shared, like an
  // Exchange, for its buffers' sake.
  // Its records (AgreementRecord) may carry a small all_reduce's data: see post_carrying().
  struct Persistent {
    MPI_Request request = MPI_REQUEST_NULL;
    AgreementRecord send;
    AgreementRecord recv;
  };
  std::shared_ptr<Persistent> persistent;
  MPI_Datatype record_type = MPI_DATATYPE_NULL;
  MPI_Op record_op = MPI_OP_NULL;
  void make_persistent();
#endif
  // Whether a call may carry its data in its exchange (a small all_reduce run by a synchronous
  // backend outside a group).
  bool can_carry(const detail::CollectiveCall& call) const {
#if SKEIN_HAS_MPI
    return persistent && !async_agreement && group_depth == 0 &&
           call.op == CollectiveOp::all_reduce &&
           call.count * itemsize(call.dtype) <= kCarriedBytes;
#else
    (void)call;
    return false;
#endif
  }

  // What the watchdog found: kinds of failure the next call raises.
  enum class Failure { timeout, error, mismatch };
  struct Verdict {
    Failure kind;
    std::string message;
    std::string call;  // mismatch: the call that differed
  };

  // The watchdog of asynchronous backends: a call's events (one per member, recorded on the
  // call's queue), and the queue and devices they were recorded on. Calls on one queue and the
  // same devices complete in order (one stream per device), so the watchdog asks only the last of
  // such a run, and halves the run when that one is still running.
  struct Watch {
    // Declared, so that std::optional<Watch> (in_call) sees a default-constructible type while this
    // class is still being defined (Clang evaluates that before the members' initialisers).
    Watch() noexcept {}
    std::vector<Event> events;
    CollectiveClock::time_point start;
    CollectiveClock::time_point deadline;
    CallLabel label;
    // The queue's identity, not a reference that keeps it: the last reference to a queue must not
    // go in this thread, whose freeing of the queue's memory waits for the device, which may be
    // stuck in the very call it must abort (with a strong reference here, the NCCL `skip` fault
    // scenario hung on 4 H200s). A weak reference's owner is never another queue's (its control
    // block outlives the queue), so a new queue at the same address is not taken for the old one.
    std::weak_ptr<const void> queue;
    bool has_queue = false;
    std::uint64_t devices = 0;  // a bit per device index; ~0: not comparable (an index >= 64)
    const void* queue_address =
        nullptr;  // for a quick look; the same queue only while `queue` lives
    // Whether a call on `address`'s queue and `bits` devices is on this watch's streams.
    bool on_streams(const void* address, std::uint64_t bits) const {
      return has_queue && address == queue_address && !queue.expired() && devices == bits &&
             bits != ~std::uint64_t{0};
    }
    bool same_streams(const Watch& o) const {
      return has_queue && o.has_queue && !queue.owner_before(o.queue) &&
             !o.queue.owner_before(queue) && devices == o.devices && devices != ~std::uint64_t{0};
    }
    // The device's own answer: Event::query would confirm the call's results first, which is not
    // this thread's to do.
    bool done() const {
      return std::all_of(events.begin(), events.end(),
                         [](const Event& e) { return !e.valid() || e.adapter()->query(); });
    }
  };
  std::mutex mutex;
  // Held while comparing exchanges (progress_shared): the watchdog and host completions that wait
  // for a call's verdict take turns. Taken before `mutex`, never while holding it.
  std::mutex progress_mutex;
  std::condition_variable wake;
  std::deque<Watch> watches;
#if SKEIN_HAS_MPI
  // The agreement check of calls compared alongside (asynchronous backends; the tests' MPI
  // backend too): made on the first such call, on fp_comm and diag_comm.
  std::unique_ptr<detail::CallLedger> ledger;
  detail::CallLedger& ledger_for_calls() {
    if (!ledger) ledger = std::make_unique<detail::CallLedger>(fp_comm, diag_comm, timeout_s);
    return *ledger;
  }
#endif
  // Calls since the calling thread last compared them (below MPI_THREAD_MULTIPLE).
  unsigned calls_since_progress = 0;
  std::optional<Watch> in_call;  // the call now running on the host (asynchronous backends)
  std::optional<Verdict> watchdog_failure;
  // Set with watchdog_failure (which is never cleared): each call looks here, not under the mutex.
  std::atomic<bool> watchdog_failed{false};
  bool stop = false;
  std::thread watchdog;

  explicit Impl(Context c);
  ~Impl();

  CollectiveClock::time_point deadline() const { return deadline_in(timeout_s); }
  static CollectiveClock::time_point deadline_in(double seconds) {
    if (seconds <= 0) return CollectiveClock::time_point::max();
    return deadline_after(CollectiveClock::now(), seconds);
  }
  // The deadline of a call that started at `start` (no second reading of the clock: a call reads
  // it once).
  CollectiveClock::time_point deadline_from(CollectiveClock::time_point start) const {
    return timeout_s <= 0 ? CollectiveClock::time_point::max() : deadline_after(start, timeout_s);
  }
  static CollectiveClock::time_point deadline_after(CollectiveClock::time_point start,
                                                    double seconds) {
    return start + std::chrono::duration_cast<CollectiveClock::duration>(
                       std::chrono::duration<double>(seconds));
  }
  bool asynchronous() const { return backend && backend->kind() == CollectiveBackend::nccl; }
  bool checks() const { return check_agreement && mpi_size > 1; }
  void start_watchdog();
  void watchdog_loop();
  void check_usable(const std::string& call);
  // Runs `f` (which talks to other ranks); a failure other than a LogicError aborts the backend
  // and breaks the communicator, and a timeout becomes the TimeoutError the user sees.
  template <class F>
  void guarded(const CallLabel& label, const std::string& call, CollectiveClock::time_point start,
               F&& f);

  // The agreement check's steps. post() starts the exchange; test() says whether it completed;
  // differences() is "" when every rank made the same call, else what differs (gathering the
  // fingerprints on diag_comm: every rank sees the same digests, so every rank gathers).
  void post(Exchange& x);
  // post() with this rank's data in the exchange (the persistent request's record).
  void post_carrying(Exchange& x, const std::byte* data, std::size_t bytes, Dtype dtype,
                     ReduceOp op);
  bool test(Exchange& x);
  std::string differences(const Exchange& x);
  // Waits for a posted exchange (the call's deadline) and raises LogicError on a mismatch.
  void finish(const std::shared_ptr<Exchange>& x, CollectiveClock::time_point deadline);
  // finish() of an exchange that carried data: true with the result in `data` when every rank
  // carried its own.
  bool finish_carrying(const std::shared_ptr<Exchange>& x, CollectiveClock::time_point deadline,
                       std::byte* data, std::size_t bytes, Dtype dtype, ReduceOp op);
  // Gives up on exchanges MPI still owns: their buffers are kept and the requests registered.
  void abandon(std::deque<std::shared_ptr<Exchange>>& xs);
  // Calls compared alongside: the ledger records the call (the calling thread, in call order).
  void record_call(const Fingerprint& f);
  // Whether calls recorded with record_call() still wait for their comparison.
  bool comparing() const;
  // Waits until every call up to `ticket` was compared (or a failure was recorded), at most until
  // `deadline`. Returns false when the comparison is still outstanding then.
  bool wait_agreed(std::uint64_t ticket, CollectiveClock::time_point deadline);
  // Calls compared alongside: every call made so far compared (barrier, destruction).
  bool settle_exchanges(CollectiveClock::time_point deadline);
  // One step of the ledger from any thread that may make MPI calls (the watchdog, the calling
  // thread, or a host completion waiting for a verdict): compares what it can and records a
  // mismatch as the communicator's failure (aborting an asynchronous backend). Takes
  // progress_mutex, then mutex.
  void progress_shared();
  // Under `mutex`: the first failure found stays the communicator's, and the host completions
  // waiting for its calls raise it.
  void set_failure_locked(Verdict v);
  // For AgreementResults::confirm: returns once every call up to `ticket` was compared equal on
  // every rank; raises the failure otherwise (TimeoutError after SKEIN_COLLECTIVE_TIMEOUT).
  void confirm_results(std::uint64_t ticket);
  [[noreturn]] void raise_verdict(const Verdict& v, const std::string& call);
};

// The agreement check's verdicts for host completions (detail::ResultCheck). Tickets are the calls'
// sequence numbers; exchanges are compared in that order, so one number says what is confirmed.
// Outlives the Impl (queues and events hold it): after the communicator is gone it answers from
// what it recorded.
struct AgreementResults final : detail::ResultCheck {
  std::weak_ptr<Communicator::Impl> owner;
  std::atomic<std::uint64_t> agreed{0};  // every call up to this one was compared equal
  std::atomic<bool> failed{false};
  mutable std::atomic<bool> reported{false};  // a host completion raised the failure
  mutable std::mutex mutex;
  std::optional<Communicator::Impl::Verdict> failure;  // the first, under the mutex

  bool confirmed(std::uint64_t ticket) const noexcept override {
    return !failed.load(std::memory_order_acquire) &&
           agreed.load(std::memory_order_acquire) >= ticket;
  }
  void fail(const Communicator::Impl::Verdict& v) noexcept {
    try {
      std::lock_guard lock(mutex);
      if (!failure) failure = v;
    } catch (...) {
    }
    failed.store(true, std::memory_order_release);
  }
  [[noreturn]] void raise(std::uint64_t ticket, const char* call) const;
  bool poll(std::uint64_t ticket, const char* call) override;
  void confirm(std::uint64_t ticket, const char* call) override;
};

template <class F>
void Communicator::Impl::guarded(const CallLabel& label, const std::string& call,
                                 CollectiveClock::time_point start, F&& f) {
  const bool watched = watchdog.joinable() && timeout_s > 0 && asynchronous();
  if (watched) {
    const auto until = deadline_from(start);
    std::lock_guard lock(mutex);
    if (!in_call) in_call.emplace();
    in_call->start = start;
    in_call->deadline = until;
    in_call->label = label;
  }
  // What the watchdog concluded if it aborted the backend during this call.
  auto watchdog_verdict = [&]() -> std::optional<Verdict> {
    if (!watched) return std::nullopt;
    std::lock_guard lock(mutex);
    in_call.reset();
    return watchdog_failure;
  };
  try {
    f();
  } catch (const LogicError&) {
    watchdog_verdict();
    throw;
  } catch (const TimeoutError& e) {
    watchdog_verdict();
    backend->abort();
    const double waited = std::chrono::duration<double>(CollectiveClock::now() - start).count();
    broken = fmt::format("{} did not finish within SKEIN_COLLECTIVE_TIMEOUT={} s", label.str(),
                         timeout_s);
    results->fail(Verdict{Failure::timeout, broken, {}});
    throw TimeoutError(ErrorInfo{
        .what =
            fmt::format("{} did not finish within SKEIN_COLLECTIVE_TIMEOUT={} s (waited {:.1f} s; "
                        "{}); the communicator was aborted",
                        label.str(), timeout_s, waited, e.info().what),
        .call = call,
        .hint = "Another rank probably did not make this call, made a different one, or died. "
                "Create a new Communicator to go on."});
  } catch (const Error& e) {
    const auto verdict = watchdog_verdict();
    backend->abort();
    if (verdict) {
      // The watchdog ended a call that was stuck on the host: that is the error to report.
      broken = verdict->message;
      raise_verdict(*verdict, call);
    }
    broken = fmt::format("{} failed: {}", label.str(), e.info().what);
    results->fail(Verdict{Failure::error, broken, {}});
    throw;
  }
  watchdog_verdict();
}

namespace detail {
// What a constructor asks for: the settings given in code (the environment overrides them), and
// whether an explicit backend among them wins over SKEIN_BACKEND instead (the constructors that
// take a CollectiveBackend, and split(), which keeps its parent's).
struct CommunicatorRequest {
  CommunicatorOptions options{};
  bool backend_pinned = false;
};
// Creates a Communicator's state over `user_comm` (make_communicator.cpp).
#if SKEIN_HAS_MPI
std::shared_ptr<Communicator::Impl> make_communicator_impl(MPI_Comm user_comm,
                                                           const Context& context,
                                                           std::vector<std::size_t> device_idxs,
                                                           const CommunicatorRequest& request);
#endif
}  // namespace detail

}  // namespace skein

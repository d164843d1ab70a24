// SPDX-License-Identifier: BSD-3-Clause
// Calls compared alongside (the CallLedger's rounds) and the host completions that wait for their
// verdict (AgreementResults, detail::ResultCheck).
#include "communicator_impl.hpp"

namespace skein {

void AgreementResults::raise(std::uint64_t ticket, const char* call) const {
  std::optional<Communicator::Impl::Verdict> v;
  {
    std::lock_guard lock(mutex);
    v = failure;
  }
  if (!v)
    v = Communicator::Impl::Verdict{
        Communicator::Impl::Failure::error, "the communicator failed", {}};
  const std::string what = fmt::format(
      "{}; the communicator was aborted, and {} does not hand over what collective #{} "
      "and the work after it wrote",
      v->message, call, ticket);
  using F = Communicator::Impl::Failure;
  reported.store(true, std::memory_order_relaxed);
  if (v->kind == F::mismatch) {
    throw LogicError(ErrorInfo{
        .what = what,
        .call = call,
        .hint = fmt::format("The ranks made different collective calls ({}): every rank must make "
                            "the same calls, in the same order, with the same counts, dtypes, "
                            "roots and reductions. This queue keeps raising this: create a new "
                            "Communicator and Queue to go on.",
                            v->call.empty() ? std::string("a collective") : v->call)});
  }
  if (v->kind == F::timeout) {
    throw TimeoutError(ErrorInfo{
        .what = what,
        .call = call,
        .hint = "Another rank probably did not make this call, or failed. This queue keeps raising "
                "this: create a new Communicator and Queue to go on."});
  }
  throw RuntimeError(
      ErrorInfo{.what = what,
                .call = call,
                .hint = "Another rank probably failed. This queue keeps raising this: create a new "
                        "Communicator and Queue to go on."});
}

bool AgreementResults::poll(std::uint64_t ticket, const char* call) {
  if (failed.load(std::memory_order_acquire)) raise(ticket, call);
  if (agreed.load(std::memory_order_acquire) >= ticket) return true;
  if (auto impl = owner.lock()) impl->progress_shared();
  if (failed.load(std::memory_order_acquire)) raise(ticket, call);
  return agreed.load(std::memory_order_acquire) >= ticket;
}

void AgreementResults::confirm(std::uint64_t ticket, const char* call) {
  if (confirmed(ticket)) return;
  if (auto impl = owner.lock()) impl->confirm_results(ticket);
  if (failed.load(std::memory_order_acquire)) raise(ticket, call);
  if (agreed.load(std::memory_order_acquire) < ticket) {
    // The communicator went before its last calls were compared (its destructor gave them a
    // while): nothing says they agreed.
    fail(Communicator::Impl::Verdict{
        Communicator::Impl::Failure::error,
        fmt::format("the Communicator was destroyed before the agreement check of its collective "
                    "#{} completed",
                    ticket),
        {}});
    raise(ticket, call);
  }
}

void Communicator::Impl::set_failure_locked(Verdict v) {
  if (!watchdog_failure) watchdog_failure = std::move(v);
  watchdog_failed.store(true, std::memory_order_release);
  results->fail(*watchdog_failure);
}

void Communicator::Impl::progress_shared() {
#if SKEIN_HAS_MPI
  std::lock_guard progress(progress_mutex);
  if (!ledger) return;
  {
    std::lock_guard lock(mutex);
    if (watchdog_failure) return;
  }
  std::optional<Verdict> verdict;
  try {
    if (auto mismatch = ledger->progress()) {
      verdict = Verdict{Failure::mismatch, std::move(mismatch->message), std::move(mismatch->call)};
    }
  } catch (const std::exception& e) {
    verdict = Verdict{Failure::error, fmt::format("the agreement check failed: {}", e.what()), {}};
  }
  results->agreed.store(ledger->agreed(), std::memory_order_release);
  if (verdict) {
    std::lock_guard lock(mutex);
    // NCCL's kernels may be stuck on the mismatch: abort them now. A synchronous backend is left
    // to the calling thread (check_usable), which may be inside it.
    if (asynchronous()) backend->abort();
    in_call.reset();
    watches.clear();
    set_failure_locked(std::move(*verdict));
  }
#endif
}

void Communicator::Impl::record_call(const Fingerprint& f) {
#if SKEIN_HAS_MPI
  ledger_for_calls().record(f);
#else
  (void)f;
#endif
}

bool Communicator::Impl::comparing() const {
#if SKEIN_HAS_MPI
  return ledger && ledger->made() > ledger->agreed();
#else
  return false;
#endif
}

bool Communicator::Impl::wait_agreed(std::uint64_t ticket, CollectiveClock::time_point until) {
  // Below MPI_THREAD_MULTIPLE this is the thread that makes the MPI calls; with it, this thread
  // and the watchdog take turns (progress_mutex).
  int spins = 0;
  for (;;) {
    if (results->failed.load(std::memory_order_acquire) ||
        results->agreed.load(std::memory_order_acquire) >= ticket) {
      return true;
    }
    progress_shared();
    if (results->failed.load(std::memory_order_acquire) ||
        results->agreed.load(std::memory_order_acquire) >= ticket) {
      return true;
    }
    {
      std::lock_guard lock(mutex);
      if (watchdog_failure) {
        results->fail(*watchdog_failure);
        return true;
      }
    }
    if (CollectiveClock::now() >= until) return false;
    // The other ranks' rounds usually arrive within microseconds: spin briefly, then poll every
    // 50 us (a rank that is late or gone then costs this thread little).
    if (++spins < 200) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

bool Communicator::Impl::settle_exchanges(CollectiveClock::time_point until) {
#if SKEIN_HAS_MPI
  if (!ledger) return true;
  return wait_agreed(ledger->made(), until);
#else
  (void)until;
  return true;
#endif
}

void Communicator::Impl::confirm_results(std::uint64_t ticket) {
  if (wait_agreed(ticket, deadline())) return;
  std::lock_guard lock(mutex);
  if (asynchronous()) backend->abort();
  set_failure_locked(Verdict{Failure::timeout,
                             fmt::format("the agreement check of collective #{} did not complete "
                                         "within SKEIN_COLLECTIVE_TIMEOUT={} s",
                                         ticket, timeout_s),
                             {}});
}

}  // namespace skein

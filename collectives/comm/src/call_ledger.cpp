// SPDX-License-Identifier: BSD-3-Clause
// The agreement check of calls compared alongside, in rounds of chained digests (call_ledger.hpp).
#include "call_ledger.hpp"

#if SKEIN_HAS_MPI

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "skein/detail/agreement.hpp"
#include "skein/detail/mpi_util.hpp"

namespace skein::detail {

namespace {
// The fingerprints of at most this many calls are gathered at once after a mismatch.
constexpr std::uint64_t kGatherCalls = 65536;
}  // namespace

CallLedger::CallLedger(MPI_Comm rounds, MPI_Comm diag, double timeout_s)
    : rounds_(rounds), diag_(diag), timeout_s_(timeout_s) {}

CallLedger::~CallLedger() { abandon(); }

void CallLedger::record(const Fingerprint& f) {
  chain_ = hash_mix(chain_, digest(f));
  {
    std::lock_guard lock(recorded_mutex_);
    recorded_.push_back(Entry{f, chain_});
  }
  made_.store(f.sequence, std::memory_order_release);
}

std::uint64_t CallLedger::chain_at(std::uint64_t sequence) const {
  if (sequence == agreed_.load(std::memory_order_relaxed)) return agreed_chain_;
  const auto it =
      std::lower_bound(history_.begin(), history_.end(), sequence,
                       [](const Entry& e, std::uint64_t s) { return e.call.sequence < s; });
  return it != history_.end() && it->call.sequence == sequence ? it->chain : 0;
}

void CallLedger::advance(std::uint64_t to) {
  if (to <= agreed_.load(std::memory_order_relaxed)) return;
  agreed_chain_ = chain_at(to);
  while (!history_.empty() && history_.front().call.sequence <= to) history_.pop_front();
  agreed_.store(to, std::memory_order_release);
}

std::optional<CallLedger::Mismatch> CallLedger::progress() {
  {
    std::lock_guard lock(recorded_mutex_);
    for (const auto& e : recorded_) history_.push_back(e);  // trivially copyable
    recorded_.clear();
  }
  if (round_) {
    int done = 0;
    SKEIN_MPI_CHECK(MPI_Test, (&round_->request, &done, MPI_STATUS_IGNORE), "the agreement check");
    if (!done) return std::nullopt;
    const std::shared_ptr<Round> r = std::move(round_);
    if (auto mismatch = read(*r)) return mismatch;
  }
  const std::uint64_t s =
      history_.empty() ? agreed_.load(std::memory_order_relaxed) : history_.back().call.sequence;
  // Every rank posts after a round that found them at different calls; otherwise a rank posts
  // when it has calls beyond those it gave.
  if (compare_at_ || s > last_sent_) post();
  return std::nullopt;
}

void CallLedger::post() {
  auto r = std::make_shared<Round>();
  const std::uint64_t s =
      history_.empty() ? agreed_.load(std::memory_order_relaxed) : history_.back().call.sequence;
  const std::uint64_t hs = chain_at(s);
  r->send[0] = s;
  r->send[1] = ~s;
  r->send[2] = hs;
  r->send[3] = ~hs;
  if (compare_at_) {
    const std::uint64_t hm = chain_at(*compare_at_);
    r->send[4] = hm;
    r->send[5] = ~hm;
  }
  r->compared = compare_at_;
  SKEIN_MPI_CHECK(MPI_Iallreduce,
                  (r->send, r->recv, 6, MPI_UINT64_T, MPI_MAX, rounds_, &r->request),
                  "the agreement check");
  last_sent_ = s;
  round_ = std::move(r);
}

std::optional<CallLedger::Mismatch> CallLedger::read(const Round& r) {
  const std::uint64_t most = r.recv[0];
  const std::uint64_t least = ~r.recv[1];
  compare_at_.reset();
  if (r.compared) {
    // max(chain) == ~max(~chain) == min(chain): every rank's chain at m is the same.
    if (r.recv[4] != ~r.recv[5]) return describe(*r.compared);
    advance(*r.compared);
  }
  if (least == most) {
    if (r.recv[2] != ~r.recv[3]) return describe(least);
    advance(least);
  } else {
    compare_at_ = least;
  }
  return std::nullopt;
}

CallLedger::Mismatch CallLedger::describe(std::uint64_t through) {
  int size = 1;
  SKEIN_MPI_CHECK(MPI_Comm_size, (diag_, &size), "the agreement check");
  // Every rank is here for the same round, with the same agreed point: the same gathers.
  std::uint64_t from = agreed_.load(std::memory_order_relaxed) + 1;
  while (from <= through) {
    const std::uint64_t n = std::min(through - from + 1, kGatherCalls);
    std::vector<Fingerprint> mine(n);
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t s = from + i;
      const auto it =
          std::lower_bound(history_.begin(), history_.end(), s,
                           [](const Entry& e, std::uint64_t q) { return e.call.sequence < q; });
      if (it != history_.end() && it->call.sequence == s) mine[i] = it->call;
    }
    auto sent = std::make_shared<std::vector<Fingerprint>>(std::move(mine));
    auto all = std::make_shared<std::vector<Fingerprint>>(n * static_cast<std::uint64_t>(size));
    const int bytes = static_cast<int>(n * sizeof(Fingerprint));
    MPI_Request request = MPI_REQUEST_NULL;
    SKEIN_MPI_CHECK(MPI_Iallgather,
                    (sent->data(), bytes, MPI_BYTE, all->data(), bytes, MPI_BYTE, diag_, &request),
                    "the agreement check");
    try {
      wait_requests(std::span(&request, 1), deadline_after(timeout_s_),
                    "the agreement check's MPI_Iallgather of the fingerprints");
    } catch (const TimeoutError&) {
      skein::detail::abandon(request, "the agreement check's MPI_Iallgather of the fingerprints");
      keep_until_exit(std::move(sent));
      keep_until_exit(std::move(all));
      return {
          fmt::format("calls #{} to #{}: the ranks made different calls (the fingerprints could "
                      "not be gathered within SKEIN_COLLECTIVE_TIMEOUT={} s to say which)",
                      from, through, timeout_s_),
          {}};
    }
    for (std::uint64_t i = 0; i < n; ++i) {
      std::vector<Fingerprint> column(static_cast<std::size_t>(size));
      for (int q = 0; q < size; ++q)
        column[static_cast<std::size_t>(q)] = (*all)[static_cast<std::size_t>(q) * n + i];
      if (std::any_of(column.begin(), column.end(),
                      [&](const Fingerprint& f) { return !(f == column[0]); })) {
        return {describe_differences(column, (*sent)[i]), call_of((*sent)[i])};
      }
    }
    from += n;
  }
  return {fmt::format("calls up to #{}: the ranks made different calls (their digests differ)",
                      through),
          {}};
}

void CallLedger::abandon() noexcept {
  if (!round_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  try {
    if (!finalized) skein::detail::abandon(round_->request, "the agreement check's round");
    keep_until_exit(std::move(round_));
  } catch (...) {
  }
  round_.reset();
}

}  // namespace skein::detail

#endif

// SPDX-License-Identifier: BSD-3-Clause
// The agreement check of calls that return before it (NCCL's calls, whose work is enqueued at
// once): the ranks compare what they were asked to do alongside, in rounds.
//
// Each call's fingerprint enters a chain: chain(s) = hash_mix(chain(s - 1), digest(call s)), so one
// 64-bit value stands for every call up to s. A round is one small MPI_Iallreduce (MAX over six
// words) in which every rank gives the last call it made (s) and chain(s), and, when the previous
// round found the ranks at different calls, chain(m) at the least of them (m). Every rank learns
// the least and the largest s and whether the chains agree; every call up to the point compared is
// then agreed (agreed()), or the ranks made different calls there, and the fingerprints of the
// calls since the last agreed one are gathered to say which call differs and how.
//
// One round is in flight at a time; the next is posted when the previous one found the ranks at
// different calls (every rank then posts one: they all saw the same result), or when this rank made
// calls beyond those it has given. Whatever the timing, ranks that made the same calls post the
// same rounds, so a round never waits for one that never comes; a rank that stops making calls
// leaves the others' round unanswered, which their deadline turns into a TimeoutError. The cost is
// a round per look (the watchdog looks every 5 ms, a host completion waiting for a verdict
// looks at once), not an MPI call per collective: 100 000 calls a second need no more MPI traffic
// than a few.
#pragma once

#include "skein/config.hpp"

#if SKEIN_HAS_MPI

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fingerprint.hpp"
#include "skein/detail/agreement.hpp"
#include "skein/detail/backend.hpp"

namespace skein::detail {

class CallLedger {
 public:
  // What a round found wrong: the ranks made different calls ("all_reduce #7: the ranks made
  // different calls: count differs: ...") and the public call it was.
  struct Mismatch {
    std::string message;
    std::string call;
  };

  // `rounds`: the rounds' communicator, used by nothing else; `diag`: where the fingerprints are
  // gathered after a mismatch; `timeout_s` bounds that gather.
  CallLedger(MPI_Comm rounds, MPI_Comm diag, double timeout_s);
  ~CallLedger();
  CallLedger(const CallLedger&) = delete;
  CallLedger& operator=(const CallLedger&) = delete;

  // The calling thread, in call order: call `f` was made (f.sequence numbers the calls 1, 2, ...).
  // Cheap: a hash and a push under a lock of its own.
  void record(const Fingerprint& f);

  // One step without blocking: tests the round in flight and reads it, then posts the next one
  // when it is due. Returns what a round found wrong (the same on every rank); raises MPI's
  // errors. One thread at a time (the Communicator's progress lock).
  std::optional<Mismatch> progress();

  // Every call up to this one was compared equal on every rank (0: none yet).
  std::uint64_t agreed() const { return agreed_.load(std::memory_order_acquire); }
  // The calls recorded so far (the last sequence number).
  std::uint64_t made() const { return made_.load(std::memory_order_acquire); }

  // Gives up: a round MPI still owns is kept, with its buffers, until exit. Never throws.
  void abandon() noexcept;

 private:
  struct Entry {
    Fingerprint call;
    std::uint64_t chain = 0;
  };
  // What a round sends and receives (MAX over each word): s, ~s (their MAX is the least s),
  // chain(s) and its complement, chain(m) and its complement (m: the least s of the round before,
  // when the ranks were at different calls; zeros otherwise, on every rank alike).
  struct Round {
    std::uint64_t send[6] = {};
    std::uint64_t recv[6] = {};
    MPI_Request request = MPI_REQUEST_NULL;
    std::optional<std::uint64_t> compared;  // m, when words 4 and 5 carry chain(m)
  };

  std::uint64_t chain_at(std::uint64_t sequence) const;
  void advance(std::uint64_t to);
  void post();
  std::optional<Mismatch> read(const Round& r);
  // Which call in (agreed, through] differs, from every rank's fingerprints.
  Mismatch describe(std::uint64_t through);

  MPI_Comm rounds_;
  MPI_Comm diag_;
  double timeout_s_;

  std::mutex recorded_mutex_;
  std::deque<Entry> recorded_;       // the calls' pushes, moved into history_ by progress()
  std::uint64_t chain_ = kHashSeed;  // the calling thread's running chain (record())
  std::atomic<std::uint64_t> made_{0};

  // progress()'s own: the calls after agreed_, in order, and the round in flight.
  std::deque<Entry> history_;
  std::uint64_t agreed_chain_ = kHashSeed;
  std::atomic<std::uint64_t> agreed_{0};
  std::shared_ptr<Round> round_;             // in flight, or null
  std::uint64_t last_sent_ = 0;              // s of this rank's last round
  std::optional<std::uint64_t> compare_at_;  // m, compared in the next round
};

}  // namespace skein::detail

#endif

// SPDX-License-Identifier: BSD-3-Clause
// Agreement across ranks, with deadlines: the one module through which the collectives layer's
// ranks compare what they were asked to do, share a rank's string or failure, and hand data to
// one another outside the Communicator's data path (HDF5 files, checkpoints, the Runtime's
// placement, the Communicator's creation).
//
// Every step is non-blocking MPI waited on under SKEIN_COLLECTIVE_TIMEOUT (collective_timeout()):
// a rank that never arrives, or died, makes the others raise TimeoutError naming the operation,
// the step and the ranks (a roll call among those still there tells which did not arrive),
// never hang. A request given up on is registered with detail::abandon and its buffers are kept
// until exit (MPI cannot cancel a collective); the Agreement is then broken, and every later step
// on it raises at once instead of pairing with the abandoned one.
//
// One hash (agreement_hash) turns what each rank was asked to do into the 64-bit value the ranks
// compare: the Communicator's fingerprints, HDF5's and the checkpoints' call descriptions, and the
// device identities of placement.
//
// The Communicator's per-call check keeps its own persistent exchange (communicator.cpp), for
// speed; it takes its hash, its duplicates and its creation steps from here.
#pragma once

#include "skein/config.hpp"
#include "skein/export.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace skein::detail {

// One step of the mixing function (splitmix64's finaliser over h combined with v).
constexpr std::uint64_t hash_mix(std::uint64_t h, std::uint64_t v) {
  std::uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
inline constexpr std::uint64_t kHashSeed = 0x5ce1'a5ce'1a5c'e1a5ULL;

// The agreement hash of a text: its bytes eight at a time through hash_mix, then its length.
SKEIN_EXPORT std::uint64_t agreement_hash(std::string_view text);

// The collective timeout when neither SKEIN_COLLECTIVE_TIMEOUT nor the code sets one, in seconds.
inline constexpr double kDefaultCollectiveTimeout = 300.0;

// SKEIN_COLLECTIVE_TIMEOUT in seconds (default kDefaultCollectiveTimeout; 0: wait forever), read
// through the one environment reader; a bad value raises LogicError naming `call`.
SKEIN_EXPORT double collective_timeout(const char* call);

}  // namespace skein::detail

#if SKEIN_HAS_MPI

#include <mpi.h>

#include <climits>
#include <exception>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "skein/detail/backend.hpp"
#include "skein/detail/errors.hpp"

namespace skein::detail {

// The deadline `seconds` from now (time_point::max() for 0: no deadline).
SKEIN_EXPORT CollectiveClock::time_point deadline_after(double seconds);

// A duplicate of `parent` by MPI_Comm_idup, waited on until `deadline`, with MPI_ERRORS_RETURN.
// A rank that never arrives: TimeoutError naming `call` and `step` with `hint`; MPI writes the
// handle when the duplication completes, so it lives on the heap until exit then.
SKEIN_EXPORT MPI_Comm duplicate_comm(MPI_Comm parent, CollectiveClock::time_point deadline,
                                     double timeout_s, const std::string& call,
                                     const std::string& step, const std::string& hint);

// A roll call on `comm` after a timeout: sends `step` to every other rank with `tag` and takes the
// answers that come within a grace period (min(2 s, max(0.5 s, timeout_s))). Returns the ranks
// that answered, this rank included, each with the step it sent, sorted by rank. What MPI may
// still touch (sends to ranks that never receive them) is kept until exit; `subject` names the
// object in what is left outstanding. Every rank that timed out takes part, so the ranks that do
// not answer are those that died, cannot be reached, or are blocked elsewhere.
SKEIN_EXPORT std::vector<std::pair<int, std::uint64_t>> roll_call(MPI_Comm comm, int tag,
                                                                  std::uint64_t step,
                                                                  double timeout_s,
                                                                  const std::string& subject);
// The roll call, said in words: "ranks 0, 1 answered a roll call after the timeout; ranks 2, 3 did
// not (lost: ...)".
SKEIN_EXPORT std::string absent_ranks(MPI_Comm comm, int tag, std::uint64_t step, double timeout_s,
                                      const std::string& subject);

// Waits for `request` until `deadline`. On a timeout: the request is abandoned, `keep` (what MPI
// may still read or write) is kept until exit, and TimeoutError says "<call>: <step> did not
// complete within SKEIN_COLLECTIVE_TIMEOUT=<t> s" with `hint`.
SKEIN_EXPORT void wait_or_abandon(MPI_Request& request, CollectiveClock::time_point deadline,
                                  double timeout_s, const std::string& call,
                                  const std::string& step, std::shared_ptr<void> keep,
                                  const std::string& hint);

// The ranks of one Skein object (an HDF5 file, a checkpoint directory) agreeing on its own
// duplicate of the caller's communicator. Not thread-safe: one thread per object, as for MPI.
class SKEIN_EXPORT Agreement {
 public:
  Agreement() = default;
  // Duplicates `parent` (under the deadline). `subject` names the object in messages ("HDF5 file
  // 'out.h5'"); `mismatch_hint` says what to do when the ranks' calls differ.
  Agreement(MPI_Comm parent, std::string subject, std::string mismatch_hint,
            const std::string& call);
  Agreement(Agreement&& other) noexcept;
  Agreement& operator=(Agreement&& other) noexcept;
  Agreement(const Agreement&) = delete;
  Agreement& operator=(const Agreement&) = delete;
  ~Agreement();

  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  double timeout() const { return timeout_s_; }
  const std::string& subject() const { return subject_; }
  // Why a step of this object timed out (empty while none has).
  const std::string& broken() const { return broken_; }

  // Every rank must make the same call: compares agreement_hash of "#<n> <description>" (n
  // numbers this object's calls). On a mismatch every rank raises LogicError naming its own call
  // and rank 0's.
  void agree_on_call(const std::string& call, const std::string& description);

  // Rank `root`'s text, on every rank.
  std::string broadcast_string(const std::string& call, const std::string& text, int root);
  // Rank `root`'s bytes into `data` on every rank (each rank passes the same size). `data` must
  // stay valid until the process ends if this throws TimeoutError: pass `keep` to own it.
  void broadcast_bytes(const std::string& call, std::span<std::byte> data, int root,
                       const std::shared_ptr<void>& keep);

  // Point to point on this object's communicator, under the deadline. receive() returns the
  // number of bytes that arrived (at most data.size()). As for broadcast_bytes, `keep` owns what
  // MPI may still touch after a timeout.
  void send(const std::string& call, std::span<const std::byte> data, int to, int tag,
            std::shared_ptr<void> keep);
  std::size_t receive(const std::string& call, std::span<std::byte> data, int from, int tag,
                      std::shared_ptr<void> keep);

  // Tells every rank whether any failed (`mine`: this rank's failure, or null). A failing rank
  // rethrows its own error; the others raise one of the same kind (LogicError, TimeoutError,
  // `Specific` — a RuntimeError of the caller's layer — or RuntimeError) naming the lowest
  // failing rank, the call and `where`, with that rank's message.
  template <class Specific = RuntimeError>
  void share_failure(std::exception_ptr mine, const std::string& call, const std::string& where) {
    const auto [first, kind, message] = exchange_failure(mine, call, [](const std::exception& e) {
      return dynamic_cast<const Specific*>(&e) != nullptr;
    });
    if (first == INT_MAX) return;
    if (mine) std::rethrow_exception(mine);
    const ErrorInfo info = failure_info(first, call, where, message);
    if (kind == 0) throw LogicError(info);
    if (kind == 1) throw TimeoutError(info);
    if (kind == 2) throw Specific(info);
    throw RuntimeError(info);
  }

  // Waits for `request` under this object's deadline (the step's own: timeout() from now). On a
  // timeout: abandons it, keeps `keep`, finds which ranks are still here (a roll call), marks the
  // object broken and throws TimeoutError naming the call, the step, and the ranks that did not
  // arrive.
  void wait(MPI_Request& request, const std::string& call, const std::string& step,
            std::shared_ptr<void> keep);

 private:
  struct Failure {
    int first = INT_MAX;  // the lowest failing rank, INT_MAX for none
    int kind = 3;         // 0: LogicError, 1: TimeoutError, 2: the caller's kind, 3: other
    std::string message;
  };
  template <class IsSpecific>
  Failure exchange_failure(const std::exception_ptr& mine, const std::string& call,
                           IsSpecific is_specific);
  Failure exchange_failure_impl(const std::exception_ptr& mine, const std::string& call,
                                int my_kind, const std::string& my_message);
  ErrorInfo failure_info(int first, const std::string& call, const std::string& where,
                         std::string message) const;
  void check_usable(const std::string& call) const;
  // The ranks that answer a roll call within a short grace period (this rank included), each
  // with the step it is at.
  std::vector<std::pair<int, std::uint64_t>> roll_call(std::uint64_t step);
  void release();
  void wait(MPI_Request& request, const std::string& call, const std::string& step,
            std::shared_ptr<void> keep, MPI_Status* status);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  double timeout_s_ = 300.0;
  std::string subject_;
  std::string mismatch_hint_;
  std::uint64_t calls_ = 0;  // numbers the calls, for agree_on_call
  std::uint64_t steps_ = 0;  // numbers the waits, for the roll call
  std::string broken_;
  bool abandoned_ = false;  // a request on comm_ was given up on: never freed then
};

template <class IsSpecific>
Agreement::Failure Agreement::exchange_failure(const std::exception_ptr& mine,
                                               const std::string& call, IsSpecific is_specific) {
  int kind = 3;
  std::string message;
  if (mine) {
    try {
      std::rethrow_exception(mine);
    } catch (const LogicError& e) {
      kind = 0, message = e.what();
    } catch (const TimeoutError& e) {
      kind = 1, message = e.what();
    } catch (const std::exception& e) {
      kind = is_specific(e) ? 2 : 3, message = e.what();
    } catch (...) {
      message = "unknown exception";
    }
  }
  return exchange_failure_impl(mine, call, kind, message);
}

}  // namespace skein::detail

#endif

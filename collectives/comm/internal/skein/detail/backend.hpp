// SPDX-License-Identifier: BSD-3-Clause
// What each collectives backend (mpi/, nccl/) implements. The front-end (src/communicator.cpp)
// validates every call (sizes, root, dtype, contexts, the agreement check across ranks) before a
// backend sees it, and runs the watchdog that turns a stuck collective into a TimeoutError.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skein/communicator.hpp"
#include "skein/detail/communicator_access.hpp"
#include "skein/dtype.hpp"
#include "skein/export.hpp"

#if SKEIN_HAS_MPI
#include <mpi.h>
#endif

namespace skein::detail {

using CollectiveClock = std::chrono::steady_clock;

class QueueAdapter;
class BufferAdapter;

// One member's part of a call: its buffers (byte offsets included) and its queue.
struct MemberBuffers {
  std::size_t local_device = 0;  // index among this rank's members
  std::size_t device_idx = 0;    // in the context
  QueueAdapter* queue = nullptr;
  const BufferAdapter* send = nullptr;
  std::size_t send_offset = 0;
  const BufferAdapter* recv = nullptr;
  std::size_t recv_offset = 0;
};

// Where a collective call's host time goes, when SKEIN_PROFILE_COLLECTIVES=1: nanoseconds per
// phase summed over calls, printed by each Communicator when it goes (for tuning; off by default
// and then costs one branch per phase). Safe under threads: the totals are atomic, and each call's
// NCCL launch time goes through its thread's own slot (call_launch_ns) first.
struct CallProfile {
  bool on = false;  // set once, on first use
  std::atomic<long long> calls{0};
  std::atomic<long long> checks_ns{0};   // argument checks (the front-end, before launch)
  std::atomic<long long> backend_ns{0};  // the backend's run (NCCL: its group and launches)
  std::atomic<long long> launch_ns{0};   // NCCL only: ncclGroupStart .. ncclGroupEnd
  std::atomic<long long> events_ns{0};   // the events returned to the caller
  std::atomic<long long> watch_ns{0};    // registering the call with the watchdog
};
// Read (and a bad SKEIN_PROFILE_COLLECTIVES refused, with LogicError) when the first Communicator
// is made; call_profile_if_read() never throws (null while unread), for destructors.
CallProfile& call_profile();
CallProfile* call_profile_if_read() noexcept;
// SKEIN_NCCL_BLOCKING: blocking NCCL communicators (the default) or non-blocking ones; nullopt when
// unset. Read by every Communicator's creation (a bad value is refused there whatever the backend),
// where it overrides CommunicatorOptions::nccl_blocking.
std::optional<bool> nccl_blocking_from_environment();
// The NCCL launch time of the call this thread is making (the backend adds to it; the front-end
// moves it into the totals with the call's other phases).
long long& call_launch_ns();

// The agreement check of a call that a synchronous backend runs (the MPI backend): started by the
// front-end before run(), completed by the backend once the inputs are staged and before any data
// goes to another rank, so that the exchange overlaps the staging and a mismatch (raised as
// LogicError by complete()) never reaches MPI's buffers.
//
// A small all_reduce's data may travel in the exchange itself (one MPI call instead of two): when
// payload_capacity() >= its bytes, the backend, once this rank's members are combined, calls
// complete_carrying() instead of complete(). It returns true with the result over every rank in
// `data` (avg not yet divided), or false when some rank could not carry its data (a call inside a
// group): the backend then runs the data's MPI call as usual. Either way the call was compared.
class AgreementStep {
 public:
  virtual void complete() = 0;
  virtual std::size_t payload_capacity() const { return 0; }
  virtual bool complete_carrying(std::byte* data, std::size_t bytes) = 0;

 protected:
  ~AgreementStep() = default;
};

struct CollectiveCall {
  CollectiveOp op = CollectiveOp::all_reduce;
  ReduceOp reduce_op = ReduceOp::sum;
  Dtype dtype = Dtype::float32;
  std::size_t count = 0;  // elements per member block (as in NCCL's count arguments)
  int root = 0;           // broadcast / reduce
  int peer = 0;           // send / recv
  bool in_place = false;
  std::vector<MemberBuffers> members;  // this rank's members taking part (all, or one for p2p)
  // The front-end's number for this call (collectives and point-to-point are counted apart), for
  // messages.
  std::uint64_t sequence = 0;
  // When run() must be done (the front-end's SKEIN_COLLECTIVE_TIMEOUT from the call's start,
  // the agreement check included). A backend that blocks in run() (the MPI backend) gives up at
  // this time and throws TimeoutError saying what it waited for; the front-end then calls
  // abort() (again: abort() must be idempotent) and raises the TimeoutError the user sees.
  // time_point::max(): no limit.
  CollectiveClock::time_point deadline = CollectiveClock::time_point::max();
  // Set by the front-end for synchronous backends: complete() it before data leaves this rank
  // (asynchronous backends ignore it: the front-end compares their calls alongside).
  AgreementStep* agreement = nullptr;
};

// The layout of a communicator: which (MPI rank, local device) each member is.
struct MemberMap {
  std::vector<int> member_rank;                   // member -> MPI rank
  std::vector<std::size_t> first_member_of_rank;  // MPI rank -> its first member
  std::vector<std::size_t> members_of_rank;       // MPI rank -> how many
};

class CollectiveBackendAdapter {
 public:
  virtual ~CollectiveBackendAdapter() = default;
  virtual CollectiveBackend kind() const = 0;
  virtual std::string description() const = 0;
  // Whether the backend can do this reduction on this dtype (the front-end raises a LogicError
  // naming the backend when it cannot).
  virtual bool supports(Dtype dtype, ReduceOp op) const = 0;
  // Enqueues the call on the members' queues (asynchronous where the backend allows: NCCL).
  virtual void run(const CollectiveCall& call) = 0;
  virtual void group_start() = 0;
  // A backend that blocks here (the MPI backend runs the whole group here) applies the timeout
  // it was created with.
  virtual void group_end() = 0;
  // Stops every outstanding operation so that this rank can raise instead of hanging
  // (ncclCommAbort; the MPI backend cancels what it can). Never throws.
  virtual void abort() noexcept = 0;
  // For the watchdog: a backend error that arrived asynchronously ("" when none).
  virtual std::string async_error() = 0;
  // After a timeout outside the backend's own calls (the front-end's exchange of host values): a
  // roll call on the channel the backend's own timeouts use, said in words ("ranks 0, 1 answered
  // a roll call after the timeout; ranks 2, 3 did not ..."), so that ranks that timed out in
  // different calls (one in a halo exchange, one in a reduction of host values) answer each
  // other. "" where the backend has no such roll call (NCCL: its watchdog names what it can).
  virtual std::string roll_call_after_timeout() { return {}; }
};

// For the tests: `comm`'s front-end compares its calls across ranks as it does for an
// asynchronous backend (returning before the comparison; the watchdog compares them alongside),
// whatever the backend, so that the path NCCL takes runs where there is no GPU. Call it right
// after construction. by_watchdog=false: the calling thread compares them at the next call, as
// below MPI_THREAD_MULTIPLE.
SKEIN_EXPORT void compare_alongside_for_testing(Communicator& comm, bool by_watchdog = true);

#if SKEIN_HAS_MPI
// The backends' factories. `comm` is the communicator's own duplicate of the user's communicator
// (a backend may use it or duplicate it again); `first_member` is this rank's first member;
// `device_idxs` are this rank's members' devices in `context`, in member order. `timeout_s`
// (the Communicator's timeout in effect; <= 0: none) limits what the backend waits for outside
// run() (which has CollectiveCall::deadline): set-up, group_end(), finalisation. `blocking`: the
// NCCL communicators' mode in effect (CommunicatorOptions::nccl_blocking).
std::unique_ptr<CollectiveBackendAdapter> make_mpi_backend(
    MPI_Comm comm, const MemberMap& members, int first_member, const Context& context,
    const std::vector<std::size_t>& device_idxs, double timeout_s);
#if SKEIN_HAS_NCCL
std::unique_ptr<CollectiveBackendAdapter> make_nccl_backend(
    MPI_Comm comm, const MemberMap& members, int first_member, const Context& context,
    const std::vector<std::size_t>& device_idxs, double timeout_s, bool blocking);
#endif
#endif

}  // namespace skein::detail

// SPDX-License-Identifier: BSD-3-Clause
// What the distributed objects (DistArray, ReplicatedArray, GridArray) share to stay in step
// between ranks and to move data: the agreement at construction (every member's fingerprint and
// problems in one all_gather), grouped point-to-point transfers, and where their memory comes
// from. Internal to collectives/dist.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "skein/array.hpp"
#include "skein/communicator.hpp"
#include "skein/detail/agreement.hpp"
#include "skein/error.hpp"
#include "skein/queue.hpp"

namespace skein::detail::transport {

// Temporaries come from the queue's pool (temporaries_pool()), so that a time loop allocates
// nothing after its first step.
Allocator temporaries(const Queue& queue);

// The blocks of a distributed array: plain allocations, not the queue's pool. They live as long as
// the array, and other queues use them (exchange_halos(queue), kernels and collectives on a halo
// queue), which the pool's reuse in its queue's order would not wait for; cuMemFree waits for the
// device, and OpenCL frees a buffer once its commands are done.
Allocator plain_blocks(const Context& context);

std::string shape_text(const Shape& shape);

// The agreement hash (agreement.hpp) over the values that must agree between ranks.
class Fingerprint {
 public:
  void add(std::uint64_t v) { hash_ = detail::hash_mix(hash_, v); }
  std::uint64_t value() const { return hash_; }

 private:
  std::uint64_t hash_ = detail::kHashSeed;
};

// "rank 2" or "ranks 0, 3".
std::string ranks_text(const std::vector<int>& ranks);

// Messages between two devices of one rank below this many bytes go by NCCL send/recv when the
// communicator's backend is NCCL, larger ones by device copies. Measured on 2 x H200 with one rank
// driving both GPUs (docs/performance.md, "The halo exchange", 2026-11-29): GridArray faces of
// 0.5-32 KiB took 24-26 us as peer copies (cuMemcpyPeerAsync with the cross-device event waits)
// against 15-17 us for one NCCL send/recv between the same two GPUs, failing issue 35's bound
// (within 2 us of one send/recv); faces of 1 MiB and more met their floor (>= 0.9) as peer copies.
// The cross-over lies between 32 KiB and 1 MiB, where nothing was measured: 256 KiB is a choice
// inside that gap, to be moved when skein-bench-halo measures sizes there.
inline constexpr std::size_t kSendRecvInsideRankBelow = std::size_t{256} * 1024;

// Whether a message of `bytes` between two devices of this rank goes as a send and its matching
// recv in the call's one group (the NCCL backend, below kSendRecvInsideRankBelow) rather than a
// device copy. Both communicator ranks are then this process's, each on its own device: NCCL's
// user guide ("Group Calls") requires one thread driving several GPUs to group its calls and lets
// that use be combined with merging point-to-point calls in one group; its "Point-to-point
// communication" section says the calls of a group progress independently and never block each
// other, except those to the same peer, which run in order (NVIDIA/nccl#479: a send and a recv
// grouped form one sendrecv, no deadlock). Callers issue a message's send and recv next to each
// other, so that the sends from one member to another and the recvs there are in one order.
// Only for an exchange on the arrays' own queue: one given another queue (dist::HaloOverlap's,
// while kernels compute the interior on the arrays' queue) keeps the copies, which run on the
// copy engines, where NCCL's kernels would take SMs from the interior's: on 2 x H200, skein-cg at
// 4096^2 with one rank for both GPUs and the exchange overlapped took 270-283 us per iteration
// with the send/recv against 258-261 us with the copies (docs/performance.md, 2026-11-29 night).
inline bool send_recv_inside_rank(CollectiveBackend backend, std::size_t bytes,
                                  bool on_arrays_queue) {
  return on_arrays_queue && backend == CollectiveBackend::nccl && bytes < kSendRecvInsideRankBelow;
}

// Runs `f` between group_start() and group_end(). A failure inside still closes the group (its
// own error is the one reported), so the communicator is not left inside a group.
template <class F>
void in_group(Communicator& comm, F&& f) {
  comm.group_start();
  try {
    f();
  } catch (...) {
    try {
      comm.group_end();
    } catch (...) {
    }
    throw;
  }
  comm.group_end();
}

// What every member tells the others when a distributed object is made.
struct MemberInfo {
  std::size_t first_member = 0;  // of its rank
  std::size_t local_size = 0;    // its rank's members
  std::uint64_t fingerprint = 0;
  bool problem = false;  // its rank could not make its part (it raises with the reason)
};

// Collective: one all_gather of each member's MemberInfo. `call` names the caller in errors.
std::vector<MemberInfo> exchange_member_info(Communicator& comm, std::uint64_t fingerprint,
                                             bool problem, const char* call);

struct RankStructure {
  std::vector<std::size_t> members_per_rank;
  std::vector<std::size_t> first_member_of_rank;
  int rank = 0;  // this process's
};

RankStructure rank_structure(const Communicator& comm, const std::vector<MemberInfo>& info);

// Shares what only some ranks know before anything else is sent: when a rank has a problem, it
// raises its own LogicError (`mine`) and the others raise one naming it.
void raise_if_any_problem(const std::vector<MemberInfo>& info, const RankStructure& ranks,
                          const std::optional<ErrorInfo>& mine, const std::string& call,
                          const std::string& what_is_made);

// Raises on every rank when the ranks' fingerprints differ, naming the groups that agree.
void raise_if_fingerprints_differ(const std::vector<MemberInfo>& info, const RankStructure& ranks,
                                  const std::string& call, const std::string& mine_described,
                                  const std::string& hint);

// Collective: the root member's `ok` on every rank. `call` names the caller in errors.
bool root_status(Communicator& comm, const Queue& queue, bool ok, int root_member,
                 const char* call);

// A problem with the queue a distributed object is given ("" when it is fine).
std::string queue_problem(const Communicator& comm, const Queue& queue);

// A (what, hint) problem of this rank as the ErrorInfo it raises.
std::optional<ErrorInfo> problem_info(
    const std::optional<std::pair<std::string, std::string>>& problem, int rank,
    const std::string& call, std::string location);

inline constexpr const char* kQueueHint =
    "Use a queue over the communicator's context that holds all its devices, e.g. "
    "Queue(comm.context()).";

}  // namespace skein::detail::transport

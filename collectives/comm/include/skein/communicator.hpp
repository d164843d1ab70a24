// SPDX-License-Identifier: BSD-3-Clause
// Collectives over every device of every rank: a Communicator's members are (rank, local device)
// pairs. NCCL for CUDA devices; MPI for any device, always staged through page-locked host memory
// (a CUDA-aware MPI library is detected and reported, not used for a direct path).
// NCCL's calls return once enqueued, and their events complete later; the MPI backend's calls are
// synchronous on the host: they return once the data has been exchanged, and their events mark
// only the final copies back to the devices.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "skein/array.hpp"
#include "skein/config.hpp"
#include "skein/event.hpp"
#include "skein/export.hpp"
#include "skein/queue.hpp"
#include "skein/runtime.hpp"

namespace skein {

namespace detail {
struct CommunicatorAccess;  // the collectives layer's own access to the state (not public)
}

enum class ReduceOp { sum, prod, min, max, avg };
SKEIN_EXPORT std::string_view name(ReduceOp op);

enum class CollectiveBackend { automatic, nccl, mpi };
SKEIN_EXPORT std::string_view name(CollectiveBackend backend);

// A Communicator's settings in code, for designated initializers:
//   skein::Communicator comm(runtime, {.timeout_seconds = 60, .check_agreement = false});
// Each field has a variable, which overrides the field when it is set (so that a job script can
// change a setting without a rebuild); a field left empty, with its variable unset, takes the
// default:
//   backend          SKEIN_BACKEND             automatic (the default: NCCL when every rank has
//                                              CUDA devices of its own, else MPI), nccl or mpi
//   timeout_seconds  SKEIN_COLLECTIVE_TIMEOUT  how long a collective, or the Communicator's
//                                              creation, may take before it raises TimeoutError on
//                                              every surviving rank (default 300; 0: no limit)
//   check_agreement  SKEIN_CHECK_COLLECTIVES   whether the ranks compare each collective call and
//                                              all raise LogicError on a mismatch (default true)
//   nccl_blocking    SKEIN_NCCL_BLOCKING       blocking NCCL communicators (default true; false:
//                                              non-blocking ones; used by the NCCL backend only)
// Every rank must pass the same settings (the check compares calls, not settings). The values are
// read, and a bad one refused with LogicError on every rank, when the Communicator is made.
// Communicator::options() gives the settings in effect. SKEIN_PROFILE_COLLECTIVES stays a
// variable only: a diagnostic switch of the whole process.
struct CommunicatorOptions {
  std::optional<CollectiveBackend> backend{};
  std::optional<double> timeout_seconds{};
  std::optional<bool> check_agreement{};
  std::optional<bool> nccl_blocking{};
};

enum class CollectiveOp {
  all_reduce,
  all_gather,
  broadcast,
  reduce,
  reduce_scatter,
  send,
  recv,
  barrier,
  all_to_all
};
SKEIN_EXPORT std::string_view name(CollectiveOp op);

// Collectives over (rank, local device) members. Move-only; DistArray and ReplicatedArray share it.
// Threads: not thread-safe, like an MPI communicator (its call state is not locked): make every
// call on it, on the DistArrays and ReplicatedArrays over it (which share it) and the creation of
// files and checkpoint managers over it (which duplicates its MPI communicator) from one thread at
// a time, group_start() to group_end() on one thread (NCCL's groups belong to the calling thread),
// and as MPI's thread level allows (MPI_THREAD_FUNNELED: the thread that initialised MPI). The
// NCCL backend's watchdog thread shares only locked state with the calls and makes MPI calls only
// under MPI_THREAD_MULTIPLE (below it, the calling thread does its agreement check at the next
// call); other Communicators may be used from other threads at once only with MPI_THREAD_MULTIPLE.
class SKEIN_EXPORT Communicator {
 public:
  // Over all ranks of the runtime and each rank's devices (of runtime.context()).
  Communicator(const Runtime& runtime, const CommunicatorOptions& options);
  // The same with the backend alone (CommunicatorOptions' defaults otherwise). An explicit nccl
  // or mpi here wins over SKEIN_BACKEND, which replaces only `automatic` (as it did before
  // CommunicatorOptions, whose backend the variable overrides).
  explicit Communicator(const Runtime& runtime,
                        CollectiveBackend backend = CollectiveBackend::automatic);
#if SKEIN_HAS_MPI
  // Over the ranks of `comm` and the given devices of `context` (all of them when empty).
  Communicator(MPI_Comm comm, const Context& context, std::vector<std::size_t> device_idxs,
               const CommunicatorOptions& options);
  // The same with the backend alone, as above.
  Communicator(MPI_Comm comm, const Context& context, std::vector<std::size_t> device_idxs = {},
               CollectiveBackend backend = CollectiveBackend::automatic);
#endif
  ~Communicator();
  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;

  // Members in the whole communicator (devices over all ranks), and this rank's.
  std::size_t size() const;
  std::size_t local_size() const;
  // The communicator rank of this rank's i-th device (pygpu's clique rank): members are ordered
  // by MPI rank, then by local device.
  int rank_of(std::size_t local_device) const;
  // The context device index of this rank's i-th member.
  std::size_t device_idx(std::size_t local_device) const;
  const Context& context() const;
  CollectiveBackend backend() const;
  // "NCCL 2.28.3 (blocking communicators)", "MPI (staged through host memory)", or "MPI (staged
  // through host memory; the MPI library is CUDA-aware)".
  std::string backend_description() const;
  // The settings in effect: every field set, the backend the one chosen (nccl or mpi). Those of a
  // communicator made by split() are its parent's.
  const CommunicatorOptions& options() const;
#if SKEIN_HAS_MPI
  // The MPI communicator over this communicator's ranks (Skein's own duplicate, with
  // MPI_ERRORS_RETURN), for layers above that make MPI calls of their own over the same ranks
  // (HDF5's MPI-IO). The Communicator owns it: duplicate it for traffic of your own; never free it.
  MPI_Comm mpi_comm() const;
#endif

  // Like MPI_Comm_split over ranks: ranks with the same color form a new communicator, ordered
  // by key, then by old rank. Collective over the ranks.
  Communicator split(int color, int key) const;

  // Each operation takes one array per local device, in local device order (a span of
  // local_size() arrays). Arrays of one member are contiguous and on that member's device. In
  // place when send and recv are the same arrays (MPI_IN_PLACE's meaning). Enqueued on `queue`
  // (which must contain the communicator's devices); returns one event per local device.
  // Counts are elements.
  // The events are recorded when first needed (a recorded event per call would cost about a
  // microsecond, an eighth of a small NCCL all_reduce): at their first use (wait, query,
  // Queue::wait_for), or before Skein's next work on the device (a kernel, a copy, native_stream),
  // or when the queue goes. So an event completes once its call is done, and at the latest once
  // the other collectives enqueued after it on that device before then are done too. Inside
  // group_start()/group_end() the events are empty.
  std::vector<Event> all_reduce(const Queue& queue, std::span<const Array> send,
                                std::span<const Array> recv, ReduceOp op);
  // Every member's `send` (n elements) lands in every member's `recv` (size() * n elements),
  // in communicator-rank order.
  std::vector<Event> all_gather(const Queue& queue, std::span<const Array> send,
                                std::span<const Array> recv);
  // The root member's `data` to every member's `data`.
  std::vector<Event> broadcast(const Queue& queue, std::span<const Array> data, int root);
  // The reduction lands in the root member's `recv`; other members' `recv` are not written
  // (they may be empty arrays).
  std::vector<Event> reduce(const Queue& queue, std::span<const Array> send,
                            std::span<const Array> recv, ReduceOp op, int root);
  // `send` has size() * n elements; member r receives the reduction of block r (n elements).
  std::vector<Event> reduce_scatter(const Queue& queue, std::span<const Array> send,
                                    std::span<const Array> recv, ReduceOp op);
  // Point to point between members: this rank's `local_device` sends to / receives from member
  // `peer` (a communicator rank).
  std::vector<Event> send(const Queue& queue, std::size_t local_device, const Array& data,
                          int peer);
  std::vector<Event> recv(const Queue& queue, std::size_t local_device, const Array& data,
                          int peer);
  // Every member's `send` (size() blocks of n) goes block j to member j's `recv` block i.
  std::vector<Event> all_to_all(const Queue& queue, std::span<const Array> send,
                                std::span<const Array> recv);
  // Returns when every member has reached it (after the queue's work so far on this rank).
  void barrier(const Queue& queue);

  // Several operations issued between group_start() and group_end() are launched together
  // (ncclGroupStart/End; the MPI backend runs them in order at group_end()).
  void group_start();
  void group_end();

  // Whether two handles are the same communicator (an array's communicator() and the Communicator
  // it was made over are).
  friend bool operator==(const Communicator& a, const Communicator& b) {
    return a.impl_ == b.impl_;
  }

  struct Impl;

 private:
  // The layers above reach the state and share() through detail::CommunicatorAccess (comm's
  // internal interface), not as friends of their own.
  friend struct detail::CommunicatorAccess;
  explicit Communicator(std::shared_ptr<Impl> impl);
  // Another handle to the same communicator: the distributed arrays keep one, so that moving or
  // destroying the caller's Communicator never leaves them with a dangling reference.
  Communicator share() const { return Communicator(impl_); }
  // Shared by this handle and the arrays made over it; the last owner ends the communicator.
  std::shared_ptr<Impl> impl_;
};

// A group of a Communicator's operations as a scope (group_start() in the constructor):
//
//   {
//     skein::CommunicatorGroup group(comm);
//     comm.send(queue, 0, up, peer_up);
//     comm.recv(queue, 0, down, peer_down);
//     group.end();   // launches them; raises as group_end() does
//   }
//
// end() ends the group once (LogicError if called again). A scope left without end(), by an
// exception or an early return, ends the group in the destructor (its operations are then
// launched), so that the communicator is not left inside it; an error of that group_end() is not
// thrown from the destructor (a failure that ends the communicator, a timeout or a lost rank, is
// raised by its next call, as for a dropped dist::PendingValues). Not copyable or movable: one
// scope, one group, one thread (as group_start()/group_end()).
class SKEIN_EXPORT CommunicatorGroup {
 public:
  explicit CommunicatorGroup(Communicator& comm);
  ~CommunicatorGroup();
  CommunicatorGroup(const CommunicatorGroup&) = delete;
  CommunicatorGroup& operator=(const CommunicatorGroup&) = delete;

  void end();
  bool ended() const { return ended_; }

 private:
  Communicator& comm_;
  bool ended_ = false;
};

}  // namespace skein

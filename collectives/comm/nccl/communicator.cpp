// SPDX-License-Identifier: BSD-3-Clause
// The NCCL backend of the Communicator: one ncclComm_t per local member (device), all of one
// communicator clique whose ranks are the Communicator's member indices.
//
// Communicators are blocking by default (CommunicatorOptions::nccl_blocking, SKEIN_NCCL_BLOCKING).
// NCCL's non-blocking mode
// (config.blocking = 0) hands every group launch to a new helper thread and returns
// ncclInProgress, which costs several microseconds per collective: too much for small messages.
// A blocking communicator can still block the host inside a call (connection set-up with a peer
// that never arrives, at the first use of an algorithm or peer), so the front-end watches every
// call while it runs, and its watchdog thread aborts the communicators (ncclCommAbort, which NCCL
// allows from another thread to end a stuck call) once the collective timeout has passed; the
// stuck call then returns with an error and every surviving rank raises. Kernels that never
// finish (a peer that skipped the collective) are found by the same watchdog through the call's
// events. Non-blocking communicators (nccl_blocking false, SKEIN_NCCL_BLOCKING=0): nothing then
// blocks the host, at that cost per call.
#include <mpi.h>
#include <nccl.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "skein/detail/cuda/check.hpp"
#include "skein/detail/cuda/context.hpp"
#include "skein/detail/cuda/driver.hpp"
#include "skein/detail/backend.hpp"
#include "check.hpp"
#include "skein/detail/env.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/mpi_util.hpp"

namespace skein::detail {

namespace {

using Clock = CollectiveClock;

std::optional<ncclDataType_t> nccl_type(Dtype dtype) {
  switch (dtype) {
    case Dtype::int8: return ncclInt8;
    case Dtype::uint8: return ncclUint8;
    case Dtype::int32: return ncclInt32;
    case Dtype::uint32: return ncclUint32;
    case Dtype::int64: return ncclInt64;
    case Dtype::uint64: return ncclUint64;
    case Dtype::float16: return ncclFloat16;
    case Dtype::bfloat16: return ncclBfloat16;
    case Dtype::float32: return ncclFloat32;
    case Dtype::float64: return ncclFloat64;
    // NCCL has no 16-bit integers, and reducing complex numbers as pairs of reals is only right
    // for sum and avg: rather than half-support them, the front-end reports them unsupported.
    default: return std::nullopt;
  }
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::prod: return ncclProd;
    case ReduceOp::min: return ncclMin;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::avg: return ncclAvg;
  }
  return ncclSum;
}

// "NCCL 2.28.3". Codes before 2.9 were major*1000 + minor*100 + patch (NCCL_VERSION's rule).
std::string nccl_version() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "NCCL (unknown version)";
  if (code < 10000) return fmt::format("NCCL {}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
  return fmt::format("NCCL {}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
}

// Polling backs off from yielding (an enqueue usually completes within microseconds, and the
// latency of small collectives matters) to short sleeps (initialisation takes tens of
// milliseconds to seconds, and a spinning core would slow the other ranks on the node).
class Backoff {
 public:
  void pause() {
    if (++spins_ < 200) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(spins_ < 2000 ? 20 : 500));
    }
  }

 private:
  int spins_ = 0;
};

class NcclBackend final : public CollectiveBackendAdapter {
 public:
  NcclBackend(MPI_Comm comm, const MemberMap& map, int first_member, const Context& context,
              const std::vector<std::size_t>& device_idxs, double timeout_s, bool blocking);
  ~NcclBackend() override;
  NcclBackend(const NcclBackend&) = delete;
  NcclBackend& operator=(const NcclBackend&) = delete;

  CollectiveBackend kind() const override { return CollectiveBackend::nccl; }
  std::string description() const override {
    return nccl_version() +
           (blocking_ ? " (blocking communicators)" : " (non-blocking communicators)");
  }
  bool supports(Dtype dtype, ReduceOp) const override { return nccl_type(dtype).has_value(); }
  void run(const CollectiveCall& call) override;
  void group_start() override;
  void group_end() override;
  void abort() noexcept override;
  std::string async_error() override;

 private:
  struct Member {
    ncclComm_t comm = nullptr;
    std::size_t device_idx = 0;
    CUcontext context = nullptr;
    std::string device;  // for messages
    int rank = 0;        // in the clique
    std::shared_ptr<BufferAdapter> barrier_scratch;
  };
  // A staging copy for an in-place all_to_all, freed once the event says NCCL is done with it.
  struct Staging {
    std::shared_ptr<BufferAdapter> buffer;
    std::shared_ptr<EventAdapter> done;
  };
  // A staging buffer waiting for its NCCL kernel to be launched: only then can the event that
  // releases it be recorded after the kernel (inside the user's group, at its group_end()).
  struct AfterLaunch {
    QueueAdapter* queue = nullptr;
    std::shared_ptr<BufferAdapter> staging;
  };

  void init_comms(const ncclUniqueId& id, int nranks);
  void check_primary_context(std::size_t device_idx) const;
  // `count` elements of `type` per block (call.count, or its bytes for types moved as bytes).
  void enqueue(const CollectiveCall& call, const MemberBuffers& buffers, ncclDataType_t type,
               std::size_t count, std::vector<AfterLaunch>& after);
  // Runs what waited for the launch (outside any group).
  void after_launch(std::vector<AfterLaunch>& after);
  void barrier(const CollectiveCall& call);
  // Polls the members' communicators until none is ncclInProgress. An asynchronous error or the
  // deadline aborts the communicators and throws.
  void wait_ready(const std::vector<std::size_t>& locals, const char* what,
                  Clock::time_point limit);
  std::vector<std::size_t> locals_of(const CollectiveCall& call) const;
  std::vector<std::size_t> all_locals() const;
  // Now + the timeout given at creation (time_point::max() without one).
  Clock::time_point deadline() const;
  [[noreturn]] void raise_timeout(const char* what);
  [[noreturn]] void raise_aborted(const char* what) const;
  void release_finished_staging() noexcept;

  std::shared_ptr<ContextAdapter> cuda_;  // keeps the CUDA contexts alive until the end
  double timeout_s_ = 0;
  bool blocking_ = true;  // ncclConfig_t::blocking of our communicators
  int nranks_ = 0;        // members of the whole communicator (the clique's size)
  std::vector<Member> members_;
  int user_group_depth_ = 0;
  std::vector<Staging> staging_;
  // Collected inside the user's group_start()/group_end(), run at its end.
  std::vector<AfterLaunch> after_group_;
  std::atomic<bool> aborted_{false};
  // Guards the ncclComm_t handles: abort() (from the watchdog's thread) frees them, and must not
  // do so while this thread is inside an NCCL call on them. Held only around non-blocking calls.
  mutable std::timed_mutex mutex_;
};

NcclBackend::NcclBackend(MPI_Comm comm, const MemberMap& map, int first_member,
                         const Context& context, const std::vector<std::size_t>& device_idxs,
                         double timeout_s, bool blocking)
    : cuda_(cuda_context_adapter(context)), timeout_s_(timeout_s), blocking_(blocking) {
  if (!cuda_) {
    raise_in(SKEIN_HERE, "Communicator", "Use the MPI backend for OpenCL devices.",
             "the NCCL backend needs a CUDA context, and this context is not one");
  }
  const int nranks = static_cast<int>(map.member_rank.size());
  nranks_ = nranks;
  if (nranks == 0) {
    raise_in(SKEIN_HERE, "Communicator", "", "a communicator without members");
  }
  for (std::size_t i = 0; i < device_idxs.size(); ++i) {
    Member m;
    m.device_idx = device_idxs[i];
    m.context = cuda_context(*cuda_, m.device_idx);
    m.device = cuda_device_description(*cuda_, m.device_idx);
    m.rank = first_member + static_cast<int>(i);
    members_.push_back(std::move(m));
  }
  // A rank that cannot take part must not leave the others waiting for it in NCCL's bootstrap:
  // every rank learns whether all passed the local checks, and all raise together.
  std::string local_failure;
  try {
    for (const auto& m : members_) check_primary_context(m.device_idx);
  } catch (const LogicError& e) {
    local_failure = e.what();
  }
  int all_ok = local_failure.empty() ? 1 : 0;
  SKEIN_MPI_CHECK(MPI_Allreduce, (MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_MIN, comm),
                  "the ranks' device checks before NCCL starts");
  if (!local_failure.empty()) {
    raise_in(SKEIN_HERE, "Communicator", "", "{}", local_failure);
  }
  if (!all_ok) {
    raise_in<RuntimeError>(SKEIN_HERE, "Communicator", "See the other ranks' errors.",
                           "another rank cannot use the NCCL backend");
  }

  // Member 0's rank makes the unique id and every rank of `comm` receives it, including ranks
  // without members (MPI_Bcast is collective over the whole communicator). A failure there is
  // sent along with the id, so that no rank is left waiting in the broadcast or in NCCL's
  // bootstrap for a root that gave up.
  int my_rank = 0;
  SKEIN_MPI_CHECK(MPI_Comm_rank, (comm, &my_rank));
  const int root = map.member_rank[0];
  struct {
    ncclUniqueId id;
    int ok;
    char message[512];
  } packet{};
  packet.ok = 1;
  if (my_rank == root) {
    try {
      SKEIN_NCCL_CHECK(ncclGetUniqueId, (&packet.id), std::string());
    } catch (const std::exception& e) {
      packet.ok = 0;
      // Cut to the packet's size, and ended by the zeros it was made with.
      fmt::format_to_n(packet.message, sizeof packet.message - 1, "{}", e.what());
    }
  }
  const int bcast = MPI_Bcast(&packet, sizeof packet, MPI_BYTE, root, comm);
  if (bcast != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(bcast, text, &length);
    raise_in<RuntimeError>(SKEIN_HERE, "MPI_Bcast", "",
                           "broadcasting NCCL's unique id from rank {} failed: {}", root,
                           std::string(text, length));
  }
  if (!packet.ok) {
    raise_in<RuntimeError>(SKEIN_HERE, "ncclGetUniqueId", "",
                           "rank {} could not create NCCL's unique id: {}", root, packet.message);
  }
  if (!members_.empty()) init_comms(packet.id, nranks);
}

void NcclBackend::check_primary_context(std::size_t device_idx) const {
  // NCCL works through the CUDA runtime, which always uses a device's primary context (it
  // allocates there and launches there), while our queues' streams belong to Skein's context. The
  // two must be the same context, or NCCL's kernels would be launched on foreign streams.
  const auto device = static_cast<CUdevice>(cuda_->devices()[device_idx]->native());
  CUcontext primary = nullptr;
  SKEIN_CU_CHECK(cuDevicePrimaryCtxRetain, (&primary, device),
                 cuda_device_description(*cuda_, device_idx));
  cu().cuDevicePrimaryCtxRelease(device);
  if (primary != cuda_context(*cuda_, device_idx)) {
    raise_in(SKEIN_HERE, "Communicator",
             "Create the Skein context from devices (primary contexts), or use the MPI backend.",
             "the NCCL backend needs the device's primary CUDA context, and {} uses another one",
             cuda_device_description(*cuda_, device_idx));
  }
}

void NcclBackend::init_comms(const ncclUniqueId& id, int nranks) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = blocking_ ? 1 : 0;
  // Several devices per rank: their inits must be one group, or the first would wait for the
  // others, which this thread has not started yet.
  SKEIN_NCCL_CHECK(ncclGroupStart, (), std::string());
  try {
    for (auto& m : members_) {
      // NCCL takes the device from the current context (cudaGetDevice) at this call.
      CudaContextScope scope(m.context, m.device);
      ncclUniqueId unique = id;  // NCCL takes the id by value; a copy keeps `id` const
      SKEIN_NCCL_CHECK(ncclCommInitRankConfig, (&m.comm, nranks, unique, m.rank, &config),
                       m.device);
    }
  } catch (...) {
    ncclGroupEnd();
    abort();
    throw;
  }
  try {
    SKEIN_NCCL_CHECK(ncclGroupEnd, (), members_.front().device);
  } catch (...) {
    abort();
    throw;
  }
  wait_ready(all_locals(), "ncclCommInitRankConfig", deadline());
}

NcclBackend::~NcclBackend() {
  if (aborted_.load()) return;
  try {
    // Finalize first: it flushes what is still in flight and lets the peers see us leave in
    // order; ncclCommDestroy then frees locally without blocking. Blocking finalize calls of
    // several members of this rank are one group, so that none waits for the next.
    bool clean = true;
    if (blocking_) ncclGroupStart();
    for (auto& m : members_) {
      if (m.comm == nullptr) continue;
      CudaContextScope scope(m.context, CudaContextScope::NoThrow{});
      const ncclResult_t r = ncclCommFinalize(m.comm);
      if (r != ncclSuccess && r != ncclInProgress) clean = false;
    }
    if (blocking_ && ncclGroupEnd() != ncclSuccess) clean = false;
    const auto limit = deadline();
    for (auto& m : members_) {
      if (m.comm == nullptr || !clean) continue;
      Backoff backoff;
      for (;;) {
        ncclResult_t state = ncclSuccess;
        if (ncclCommGetAsyncError(m.comm, &state) != ncclSuccess) state = ncclInternalError;
        if (state == ncclSuccess) break;
        if (state != ncclInProgress || Clock::now() > limit) {
          clean = false;
          break;
        }
        backoff.pause();
      }
    }
    for (auto& m : members_) {
      if (m.comm == nullptr) continue;
      CudaContextScope scope(m.context, CudaContextScope::NoThrow{});
      // A communicator that did not finalize cleanly (a peer is gone, the driver is shutting
      // down at process exit) can only be aborted.
      if (clean) {
        ncclCommDestroy(m.comm);
      } else {
        ncclCommAbort(m.comm);
      }
      m.comm = nullptr;
    }
    // With the communicators gone, no NCCL kernel reads the staging copies any more.
    staging_.clear();
  } catch (...) {
    // Destructors never throw; the communicators are leaked at worst, and the process is most
    // likely exiting.
  }
}

Clock::time_point NcclBackend::deadline() const {
  if (timeout_s_ <= 0) return Clock::time_point::max();
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
}

std::vector<std::size_t> NcclBackend::all_locals() const {
  std::vector<std::size_t> locals(members_.size());
  for (std::size_t i = 0; i < locals.size(); ++i) locals[i] = i;
  return locals;
}

std::vector<std::size_t> NcclBackend::locals_of(const CollectiveCall& call) const {
  std::vector<std::size_t> locals;
  locals.reserve(call.members.size());
  for (const auto& b : call.members) locals.push_back(b.local_device);
  return locals;
}

void NcclBackend::raise_timeout(const char* what) {
  abort();
  raise_in<TimeoutError>(
      SKEIN_HERE, what,
      "Another rank may have failed or not reached the same call; SKEIN_COLLECTIVE_TIMEOUT sets "
      "the limit in seconds.",
      "NCCL did not complete within SKEIN_COLLECTIVE_TIMEOUT={} s; the NCCL communicators were "
      "aborted",
      timeout_s_);
}

void NcclBackend::raise_aborted(const char* what) const {
  raise_in<RuntimeError>(SKEIN_HERE, what, "Create a new Communicator.",
                         "the NCCL communicators were aborted after an earlier failure or "
                         "timeout");
}

void NcclBackend::wait_ready(const std::vector<std::size_t>& locals, const char* what,
                             Clock::time_point limit) {
  Backoff backoff;
  for (;;) {
    bool pending = false;
    ncclResult_t failure = ncclSuccess;
    std::string failed_device;
    {
      std::lock_guard lock(mutex_);
      if (aborted_.load()) raise_aborted(what);
      for (std::size_t local : locals) {
        const Member& m = members_[local];
        ncclResult_t state = ncclSuccess;
        SKEIN_NCCL_CHECK(ncclCommGetAsyncError, (m.comm, &state), m.device);
        if (state == ncclInProgress) {
          pending = true;
        } else if (state != ncclSuccess) {
          failure = state;
          failed_device = m.device;
          break;
        }
      }
    }
    if (failure != ncclSuccess) {
      // A communicator with an asynchronous error is unusable; NCCL requires aborting it.
      // Read NCCL's message first: aborting may replace it.
      std::string message = ncclGetErrorString(failure);
      if (const char* last = ncclGetLastError(nullptr); last != nullptr && *last != '\0') {
        message += fmt::format(" ({})", last);
      }
      abort();
      throw RuntimeError(ErrorInfo{.what = std::move(message),
                                   .call = what,
                                   .code_name = nccl_error_name(failure),
                                   .code = static_cast<long long>(failure),
                                   .has_code = true,
                                   .device = std::move(failed_device),
                                   .hint = "The NCCL communicators were aborted; run with "
                                           "NCCL_DEBUG=WARN for NCCL's account.",
                                   .location = SKEIN_HERE});
    }
    if (!pending) return;
    if (Clock::now() > limit) raise_timeout(what);
    backoff.pause();
  }
}

void NcclBackend::run(const CollectiveCall& call) {
  if (call.members.empty()) return;
  if (call.op == CollectiveOp::barrier) {
    barrier(call);
    return;
  }
  auto type = nccl_type(call.dtype);
  std::size_t count = call.count;
  const bool reduces = call.op == CollectiveOp::all_reduce || call.op == CollectiveOp::reduce ||
                       call.op == CollectiveOp::reduce_scatter;
  if (!type && !reduces) {
    // Operations that only move data do not need NCCL to know the type: its bytes will do
    // (int16, uint16, complex).
    type = ncclUint8;
    count *= itemsize(call.dtype);
  }
  if (!type) {
    raise_in(SKEIN_HERE, std::string(name(call.op)), "", "NCCL does not support dtype {}",
             name(call.dtype));
  }
  release_finished_staging();
  const std::string what(name(call.op));
  std::vector<AfterLaunch> after;
  ncclResult_t launched = ncclSuccess;
  {
    std::lock_guard lock(mutex_);
    if (aborted_.load()) raise_aborted(what.c_str());
    // One group per call: several members per rank must be launched together (each member's
    // kernel waits for the others), and a grouped single call costs nothing extra. Inside the
    // user's group_start()/group_end() this group is nested and launches nothing by itself.
    auto& profile = call_profile();
    const auto group_start = profile.on ? Clock::now() : Clock::time_point();
    // One member: NCCL groups the call itself (all_to_all's sends and receives too, as ours).
    // Non-blocking communicators keep the group: its end is where ncclInProgress is seen.
    const bool group = !blocking_ || call.members.size() > 1 || call.op == CollectiveOp::all_to_all;
    if (group) SKEIN_NCCL_CHECK(ncclGroupStart, (), std::string());
    try {
      for (const auto& buffers : call.members) enqueue(call, buffers, *type, count, after);
    } catch (...) {
      if (group) ncclGroupEnd();  // closes the group; NCCL drops the calls queued in it
      throw;
    }
    if (group) {
      launched =
          SKEIN_NCCL_CHECK(ncclGroupEnd, (), members_[call.members.front().local_device].device);
    }
    if (profile.on) {
      call_launch_ns() +=
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - group_start).count();
    }
  }
  // Not a wait for the collective: with non-blocking communicators the launch itself may still
  // be under way (ncclInProgress), and NCCL requires it to be done before the next NCCL call.
  if (launched == ncclInProgress) wait_ready(locals_of(call), what.c_str(), call.deadline);
  if (user_group_depth_ > 0) {
    // Nothing was launched yet: the user's group_end() does it.
    for (auto& a : after) after_group_.push_back(std::move(a));
  } else {
    after_launch(after);
  }
}

void NcclBackend::after_launch(std::vector<AfterLaunch>& after) {
  // The staging copies must outlive the kernels that read them: an event after the launch says
  // when.
  for (auto& a : after) staging_.push_back(Staging{std::move(a.staging), a.queue->record()});
  after.clear();
}

void NcclBackend::enqueue(const CollectiveCall& call, const MemberBuffers& b, ncclDataType_t type,
                          std::size_t count, std::vector<AfterLaunch>& after) {
  Member& m = members_[b.local_device];
  CudaContextScope scope(m.context, m.device);
  auto stream = reinterpret_cast<cudaStream_t>(b.queue->native());
  auto pointer = [](const BufferAdapter* buffer, std::size_t offset) -> std::uintptr_t {
    return buffer == nullptr ? 0 : buffer->native() + offset;
  };
  std::uintptr_t send = pointer(b.send, b.send_offset);
  std::uintptr_t recv = pointer(b.recv, b.recv_offset);
  const std::size_t itemsize = skein::itemsize(call.dtype);
  const std::size_t block = call.count * itemsize;  // bytes, whatever `type` is
  auto ptr = [](std::uintptr_t p) { return reinterpret_cast<void*>(p); };
  const ncclRedOp_t op = nccl_op(call.reduce_op);

  switch (call.op) {
    case CollectiveOp::all_reduce:
      SKEIN_NCCL_CHECK(ncclAllReduce, (ptr(send), ptr(recv), count, type, op, m.comm, stream),
                       m.device);
      break;
    case CollectiveOp::all_gather:
      // In place, the front-end passes send as this member's block of recv: NCCL's own in-place
      // form, so the pointers go to NCCL as they are (here and for reduce_scatter).
      SKEIN_NCCL_CHECK(ncclAllGather, (ptr(send), ptr(recv), count, type, m.comm, stream),
                       m.device);
      break;
    case CollectiveOp::broadcast:
      // One array: the root sends from it and everyone receives into it.
      if (recv == 0) recv = send;
      if (send == 0) send = recv;
      SKEIN_NCCL_CHECK(ncclBroadcast,
                       (ptr(send), ptr(recv), count, type, call.root, m.comm, stream), m.device);
      break;
    case CollectiveOp::reduce:
      // Only the root's recv is written; NCCL accepts a null recv elsewhere.
      if (call.in_place && recv == 0) recv = send;
      SKEIN_NCCL_CHECK(
          ncclReduce, (ptr(send), ptr(recv), count, type, op, call.root, m.comm, stream), m.device);
      break;
    case CollectiveOp::reduce_scatter:
      SKEIN_NCCL_CHECK(ncclReduceScatter, (ptr(send), ptr(recv), count, type, op, m.comm, stream),
                       m.device);
      break;
    case CollectiveOp::send:
      SKEIN_NCCL_CHECK(ncclSend,
                       (ptr(send != 0 ? send : recv), count, type, call.peer, m.comm, stream),
                       m.device);
      break;
    case CollectiveOp::recv:
      SKEIN_NCCL_CHECK(ncclRecv,
                       (ptr(recv != 0 ? recv : send), count, type, call.peer, m.comm, stream),
                       m.device);
      break;
    case CollectiveOp::all_to_all: {
      const int nranks = nranks_;
      if (call.in_place || send == recv) {
        // Point-to-point exchanges in one group have no order among them, so a block could be
        // overwritten before it is sent: send from a copy instead.
        // (The copy precedes the NCCL kernel on the stream, as it must: NCCL launches at the
        // group's end.)
        const std::size_t bytes = block * static_cast<std::size_t>(nranks);
        auto staging = cuda_->allocate(m.device_idx, std::max<std::size_t>(bytes, 1));
        SKEIN_CU_CHECK(cuMemcpyDtoDAsync,
                       (static_cast<CUdeviceptr>(staging->native()), static_cast<CUdeviceptr>(send),
                        bytes, reinterpret_cast<CUstream>(stream)),
                       m.device);
        send = staging->native();
        after.push_back(AfterLaunch{.queue = b.queue, .staging = std::move(staging)});
      }
      for (int peer = 0; peer < nranks; ++peer) {
        const std::size_t at = static_cast<std::size_t>(peer) * block;
        SKEIN_NCCL_CHECK(ncclSend, (ptr(send + at), count, type, peer, m.comm, stream), m.device);
        SKEIN_NCCL_CHECK(ncclRecv, (ptr(recv + at), count, type, peer, m.comm, stream), m.device);
      }
      break;
    }
    case CollectiveOp::barrier: break;  // handled by barrier()
  }
}

void NcclBackend::barrier(const CollectiveCall& call) {
  // A one-element all_reduce meets every member on the device, and its completion on this
  // rank's streams says that every member got there.
  CollectiveCall reduce;
  reduce.op = CollectiveOp::all_reduce;
  reduce.dtype = Dtype::int32;
  reduce.count = 1;
  for (const auto& b : call.members) {
    Member& m = members_[b.local_device];
    if (!m.barrier_scratch) m.barrier_scratch = cuda_->allocate(m.device_idx, sizeof(std::int32_t));
    MemberBuffers buffers = b;
    buffers.send = buffers.recv = m.barrier_scratch.get();
    buffers.send_offset = buffers.recv_offset = 0;
    reduce.members.push_back(buffers);
  }
  reduce.in_place = true;
  reduce.deadline = call.deadline;
  run(reduce);
  // Inside a group nothing is launched before group_end(): the barrier is only enqueued (the
  // front-end does not wait for it there either).
  if (user_group_depth_ > 0) return;

  // Waits for the streams without cuStreamSynchronize, which could not be interrupted: a peer
  // that never arrives leaves us polling, and then the async error or the timeout ends it.
  std::vector<std::shared_ptr<EventAdapter>> events;
  for (const auto& b : call.members) events.push_back(b.queue->record());
  const auto locals = locals_of(call);
  Backoff backoff;
  for (;;) {
    if (std::all_of(events.begin(), events.end(), [](auto& e) { return e->query(); })) return;
    // Raises an asynchronous error, if any.
    wait_ready(locals, "Communicator::barrier", call.deadline);
    if (Clock::now() > call.deadline) raise_timeout("Communicator::barrier");
    backoff.pause();
  }
}

void NcclBackend::group_start() {
  std::lock_guard lock(mutex_);
  if (aborted_.load()) raise_aborted("Communicator::group_start");
  SKEIN_NCCL_CHECK(ncclGroupStart, (), std::string());
  ++user_group_depth_;
}

void NcclBackend::group_end() {
  ncclResult_t launched = ncclSuccess;
  {
    std::lock_guard lock(mutex_);
    if (aborted_.load()) raise_aborted("Communicator::group_end");
    // NCCL leaves the group even when ncclGroupEnd fails, so the depth goes down either way.
    --user_group_depth_;
    launched = SKEIN_NCCL_CHECK(ncclGroupEnd, (), std::string());
  }
  if (launched == ncclInProgress) wait_ready(all_locals(), "Communicator::group_end", deadline());
  if (user_group_depth_ == 0) after_launch(after_group_);
}

void NcclBackend::abort() noexcept {
  aborted_.store(true);
  // The lock is only ever held around non-blocking NCCL calls, so it comes at once unless NCCL
  // itself is stuck; then aborting without it is the lesser evil (ncclCommAbort is what NCCL
  // offers to get a thread out of a stuck call).
  std::unique_lock lock(mutex_, std::defer_lock);
  (void)lock.try_lock_for(std::chrono::seconds(2));
  for (auto& m : members_) {
    if (m.comm == nullptr) continue;
    CudaContextScope scope(m.context, CudaContextScope::NoThrow{});
    ncclCommAbort(m.comm);
    m.comm = nullptr;
  }
}

std::string NcclBackend::async_error() {
  std::lock_guard lock(mutex_);
  std::string text;
  for (const auto& m : members_) {
    if (m.comm == nullptr) continue;
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = ncclCommGetAsyncError(m.comm, &state);
    if (r != ncclSuccess) state = r;
    if (state == ncclSuccess || state == ncclInProgress) continue;
    if (!text.empty()) text += "; ";
    text +=
        fmt::format("{} on {}: {}", nccl_error_name(state), m.device, ncclGetErrorString(state));
    if (const char* last = ncclGetLastError(m.comm); last != nullptr && *last != '\0') {
      text += fmt::format(" ({})", last);
    }
  }
  return text;
}

void NcclBackend::release_finished_staging() noexcept {
  std::erase_if(staging_, [](Staging& s) {
    try {
      return s.done->query();
    } catch (...) {
      return true;  // the context failed; the memory cannot be used by anyone any more
    }
  });
}

}  // namespace

std::unique_ptr<CollectiveBackendAdapter> make_nccl_backend(
    MPI_Comm comm, const MemberMap& members, int first_member, const Context& context,
    const std::vector<std::size_t>& device_idxs, double timeout_s, bool blocking) {
  return std::make_unique<NcclBackend>(comm, members, first_member, context, device_idxs, timeout_s,
                                       blocking);
}

}  // namespace skein::detail

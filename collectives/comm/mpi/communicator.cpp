// SPDX-License-Identifier: BSD-3-Clause
// The MPI collectives backend: works with any device. Each call is staged through page-locked host
// memory: every local member's input is read to the host, the rank's members are combined on the
// host, the ranks are combined with a non-blocking MPI collective (polled against the call's
// deadline), and the result is written back to the members' devices.
//
// Several members per rank: the result must equal the operation over all members, so the local
// members are first reduced (or laid out) on the host, then MPI combines the ranks with counts per
// rank (members_of_rank) where members are laid out in communicator-rank order.
//
// Reductions: sum, prod, min, max with MPI's predefined operations on MPI's types; avg is a sum
// divided by the number of members on the host afterwards (integers: integer division, rounding
// toward zero, of the wrapped-around sum). float16 and bfloat16 have no MPI type: they travel as
// MPI_UINT16_T with user-defined operations that compute in float and round back (as NCCL does).
// Integer sums and products always wrap around (see MpiBackend::predefined).
// Complex types support sum, prod and avg (min and max are not defined for them).
//
// The whole call is synchronous on the host (the returned events are already complete apart from
// the final host -> device copies). Point-to-point pairs within one rank, or exchanges where two
// ranks send to each other first, must be issued inside group_start()/group_end(): the group's
// transfers are all posted before any is waited for.
//
// CUDA-aware MPI (MPIX_Query_cuda_support) is detected and reported in the description; the data
// still goes through host memory, which works for every device and member layout.
#include <mpi.h>

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <complex>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <thread>
#include <type_traits>

#include "skein/detail/adapter.hpp"
#include "skein/detail/agreement.hpp"
#include "skein/detail/backend.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/log.hpp"
#include "host_reduce.hpp"
#include "skein/detail/mpi_util.hpp"
#include "skein/buffer.hpp"

namespace skein::detail {
namespace {

MPI_Datatype mpi_type(Dtype dtype) {
  // float16 and bfloat16 travel as their bits, as uint16 does: equal branches on purpose.
  // NOLINTBEGIN(bugprone-branch-clone)
  switch (dtype) {
    case Dtype::int8: return MPI_INT8_T;
    case Dtype::int16: return MPI_INT16_T;
    case Dtype::int32: return MPI_INT32_T;
    case Dtype::int64: return MPI_INT64_T;
    case Dtype::uint8: return MPI_UINT8_T;
    case Dtype::uint16: return MPI_UINT16_T;
    case Dtype::uint32: return MPI_UINT32_T;
    case Dtype::uint64: return MPI_UINT64_T;
    case Dtype::float16: return MPI_UINT16_T;   // bits; reduced by a user-defined operation
    case Dtype::bfloat16: return MPI_UINT16_T;  // likewise
    case Dtype::float32: return MPI_FLOAT;
    case Dtype::float64: return MPI_DOUBLE;
    case Dtype::complex64: return MPI_C_FLOAT_COMPLEX;
    case Dtype::complex128: return MPI_C_DOUBLE_COMPLEX;
  }  // NOLINTEND(bugprone-branch-clone)

  return MPI_BYTE;
}

// User-defined MPI operations (see MpiBackend::predefined): MPI calls them with
// inout = in (op) inout.
template <class T, ReduceOp Op>
void user_function(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_into<T, Op>(static_cast<std::byte*>(inout), static_cast<const std::byte*>(in),
                     static_cast<std::size_t>(*len));
}

bool mpi_finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

bool query_cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

int checked_int(std::size_t value, const char* what) {
  if (value > static_cast<std::size_t>(INT_MAX)) {
    throw RuntimeError(
        ErrorInfo{.what = fmt::format("{} is {} elements, more than MPI's int counts allow ({})",
                                      what, value, INT_MAX),
                  .call = "MPI collective",
                  .hint = "Split the operation into smaller calls."});
  }
  return static_cast<int>(value);
}

class MpiBackend final : public CollectiveBackendAdapter {
 public:
  MpiBackend(MPI_Comm comm, const MemberMap& members, int first_member, const Context& context,
             const std::vector<std::size_t>& device_idxs, double timeout_s)
      : timeout_s_(timeout_s),
        comm_(comm),
        map_(members),
        first_member_(static_cast<std::size_t>(first_member)),
        context_(context),
        size_(members.member_rank.size()) {
    (void)device_idxs;  // the members of each call come with their queues and buffers
    SKEIN_MPI_CHECK(MPI_Comm_rank, (comm_, &rank_));
    SKEIN_MPI_CHECK(MPI_Comm_size, (comm_, &ranks_));
    int flag = 0;
    void* tag_ub = nullptr;
    SKEIN_MPI_CHECK(MPI_Comm_get_attr, (comm_, MPI_TAG_UB, &tag_ub, &flag));
    tag_ub_ = flag ? *static_cast<int*>(tag_ub) : 32767;
    cuda_aware_ = query_cuda_aware() && context.api().id() == ApiId::cuda;
  }

  ~MpiBackend() override {
    if (phases_.executions > 0) {
      const double n = static_cast<double>(phases_.executions) * 1e3;
      // A report asked for (SKEIN_PROFILE_COLLECTIVES=1): at warning, so that it shows by default.
      const auto per = [&](int phase) { return static_cast<double>(phases_.ns[phase]) / n; };
      detail::log(
          LogLevel::warning, LogScope::rank,
          "MPI backend: {} exchanges, host us per exchange: ordering after the previous "
          "host->device copies {:.2f}, staging (device->host enqueued) {:.2f}, synchronising "
          "the queues {:.2f}, agreement {:.2f}, MPI (post and wait) {:.2f}, host->device "
          "enqueued {:.2f}",
          phases_.executions, per(0), per(1), per(2), per(3), per(4), per(5));
    }
    if (!aborted_) drain_noexcept();
    if (!mpi_finalized()) {
      for (auto& [key, op] : user_ops_) MPI_Op_free(&op);
    }
  }

  CollectiveBackend kind() const override { return CollectiveBackend::mpi; }

  std::string description() const override {
    return cuda_aware_ ? "MPI (staged through host memory; the MPI library is CUDA-aware)"
                       : "MPI (staged through host memory)";
  }

  bool supports(Dtype dtype, ReduceOp op) const override {
    if (is_complex(dtype)) return op != ReduceOp::min && op != ReduceOp::max;
    return true;
  }

  void run(const CollectiveCall& call) override {
    check_usable();
    if (group_depth_ > 0) {
      grouped_.push_back(call);
      return;
    }
    execute(std::span(&call, 1), call.deadline);
  }

  void group_start() override { ++group_depth_; }

  void group_end() override {
    if (group_depth_ == 0) return;
    if (--group_depth_ > 0) return;
    std::vector<CollectiveCall> calls = std::move(grouped_);
    grouped_.clear();
    check_usable();
    auto deadline = CollectiveClock::time_point::max();
    if (timeout_s_ > 0) {
      deadline = CollectiveClock::now() + std::chrono::duration_cast<CollectiveClock::duration>(
                                              std::chrono::duration<double>(timeout_s_));
    }
    execute(calls, deadline);
  }

  std::string roll_call_after_timeout() override {
    if (ranks_ <= 1) return {};
    return absent_ranks(comm_, tag_ub_, executions_, timeout_s_, "the MPI collectives backend");
  }

  void abort() noexcept override {
    if (aborted_) return;
    aborted_ = true;
    // MPI may still write into the staging buffers of the operations left outstanding (a late
    // rank can complete them), and cannot cancel collectives: the buffers are kept for the rest
    // of the process rather than returned to the context (a rare, bounded cost after a fault).
    keep_until_exit(std::move(slots_));
    slots_.clear();
    for (auto& set : recv_slots_) {
      keep_until_exit(std::move(set));
      set.clear();
    }
    pending_events_.clear();
    grouped_.clear();
    group_depth_ = 0;
  }

  std::string async_error() override { return {}; }

 private:
  // What one call needs between its phases.
  struct Plan {
    const CollectiveCall* call = nullptr;
    std::vector<std::byte*> in;    // per member: its staged input
    std::byte* work = nullptr;     // the MPI buffer (after the local combination)
    std::byte* out = nullptr;      // where the result is read from
    std::vector<std::byte*> outs;  // all_to_all: per member
    std::vector<int> counts, displs, counts2, displs2;
    std::size_t recv_slot = 0;  // recv: its slot in the batch's set
    bool posted = false;        // recv: its MPI_Irecv is posted already
  };

  void check_usable() const {
    if (aborted_) {
      throw RuntimeError(ErrorInfo{.what = "the MPI backend was aborted after an earlier failure",
                                   .call = "Communicator",
                                   .hint = "Create a new Communicator."});
    }
  }

  // Whether MPI's predefined operation is used. Not for the half types (no MPI type), and not
  // for sums and products of 8- and 16-bit integers: Open MPI's vectorised operations (op/avx)
  // saturate them on large buffers while they wrap around on small ones, so Skein reduces them
  // itself, always wrapping around (as NCCL and the local combination on the host do).
  static bool predefined(Dtype dtype, ReduceOp op) {
    if (dtype == Dtype::float16 || dtype == Dtype::bfloat16) return false;
    if (is_integer(dtype) && itemsize(dtype) <= 2)
      return op == ReduceOp::min || op == ReduceOp::max;
    return true;
  }

  MPI_Op mpi_op(Dtype dtype, ReduceOp op) {
    if (op == ReduceOp::avg) op = ReduceOp::sum;
    if (predefined(dtype, op)) {
      switch (op) {
        case ReduceOp::prod: return MPI_PROD;
        case ReduceOp::min: return MPI_MIN;
        case ReduceOp::max: return MPI_MAX;
        default: return MPI_SUM;
      }
    }
    const auto key = std::make_pair(dtype, op);
    auto found = user_ops_.find(key);
    if (found != user_ops_.end()) return found->second;
    MPI_User_function* f = visit_dtype(dtype, [&](auto t) -> MPI_User_function* {
      using T = decltype(t);
      switch (op) {
        case ReduceOp::prod: return &user_function<T, ReduceOp::prod>;
        case ReduceOp::min: return &user_function<T, ReduceOp::min>;
        case ReduceOp::max: return &user_function<T, ReduceOp::max>;
        default: return &user_function<T, ReduceOp::sum>;
      }
    });
    MPI_Op created = MPI_OP_NULL;
    SKEIN_MPI_CHECK(MPI_Op_create, (f, 1, &created));
    user_ops_.emplace(key, created);
    return created;
  }

  // Host staging memory: slot i of the current batch, at least `bytes` long. Slots are kept
  // between calls and grown geometrically.
  std::byte* slot(std::size_t i, std::size_t bytes) { return grow(slots_, i, bytes); }
  // A receive's slot: of the current batch's set.
  std::byte* recv_slot(std::size_t i, std::size_t bytes) {
    return grow(recv_slots_[batches_ % 2], i, bytes);
  }
  std::byte* grow(std::vector<HostBuffer>& set, std::size_t i, std::size_t bytes) {
    bytes = std::max<std::size_t>(bytes, 64);
    if (set.size() <= i) set.resize(i + 1);
    if (set[i].size() < bytes) {
      // The old slot is freed: no earlier host -> device copy (the queues only wait for them on
      // the device, execute()) may still read it.
      drain();
      const std::size_t grown = std::max(bytes, set[i].size() * 2);
      set[i] = HostBuffer();  // free before allocating the larger one
      set[i] = HostBuffer::allocate(context_, grown);
    }
    return set[i].data();
  }

  // Earlier calls' host -> device copies may still read the slots: waits for those of batches
  // before `batch` (all of them by default).
  void drain(std::uint64_t batch = UINT64_MAX) {
    std::erase_if(pending_events_, [&](Pending& p) {
      if (p.batch >= batch) return false;
      p.event->wait();
      return true;
    });
  }
  void drain_noexcept() noexcept {
    try {
      drain();
    } catch (...) {
    }
  }

  static void read(const MemberBuffers& m, std::byte* dst, std::size_t bytes,
                   bool from_recv = false) {
    if (bytes == 0) return;
    auto* buffer = const_cast<BufferAdapter*>(from_recv ? m.recv : m.send);
    m.queue->read(dst, *buffer, from_recv ? m.recv_offset : m.send_offset, bytes, false);
  }

  // An event per queue is recorded after the call's last write to it (execute()).
  void write(const MemberBuffers& m, const std::byte* src, std::size_t bytes) {
    if (bytes == 0) return;
    m.queue->write(*const_cast<BufferAdapter*>(m.recv), m.recv_offset, src, bytes, false);
    if (std::find(written_.begin(), written_.end(), m.queue) == written_.end())
      written_.push_back(m.queue);
  }

  int rank_of_member(int member) const {
    return map_.member_rank[static_cast<std::size_t>(member)];
  }

  int tag(int src_member, int dst_member) const {
    const long long t =
        static_cast<long long>(src_member) * static_cast<long long>(size_) + dst_member;
    // tag_ub_ itself is the roll call's (execute()).
    if (t >= tag_ub_) {
      throw RuntimeError(ErrorInfo{
          .what = fmt::format("{} members are too many for this MPI library's tags (MPI_TAG_UB {})",
                              size_, tag_ub_),
          .call = "MPI_Isend",
          .hint = "Use fewer members, or the NCCL backend."});
    }
    return static_cast<int>(t);
  }

  // Whether the call's agreement check carries its data (a small all_reduce).
  static bool carries(const CollectiveCall& c) {
    return c.agreement != nullptr && c.op == CollectiveOp::all_reduce &&
           c.agreement->payload_capacity() >= c.count * itemsize(c.dtype);
  }

  // Phase 1: device -> host for every member's input.
  void stage(Plan& p, std::size_t& next_slot) {
    const CollectiveCall& c = *p.call;
    const std::size_t es = itemsize(c.dtype);
    const std::size_t n = c.count;
    const std::size_t L = c.members.size();
    switch (c.op) {
      case CollectiveOp::all_reduce:
      case CollectiveOp::reduce:
      case CollectiveOp::reduce_scatter:
      case CollectiveOp::all_to_all: {
        const std::size_t per_member =
            (c.op == CollectiveOp::all_reduce || c.op == CollectiveOp::reduce) ? n : size_ * n;
        for (std::size_t l = 0; l < L; ++l) {
          p.in.push_back(slot(next_slot++, per_member * es));
          read(c.members[l], p.in.back(), per_member * es);
        }
        break;
      }
      case CollectiveOp::all_gather: {
        p.work = slot(next_slot++, size_ * n * es);
        for (std::size_t l = 0; l < L; ++l) {
          read(c.members[l], p.work + (first_member_ + c.members[l].local_device) * n * es, n * es);
        }
        break;
      }
      case CollectiveOp::broadcast: {
        p.work = slot(next_slot++, n * es);
        for (const auto& m : c.members) {
          if (first_member_ + m.local_device == static_cast<std::size_t>(c.root))
            read(m, p.work, n * es);
        }
        break;
      }
      case CollectiveOp::send:
        p.work = slot(next_slot++, n * es);
        read(c.members.at(0), p.work, n * es);
        break;
      case CollectiveOp::recv: p.work = recv_slot(p.recv_slot, n * es); break;
      case CollectiveOp::barrier: break;
    }
  }

  // all_to_all's rank-level exchange: the segment for rank q holds, for each local member l and
  // each member j of q, block j of l's input, ordered (l, j). The segment from rank r arrives
  // ordered (member of r, local member).
  std::byte* pack_all_to_all(const Plan& p, std::size_t& next_slot) {
    const CollectiveCall& c = *p.call;
    const std::size_t es = itemsize(c.dtype);
    const std::size_t n = c.count;
    const std::size_t L = c.members.size();
    std::byte* packed = slot(next_slot++, L * size_ * n * es);
    for (int q = 0; q < ranks_; ++q) {
      const std::size_t first_q = map_.first_member_of_rank[q];
      const std::size_t members_q = map_.members_of_rank[q];
      const std::size_t base = L * first_q * n;
      for (std::size_t l = 0; l < L; ++l) {
        for (std::size_t j = 0; j < members_q; ++j) {
          std::memcpy(packed + (base + (l * members_q + j) * n) * es,
                      p.in[l] + (first_q + j) * n * es, n * es);
        }
      }
    }
    return packed;
  }

  // all_to_all's segments per rank: sent (counts, displs) and received (counts2, displs2).
  void all_to_all_counts(Plan& p) const {
    const std::size_t n = p.call->count;
    const std::size_t L = p.call->members.size();
    for (int r = 0; r < ranks_; ++r) {
      const std::size_t members_r = map_.members_of_rank[r];
      const std::size_t first_r = map_.first_member_of_rank[r];
      p.counts.push_back(checked_int(L * members_r * n, "all_to_all's segment"));
      p.displs.push_back(checked_int(L * first_r * n, "all_to_all's input"));
      p.counts2.push_back(checked_int(members_r * L * n, "all_to_all's segment"));
      p.displs2.push_back(checked_int(first_r * L * n, "all_to_all's output"));
    }
  }

  // Phase 2: combine the local members on the host and post the MPI operations.
  void start(Plan& p, std::size_t& next_slot, std::vector<MPI_Request>& requests) {
    const CollectiveCall& c = *p.call;
    const std::size_t es = itemsize(c.dtype);
    const std::size_t n = c.count;
    const std::size_t L = c.members.size();
    const MPI_Datatype type = mpi_type(c.dtype);
    const bool across = ranks_ > 1;
    auto post = [&](auto&& f, const char* name) {
      MPI_Request r = MPI_REQUEST_NULL;
      check_mpi(f(&r), name, SKEIN_HERE);
      requests.push_back(r);
    };
    auto combine_local = [&](std::size_t elements) {
      for (std::size_t l = 1; l < L; ++l)
        reduce_bytes(c.dtype, p.in[0], p.in[l], elements, c.reduce_op);
      p.work = p.in[0];
    };
    switch (c.op) {
      case CollectiveOp::all_reduce: {
        combine_local(n);
        p.out = p.work;
        // One MPI call for a small all_reduce: its data travels in the agreement check's exchange
        // (unless some rank could not carry its own, inside a group).
        if (across && carries(c) && c.agreement->complete_carrying(p.work, n * es)) break;
        if (across) {
          const MPI_Op op = mpi_op(c.dtype, c.reduce_op);
          // Elementwise: large counts go in chunks that fit MPI's int counts.
          for (std::size_t off = 0; off < n; off += INT_MAX) {
            const int chunk = static_cast<int>(std::min<std::size_t>(INT_MAX, n - off));
            post(
                [&](MPI_Request* r) {
                  return MPI_Iallreduce(MPI_IN_PLACE, p.work + off * es, chunk, type, op, comm_, r);
                },
                "MPI_Iallreduce");
          }
        }
        break;
      }
      case CollectiveOp::reduce: {
        combine_local(n);
        p.out = p.work;
        if (across) {
          const MPI_Op op = mpi_op(c.dtype, c.reduce_op);
          const int root_rank = rank_of_member(c.root);
          for (std::size_t off = 0; off < n; off += INT_MAX) {
            const int chunk = static_cast<int>(std::min<std::size_t>(INT_MAX, n - off));
            std::byte* buf = p.work + off * es;
            post(
                [&](MPI_Request* r) {
                  return MPI_Ireduce(rank_ == root_rank ? MPI_IN_PLACE : buf, buf, chunk, type, op,
                                     root_rank, comm_, r);
                },
                "MPI_Ireduce");
          }
        }
        break;
      }
      case CollectiveOp::reduce_scatter: {
        combine_local(size_ * n);
        if (!across) {
          p.out = p.work + first_member_ * n * es;
          break;
        }
        p.out = slot(next_slot++, L * n * es);
        for (int r = 0; r < ranks_; ++r) {
          p.counts.push_back(checked_int(map_.members_of_rank[r] * n, "reduce_scatter's block"));
        }
        checked_int(size_ * n, "reduce_scatter's input");
        const MPI_Op op = mpi_op(c.dtype, c.reduce_op);
        post(
            [&](MPI_Request* r) {
              return MPI_Ireduce_scatter(p.work, p.out, p.counts.data(), type, op, comm_, r);
            },
            "MPI_Ireduce_scatter");
        break;
      }
      case CollectiveOp::all_gather: {
        p.out = p.work;
        if (!across) break;
        for (int r = 0; r < ranks_; ++r) {
          p.counts.push_back(checked_int(map_.members_of_rank[r] * n, "all_gather's block"));
          p.displs.push_back(checked_int(map_.first_member_of_rank[r] * n, "all_gather's output"));
        }
        checked_int(size_ * n, "all_gather's output");
        post(
            [&](MPI_Request* r) {
              return MPI_Iallgatherv(MPI_IN_PLACE, 0, type, p.work, p.counts.data(),
                                     p.displs.data(), type, comm_, r);
            },
            "MPI_Iallgatherv");
        break;
      }
      case CollectiveOp::broadcast: {
        p.out = p.work;
        if (!across) break;
        const int count = checked_int(n, "broadcast's data");
        const int root_rank = rank_of_member(c.root);
        post([&](MPI_Request* r) { return MPI_Ibcast(p.work, count, type, root_rank, comm_, r); },
             "MPI_Ibcast");
        break;
      }
      case CollectiveOp::all_to_all: {
        std::byte* packed = pack_all_to_all(p, next_slot);
        p.work = packed;
        p.out = packed;
        if (!across) break;
        p.out = slot(next_slot++, L * size_ * n * es);
        all_to_all_counts(p);
        post(
            [&](MPI_Request* r) {
              return MPI_Ialltoallv(p.work, p.counts.data(), p.displs.data(), type, p.out,
                                    p.counts2.data(), p.displs2.data(), type, comm_, r);
            },
            "MPI_Ialltoallv");
        break;
      }
      case CollectiveOp::send: {
        const int src = static_cast<int>(first_member_ + c.members.at(0).local_device);
        const int count = checked_int(n, "send's data");
        const int t = tag(src, c.peer);
        post(
            [&](MPI_Request* r) {
              return MPI_Isend(p.work, count, type, rank_of_member(c.peer), t, comm_, r);
            },
            "MPI_Isend");
        break;
      }
      case CollectiveOp::recv: {
        p.out = p.work;
        if (p.posted) break;
        p.posted = true;
        const int dst = static_cast<int>(first_member_ + c.members.at(0).local_device);
        const int count = checked_int(n, "recv's data");
        const int t = tag(c.peer, dst);
        p.out = p.work;
        post(
            [&](MPI_Request* r) {
              return MPI_Irecv(p.work, count, type, rank_of_member(c.peer), t, comm_, r);
            },
            "MPI_Irecv");
        break;
      }
      case CollectiveOp::barrier:
        if (across) post([&](MPI_Request* r) { return MPI_Ibarrier(comm_, r); }, "MPI_Ibarrier");
        break;
    }
  }

  // Phase 3: avg's division and host -> device.
  void finish(Plan& p) {
    const CollectiveCall& c = *p.call;
    const std::size_t es = itemsize(c.dtype);
    const std::size_t n = c.count;
    const std::size_t L = c.members.size();
    const bool avg = c.reduce_op == ReduceOp::avg;
    switch (c.op) {
      case CollectiveOp::all_reduce:
        if (avg) divide_bytes(c.dtype, p.out, n, size_);
        for (const auto& m : c.members) write(m, p.out, n * es);
        break;
      case CollectiveOp::reduce:
        for (const auto& m : c.members) {
          if (first_member_ + m.local_device != static_cast<std::size_t>(c.root)) continue;
          if (avg) divide_bytes(c.dtype, p.out, n, size_);
          write(m, p.out, n * es);
        }
        break;
      case CollectiveOp::reduce_scatter:
        if (avg) divide_bytes(c.dtype, p.out, L * n, size_);
        for (const auto& m : c.members) write(m, p.out + m.local_device * n * es, n * es);
        break;
      case CollectiveOp::all_gather:
        for (const auto& m : c.members) write(m, p.out, size_ * n * es);
        break;
      case CollectiveOp::broadcast:
        for (const auto& m : c.members) {
          // The root's own data is already right; with in-place semantics there is nothing to do.
          if (first_member_ + m.local_device == static_cast<std::size_t>(c.root)) continue;
          write(m, p.out, n * es);
        }
        break;
      case CollectiveOp::all_to_all: {
        // From rank r, block (l', j) is member (first_r + l')'s block for local member j.
        for (std::size_t k = 0; k < L; ++k) {
          const auto& m = c.members[k];
          const std::size_t j = m.local_device;
          std::byte* result = p.in[k];  // its input is no longer needed
          for (int r = 0; r < ranks_; ++r) {
            const std::size_t first_r = map_.first_member_of_rank[r];
            const std::size_t members_r = map_.members_of_rank[r];
            for (std::size_t lp = 0; lp < members_r; ++lp) {
              std::memcpy(result + (first_r + lp) * n * es,
                          p.out + (first_r * L + lp * L + j) * n * es, n * es);
            }
          }
          write(m, result, size_ * n * es);
        }
        break;
      }
      case CollectiveOp::recv: write(c.members.at(0), p.out, n * es); break;
      case CollectiveOp::send:
      case CollectiveOp::barrier: break;
    }
  }

  // After a failure between posting and waiting: the first `receives` requests (receives posted
  // early) are cancelled and given a second to complete (a matched one completes first); whatever
  // is still outstanding after that, or was posted after them (sends, collectives: MPI cannot
  // cancel those), is left to MPI with the slots kept for the rest of the process: abort().
  void cancel(std::vector<MPI_Request>& requests, std::size_t receives) noexcept {
    for (std::size_t i = 0; i < receives; ++i) {
      if (requests[i] != MPI_REQUEST_NULL) MPI_Cancel(&requests[i]);
    }
    const auto until = CollectiveClock::now() + std::chrono::seconds(1);
    bool left = false;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (i >= receives) {
        left = left || requests[i] != MPI_REQUEST_NULL;
        continue;
      }
      int done = 0;
      while (requests[i] != MPI_REQUEST_NULL &&
             MPI_Test(&requests[i], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done &&
             CollectiveClock::now() < until) {
        std::this_thread::yield();
      }
      left = left || (requests[i] != MPI_REQUEST_NULL && !done);
    }
    if (left) abort();
  }

  void execute(std::span<const CollectiveCall> calls, CollectiveClock::time_point deadline) {
    // With SKEIN_PROFILE_COLLECTIVES=1, the host time of each phase (printed at the end).
    const bool profile = detail::call_profile().on;
    auto mark = profile ? CollectiveClock::now() : CollectiveClock::time_point();
    auto phase = [&](int k) {
      if (!profile) return;
      const auto now = CollectiveClock::now();
      phases_.ns[k] += std::chrono::duration_cast<std::chrono::nanoseconds>(now - mark).count();
      mark = now;
    };
    std::vector<QueueAdapter*> queues;
    for (const auto& c : calls) {
      for (const auto& m : c.members) {
        if (std::find(queues.begin(), queues.end(), m.queue) == queues.end())
          queues.push_back(m.queue);
      }
    }
    const std::uint64_t batch = batches_++;
    // Earlier calls' host -> device copies may still read the slots that this call's device ->
    // host copies write: the call's queues wait for them on the device (the host does not, so it
    // enqueues the copies at once), and the synchronisation below makes sure they are done before
    // MPI or the host writes a slot. A call without queues waits on the host.
    if (queues.empty()) {
      drain();
    } else {
      for (auto* q : queues) {
        for (auto& e : pending_events_) q->wait_for(*e.event);
      }
    }
    phase(0);
    std::vector<Plan> plans(calls.size());
    std::size_t next_slot = 0, next_recv_slot = 0;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      plans[i].call = &calls[i];
      if (calls[i].op == CollectiveOp::recv) plans[i].recv_slot = next_recv_slot++;
      stage(plans[i], next_slot);
    }
    phase(1);
    std::vector<MPI_Request> requests;
    std::string what;
    if (calls.size() == 1) {
      what = fmt::format("MPI's part of {}", name(calls[0].op));
    } else {
      what = fmt::format("MPI's part of a group of {} operations", calls.size());
    }
    // Point-to-point receives (no agreement check holds them back) are posted now, into this
    // batch's set of receive slots, which no earlier copy reads any more (those of two batches
    // back were waited for by the last batch, unless it failed first: then here): a sender's
    // message then arrives, and its rendezvous progresses, while this rank waits for its own
    // device -> host copies below, instead of after them.
    const bool early =
        std::any_of(plans.begin(), plans.end(),
                    [](const Plan& p) { return p.call->op == CollectiveOp::recv; }) &&
        std::none_of(calls.begin(), calls.end(),
                     [](const CollectiveCall& c) { return c.agreement != nullptr; });
    try {
      if (early) {
        drain(batch == 0 ? 0 : batch - 1);
        for (auto& p : plans) {
          if (p.call->op == CollectiveOp::recv) start(p, next_slot, requests);
        }
      }
      // The staged inputs (and, for a barrier, the queues' earlier work) must be complete. With
      // receives posted, MPI is kept progressing while the host waits.
      if (early) {
        std::vector<std::shared_ptr<EventAdapter>> staged;
        for (auto* q : queues) staged.push_back(q->record_untimed());
        for (auto& e : staged) {
          while (!e->query()) {
            int done = 0;
            SKEIN_MPI_CHECK(MPI_Testall, (static_cast<int>(requests.size()), requests.data(), &done,
                                          MPI_STATUSES_IGNORE));
            std::this_thread::yield();
          }
        }
      } else {
        for (auto* q : queues) q->synchronize();
      }
    } catch (...) {
      cancel(requests, requests.size());
      throw;
    }
    // The queues waited for the earlier copies (or, without queues, the host did: drain()).
    pending_events_.clear();
    const std::size_t posted_early = requests.size();
    phase(2);
    // The agreement check ran alongside the staging: nothing goes to another rank unless every
    // rank makes the same call.
    // (A small all_reduce's check instead carries its data: see start().)
    for (const auto& c : calls) {
      if (c.agreement != nullptr && !carries(c)) c.agreement->complete();
    }
    phase(3);
    try {
      for (auto& p : plans) start(p, next_slot, requests);
    } catch (...) {
      cancel(requests, posted_early);
      throw;
    }
    ++executions_;
    try {
      wait_requests(requests, deadline, what);
    } catch (const TimeoutError& e) {
      // Which ranks are gone: every rank that timed out answers a roll call (on a tag that no
      // member-to-member tag reaches, see tag()), the others are named as lost.
      if (ranks_ <= 1) throw;
      ErrorInfo info = e.info();  // the hint, the place and the rest kept
      info.what = fmt::format(
          "{}; {}", info.what,
          absent_ranks(comm_, tag_ub_, executions_, timeout_s_, "the MPI collectives backend"));
      throw TimeoutError(info);
    }
    phase(4);
    written_.clear();
    try {
      for (auto& p : plans) finish(p);
    } catch (...) {
      // The copies enqueued so far still read the slots: the next call waits for them too.
      for (auto* q : written_) pending_events_.push_back({batch, q->record_untimed()});
      throw;
    }
    for (auto* q : written_) pending_events_.push_back({batch, q->record_untimed()});
    phase(5);
    if (profile) ++phases_.executions;
  }

  // SKEIN_PROFILE_COLLECTIVES: execute()'s phases, summed (a Communicator, and so its backend, is
  // used by one thread at a time: docs/guide.md, Threads).
  struct Phases {
    long long executions = 0;
    long long ns[6] = {};
  } phases_;

  double timeout_s_;
  MPI_Comm comm_;
  MemberMap map_;
  std::size_t first_member_;
  Context context_;
  std::size_t size_;
  int rank_ = 0;
  int ranks_ = 1;
  int tag_ub_ = 32767;
  std::uint64_t executions_ = 0;  // numbers execute()'s waits, for the roll call after a timeout
  bool cuda_aware_ = false;
  bool aborted_ = false;
  int group_depth_ = 0;
  std::vector<CollectiveCall> grouped_;
  std::vector<HostBuffer> slots_;
  // Host -> device copies that may still read the slots, with the batch (execute()) of each.
  struct Pending {
    std::uint64_t batch;
    std::shared_ptr<EventAdapter> event;
  };
  std::vector<Pending> pending_events_;
  std::vector<QueueAdapter*> written_;  // execute(): the queues finish() wrote on
  // Receive slots, in two sets that batches take in turn (batch % 2): a batch's receives are
  // posted before its queues are synchronised (execute()), while the previous batch's host ->
  // device copies may still read the other set.
  std::vector<HostBuffer> recv_slots_[2];
  std::uint64_t batches_ = 0;
  std::map<std::pair<Dtype, ReduceOp>, MPI_Op> user_ops_;  // created on first use
};

}  // namespace

std::unique_ptr<CollectiveBackendAdapter> make_mpi_backend(
    MPI_Comm comm, const MemberMap& members, int first_member, const Context& context,
    const std::vector<std::size_t>& device_idxs, double timeout_s) {
  return std::make_unique<MpiBackend>(comm, members, first_member, context, device_idxs, timeout_s);
}

}  // namespace skein::detail

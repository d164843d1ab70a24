// SPDX-License-Identifier: BSD-3-Clause
// Arrays distributed over every device of a Communicator (ranks x local devices).
//
// A BlockLayout splits a 1-D or 2-D global shape into blocks of consecutive rows (the first axis)
// over the communicator's members, in member order: member m owns rows [begin(m), end(m)). The
// split may be uneven, and a member may own no rows at all (more members than rows, or an
// explicit count of 0). A DistArray holds one block per local member, each a skein::Array on that
// member's device, optionally framed by `halo` ghost rows above and below that exchange_halos()
// fills with the neighbouring blocks' edge rows. A ReplicatedArray holds the same full array on
// every member's device, for operands every device needs.
//
// Words used below: a *member* is a device of the communicator (its communicator rank,
// Communicator::rank_of()); a *rank* is an MPI process of the communicator's group, which has
// one or more consecutive members (its local devices). Host arrays belong to ranks, so scatter
// and gather take a root *rank*; device-to-device broadcasts take a root *member*.
//
// Collective calls (marked so) must be made by every rank of the communicator, in the same order,
// with the same layout, dtype and roots; argument errors that only one rank can see (e.g. the
// root's host array of the wrong size) are shared first, so that every rank raises the same
// LogicError instead of some ranks waiting for the others.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "skein/array.hpp"
#include "skein/communicator.hpp"
#include "skein/dtype.hpp"
#include "skein/export.hpp"
#include "skein/multi_device.hpp"
#include "skein/queue.hpp"

namespace skein {

// Global rows [begin, end).
struct RowRange {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t size() const { return end - begin; }
  bool empty() const { return begin == end; }
  bool contains(std::size_t row) const { return begin <= row && row < end; }
  friend bool operator==(const RowRange&, const RowRange&) = default;
};

// Who holds a block: the member (communicator rank), its MPI rank, and its index among that
// rank's devices (the `local_device` of Communicator calls).
struct MemberLocation {
  std::size_t member = 0;
  int rank = 0;
  std::size_t local_device = 0;
  friend bool operator==(const MemberLocation&, const MemberLocation&) = default;
};

// How the global rows are shared out among the members.
class SKEIN_EXPORT RowSplit {
 public:
  // Equal blocks; the first (rows % members) members get one row more.
  static RowSplit even() { return RowSplit(); }
  // Explicit rows per member (one count per member; they must add up to the global rows).
  static RowSplit counts(std::vector<std::size_t> rows_per_member);
  // Rows proportional to non-negative weights (one per member, not all zero): member m's block
  // ends at round(rows * (w_0 + ... + w_m) / (w_0 + ... + w_{M-1})), so the blocks add up
  // exactly and the same weights give the same blocks on every rank.
  static RowSplit weights(std::vector<double> weights_per_member);

  RowSplit() = default;

  enum class Kind { even, counts, weights };
  Kind kind() const { return kind_; }
  const std::vector<std::size_t>& rows_per_member() const { return counts_; }
  const std::vector<double>& weights_per_member() const { return weights_; }

 private:
  Kind kind_ = Kind::even;
  std::vector<std::size_t> counts_;
  std::vector<double> weights_;
};

// Ghost rows around each block. Open boundaries (the default) leave the halo rows above the
// first block and below the last untouched; periodic ones fill them from the other end.
struct Halo {
  std::size_t width = 0;
  bool periodic = false;
  friend bool operator==(const Halo&, const Halo&) = default;
};

// Which member owns which rows of a global 1-D or 2-D shape. A value type: build the same layout
// on every rank (a DistArray checks that they agree).
//
// Halo neighbours: members that own no rows take no part in the halo exchange. The neighbours
// of a member with rows are the nearest members before and after it that own rows (with periodic
// boundaries, wrapping around; a member alone is its own neighbour). Every member with rows that
// is some member's neighbour must own at least `halo.width` rows, since a halo is filled from one
// neighbour only: a wider halo is a LogicError when the layout is made.
class SKEIN_EXPORT BlockLayout {
 public:
  // `members_per_rank[r]`: how many members (devices) MPI rank r has; members are numbered rank
  // by rank (Communicator's order). Throws LogicError for a shape that is not 1-D or 2-D, a rank
  // without members, a split that does not fit, or a halo wider than a neighbour's block.
  BlockLayout(Shape shape, std::vector<std::size_t> members_per_rank, const RowSplit& split = {},
              Halo halo = {});
  // The same over the members of `comm`. Collective (it learns how many members each rank has).
  static BlockLayout over(Communicator& comm, Shape shape, const RowSplit& split = {},
                          Halo halo = {});

  const Shape& shape() const { return shape_; }
  std::size_t ndim() const { return shape_.size(); }
  std::size_t rows() const { return shape_[0]; }
  // Elements per row: 1 for a 1-D shape, the number of columns for a 2-D one.
  std::size_t row_size() const { return shape_.size() > 1 ? shape_[1] : 1; }
  const Halo& halo() const { return halo_; }

  std::size_t members() const { return row_begin_.size() - 1; }
  int ranks() const { return static_cast<int>(members_per_rank_.size()); }
  const std::vector<std::size_t>& members_per_rank() const { return members_per_rank_; }
  std::size_t members_of_rank(int rank) const;
  std::size_t first_member_of_rank(int rank) const;

  // Rows of one member's block (interior rows, without the halo).
  RowRange member_rows(std::size_t member) const;
  // Rows of all members of one rank together (consecutive: a rank's members are consecutive).
  RowRange rank_rows(int rank) const;
  // The shape of member m's block: (rows, [columns]). With halo: rows + 2 * halo.width for a
  // member that owns rows, none for a member that owns none.
  Shape block_shape(std::size_t member, bool with_halo = false) const;

  MemberLocation location(std::size_t member) const;
  std::size_t member_of(int rank, std::size_t local_device) const;
  // The member owning a global row (never one with an empty block).
  MemberLocation owner(std::size_t row) const;

  // Halo neighbours (see above); -1 when there is none (an open boundary, or an empty block).
  long long prev_neighbour(std::size_t member) const;
  long long next_neighbour(std::size_t member) const;

  // "8 x 3 rows over 3 members (ranks 0: 2, 1: 1) with rows [0, 3) [3, 6) [6, 8), halo 1"
  std::string describe() const;
  friend SKEIN_EXPORT bool operator==(const BlockLayout& a, const BlockLayout& b);

 private:
  void check_member(std::size_t member, const char* call) const;
  void check_rank(int rank, const char* call) const;

  Shape shape_;
  std::vector<std::size_t> members_per_rank_;
  std::vector<std::size_t> first_member_of_rank_;  // ranks() + 1 entries
  std::vector<std::size_t> row_begin_;             // members() + 1 entries
  Halo halo_;
};

// The members each rank of `comm` has (Communicator::local_size() of every rank), in rank order,
// and this process's rank among them. Collective.
struct CommunicatorRanks {
  std::vector<std::size_t> members_per_rank{};
  int rank = 0;
};
SKEIN_EXPORT CommunicatorRanks communicator_ranks(Communicator& comm);

// One local member's block of a DistArray.
struct LocalBlock {
  std::size_t local_device = 0;  // index among this rank's members (Communicator's local_device)
  std::size_t member = 0;        // communicator rank
  std::size_t device_idx = 0;    // in the communicator's context
  RowRange rows{};               // global rows of the interior
  Array interior;                // rows.size() rows: a view of with_halo
  Array with_halo;               // halo.width rows above and below the interior (none when empty)
};

// A global array split in blocks of rows over the communicator's members (see BlockLayout).
// Blocks are contiguous, row-major, and framed by the layout's halo rows; halo rows start as
// zeros. A cheap handle: copies share the blocks. The array shares the communicator with the
// Communicator it was made over (communicator() is a handle to the same one), so moving or
// destroying that Communicator object leaves the array valid.
// Device work is enqueued on queue(); host transfers return when they are done.
// Threads: collective calls (and the constructors) are calls on the shared communicator, under its
// rules (one thread at a time with its other calls, see Communicator); the calls not collective
// only enqueue on queue() and may come from any thread under the Queue's rules. The communicator
// ends, with MPI calls, on the thread that drops its last handle (the Communicator or the last
// array over it).
class SKEIN_EXPORT DistArray {
 public:
  // Collective: every rank passes the same layout and dtype (checked: a mismatch raises
  // LogicError on every rank). The layout must describe `comm`'s members. `queue` must be over
  // the communicator's context and hold every device of the communicator (by default a new
  // queue over the context).
  DistArray(Communicator& comm, BlockLayout layout, Dtype dtype);
  DistArray(Communicator& comm, const Queue& queue, BlockLayout layout, Dtype dtype);
  // Collective: over blocks the application already has, one Buffer per local member in local
  // order (e.g. skein::cuda::buffer_from_native over its own per-device allocations), each on
  // that member's device and holding its block with the halo rows (layout.block_shape(member,
  // true), row-major). Nothing is copied or zeroed: the blocks keep their contents. A block on the
  // wrong device, or too small, raises LogicError on every rank.
  DistArray(Communicator& comm, const Queue& queue, BlockLayout layout, Dtype dtype,
            std::vector<Buffer> blocks);
  // Collective: the layout over `comm` (BlockLayout::over).
  DistArray(Communicator& comm, Shape shape, Dtype dtype, const RowSplit& split = {},
            Halo halo = {});

  Communicator& communicator() const { return *comm_; }
  const Queue& queue() const { return queue_; }
  const BlockLayout& layout() const { return layout_; }
  Dtype dtype() const { return dtype_; }
  const Shape& shape() const { return layout_.shape(); }
  std::size_t size() const { return shape_size(layout_.shape()); }  // global elements
  std::size_t nbytes() const { return size() * itemsize(dtype_); }
  // This process's MPI rank in the communicator's group (the layout's rank numbers).
  int rank() const { return rank_; }

  // This rank's blocks, one per local member (Communicator::local_size()), in local order.
  std::size_t local_size() const { return blocks_.size(); }
  const LocalBlock& block(std::size_t local_device) const;
  const std::vector<LocalBlock>& blocks() const { return blocks_; }
  Array local(std::size_t local_device) const { return block(local_device).interior; }
  Array local_with_halo(std::size_t local_device) const { return block(local_device).with_halo; }
  RowRange local_rows(std::size_t local_device) const { return block(local_device).rows; }
  // Rows of all of this rank's blocks together.
  RowRange rank_rows() const { return layout_.rank_rows(rank_); }
  // The blocks keyed by context device index, as kernel arguments for a launch on queue().
  MultiDevice<Array> local_arrays(bool with_halo = false) const;
  // Calls f(block) for each local member's block, in local order.
  void for_each_local(const std::function<void(const LocalBlock&)>& f) const;

  // Collective: the root rank's host array (the whole global array, row-major) to every block.
  // Other ranks' `host` is not read (pass an empty span).
  void scatter(std::span<const std::byte> host, int root_rank) const;
  template <class T>
  void scatter(std::span<const T> host, int root_rank) const {
    check_host_type(dtype_of<T>, "DistArray::scatter");
    scatter(std::as_bytes(host), root_rank);
  }
  template <class T>
  void scatter(const std::vector<T>& host, int root_rank) const {
    scatter(std::span<const T>(host), root_rank);
  }

  // Not collective: this rank's own rows (rank_rows(), all local blocks in order) from the host.
  void scatter_local(std::span<const std::byte> host_rows) const;
  template <class T>
  void scatter_local(std::span<const T> host_rows) const {
    check_host_type(dtype_of<T>, "DistArray::scatter_local");
    scatter_local(std::as_bytes(host_rows));
  }
  template <class T>
  void scatter_local(const std::vector<T>& host_rows) const {
    scatter_local(std::span<const T>(host_rows));
  }
  // Not collective: this rank's own rows (rank_rows()) to the host.
  std::vector<std::byte> gather_local_bytes() const;
  template <class T>
  std::vector<T> gather_local() const {
    check_host_type(dtype_of<T>, "DistArray::gather_local");
    std::vector<T> out(rank_rows().size() * layout_.row_size());
    get_rows(rank_rows(), std::as_writable_bytes(std::span<T>(out)));
    return out;
  }

  // Collective: the whole global array on the root rank's host (an empty vector on the others).
  std::vector<std::byte> gather_bytes(int root_rank) const;
  template <class T>
  std::vector<T> gather(int root_rank) const {
    check_host_type(dtype_of<T>, "DistArray::gather");
    check_root_rank(root_rank, "DistArray::gather");
    std::vector<T> out(rank_ == root_rank ? size() : 0);
    gather_into(std::as_writable_bytes(std::span<T>(out)), root_rank);
    return out;
  }
  // Collective: the whole global array on every rank's host.
  std::vector<std::byte> all_gather_bytes() const;
  template <class T>
  std::vector<T> all_gather() const {
    check_host_type(dtype_of<T>, "DistArray::all_gather");
    std::vector<T> out(size());
    all_gather_into(std::as_writable_bytes(std::span<T>(out)));
    return out;
  }

  // Collective: fills every block's halo rows with its neighbours' edge rows (see BlockLayout),
  // between devices of one rank by device copies and between ranks by grouped Communicator
  // send/recv; under the NCCL backend, halo rows between devices of one rank of fewer than
  // 256 KiB go by send/recv in that group too (faster than a peer copy at that size; as
  // skein::exchange_halos of GridArrays; exchange_halos(queue) on another queue than the array's
  // keeps the copies, which leave the SMs to the kernels it overlaps). Halo rows at open global
  // boundaries are left as they are. Nothing to do without a halo.
  void exchange_halos() const;
  // The same, enqueued on `queue` instead of the array's queue: for moving the halos while other
  // work (the interior of a stencil) runs on the array's queue. `queue` must be of the array's
  // context and have the array's devices (LogicError otherwise). Nothing orders the two queues:
  // the caller makes `queue` wait for the work that wrote the edge rows, and later work that
  // reads the halo rows wait for the exchange (Queue::record_marker, Queue::wait_for). With the
  // MPI backend the call returns when the exchange is done (it is staged through the host); with
  // NCCL it returns once the exchange is enqueued.
  void exchange_halos(const Queue& queue) const;

  // Not collective: device-to-device copy of every local block (interior rows) from `source`,
  // which must have the same layout and dtype and live on the same devices. The copies run on
  // this array's queue; a source on another queue is joined (device-side waits, as skein::dist's
  // operations do): the copies start after the work already queued on the source's queue, and
  // work queued there later starts after them.
  void set(const DistArray& source) const;
  // Not collective: zeros in every local block, halo rows included.
  void fill_zero() const;

 private:
  DistArray(Communicator& comm, const Queue& queue, BlockLayout layout, Dtype dtype,
            std::vector<Buffer> foreign, bool use_foreign);
  void check_host_type(Dtype host, const char* call) const;
  void check_root_rank(int root_rank, const char* call) const;
  void get_rows(RowRange rows, std::span<std::byte> dest) const;
  void gather_into(std::span<std::byte> dest, int root_rank) const;
  void all_gather_into(std::span<std::byte> dest) const;

  std::shared_ptr<Communicator> comm_;  // a handle sharing the communicator (Communicator::share)
  Queue queue_;
  BlockLayout layout_;
  Dtype dtype_ = Dtype::uint8;
  int rank_ = 0;
  std::vector<LocalBlock> blocks_;
};

// The same full array on every member's device. A cheap handle; as with DistArray, it shares the
// communicator, which moving or destroying the Communicator object does not end.
// Threads: as DistArray: collective calls under the communicator's rules, one thread at a time;
// set(), get() and get_bytes() from any thread under the Queue's rules.
class SKEIN_EXPORT ReplicatedArray {
 public:
  // Collective: every rank passes the same shape and dtype (checked). Contents start as zeros.
  ReplicatedArray(Communicator& comm, Shape shape, Dtype dtype);
  ReplicatedArray(Communicator& comm, const Queue& queue, Shape shape, Dtype dtype);
  // Collective: made and filled from each rank's own copy of the host data (set()).
  template <class T>
  static ReplicatedArray from_host(Communicator& comm, std::span<const T> host, Shape shape = {}) {
    if (shape.empty()) shape = {host.size()};
    ReplicatedArray a(comm, std::move(shape), dtype_of<T>);
    a.set(host);
    return a;
  }

  Communicator& communicator() const { return *comm_; }
  const Queue& queue() const { return queue_; }
  const Shape& shape() const { return shape_; }
  Dtype dtype() const { return dtype_; }
  std::size_t size() const { return shape_size(shape_); }
  std::size_t nbytes() const { return size() * itemsize(dtype_); }
  int rank() const { return rank_; }

  std::size_t local_size() const { return locals_.size(); }
  Array local(std::size_t local_device) const;
  MultiDevice<Array> local_arrays() const;

  // Not collective: this rank's host data (the whole array) to each of its devices. For the
  // copies to agree, every rank must pass the same data.
  void set(std::span<const std::byte> host) const;
  template <class T>
  void set(std::span<const T> host) const {
    check_host_type(dtype_of<T>, "ReplicatedArray::set");
    set(std::as_bytes(host));
  }
  template <class T>
  void set(const std::vector<T>& host) const {
    set(std::span<const T>(host));
  }
  // Collective: the root rank's host data to every device of every rank. Other ranks' `host` is
  // not read.
  void broadcast_from_host(std::span<const std::byte> host, int root_rank) const;
  template <class T>
  void broadcast_from_host(std::span<const T> host, int root_rank) const {
    check_host_type(dtype_of<T>, "ReplicatedArray::broadcast_from_host");
    broadcast_from_host(std::as_bytes(host), root_rank);
  }
  // Collective: member `root_member`'s device copy to every other member's (Communicator
  // broadcast), e.g. after one member updated its copy.
  void broadcast(int root_member) const;
  // Not collective: one local device's copy to the host.
  std::vector<std::byte> get_bytes(std::size_t local_device = 0) const;
  template <class T>
  std::vector<T> get(std::size_t local_device = 0) const {
    check_host_type(dtype_of<T>, "ReplicatedArray::get");
    return local(local_device).get<T>();
  }

 private:
  void check_host_type(Dtype host, const char* call) const;

  std::shared_ptr<Communicator> comm_;  // a handle sharing the communicator (Communicator::share)
  Queue queue_;
  Shape shape_;
  Dtype dtype_ = Dtype::uint8;
  int rank_ = 0;
  std::vector<std::size_t> members_per_rank_;
  std::vector<Array> locals_;
};

}  // namespace skein

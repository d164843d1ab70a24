// SPDX-License-Identifier: BSD-3-Clause
// Redistribution of a global array between two GridLayouts (redistribute in grid_array.hpp).
//
// The plan comes from the two layouts alone, so every rank computes the same one: each pair of a
// source member (a block of `from`'s layout) and a destination member (a block of `to`'s) whose
// points overlap moves that overlap, a box, in one message. A box whose source and destination
// are on one device is copied in place by one kernel; otherwise the source packs it into a
// contiguous buffer, which reaches the destination by a device copy (same rank) or by
// Communicator send/recv (other ranks, every pair in one group), and the destination unpacks it.
// Halos of `to` are not written.
#include <fmt/format.h>

#include <array>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "dist_transport.hpp"
#include "grid_copy.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/host_collectives.hpp"
#include "skein/error.hpp"
#include "skein/grid_array.hpp"

namespace skein {

using namespace detail::transport;

namespace {

using Int4 = std::array<std::int64_t, 4>;

// The overlap of two members' points, in global coordinates per layout axis; nullopt when empty.
struct Overlap {
  std::vector<std::size_t> start, extent;
};
std::optional<Overlap> overlap(const GridBlock& a, const GridBlock& b) {
  if (a.empty() || b.empty()) return std::nullopt;
  Overlap o;
  for (std::size_t axis = 0; axis < a.offset.size(); ++axis) {
    const std::size_t lo = std::max(a.offset[axis], b.offset[axis]);
    const std::size_t hi =
        std::min(a.offset[axis] + a.extent[axis], b.offset[axis] + b.extent[axis]);
    if (hi <= lo) return std::nullopt;
    o.start.push_back(lo);
    o.extent.push_back(hi - lo);
  }
  return o;
}

// The overlap as a box of a member's block with its halo: first element and strides.
detail::grid::BoxView box_in(const GridLayout& layout, std::size_t member, const Array& with_halo,
                             const Overlap& o) {
  detail::grid::BoxView v{with_halo, 0, detail::grid::block_strides(layout, member)};
  const GridBlock b = layout.block(member);
  for (std::size_t a = 0; a < layout.ndim(); ++a) {
    const auto local = static_cast<std::int64_t>(o.start[a] - b.offset[a] + layout.halo(a));
    v.offset += local * v.strides[detail::grid::slot(layout.ndim(), a)];
  }
  return v;
}

Int4 extent_of(const GridLayout& layout, const Overlap& o) {
  Int4 e{1, 1, 1, static_cast<std::int64_t>(layout.components())};
  for (std::size_t a = 0; a < layout.ndim(); ++a)
    e[detail::grid::slot(layout.ndim(), a)] = static_cast<std::int64_t>(o.extent[a]);
  return e;
}

void check_pair(const Queue& queue, const GridArray& from, const GridArray& to) {
  const char* call = "redistribute";
  const GridLayout& a = from.layout();
  const GridLayout& b = to.layout();
  if (from.communicator() != to.communicator()) {
    detail::raise_in(SKEIN_HERE, call, "Make both arrays over one Communicator.",
                     "the arrays are over different communicators (rank {})", from.rank());
  }
  if (!(a.shape() == b.shape()) || a.components() != b.components()) {
    detail::raise_in(SKEIN_HERE, call,
                     "Redistribute between layouts of one global shape and number of components.",
                     "the source is {} and the destination {} (rank {})", a.describe(),
                     b.describe(), from.rank());
  }
  if (from.dtype() != to.dtype()) {
    detail::raise_in(SKEIN_HERE, call, "Give arrays of one dtype (astype the result to convert).",
                     "the source's dtype is {} and the destination's {} (rank {})",
                     name(from.dtype()), name(to.dtype()), from.rank());
  }
  if (auto q = queue_problem(from.communicator(), queue); !q.empty()) {
    detail::raise_in(SKEIN_HERE, call, kQueueHint, "{} (rank {})", q, from.rank());
  }
}

// One redistribute call on this rank.
class Redistribution {
 public:
  Redistribution(const Queue& queue, const GridArray& from, const GridArray& to)
      : queue_(queue),
        from_(from),
        to_(to),
        a_(from.layout()),
        b_(to.layout()),
        copy_(queue),
        comm_(from.communicator()),
        first_(a_.first_member_of_rank(from.rank())),
        local_(from.local_size()),
        unit_(itemsize(from.dtype())) {}

  void run() {
    for (std::size_t s = 0; s < a_.members(); ++s) {
      for (std::size_t d = 0; d < b_.members(); ++d) {
        if (!is_local(s) && !is_local(d)) continue;
        if (auto o = overlap(a_.block(s), b_.block(d)))
          moves_.push_back(Move{s, d, std::move(*o), {}, {}});
      }
    }
    for (Move& m : moves_) {
      if (is_local(m.src)) start(m);
    }
    transfer_between_ranks();
    for (const Move& m : moves_) {
      if (is_local(m.dst) && m.data) unpack(m);
    }
  }

 private:
  struct Move {
    std::size_t src = 0, dst = 0;
    Overlap box;
    std::optional<Array> packed;  // at a local source
    std::optional<Array> data;    // at a local destination, when it was not copied in place
  };

  bool is_local(std::size_t m) const { return m >= first_ && m < first_ + local_; }
  const LocalGridBlock& from_block(std::size_t m) const { return from_.blocks()[m - first_]; }
  const LocalGridBlock& to_block(std::size_t m) const { return to_.blocks()[m - first_]; }
  std::int64_t cells(const Overlap& o) const {
    std::int64_t n = static_cast<std::int64_t>(a_.components());
    for (auto e : o.extent) n *= static_cast<std::int64_t>(e);
    return n;
  }

  // At a local source: in place when the destination is on the same device, else packed (and
  // copied to a local destination's device).
  void start(Move& m) {
    const LocalGridBlock& src = from_block(m.src);
    const Int4 extent = extent_of(a_, m.box);
    const auto source = box_in(a_, m.src, src.with_halo, m.box);
    if (is_local(m.dst) && to_block(m.dst).device_idx == src.device_idx) {
      copy_(unit_, box_in(b_, m.dst, to_block(m.dst).with_halo, m.box), source, extent);
      return;
    }
    const Array buffer = Array::empty(queue_, {static_cast<std::size_t>(cells(m.box))},
                                      from_.dtype(), src.device_idx, temporaries(queue_));
    copy_(unit_, {buffer, 0, detail::grid::contiguous(extent)}, source, extent);
    m.packed = buffer;
    if (!is_local(m.dst)) return;
    m.data = Array::empty(queue_, {buffer.size()}, from_.dtype(), to_block(m.dst).device_idx,
                          temporaries(queue_));
    m.data->set(buffer);
  }

  void transfer_between_ranks() {
    bool remote = false;
    for (const Move& m : moves_) remote = remote || !is_local(m.src) || !is_local(m.dst);
    if (!remote) return;
    in_group(comm_, [&] {
      for (Move& m : moves_) {
        if (is_local(m.src) && !is_local(m.dst)) {
          comm_.send(queue_, m.src - first_, *m.packed, static_cast<int>(m.dst));
        } else if (!is_local(m.src) && is_local(m.dst)) {
          m.data = Array::empty(queue_, {static_cast<std::size_t>(cells(m.box))}, from_.dtype(),
                                to_block(m.dst).device_idx, temporaries(queue_));
          comm_.recv(queue_, m.dst - first_, *m.data, static_cast<int>(m.src));
        }
      }
    });
    // A receive the watchdog aborted leaves the buffers unwritten: raise rather than unpack them.
    detail::require_usable(comm_, "redistribute");
  }

  void unpack(const Move& m) const {
    const Int4 extent = extent_of(b_, m.box);
    copy_(unit_, box_in(b_, m.dst, to_block(m.dst).with_halo, m.box),
          {*m.data, 0, detail::grid::contiguous(extent)}, extent);
  }

  const Queue& queue_;
  const GridArray& from_;
  const GridArray& to_;
  const GridLayout& a_;
  const GridLayout& b_;
  detail::grid::BoxCopier copy_;
  Communicator& comm_;
  std::size_t first_ = 0;  // this rank's first member
  std::size_t local_ = 0;  // and its number of members
  std::size_t unit_ = 0;   // bytes per element
  std::vector<Move> moves_;
};

}  // namespace

void redistribute(const GridArray& from, const GridArray& to) {
  check_pair(to.queue(), from, to);
  // `from` was written on its own queue.
  if (!(from.queue() == to.queue())) {
    for (const LocalGridBlock& b : from.blocks())
      to.queue().wait_for(from.queue().record_marker(b.device_idx), b.device_idx);
  }
  Redistribution(to.queue(), from, to).run();
}

void redistribute(const Queue& queue, const GridArray& from, const GridArray& to) {
  check_pair(queue, from, to);
  Redistribution(queue, from, to).run();
}

}  // namespace skein

// SPDX-License-Identifier: BSD-3-Clause
// Distributed and replicated arrays over a Communicator's members.
//
// Everything here is built on the Communicator's public calls, so it works the same over NCCL and
// MPI. Data between members of one rank moves by device copies (Array::set), never through the
// communicator (which refuses sends to oneself, and would stage through the host on MPI).
//
// Rules that keep the ranks in step:
//   - Every decision about which transfers happen is taken from the layout, which is the same on
//     every rank (checked when an array is made), so each send has its recv.
//   - Point-to-point transfers run inside group_start()/group_end(): NCCL needs that for pairs
//     within one rank, and the MPI backend then posts every transfer before waiting for any.
//   - An error only one rank can see (the root's host array has the wrong size, a bad queue on one
//     rank) is shared first with a small collective, so every rank raises instead of some ranks
//     waiting for a transfer that never comes.
//   - The root's host data moves rank by rank through a staging array on the root's first member,
//     so the root never holds more than one rank's rows on a device.
#include "skein/dist_array.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "skein/detail/agreement.hpp"
#include "skein/detail/communicator_access.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/host_collectives.hpp"
#include "dist_transport.hpp"
#include "ordering.hpp"
#include "skein/memory_pool.hpp"
#include "skein/error.hpp"

namespace skein {

// The pieces shared with the other distributed objects (dist_transport.hpp).
using namespace detail::transport;

// ---- RowSplit -------------------------------------------------------------------------------

RowSplit RowSplit::counts(std::vector<std::size_t> rows_per_member) {
  RowSplit s;
  s.kind_ = Kind::counts;
  s.counts_ = std::move(rows_per_member);
  return s;
}

RowSplit RowSplit::weights(std::vector<double> weights_per_member) {
  RowSplit s;
  s.kind_ = Kind::weights;
  s.weights_ = std::move(weights_per_member);
  return s;
}

// ---- BlockLayout ----------------------------------------------------------------------------

BlockLayout::BlockLayout(Shape shape, std::vector<std::size_t> members_per_rank,
                         const RowSplit& split, Halo halo)
    : shape_(std::move(shape)), members_per_rank_(std::move(members_per_rank)), halo_(halo) {
  const char* call = "BlockLayout";
  if (shape_.empty() || shape_.size() > 2) {
    detail::raise_in(SKEIN_HERE, call,
                     "Give a 1-D shape (rows) or a 2-D shape (rows, columns); fold further axes "
                     "into the columns.",
                     "shape {} has {} dimensions; a distributed array is 1-D or 2-D (blocks of "
                     "rows along the first axis)",
                     shape_text(shape_), shape_.size());
  }
  if (members_per_rank_.empty()) {
    detail::raise_in(SKEIN_HERE, call,
                     "Pass one member count per rank (Communicator::local_size() of each rank), "
                     "or use BlockLayout::over(comm, ...).",
                     "no ranks: members_per_rank is empty");
  }
  first_member_of_rank_.push_back(0);
  for (std::size_t r = 0; r < members_per_rank_.size(); ++r) {
    if (members_per_rank_[r] == 0) {
      detail::raise_in(SKEIN_HERE, call,
                       "Every rank of a communicator has at least one member; pass its "
                       "Communicator::local_size().",
                       "rank {} has no members (members_per_rank = [{}])", r,
                       fmt::join(members_per_rank_, ", "));
    }
    first_member_of_rank_.push_back(first_member_of_rank_.back() + members_per_rank_[r]);
  }
  const std::size_t M = first_member_of_rank_.back();
  const std::size_t rows = shape_[0];

  row_begin_.assign(M + 1, 0);
  switch (split.kind()) {
    case RowSplit::Kind::even: {
      const std::size_t base = rows / M, extra = rows % M;
      for (std::size_t m = 0; m < M; ++m)
        row_begin_[m + 1] = row_begin_[m] + base + (m < extra ? 1 : 0);
      break;
    }
    case RowSplit::Kind::counts: {
      const auto& counts = split.rows_per_member();
      if (counts.size() != M) {
        detail::raise_in(SKEIN_HERE, call, "Give one row count per member (Communicator::size()).",
                         "{} row counts were given for {} members", counts.size(), M);
      }
      for (std::size_t m = 0; m < M; ++m) row_begin_[m + 1] = row_begin_[m] + counts[m];
      if (row_begin_[M] != rows) {
        detail::raise_in(SKEIN_HERE, call,
                         "Make the row counts add up to the first axis of the shape.",
                         "the row counts [{}] add up to {}, but shape {} has {} rows",
                         fmt::join(counts, ", "), row_begin_[M], shape_text(shape_), rows);
      }
      break;
    }
    case RowSplit::Kind::weights: {
      const auto& w = split.weights_per_member();
      if (w.size() != M) {
        detail::raise_in(SKEIN_HERE, call, "Give one weight per member (Communicator::size()).",
                         "{} weights were given for {} members", w.size(), M);
      }
      double total = 0;
      for (std::size_t m = 0; m < M; ++m) {
        if (!std::isfinite(w[m]) || w[m] < 0) {
          detail::raise_in(SKEIN_HERE, call, "Weights must be finite and non-negative.",
                           "weight {} of member {} is not a finite non-negative number", w[m], m);
        }
        total += w[m];
      }
      if (!(total > 0)) {
        detail::raise_in(SKEIN_HERE, call, "Give at least one member a positive weight.",
                         "all {} weights are zero", M);
      }
      double prefix = 0;
      for (std::size_t m = 0; m < M; ++m) {
        prefix += w[m];
        const double end = std::floor(static_cast<double>(rows) * (prefix / total) + 0.5);
        const std::size_t e = m + 1 == M ? rows : std::min(rows, static_cast<std::size_t>(end));
        row_begin_[m + 1] = std::max(row_begin_[m], e);
      }
      break;
    }
  }

  // A halo is filled from one neighbour: every block some member takes halo rows from must be
  // at least as tall as the halo.
  if (halo_.width > 0) {
    std::vector<std::size_t> with_rows;
    for (std::size_t m = 0; m < M; ++m) {
      if (row_begin_[m + 1] > row_begin_[m]) with_rows.push_back(m);
    }
    if (with_rows.size() >= 2 || (halo_.periodic && !with_rows.empty())) {
      for (std::size_t m : with_rows) {
        const std::size_t n = row_begin_[m + 1] - row_begin_[m];
        if (n < halo_.width) {
          detail::raise_in(SKEIN_HERE, call,
                           "Use a halo no wider than the smallest block with rows, or split the "
                           "rows so that every block with rows has at least the halo's width.",
                           "halo width {} is wider than member {}'s block (rows [{}, {}), {} "
                           "row(s)), which a neighbour fills its halo from (shape {}, {} members)",
                           halo_.width, m, row_begin_[m], row_begin_[m + 1], n, shape_text(shape_),
                           M);
        }
      }
    }
  }
}

BlockLayout BlockLayout::over(Communicator& comm, Shape shape, const RowSplit& split, Halo halo) {
  return BlockLayout(std::move(shape), communicator_ranks(comm).members_per_rank, split, halo);
}

void BlockLayout::check_member(std::size_t member, const char* call) const {
  if (member >= members()) {
    detail::raise_in(SKEIN_HERE, call, "Pass a member (communicator rank) below members().",
                     "member {} does not exist (the layout has {} members)", member, members());
  }
}

void BlockLayout::check_rank(int rank, const char* call) const {
  if (rank < 0 || rank >= ranks()) {
    detail::raise_in(SKEIN_HERE, call,
                     "Pass an MPI rank of the communicator's group (0 to ranks() - 1).",
                     "rank {} does not exist (the layout has {} ranks)", rank, ranks());
  }
}

std::size_t BlockLayout::members_of_rank(int rank) const {
  check_rank(rank, "BlockLayout::members_of_rank");
  return members_per_rank_[static_cast<std::size_t>(rank)];
}

std::size_t BlockLayout::first_member_of_rank(int rank) const {
  check_rank(rank, "BlockLayout::first_member_of_rank");
  return first_member_of_rank_[static_cast<std::size_t>(rank)];
}

RowRange BlockLayout::member_rows(std::size_t member) const {
  check_member(member, "BlockLayout::member_rows");
  return {row_begin_[member], row_begin_[member + 1]};
}

RowRange BlockLayout::rank_rows(int rank) const {
  check_rank(rank, "BlockLayout::rank_rows");
  const auto r = static_cast<std::size_t>(rank);
  return {row_begin_[first_member_of_rank_[r]], row_begin_[first_member_of_rank_[r + 1]]};
}

Shape BlockLayout::block_shape(std::size_t member, bool with_halo) const {
  const std::size_t n = member_rows(member).size();
  Shape s = shape_;
  s[0] = n + (with_halo && n > 0 ? 2 * halo_.width : 0);
  return s;
}

MemberLocation BlockLayout::location(std::size_t member) const {
  check_member(member, "BlockLayout::location");
  const auto it =
      std::upper_bound(first_member_of_rank_.begin(), first_member_of_rank_.end(), member);
  const auto rank = static_cast<std::size_t>(it - first_member_of_rank_.begin()) - 1;
  return {member, static_cast<int>(rank), member - first_member_of_rank_[rank]};
}

std::size_t BlockLayout::member_of(int rank, std::size_t local_device) const {
  check_rank(rank, "BlockLayout::member_of");
  const auto r = static_cast<std::size_t>(rank);
  if (local_device >= members_per_rank_[r]) {
    detail::raise_in(SKEIN_HERE, "BlockLayout::member_of",
                     "Pass a local device below members_of_rank(rank).",
                     "rank {} has {} member(s); local device {} does not exist", rank,
                     members_per_rank_[r], local_device);
  }
  return first_member_of_rank_[r] + local_device;
}

MemberLocation BlockLayout::owner(std::size_t row) const {
  if (row >= rows()) {
    detail::raise_in(SKEIN_HERE, "BlockLayout::owner", "Pass a row below rows().",
                     "row {} is outside shape {}", row, shape_text(shape_));
  }
  // The last member whose block starts at or before `row`: empty blocks before it share its
  // start, so it is the one that owns rows.
  const auto it = std::upper_bound(row_begin_.begin(), row_begin_.end(), row);
  return location(static_cast<std::size_t>(it - row_begin_.begin()) - 1);
}

long long BlockLayout::prev_neighbour(std::size_t member) const {
  check_member(member, "BlockLayout::prev_neighbour");
  auto has_rows = [&](std::size_t m) { return row_begin_[m + 1] > row_begin_[m]; };
  if (!has_rows(member)) return -1;
  for (std::size_t m = member; m-- > 0;) {
    if (has_rows(m)) return static_cast<long long>(m);
  }
  if (!halo_.periodic) return -1;
  for (std::size_t m = members(); m-- > member;) {
    if (has_rows(m)) return static_cast<long long>(m);
  }
  return static_cast<long long>(member);  // unreachable: `member` itself has rows
}

long long BlockLayout::next_neighbour(std::size_t member) const {
  check_member(member, "BlockLayout::next_neighbour");
  auto has_rows = [&](std::size_t m) { return row_begin_[m + 1] > row_begin_[m]; };
  if (!has_rows(member)) return -1;
  for (std::size_t m = member + 1; m < members(); ++m) {
    if (has_rows(m)) return static_cast<long long>(m);
  }
  if (!halo_.periodic) return -1;
  for (std::size_t m = 0; m <= member; ++m) {
    if (has_rows(m)) return static_cast<long long>(m);
  }
  return static_cast<long long>(member);
}

std::string BlockLayout::describe() const {
  std::vector<std::string> blocks;
  for (std::size_t m = 0; m < members(); ++m) {
    blocks.push_back(fmt::format("[{}, {})", row_begin_[m], row_begin_[m + 1]));
  }
  return fmt::format(
      "shape {} over {} members on {} ranks (members per rank: {}); rows per "
      "member: {}; halo {}{}",
      shape_text(shape_), members(), ranks(), fmt::join(members_per_rank_, ", "),
      fmt::join(blocks, " "), halo_.width, halo_.periodic ? " (periodic)" : "");
}

bool operator==(const BlockLayout& a, const BlockLayout& b) {
  return a.shape_ == b.shape_ && a.members_per_rank_ == b.members_per_rank_ &&
         a.row_begin_ == b.row_begin_ && a.halo_ == b.halo_;
}

CommunicatorRanks communicator_ranks(Communicator& comm) {
  const auto info = exchange_member_info(comm, 0, false, "communicator_ranks");
  auto s = rank_structure(comm, info);
  return {std::move(s.members_per_rank), s.rank};
}

// ---- DistArray ------------------------------------------------------------------------------

DistArray::DistArray(Communicator& comm, BlockLayout layout, Dtype dtype)
    : DistArray(comm, Queue(comm.context()), std::move(layout), dtype) {}

DistArray::DistArray(Communicator& comm, Shape shape, Dtype dtype, const RowSplit& split, Halo halo)
    : DistArray(comm, BlockLayout::over(comm, std::move(shape), split, halo), dtype) {}

DistArray::DistArray(Communicator& comm, const Queue& queue, BlockLayout layout, Dtype dtype)
    : DistArray(comm, queue, std::move(layout), dtype, {}, false) {}

DistArray::DistArray(Communicator& comm, const Queue& queue, BlockLayout layout, Dtype dtype,
                     std::vector<Buffer> blocks)
    : DistArray(comm, queue, std::move(layout), dtype, std::move(blocks), true) {}

DistArray::DistArray(Communicator& comm, const Queue& queue, BlockLayout layout, Dtype dtype,
                     std::vector<Buffer> foreign, bool use_foreign)
    : comm_(std::make_shared<Communicator>(detail::CommunicatorAccess::share(comm))),
      queue_(queue),
      layout_(std::move(layout)),
      dtype_(dtype) {
  const std::string call = "DistArray";
  // What this rank alone can see is wrong: (what, hint), raised once every rank knows.
  std::optional<std::pair<std::string, std::string>> problem;
  if (auto q = queue_problem(comm, queue); !q.empty()) {
    problem = {q, kQueueHint};
  } else if (layout_.members() != comm.size()) {
    problem = {fmt::format("the layout has {} members, but the communicator has {} ({})",
                           layout_.members(), comm.size(), layout_.describe()),
               "Make the layout over this communicator: BlockLayout::over(comm, ...)."};
  } else if (use_foreign && foreign.size() != comm.local_size()) {
    problem = {fmt::format("{} block buffer(s) were given for this rank's {} member(s)",
                           foreign.size(), comm.local_size()),
               "Pass one Buffer per local member, in local order."};
  } else if (use_foreign) {
    for (std::size_t l = 0; l < foreign.size() && !problem; ++l) {
      const auto member = static_cast<std::size_t>(comm.rank_of(l));
      const std::size_t need = shape_size(layout_.block_shape(member, true)) * itemsize(dtype_);
      if (foreign[l].size() > 0 && !(foreign[l].context() == comm.context())) {
        problem = {fmt::format("block buffer {} belongs to another context", l),
                   "Make the buffers in the communicator's context."};
      } else if (need > 0 && foreign[l].device_idx() != comm.device_idx(l)) {
        problem = {fmt::format("block buffer {} is on device {}, but local member {} is device {}",
                               l, foreign[l].device_idx(), l, comm.device_idx(l)),
                   "Give each local member a buffer on its own device (Communicator::device_idx)."};
      } else if (foreign[l].size() < need) {
        problem = {
            fmt::format("block buffer {} has {} bytes; member {}'s block with its halo rows "
                        "({} x {}) needs {}",
                        l, foreign[l].size(), member,
                        fmt::join(layout_.block_shape(member, true), " x "), name(dtype_), need),
            "Allocate layout.block_shape(member, true) elements for each block."};
      }
    }
  }

  Fingerprint fp;
  fp.add(static_cast<std::uint64_t>(dtype_));
  fp.add(layout_.halo().width);
  fp.add(layout_.halo().periodic ? 1 : 0);
  fp.add(layout_.shape().size());
  for (auto d : layout_.shape()) fp.add(d);
  fp.add(layout_.members_per_rank().size());
  for (auto n : layout_.members_per_rank()) fp.add(n);
  for (std::size_t m = 0; m < layout_.members(); ++m) fp.add(layout_.member_rows(m).end);

  const auto info = exchange_member_info(comm, fp.value(), problem.has_value(), call.c_str());
  const auto ranks = rank_structure(comm, info);
  rank_ = ranks.rank;
  raise_if_any_problem(info, ranks, problem_info(problem, rank_, call, SKEIN_HERE), call,
                       "DistArray");
  raise_if_fingerprints_differ(
      info, ranks, call, fmt::format("dtype {} and layout {}", name(dtype_), layout_.describe()),
      "Every rank must pass the same layout (shape, split, halo) and dtype.");
  if (ranks.members_per_rank != layout_.members_per_rank()) {
    detail::raise_in(SKEIN_HERE, call,
                     "Make the layout over this communicator: BlockLayout::over(comm, ...), or "
                     "pass communicator_ranks(comm).members_per_rank.",
                     "rank {}: the layout has members per rank ({}), but the communicator's ranks "
                     "have ({})",
                     rank_, fmt::join(layout_.members_per_rank(), ", "),
                     fmt::join(ranks.members_per_rank, ", "));
  }

  const std::size_t h = layout_.halo().width;
  for (std::size_t l = 0; l < comm.local_size(); ++l) {
    const auto member = static_cast<std::size_t>(comm.rank_of(l));
    const std::size_t device_idx = comm.device_idx(l);
    const RowRange rows = layout_.member_rows(member);
    const Shape block_shape = layout_.block_shape(member, true);
    const std::size_t block_bytes = shape_size(block_shape) * itemsize(dtype_);
    // A member without rows needs no memory: its (empty) block is Skein's, whatever was given.
    Array with_halo =
        use_foreign && block_bytes > 0
            ? Array(queue_, foreign[l].get_sub_region(0, block_bytes), block_shape, dtype_)
            : Array::zeros(queue_, block_shape, dtype_, device_idx, plain_blocks(queue_.context()));
    Array interior = rows.empty() ? with_halo : with_halo.slice(h, h + rows.size());
    blocks_.push_back(
        LocalBlock{l, member, device_idx, rows, std::move(interior), std::move(with_halo)});
  }
}

const LocalBlock& DistArray::block(std::size_t local_device) const {
  if (local_device >= blocks_.size()) {
    detail::raise_in(SKEIN_HERE, "DistArray::block", "Pass a local device below local_size().",
                     "local device {} does not exist (this rank has {} member(s))", local_device,
                     blocks_.size());
  }
  return blocks_[local_device];
}

MultiDevice<Array> DistArray::local_arrays(bool with_halo) const {
  MultiDevice<Array> out;
  for (const auto& b : blocks_) out.set(b.device_idx, with_halo ? b.with_halo : b.interior);
  return out;
}

void DistArray::for_each_local(const std::function<void(const LocalBlock&)>& f) const {
  for (const auto& b : blocks_) f(b);
}

void DistArray::check_host_type(Dtype host, const char* call) const {
  if (host != dtype_) {
    detail::raise_in(SKEIN_HERE, call, "Use host data of the array's dtype, or convert first.",
                     "host type {} does not match the distributed array's dtype {}", name(host),
                     name(dtype_));
  }
}

void DistArray::check_root_rank(int root_rank, const char* call) const {
  if (root_rank < 0 || root_rank >= layout_.ranks()) {
    detail::raise_in(SKEIN_HERE, call,
                     "Pass an MPI rank of the communicator's group (0 to ranks() - 1) as the root.",
                     "root rank {} does not exist (the communicator has {} ranks)", root_rank,
                     layout_.ranks());
  }
}

void DistArray::scatter(std::span<const std::byte> host, int root_rank) const {
  const char* call = "DistArray::scatter";
  check_root_rank(root_rank, call);
  const std::size_t root_member = layout_.first_member_of_rank(root_rank);
  const bool is_root = rank_ == root_rank;
  const bool ok = !is_root || host.size() == nbytes();
  if (!root_status(*comm_, queue_, ok, static_cast<int>(root_member), call)) {
    if (is_root) {
      detail::raise_in(
          SKEIN_HERE, call,
          "On the root rank, pass the whole global array (size() elements, row-major).",
          "rank {} (the root): the host array has {} bytes, but the distributed array "
          "of shape {} and dtype {} has {}",
          rank_, host.size(), shape_text(shape()), name(dtype_), nbytes());
    }
    detail::raise_in(SKEIN_HERE, call, "See the error reported on the root rank.",
                     "rank {}: the root rank {} passed a host array of the wrong size; nothing was "
                     "scattered",
                     rank_, root_rank);
  }
  const std::size_t row_bytes = layout_.row_size() * itemsize(dtype_);
  if (is_root) {
    for (const auto& b : blocks_) {
      if (!b.rows.empty())
        b.interior.set(host.subspan(b.rows.begin * row_bytes, b.rows.size() * row_bytes));
    }
    // Rank by rank: stage its rows on the root's first member and send each block on.
    for (int r = 0; r < layout_.ranks(); ++r) {
      const RowRange rows = layout_.rank_rows(r);
      if (r == root_rank || rows.empty()) continue;
      const Array staging = Array::empty(queue_, {rows.size() * layout_.row_size()}, dtype_,
                                         blocks_[0].device_idx, temporaries(queue_));
      staging.set(host.subspan(rows.begin * row_bytes, rows.size() * row_bytes));
      in_group(*comm_, [&] {
        for (std::size_t l = 0; l < layout_.members_of_rank(r); ++l) {
          const std::size_t m = layout_.member_of(r, l);
          const RowRange mr = layout_.member_rows(m);
          if (mr.empty()) continue;
          comm_->send(queue_, 0,
                      staging.view((mr.begin - rows.begin) * layout_.row_size(),
                                   {mr.size() * layout_.row_size()}),
                      static_cast<int>(m));
        }
      });
      // The staging array is freed next: the sends must have read it.
      queue_.synchronize(blocks_[0].device_idx);
    }
  } else if (!rank_rows().empty()) {
    in_group(*comm_, [&] {
      for (const auto& b : blocks_) {
        if (!b.rows.empty())
          comm_->recv(queue_, b.local_device, b.interior, static_cast<int>(root_member));
      }
    });
  }
}

void DistArray::scatter_local(std::span<const std::byte> host_rows) const {
  const RowRange rows = rank_rows();
  const std::size_t row_bytes = layout_.row_size() * itemsize(dtype_);
  if (host_rows.size() != rows.size() * row_bytes) {
    detail::raise_in(SKEIN_HERE, "DistArray::scatter_local",
                     "Pass this rank's rows only (rank_rows(): all its blocks, in order).",
                     "rank {}: the host data has {} bytes, but this rank's rows [{}, {}) of shape "
                     "{} ({}) have {}",
                     rank_, host_rows.size(), rows.begin, rows.end, shape_text(shape()),
                     name(dtype_), rows.size() * row_bytes);
  }
  for (const auto& b : blocks_) {
    if (b.rows.empty()) continue;
    b.interior.set(
        host_rows.subspan((b.rows.begin - rows.begin) * row_bytes, b.rows.size() * row_bytes));
  }
}

void DistArray::get_rows(RowRange rows, std::span<std::byte> dest) const {
  const std::size_t row_bytes = layout_.row_size() * itemsize(dtype_);
  for (const auto& b : blocks_) {
    if (b.rows.empty()) continue;
    b.interior.get(
        dest.subspan((b.rows.begin - rows.begin) * row_bytes, b.rows.size() * row_bytes));
  }
}

std::vector<std::byte> DistArray::gather_local_bytes() const {
  std::vector<std::byte> out(rank_rows().size() * layout_.row_size() * itemsize(dtype_));
  get_rows(rank_rows(), out);
  return out;
}

std::vector<std::byte> DistArray::gather_bytes(int root_rank) const {
  check_root_rank(root_rank, "DistArray::gather");
  std::vector<std::byte> out(rank_ == root_rank ? nbytes() : 0);
  gather_into(out, root_rank);
  return out;
}

void DistArray::gather_into(std::span<std::byte> dest, int root_rank) const {
  const std::size_t root_member = layout_.first_member_of_rank(root_rank);
  const std::size_t row_bytes = layout_.row_size() * itemsize(dtype_);
  if (rank_ != root_rank) {
    if (rank_rows().empty()) return;
    in_group(*comm_, [&] {
      for (const auto& b : blocks_) {
        if (!b.rows.empty())
          comm_->send(queue_, b.local_device, b.interior, static_cast<int>(root_member));
      }
    });
    return;
  }
  get_rows({0, layout_.rows()}, dest);  // the root's own blocks
  for (int r = 0; r < layout_.ranks(); ++r) {
    const RowRange rows = layout_.rank_rows(r);
    if (r == root_rank || rows.empty()) continue;
    const Array staging = Array::empty(queue_, {rows.size() * layout_.row_size()}, dtype_,
                                       blocks_[0].device_idx, temporaries(queue_));
    in_group(*comm_, [&] {
      for (std::size_t l = 0; l < layout_.members_of_rank(r); ++l) {
        const std::size_t m = layout_.member_of(r, l);
        const RowRange mr = layout_.member_rows(m);
        if (mr.empty()) continue;
        comm_->recv(queue_, 0,
                    staging.view((mr.begin - rows.begin) * layout_.row_size(),
                                 {mr.size() * layout_.row_size()}),
                    static_cast<int>(m));
      }
    });
    staging.get(dest.subspan(rows.begin * row_bytes, rows.size() * row_bytes));
  }
  // A receive the watchdog aborted lets the reads return what was never written.
  detail::require_usable(*comm_, "DistArray::gather");
}

std::vector<std::byte> DistArray::all_gather_bytes() const {
  std::vector<std::byte> out(nbytes());
  all_gather_into(out);
  return out;
}

void DistArray::all_gather_into(std::span<std::byte> dest) const {
  if (size() == 0) return;
  // Communicator::all_gather moves equal counts: uneven blocks travel padded to the tallest.
  const std::size_t M = layout_.members();
  const std::size_t rs = layout_.row_size();
  std::size_t tallest = 0;
  bool even = true;
  for (std::size_t m = 0; m < M; ++m) {
    tallest = std::max(tallest, layout_.member_rows(m).size());
    even = even && layout_.member_rows(m).size() == layout_.member_rows(0).size();
  }
  std::vector<Array> send, recv;
  for (const auto& b : blocks_) {
    if (even) {
      send.push_back(b.interior.reshape({b.rows.size() * rs}));
    } else {
      Array padded =
          Array::empty(queue_, {tallest * rs}, dtype_, b.device_idx, temporaries(queue_));
      if (!b.rows.empty())
        padded.view(0, {b.rows.size() * rs}).set(b.interior.reshape({b.rows.size() * rs}));
      send.push_back(std::move(padded));
    }
    recv.push_back(
        Array::empty(queue_, {M * tallest * rs}, dtype_, b.device_idx, temporaries(queue_)));
  }
  comm_->all_gather(queue_, send, recv);
  const std::size_t row_bytes = rs * itemsize(dtype_);
  for (std::size_t m = 0; m < M; ++m) {
    const RowRange mr = layout_.member_rows(m);
    if (mr.empty()) continue;
    recv[0]
        .view(m * tallest * rs, {mr.size() * rs})
        .get(dest.subspan(mr.begin * row_bytes, mr.size() * row_bytes));
  }
  // The temporaries of the other members are freed on return: NCCL must be done with them.
  for (const auto& b : blocks_) queue_.synchronize(b.device_idx);
  // An all_gather the watchdog aborted lets the reads return what was never written.
  detail::require_usable(*comm_, "DistArray::all_gather_into");
}

void DistArray::exchange_halos() const { exchange_halos(queue_); }

void DistArray::exchange_halos(const Queue& queue) const {
  const std::size_t h = layout_.halo().width;
  if (h == 0) return;
  if (!(queue == queue_)) {
    if (!(queue.context() == queue_.context())) {
      detail::raise_in(SKEIN_HERE, "DistArray::exchange_halos",
                       "Give a queue of the array's context (Queue(array.queue().context(), "
                       "array.queue().device_idxs())).",
                       "the queue is of another context than the array (rank {})", rank_);
    }
    for (const auto& b : blocks_) {
      if (!queue.has_device(b.device_idx)) {
        detail::raise_in(SKEIN_HERE, "DistArray::exchange_halos",
                         "Give a queue with every device of the array's queue.",
                         "the queue has no device {}, where local block {} lives (rank {})",
                         b.device_idx, b.local_device, rank_);
      }
    }
  }
  // Halo and edge rows of a block, as views of its storage (interior rows start at row h), used
  // on `queue`.
  auto on_queue = [&](const Array& a) {
    return queue == queue_ ? a
                           : Array(queue, a.data(), a.shape(), a.dtype(), a.strides(), a.offset());
  };
  auto top_halo = [&](const LocalBlock& b) { return on_queue(b.with_halo.slice(0, h)); };
  auto bottom_halo = [&](const LocalBlock& b) {
    return on_queue(b.with_halo.slice(h + b.rows.size(), 2 * h + b.rows.size()));
  };
  auto first_rows = [&](const LocalBlock& b) { return on_queue(b.with_halo.slice(h, 2 * h)); };
  auto last_rows = [&](const LocalBlock& b) {
    return on_queue(b.with_halo.slice(b.rows.size(), h + b.rows.size()));
  };
  const std::size_t my_first = layout_.first_member_of_rank(rank_);
  auto local_of = [&](long long member) -> const LocalBlock* {
    if (member < 0) return nullptr;
    const auto m = static_cast<std::size_t>(member);
    if (m < my_first || m >= my_first + blocks_.size()) return nullptr;
    return &blocks_[m - my_first];
  };

  // Neighbours on this rank: device copies (also a periodic block that is its own neighbour),
  // except, under NCCL, halos below kSendRecvInsideRankBelow bytes from another device, which go by
  // send/recv in the group below (send_recv_inside_rank, dist_transport.hpp).
  const bool small_by_nccl = send_recv_inside_rank(
      comm_->backend(), h * layout_.row_size() * itemsize(dtype_), queue == queue_);
  auto by_send_recv = [&](const LocalBlock* from, const LocalBlock& to) {
    return from != nullptr && small_by_nccl && from->device_idx != to.device_idx;
  };
  bool grouped = false;
  for (const auto& b : blocks_) {
    if (b.rows.empty()) continue;
    const long long p = layout_.prev_neighbour(b.member), n = layout_.next_neighbour(b.member);
    const LocalBlock *pb = local_of(p), *nb = local_of(n);
    if (pb != nullptr && !by_send_recv(pb, b)) top_halo(b).set(last_rows(*pb));
    if (nb != nullptr && !by_send_recv(nb, b)) bottom_halo(b).set(first_rows(*nb));
    grouped = grouped || (p >= 0 && pb == nullptr) || (n >= 0 && nb == nullptr) ||
              by_send_recv(pb, b) || by_send_recv(nb, b);
  }
  if (!grouped) return;

  // Neighbours on other ranks. Two members can exchange two messages each way (periodic, two
  // blocks with rows); the backends match a pair's messages in the order they were issued, so
  // each side issues them in one order: a block's first rows (to its previous neighbour's bottom
  // halo) before its last rows (to its next neighbour's top halo). Those on this rank by send/recv:
  // each halo's send next to its recv, top halo then bottom, so that the sends from one member to
  // another and the recvs there are in one order too.
  in_group(*comm_, [&] {
    for (const auto& b : blocks_) {
      if (b.rows.empty()) continue;
      const long long p = layout_.prev_neighbour(b.member), n = layout_.next_neighbour(b.member);
      const LocalBlock *pb = local_of(p), *nb = local_of(n);
      const bool p_remote = p >= 0 && pb == nullptr, n_remote = n >= 0 && nb == nullptr;
      if (p_remote) comm_->send(queue, b.local_device, first_rows(b), static_cast<int>(p));
      if (n_remote) comm_->send(queue, b.local_device, last_rows(b), static_cast<int>(n));
      if (n_remote) comm_->recv(queue, b.local_device, bottom_halo(b), static_cast<int>(n));
      if (p_remote) comm_->recv(queue, b.local_device, top_halo(b), static_cast<int>(p));
      if (by_send_recv(pb, b)) {
        comm_->send(queue, pb->local_device, last_rows(*pb), static_cast<int>(b.member));
        comm_->recv(queue, b.local_device, top_halo(b), static_cast<int>(pb->member));
      }
      if (by_send_recv(nb, b)) {
        comm_->send(queue, nb->local_device, first_rows(*nb), static_cast<int>(b.member));
        comm_->recv(queue, b.local_device, bottom_halo(b), static_cast<int>(nb->member));
      }
    }
  });
}

void DistArray::set(const DistArray& source) const {
  if (!(source.layout_ == layout_) || source.dtype_ != dtype_) {
    detail::raise_in(SKEIN_HERE, "DistArray::set",
                     "Copy between distributed arrays made with the same layout and dtype.",
                     "the source has dtype {} and layout {}; this array has dtype {} and layout {}",
                     name(source.dtype_), source.layout_.describe(), name(dtype_),
                     layout_.describe());
  }
  if (source.blocks_.size() != blocks_.size() || !(source.queue_.context() == queue_.context())) {
    detail::raise_in(SKEIN_HERE, "DistArray::set", "Copy between arrays of the same communicator.",
                     "the source's blocks are in another context or on other devices");
  }
  for (std::size_t l = 0; l < blocks_.size(); ++l) {
    if (source.blocks_[l].device_idx != blocks_[l].device_idx) {
      detail::raise_in(SKEIN_HERE, "DistArray::set",
                       "Copy between arrays of the same communicator.",
                       "local block {} of the source is on context device {}, this one's on {}", l,
                       source.blocks_[l].device_idx, blocks_[l].device_idx);
    }
  }
  // The copies run on this array's queue; a source on another queue is joined as skein::dist's
  // operations join their operands: the copies start after the work already on the source's
  // queue, and the source's later work after the copies.
  std::vector<std::size_t> devices;
  for (const auto& b : blocks_) devices.push_back(b.device_idx);
  detail::Ordering order(queue_, std::move(devices));
  order.join(source.queue_);
  for (std::size_t l = 0; l < blocks_.size(); ++l) {
    if (!blocks_[l].rows.empty()) blocks_[l].interior.set(source.blocks_[l].interior);
  }
  order.release();
}

void DistArray::fill_zero() const {
  for (const auto& b : blocks_) b.with_halo.fill_zero();
}

// ---- ReplicatedArray ------------------------------------------------------------------------

ReplicatedArray::ReplicatedArray(Communicator& comm, Shape shape, Dtype dtype)
    : ReplicatedArray(comm, Queue(comm.context()), std::move(shape), dtype) {}

ReplicatedArray::ReplicatedArray(Communicator& comm, const Queue& queue, Shape shape, Dtype dtype)
    : comm_(std::make_shared<Communicator>(detail::CommunicatorAccess::share(comm))),
      queue_(queue),
      shape_(std::move(shape)),
      dtype_(dtype) {
  const std::string call = "ReplicatedArray";
  std::optional<std::pair<std::string, std::string>> problem;
  if (auto q = queue_problem(comm, queue); !q.empty()) problem = {q, kQueueHint};
  Fingerprint fp;
  fp.add(static_cast<std::uint64_t>(dtype_));
  fp.add(shape_.size());
  for (auto d : shape_) fp.add(d);
  const auto info = exchange_member_info(comm, fp.value(), problem.has_value(), call.c_str());
  const auto ranks = rank_structure(comm, info);
  rank_ = ranks.rank;
  members_per_rank_ = ranks.members_per_rank;
  raise_if_any_problem(info, ranks, problem_info(problem, rank_, call, SKEIN_HERE), call,
                       "ReplicatedArray");
  raise_if_fingerprints_differ(
      info, ranks, call, fmt::format("shape {} and dtype {}", shape_text(shape_), name(dtype_)),
      "Every rank must pass the same shape and dtype.");
  for (std::size_t l = 0; l < comm.local_size(); ++l) {
    locals_.push_back(
        Array::zeros(queue_, shape_, dtype_, comm.device_idx(l), plain_blocks(queue_.context())));
  }
}

void ReplicatedArray::check_host_type(Dtype host, const char* call) const {
  if (host != dtype_) {
    detail::raise_in(SKEIN_HERE, call, "Use host data of the array's dtype, or convert first.",
                     "host type {} does not match the replicated array's dtype {}", name(host),
                     name(dtype_));
  }
}

Array ReplicatedArray::local(std::size_t local_device) const {
  if (local_device >= locals_.size()) {
    detail::raise_in(SKEIN_HERE, "ReplicatedArray::local",
                     "Pass a local device below local_size().",
                     "local device {} does not exist (this rank has {} member(s))", local_device,
                     locals_.size());
  }
  return locals_[local_device];
}

MultiDevice<Array> ReplicatedArray::local_arrays() const {
  MultiDevice<Array> out;
  for (const auto& a : locals_) out.set(a.device_idx(), a);
  return out;
}

void ReplicatedArray::set(std::span<const std::byte> host) const {
  if (host.size() != nbytes()) {
    detail::raise_in(SKEIN_HERE, "ReplicatedArray::set", "Pass the whole array (size() elements).",
                     "rank {}: the host array has {} bytes, but the replicated array of shape {} "
                     "and dtype {} has {}",
                     rank_, host.size(), shape_text(shape_), name(dtype_), nbytes());
  }
  for (const auto& a : locals_) a.set(host);
}

void ReplicatedArray::broadcast_from_host(std::span<const std::byte> host, int root_rank) const {
  const char* call = "ReplicatedArray::broadcast_from_host";
  const int ranks = static_cast<int>(members_per_rank_.size());
  if (root_rank < 0 || root_rank >= ranks) {
    detail::raise_in(SKEIN_HERE, call,
                     "Pass an MPI rank of the communicator's group (0 to ranks - 1) as the root.",
                     "root rank {} does not exist (the communicator has {} ranks)", root_rank,
                     ranks);
  }
  std::size_t root_member = 0;
  for (int r = 0; r < root_rank; ++r) root_member += members_per_rank_[static_cast<std::size_t>(r)];
  const bool is_root = rank_ == root_rank;
  const bool ok = !is_root || host.size() == nbytes();
  if (!root_status(*comm_, queue_, ok, static_cast<int>(root_member), call)) {
    if (is_root) {
      detail::raise_in(SKEIN_HERE, call,
                       "On the root rank, pass the whole array (size() elements).",
                       "rank {} (the root): the host array has {} bytes, but the replicated array "
                       "of shape {} and dtype {} has {}",
                       rank_, host.size(), shape_text(shape_), name(dtype_), nbytes());
    }
    detail::raise_in(SKEIN_HERE, call, "See the error reported on the root rank.",
                     "rank {}: the root rank {} passed a host array of the wrong size; nothing was "
                     "broadcast",
                     rank_, root_rank);
  }
  if (nbytes() == 0) return;
  if (is_root) locals_[0].set(host);
  comm_->broadcast(queue_, locals_, static_cast<int>(root_member));
}

void ReplicatedArray::broadcast(int root_member) const {
  if (root_member < 0 || static_cast<std::size_t>(root_member) >= comm_->size()) {
    detail::raise_in(SKEIN_HERE, "ReplicatedArray::broadcast",
                     "Pass a member (communicator rank, 0 to Communicator::size() - 1).",
                     "root member {} does not exist (the communicator has {} members)", root_member,
                     comm_->size());
  }
  if (nbytes() == 0) return;
  comm_->broadcast(queue_, locals_, root_member);
}

std::vector<std::byte> ReplicatedArray::get_bytes(std::size_t local_device) const {
  const Array a = local(local_device);
  std::vector<std::byte> out(a.nbytes());
  a.get(out);
  return out;
}

}  // namespace skein

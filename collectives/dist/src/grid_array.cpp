// SPDX-License-Identifier: BSD-3-Clause
// GridArray: blocks of a process grid on the members' devices; scatter and gather.
//
// As DistArray (dist_array.cpp): every decision about transfers is taken from the layout, the
// same on every rank (checked when the array is made); point-to-point transfers run in groups;
// errors only one rank sees are shared first. Blocks travel contiguous: the points of a block are
// packed from (or unpacked into) its block with the halo by the box copy kernel (grid_copy.hpp),
// and the root's host data moves rank by rank through a staging array on its first member.
#include "skein/grid_array.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>

#include "dist_transport.hpp"
#include "grid_copy.hpp"
#include "grid_halo_cache.hpp"
#include "skein/detail/communicator_access.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/host_collectives.hpp"
#include "skein/error.hpp"

namespace skein {

using namespace detail::transport;

namespace {

std::uint64_t grid_fingerprint(const GridLayout& layout, Dtype dtype) {
  Fingerprint fp;
  fp.add(static_cast<std::uint64_t>(dtype));
  fp.add(layout.ndim());
  fp.add(layout.components());
  fp.add(static_cast<std::uint64_t>(layout.stencil()));
  for (std::size_t a = 0; a < layout.ndim(); ++a) {
    fp.add(layout.shape()[a]);
    fp.add(layout.halo(a));
    for (auto s : layout.sizes(a)) fp.add(s);
    for (const Boundary& b : {layout.lower(a), layout.upper(a)}) {
      fp.add(static_cast<std::uint64_t>(b.kind));
      fp.add(std::bit_cast<std::uint64_t>(b.value));
    }
  }
  fp.add(layout.members_per_rank().size());
  for (auto n : layout.members_per_rank()) fp.add(n);
  return fp.value();
}

// Copies a member's block between the global host array (C order) and a contiguous host block.
void host_block_copy(const GridLayout& layout, std::size_t member, std::size_t itemsize,
                     std::span<const std::byte> from, std::span<std::byte> to, bool to_global) {
  const GridBlock b = layout.block(member);
  if (b.empty()) return;
  const std::size_t n = layout.ndim();
  std::array<std::size_t, 3> off{0, 0, 0}, ext{1, 1, 1}, dim{1, 1, 1};
  for (std::size_t a = 0; a < n; ++a) {
    off[3 - n + a] = b.offset[a];
    ext[3 - n + a] = b.extent[a];
    dim[3 - n + a] = layout.shape()[a];
  }
  const std::size_t point = layout.components() * itemsize;
  const std::size_t run = ext[2] * point;
  std::size_t k = 0;
  for (std::size_t i0 = 0; i0 < ext[0]; ++i0) {
    for (std::size_t i1 = 0; i1 < ext[1]; ++i1, k += run) {
      const std::size_t g = (((off[0] + i0) * dim[1] + off[1] + i1) * dim[2] + off[2]) * point;
      if (to_global) {
        std::memcpy(to.data() + g, from.data() + k, run);
      } else {
        std::memcpy(to.data() + k, from.data() + g, run);
      }
    }
  }
}

// What is wrong with the application's block buffers on this rank, if anything: (what, hint).
std::optional<std::pair<std::string, std::string>> foreign_block_problem(
    const Communicator& comm, const GridLayout& layout, Dtype dtype,
    const std::vector<Buffer>& foreign) {
  if (foreign.size() != comm.local_size()) {
    return std::pair{fmt::format("{} block buffer(s) were given for this rank's {} member(s)",
                                 foreign.size(), comm.local_size()),
                     std::string("Pass one Buffer per local member, in local order.")};
  }
  for (std::size_t l = 0; l < foreign.size(); ++l) {
    const auto member = static_cast<std::size_t>(comm.rank_of(l));
    const Shape shape = layout.block_shape(member, true);
    const std::size_t need = shape_size(shape) * itemsize(dtype);
    if (need == 0) continue;
    if (!(foreign[l].context() == comm.context())) {
      return std::pair{fmt::format("block buffer {} belongs to another context", l),
                       std::string("Make the buffers in the communicator's context.")};
    }
    if (foreign[l].device_idx() != comm.device_idx(l)) {
      return std::pair{
          fmt::format("block buffer {} is on device {}, but local member {} is device {}", l,
                      foreign[l].device_idx(), l, comm.device_idx(l)),
          std::string(
              "Give each local member a buffer on its own device (Communicator::device_idx).")};
    }
    if (foreign[l].size() < need) {
      return std::pair{
          fmt::format("block buffer {} has {} bytes; member {}'s block with its halo ({} x {}) "
                      "needs {}",
                      l, foreign[l].size(), member, fmt::join(shape, " x "), name(dtype), need),
          std::string("Allocate layout.block_shape(member, true) elements for each block.")};
    }
  }
  return std::nullopt;
}

std::size_t block_bytes(const GridLayout& layout, std::size_t member, Dtype dtype) {
  return layout.block(member).points() * layout.components() * itemsize(dtype);
}

}  // namespace

GridArray::GridArray(Communicator& comm, GridLayout layout, Dtype dtype)
    : GridArray(comm, Queue(comm.context()), std::move(layout), dtype) {}

GridArray::GridArray(Communicator& comm, const Queue& queue, GridLayout layout, Dtype dtype)
    : GridArray(comm, queue, std::move(layout), dtype, {}, false) {}

GridArray::GridArray(Communicator& comm, const Queue& queue, GridLayout layout, Dtype dtype,
                     std::vector<Buffer> blocks)
    : GridArray(comm, queue, std::move(layout), dtype, std::move(blocks), true) {}

GridArray::GridArray(Communicator& comm, const Queue& queue, GridLayout layout, Dtype dtype,
                     std::vector<Buffer> foreign, bool use_foreign)
    : comm_(std::make_shared<Communicator>(detail::CommunicatorAccess::share(comm))),
      queue_(queue),
      layout_(std::move(layout)),
      dtype_(dtype),
      halo_cache_(std::make_shared<detail::grid::HaloCache>()) {
  const std::string call = "GridArray";
  std::optional<std::pair<std::string, std::string>> problem;
  if (auto q = queue_problem(comm, queue); !q.empty()) {
    problem = {q, kQueueHint};
  } else if (layout_.members() != comm.size()) {
    problem = {fmt::format("the layout has {} members, but the communicator has {} ({})",
                           layout_.members(), comm.size(), layout_.describe()),
               "Make the layout over this communicator: GridLayout::over(comm, ...)."};
  } else if (use_foreign) {
    problem = foreign_block_problem(comm, layout_, dtype_, foreign);
  }
  const auto info = exchange_member_info(comm, grid_fingerprint(layout_, dtype_),
                                         problem.has_value(), call.c_str());
  const auto ranks = rank_structure(comm, info);
  rank_ = ranks.rank;
  raise_if_any_problem(info, ranks, problem_info(problem, rank_, call, SKEIN_HERE), call,
                       "GridArray");
  raise_if_fingerprints_differ(
      info, ranks, call, fmt::format("dtype {} and layout {}", name(dtype_), layout_.describe()),
      "Every rank must pass the same layout (shape, grid, sizes, halo, boundaries) and dtype.");
  if (ranks.members_per_rank != layout_.members_per_rank()) {
    detail::raise_in(SKEIN_HERE, call,
                     "Make the layout over this communicator: GridLayout::over(comm, ...), or pass "
                     "communicator_ranks(comm).members_per_rank.",
                     "rank {}: the layout has members per rank ({}), but the communicator's ranks "
                     "have ({})",
                     rank_, fmt::join(layout_.members_per_rank(), ", "),
                     fmt::join(ranks.members_per_rank, ", "));
  }
  for (std::size_t l = 0; l < comm.local_size(); ++l) {
    const auto member = static_cast<std::size_t>(comm.rank_of(l));
    const std::size_t device_idx = comm.device_idx(l);
    const Shape with_halo_shape = layout_.block_shape(member, true);
    const std::size_t with_halo_bytes = shape_size(with_halo_shape) * itemsize(dtype_);
    // A member without points needs no memory: its (empty) block is Skein's, whatever was given.
    Array with_halo =
        use_foreign && with_halo_bytes > 0
            ? Array(queue_, foreign[l].get_sub_region(0, with_halo_bytes), with_halo_shape, dtype_)
            : Array::zeros(queue_, with_halo_shape, dtype_, device_idx,
                           plain_blocks(queue_.context()));
    Array interior = with_halo;
    const GridBlock b = layout_.block(member);
    if (!b.empty()) {
      const auto box = detail::grid::interior_box(layout_, member, with_halo);
      Strides strides;
      for (std::size_t a = 0; a < with_halo_shape.size(); ++a) {
        const std::size_t k = a < layout_.ndim() ? detail::grid::slot(layout_.ndim(), a) : 3;
        strides.push_back(static_cast<std::size_t>(box.strides[k]) * itemsize(dtype_));
      }
      interior = with_halo.view(static_cast<std::size_t>(box.offset), layout_.block_shape(member),
                                strides);
    }
    blocks_.push_back(
        LocalGridBlock{l, member, device_idx, b, std::move(with_halo), std::move(interior)});
  }
}

const LocalGridBlock& GridArray::block(std::size_t local_device) const {
  if (local_device >= blocks_.size()) {
    detail::raise_in(SKEIN_HERE, "GridArray::block", "Pass a local device below local_size().",
                     "local device {} does not exist (this rank has {} member(s))", local_device,
                     blocks_.size());
  }
  return blocks_[local_device];
}

MultiDevice<Array> GridArray::local_arrays(bool with_halo) const {
  MultiDevice<Array> out;
  for (const auto& b : blocks_) out.set(b.device_idx, with_halo ? b.with_halo : b.interior);
  return out;
}

void GridArray::check_host_type(Dtype host, const char* call) const {
  if (host != dtype_) {
    detail::raise_in(SKEIN_HERE, call, "Use host data of the array's dtype, or convert first.",
                     "host type {} does not match the grid array's dtype {}", name(host),
                     name(dtype_));
  }
}

void GridArray::check_root_rank(int root_rank, const char* call) const {
  if (root_rank < 0 || root_rank >= layout_.ranks()) {
    detail::raise_in(SKEIN_HERE, call,
                     "Pass an MPI rank of the communicator's group (0 to ranks - 1) as the root.",
                     "root rank {} does not exist (the communicator has {} ranks)", root_rank,
                     layout_.ranks());
  }
}

void GridArray::fill_zero() const {
  for (const auto& b : blocks_) b.with_halo.fill_zero();
}

void GridArray::scatter(std::span<const std::byte> host, int root_rank) const {
  const char* call = "GridArray::scatter";
  check_root_rank(root_rank, call);
  const std::size_t root_member = layout_.first_member_of_rank(root_rank);
  const bool is_root = rank_ == root_rank;
  if (!root_status(*comm_, queue_, !is_root || host.size() == nbytes(),
                   static_cast<int>(root_member), call)) {
    if (is_root) {
      detail::raise_in(SKEIN_HERE, call,
                       "On the root rank, pass the whole global array (size() elements, C order).",
                       "rank {} (the root): the host array has {} bytes, but the grid array of "
                       "shape {} and dtype {} has {}",
                       rank_, host.size(), to_string(layout_.global_shape()), name(dtype_),
                       nbytes());
    }
    detail::raise_in(SKEIN_HERE, call, "See the error reported on the root rank.",
                     "rank {}: the root rank {} passed a host array of the wrong size; nothing was "
                     "scattered",
                     rank_, root_rank);
  }
  const std::size_t unit = itemsize(dtype_);
  const detail::grid::BoxCopier copy(queue_);
  // A contiguous block (`packed`, on the block's device) into the block's points.
  auto unpack = [&](const LocalGridBlock& b, const Array& packed) {
    const auto ext = detail::grid::interior_extent(layout_, b.member);
    copy(unit, detail::grid::interior_box(layout_, b.member, b.with_halo),
         {packed, 0, detail::grid::contiguous(ext)}, ext);
  };
  if (is_root) {
    for (const auto& b : blocks_) {
      if (b.block.empty()) continue;
      std::vector<std::byte> bytes(block_bytes(layout_, b.member, dtype_));
      host_block_copy(layout_, b.member, unit, host, bytes, false);
      const Array packed =
          Array::empty(queue_, {bytes.size() / unit}, dtype_, b.device_idx, temporaries(queue_));
      packed.set(bytes);
      unpack(b, packed);
    }
    // Rank by rank: stage its blocks on the root's first member and send each on.
    for (int r = 0; r < layout_.ranks(); ++r) {
      if (r == root_rank) continue;
      std::vector<std::byte> bytes;
      std::vector<std::pair<std::size_t, std::size_t>> parts;  // (member, byte offset)
      for (std::size_t l = 0; l < layout_.members_of_rank(r); ++l) {
        const std::size_t m = layout_.member_of(r, l);
        const std::size_t nb = block_bytes(layout_, m, dtype_);
        if (nb == 0) continue;
        parts.emplace_back(m, bytes.size());
        bytes.resize(bytes.size() + nb);
        host_block_copy(layout_, m, unit, host, std::span(bytes).subspan(parts.back().second, nb),
                        false);
      }
      if (parts.empty()) continue;
      const Array staging = Array::empty(queue_, {bytes.size() / unit}, dtype_,
                                         blocks_[0].device_idx, temporaries(queue_));
      staging.set(bytes);
      in_group(*comm_, [&] {
        for (const auto& [m, off] : parts) {
          const Array part = staging.view(off / unit, {block_bytes(layout_, m, dtype_) / unit});
          comm_->send(queue_, 0, part, static_cast<int>(m));
        }
      });
      // The staging array is freed next: the sends must have read it.
      queue_.synchronize(blocks_[0].device_idx);
    }
    return;
  }
  std::vector<std::optional<Array>> received(blocks_.size());
  in_group(*comm_, [&] {
    for (const auto& b : blocks_) {
      if (b.block.empty()) continue;
      received[b.local_device] =
          Array::empty(queue_, {block_bytes(layout_, b.member, dtype_) / unit}, dtype_,
                       b.device_idx, temporaries(queue_));
      comm_->recv(queue_, b.local_device, *received[b.local_device], static_cast<int>(root_member));
    }
  });
  detail::require_usable(*comm_, call);
  for (const auto& b : blocks_) {
    if (!b.block.empty()) unpack(b, *received[b.local_device]);
  }
}

std::vector<std::byte> GridArray::gather_bytes(int root_rank) const {
  const char* call = "GridArray::gather";
  check_root_rank(root_rank, call);
  const std::size_t root_member = layout_.first_member_of_rank(root_rank);
  const std::size_t unit = itemsize(dtype_);
  const detail::grid::BoxCopier copy(queue_);
  // A block's points, contiguous, on its device.
  auto pack = [&](const LocalGridBlock& b) {
    const auto ext = detail::grid::interior_extent(layout_, b.member);
    Array packed = Array::empty(queue_, {block_bytes(layout_, b.member, dtype_) / unit}, dtype_,
                                b.device_idx, temporaries(queue_));
    copy(unit, {packed, 0, detail::grid::contiguous(ext)},
         detail::grid::interior_box(layout_, b.member, b.with_halo), ext);
    return packed;
  };
  if (rank_ != root_rank) {
    std::vector<Array> packed;
    in_group(*comm_, [&] {
      for (const auto& b : blocks_) {
        if (b.block.empty()) continue;
        packed.push_back(pack(b));
        comm_->send(queue_, b.local_device, packed.back(), static_cast<int>(root_member));
      }
    });
    return {};
  }
  std::vector<std::byte> out(nbytes());
  for (const auto& b : blocks_) {
    if (b.block.empty()) continue;
    std::vector<std::byte> bytes(block_bytes(layout_, b.member, dtype_));
    pack(b).get(bytes);
    host_block_copy(layout_, b.member, unit, bytes, out, true);
  }
  for (int r = 0; r < layout_.ranks(); ++r) {
    if (r == root_rank) continue;
    std::vector<std::pair<std::size_t, std::size_t>> parts;
    std::size_t total = 0;
    for (std::size_t l = 0; l < layout_.members_of_rank(r); ++l) {
      const std::size_t m = layout_.member_of(r, l);
      const std::size_t nb = block_bytes(layout_, m, dtype_);
      if (nb == 0) continue;
      parts.emplace_back(m, total);
      total += nb;
    }
    if (parts.empty()) continue;
    const Array staging =
        Array::empty(queue_, {total / unit}, dtype_, blocks_[0].device_idx, temporaries(queue_));
    in_group(*comm_, [&] {
      for (const auto& [m, off] : parts) {
        const Array part = staging.view(off / unit, {block_bytes(layout_, m, dtype_) / unit});
        comm_->recv(queue_, 0, part, static_cast<int>(m));
      }
    });
    std::vector<std::byte> bytes(total);
    staging.get(bytes);
    for (const auto& [m, off] : parts) {
      const auto part =
          std::span<const std::byte>(bytes).subspan(off, block_bytes(layout_, m, dtype_));
      host_block_copy(layout_, m, unit, part, out, true);
    }
  }
  // A receive the watchdog aborted lets the reads return what was never written.
  detail::require_usable(*comm_, call);
  return out;
}

void GridArray::exchange_halos() const {
  skein::exchange_halos(queue_, std::span<const GridArray>(this, 1));
}

void GridArray::exchange_halos(const Queue& queue) const {
  skein::exchange_halos(queue, std::span<const GridArray>(this, 1));
}

}  // namespace skein

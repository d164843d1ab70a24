// SPDX-License-Identifier: BSD-3-Clause
// The pieces the distributed objects share (dist_transport.hpp).
#include "dist_transport.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "skein/detail/errors.hpp"
#include "skein/detail/host_collectives.hpp"
#include "skein/memory_pool.hpp"

namespace skein::detail::transport {

namespace {
constexpr std::size_t kInfoFields = 4;  // the fields of MemberInfo, as uint64
}  // namespace

Allocator temporaries(const Queue& queue) { return temporaries_pool(queue).allocator(); }

Allocator plain_blocks(const Context& context) {
  return [context](std::size_t device_idx, std::size_t nbytes) {
    return Buffer::allocate(context, device_idx, nbytes);
  };
}

std::string shape_text(const Shape& shape) { return to_string(shape); }

std::string ranks_text(const std::vector<int>& ranks) {
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", fmt::join(ranks, ", "));
}

// Collective: one all_gather of each member's MemberInfo. `call` names the caller in errors.
std::vector<MemberInfo> exchange_member_info(Communicator& comm, std::uint64_t fingerprint,
                                             bool problem, const char* call) {
  const Queue queue(comm.context());
  const std::size_t L = comm.local_size();
  const std::size_t M = comm.size();
  std::vector<Array> send, recv;
  for (std::size_t l = 0; l < L; ++l) {
    const std::vector<std::uint64_t> mine = {static_cast<std::uint64_t>(comm.rank_of(0)),
                                             static_cast<std::uint64_t>(L), fingerprint,
                                             problem ? 1u : 0u};
    send.push_back(Array::from_host(queue, mine, {}, comm.device_idx(l)));
    recv.push_back(Array::empty(queue, {M * kInfoFields}, Dtype::uint64, comm.device_idx(l),
                                temporaries(queue)));
  }
  comm.all_gather(queue, send, recv);
  const auto all = recv[0].get<std::uint64_t>();
  // The other members' arrays are freed on return: NCCL must be done with them.
  queue.synchronize();
  // An all_gather the watchdog aborted lets the read return what was never written.
  detail::require_usable(comm, call);
  std::vector<MemberInfo> info(M);
  for (std::size_t m = 0; m < M; ++m) {
    info[m].first_member = static_cast<std::size_t>(all[m * kInfoFields]);
    info[m].local_size = static_cast<std::size_t>(all[m * kInfoFields + 1]);
    info[m].fingerprint = all[m * kInfoFields + 2];
    info[m].problem = all[m * kInfoFields + 3] != 0;
  }
  return info;
}

RankStructure rank_structure(const Communicator& comm, const std::vector<MemberInfo>& info) {
  RankStructure s;
  const std::size_t mine = static_cast<std::size_t>(comm.rank_of(0));
  for (std::size_t m = 0; m < info.size();) {
    // Members are ordered rank by rank: a rank's first member says how many follow.
    const std::size_t count = std::max<std::size_t>(info[m].local_size, 1);
    if (m == mine) s.rank = static_cast<int>(s.members_per_rank.size());
    s.first_member_of_rank.push_back(m);
    s.members_per_rank.push_back(count);
    m += count;
  }
  return s;
}

// Shares what only some ranks know before anything else is sent: when a rank has a problem, it
// raises its own LogicError (`mine`) and the others raise one naming it.
void raise_if_any_problem(const std::vector<MemberInfo>& info, const RankStructure& ranks,
                          const std::optional<ErrorInfo>& mine, const std::string& call,
                          const std::string& what_is_made) {
  std::vector<int> failed;
  for (std::size_t r = 0; r < ranks.first_member_of_rank.size(); ++r) {
    if (info[ranks.first_member_of_rank[r]].problem) failed.push_back(static_cast<int>(r));
  }
  if (failed.empty()) return;
  if (mine) throw LogicError(*mine);
  detail::raise_in(SKEIN_HERE, call, "See the error reported on that rank; fix the call there.",
                   "rank {}: {} could not make its part of the {}, so no rank makes it", ranks.rank,
                   ranks_text(failed), what_is_made);
}

// The ranks that disagree on a fingerprint, grouped, for messages.
void raise_if_fingerprints_differ(const std::vector<MemberInfo>& info, const RankStructure& ranks,
                                  const std::string& call, const std::string& mine_described,
                                  const std::string& hint) {
  std::map<std::uint64_t, std::vector<int>> by_value;
  for (std::size_t r = 0; r < ranks.first_member_of_rank.size(); ++r) {
    by_value[info[ranks.first_member_of_rank[r]].fingerprint].push_back(static_cast<int>(r));
  }
  if (by_value.size() < 2) return;
  std::vector<std::pair<int, std::vector<int>>> groups;
  for (const auto& [value, rs] : by_value) groups.emplace_back(rs.front(), rs);
  std::sort(groups.begin(), groups.end());
  std::vector<std::string> parts;
  for (const auto& g : groups) parts.push_back(ranks_text(g.second));
  detail::raise_in(SKEIN_HERE, call, hint,
                   "rank {}: the ranks passed different arguments (groups that agree: {}); this "
                   "rank passed {}",
                   ranks.rank, fmt::join(parts, " / "), mine_described);
}

// Collective: the root member's `ok` on every rank. `call` names the caller in errors.
bool root_status(Communicator& comm, const Queue& queue, bool ok, int root_member,
                 const char* call) {
  std::vector<Array> flags;
  for (std::size_t l = 0; l < comm.local_size(); ++l) {
    const std::vector<std::uint64_t> v = {ok ? 1u : 0u};
    flags.push_back(Array::from_host(queue, v, {}, comm.device_idx(l)));
  }
  comm.broadcast(queue, flags, root_member);
  const bool root_ok = flags[0].get<std::uint64_t>()[0] != 0;
  // The other members' flags are freed on return: NCCL must be done with them.
  for (std::size_t l = 1; l < comm.local_size(); ++l) queue.synchronize(comm.device_idx(l));
  detail::require_usable(comm, call);
  return root_ok;
}

// A problem with the queue a distributed object is given ("" when it is fine).
std::string queue_problem(const Communicator& comm, const Queue& queue) {
  if (!(queue.context() == comm.context())) {
    return "the queue belongs to another context than the communicator's";
  }
  for (std::size_t l = 0; l < comm.local_size(); ++l) {
    if (!queue.has_device(comm.device_idx(l))) {
      return fmt::format(
          "the queue has no queue on context device {} (local member {}); its "
          "devices are {}",
          comm.device_idx(l), l, fmt::join(queue.device_idxs(), ", "));
    }
  }
  return {};
}

std::optional<ErrorInfo> problem_info(
    const std::optional<std::pair<std::string, std::string>>& problem, int rank,
    const std::string& call, std::string location) {
  if (!problem) return std::nullopt;
  return ErrorInfo{.what = fmt::format("rank {}: {}", rank, problem->first),
                   .call = call,
                   .hint = problem->second,
                   .location = std::move(location)};
}

}  // namespace skein::detail::transport

// SPDX-License-Identifier: BSD-3-Clause
// What the ranks compare of each collective call (the Communicator's agreement check): a call's
// fingerprint, its digest, and the words that say which call it was and what differed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "skein/communicator.hpp"

namespace skein::detail {

bool is_reduction(CollectiveOp op);
bool has_root(CollectiveOp op);

// One rank's description of a collective call, compared across ranks.
struct Fingerprint {
  std::uint64_t sequence = 0;
  std::uint64_t count = 0;
  std::int32_t op = 0;
  std::int32_t dtype = -1;      // -1: not applicable (barrier)
  std::int32_t root = -1;       // -1: not applicable
  std::int32_t reduction = -1;  // -1: not applicable
  friend bool operator==(const Fingerprint&, const Fingerprint&) = default;
};

// The fingerprint as one 64-bit value (the agreement hash's mixing over its fields): the ranks
// compare digests, and only after a mismatch the fingerprints themselves, to say what differs.
std::uint64_t digest(const Fingerprint& f);

// A fingerprint's operation for detail::all_reduce_host (the reduction of host values behind the
// distributed reductions to one value): not a CollectiveOp, so that it never agrees with a device
// all_reduce of the same count.
constexpr std::int32_t kHostAllReduce = 64;
std::string_view op_name(std::int32_t op);

// A call's label ("all_reduce #7"), kept as its parts and written out only for a message: every
// collective carries one, and small collectives feel a string built per call.
struct CallLabel {
  std::string_view op;  // static text
  std::uint64_t sequence = 0;
  std::string str() const { return fmt::format("{} #{}", op, sequence); }
};
inline CallLabel label_parts(const Fingerprint& f) { return {op_name(f.op), f.sequence}; }
// "all_reduce #7": a fingerprint's call, for messages.
inline std::string label_of(const Fingerprint& f) { return label_parts(f).str(); }

// "Communicator::all_reduce", for the calls' messages: built once per operation.
const std::string& call_name_of(CollectiveOp op);
// The public call a fingerprint stands for, for messages ("Communicator::all_reduce").
std::string call_of(const Fingerprint& f);
// "rank 3" or "ranks 0, 2".
std::string ranks_list(const std::vector<int>& ranks);
// What differs between the ranks' fingerprints of one call (one per rank, in rank order):
// "all_reduce #7: the ranks made different calls: count differs: rank 1 has 1001, ...".
std::string describe_differences(std::span<const Fingerprint> all, const Fingerprint& mine);

}  // namespace skein::detail

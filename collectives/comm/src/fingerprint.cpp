// SPDX-License-Identifier: BSD-3-Clause
// The Communicator's call fingerprints (fingerprint.hpp).
#include "fingerprint.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <map>
#include <utility>

#include "skein/detail/agreement.hpp"

namespace skein::detail {

bool is_reduction(CollectiveOp op) {
  return op == CollectiveOp::all_reduce || op == CollectiveOp::reduce ||
         op == CollectiveOp::reduce_scatter;
}
bool has_root(CollectiveOp op) {
  return op == CollectiveOp::broadcast || op == CollectiveOp::reduce;
}

std::uint64_t digest(const Fingerprint& f) {
  constexpr auto mix = hash_mix;
  std::uint64_t h = kHashSeed;
  h = mix(h, f.sequence);
  h = mix(h, f.count);
  h = mix(h, static_cast<std::uint32_t>(f.op));
  h = mix(h, static_cast<std::uint32_t>(f.dtype));
  h = mix(h, static_cast<std::uint32_t>(f.root));
  h = mix(h, static_cast<std::uint32_t>(f.reduction));
  return h;
}

std::string_view op_name(std::int32_t op) {
  return op == kHostAllReduce ? std::string_view("all_reduce of host values")
                              : name(static_cast<CollectiveOp>(op));
}

const std::string& call_name_of(CollectiveOp op) {
  static const std::array<std::string, 9> names = [] {
    std::array<std::string, 9> all;
    for (int i = 0; i < 9; ++i)
      all[i] = "Communicator::" + std::string(name(static_cast<CollectiveOp>(i)));
    return all;
  }();
  const auto i = static_cast<std::size_t>(op);
  static const std::string unknown = "Communicator";
  return i < names.size() ? names[i] : unknown;
}

std::string call_of(const Fingerprint& f) {
  if (f.op == kHostAllReduce)
    return "a distributed reduction to one value (dist::sum, min, max, dot)";
  return call_name_of(static_cast<CollectiveOp>(f.op));
}

std::string ranks_list(const std::vector<int>& ranks) {
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", fmt::join(ranks, ", "));
}

std::string describe_differences(std::span<const Fingerprint> all, const Fingerprint& mine) {
  std::vector<std::string> found;
  auto compare = [&](const char* field, auto get, auto show) {
    std::map<decltype(get(mine)), std::vector<int>> by_value;
    for (std::size_t r = 0; r < all.size(); ++r)
      by_value[get(all[r])].push_back(static_cast<int>(r));
    if (by_value.size() < 2) return;
    std::vector<std::pair<int, std::string>> parts;  // ordered by first rank
    for (const auto& [value, ranks] : by_value) {
      parts.emplace_back(ranks.front(),
                         fmt::format("{} {} {}", ranks_list(ranks),
                                     ranks.size() == 1 ? "has" : "have", show(value)));
    }
    std::sort(parts.begin(), parts.end());
    std::vector<std::string> texts;
    for (auto& p : parts) texts.push_back(std::move(p.second));
    found.push_back(fmt::format("{} differs: {}", field, fmt::join(texts, ", ")));
  };
  auto as_is = [](auto v) { return fmt::format("{}", v); };
  compare(
      "operation", [](const Fingerprint& f) { return f.op; },
      [](std::int32_t v) { return std::string(op_name(v)); });
  compare(
      "sequence number", [](const Fingerprint& f) { return f.sequence; }, as_is);
  compare(
      "count", [](const Fingerprint& f) { return f.count; }, as_is);
  compare(
      "dtype", [](const Fingerprint& f) { return f.dtype; },
      [](std::int32_t v) {
        return v < 0 ? std::string("none") : std::string(name(static_cast<Dtype>(v)));
      });
  compare(
      "root", [](const Fingerprint& f) { return f.root; },
      [](std::int32_t v) { return v < 0 ? std::string("none") : std::to_string(v); });
  compare(
      "reduction", [](const Fingerprint& f) { return f.reduction; },
      [](std::int32_t v) {
        return v < 0 ? std::string("none") : std::string(name(static_cast<ReduceOp>(v)));
      });
  if (found.empty()) found.emplace_back("the fingerprints' digests differ");  // cannot happen
  return fmt::format("{}: the ranks made different calls: {}", label_of(mine),
                     fmt::join(found, "; "));
}

}  // namespace skein::detail

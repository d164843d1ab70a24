// SPDX-License-Identifier: BSD-3-Clause
// The per-rank runtime under mpirun (1..4 ranks): ranks and local ranks against MPI, device
// placement, the placement table, adopting a sub-communicator, the SKEIN_* variables, and the
// pure placement rules checked exhaustively against an independent statement of them.
#include <gtest/gtest.h>

#include "mpi_support.hpp"
#include "scoped_env.hpp"
#include <mpi.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <mutex>
#include <skein/runtime.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "skein/detail/log.hpp"
#include "skein/detail/placement.hpp"

namespace {
namespace runtime_test {

using skein::LogicError;
using skein::PlacementOptions;
using skein::Runtime;

using ::skein::test::hostname;
using ::skein::test::world_rank;
using ::skein::test::world_size;

using ScopedEnv = ::skein::test::ScopedEnv;

// Clears every placement variable, so that a test starts from the documented defaults whatever
// the job's environment says.
struct CleanPlacementEnv {
  ScopedEnv api{"SKEIN_API", std::nullopt};
  ScopedEnv devices{"SKEIN_DEVICES", std::nullopt};
  ScopedEnv per_rank{"SKEIN_DEVICES_PER_RANK", std::nullopt};
  ScopedEnv device{"SKEIN_DEVICE", std::nullopt};
  ScopedEnv share{"SKEIN_SHARE_DEVICES", std::nullopt};
};

// How many devices the runtime will choose among on this host by default: those of the first
// platform with devices of the default API (CUDA when it has a device, else OpenCL).
std::size_t default_candidates() {
  for (const auto& api : skein::Api::all_available()) {
    const auto found = skein::platforms_and_devices_by_mask(api, 1);
    if (!found.empty()) return found.front().second.size();
  }
  return 0;
}

// Ranks of this job on this host, in rank order (computed from host names, not from MPI's
// shared-memory split that the runtime uses).
std::vector<int> ranks_on_this_host() {
  char mine[256] = {};
  hostname().copy(mine, 255);
  std::vector<char> all(256 * static_cast<std::size_t>(world_size()));
  MPI_Allgather(mine, 256, MPI_CHAR, all.data(), 256, MPI_CHAR, MPI_COMM_WORLD);
  std::vector<int> ranks;
  for (int r = 0; r < world_size(); ++r) {
    if (std::string(&all[256 * static_cast<std::size_t>(r)]) == std::string(mine))
      ranks.push_back(r);
  }
  return ranks;
}

// Every rank's string, gathered to every rank.
std::vector<std::string> gather_strings(const std::string& mine, MPI_Comm comm = MPI_COMM_WORLD) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(size));
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm);
  std::vector<int> offsets(lengths.size(), 0);
  for (std::size_t r = 1; r < lengths.size(); ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
  std::string all(static_cast<std::size_t>(offsets.back() + lengths.back()), '\0');
  MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                 MPI_CHAR, comm);
  std::vector<std::string> out;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    out.push_back(
        all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
  }
  return out;
}

// Whether every rank can have devices of its own by default; the same answer on every rank of a
// single-host job, so tests skip collectively.
bool enough_devices_for_every_rank() {
  const int local = static_cast<int>(ranks_on_this_host().size());
  int ok = default_candidates() >= static_cast<std::size_t>(local) ? 1 : 0;
  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all_ok == 1;
}

PlacementOptions strict() {
  PlacementOptions o;
  o.share_devices = false;
  return o;
}

// --- The runtime on MPI_COMM_WORLD -----------------------------------------------------------

TEST(Runtime, RankSizeAndLocalRankMatchMpi) {
  CleanPlacementEnv env;
  PlacementOptions options;
  options.share_devices = !enough_devices_for_every_rank();
  Runtime rt(nullptr, nullptr, options);
  EXPECT_TRUE(rt.uses_mpi());
  EXPECT_FALSE(rt.initialised_mpi()) << "the test main initialised MPI: Skein must adopt it";
  EXPECT_EQ(rt.rank(), world_rank());
  EXPECT_EQ(rt.size(), world_size());
  EXPECT_EQ(rt.host(), hostname());

  const auto local = ranks_on_this_host();
  EXPECT_EQ(rt.local_size(), static_cast<int>(local.size()));
  const auto pos = std::find(local.begin(), local.end(), world_rank()) - local.begin();
  EXPECT_EQ(rt.local_rank(), static_cast<int>(pos));

  // Skein works on a duplicate: same group, different context.
  int cmp = MPI_UNEQUAL;
  MPI_Comm_compare(rt.comm(), MPI_COMM_WORLD, &cmp);
  EXPECT_EQ(cmp, MPI_CONGRUENT);

  int level = -1;
  MPI_Query_thread(&level);
  EXPECT_EQ(rt.mpi_thread_level(), level);
}

TEST(Runtime, RanksOfOneHostGetDistinctDevices) {
  CleanPlacementEnv env;
  if (!enough_devices_for_every_rank()) GTEST_SKIP() << "fewer devices than ranks on this host";
  Runtime rt(nullptr, nullptr, strict());
  const auto& placement = rt.placement();
  ASSERT_EQ(placement.size(), static_cast<std::size_t>(world_size()));

  std::map<std::string, std::set<std::string>> used;  // host -> device ids
  std::size_t total = 0;
  for (int r = 0; r < world_size(); ++r) {
    const auto& p = placement[static_cast<std::size_t>(r)];
    EXPECT_EQ(p.rank, r);
    EXPECT_FALSE(p.devices.empty()) << "rank " << r;
    EXPECT_EQ(p.devices.size(), p.device_ids.size());
    for (const auto& id : p.device_ids) {
      EXPECT_TRUE(used[p.host].insert(id).second) << "device " << id << " used twice on " << p.host;
      ++total;
    }
  }
  // The default share-out gives every device of the host to some rank.
  if (used.size() == 1) {
    EXPECT_EQ(total, default_candidates());
  }

  // This rank's entry describes its context.
  const auto& own = placement[static_cast<std::size_t>(rt.rank())];
  ASSERT_EQ(own.devices.size(), rt.context().num_devices());
  for (std::size_t i = 0; i < own.devices.size(); ++i) {
    EXPECT_EQ(own.devices[i], rt.context().device(i).description());
  }
  EXPECT_EQ(own.host, rt.host());
  EXPECT_EQ(own.local_rank, rt.local_rank());
  EXPECT_EQ(own.local_size, rt.local_size());
}

TEST(Runtime, PlacementAndTableAreTheSameOnEveryRank) {
  CleanPlacementEnv env;
  PlacementOptions options;
  options.share_devices = !enough_devices_for_every_rank();
  Runtime rt(nullptr, nullptr, options);
  const auto table = rt.placement_table();
  const auto tables = gather_strings(table);
  for (const auto& t : tables) EXPECT_EQ(t, table);

  // A header and one line per rank, naming the rank, its host and its devices.
  std::vector<std::string> lines;
  for (std::size_t start = 0; start < table.size();) {
    const auto end = table.find('\n', start);
    lines.push_back(table.substr(start, end - start));
    start = end + 1;
  }
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(world_size()) + 1) << table;
  EXPECT_NE(lines[0].find("rank"), std::string::npos);
  EXPECT_NE(lines[0].find("devices"), std::string::npos);
  for (const auto& p : rt.placement()) {
    const auto& line = lines[static_cast<std::size_t>(p.rank) + 1];
    EXPECT_TRUE(line.starts_with(std::to_string(p.rank) + " ")) << line;
    EXPECT_NE(line.find(p.host), std::string::npos) << line;
    EXPECT_NE(line.find(fmt::format("{} of {}", p.local_rank, p.local_size)), std::string::npos)
        << line;
    for (const auto& d : p.devices) EXPECT_NE(line.find(d), std::string::npos) << line;
  }
}

TEST(Runtime, ErrorsNameTheRankWhileTheRuntimeLives) {
  CleanPlacementEnv env;
  PlacementOptions options;
  options.share_devices = !enough_devices_for_every_rank();
  const std::string before = skein::detail::error_prefix();
  {
    Runtime rt(nullptr, nullptr, options);
    try {
      (void)rt.context().device(rt.context().num_devices());
      ADD_FAILURE() << "an out-of-range device index must raise";
    } catch (const LogicError& e) {
      if (rt.size() > 1) {
        EXPECT_NE(std::string(e.what()).find(fmt::format("rank {}: ", rt.rank())),
                  std::string::npos)
            << e.what();
      }
    }
  }
  EXPECT_EQ(skein::detail::error_prefix(), before) << "the prefix is restored with the runtime";
}

TEST(Runtime, TwoRanksOnOneDeviceRaiseOnEveryRank) {
  CleanPlacementEnv env;
  if (ranks_on_this_host().size() < 2) GTEST_SKIP() << "needs two ranks on one host";
  PlacementOptions options = strict();
  options.device_index = 0;  // every rank asks for device 0
  try {
    Runtime rt(nullptr, nullptr, options);
    ADD_FAILURE() << "ranks sharing device 0 without SKEIN_SHARE_DEVICES must raise";
  } catch (const LogicError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("same device"), std::string::npos) << what;
    EXPECT_NE(what.find("SKEIN_SHARE_DEVICES=1"), std::string::npos) << what;
  }
  // Allowed when asked for.
  options.share_devices = true;
  Runtime rt(nullptr, nullptr, options);
  for (const auto& p : rt.placement()) {
    EXPECT_EQ(p.device_ids, rt.placement().front().device_ids);
  }
}

TEST(Runtime, AFailureOnOneRankRaisesOnEveryRank) {
  CleanPlacementEnv env;
  PlacementOptions options;
  options.share_devices = true;
  // Rank 0 asks for a device that does not exist; the others ask for nothing unusual and must
  // raise too rather than wait for rank 0 in the next collective.
  if (world_rank() == 0) options.device_index = 1000;
  try {
    Runtime rt(nullptr, nullptr, options);
    ADD_FAILURE() << "rank 0's bad SKEIN_DEVICE must raise on every rank";
  } catch (const LogicError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("SKEIN_DEVICE=1000"), std::string::npos) << what;
    if (world_rank() != 0) {
      EXPECT_NE(what.find("failed on rank(s) 0"), std::string::npos) << what;
    }
  }
}

TEST(Runtime, BadEnvironmentRaisesOnEveryRank) {
  CleanPlacementEnv env;
  ScopedEnv bad("SKEIN_DEVICES_PER_RANK", "two");
  try {
    Runtime rt(nullptr, nullptr);
    ADD_FAILURE() << "SKEIN_DEVICES_PER_RANK=two must raise";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("SKEIN_DEVICES_PER_RANK='two'"), std::string::npos)
        << e.what();
  }
}

// --- RuntimeOptions: the log level in code, SKEIN_LOG_LEVEL over it, the log's rank -----------

// The lines a rank's log printed while `f` ran, at the level each was logged.
template <class F>
std::vector<std::pair<skein::LogLevel, std::string>> logged(F&& f) {
  std::mutex mutex;
  std::vector<std::pair<skein::LogLevel, std::string>> lines;
  skein::LogSink previous = skein::set_log_sink([&](skein::LogLevel l, std::string_view line) {
    std::lock_guard lock(mutex);
    lines.emplace_back(l, std::string(line));
  });
  f();
  skein::set_log_sink(std::move(previous));
  return lines;
}

TEST(RuntimeOptions, LogLevelInCodeAndTheVariableOverIt) {
  using skein::LogLevel;
  CleanPlacementEnv env;
  ScopedEnv level("SKEIN_LOG_LEVEL", std::nullopt);
  PlacementOptions placement;
  placement.share_devices = !enough_devices_for_every_rank();
  const auto rank_before = skein::detail::log_rank();
  {
    Runtime rt(nullptr, nullptr,
               skein::RuntimeOptions{.placement = placement, .log_level = LogLevel::info});
    EXPECT_EQ(skein::log_level(), LogLevel::info);
    EXPECT_EQ(rt.options().log_level, std::optional(LogLevel::info));
    EXPECT_EQ(rt.options().placement.share_devices, placement.share_devices);
    // The log knows the rank: its lines carry it, and a collective message comes from rank 0 alone.
    const std::string prefix =
        rt.size() > 1 ? fmt::format("skein: rank {}: ", rt.rank()) : "skein: ";
    const auto lines = logged([] {
      skein::log_message(LogLevel::info, "mine");
      skein::log_message(LogLevel::debug, "not at info");
      skein::log_message(LogLevel::warning, "everyone's", skein::LogScope::collective);
    });
    std::vector<std::pair<LogLevel, std::string>> want{{LogLevel::info, prefix + "mine"}};
    if (rt.rank() == 0) want.emplace_back(LogLevel::warning, prefix + "everyone's");
    EXPECT_EQ(lines, want);
    int printed = rt.rank() == 0 ? 0 : static_cast<int>(lines.size()) - 1, total = 0;
    MPI_Allreduce(&printed, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    EXPECT_EQ(total, 0) << "a rank other than 0 printed the collective message";
  }
  EXPECT_EQ(skein::detail::log_rank().rank, rank_before.rank)
      << "the log's rank is restored with the runtime";
  {
    // The variable overrides the code.
    ScopedEnv quiet("SKEIN_LOG_LEVEL", "error");
    Runtime rt(nullptr, nullptr,
               skein::RuntimeOptions{.placement = placement, .log_level = LogLevel::debug});
    EXPECT_EQ(skein::log_level(), LogLevel::error);
    EXPECT_EQ(rt.options().log_level, std::optional(LogLevel::error));
    EXPECT_TRUE(logged([] { skein::log_message(LogLevel::warning, "hidden"); }).empty());
  }
  {
    // A bad value: LogicError on every rank, from the Runtime.
    ScopedEnv bad("SKEIN_LOG_LEVEL", "loud");
    try {
      Runtime rt(nullptr, nullptr, placement);
      ADD_FAILURE() << "SKEIN_LOG_LEVEL=loud must raise";
    } catch (const LogicError& e) {
      EXPECT_NE(std::string(e.what()).find("SKEIN_LOG_LEVEL='loud'"), std::string::npos)
          << e.what();
    }
  }
  (void)skein::detail::read_log_level_from_environment("test");  // unset again
  skein::set_log_level(LogLevel::warning);
  // PlacementOptions' fields in braces still choose the PlacementOptions constructor.
  Runtime braces(nullptr, nullptr, {.share_devices = placement.share_devices});
  EXPECT_EQ(braces.options().log_level, std::optional(LogLevel::warning));
}

// --- Adopting the application's communicator --------------------------------------------------

TEST(Runtime, AdoptsASubCommunicatorAndLeavesMpiRunning) {
  CleanPlacementEnv env;
  const int rank = world_rank();
  MPI_Comm even = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2 == 0 ? 0 : MPI_UNDEFINED, rank, &even);
  if (even == MPI_COMM_NULL) {
    EXPECT_THROW(Runtime(MPI_COMM_NULL, strict()), LogicError);
  } else {
    const int evens = (world_size() + 1) / 2;
    PlacementOptions options;
    options.share_devices = default_candidates() < static_cast<std::size_t>(evens);
    {
      Runtime rt(even, options);
      EXPECT_TRUE(rt.uses_mpi());
      EXPECT_FALSE(rt.initialised_mpi());
      EXPECT_EQ(rt.size(), evens);
      EXPECT_EQ(rt.rank(), rank / 2);
      EXPECT_EQ(rt.placement().size(), static_cast<std::size_t>(evens));
      EXPECT_EQ(rt.local_size(), evens);  // one host under ctest
      int cmp = MPI_UNEQUAL;
      MPI_Comm_compare(rt.comm(), even, &cmp);
      EXPECT_EQ(cmp, MPI_CONGRUENT) << "Skein works on its own duplicate";
    }
    // The runtime is gone; the application's MPI and communicator are not.
    int finalised = 1;
    MPI_Finalized(&finalised);
    EXPECT_FALSE(finalised);
    int sum = 0, one = 1;
    EXPECT_EQ(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, even), MPI_SUCCESS);
    EXPECT_EQ(sum, evens);
    MPI_Comm_free(&even);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(Runtime, WithoutMpiIsOneRank) {
  CleanPlacementEnv env;
  Runtime rt(strict());
  EXPECT_FALSE(rt.uses_mpi());
  EXPECT_FALSE(rt.initialised_mpi());
  EXPECT_EQ(rt.rank(), 0);
  EXPECT_EQ(rt.size(), 1);
  EXPECT_EQ(rt.local_rank(), 0);
  EXPECT_EQ(rt.local_size(), 1);
  EXPECT_EQ(rt.host(), hostname());
  EXPECT_EQ(rt.comm(), MPI_COMM_SELF);
  ASSERT_EQ(rt.placement().size(), 1u);
  // One rank alone on its host gets every candidate.
  EXPECT_EQ(rt.context().num_devices(), default_candidates());
}

// --- The SKEIN_* variables --------------------------------------------------------------------

// The LogicError `from_environment` raises for NAME=VALUE, checked to name both and `accepted`.
void expect_rejected(const char* name, const std::string& value, const std::string& accepted) {
  CleanPlacementEnv env;
  ScopedEnv set(name, value);
  try {
    (void)PlacementOptions::from_environment();
    ADD_FAILURE() << name << "=" << value << " must be rejected";
  } catch (const LogicError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(fmt::format("{}='{}'", name, value)), std::string::npos) << what;
    EXPECT_NE(what.find(accepted), std::string::npos) << what;
  }
}

TEST(PlacementOptions, InvalidValuesNameTheVariable) {
  expect_rejected("SKEIN_API", "metal", "cuda, opencl");
  expect_rejected("SKEIN_DEVICES_PER_RANK", "two", "a positive integer");
  expect_rejected("SKEIN_DEVICES_PER_RANK", "0", "a positive integer");
  expect_rejected("SKEIN_DEVICES_PER_RANK", "-1", "a positive integer");
  expect_rejected("SKEIN_DEVICES_PER_RANK", "2x", "a positive integer");
  expect_rejected("SKEIN_DEVICE", "first", "a device index");
  expect_rejected("SKEIN_DEVICE", "-1", "a device index");
  expect_rejected("SKEIN_DEVICES", "Tesla,([", "regular expressions");
  expect_rejected("SKEIN_SHARE_DEVICES", "maybe", "1, true, yes or on");
}

TEST(PlacementOptions, ValidValuesAreRead) {
  CleanPlacementEnv env;
  {
    const auto o = PlacementOptions::from_environment();
    EXPECT_FALSE(o.api || o.device_masks || o.devices_per_rank || o.device_index ||
                 o.share_devices);
  }
  ScopedEnv api("SKEIN_API", "OpenCL");
  ScopedEnv devices("SKEIN_DEVICES", "H100,^pthread");
  ScopedEnv per_rank("SKEIN_DEVICES_PER_RANK", "2");
  ScopedEnv device("SKEIN_DEVICE", "3");
  ScopedEnv share("SKEIN_SHARE_DEVICES", "yes");
  const auto o = PlacementOptions::from_environment();
  EXPECT_EQ(o.api, skein::ApiId::opencl);
  EXPECT_EQ(o.device_masks, (std::vector<std::string>{"H100", "^pthread"}));
  EXPECT_EQ(o.devices_per_rank, 2u);
  EXPECT_EQ(o.device_index, 3u);
  EXPECT_EQ(o.share_devices, true);

  // Fields the caller gave win over the environment.
  PlacementOptions given;
  given.api = skein::ApiId::cuda;
  given.devices_per_rank = 1;
  given.share_devices = false;
  const auto mixed = PlacementOptions::from_environment(given);
  EXPECT_EQ(mixed.api, skein::ApiId::cuda);
  EXPECT_EQ(mixed.devices_per_rank, 1u);
  EXPECT_EQ(mixed.share_devices, false);
  EXPECT_EQ(mixed.device_index, 3u);

  // Switches follow the one rule of Skein's environment reader (tests/framework/env_test.cpp).
  ScopedEnv off("SKEIN_SHARE_DEVICES", "Off");
  EXPECT_EQ(PlacementOptions::from_environment().share_devices, false);
}

// --- The placement rules, exhaustively --------------------------------------------------------

struct Case {
  std::size_t n;                     // candidates on the host
  int ranks;                         // ranks on the host
  std::optional<std::size_t> k;      // devices per rank
  std::optional<std::size_t> first;  // SKEIN_DEVICE
  bool share;
};

std::string describe(const Case& c, int l) {
  return fmt::format("N={} L={} l={} k={} i={} share={}", c.n, c.ranks, l,
                     c.k ? std::to_string(*c.k) : "-", c.first ? std::to_string(*c.first) : "-",
                     c.share);
}

// The rules restated differently from the implementation: devices are dealt out as slots. By
// default device d belongs to rank ((d+1)*L-1)/N; with k per rank the rank holds slots l*k ..
// l*k+k-1 of the dealt sequence 0, 1, ..., N-1, 0, 1, ... (the wrap only allowed when sharing).
std::optional<std::vector<std::size_t>> expected(const Case& c, int l) {
  if (c.n == 0) return std::nullopt;
  const std::size_t lone_k = c.k.value_or(1);
  if (c.n == 1 && lone_k == 1 && c.first.value_or(0) == 0) return std::vector<std::size_t>{0};
  if (c.first) {
    std::vector<std::size_t> v;
    for (std::size_t j = 0; j < lone_k; ++j) {
      if (*c.first + j >= c.n) return std::nullopt;
      v.push_back(*c.first + j);
    }
    return v;
  }
  if (c.k) {
    if (*c.k > c.n) return std::nullopt;
    std::vector<std::size_t> v;
    for (std::size_t slot = static_cast<std::size_t>(l) * *c.k; v.size() < *c.k; ++slot) {
      if (slot >= c.n && !c.share) return std::nullopt;
      v.push_back(slot % c.n);
    }
    return v;
  }
  if (c.n < static_cast<std::size_t>(c.ranks)) {
    if (!c.share) return std::nullopt;
    return std::vector<std::size_t>{static_cast<std::size_t>(l) % c.n};
  }
  std::vector<std::size_t> v;
  for (std::size_t d = 0; d < c.n; ++d) {
    // Rank l's share starts at floor(l*N/L): d belongs to the last rank whose share starts at or
    // before it, the largest l with l*N <= (d+1)*L - 1.
    if (((d + 1) * static_cast<std::size_t>(c.ranks) - 1) / c.n == static_cast<std::size_t>(l))
      v.push_back(d);
  }
  return v;
}

TEST(Placement, AllSmallCasesFollowTheRules) {
  std::size_t checked = 0;
  for (std::size_t n = 0; n <= 6; ++n) {
    for (int ranks = 1; ranks <= 6; ++ranks) {
      for (std::optional<std::size_t> k :
           {std::optional<std::size_t>{}, std::optional<std::size_t>{1},
            std::optional<std::size_t>{2}, std::optional<std::size_t>{3}}) {
        for (std::size_t fi = 0; fi <= n + 1; ++fi) {
          const std::optional<std::size_t> first =
              fi == 0 ? std::nullopt : std::optional<std::size_t>(fi - 1);
          for (bool share : {false, true}) {
            const Case c{n, ranks, k, first, share};
            PlacementOptions o;
            o.devices_per_rank = k;
            o.device_index = first;
            o.share_devices = share;
            skein::detail::PlacementRequest req{.local_size = ranks, .host = "node7"};
            for (std::size_t d = 0; d < n; ++d)
              req.candidates.push_back(fmt::format("device {}", d));
            for (int l = 0; l < ranks; ++l) {
              req.local_rank = l;
              const auto want = expected(c, l);
              ++checked;
              if (want) {
                try {
                  EXPECT_EQ(skein::detail::choose_devices(req, o), *want) << describe(c, l);
                } catch (const LogicError& e) {
                  ADD_FAILURE() << describe(c, l) << ": unexpected " << e.what();
                }
              } else {
                EXPECT_THROW((void)skein::detail::choose_devices(req, o), LogicError)
                    << describe(c, l);
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000u);
}

TEST(Placement, DefaultShareOutIsEvenAndCoversEveryDevice) {
  for (std::size_t n = 1; n <= 9; ++n) {
    for (int ranks = 1; ranks <= static_cast<int>(n); ++ranks) {
      skein::detail::PlacementRequest req{.local_size = ranks, .host = "h"};
      req.candidates.assign(n, "d");
      std::vector<std::size_t> all;
      for (int l = 0; l < ranks; ++l) {
        req.local_rank = l;
        const auto mine = skein::detail::choose_devices(req, PlacementOptions{});
        EXPECT_GE(mine.size(), n / static_cast<std::size_t>(ranks));
        EXPECT_LE(mine.size(),
                  (n + static_cast<std::size_t>(ranks) - 1) / static_cast<std::size_t>(ranks));
        all.insert(all.end(), mine.begin(), mine.end());
      }
      std::vector<std::size_t> every(n);
      for (std::size_t d = 0; d < n; ++d) every[d] = d;
      EXPECT_EQ(all, every) << "N=" << n << " L=" << ranks;
    }
  }
}

TEST(Placement, TooFewDevicesSaysWhatToDo) {
  skein::detail::PlacementRequest req{
      .local_rank = 1, .local_size = 4, .host = "gpu-node-3", .candidates = {"a", "b", "c"}};
  try {
    (void)skein::detail::choose_devices(req, PlacementOptions{});
    ADD_FAILURE() << "3 devices for 4 ranks must raise";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("3 devices for 4 ranks on host gpu-node-3; set "
                                         "SKEIN_SHARE_DEVICES=1 or run fewer ranks per node"),
              std::string::npos)
        << e.what();
  }
  // A lone visible device is each rank's own (CUDA_VISIBLE_DEVICES), not a shortage.
  req.candidates = {"a"};
  EXPECT_EQ(skein::detail::choose_devices(req, PlacementOptions{}), std::vector<std::size_t>{0});
  // An index past the end names SKEIN_DEVICE.
  PlacementOptions o;
  o.device_index = 5;
  req.candidates = {"a", "b"};
  try {
    (void)skein::detail::choose_devices(req, o);
    ADD_FAILURE() << "SKEIN_DEVICE=5 with two devices must raise";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("SKEIN_DEVICE=5"), std::string::npos) << e.what();
  }
}

TEST(Placement, DuplicateCheckComparesDevicesPerHost) {
  using skein::detail::device_key;
  EXPECT_EQ(device_key("a", "0000:1b:00.0", skein::ApiId::cuda, 0, 0),
            device_key("a", "0000:1b:00.0", skein::ApiId::opencl, 1, 3))
      << "a PCI bus id names the device whatever the API and index";
  EXPECT_NE(device_key("a", std::nullopt, skein::ApiId::opencl, 0, 0),
            device_key("b", std::nullopt, skein::ApiId::opencl, 0, 0));

  std::vector<skein::RankPlacement> p(4);
  for (int r = 0; r < 4; ++r) {
    p[static_cast<std::size_t>(r)].rank = r;
    p[static_cast<std::size_t>(r)].host = r < 2 ? "n0" : "n1";
    p[static_cast<std::size_t>(r)].devices = {"GPU"};
    p[static_cast<std::size_t>(r)].device_ids = {"pci:0000:1b:00.0"};
  }
  // Same bus id on two hosts is two devices; on one host it is one.
  const auto shared = skein::detail::shared_devices(p);
  ASSERT_EQ(shared.size(), 2u);
  EXPECT_NE(shared[0].find("ranks 0, 1"), std::string::npos) << shared[0];
  EXPECT_NE(shared[1].find("ranks 2, 3"), std::string::npos) << shared[1];
  p[1].device_ids = {"pci:0000:1c:00.0"};
  p[3].device_ids = {"pci:0000:1c:00.0"};
  EXPECT_TRUE(skein::detail::shared_devices(p).empty());
}

}  // namespace runtime_test
}  // namespace

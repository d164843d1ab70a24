// SPDX-License-Identifier: BSD-3-Clause
// CommunicatorOptions under mpirun (1..4 ranks): each setting given in code has its effect, its
// variable overrides it, and Communicator::options() reports what is in effect; the older
// constructors keep their rule (an explicit backend wins over SKEIN_BACKEND); split() keeps its
// parent's settings; the Communicator says its settings in the log at info level, on rank 0.
// The timeout's effect (a rank that skips a call) is in the fault matrix (fault_main.cpp,
// collectives.fault.skip_code*), where a job may abandon MPI operations.
#include <gtest/gtest.h>
#include <mpi.h>

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <mutex>
#include <optional>
#include <skein/communicator.hpp>
#include <skein/runtime.hpp>
#include <skein/skein.hpp>
#include <span>
#include <string>
#include <vector>

#include "checks.hpp"
#include "mpi_support.hpp"
#include "scoped_env.hpp"

namespace {
namespace communicator_options_test {

using namespace skein;
using ::skein::test::expect_logic_error;
using ::skein::test::world_rank;
using ::skein::test::world_size;
using ScopedEnv = ::skein::test::ScopedEnv;

// Every variable of a Communicator unset, so that a test starts from the code's values.
struct CleanEnv {
  ScopedEnv backend{"SKEIN_BACKEND", std::nullopt};
  ScopedEnv timeout{"SKEIN_COLLECTIVE_TIMEOUT", std::nullopt};
  ScopedEnv check{"SKEIN_CHECK_COLLECTIVES", std::nullopt};
  ScopedEnv blocking{"SKEIN_NCCL_BLOCKING", std::nullopt};
};

// Whether NCCL can run here: CUDA devices (the GPU machines run the suite with SKEIN_API=cuda, one
// GPU per rank) in a build with NCCL.
bool nccl_usable(const Runtime& runtime) {
  return SKEIN_HAS_NCCL && runtime.context().api().id() == ApiId::cuda;
}

class CommunicatorOptionsTest : public testing::Test {
 protected:
  CleanEnv env_;
  Runtime runtime_{MPI_COMM_WORLD};
};

TEST_F(CommunicatorOptionsTest, DefaultsAreReportedAsInEffect) {
  Communicator comm(runtime_);
  const CommunicatorOptions& o = comm.options();
  EXPECT_EQ(o.backend, std::optional(comm.backend()));
  EXPECT_EQ(o.timeout_seconds, std::optional(300.0));
  EXPECT_EQ(o.check_agreement, std::optional(true));
  EXPECT_EQ(o.nccl_blocking, std::optional(true));
}

TEST_F(CommunicatorOptionsTest, BackendInCodeAndTheVariableOverIt) {
  {
    Communicator comm(runtime_, {.backend = CollectiveBackend::mpi});
    EXPECT_EQ(comm.backend(), CollectiveBackend::mpi);
    EXPECT_EQ(comm.options().backend, std::optional(CollectiveBackend::mpi));
    EXPECT_NE(comm.backend_description().find("MPI"), std::string::npos)
        << comm.backend_description();
  }
  if (nccl_usable(runtime_)) {
    Communicator comm(runtime_, {.backend = CollectiveBackend::nccl});
    EXPECT_EQ(comm.backend(), CollectiveBackend::nccl);
  } else {
    // Asked for in code where it cannot run: refused on every rank, naming the option.
    expect_logic_error([&] { Communicator comm(runtime_, {.backend = CollectiveBackend::nccl}); },
                       {"NCCL", "CommunicatorOptions::backend"}, "nccl in code");
  }
  {
    // The variable overrides the code: the code's NCCL is not even tried.
    ScopedEnv backend("SKEIN_BACKEND", "mpi");
    Communicator comm(runtime_, {.backend = CollectiveBackend::nccl});
    EXPECT_EQ(comm.backend(), CollectiveBackend::mpi);
    EXPECT_EQ(comm.options().backend, std::optional(CollectiveBackend::mpi));
  }
  {
    ScopedEnv backend("SKEIN_BACKEND", "nccl");
    if (nccl_usable(runtime_)) {
      Communicator comm(runtime_, {.backend = CollectiveBackend::mpi});
      EXPECT_EQ(comm.backend(), CollectiveBackend::nccl);
    } else {
      expect_logic_error([&] { Communicator comm(runtime_, {.backend = CollectiveBackend::mpi}); },
                         {"SKEIN_BACKEND"}, "the variable's nccl over the code's mpi");
    }
    // The older constructor: an explicit backend wins over the variable, as it always did.
    Communicator old(runtime_, CollectiveBackend::mpi);
    EXPECT_EQ(old.backend(), CollectiveBackend::mpi);
  }
}

TEST_F(CommunicatorOptionsTest, TimeoutInCodeAndTheVariableOverIt) {
  {
    Communicator comm(runtime_, {.timeout_seconds = 2.5});
    EXPECT_EQ(comm.options().timeout_seconds, std::optional(2.5));
  }
  {
    ScopedEnv timeout("SKEIN_COLLECTIVE_TIMEOUT", "7");
    Communicator comm(runtime_, {.timeout_seconds = 2.5});
    EXPECT_EQ(comm.options().timeout_seconds, std::optional(7.0));
  }
  {
    Communicator comm(runtime_, {.timeout_seconds = 0});  // no limit
    EXPECT_EQ(comm.options().timeout_seconds, std::optional(0.0));
    // It works (the calls have no deadline).
    Queue queue(comm.context());
    comm.barrier(queue);
  }
  for (const double bad :
       {-1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    expect_logic_error([&] { Communicator comm(runtime_, {.timeout_seconds = bad}); },
                       {"CommunicatorOptions::timeout_seconds", "seconds >= 0"},
                       fmt::format("timeout {}", bad));
  }
}

// One all_reduce in which rank 1 asks for max and the others for sum, on zeros (so the data's
// exchange, were it made, is harmless: both give zeros), then a barrier: true when the agreement
// check raised the mismatch, false when the calls went through. Afterwards, when nothing was
// raised, an agreeing all_reduce must still be right.
bool mismatch_is_caught(Communicator& comm) {
  Queue queue(comm.context());
  std::vector<Array> a;
  for (std::size_t l = 0; l < comm.local_size(); ++l) {
    a.push_back(Array::zeros(queue, {64}, Dtype::float32, comm.device_idx(l)));
  }
  try {
    comm.all_reduce(queue, a, a, world_rank() == 1 ? ReduceOp::max : ReduceOp::sum);
    comm.barrier(queue);
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("reduction differs"), std::string::npos) << e.what();
    return true;
  }
  for (const Array& x : a) x.set(std::vector<float>(64, 1.0f));
  comm.all_reduce(queue, a, a, ReduceOp::sum);
  for (const Array& x : a) {
    EXPECT_EQ(x.get<float>(), std::vector<float>(64, static_cast<float>(comm.size())))
        << "an agreeing all_reduce after the unchecked mismatch";
  }
  return false;
}

TEST_F(CommunicatorOptionsTest, AgreementCheckInCodeAndTheVariableOverIt) {
  struct Case {
    bool code;
    std::optional<std::string> variable;
    bool in_effect;
  };
  for (const Case& c : {Case{false, std::nullopt, false}, Case{true, std::nullopt, true},
                        Case{false, std::string("1"), true}, Case{true, std::string("0"), false}}) {
    const std::string what = fmt::format("check_agreement = {}, SKEIN_CHECK_COLLECTIVES = {}",
                                         c.code, c.variable.value_or("(unset)"));
    SCOPED_TRACE(what);
    ScopedEnv check("SKEIN_CHECK_COLLECTIVES", c.variable);
    Communicator comm(runtime_, {.check_agreement = c.code});
    EXPECT_EQ(comm.options().check_agreement, std::optional(c.in_effect));
    if (world_size() < 2) continue;  // nothing to compare on one rank
    EXPECT_EQ(mismatch_is_caught(comm), c.in_effect);
  }
}

// The NCCL communicators' mode: what NCCL's description says where NCCL runs; elsewhere it is
// only reported (the MPI backend has no such mode).
TEST_F(CommunicatorOptionsTest, NcclBlockingInCodeAndTheVariableOverIt) {
  const CommunicatorOptions non_blocking{.nccl_blocking = false};
  {
    Communicator comm(runtime_, non_blocking);
    EXPECT_EQ(comm.options().nccl_blocking, std::optional(false));
    if (comm.backend() == CollectiveBackend::nccl) {
      EXPECT_NE(comm.backend_description().find("(non-blocking communicators)"), std::string::npos)
          << comm.backend_description();
      Queue queue(comm.context());
      comm.barrier(queue);
    }
  }
  ScopedEnv blocking("SKEIN_NCCL_BLOCKING", "1");
  Communicator comm(runtime_, non_blocking);
  EXPECT_EQ(comm.options().nccl_blocking, std::optional(true));
  if (comm.backend() == CollectiveBackend::nccl) {
    EXPECT_NE(comm.backend_description().find("(blocking communicators)"), std::string::npos)
        << comm.backend_description();
  }
}

// split() makes its communicator with its parent's settings in effect, the backend included
// whatever SKEIN_BACKEND says by then.
TEST_F(CommunicatorOptionsTest, SplitKeepsTheParentsSettings) {
  Communicator parent(
      runtime_,
      {.backend = CollectiveBackend::mpi, .timeout_seconds = 42, .check_agreement = false});
  ScopedEnv backend("SKEIN_BACKEND", "nccl");
  Communicator half = parent.split(world_rank() % 2, world_rank());
  EXPECT_EQ(half.backend(), CollectiveBackend::mpi);
  EXPECT_EQ(half.options().timeout_seconds, std::optional(42.0));
  EXPECT_EQ(half.options().check_agreement, std::optional(false));
}

// At info level the Communicator says which backend it has and its settings, once (on rank 0).
TEST_F(CommunicatorOptionsTest, SaysItsSettingsAtInfoLevelOnRankZero) {
  ScopedEnv level("SKEIN_LOG_LEVEL", std::nullopt);
  std::mutex mutex;
  std::vector<std::string> lines;
  LogSink previous = set_log_sink([&](LogLevel l, std::string_view line) {
    std::lock_guard lock(mutex);
    if (l == LogLevel::info) lines.emplace_back(line);
  });
  set_log_level(LogLevel::info);
  std::string description;
  std::size_t members = 0;
  {
    Communicator comm(runtime_, {.timeout_seconds = 42, .check_agreement = false});
    description = comm.backend_description();
    members = comm.size();
  }
  set_log_level(LogLevel::warning);
  set_log_sink(std::move(previous));
  std::vector<std::string> said;
  for (const auto& line : lines) {
    if (line.find("Communicator: ") != std::string::npos) said.push_back(line);
  }
  if (world_rank() != 0) {
    EXPECT_TRUE(said.empty()) << said.front();
    return;
  }
  ASSERT_EQ(said.size(), 1u);
  const std::string prefix = world_size() > 1 ? "skein: rank 0: " : "skein: ";
  EXPECT_EQ(
      said[0],
      fmt::format("{}Communicator: {} over {} member(s) on {} rank(s); collective timeout 42 s, "
                  "agreement check off",
                  prefix, description, members, world_size()));
}

}  // namespace communicator_options_test
}  // namespace

// SPDX-License-Identifier: BSD-3-Clause
// No result of a mismatched collective reaches the host (issue 34): on the path NCCL's calls take
// (they return once enqueued, and the ranks' fingerprints are compared alongside), run here over
// the MPI backend, whose data then moves before the comparison ends
// (detail::compare_alongside_for_testing). Rank 1 asks for the maximum where the others sum, so the
// data's own exchange completes and hands every rank a wrong value; then each rank does only what
// a user's code does next, and that step must raise the LogicError naming the mismatch, on every
// rank, and so must every later read of the data:
//   Queue::synchronize (all devices, and one), Event::wait and Event::query of the call's events
//   and of events recorded after it, a second queue that waited for such an event, Array::get and
//   Buffer::get, dist::sum on a DistArray of that queue, an HDF5 write and a checkpoint (the
//   files written before stay whole and readable).
// Each way is run with the watchdog comparing (MPI_THREAD_MULTIPLE, what the suite runs with) and
// with the calling thread comparing (as below it). Agreeing calls, read the same ways, give the
// values the host computes.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <functional>
#include <skein/checkpoint.hpp>
#include <skein/hdf5.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "dist_support.hpp"
#include "scoped_env.hpp"
#include "skein/detail/backend.hpp"

namespace {
namespace agreement_results_test {

using namespace skein;
using ::skein::test::expect_logic_error;
using ::skein::test::on_every_rank;
using ::skein::test::Placement;
using ::skein::test::Rig;
using ::skein::test::world_rank;
using ::skein::test::world_size;

constexpr std::size_t kN = 257;

// Member m's input: its values differ between members, so that max and sum differ everywhere.
std::vector<float> input(std::size_t member) {
  std::vector<float> v(kN);
  for (std::size_t i = 0; i < kN; ++i) v[i] = static_cast<float>((i % 13) + 100 * (member + 1));
  return v;
}

std::vector<float> summed(std::size_t members) {
  std::vector<float> want(kN, 0.0f);
  for (std::size_t m = 0; m < members; ++m) {
    const auto v = input(m);
    for (std::size_t i = 0; i < kN; ++i) want[i] += v[i];
  }
  return want;
}

// One communicator compared alongside, its queue, and one array per local member holding the
// member's input.
struct Held {
  Rig rig;
  std::unique_ptr<Queue> queue;
  std::vector<Array> data;

  explicit Held(bool by_watchdog) {
    rig = ::skein::test::runtime_rig();
    detail::compare_alongside_for_testing(*rig.comm, by_watchdog);
    queue = std::make_unique<Queue>(rig.comm->context());
    for (std::size_t l = 0; l < rig.L(); ++l) {
      data.push_back(Array::from_host(*queue, input(static_cast<std::size_t>(rig.comm->rank_of(l))),
                                      {}, rig.comm->device_idx(l)));
    }
  }
  // Sum on every rank; with `differ`, rank 1 asks for the maximum.
  std::vector<Event> all_reduce(bool differ) {
    const ReduceOp op = differ && world_rank() == 1 ? ReduceOp::max : ReduceOp::sum;
    return rig.comm->all_reduce(*queue, data, data, op);
  }
};

// The words every LogicError of the mismatch holds (the DistArray cases make collectives of their
// own first, so the call's number is not always #2).
const std::vector<std::string> kNamed = {"the ranks made different calls", "reduction differs",
                                         "rank 1 has max", "does not hand over"};

class AgreementResults : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
    if (::skein::test::suite_api() != ApiId::opencl)
      GTEST_SKIP() << "runs over the MPI backend on OpenCL";
    if (::skein::test::platform_devices(ApiId::opencl).size() <
        static_cast<std::size_t>(world_size())) {
      GTEST_SKIP() << "needs an OpenCL device per rank";
    }
  }
  bool by_watchdog() const { return GetParam(); }
};

std::string mode_name(const testing::TestParamInfo<bool>& info) {
  return info.param ? "ByTheWatchdog" : "ByTheCallingThread";
}

// One agreeing call, one that differs, then `next` alone; it must raise the LogicError within a
// few seconds, and a read of the data afterwards must raise it again.
void expect_held(bool by_watchdog, const std::string& what,
                 const std::function<void(Held&, const std::vector<Event>&)>& next) {
  SCOPED_TRACE(what);
  ::skein::test::ScopedEnv check("SKEIN_CHECK_COLLECTIVES", std::nullopt);
  Held s(by_watchdog);
  s.all_reduce(false);
  const auto events = s.all_reduce(true);
  const auto start = std::chrono::steady_clock::now();
  auto named = kNamed;
  named.push_back("all_reduce #2");
  expect_logic_error([&] { next(s, events); }, named, what);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(waited, 5.0) << what << ": the error came after " << waited << " s";
  // Code that catches the error and reads anyway reads nothing.
  expect_logic_error([&] { (void)s.data[0].get<float>(); }, kNamed, what + ", then Array::get");
  EXPECT_TRUE(on_every_rank(!testing::Test::HasFailure())) << what << " failed on some rank";
}

TEST_P(AgreementResults, AgreeingCallsAreReadTheUsualWays) {
  ::skein::test::ScopedEnv check("SKEIN_CHECK_COLLECTIVES", std::nullopt);
  Held s(by_watchdog());
  const auto want = summed(s.rig.M());
  for (int round = 0; round < 6; ++round) {
    for (std::size_t l = 0; l < s.rig.L(); ++l) {
      s.data[l].set(
          std::span<const float>(input(static_cast<std::size_t>(s.rig.comm->rank_of(l)))));
    }
    const auto events = s.all_reduce(false);
    switch (round % 3) {
      case 0: s.queue->synchronize(); break;
      case 1:
        for (const Event& e : events) e.wait();
        break;
      case 2:
        for (const Event& e : events) {
          while (!e.query()) {
          }
        }
        break;
    }
    for (const Array& a : s.data) EXPECT_EQ(a.get<float>(), want) << "round " << round;
  }
  EXPECT_NO_THROW(s.rig.comm->barrier(*s.queue));
}

// Thousands of calls compared alongside, then one host completion: the ranks compare their calls
// in a few rounds of chained digests (detail::CallLedger), not an exchange per call, so the
// completion waits moments, not the length of a backlog.
TEST_P(AgreementResults, ManyCallsAreConfirmedAtOnce) {
  ::skein::test::ScopedEnv check("SKEIN_CHECK_COLLECTIVES", std::nullopt);
  Held s(by_watchdog());
  std::vector<Array> small;
  for (std::size_t l = 0; l < s.rig.L(); ++l) {
    small.push_back(Array::zeros(*s.queue, {8}, Dtype::float32, s.rig.comm->device_idx(l)));
  }
  constexpr int kCalls = 2000;
  for (int i = 0; i < kCalls; ++i) s.rig.comm->all_reduce(*s.queue, small, small, ReduceOp::sum);
  s.all_reduce(false);
  const auto start = std::chrono::steady_clock::now();
  s.queue->synchronize();
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(waited, 2.0) << "confirming " << kCalls + 1 << " calls took " << waited << " s";
  for (const Array& a : s.data) EXPECT_EQ(a.get<float>(), summed(s.rig.M()));
  EXPECT_TRUE(on_every_rank(!HasFailure()));
}

TEST_P(AgreementResults, QueueSynchronize) {
  expect_held(by_watchdog(), "Queue::synchronize()",
              [](Held& s, const auto&) { s.queue->synchronize(); });
  expect_held(by_watchdog(), "Queue::synchronize(device)",
              [](Held& s, const auto&) { s.queue->synchronize(s.rig.comm->device_idx(0)); });
}

TEST_P(AgreementResults, EventsOfTheCallAndAfterIt) {
  expect_held(by_watchdog(), "Event::wait of the call's event",
              [](Held&, const std::vector<Event>& events) { events[0].wait(); });
  expect_held(by_watchdog(), "Event::query of the call's event",
              [](Held&, const std::vector<Event>& events) {
                const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
                while (!events[0].query() && std::chrono::steady_clock::now() < until) {
                }
              });
  expect_held(by_watchdog(), "Event::wait of an event recorded later", [](Held& s, const auto&) {
    const std::size_t d = s.rig.comm->device_idx(0);
    (void)skein::sum(*s.queue, s.data[0]);
    s.queue->record_event(d).wait();
  });
  expect_held(by_watchdog(), "a second queue that waited for the call's event",
              [](Held& s, const std::vector<Event>& events) {
                Queue other(s.rig.comm->context(), {s.rig.comm->device_idx(0)});
                other.wait_for(events[0]);
                other.synchronize();
              });
}

TEST_P(AgreementResults, CopiesToTheHost) {
  expect_held(by_watchdog(), "Array::get",
              [](Held& s, const auto&) { (void)s.data[0].get<float>(); });
  expect_held(by_watchdog(), "Buffer::get", [](Held& s, const auto&) {
    std::vector<std::byte> bytes(s.data[0].nbytes());
    s.data[0].data().get(*s.queue, std::span<std::byte>(bytes));
  });
  expect_held(by_watchdog(), "a strided Array::get (a transposed view)", [](Held& s, const auto&) {
    Array b = Array::zeros(*s.queue, {4, 6}, Dtype::float32, s.rig.comm->device_idx(0));
    (void)b.transpose().get<float>();
  });
}

// The distributed layers read through the same queues: a DistArray on the call's queue.
TEST_P(AgreementResults, DistributedReductionsFilesAndCheckpoints) {
  ::skein::test::TempDir dir("skein-agreement-results");
  auto dist_of = [](Held& s) {
    DistArray d(*s.rig.comm, *s.queue, BlockLayout::over(*s.rig.comm, {64, 3}), Dtype::float64);
    return d;
  };
  expect_held(by_watchdog(), "dist::sum", [&](Held& s, const auto&) {
    DistArray d = dist_of(s);
    (void)dist::sum(d);
  });
#if SKEIN_HAS_HDF5
  const std::string path = (dir.path() / "held.h5").string();
  {
    ::skein::test::ScopedEnv check("SKEIN_CHECK_COLLECTIVES", std::nullopt);
    Held s(by_watchdog());
    DistArray d = dist_of(s);
    dist::fill(d, 2.5);
    {
      auto file = hdf5::File::create(*s.rig.comm, path);
      file.write("before", d);
      s.all_reduce(false);
      s.all_reduce(true);
      expect_logic_error([&] { file.write("after", d); }, kNamed, "an HDF5 write");
    }
    // What was written before stays whole: another communicator reads it back.
    auto again = hdf5::File::open(MPI_COMM_WORLD, path);
    const auto before = again.read_host<double>("before");
    EXPECT_EQ(before, std::vector<double>(64 * 3, 2.5));
  }
  {
    ::skein::test::ScopedEnv check("SKEIN_CHECK_COLLECTIVES", std::nullopt);
    Held s(by_watchdog());
    DistArray d = dist_of(s);
    dist::fill(d, 1.5);
    const auto checkpoints = dir.path() / "checkpoints";
    CheckpointManager m(*s.rig.comm, checkpoints);
    m.write(1, 0.5, {{"u", d}});
    s.all_reduce(false);
    s.all_reduce(true);
    expect_logic_error([&] { m.write(2, 1.0, {{"u", d}}); }, kNamed, "a checkpoint");
    CheckpointManager reader(MPI_COMM_WORLD, checkpoints);
    const auto latest = reader.latest_complete();
    ASSERT_TRUE(latest.has_value());
    EXPECT_EQ(latest->step, 1);
  }
#endif
  EXPECT_TRUE(on_every_rank(!HasFailure()));
}

INSTANTIATE_TEST_SUITE_P(Modes, AgreementResults, testing::Values(true, false), mode_name);

}  // namespace agreement_results_test
}  // namespace

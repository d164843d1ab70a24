// SPDX-License-Identifier: BSD-3-Clause
// Test main for the MPI tests (run under mpirun with 1..N ranks). MPI is started here, without a
// Runtime, so that tests can create and destroy runtimes freely and check that Skein adopts an
// initialised MPI.
//   - Only rank 0 prints gtest's report; other ranks print their own failures, prefixed.
//   - After each test the ranks agree on the result: a rank whose test passed while another's
//     failed records a failure ("failed on rank(s) ..."), so every rank reports the same tests
//     failed and every rank exits non-zero.
//   - A watchdog aborts the job (MPI_Abort, exit code 3) when one test runs longer than
//     SKEIN_TEST_TIMEOUT seconds (default 120): a rank stuck in a collective whose partner threw
//     would otherwise hang the job until ctest's own timeout, with no word of which test.
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "mpi_support.hpp"
#include "skein/detail/leak_check.hpp"

namespace {
namespace mpi_test_main {

constexpr const char* kAgreementNote = "failed on rank(s) ";

using ::skein::test::world_rank;
using ::skein::test::world_size;

// Aborts the job when a test outlives the limit. Tests are timed from OnTestStart to the end of
// the agreement in OnTestEnd (which is itself a collective that can hang).
class Watchdog {
 public:
  explicit Watchdog(double limit_s) : limit_(limit_s), thread_([this] { watch(); }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  void start(std::string test) {
    std::lock_guard lock(mutex_);
    test_ = std::move(test);
    started_ = std::chrono::steady_clock::now();
    running_ = true;
  }
  void stop() {
    std::lock_guard lock(mutex_);
    running_ = false;
  }

 private:
  void watch() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
      wake_.wait_for(lock, std::chrono::milliseconds(250));
      if (!running_) continue;
      const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - started_;
      if (elapsed.count() > limit_) {
        std::fprintf(stderr,
                     "[ TIMEOUT  ] rank %d: %s has run for %.0f s (SKEIN_TEST_TIMEOUT=%.0f); "
                     "aborting the job\n",
                     world_rank(), test_.c_str(), elapsed.count(), limit_);
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 3);
        std::_Exit(3);  // should MPI_Abort return
      }
    }
  }

  double limit_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool running_ = false;
  std::string test_;
  std::chrono::steady_clock::time_point started_;
  std::thread thread_;  // last: starts once the rest is set up
};

class RankAgreement : public testing::EmptyTestEventListener {
 public:
  explicit RankAgreement(Watchdog& watchdog) : watchdog_(watchdog) {}

  void OnTestStart(const testing::TestInfo& info) override {
    watchdog_.start(std::string(info.test_suite_name()) + "." + info.name());
  }

  // gtest calls OnTestEnd on its listeners in reverse order, so this (appended after the default
  // printer) runs first: a failure added here is printed and counted as this test's.
  void OnTestEnd(const testing::TestInfo& info) override {
    const int failed = info.result()->Failed() ? 1 : 0;
    std::vector<int> all(static_cast<std::size_t>(world_size()), 0);
    MPI_Allgather(&failed, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
    watchdog_.stop();
    std::string ranks;
    for (std::size_t r = 0; r < all.size(); ++r) {
      if (all[r]) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    }
    if (!failed && !ranks.empty()) {
      ADD_FAILURE() << kAgreementNote << ranks;
    } else if (failed && world_rank() == 0 && ranks != "0") {
      // Rank 0's report is the job's: say which other ranks failed too.
      ADD_FAILURE() << kAgreementNote << ranks;
    }
  }

 private:
  Watchdog& watchdog_;
};

// On ranks other than 0 (whose printer is removed): their own failures, with the rank.
class RankFailurePrinter : public testing::EmptyTestEventListener {
 public:
  void OnTestPartResult(const testing::TestPartResult& result) override {
    // The agreement's own note ("failed on rank(s) ...") is rank 0's to print.
    if (!result.failed() ||
        std::string_view(result.message()).find(kAgreementNote) != std::string_view::npos)
      return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", world_rank(),
                 result.file_name() ? result.file_name() : "(unknown file)", result.line_number(),
                 result.message());
    std::fflush(stderr);
  }
};

double timeout_from_environment() {
  if (const char* value = std::getenv("SKEIN_TEST_TIMEOUT")) {
    char* end = nullptr;
    const double limit = std::strtod(value, &end);
    if (end != value && *end == '\0' && limit > 0) return limit;
    std::fprintf(stderr, "SKEIN_TEST_TIMEOUT='%s' is not a positive number of seconds; using 120\n",
                 value);
  }
  return 120.0;
}

}  // namespace mpi_test_main
}  // namespace

int main(int argc, char** argv) {
  using namespace mpi_test_main;
  // The watchdog calls MPI_Abort from its own thread: ask for full thread support (Open MPI and
  // MPICH abort from any thread in practice even below MPI_THREAD_MULTIPLE).
  int provided = 0;
  {
    skein::detail::LeakCheckPause pause;  // what Open MPI keeps until exit
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  }
  const int rank = world_rank();

  // Compiled kernels go to a cache of this rank's own, never the user's.
  std::string own_cache;
  if (!std::getenv("SKEIN_CACHE_DIR")) {
    char dir[] = "/tmp/skein-mpi-test-cache-XXXXXX";
    if (mkdtemp(dir)) {
      own_cache = dir;
      setenv("SKEIN_CACHE_DIR", dir, 1);
    }
  }

  testing::InitGoogleTest(&argc, argv);
  auto& listeners = testing::UnitTest::GetInstance()->listeners();
  if (rank != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter);
  }
  Watchdog watchdog(timeout_from_environment());
  listeners.Append(new RankAgreement(watchdog));

  if (rank == 0) {
    std::printf("[ MPI      ] %d rank(s), thread support %d\n", world_size(), provided);
    for (const auto& b : skein::test::backends()) {
      auto api = skein::Api::from_id(b.api);
      auto platform = skein::Platform::from_index(api, b.platform_idx);
      std::printf("[ backend  ] %s: %s, %zu device(s)\n", b.label.c_str(), platform.name().c_str(),
                  platform.devices().size());
    }
    std::fflush(stdout);
  }

  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  // Failures outside a test (environments, set-up of a suite) are agreed on here.
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);

  if (!own_cache.empty()) std::filesystem::remove_all(own_cache);
  skein::detail::LeakCheckPause pause;  // what Open MPI allocates in MPI_Finalize and keeps
  MPI_Finalize();
  return any_failed ? 1 : 0;
}

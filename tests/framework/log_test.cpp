// SPDX-License-Identifier: BSD-3-Clause
// Skein's one log (<skein/log.hpp>, skein/detail/log.hpp): the levels, SKEIN_LOG_LEVEL over the
// level given in code, the sink and its lines, the rank's prefix and the rank-0 policy of
// LogScope::collective, whole lines on stderr from many threads at once, and the framework's own
// messages (a foreign buffer's deleter that throws, a kept program) going through it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <skein/skein.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends.hpp"
#include "checks.hpp"
#include "scoped_env.hpp"
#include "skein/detail/log.hpp"

#if SKEIN_HAS_OPENCL
#include <skein/opencl.hpp>
#endif
#if SKEIN_HAS_CUDA
#include <cuda_runtime_api.h>

#include <skein/cuda.hpp>
#endif

namespace {
namespace log_test {

using namespace skein;
using ::skein::test::expect_logic_error;
using ::skein::test::ScopedEnv;

struct Line {
  LogLevel level;
  std::string text;
};

// Takes the log's lines for a test, at the code level `level` and with SKEIN_LOG_LEVEL unset, and
// puts back the sink, the rank, the variable's reading and the default level afterwards.
class Captured {
 public:
  explicit Captured(LogLevel level = LogLevel::warning)
      : env_("SKEIN_LOG_LEVEL", std::nullopt), rank_(detail::log_rank()) {
    (void)detail::read_log_level_from_environment("test");
    set_log_level(level);
    previous_ = set_log_sink([this](LogLevel l, std::string_view text) {
      std::lock_guard lock(mutex_);
      lines_.push_back({l, std::string(text)});
    });
  }
  ~Captured() {
    set_log_sink(std::move(previous_));
    detail::set_log_rank(rank_);
    set_log_level(LogLevel::warning);
    (void)detail::read_log_level_from_environment("test");  // env_ is put back after this
  }
  Captured(const Captured&) = delete;
  Captured& operator=(const Captured&) = delete;

  std::vector<Line> take() {
    std::lock_guard lock(mutex_);
    return std::exchange(lines_, {});
  }

 private:
  ScopedEnv env_;
  detail::LogRank rank_;
  LogSink previous_;
  std::mutex mutex_;
  std::vector<Line> lines_;
};

// Every level logs one message; returns the levels whose messages came through.
std::vector<LogLevel> shown(Captured& c) {
  for (LogLevel l : {LogLevel::error, LogLevel::warning, LogLevel::info, LogLevel::debug}) {
    log_message(l, fmt::format("a message at {}", name(l)));
  }
  std::vector<LogLevel> out;
  for (const auto& line : c.take()) {
    EXPECT_EQ(line.text, fmt::format("skein: a message at {}", name(line.level)));
    out.push_back(line.level);
  }
  return out;
}

TEST(Log, LevelsFromWarningByDefaultToDebug) {
  Captured c;
  detail::set_log_rank({});
  EXPECT_EQ(log_level(), LogLevel::warning);
  EXPECT_EQ(shown(c), (std::vector<LogLevel>{LogLevel::error, LogLevel::warning}));
  EXPECT_TRUE(log_enabled(LogLevel::warning));
  EXPECT_FALSE(log_enabled(LogLevel::info));
  EXPECT_FALSE(log_enabled(LogLevel::off));  // "off" is a threshold, never a message's level
  set_log_level(LogLevel::debug);
  EXPECT_EQ(shown(c), (std::vector<LogLevel>{LogLevel::error, LogLevel::warning, LogLevel::info,
                                             LogLevel::debug}));
  set_log_level(LogLevel::error);
  EXPECT_EQ(shown(c), (std::vector<LogLevel>{LogLevel::error}));
  set_log_level(LogLevel::off);
  EXPECT_TRUE(shown(c).empty());
  log_message(LogLevel::off, "never");
  EXPECT_TRUE(c.take().empty());
  for (LogLevel l :
       {LogLevel::off, LogLevel::error, LogLevel::warning, LogLevel::info, LogLevel::debug}) {
    EXPECT_FALSE(name(l).empty());
  }
}

TEST(Log, VariableOverridesTheCode) {
  Captured c(LogLevel::error);
  detail::set_log_rank({});
  {
    ScopedEnv env("SKEIN_LOG_LEVEL", "info");
    EXPECT_EQ(detail::read_log_level_from_environment("test"),
              std::optional<LogLevel>(LogLevel::info));
    EXPECT_EQ(log_level(), LogLevel::info);
    EXPECT_EQ(shown(c),
              (std::vector<LogLevel>{LogLevel::error, LogLevel::warning, LogLevel::info}));
    set_log_level(LogLevel::debug);  // the code again: the variable still wins
    EXPECT_EQ(log_level(), LogLevel::info);
  }
  {
    ScopedEnv env("SKEIN_LOG_LEVEL", "off");
    (void)detail::read_log_level_from_environment("test");
    EXPECT_TRUE(shown(c).empty());
  }
  {
    ScopedEnv env("SKEIN_LOG_LEVEL", "");  // empty is unset: the code's level
    EXPECT_EQ(detail::read_log_level_from_environment("test"), std::nullopt);
    EXPECT_EQ(log_level(), LogLevel::debug);
  }
  for (const char* bad : {"loud", "WARNING", "2", " info"}) {
    ScopedEnv env("SKEIN_LOG_LEVEL", bad);
    expect_logic_error(
        [] { (void)detail::read_log_level_from_environment("Runtime"); },
        {fmt::format("SKEIN_LOG_LEVEL='{}'", bad), "Runtime", "off", "warning", "debug"});
    EXPECT_EQ(log_level(), LogLevel::debug) << "a refused value changed the level";
  }
}

TEST(Log, LinesCarryTheRankAndCollectiveOnesComeFromRankZero) {
  Captured c;
  detail::set_log_rank({.rank = 3, .prefix = "rank 3: "});
  log_message(LogLevel::warning, "mine");
  log_message(LogLevel::warning, "everyone's", LogScope::collective);
  detail::log(LogLevel::error, LogScope::rank, "{} of {}", 2, "three");
  auto lines = c.take();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].text, "skein: rank 3: mine");
  EXPECT_EQ(lines[0].level, LogLevel::warning);
  EXPECT_EQ(lines[1].text, "skein: rank 3: 2 of three");
  EXPECT_EQ(lines[1].level, LogLevel::error);
  detail::set_log_rank({.rank = 0, .prefix = "rank 0: "});
  log_message(LogLevel::warning, "everyone's", LogScope::collective);
  detail::set_log_rank(
      {});  // no rank known (a program of the framework alone): every process prints
  log_message(LogLevel::warning, "everyone's", LogScope::collective);
  lines = c.take();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].text, "skein: rank 0: everyone's");
  EXPECT_EQ(lines[1].text, "skein: everyone's");
}

TEST(Log, SinksAreReplacedAndTheirErrorsDropped) {
  Captured c;
  detail::set_log_rank({});
  int calls = 0;
  LogSink mine = set_log_sink([&](LogLevel, std::string_view) {
    ++calls;
    throw std::runtime_error("a sink that throws");
  });
  EXPECT_TRUE(static_cast<bool>(mine)) << "the previous sink (Captured's) was not returned";
  EXPECT_NO_THROW(log_message(LogLevel::error, "dropped"));
  EXPECT_EQ(calls, 1);
  LogSink thrower = set_log_sink(std::move(mine));
  EXPECT_TRUE(static_cast<bool>(thrower));
  log_message(LogLevel::error, "kept");
  const auto lines = c.take();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].text, "skein: kept");
}

// Line i of thread t: lengths from a few bytes to about 3 KiB.
std::string text_of(int t, int i) {
  const auto length = static_cast<std::size_t>((t * 37 + i * 11) % 3000);
  return fmt::format("thread {} line {} {}", t, i, std::string(length, static_cast<char>('a' + t)));
}

// Runs `write_lines(w)` for writers 0..writers-1 with stderr going to one file (opened for
// appending, as a terminal or mpirun's pipe takes the writes of several processes), and checks
// that the file holds every line of every writer, each whole and once.
template <class Start>
void expect_whole_lines(int writers, int lines, Start&& start) {
  Captured c;
  detail::set_log_rank({.rank = 1, .prefix = "rank 1: "});
  LogSink ours = set_log_sink({});  // the default, to stderr
  const std::string file =
      (std::filesystem::temp_directory_path() / fmt::format("skein-log-test-{}.txt", ::getpid()))
          .string();
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
  ASSERT_GE(fd, 0);
  const int saved = ::dup(STDERR_FILENO);
  ASSERT_GE(saved, 0);
  ::dup2(fd, STDERR_FILENO);
  start();
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  ::close(fd);
  set_log_sink(std::move(ours));
  std::set<std::string> want;
  for (int w = 0; w < writers; ++w) {
    for (int i = 0; i < lines; ++i) want.insert("skein: rank 1: " + text_of(w, i));
  }
  std::ifstream in(file);
  std::string line;
  std::size_t count = 0, broken = 0;
  while (std::getline(in, line)) {
    ++count;
    if (want.erase(line) != 1 && ++broken <= 3)
      ADD_FAILURE() << "a broken or repeated line: " << line.substr(0, 80);
  }
  EXPECT_EQ(broken, 0u);
  EXPECT_EQ(count, static_cast<std::size_t>(writers * lines));
  EXPECT_TRUE(want.empty()) << want.size() << " line(s) missing";
  std::filesystem::remove(file);
}

constexpr int kWriters = 6, kLines = 300;

// The default sink from many threads at once: every line arrives whole, once.
TEST(Log, DefaultSinkWritesWholeLinesFromThreads) {
  expect_whole_lines(kWriters, kLines, [] {
    std::vector<std::thread> threads;
    for (int t = 0; t < kWriters; ++t) {
      threads.emplace_back([t] {
        for (int i = 0; i < kLines; ++i) log_message(LogLevel::warning, text_of(t, i));
      });
    }
    for (auto& th : threads) th.join();
  });
}

// And from several processes at once, as ranks sharing a terminal or mpirun's output: no lock is
// shared there, so only writing each line in one write() keeps it whole.
TEST(Log, DefaultSinkWritesWholeLinesFromProcesses) {
  expect_whole_lines(kWriters, kLines, [] {
    int go[2];
    ASSERT_EQ(::pipe(go), 0);
    std::vector<pid_t> children;
    for (int p = 0; p < kWriters; ++p) {
      const pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        // The child waits until every writer exists (the pipe's write end closes), then writes.
        ::close(go[1]);
        char ready = 0;
        (void)!::read(go[0], &ready, 1);
        for (int i = 0; i < kLines; ++i) log_message(LogLevel::warning, text_of(p, i));
        ::_exit(0);
      }
      children.push_back(pid);
    }
    ::close(go[0]);
    ::close(go[1]);
    for (const pid_t pid : children) {
      int status = 0;
      EXPECT_EQ(::waitpid(pid, &status, 0), pid);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a writer process failed";
    }
  });
}

class Logs : public ::skein::test::BackendTest {};

// A Context reads SKEIN_LOG_LEVEL when it is made (a framework program has no Runtime), and
// refuses a bad value there.
TEST_P(Logs, ContextReadsTheVariable) {
  Captured c(LogLevel::error);
  {
    ScopedEnv env("SKEIN_LOG_LEVEL", "debug");
    const Context ctx = context();
    EXPECT_EQ(log_level(), LogLevel::debug);
  }
  {
    ScopedEnv env("SKEIN_LOG_LEVEL", "chatty");
    expect_logic_error([&] { (void)context(); }, {"SKEIN_LOG_LEVEL='chatty'", "Context"});
  }
}

// A foreign buffer whose deleter throws: the error is logged (it cannot be raised from the
// buffer's release) at error level, and not at all when the log is off.
TEST_P(Logs, ThrowingDeleterOfAForeignBufferIsLogged) {
  const Context ctx = context();
  for (const LogLevel level : {LogLevel::error, LogLevel::off}) {
    Captured c(level);
    detail::set_log_rank({});
    int deleted = 0;
    auto deleter = [&deleted] {
      ++deleted;
      throw std::runtime_error("boom");
    };
    // The line's start and end (the CUDA one names the device in between).
    std::string expected, expected_end;
    if (GetParam().api == ApiId::opencl) {
#if SKEIN_HAS_OPENCL
      cl_int err = CL_SUCCESS;
      cl_mem mem =
          clCreateBuffer(opencl::native_context(ctx), CL_MEM_READ_WRITE, 256, nullptr, &err);
      ASSERT_EQ(err, CL_SUCCESS);
      { Buffer b = opencl::buffer_from_native(ctx, 0, mem, 256, deleter); }
      clReleaseMemObject(mem);
      expected = "skein: the deleter of a foreign OpenCL buffer threw";
#endif
    } else {
#if SKEIN_HAS_CUDA
      ASSERT_EQ(cudaSetDevice(static_cast<int>(cuda::native_device(ctx.device(0)))), cudaSuccess);
      void* p = nullptr;
      ASSERT_EQ(cudaMalloc(&p, 256), cudaSuccess);
      {
        Buffer b = cuda::buffer_from_native(ctx, 0, reinterpret_cast<CUdeviceptr>(p), 256, deleter);
      }
      cudaFree(p);
      expected = "skein: the deleter of a foreign buffer on ";
      expected_end = " threw: boom";
#endif
    }
    if (expected.empty()) GTEST_SKIP() << "this build has no interop for the backend";
    EXPECT_EQ(deleted, 1);
    const auto lines = c.take();
    if (level == LogLevel::off) {
      EXPECT_TRUE(lines.empty()) << lines.front().text;
    } else {
      ASSERT_EQ(lines.size(), 1u);
      EXPECT_EQ(lines[0].level, LogLevel::error);
      const std::string& text = lines[0].text;
      EXPECT_TRUE(expected_end.empty() ? text == expected
                                       : text.starts_with(expected) && text.ends_with(expected_end))
          << text;
    }
  }
}

// A program built with keep=true says where it left its files: a report asked for, at warning
// (shown by default), hidden at error.
TEST_P(Logs, KeptProgramSaysWhere) {
  const Context ctx = context();
  for (const LogLevel level : {LogLevel::warning, LogLevel::error}) {
    Captured c(level);
    detail::set_log_rank({});
    Program p(ctx, "KERNEL void nothing(GLOBAL_MEM float* x) { x[0] = 1.0f; }",
              {.keep = true, .name = "log_test_kept"});
    ASSERT_TRUE(p.kept_directory().has_value());
    const auto lines = c.take();
    if (level == LogLevel::error) {
      EXPECT_TRUE(lines.empty());
    } else {
      ASSERT_EQ(lines.size(), 1u);
      EXPECT_EQ(lines[0].level, LogLevel::warning);
      EXPECT_EQ(lines[0].text,
                fmt::format("skein: kept the sources and binaries of 'log_test_kept' in {}",
                            p.kept_directory()->string()));
    }
    std::filesystem::remove_all(*p.kept_directory());
  }
}

SKEIN_INSTANTIATE_BACKENDS(Logs);

}  // namespace log_test
}  // namespace

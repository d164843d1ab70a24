// SPDX-License-Identifier: BSD-3-Clause
// Default contexts and context caches: make_default_context (the device order, the filter, the
// errors), the process's default context under threads, ContextMemo (values per context and key,
// dropped with the context, the memo and clear_context_caches), clear_context_caches making
// Programs and generated kernels load or compile again, largest_allocation and binary_id against
// the backends' own queries, and OpenCL platforms from native handles.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <regex>
#include <skein/skein.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "checks.hpp"
#include "skein/detail/compile_cache.hpp"
#include "skein/detail/impl_access.hpp"

#if SKEIN_HAS_OPENCL
#include <skein/opencl.hpp>
#endif

namespace skein::test {
namespace {
namespace context_tools_test {

// A regular expression matching exactly `text`.
std::string exactly(const std::string& text) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return "^" + std::regex_replace(text, special, R"(\$&)") + "$";
}

DeviceFilter only_platform(const Platform& platform) {
  return {.platform_include_masks = {exactly(platform.name())}};
}

// A kernel source no cache has seen: the nonce makes its compile key new in every run.
std::string fresh_source() {
  std::random_device rd;
  return fmt::format(R"(// nonce {:08x}{:08x}
KERNEL void scale(GLOBAL_MEM float* y, GLOBAL_MEM const float* x, float a, int n)
{{
    const int i = get_global_id(0);
    if (i < n) y[i] = a * x[i];
}}
)",
                     rd(), rd());
}

void check_scale(const Queue& queue, const Program& program, std::size_t n) {
  const auto x = random_reals<float>(n, static_cast<std::uint32_t>(n));
  auto dx = Array::from_host(queue, x);
  auto dy = Array::zeros(queue, {n}, Dtype::float32);
  program.kernel("scale")(queue, n, std::nullopt, dy, dx, 3.0f, static_cast<std::int32_t>(n));
  const auto y = dy.get<float>();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], 3.0f * x[i]) << i;
}

class DefaultContext : public BackendTest {};

TEST_P(DefaultContext, TakesTheFirstDeviceOfTheFilteredPlatform) {
  const auto expected = devices();
  ASSERT_FALSE(expected.empty());
  const Context c = make_default_context(GetParam().api, only_platform(platform()));
  ASSERT_EQ(c.num_devices(), 1u);
  EXPECT_EQ(c.device(0), expected.front());
  Queue queue(c);
  auto a = Array::from_host(queue, std::vector<float>{1, 2, 3});
  EXPECT_EQ(a.get<float>(), (std::vector<float>{1, 2, 3}));

  // Without an API: the first available API's first device (CUDA first).
  const Context any = make_default_context();
  const Api first_api = Api::all_available().front();
  EXPECT_EQ(any.api(), first_api);
  EXPECT_EQ(any.device(0), select_devices(first_api).front());
}

TEST_P(DefaultContext, NoMatchingDeviceNamesTheFilterAndLooserFilterWorks) {
  const DeviceFilter none{.device_include_masks = {"^no device is called this$"}};
  try {
    (void)make_default_context(GetParam().api, none);
    FAIL() << "expected LogicError";
  } catch (const LogicError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no device is called this"), std::string::npos) << what;
    EXPECT_NE(what.find(std::string(name(GetParam().api))), std::string::npos) << what;
    EXPECT_EQ(e.call(), "make_default_context");
  }
  const Context c = make_default_context(GetParam().api);
  EXPECT_EQ(c.api().id(), GetParam().api);
}

TEST(DefaultContextSlot, SetGetClearAcrossThreads) {
  set_default_context(std::nullopt);
  EXPECT_FALSE(default_context().has_value());
  const Context c = make_default_context();
  set_default_context(c);
  ASSERT_TRUE(default_context().has_value());
  EXPECT_EQ(*default_context(), c);

  // Threads that set and read at once always see one of the contexts set, never a torn value.
  std::vector<Context> contexts;
  for (int i = 0; i < 4; ++i) contexts.push_back(make_default_context());
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 500; ++k) {
        set_default_context(contexts[(t + k) % contexts.size()]);
        const auto got = default_context();
        if (!got || std::find(contexts.begin(), contexts.end(), *got) == contexts.end()) ++bad;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);

  // The slot holds its context: a context set and dropped by the caller stays usable.
  std::weak_ptr<Context::Impl> watch;
  {
    const Context held = make_default_context();
    watch = detail::impl_of(held);
    set_default_context(held);
  }
  EXPECT_FALSE(watch.expired());
  {
    Queue queue(*default_context());
    EXPECT_EQ(Array::from_host(queue, std::vector<int>{7}).get<int>(), std::vector<int>{7});
  }
  set_default_context(std::nullopt);
  EXPECT_FALSE(default_context().has_value());
  EXPECT_TRUE(watch.expired());
}

// --- The fallback past a device another process has filled (CUDA) ----------------------------
// A real refusal: another process holds all of device 0's memory, so a new process's
// cuDevicePrimaryCtxRetain there fails with CUDA_ERROR_OUT_OF_MEMORY (seen on an H200). This
// process cannot be the one that tries (it has made contexts on device 0 already), so two
// children of this very test program do the work: DISABLED_FillDeviceZero fills device 0 and
// waits, DISABLED_MakeDefaultContext reports what make_default_context() gives. They find each
// other through files named after this process's id (each child is exec'd by popen's shell, so
// its parent is this process).

std::filesystem::path fallback_file(const char* what, long pid) {
  return std::filesystem::temp_directory_path() / fmt::format("skein-fallback-{}-{}", pid, what);
}

// Without gtest's sharding variables: the child runs its test whatever shard this process is
// (env execs the binary in its place, so the child's parent is still this process).
std::string self_command(const std::string& test) {
  return fmt::format(
      "exec env -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_INDEX -u GTEST_SHARD_STATUS_FILE '{}' "
      "--gtest_also_run_disabled_tests --gtest_filter={} 2>&1",
      std::filesystem::read_symlink("/proc/self/exe").string(), test);
}

TEST(DefaultContextFallbackChild, DISABLED_FillDeviceZero) {
  const long parent = static_cast<long>(getppid());
  const Context c = Context::from_devices(
      Device::from_index(Platform::from_index(Api::from_id(ApiId::cuda), 0), 0));
  std::vector<Buffer> held;
  for (std::size_t chunk = std::size_t{1} << 30; chunk >= (std::size_t{1} << 20);) {
    try {
      held.push_back(Buffer::allocate(c, 0, chunk));
    } catch (const MemoryError&) {
      chunk /= 2;
    }
  }
  std::ofstream(fallback_file("full", parent)) << held.size() << "\n";
  // Until the parent is done (at most a minute).
  for (int i = 0; i < 1200 && !std::filesystem::exists(fallback_file("stop", parent)); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

TEST(DefaultContextFallbackChild, DISABLED_MakeDefaultContext) {
  std::ofstream out(fallback_file("result", static_cast<long>(getppid())));
  try {
    const Context c = make_default_context(ApiId::cuda);
    out << "chose " << c.device(0).index() << "\n";
  } catch (const Error& e) {
    out << "error " << e.what() << "\n";
  } catch (const std::exception& e) {
    out << "not a skein::Error: " << e.what() << "\n";
  }
}

// All that a child printed (its gtest output), for the parent's failure messages.
std::string read_all(FILE* pipe) {
  std::string text;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) text.append(buf, n);
  return text;
}

TEST(DefaultContextFallback, PassesOverADeviceAnotherProcessFilled) {
  std::size_t num_cuda = 0;
  try {
    num_cuda = Platform::from_index(Api::from_id(ApiId::cuda), 0).devices().size();
  } catch (const Error&) {
  }
  if (num_cuda == 0) GTEST_SKIP() << "needs a CUDA device";
  const long me = static_cast<long>(getpid());
  for (const char* f : {"full", "stop", "result"}) std::filesystem::remove(fallback_file(f, me));
  FILE* filler =
      popen(self_command("DefaultContextFallbackChild.DISABLED_FillDeviceZero").c_str(), "r");
  ASSERT_NE(filler, nullptr);
  for (int i = 0; i < 1200 && !std::filesystem::exists(fallback_file("full", me)); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::string result, checker_output;
  if (std::filesystem::exists(fallback_file("full", me))) {
    FILE* checker =
        popen(self_command("DefaultContextFallbackChild.DISABLED_MakeDefaultContext").c_str(), "r");
    if (checker) {
      checker_output = read_all(checker);
      pclose(checker);
    }
    std::ifstream in(fallback_file("result", me));
    std::getline(in, result, '\0');
  }
  std::ofstream(fallback_file("stop", me)) << "\n";
  const std::string filler_output = read_all(filler);
  pclose(filler);
  for (const char* f : {"full", "stop", "result"}) std::filesystem::remove(fallback_file(f, me));
  ASSERT_FALSE(result.empty()) << "the children did not report (device 0 not filled?)\nfiller:\n"
                               << filler_output << "\nchecker:\n"
                               << checker_output;
  if (num_cuda >= 2) {
    EXPECT_EQ(result, "chose 1\n");  // device 0 refused, device 1 taken
  } else {
    EXPECT_EQ(result.rfind("error ", 0), 0u) << result;
    EXPECT_NE(result.find("no context could be made on any of the 1 device(s) tried"),
              std::string::npos)
        << result;
    EXPECT_NE(result.find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << result;
  }
}

class ContextCaches : public BackendTest {};

struct Tracked {
  explicit Tracked(int v, std::atomic<int>* alive) : value(v), alive(alive) { ++*alive; }
  ~Tracked() { --*alive; }
  Tracked(const Tracked&) = delete;
  Tracked& operator=(const Tracked&) = delete;
  int value;
  std::atomic<int>* alive;
};

TEST_P(ContextCaches, MemoKeepsValuesPerContextAndKeyAndDropsThemWithTheContext) {
  std::atomic<int> calls{0}, alive{0};
  ContextMemo<std::shared_ptr<Tracked>, int, std::string> memo(
      [&](const Context&, const int& n, const std::string& s) {
        ++calls;
        return std::make_shared<Tracked>(n * 10 + static_cast<int>(s.size()), &alive);
      });
  std::optional<Context> a = context();
  std::optional<Context> b = Context::from_devices(devices().front());
  ASSERT_FALSE(*a == *b);

  const auto a1 = memo(*a, 1, "x");
  EXPECT_EQ(a1->value, 11);
  EXPECT_EQ(memo(*a, 1, "x"), a1);  // the same object, not recomputed
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(memo(*a, 2, "xy")->value, 22);
  EXPECT_EQ(calls.load(), 2);
  const auto b1 = memo(*b, 1, "x");  // another context: computed again
  EXPECT_NE(b1, a1);
  EXPECT_EQ(calls.load(), 3);
  EXPECT_EQ(memo.size(*a), 2u);
  EXPECT_EQ(memo.size(*b), 1u);

  // clear(context) drops one context's values only.
  memo.clear(*b);
  EXPECT_EQ(memo.size(*b), 0u);
  EXPECT_EQ(memo.size(*a), 2u);
  EXPECT_NE(memo(*b, 1, "x"), b1);
  EXPECT_EQ(calls.load(), 4);

  // An exception stores nothing; the next call computes.
  ContextMemo<int, int> failing([&](const Context&, const int& n) -> int {
    if (n < 0) throw std::invalid_argument("negative");
    return n + 1;
  });
  EXPECT_THROW(failing(*a, -1), std::invalid_argument);
  EXPECT_EQ(failing.size(*a), 0u);
  EXPECT_EQ(failing(*a, 4), 5);

  // Values go with their context: only a1 (held here) and b's value stay.
  const int before = alive.load();
  EXPECT_EQ(before, 4);  // a1, (2,"xy"), b1 (held here), b's new value
  a.reset();
  EXPECT_EQ(alive.load(), 3);  // (2,"xy") went with a; a1 is held here
}

TEST_P(ContextCaches, MemoValuesGoWithTheMemoAndWithClearContextCaches) {
  std::atomic<int> alive{0};
  const Context c = context();
  {
    ContextMemo<std::shared_ptr<Tracked>, int> memo(
        [&](const Context&, const int& n) { return std::make_shared<Tracked>(n, &alive); });
    (void)memo(c, 1);
    (void)memo(c, 2);
    EXPECT_EQ(alive.load(), 2);
  }
  EXPECT_EQ(alive.load(), 0);  // the memo's destructor dropped them from the context

  // A memoised Program holds its context; clear_context_caches releases both.
  static const ContextMemo<Program> programs(
      [](const Context& ctx) { return Program(ctx, fresh_source()); });
  std::weak_ptr<Context::Impl> watch;
  {
    const Context held = Context::from_devices(devices().front());
    watch = detail::impl_of(held);
    Queue queue(held);
    check_scale(queue, programs(held), 100);
  }
  EXPECT_FALSE(watch.expired());  // the memo's Program keeps the context
  clear_context_caches();
  EXPECT_TRUE(watch.expired());
}

TEST_P(ContextCaches, ThreadsShareOneValuePerKey) {
  std::atomic<int> calls{0};
  const ContextMemo<std::shared_ptr<int>, int> memo([&](const Context&, const int& n) {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return std::make_shared<int>(n);
  });
  const Context c = context();
  std::vector<std::vector<std::shared_ptr<int>>> seen(8);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < seen.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 16; ++k) seen[t].push_back(memo(c, k));
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(memo.size(c), 16u);
  for (std::size_t t = 0; t < seen.size(); ++t) {
    for (int k = 0; k < 16; ++k) {
      EXPECT_EQ(*seen[t][k], k);
      EXPECT_EQ(seen[t][k], seen[0][k]) << "thread " << t << " key " << k;  // the value stored
    }
  }
  EXPECT_GE(calls.load(), 16);
}

TEST_P(ContextCaches, ClearedProgramsLoadAgainAndOldOnesStayUsable) {
  const Context c = context();
  Queue queue(c);
  const std::string source = fresh_source();
  const bool disk = detail::CompileCache::instance().enabled();

  const std::size_t loaded0 = loaded_programs(c);
  const Program p1(c, source);
  EXPECT_FALSE(p1.from_cache(0));  // a new source: compiled
  EXPECT_EQ(loaded_programs(c), loaded0 + 1);
  const Program p2(c, source);
  EXPECT_TRUE(p2.from_cache(0));  // the context's loaded program
  EXPECT_EQ(loaded_programs(c), loaded0 + 1);

  clear_context_caches();
  EXPECT_EQ(loaded_programs(c), 0u);
  const Program p3(c, source);
  EXPECT_EQ(loaded_programs(c), 1u);  // loaded anew, not taken from the context
  // From the disk cache when it is on; compiled again when it is off (framework.pocl4.nocache).
  EXPECT_EQ(p3.from_cache(0), disk);
  for (std::size_t n : {1u, 63u, 65u, 4099u}) {
    SCOPED_TRACE(n);
    check_scale(queue, p1, n);  // made before the clear: still usable
    check_scale(queue, p3, n);
  }
}

TEST_P(ContextCaches, GeneratedKernelsAreBuiltAgainAfterClear) {
  const Context c = context();
  Queue queue(c);
  const ElementwiseKernel k("float a, float x", "float y", "y = a * x + 1.0f",
                            {.name = "ctxtools_cleared"});
  const std::size_t n = 1000;
  const auto x = random_reals<float>(n, 5);
  auto dx = Array::from_host(queue, x);
  auto check = [&] {
    auto y = k(queue, {2.0f, dx})[0].get<float>();
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], 2.0f * x[i] + 1.0f) << i;
  };
  check();
  const std::size_t built = k.programs_built();
  check();
  EXPECT_EQ(k.programs_built(), built);  // kept in memory
  clear_context_caches();
  EXPECT_EQ(loaded_programs(c), 0u);
  check();
  EXPECT_EQ(k.programs_built(), built + 1);  // built again
  EXPECT_EQ(loaded_programs(c), 1u);
  check();
  EXPECT_EQ(k.programs_built(), built + 1);
}

TEST_P(ContextCaches, LargestAllocationIsFreeMemoryBoundedByTheAllocationLimit) {
  const Context c = context();
  const auto& p = c.device(0).params();
  const MemoryInfo before = memory_info(c, 0);
  const std::size_t largest = largest_allocation(c, 0);
  EXPECT_GT(largest, 0u);
  EXPECT_LE(largest, p.max_alloc_size);
  if (GetParam().api == ApiId::opencl) {
    // No other process changes OpenCL's estimate: exact.
    EXPECT_EQ(largest, std::min(p.max_alloc_size, before.free));
    Buffer held = Buffer::allocate(c, 0, 64 << 20);
    EXPECT_EQ(largest_allocation(c, 0), std::min(p.max_alloc_size, before.free - (64 << 20)));
  } else {
    // CUDA: the driver's free memory, which other processes change meanwhile.
    EXPECT_LE(largest, before.total);
    Buffer held = Buffer::allocate(c, 0, std::min<std::size_t>(largest / 2, 256 << 20));
    EXPECT_EQ(held.size(), std::min<std::size_t>(largest / 2, 256 << 20));
  }
  try {
    (void)largest_allocation(c, 7);
    FAIL() << "expected LogicError";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("device index 7"), std::string::npos) << e.what();
  }
  EXPECT_GT(largest_allocation(c, 0), 0u);
}

TEST_P(ContextCaches, BinaryIdNamesWhatTheDeviceRuns) {
  for (const auto& d : devices()) {
    const std::string id = binary_id(d);
    if (GetParam().api == ApiId::cuda) {
      ASSERT_TRUE(d.params().compute_capability);
      const auto [major, minor] = *d.params().compute_capability;
      EXPECT_EQ(id, fmt::format("sm_{}{}", major, minor));
    } else {
#if SKEIN_HAS_OPENCL
      // Against the OpenCL queries themselves.
      cl_device_id dev = opencl::native_device(d);
      char device_name[512] = {}, driver[512] = {}, platform_name[512] = {}, version[512] = {};
      cl_platform_id plat = nullptr;
      ASSERT_EQ(clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(device_name) - 1, device_name, nullptr),
                CL_SUCCESS);
      ASSERT_EQ(clGetDeviceInfo(dev, CL_DRIVER_VERSION, sizeof(driver) - 1, driver, nullptr),
                CL_SUCCESS);
      ASSERT_EQ(clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof(plat), &plat, nullptr), CL_SUCCESS);
      ASSERT_EQ(clGetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof(platform_name) - 1, platform_name,
                                  nullptr),
                CL_SUCCESS);
      ASSERT_EQ(clGetPlatformInfo(plat, CL_PLATFORM_VERSION, sizeof(version) - 1, version, nullptr),
                CL_SUCCESS);
      EXPECT_EQ(id, fmt::format("{} {} / {} / {}", platform_name, version, device_name, driver));
#endif
    }
  }
}

// grunnur's render_args: positional arguments of a parameterised template are a Snippet's.
TEST_P(ContextCaches, RenderArgsAreASnippetsArguments) {
  const Context c = context();
  Queue queue(c);
  const Snippet kernel({"ctype", "factor"}, R"(
KERNEL void mul(GLOBAL_MEM ${ctype}* y, GLOBAL_MEM const ${ctype}* x, int n)
{
    const int i = get_global_id(0);
    if (i < n) y[i] = x[i] * ${factor};
}
)");
  const std::vector<std::string> render_args{"int", "7"};
  const Program p(c, render(kernel, render_args));
  for (std::size_t n : {1u, 63u, 65u}) {
    std::vector<std::int32_t> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<std::int32_t>(i) - 5;
    auto dx = Array::from_host(queue, x);
    auto dy = Array::zeros(queue, {n}, Dtype::int32);
    p.kernel("mul")(queue, n, std::nullopt, dy, dx, static_cast<std::int32_t>(n));
    const auto y = dy.get<std::int32_t>();
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], 7 * x[i]) << i;
  }
  // A wrong number of arguments is the template's error.
  EXPECT_THROW((void)render(kernel, std::vector<std::string>{"int"}), RenderError);
}

#if SKEIN_HAS_OPENCL
TEST_P(ContextCaches, OpenclPlatformsFromNativeHandles) {
  if (GetParam().api != ApiId::opencl) {
    // CUDA has one platform and no handle for it.
    EXPECT_THROW((void)opencl::native_platform(platform()), LogicError);
    return;
  }
  cl_uint count = 0;
  ASSERT_EQ(clGetPlatformIDs(0, nullptr, &count), CL_SUCCESS);
  std::vector<cl_platform_id> ids(count);
  ASSERT_EQ(clGetPlatformIDs(count, ids.data(), nullptr), CL_SUCCESS);
  const Platform mine = platform();
  bool found = false;
  for (cl_platform_id id : ids) {
    const Platform p = opencl::platform_from_native(id);
    EXPECT_EQ(opencl::native_platform(p), id);
    char name_buf[512] = {};
    ASSERT_EQ(clGetPlatformInfo(id, CL_PLATFORM_NAME, sizeof(name_buf) - 1, name_buf, nullptr),
              CL_SUCCESS);
    EXPECT_EQ(p.name(), std::string(name_buf));
    EXPECT_EQ(p, Platform::from_index(api(), p.index()));  // the very Platform Skein lists
    if (p == mine) found = true;
  }
  EXPECT_TRUE(found);
  EXPECT_THROW((void)opencl::platform_from_native(nullptr), LogicError);
  // A handle of another kind (a device) is not a platform the loader lists.
  try {
    (void)opencl::platform_from_native(
        reinterpret_cast<cl_platform_id>(opencl::native_device(devices().front())));
    FAIL() << "expected LogicError";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("not one of the OpenCL loader's platforms"),
              std::string::npos)
        << e.what();
  }
  // And the platform adopted makes contexts as any other.
  const Context c = Context::from_devices(opencl::platform_from_native(ids.front()).devices());
  EXPECT_GE(c.num_devices(), 1u);
}
#endif

SKEIN_INSTANTIATE_BACKENDS(DefaultContext);
SKEIN_INSTANTIATE_BACKENDS(ContextCaches);

}  // namespace context_tools_test
}  // namespace
}  // namespace skein::test

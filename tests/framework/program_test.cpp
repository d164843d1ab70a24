// SPDX-License-Identifier: BSD-3-Clause
// Programs and kernels: one source with the prelude gives the same results on every backend;
// multi-device launches with per-device sizes and arguments; argument checks; compile errors that
// point at the right line; the disk cache across processes.
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <skein/program.hpp>
#include <skein/skein.hpp>

#include "skein/detail/compile_error.hpp"
#include "backends.hpp"
#include "checks.hpp"
#include "scoped_env.hpp"

namespace skein::test {
namespace {
namespace program_test {

class Programs : public BackendTest {};

const char* kAxpy = R"(
KERNEL void axpy(GLOBAL_MEM float* y, GLOBAL_MEM const float* x, float a, int n)
{
    const int i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}
)";

TEST_P(Programs, OneSourceGivesTheHostResultAtEdgeSizes) {
  auto ctx = context();
  Queue queue(ctx);
  Program program(ctx, kAxpy);
  auto axpy = program.kernel("axpy");
  EXPECT_EQ(axpy.name(), "axpy");
  for (std::size_t n : {1u, 2u, 7u, 257u, 1009u, 65536u + 3u}) {
    SCOPED_TRACE(n);
    const auto x = random_reals<float>(n, 1 + static_cast<std::uint32_t>(n));
    const auto y0 = random_reals<float>(n, 2 + static_cast<std::uint32_t>(n));
    auto dx = Array::from_host(queue, x);
    auto dy = Array::from_host(queue, y0);
    const float a = 1.75f;
    // The local size is chosen (n may be prime): it must divide n.
    auto prepared = axpy.prepare(queue, n);
    EXPECT_EQ(n % prepared.local_size(0)[0], 0u);
    prepared(dy, dx, a, static_cast<std::int32_t>(n));
    const auto y = dy.get<float>();
    // Devices may fuse the multiply-add (one rounding instead of two).
    for (std::size_t i = 0; i < n; ++i) {
      const double ref = double(a) * x[i] + y0[i];
      ASSERT_NEAR(y[i], ref, 2e-7 * (std::abs(double(a) * x[i]) + std::abs(y0[i]))) << i;
    }
  }
}

TEST_P(Programs, TwoDimensionalIdsLocalMemoryAndBarriers) {
  auto ctx = context();
  Queue queue(ctx);
  // Each work group sums its 16x4 tile through local memory; ids follow OpenCL's meaning on both
  // backends (dimension 0 is the fastest).
  Program program(ctx, R"(
KERNEL void tiles(GLOBAL_MEM int* out, GLOBAL_MEM const int* in, int width)
{
    LOCAL_MEM int tile[64];
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int gx = get_global_id(0), gy = get_global_id(1);
    tile[ly * 16 + lx] = in[gy * width + gx];
    LOCAL_BARRIER;
    if (lx == 0 && ly == 0) {
        int s = 0;
        for (int k = 0; k < 64; ++k) s += tile[k];
        out[get_group_id(1) * get_num_groups(0) + get_group_id(0)] = s;
    }
    if (gx == 0 && gy == 0) out[get_num_groups(0) * get_num_groups(1)] =
        (int)(get_global_size(0) * 1000 + get_global_size(1) * 10 + get_local_size(1));
}
)");
  const int width = 48, height = 20;
  std::vector<std::int32_t> in(width * height);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::int32_t>(i * 7 % 101);
  auto din = Array::from_host(queue, in);
  const int groups_x = width / 16, groups_y = height / 4;
  auto dout = Array::empty(queue, {std::size_t(groups_x * groups_y + 1)}, Dtype::int32);
  program.kernel("tiles")(queue, {std::size_t(width), std::size_t(height)}, LaunchSizes{16, 4},
                          dout, din, std::int32_t{width});
  const auto out = dout.get<std::int32_t>();
  for (int gy = 0; gy < groups_y; ++gy) {
    for (int gx = 0; gx < groups_x; ++gx) {
      int expected = 0;
      for (int y = 0; y < 4; ++y) {
        for (int x = 0; x < 16; ++x) expected += in[(gy * 4 + y) * width + gx * 16 + x];
      }
      EXPECT_EQ(out[gy * groups_x + gx], expected) << gx << "," << gy;
    }
  }
  EXPECT_EQ(out.back(), width * 1000 + height * 10 + 4);
}

// Dynamic local memory (LocalMem): one source for both backends. Each group of `g` work items
// copies its block into local memory at `stride` words apart (so the words used span the whole
// allocation: the last one is bytes / 4 - 1), then writes it back reversed within the group.
const char* kDynamicLocal = R"(
KERNEL void reverse_blocks(GLOBAL_MEM int* out, GLOBAL_MEM const int* in, unsigned stride,
                           unsigned words LOCAL_MEM_DYNAMIC_PARAM(int, scratch))
{
    LOCAL_MEM_DYNAMIC_DECL(int, scratch);
    const unsigned l = get_local_id(0), g = get_local_size(0);
    const unsigned i = get_global_id(0);
    if (words == 0) { out[i] = -in[i]; return; }
    /* The group's last item also touches the allocation's last word. */
    scratch[l * stride] = in[i];
    if (l == g - 1) scratch[words - 1] = in[i] + 1;
    LOCAL_BARRIER;
    const unsigned j = g - 1 - l;
    out[i] = scratch[j * stride] + (j == g - 1 ? scratch[words - 1] - scratch[j * stride] - 1 : 0);
}
)";

TEST_P(Programs, DynamicLocalMemoryFromNoneToTheDeviceLimit) {
  auto ctx = context();
  Queue queue(ctx);
  Program program(ctx, kDynamicLocal);
  auto kernel = program.kernel("reverse_blocks");
  const std::size_t d = queue.device_idxs().front();
  const std::size_t most = kernel.max_local_mem(d);
  ASSERT_GE(most, 4u) << "the device offers no local memory";
  const std::size_t group = 4, n = 12;
  std::vector<std::int32_t> in(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<std::int32_t>(10 * i + 3);
  auto din = Array::from_host(queue, in);
  auto dout = Array::empty(queue, {n}, Dtype::int32);
  // bytes -> the stride between the group's words, and the words used (0: none).
  struct Case {
    std::size_t bytes, stride, words;
  };
  const std::size_t most_words = most / 4;
  std::vector<Case> cases = {{0, 0, 0},
                             {4 * group, 1, group},  // one element per work item
                             {4 * group + 4, 1, group + 1},
                             {most_words * 4, (most_words - 1) / group, most_words}};
  // On CUDA exactly the 48 KiB a kernel gets without opting in, and past it.
  if (most >= 48 * 1024) cases.push_back({48 * 1024, 1, 48 * 1024 / 4});
  if (most > 48 * 1024 + 4096) cases.push_back({48 * 1024 + 4096, 1, (48 * 1024 + 4096) / 4});
  for (const auto& c : cases) {
    SCOPED_TRACE(fmt::format("{} bytes", c.bytes));
    fill(queue, dout, std::int32_t{0});
    kernel.prepare(queue, n, LaunchSizes{group}, LocalMem{c.bytes})(
        dout, din, static_cast<std::uint32_t>(c.stride), static_cast<std::uint32_t>(c.words));
    const auto out = dout.get<std::int32_t>();
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t base = i / group * group, j = group - 1 - i % group;
      const std::int32_t want = c.words == 0 ? -in[i] : in[base + j];
      ASSERT_EQ(out[i], want) << i;
    }
  }
  // One byte past the limit: refused before anything runs, naming the amounts.
  try {
    (void)kernel.prepare(queue, n, LaunchSizes{group}, LocalMem{most + 1});
    FAIL() << "expected LogicError";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find(fmt::format("{} bytes of dynamic local memory", most + 1)),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("reverse_blocks"), std::string::npos) << e.what();
  }
}

TEST_P(Programs, DoublePrecisionWhereTheDeviceHasIt) {
  auto ctx = context();
  if (!ctx.devices().front().params().supports_float64) GTEST_SKIP() << "no float64";
  Queue queue(ctx);
  Program program(ctx, R"(
KERNEL void poly(GLOBAL_MEM double* y, GLOBAL_MEM const double* x)
{
    const SIZE_T i = get_global_id(0);
    const double v = x[i];
    y[i] = ((3.0 * v - 2.0) * v + 0.5) * v - 1.0 / 3.0;
}
)");
  const std::size_t n = 999;
  const auto x = random_reals<double>(n, 5);
  auto dx = Array::from_host(queue, x);
  auto dy = Array::empty(queue, {n}, Dtype::float64);
  program.kernel("poly")(queue, n, std::nullopt, dy, dx);
  const auto y = dy.get<double>();
  for (std::size_t i = 0; i < n; ++i) {
    const double v = x[i];
    EXPECT_NEAR(y[i], ((3.0 * v - 2.0) * v + 0.5) * v - 1.0 / 3.0, 1e-9 * (1 + std::abs(y[i])));
  }
}

TEST_P(Programs, MultiDeviceSizesAndArguments) {
  SKEIN_NEED_DEVICES(2);
  const std::size_t ndev = std::min<std::size_t>(devices().size(), 4);
  auto ctx = context(ndev);
  Queue queue(ctx);
  Program program(ctx, R"(
KERNEL void fill(GLOBAL_MEM int* out, int base)
{
    const int i = get_global_id(0);
    out[i] = base + i * (int)get_global_size(0);
}
)");
  // Each device: its own array, its own size and its own scalar.
  std::vector<Array> outs;
  std::vector<WorkSize> sizes;
  std::vector<std::int32_t> bases;
  for (std::size_t d = 0; d < ndev; ++d) {
    const std::size_t n = 100 + 37 * d;
    outs.push_back(Array::empty(queue, {n}, Dtype::int32, d));
    sizes.emplace_back(n);
    bases.push_back(static_cast<std::int32_t>(1000 * (d + 1)));
  }
  auto fill = program.kernel("fill").prepare(queue, MultiDevice<WorkSize>(sizes));
  const auto events = fill.enqueue(MultiDevice<Array>(outs), MultiDevice<std::int32_t>(bases));
  ASSERT_EQ(events.size(), ndev);
  for (const auto& e : events) e.wait();
  for (std::size_t d = 0; d < ndev; ++d) {
    const auto got = outs[d].get<std::int32_t>();
    ASSERT_EQ(got.size(), sizes[d][0]);
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], bases[d] + static_cast<std::int32_t>(i * got.size())) << d << ":" << i;
    }
  }
  // On a subset of the devices only: the others keep their values.
  auto again = MultiDevice<std::int32_t>(std::vector<std::int32_t>(ndev, -5));
  const std::size_t only[] = {1};
  fill.on_devices(std::span(only), MultiDevice<Array>(outs), again);
  EXPECT_EQ(outs[1].get<std::int32_t>()[0], -5);
  EXPECT_EQ(outs[0].get<std::int32_t>()[0], bases[0]);
  // A MultiDevice without a value for a launched device is an error.
  EXPECT_THROW(fill(MultiDevice<Array>(std::vector<std::pair<std::size_t, Array>>{{0, outs[0]}}),
                    std::int32_t{1}),
               LogicError);
}

// One kernel launched again and again without waiting, on three queues and then on more queues
// than a CUDA kernel keeps graphs for (4), each launch with its own output, scalar and size, some
// repeating the previous launch's arguments exactly: every result is the host's. On CUDA, launches
// after a kernel's first on a stream go through a one-kernel graph whose arguments and geometry
// are updated when they change; the same runs with SKEIN_CUDA_GRAPH_LAUNCH=0 (every launch
// cuLaunchKernel).
void repeated_launches(const Context& ctx) {
  Program program(ctx, R"(
KERNEL void add_scaled(GLOBAL_MEM int* out, GLOBAL_MEM const int* in, int factor, unsigned int n)
{
    const unsigned int i = (unsigned int)get_global_id(0);
    if (i < n) out[i] += factor * in[i];
}
)");
  auto kernel = program.kernel("add_scaled");
  const std::size_t n = 1000, local = 64, queues = 6;
  std::vector<std::int32_t> in(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<std::int32_t>(i % 97) - 40;
  std::vector<Queue> qs;
  for (std::size_t k = 0; k < queues; ++k) qs.emplace_back(ctx);
  auto din = Array::from_host(qs[0], in);
  qs[0].synchronize();
  // Two outputs per queue, each written only on its queue.
  std::vector<Array> outs;
  std::vector<std::vector<std::int32_t>> want(2 * queues, std::vector<std::int32_t>(n, 0));
  for (std::size_t j = 0; j < 2 * queues; ++j) {
    outs.push_back(Array::zeros(qs[j / 2], {n}, Dtype::int32));
  }
  const std::size_t sizes[] = {n, n, n - 1, 1, n / 2, n / 2, 65, n};
  // Launch number `step` on queue k. Steps 4m and 4m + 1 repeat their arguments exactly (the
  // second leaves a graph's arguments as they are); 4m + 2 and 4m + 3 change the output, the
  // factor and the size, so the grid (the graph is updated).
  auto launch = [&](std::size_t k, std::size_t step) {
    const std::size_t j = 2 * k + (step % 4 < 2 ? 0 : step % 2);
    const auto factor = static_cast<std::int32_t>(step % 4 < 2 ? 3 : 5 * step + k + 1);
    const std::size_t count = sizes[step % 8], global = (count + local - 1) / local * local;
    kernel.prepare(qs[k], global, LaunchSizes{local})(outs[j], din, factor,
                                                      static_cast<std::uint32_t>(count));
    for (std::size_t i = 0; i < count; ++i) want[j][i] += factor * in[i];
  };
  // Three queues in turn, 8 launches each: each keeps its graph, updated as the arguments change.
  for (std::size_t step = 0; step < 8; ++step) {
    for (std::size_t k = 0; k < 3; ++k) launch(k, step);
  }
  // Six queues in turn, 4 launches per visit: a queue's graph has been given up to others when it
  // comes back, so each visit launches plainly, makes the graph again and updates it.
  for (std::size_t round = 0; round < 3; ++round) {
    for (std::size_t k = 0; k < queues; ++k) {
      for (std::size_t sub = 0; sub < 4; ++sub) launch(k, 8 + 4 * round + sub);
    }
  }
  for (std::size_t j = 0; j < 2 * queues; ++j) {
    const auto got = outs[j].get<std::int32_t>();
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(got[i], want[j][i]) << "output " << j << ", " << i;
  }
}

TEST_P(Programs, RepeatedLaunchesFollowTheirArgumentsOnEveryQueue) {
  {
    SCOPED_TRACE("SKEIN_CUDA_GRAPH_LAUNCH unset");
    repeated_launches(context());
  }
  {
    SCOPED_TRACE("SKEIN_CUDA_GRAPH_LAUNCH=0");
    ScopedEnv off("SKEIN_CUDA_GRAPH_LAUNCH", "0");
    repeated_launches(context());
  }
  if (GetParam().api == ApiId::cuda) {
    // A value it does not take is refused where the context is made (read there).
    ScopedEnv bad("SKEIN_CUDA_GRAPH_LAUNCH", "sometimes");
    expect_logic_error([&] { (void)context(); }, {"SKEIN_CUDA_GRAPH_LAUNCH='sometimes'"});
  }
}

TEST_P(Programs, ArgumentsAreCheckedBeforeTheLaunch) {
  auto ctx = context();
  Queue queue(ctx);
  Program program(ctx, kAxpy);
  auto axpy = program.kernel("axpy").prepare(queue, 16, 16);
  auto x = Array::zeros(queue, {16}, Dtype::float32);
  auto y = Array::zeros(queue, {16}, Dtype::float32);
  // Wrong count.
  try {
    axpy(y, x, 1.0f);
    FAIL();
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("takes 4 argument"), std::string::npos) << e.what();
  }
  // A double where the kernel takes a float (where the backend reports parameter sizes).
  bool sizes_known = GetParam().api == ApiId::opencl;
  if (sizes_known) {
    EXPECT_THROW(axpy(y, x, 1.0, std::int32_t{16}), LogicError);
    // A scalar where the kernel takes a pointer.
    EXPECT_THROW(axpy(std::int64_t{0}, x, 1.0f, std::int32_t{16}), LogicError);
  }
  // A buffer of another context.
  auto other = context();
  Queue other_queue(other);
  auto foreign = Array::zeros(other_queue, {16}, Dtype::float32);
  EXPECT_THROW(axpy(foreign, x, 1.0f, std::int32_t{16}), LogicError);
  // The right call still works after the failed ones.
  axpy(y, x, 1.0f, std::int32_t{16});
  queue.synchronize();
}

TEST_P(Programs, SizeAndNameErrors) {
  auto ctx = context();
  Queue queue(ctx);
  Program program(ctx, kAxpy);
  try {
    program.kernel("axpz");
    FAIL();
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("axpz"), std::string::npos) << e.what();
  }
  auto axpy = program.kernel("axpy");
  EXPECT_THROW(axpy.prepare(queue, 100, 16), LogicError);                   // not a multiple
  EXPECT_THROW(axpy.prepare(queue, {64, 2}, LaunchSizes{64}), LogicError);  // dimensions differ
  const auto max_local = axpy.max_total_local_sizes().at(0);
  EXPECT_GT(max_local, 0u);
  EXPECT_THROW(axpy.prepare(queue, max_local * 4, max_local * 2), LogicError);
  EXPECT_THROW(WorkSize({1, 2, 3, 4}), LogicError);
  const auto attrs = axpy.attributes(0);
  EXPECT_EQ(attrs.max_total_local_size, program.kernel("axpy").attributes(0).max_total_local_size);
}

TEST_P(Programs, CompileErrorsPointAtTheLine) {
  auto ctx = context();
  const std::string source =
      "KERNEL void broken(GLOBAL_MEM float* y)\n"  // 1
      "{\n"                                        // 2
      "    const int i = get_global_id(0);\n"      // 3
      "    y[i] = undeclared_thing * 2.0f;\n"      // 4
      "}\n";
  try {
    Program program(ctx, source, {.name = "broken_source"});
    FAIL() << "must not compile";
  } catch (const CompileError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("undeclared_thing"), std::string::npos) << what;
    // The log refers to line 4 of the given source (the prelude does not shift it).
    const bool line4 = e.log().find("broken_source:4:") != std::string::npos ||
                       e.log().find("broken_source(4)") != std::string::npos;
    EXPECT_TRUE(line4) << e.log();
    EXPECT_NE(e.source().find("    4 |     y[i] = undeclared_thing"), std::string::npos)
        << e.source();
    EXPECT_NE(what.find("    4 |     y[i] = undeclared_thing"), std::string::npos) << what;
  }
}

TEST_P(Programs, ProgramsForSomeDevicesAndKeepingFiles) {
  SKEIN_NEED_DEVICES(2);
  auto ctx = context(2);
  Queue both(ctx);
  Program only_second(ctx, kAxpy, {.device_idxs = std::vector<std::size_t>{1}, .keep = true});
  EXPECT_EQ(only_second.device_idxs(), (std::vector<std::size_t>{1}));
  EXPECT_THROW(only_second.kernel("axpy").prepare(both, 8), LogicError);
  Queue second(ctx, {1});
  auto prepared = only_second.kernel("axpy").prepare(second, 8);
  auto x = Array::zeros(second, {8}, Dtype::float32, 1);
  prepared(x, x, 2.0f, std::int32_t{8});
  second.synchronize();
  ASSERT_TRUE(only_second.kept_directory().has_value());
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(*only_second.kept_directory())) {
    EXPECT_GT(std::filesystem::file_size(entry.path()), 0u) << entry.path();
    ++files;
  }
  EXPECT_EQ(files, 2u);  // the source and the binary of device 1
  EXPECT_NE(only_second.source(1).find("KERNEL void axpy"), std::string::npos);
  EXPECT_THROW(only_second.source(0), LogicError);
  std::filesystem::remove_all(*only_second.kept_directory());
}

// Each device builds the program itself where nothing is in the compile cache yet (a new source),
// also a device other than the context's first, and where the cache is off (framework.pocl4.nocache
// runs this with SKEIN_DISABLE_CACHE=1): OpenCL drivers differ in where they put the binary of a
// program built for one of several devices.
TEST_P(Programs, EveryDeviceBuildsANewProgram) {
  SKEIN_NEED_DEVICES(2);
  const std::size_t ndev = std::min<std::size_t>(devices().size(), 4);
  auto ctx = context(ndev);
  Queue queue(ctx);
  static int round = 0;
  // A comment unique to this process and round: the cache has never seen the source.
  const std::string tag = fmt::format("// {} {} {}\n", getpid(), ++round, GetParam().label);
  const std::string source = tag + R"(
KERNEL void offset(GLOBAL_MEM int* out, int base)
{
    const int i = get_global_id(0);
    out[i] = base - 3 * i;
}
)";
  const std::size_t last = ndev - 1;
  Program on_last(ctx, source, {.device_idxs = std::vector<std::size_t>{last}});
  EXPECT_FALSE(on_last.from_cache(last));
  Program on_all(ctx, "// every device\n" + source);
  EXPECT_FALSE(on_all.from_cache(0));
  const std::size_t n = 64;
  MultiDevice<Array> outs;
  for (std::size_t d = 0; d < ndev; ++d) outs.set(d, Array::zeros(queue, {n}, Dtype::int32, d));
  MultiDevice<std::int32_t> bases;
  for (std::size_t d = 0; d < ndev; ++d) bases.set(d, static_cast<std::int32_t>(1000 * d + 7));
  on_all.kernel("offset").prepare(queue, n)(outs, bases);
  Queue only_last(ctx, {last});
  auto last_out = Array::zeros(only_last, {n}, Dtype::int32, last);
  on_last.kernel("offset").prepare(only_last, n)(last_out, std::int32_t{-5});
  for (std::size_t d = 0; d < ndev; ++d) {
    const auto got = outs[d].get<std::int32_t>();
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(got[i], bases[d] - 3 * static_cast<std::int32_t>(i)) << "device " << d << ", " << i;
    }
  }
  const auto got = last_out.get<std::int32_t>();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], -5 - 3 * static_cast<std::int32_t>(i)) << i;
}

TEST(CompileErrors, LinesOfCompilersThatIgnoreLineDirectivesAreTranslated) {
  // NVIDIA's OpenCL numbers the full source (prelude included) and names it "<kernel>".
  std::string full;
  for (int i = 0; i < 90; ++i) full += "// prelude line\n";
  full += "#line 1 \"mine\"\n";
  full += "a\nb\nc\n    y[i] = oops;\n";
  try {
    detail::raise_compile_error("clBuildProgram", "dev", "mine",
                                "<kernel>:95:12: error: use of undeclared identifier 'oops'", full,
                                {"-x"});
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_NE(e.log().find("mine:4:12: error"), std::string::npos) << e.log();
    EXPECT_NE(std::string(e.what()).find("    4 |     y[i] = oops;"), std::string::npos)
        << e.what();
  }
  // Several references in one log: one in the prelude (named as such), two in the source, and
  // text that only looks like one ("<x>:12" without a colon after the number, "<>:1:").
  try {
    detail::raise_compile_error(
        "clBuildProgram", "dev", "mine",
        "<kernel>:7:1: note: from the prelude\n<kernel>:93:3: warning: b\n<x>:12 <>:1: "
        "<kernel>:94:1: error: c",
        full, {"-x"});
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_NE(e.log().find("<prelude>:7:1: note"), std::string::npos) << e.log();
    EXPECT_NE(e.log().find("mine:2:3: warning: b"), std::string::npos) << e.log();
    EXPECT_NE(e.log().find("<x>:12 <>:1: mine:3:1: error: c"), std::string::npos) << e.log();
    const std::string what = e.what();
    EXPECT_NE(what.find("    2 | b"), std::string::npos) << what;
    EXPECT_NE(what.find("    3 | c"), std::string::npos) << what;
  }
}

// NVRTC's form, "name(LINE): error": the line is shown from the given source.
TEST(CompileErrors, NvrtcLineReferencesShowTheLine) {
  try {
    detail::raise_compile_error("nvrtcCompileProgram", "dev", "mine",
                                "mine(2): error: identifier \"oops\" is undefined",
                                "a\nz = oops;\n", {"-x"});
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("    2 | z = oops;"), std::string::npos) << e.what();
  }
}

// Runs this test binary again as `copies` processes at once, on the same backend and cache
// directory, and returns what they printed. Started directly (no shell), with this process's
// environment plus the child's variables.
std::string run_child(const std::string& label, const std::string& cache_dir,
                      const std::string& source_tag, int copies = 1) {
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string entry(*e);
    // The child's cache is this test's, on also where the run turned the process's cache off;
    // and the child runs its own test whatever shard of the suite this process is (gtest's
    // sharding variables would leave it no test to run).
    if (entry.rfind("SKEIN_CACHE_DIR=", 0) == 0 || entry.rfind("SKEIN_DISABLE_CACHE=", 0) == 0 ||
        entry.rfind("GTEST_TOTAL_SHARDS=", 0) == 0 || entry.rfind("GTEST_SHARD_INDEX=", 0) == 0 ||
        entry.rfind("GTEST_SHARD_STATUS_FILE=", 0) == 0)
      continue;
    env_strings.push_back(entry);
  }
  env_strings.push_back("SKEIN_CACHE_DIR=" + cache_dir);
  env_strings.push_back("SKEIN_TEST_CHILD_BACKEND=" + label);
  env_strings.push_back("SKEIN_TEST_CHILD_TAG=" + source_tag);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string filter = "--gtest_filter=ProgramChild.*";
  char* argv[] = {const_cast<char*>(exe.c_str()), filter.data(), nullptr};

  std::vector<std::pair<pid_t, std::string>> children;
  for (int c = 0; c < copies; ++c) {
    const std::string out = (std::filesystem::temp_directory_path() /
                             fmt::format("skein-child-{}-{}-{}", getpid(), source_tag, c))
                                .string();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = 0;
    EXPECT_EQ(posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv, envp.data()), 0);
    posix_spawn_file_actions_destroy(&actions);
    children.emplace_back(pid, out);
  }
  std::string all;
  for (auto& [pid, out] : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << pid;
    std::ifstream in(out);
    all += std::string(std::istreambuf_iterator<char>(in), {});
    std::filesystem::remove(out);
  }
  return all;
}

TEST_P(Programs, TheDiskCacheServesAnotherProcessAndConcurrentBuilds) {
  char dir_template[] = "/tmp/skein-cache-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string tag = std::to_string(getpid());
  // Two processes build the same new kernel at once: both succeed.
  auto first = run_child(GetParam().label, dir, tag, 2);
  EXPECT_EQ(std::count(first.begin(), first.end(), '\n') > 0, true);
  EXPECT_EQ(first.find("[  FAILED  ]"), std::string::npos) << first;
  EXPECT_NE(first.find("child result ok"), std::string::npos) << first;
  // A third process finds it on disk and compiles nothing.
  auto second = run_child(GetParam().label, dir, tag);
  EXPECT_NE(second.find("child from_cache=1"), std::string::npos) << second;
  EXPECT_NE(second.find("child result ok"), std::string::npos) << second;
  std::filesystem::remove_all(dir);
}

// The child's side of the cache test (does nothing unless started by it).
TEST(ProgramChild, CompileAndRun) {
  const char* label = std::getenv("SKEIN_TEST_CHILD_BACKEND");
  const char* tag = std::getenv("SKEIN_TEST_CHILD_TAG");
  if (!label || !tag) GTEST_SKIP() << "only run by the cache test";
  for (const auto& b : backends()) {
    if (b.label != label) continue;
    auto api = Api::from_id(b.api);
    auto ctx = Context::from_devices(Platform::from_index(api, b.platform_idx).devices().front());
    Queue queue(ctx);
    const std::string source =
        std::string("// tag ") + tag + "\n" +
        "KERNEL void twice(GLOBAL_MEM int* x) { x[get_global_id(0)] *= 2; }\n";
    Program program(ctx, source);
    std::printf("child from_cache=%d\n", program.from_cache(0) ? 1 : 0);
    auto x = Array::from_host(queue, std::vector<std::int32_t>{1, 2, 3, 4});
    program.kernel("twice")(queue, 4, std::nullopt, x);
    if (x.get<std::int32_t>() == std::vector<std::int32_t>{2, 4, 6, 8})
      std::printf("child result ok\n");
    return;
  }
  // Say what this process sees instead, to tell a missing platform from an empty one.
  std::string seen;
  for (const auto& status : Api::status()) {
    seen += fmt::format("{}: {} {}\n", shortcut(status.id),
                        status.available ? "available" : "unavailable", status.reason);
    if (!status.available) continue;
    for (const auto& platform : Api::from_id(status.id).platforms()) {
      seen += fmt::format("  platform {} '{}': {} device(s)\n", platform.index(), platform.name(),
                          platform.devices().size());
    }
  }
  for (const char* var : {"OCL_ICD_VENDORS", "OCL_ICD_FILENAMES", "LD_LIBRARY_PATH"}) {
    seen += fmt::format("{}={}\n", var, std::getenv(var) ? std::getenv(var) : "(unset)");
  }
  FAIL() << "no backend " << label << "; this process sees:\n" << seen;
}

SKEIN_INSTANTIATE_BACKENDS(Programs);

}  // namespace program_test
}  // namespace
}  // namespace skein::test

// SPDX-License-Identifier: BSD-3-Clause
// Kernel launches over any number of work items (pygpu's n=, PyCUDA's grid and block), against a
// host reference: every element below the count written exactly once, none beyond, with every
// local size that matters; pygpu's preflsize and numargs; PyCUDA's function attributes and
// configurations, argument handlers (In, Out, InOut) and timed launches.
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <skein/skein.hpp>

#include "backends.hpp"
#include "skein/detail/kernel_source.hpp"

namespace skein::test {
namespace {
namespace kernel_launch_test {

class KernelLaunches : public BackendTest {};

// Each work item below n writes its element and counts its visit; work item 0 reports the sizes
// the kernel sees.
const char* kMark = R"(
KERNEL void mark(GLOBAL_MEM int* out, GLOBAL_MEM unsigned int* hits,
                 GLOBAL_MEM unsigned int* sizes, unsigned int n)
{
    const VSIZE_T i = get_global_id(0);
    if (i == 0) {
        sizes[0] = (unsigned int)get_global_size(0);
        sizes[1] = (unsigned int)get_local_size(0);
        sizes[2] = (unsigned int)get_num_groups(0);
    }
    if (i >= n) return;
    out[i] = (int)(i * 3 + 1);
#ifdef CUDA
    atomicAdd(&hits[i], 1u);
#else
    atomic_inc(&hits[i]);
#endif
}
)";

constexpr std::size_t kPad = 37;  // elements past n that must stay as they were
constexpr std::int32_t kPoison = -7;

// The local sizes that matter up to the kernel's and device's limit: 1, 2, the powers of two,
// odd and off-by-one sizes, and the limit itself.
std::vector<std::size_t> local_sizes(std::size_t limit) {
  std::vector<std::size_t> out;
  for (std::size_t l : {1, 2, 3, 5, 7, 31, 33, 63, 65, 100, 127, 129, 255, 257, 999}) {
    if (l <= limit) out.push_back(l);
  }
  for (std::size_t l = 4; l <= limit; l *= 2) out.push_back(l);
  out.push_back(limit);
  if (limit > 2) out.push_back(limit - 1);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

struct MarkBuffers {
  Array out, hits, sizes;
  MarkBuffers(const Queue& queue, std::size_t n)
      : out(Array::empty(queue, {n + kPad}, Dtype::int32)),
        hits(Array::empty(queue, {n + kPad}, Dtype::uint32)),
        sizes(Array::empty(queue, {3}, Dtype::uint32)) {}
  void reset(std::size_t n) {
    out.set(std::vector<std::int32_t>(n + kPad, kPoison));
    hits.set(std::vector<std::uint32_t>(n + kPad, 0));
    sizes.set(std::vector<std::uint32_t>(3, 0));
  }
  // Against the host: out[i] = 3i + 1 and one visit below n, nothing at or past n; the sizes the
  // kernel saw are those of the launch.
  void check(std::size_t n, const PreparedKernel& prepared) const {
    const auto o = out.get<std::int32_t>();
    const auto h = hits.get<std::uint32_t>();
    for (std::size_t i = 0; i < n + kPad; ++i) {
      if (i < n) {
        ASSERT_EQ(o[i], static_cast<std::int32_t>(i * 3 + 1)) << "element " << i;
        ASSERT_EQ(h[i], 1u) << "visits of element " << i;
      } else {
        ASSERT_EQ(o[i], kPoison) << "element " << i << " past n = " << n;
        ASSERT_EQ(h[i], 0u) << "visits of element " << i << " past n = " << n;
      }
    }
    const auto s = sizes.get<std::uint32_t>();
    const std::size_t global = prepared.global_size(0)[0], local = prepared.local_size(0)[0];
    EXPECT_EQ(s[0], global);
    EXPECT_EQ(s[1], local);
    EXPECT_EQ(s[2], global / local);
    EXPECT_EQ(global % local, 0u);
    EXPECT_GE(global, n);
    EXPECT_LT(global - n, local);  // whole groups, the fewest that cover n
  }
};

TEST_P(KernelLaunches, ItemsCoverAnyCountWithEveryLocalSize) {
  auto ctx = context();
  Queue queue(ctx);
  const auto kernel = Program(ctx, kMark).kernel("mark");
  const auto& params = ctx.devices().front().params();
  const std::size_t limit =
      std::min(kernel.max_total_local_sizes().at(0), params.max_local_sizes[0]);
  for (std::size_t n : {std::size_t{1}, std::size_t{63}, std::size_t{65}, std::size_t{1000003}}) {
    MarkBuffers b(queue, n);
    for (std::size_t l : local_sizes(limit)) {
      SCOPED_TRACE(fmt::format("n = {}, local size {}", n, l));
      b.reset(n);
      const auto prepared = kernel.prepare_items(queue, n, WorkSize(l));
      EXPECT_EQ(prepared.items(0), WorkSize(n));
      EXPECT_EQ(prepared.local_size(0), WorkSize(l));
      prepared(b.out, b.hits, b.sizes, static_cast<std::uint32_t>(n));
      b.check(n, prepared);
      if (HasFatalFailure()) return;
    }
    // The local size chosen: a multiple of the preferred one, or all of a small count.
    SCOPED_TRACE(fmt::format("n = {}, local size chosen", n));
    b.reset(n);
    const auto prepared = kernel.prepare_items(queue, n);
    const std::size_t chosen = prepared.local_size(0)[0];
    const std::size_t multiple = kernel.preferred_local_size_multiple(0);
    EXPECT_TRUE(chosen % multiple == 0 || chosen == limit) << chosen << " vs " << multiple;
    EXPECT_LE(chosen, std::max<std::size_t>(256, params.warp_size));
    prepared(b.out, b.hits, b.sizes, static_cast<std::uint32_t>(n));
    b.check(n, prepared);
  }
}

TEST_P(KernelLaunches, GridOfBlocksAsPyCudaGivesIt) {
  auto ctx = context();
  Queue queue(ctx);
  const auto kernel = Program(ctx, kMark).kernel("mark");
  const std::size_t limit = kernel.max_total_local_sizes().at(0);
  for (std::size_t n : {std::size_t{1}, std::size_t{63}, std::size_t{65}, std::size_t{1000003}}) {
    MarkBuffers b(queue, n);
    for (std::size_t block : {std::size_t{1}, std::size_t{32}, std::size_t{33}, limit}) {
      if (block > limit) continue;
      SCOPED_TRACE(fmt::format("n = {}, block {}", n, block));
      b.reset(n);
      const std::size_t grid = (n + block - 1) / block;
      const auto prepared = kernel.prepare_grid(queue, grid, block);
      EXPECT_EQ(prepared.global_size(0), WorkSize(grid * block));
      EXPECT_EQ(prepared.items(0), WorkSize(grid * block));
      prepared(b.out, b.hits, b.sizes, static_cast<std::uint32_t>(n));
      b.check(n, prepared);
      if (HasFatalFailure()) return;
    }
  }
}

TEST_P(KernelLaunches, TwoDimensionalItems) {
  auto ctx = context();
  Queue queue(ctx);
  const char* source = R"(
KERNEL void grid2(GLOBAL_MEM int* out, unsigned int w, unsigned int h)
{
    const VSIZE_T x = get_global_id(0), y = get_global_id(1);
    if (x >= w || y >= h) return;
    out[y * w + x] += (int)(y * 1000 + x + 1);
}
)";
  const auto kernel = Program(ctx, source).kernel("grid2");
  const std::size_t w = 63, h = 65;
  for (const auto& local : {std::optional<WorkSize>{}, std::optional<WorkSize>(WorkSize{8, 4}),
                            std::optional<WorkSize>(WorkSize{5, 3})}) {
    SCOPED_TRACE(local ? local->to_string() : "chosen");
    auto out = Array::from_host(queue, std::vector<std::int32_t>(w * h + kPad, 0));
    const auto prepared = kernel.prepare_items(
        queue, WorkSize{w, h}, local ? std::optional<LaunchSizes>(*local) : std::nullopt);
    prepared(out, static_cast<std::uint32_t>(w), static_cast<std::uint32_t>(h));
    const auto got = out.get<std::int32_t>();
    for (std::size_t y = 0; y < h; ++y) {
      for (std::size_t x = 0; x < w; ++x) {
        ASSERT_EQ(got[y * w + x], static_cast<std::int32_t>(y * 1000 + x + 1)) << x << "," << y;
      }
    }
    for (std::size_t i = w * h; i < got.size(); ++i) ASSERT_EQ(got[i], 0) << i;
  }
}

TEST_P(KernelLaunches, BadSizesRaiseAndTheKernelStaysUsable) {
  auto ctx = context();
  Queue queue(ctx);
  const auto kernel = Program(ctx, kMark).kernel("mark");
  const std::size_t limit = kernel.max_total_local_sizes().at(0);
  EXPECT_THROW((void)kernel.prepare_items(queue, 0), LogicError);
  EXPECT_THROW((void)kernel.prepare_grid(queue, 0, 32), LogicError);
  EXPECT_THROW((void)kernel.prepare_grid(queue, 4, 0), LogicError);
  EXPECT_THROW((void)kernel.prepare_items(queue, 100, WorkSize(limit + 1)), LogicError);
  try {
    (void)kernel.prepare(queue, 65, WorkSize(64));
    ADD_FAILURE() << "prepare took a global size that is not a multiple";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("prepare_items"), std::string::npos) << e.what();
  }
  MarkBuffers b(queue, 65);
  b.reset(65);
  const auto prepared = kernel.prepare_items(queue, 65);
  prepared(b.out, b.hits, b.sizes, std::uint32_t{65});
  b.check(65, prepared);
}

TEST_P(KernelLaunches, PreferredMultipleAndArgumentCount) {
  auto ctx = context();
  const char* source = R"(
KERNEL void four(GLOBAL_MEM float* a, GLOBAL_MEM const float* b, float c, int n)
{
    if ((int)get_global_id(0) < n) a[get_global_id(0)] = b[get_global_id(0)] + c;
}
KERNEL void none()
{
    LOCAL_MEM int flag[1];
    if (get_local_id(0) == 0) flag[0] = 1;
    LOCAL_BARRIER;
}
KERNEL void tiled(GLOBAL_MEM float* out, unsigned int n LOCAL_MEM_DYNAMIC_PARAM(float, tile))
{
    LOCAL_MEM_DYNAMIC_DECL(float, tile);
    tile[get_local_id(0)] = 1.0f;
    if (get_global_id(0) < n) out[get_global_id(0)] = tile[get_local_id(0)];
}
)";
  Program program(ctx, source);
  EXPECT_EQ(program.kernel("four").num_args(), 4u);
  EXPECT_EQ(program.kernel("none").num_args(), 0u);
  EXPECT_EQ(program.kernel("tiled").num_args(), 2u);  // the dynamic local memory is not passed
  const auto four = program.kernel("four");
  const std::size_t multiple = four.preferred_local_size_multiple(0);
  EXPECT_GE(multiple, 1u);
  EXPECT_LE(multiple, four.max_total_local_sizes().at(0));
  if (ctx.api().id() == ApiId::cuda) {
    EXPECT_EQ(multiple, ctx.devices().front().params().warp_size);
  }
  EXPECT_EQ(four.attributes(0).preferred_local_size_multiple, multiple);
  EXPECT_THROW((void)four.preferred_local_size_multiple(99), LogicError);
}

TEST_P(KernelLaunches, AttributesAsTheBackendReportsThem) {
  auto ctx = context();
  Queue queue(ctx);
  const char* source = R"(
KERNEL void scratch(GLOBAL_MEM float* out)
{
    LOCAL_MEM float tile[256];
    tile[get_local_id(0)] = (float)get_local_id(0);
    LOCAL_BARRIER;
    out[get_global_id(0)] = tile[(get_local_id(0) + 1) % get_local_size(0)];
}
)";
  const auto kernel = Program(ctx, source).kernel("scratch");
  const auto attrs = kernel.attributes(0);
  EXPECT_EQ(kernel.get_attribute(0, KernelAttribute::max_threads_per_block),
            static_cast<std::int64_t>(attrs.max_total_local_size));
  EXPECT_EQ(kernel.get_attribute(0, KernelAttribute::shared_size_bytes),
            static_cast<std::int64_t>(attrs.local_mem_size));
  // The kernel's 1 KiB static tile. PoCL 5's basic driver (the GPU machines' image; not CI's
  // PoCL 3 pthread devices) answers CL_KERNEL_LOCAL_MEM_SIZE with 0 for it: there the attribute
  // is what the driver says (checked above).
  const bool pocl = ctx.platform().name().find("Portable") != std::string::npos;
  const auto shared = kernel.get_attribute(0, KernelAttribute::shared_size_bytes);
  if (!(pocl && shared == 0)) {
    EXPECT_GE(shared, 256 * 4);
  }
  EXPECT_EQ(kernel.get_attribute(0, KernelAttribute::local_size_bytes),
            static_cast<std::int64_t>(attrs.private_mem_size));
  EXPECT_THROW((void)kernel.get_attribute(5, KernelAttribute::num_regs), LogicError);
  if (ctx.api().id() == ApiId::cuda) {
    EXPECT_EQ(kernel.get_attribute(0, KernelAttribute::num_regs),
              static_cast<std::int64_t>(attrs.registers));
    const auto cc = ctx.devices().front().params().compute_capability.value();
    EXPECT_EQ(kernel.get_attribute(0, KernelAttribute::binary_version), cc.first * 10 + cc.second);
    EXPECT_GE(kernel.get_attribute(0, KernelAttribute::ptx_version), 0);
    kernel.set_attribute(KernelAttribute::max_dynamic_shared_size_bytes, 8192);
    EXPECT_EQ(kernel.get_attribute(0, KernelAttribute::max_dynamic_shared_size_bytes), 8192);
    kernel.set_attribute(KernelAttribute::preferred_shared_memory_carveout, 50);
    EXPECT_EQ(kernel.get_attribute(0, KernelAttribute::preferred_shared_memory_carveout), 50);
    // Refused: the value stays.
    EXPECT_THROW(kernel.set_attribute(KernelAttribute::max_dynamic_shared_size_bytes, 1 << 30),
                 LogicError);
    EXPECT_EQ(kernel.get_attribute(0, KernelAttribute::max_dynamic_shared_size_bytes), 8192);
    EXPECT_THROW(kernel.set_attribute(KernelAttribute::num_regs, 8), LogicError);
    kernel.set_cache_config(CacheConfig::prefer_shared);
    kernel.set_shared_config(SharedConfig::four_byte_bank_size);
    kernel.set_shared_config(SharedConfig::default_bank_size);
  } else {
    EXPECT_THROW((void)kernel.get_attribute(0, KernelAttribute::num_regs), LogicError);
    EXPECT_THROW((void)kernel.get_attribute(0, KernelAttribute::const_size_bytes), LogicError);
    EXPECT_THROW(kernel.set_attribute(KernelAttribute::max_dynamic_shared_size_bytes, 8192),
                 LogicError);
    EXPECT_THROW(kernel.set_cache_config(CacheConfig::prefer_shared), LogicError);
    EXPECT_THROW(kernel.set_shared_config(SharedConfig::four_byte_bank_size), LogicError);
  }
  // After all of that the kernel computes as before.
  const std::size_t n = 64;
  auto out = Array::empty(queue, {n}, Dtype::float32);
  kernel.prepare(queue, n, WorkSize(n))(out);
  const auto got = out.get<float>();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], static_cast<float>((i + 1) % n)) << i;
}

const char* kAxpyN = R"(
KERNEL void axpy(GLOBAL_MEM float* y, GLOBAL_MEM const float* x, GLOBAL_MEM float* z, float a,
                 unsigned int n)
{
    const VSIZE_T i = get_global_id(0);
    if (i >= n) return;
    z[i] = 3.0f * x[i];
    y[i] = a * x[i] + y[i];
}
)";

TEST_P(KernelLaunches, HostArgumentsCopyInAndOut) {
  auto ctx = context();
  Queue queue(ctx);
  const auto kernel = Program(ctx, kAxpyN).kernel("axpy");
  for (std::size_t n : {std::size_t{1}, std::size_t{63}, std::size_t{65}, std::size_t{4099}}) {
    SCOPED_TRACE(n);
    const auto x = random_reals<float>(n, 3 + static_cast<std::uint32_t>(n));
    const auto y0 = random_reals<float>(n, 5 + static_cast<std::uint32_t>(n));
    auto y = y0;
    std::vector<float> z(n, -1.0f);
    kernel.prepare_items(queue, n)(InOut(y), In(x), Out(z), 0.5f, static_cast<std::uint32_t>(n));
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_FLOAT_EQ(y[i], 0.5f * x[i] + y0[i]) << i;
      ASSERT_EQ(z[i], 3.0f * x[i]) << i;
    }
    // Host memory beside device arrays, through std::span and Kernel's one-call launch.
    auto dy = Array::from_host(queue, y0);
    std::vector<float> z2(n + 1, 7.0f);
    kernel(queue, (n + 31) / 32 * 32, std::nullopt, dy, In(std::span<const float>(x)),
           Out(std::span<float>(z2).first(n)), 0.5f, static_cast<std::uint32_t>(n));
    const auto got = dy.get<float>();
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_FLOAT_EQ(got[i], 0.5f * x[i] + y0[i]) << i;
      ASSERT_EQ(z2[i], 3.0f * x[i]) << i;
    }
    EXPECT_EQ(z2[n], 7.0f);  // past the span: untouched
  }
}

TEST_P(KernelLaunches, HostArgumentErrorsTouchNothing) {
  auto ctx = context();
  Queue queue(ctx);
  const auto kernel = Program(ctx, kAxpyN).kernel("axpy");
  const std::size_t n = 16;
  std::vector<float> x(n, 1.0f), y(n, 2.0f), z(n, -1.0f);
  // A host argument for the scalar `a`: refused before the kernel; z is not written.
  EXPECT_THROW(
      kernel.prepare_items(queue, n)(InOut(y), In(x), Out(z), In(x), static_cast<std::uint32_t>(n)),
      LogicError);
  EXPECT_EQ(z, std::vector<float>(n, -1.0f));
  EXPECT_EQ(y, std::vector<float>(n, 2.0f));
  // Then a good call works.
  kernel.prepare_items(queue, n)(InOut(y), In(x), Out(z), 1.0f, static_cast<std::uint32_t>(n));
  EXPECT_EQ(y, std::vector<float>(n, 3.0f));
  EXPECT_EQ(z, std::vector<float>(n, 3.0f));
}

TEST_P(KernelLaunches, HostArgumentsTakeOneDevice) {
  SKEIN_NEED_DEVICES(2);
  auto ctx = context(2);
  Queue queue(ctx);
  const auto kernel = Program(ctx, kAxpyN).kernel("axpy");
  const std::size_t n = 8;
  std::vector<float> x(n, 1.0f), y(n, 2.0f), z(n, -1.0f);
  const auto prepared = kernel.prepare_items(queue, n);
  EXPECT_THROW(prepared(InOut(y), In(x), Out(z), 1.0f, static_cast<std::uint32_t>(n)), LogicError);
  EXPECT_EQ(z, std::vector<float>(n, -1.0f));
  // On one device of the queue it runs.
  const std::size_t device = 1;
  prepared.on_devices(std::span(&device, 1), InOut(y), In(x), Out(z), 1.0f,
                      static_cast<std::uint32_t>(n));
  EXPECT_EQ(y, std::vector<float>(n, 3.0f));
  EXPECT_EQ(z, std::vector<float>(n, 3.0f));
}

TEST_P(KernelLaunches, TimedCallGivesTheDeviceTime) {
  auto ctx = context();
  Queue queue(ctx);
  const auto kernel = Program(ctx, kMark).kernel("mark");
  const std::size_t n = 1000003;
  MarkBuffers b(queue, n);
  b.reset(n);
  const auto prepared = kernel.prepare_items(queue, n);
  const TimedLaunch timing =
      prepared.timed_call(b.out, b.hits, b.sizes, static_cast<std::uint32_t>(n));
  const double seconds = timing.seconds();
  EXPECT_GT(seconds, 0.0);
  EXPECT_LT(seconds, 60.0);
  EXPECT_EQ(timing.seconds(0), seconds);
  EXPECT_THROW((void)timing.seconds(7), LogicError);
  b.check(n, prepared);
}

// The parameter count Kernel::num_args falls back on where a CUDA driver cannot count (before
// 12.4): read from the source as the compiler sees it.
TEST(KernelSourceParams, CountedFromTheDeclaration) {
  const std::string source = R"(
WITHIN_KERNEL float helper(float a, float b) { return a + b; }
KERNEL void four(GLOBAL_MEM float* a, GLOBAL_MEM const float* b, float c, int n)
{
    if ((int)get_global_id(0) < n) a[get_global_id(0)] = b[get_global_id(0)] + c;
}
KERNEL void none()
{
    LOCAL_MEM int flag[1];
    if (get_local_id(0) == 0) flag[0] = 1;
    LOCAL_BARRIER;
}
KERNEL void none_void( void ) { }
extern "C" __global__ void one(float* out) { }
KERNEL void tiled(GLOBAL_MEM float* out, unsigned int n LOCAL_MEM_DYNAMIC_PARAM(float, tile)) { }
KERNEL void nested(GLOBAL_MEM float* out, int (*f)(int, int), int n) { }
// four(1, 2) in a comment without a qualifier is not a declaration
)";
  EXPECT_EQ(detail::count_source_params(source, "four"), 4);
  EXPECT_EQ(detail::count_source_params(source, "none"), 0);
  EXPECT_EQ(detail::count_source_params(source, "none_void"), 0);
  EXPECT_EQ(detail::count_source_params(source, "one"), 1);
  EXPECT_EQ(detail::count_source_params(source, "tiled"), 2);
  EXPECT_EQ(detail::count_source_params(source, "nested"), 3);
  EXPECT_EQ(detail::count_source_params(source, "helper"), -1);  // not a kernel
  EXPECT_EQ(detail::count_source_params(source, "fou"), -1);     // a prefix of a name
  EXPECT_EQ(detail::count_source_params("", "four"), -1);        // a program from a binary
}

SKEIN_INSTANTIATE_BACKENDS(KernelLaunches);

}  // namespace kernel_launch_test
}  // namespace
}  // namespace skein::test

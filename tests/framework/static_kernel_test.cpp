// SPDX-License-Identifier: BSD-3-Clause
// StaticKernel: virtual sizes that are not multiples of the local size, and virtual grids larger
// than the hardware allows in a dimension.
#include <gtest/gtest.h>

#include <skein/skein.hpp>

#include "backends.hpp"

namespace skein::test {
namespace {
namespace static_kernel_test {

class StaticKernels : public BackendTest {};

// Every work item of the virtual grid writes its flat id, its ids and sizes, once.
const char* kIds = R"(
KERNEL void ids(GLOBAL_MEM int* out)
{
    ${static_begin}
    const VSIZE_T i = ${static_global_flat_id}();
    out[i * 4 + 0] = (int)${static_global_id}(0);
    out[i * 4 + 1] = (int)${static_global_id}(1);
    out[i * 4 + 2] = (int)(${static_group_id}(1) * ${static_local_size}(1) + ${static_local_id}(1));
    out[i * 4 + 3] = (int)(${static_global_size}(0) * 1000 + ${static_num_groups}(0));
}
)";

void check_ids(const Array& out, std::size_t gx, std::size_t gy, std::size_t lx) {
  const auto got = out.get<std::int32_t>();
  const std::size_t groups_x = (gx + lx - 1) / lx;
  for (std::size_t y = 0; y < gy; ++y) {
    for (std::size_t x = 0; x < gx; ++x) {
      const std::size_t i = y * gx + x;
      ASSERT_EQ(got[i * 4 + 0], static_cast<std::int32_t>(x)) << x << "," << y;
      ASSERT_EQ(got[i * 4 + 1], static_cast<std::int32_t>(y)) << x << "," << y;
      ASSERT_EQ(got[i * 4 + 2], static_cast<std::int32_t>(y)) << x << "," << y;
      ASSERT_EQ(got[i * 4 + 3], static_cast<std::int32_t>(gx * 1000 + groups_x));
    }
  }
}

TEST_P(StaticKernels, SizesThatAreNotMultiplesOfTheLocalSize) {
  auto ctx = context();
  Queue queue(ctx);
  for (auto [gx, gy, lx] : {std::tuple<std::size_t, std::size_t, std::size_t>{1, 1, 1},
                            {13, 7, 4},
                            {1000, 3, 64},
                            {33, 33, 32}}) {
    SCOPED_TRACE(fmt::format("{}x{} local {}", gx, gy, lx));
    auto out = Array::empty(queue, {gx * gy * 4}, Dtype::int32);
    // Poison: every element must be written.
    out.set(std::vector<std::int32_t>(gx * gy * 4, -12345));
    StaticKernel kernel(queue, kIds, "ids", {gx, gy}, WorkSize{lx, 1});
    kernel(out);
    check_ids(out, gx, gy, lx);
  }
}

TEST_P(StaticKernels, AGridLargerThanTheHardwareAllowsInADimension) {
  auto ctx = context();
  Queue queue(ctx);
  const auto& p = ctx.devices().front().params();
  // Beyond the device's own limit in dimension 1 where that limit is small (65535 groups on CUDA
  // GPUs); elsewhere the virtual grid is forced onto a small grid through the test option.
  const std::size_t gy = std::min<std::size_t>(p.max_num_groups[1] + 17, 70000);
  const std::size_t gx = 3;
  StaticKernelOptions options;
  if (p.max_num_groups[1] >= gy) options.max_num_groups = 1000;
  auto out = Array::empty(queue, {gx * gy * 4}, Dtype::int32);
  out.set(std::vector<std::int32_t>(gx * gy * 4, -1));
  StaticKernel kernel(queue, kIds, "ids", {gx, gy}, WorkSize{1, 1}, {}, options);
  const std::size_t limit = options.max_num_groups.value_or(p.max_num_groups[1]);
  EXPECT_GT(gy, limit);
  // The real grid stays within the (possibly pretended) limits in every dimension.
  const auto real = kernel.real_global_size(0);
  for (unsigned d = 0; d < real.dims(); ++d) {
    EXPECT_LE(real[d],
              std::max<std::size_t>(options.max_num_groups.value_or(p.max_num_groups[d]), 1));
  }
  kernel(out);
  check_ids(out, gx, gy, 1);
}

TEST_P(StaticKernels, ChosenLocalSizeAndUserGlobals) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t n = 1001;
  auto out = Array::empty(queue, {n}, Dtype::float32);
  StaticKernel kernel(queue, R"(
KERNEL void scale(GLOBAL_MEM float* out)
{
    ${static_begin}
    const VSIZE_T i = ${static_global_id}(0);
    out[i] = (float)i * ${factor};
}
)",
                      "scale", n, std::nullopt, {{"factor", literal(0.5f)}});
  EXPECT_GE(kernel.local_size()[0], 1u);
  kernel(out);
  const auto got = out.get<float>();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], static_cast<float>(i) * 0.5f);
  EXPECT_THROW(
      StaticKernel(queue, "KERNEL void k() {}", "k", 4, std::nullopt, {{"static_begin", "x"}}),
      RenderError);
  EXPECT_THROW(StaticKernel(queue, "KERNEL void k() { ${missing} }", "k", 4), RenderError);
}

SKEIN_INSTANTIATE_BACKENDS(StaticKernels);

}  // namespace static_kernel_test
}  // namespace
}  // namespace skein::test

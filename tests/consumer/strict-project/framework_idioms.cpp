// SPDX-License-Identifier: BSD-3-Clause
// The framework's documented idioms (docs/guide.md, docs/kernels.md, the headers' examples), each
// checked against the host: option structs given by designated initializers that leave fields out,
// one kernel source with dynamic local memory, ElementwiseKernel, ReductionKernel, per-axis and
// deterministic reductions, StaticKernel, in-kernel interpolation (the guide's "Textures"), the
// driver controls, and the typed errors.
#include "idioms.hpp"

#include <skein/skein.hpp>

#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace strict {
namespace {

// docs/kernels.md, "Dynamic local memory": each group reverses its piece through local memory.
constexpr const char* kReverse = R"(
KERNEL void reverse(GLOBAL_MEM float* y, GLOBAL_MEM const float* x LOCAL_MEM_DYNAMIC_PARAM(float, tile))
{
    LOCAL_MEM_DYNAMIC_DECL(float, tile);
    const int l = get_local_id(0), g = get_local_size(0);
    tile[l] = x[get_global_id(0)];
    LOCAL_BARRIER;
    y[get_global_id(0)] = tile[g - 1 - l];
}
)";

// The guide's "Textures": bilinear interpolation in the kernel, clamped to the edges.
constexpr const char* kBilinear = R"(
KERNEL void bilinear(GLOBAL_MEM float* out, GLOBAL_MEM const float* field, int w, int h,
                     GLOBAL_MEM const float* xs, GLOBAL_MEM const float* ys, int n)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    float x = xs[i], y = ys[i];
    x = x >= 0.0f ? (x <= w - 1 ? x : (float)(w - 1)) : 0.0f;
    y = y >= 0.0f ? (y <= h - 1 ? y : (float)(h - 1)) : 0.0f;
    const int x0 = (int)x, y0 = (int)y;
    const int x1 = x0 + 1 < w ? x0 + 1 : x0;
    const int y1 = y0 + 1 < h ? y0 + 1 : y0;
    const float fx = x - x0, fy = y - y0;
    GLOBAL_MEM const float* row0 = field + (long)y0 * w;
    GLOBAL_MEM const float* row1 = field + (long)y1 * w;
    out[i] = (1.0f - fy) * ((1.0f - fx) * row0[x0] + fx * row0[x1])
           + fy * ((1.0f - fx) * row1[x0] + fx * row1[x1]);
}
)";

void check_array_kernels(const skein::Queue& queue, Checker& check) {
  const std::size_t n = 1001;  // not a multiple of any group size
  std::vector<float> x(n), y(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 17) - 8.0f;
    y[i] = 0.25f * static_cast<float>(i % 5);
  }
  const auto dx = skein::Array::from_host(queue, x);
  const auto dy = skein::Array::from_host(queue, y);

  // elementwise.hpp's example, with the options by designated initializer.
  const skein::ElementwiseKernel axpy("T a, T x, T y", "T z", "z = a * x + y", {.name = "axpy"});
  const auto z = axpy(queue, {2.0f, dx, dy})[0].get<float>();
  bool same = z.size() == n;
  for (std::size_t i = 0; same && i < n; ++i) same = z[i] == 2.0f * x[i] + y[i];
  check.expect(same, "ElementwiseKernel {.name = \"axpy\"}");

  // reduction.hpp's example: the L2 norm.
  const skein::ReductionKernel l2("T x", "T y", "x * x", "a + b", "0", {.post_map = "y = sqrt(a)"});
  double sum_sq = 0;
  for (float v : x) sum_sq += static_cast<double>(v) * v;
  const auto norm = static_cast<double>(skein::reduction_value<float>(l2(queue, {dx})));
  check.expect(std::abs(norm - std::sqrt(sum_sq)) <= 1e-5 * std::sqrt(sum_sq),
               "ReductionKernel {.post_map = \"y = sqrt(a)\"}");

  // Per-axis sums of a (7, 11) int32 array, and a deterministic whole-array sum.
  std::vector<std::int32_t> m(7 * 11);
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = static_cast<std::int32_t>(i % 23) - 11;
  const auto grid = skein::Array::from_host(queue, m, {7, 11});
  const auto cols = skein::sum(queue, grid, {.axis = 0}).get<std::int64_t>();
  const auto all = skein::sum(queue, grid, {.axes = {0, 1}}).get<std::int64_t>();
  std::int64_t total = 0;
  same = cols.size() == 11;
  for (std::size_t c = 0; same && c < 11; ++c) {
    std::int64_t want = 0;
    for (std::size_t r = 0; r < 7; ++r) want += m[r * 11 + c];
    same = cols[c] == want;
    total += want;
  }
  check.expect(same, "sum {.axis = 0}");
  check.expect(all.size() == 1 && all[0] == total, "sum {.axes = {0, 1}}");
  const auto det = skein::reduction_value<double>(
      skein::sum(queue, skein::astype(queue, dx, skein::Dtype::float64), {.deterministic = true}));
  double want_det = 0;
  for (float v : x) want_det += v;
  check.expect(det == want_det, "sum {.deterministic = true}");
}

void check_kernels(const skein::Context& ctx, const skein::Queue& queue, Checker& check) {
  // One source, dynamic local memory, options by designated initializer.
  const std::size_t n = 512, group = 64;
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i);
  const auto dx = skein::Array::from_host(queue, x);
  const auto dy = skein::Array::empty(queue, {n}, skein::dtype_of<float>);
  const skein::Program program(ctx, kReverse, {.fast_math = false, .name = "reverse.cl"});
  program.kernel("reverse").prepare(queue, n, skein::LaunchSizes{group},
                                    skein::LocalMem{.bytes = group * sizeof(float)})(dy, dx);
  const auto y = dy.get<float>();
  bool same = true;
  for (std::size_t i = 0; same && i < n; ++i)
    same = y[i] == x[i / group * group + group - 1 - i % group];
  check.expect(same, "Program {.fast_math, .name} with LocalMem{.bytes}");

  // StaticKernel on a virtual grid with fewer real groups than virtual ones.
  const std::size_t m = 1001;
  const auto out = skein::Array::empty(queue, {m}, skein::dtype_of<float>);
  const skein::StaticKernel scale(queue, R"(
KERNEL void scale(GLOBAL_MEM float* out)
{
    ${static_begin}
    const VSIZE_T i = ${static_global_id}(0);
    out[i] = (float)i * ${factor};
}
)",
                                  "scale", m, skein::WorkSize{32},
                                  {{"factor", skein::literal(0.5f)}}, {.max_num_groups = 4});
  scale(out);
  const auto scaled = out.get<float>();
  same = scaled.size() == m;
  for (std::size_t i = 0; same && i < m; ++i) same = scaled[i] == 0.5f * static_cast<float>(i);
  check.expect(same, "StaticKernel {.max_num_groups = 4}");

  // Interpolation in the kernel, as the guide's "Textures" shows.
  const int w = 4, h = 3;
  std::vector<float> field(static_cast<std::size_t>(w * h));
  for (std::size_t i = 0; i < field.size(); ++i) field[i] = static_cast<float>(i);
  const std::vector<float> xs{0.5f, 2.25f, 9.0f}, ys{0.5f, 1.0f, -1.0f};
  const auto d_field = skein::Array::from_host(queue, field, {std::size_t{3}, std::size_t{4}});
  const auto d_xs = skein::Array::from_host(queue, xs);
  const auto d_ys = skein::Array::from_host(queue, ys);
  const auto d_out = skein::Array::empty(queue, {xs.size()}, skein::dtype_of<float>);
  const skein::Program bilinear(ctx, kBilinear);
  const int count = static_cast<int>(xs.size());
  bilinear.kernel("bilinear")(queue, xs.size(), std::nullopt, d_out, d_field, w, h, d_xs, d_ys,
                              count);
  std::vector<float> got(xs.size());
  d_out.get(std::span<float>(got));
  check.expect(got == std::vector<float>{2.5f, 6.25f, 3.0f}, "in-kernel bilinear interpolation");
}

void check_driver_controls(const skein::Context& ctx, Checker& check) {
  const skein::MemoryInfo memory = skein::memory_info(ctx, 0);
  check.expect(memory.total > 0 && memory.free <= memory.total, "memory_info");
  const skein::DeviceMemoryPool pool(ctx);
  pool.set_limit_from_free_memory(0.8);

  // The code's own host array, page-locked in place, copied on a high-priority queue and back.
  std::vector<double> host(1 << 12);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = 0.5 * static_cast<double>(i);
  const auto pinned =
      skein::HostBuffer::register_memory(ctx, host.data(), host.size() * sizeof(double));
  const skein::Queue halo(ctx, skein::QueuePriority::high());
  const auto device = skein::Buffer::allocate(ctx, 0, pinned.size());
  device.set(halo, pinned.bytes(), skein::Sync::async);
  const auto staging =
      skein::HostBuffer::allocate(ctx, pinned.size(), skein::HostMemoryFlags{.portable = true});
  device.get(halo, staging.bytes(), skein::Sync::async);
  halo.synchronize();
  const auto back = staging.as<double>();
  check.expect(std::vector<double>(back.begin(), back.end()) == host,
               "registered host memory round trip");
}

void check_errors(const skein::Context& ctx, Checker& check) {
  // A code's own errors in Skein's form.
  try {
    throw skein::LogicError(
        skein::ErrorInfo{.what = "a bad grid", .call = "mysim", .hint = "give 2 x 2"});
  } catch (const skein::LogicError& e) {
    check.expect(
        std::string(e.what()).find("a bad grid") != std::string::npos && e.call() == "mysim",
        "LogicError(ErrorInfo{.what, .call, .hint})");
  }
  // A compile error names the kernel's source.
  bool compile_error = false;
  try {
    const skein::Program broken(
        ctx, "KERNEL void broken(GLOBAL_MEM float* y) { y[0] = undefined_name; }");
  } catch (const skein::CompileError&) {
    compile_error = true;
  }
  check.expect(compile_error, "CompileError for a bad kernel");
  // Managed memory is CUDA's: OpenCL refuses it with a LogicError.
  if (ctx.api().id() == skein::ApiId::opencl) {
    bool refused = false;
    try {
      (void)skein::allocate_managed(ctx, 0, 1024);
    } catch (const skein::LogicError&) {
      refused = true;
    }
    check.expect(refused, "allocate_managed refused on OpenCL");
  }
}

}  // namespace

void check_framework(const skein::Api& api, Checker& check) {
  const skein::ProfileRange range("strict consumer: framework");
  const auto found = skein::platforms_and_devices_by_mask(api, 1, {.unique_devices_only = true});
  check.expect(!found.empty() && !found.front().second.empty(), "a device with DeviceFilter{...}");
  if (found.empty() || found.front().second.empty()) return;
  const auto ctx = skein::Context::from_devices(std::span(found.front().second));
  const skein::Queue queue(ctx);
  check_array_kernels(queue, check);
  check_kernels(ctx, queue, check);
  check_driver_controls(ctx, check);
  check_errors(ctx, check);
}

}  // namespace strict

// SPDX-License-Identifier: BSD-3-Clause
// One kernel source for CUDA and OpenCL, launched on every device of a context, and the array
// kernels (ElementwiseKernel, built-in reductions) on one device.
// Built by the `docs-examples` target (docs/CMakeLists.txt); quoted in docs/guide.md.
#include <skein/skein.hpp>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <vector>

// The same text compiles with NVRTC and with the OpenCL compiler: the prelude defines KERNEL,
// GLOBAL_MEM and get_global_id() on both.
constexpr const char* kSource = R"(
KERNEL void axpy(GLOBAL_MEM float* y, GLOBAL_MEM const float* x, float a, int n)
{
    const int i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}
)";

int main() try {
  const auto apis = skein::Api::all_available();
  if (apis.empty()) {
    std::cerr << "no GPGPU API here; run skein-info to see why\n";
    return 1;
  }
  // Every device of the first platform (4 with POCL_DEVICES="pthread pthread pthread pthread").
  const auto found = skein::platforms_and_devices_by_mask(apis.front());
  if (found.empty()) {  // an API without devices (e.g. PoCL with none configured)
    std::cerr << "no device here; run skein-info to see why\n";
    return 1;
  }
  const auto ctx = skein::Context::from_devices(std::span(found.front().second));
  const skein::Queue queue(ctx);  // one stream / command queue per device

  // Each device gets its own n elements: MultiDevice<Array> gives every launch its own arrays.
  const std::size_t n = 1000;  // not a multiple of any work-group size: the kernel checks i < n
  const std::size_t padded = (n + 255) / 256 * 256;
  std::vector<float> x(n), y(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = 0.5f * static_cast<float>(i);
    y[i] = 1.0f;
  }
  skein::MultiDevice<skein::Array> xs, ys;
  for (std::size_t d = 0; d < ctx.num_devices(); ++d) {
    xs.set(d, skein::Array::from_host(queue, x, {}, d));
    ys.set(d, skein::Array::from_host(queue, y, {}, d));
  }

  const skein::Program program(ctx, kSource);  // compiled per device, cached on disk
  const auto axpy = program.kernel("axpy").prepare(queue, padded, 256);
  axpy(ys, xs, 2.0f, static_cast<std::int32_t>(n));  // scalars with explicit types
  queue.synchronize();

  bool ok = true;
  for (std::size_t d = 0; d < ctx.num_devices(); ++d) {
    const auto out = ys[d].get<float>();
    for (std::size_t i = 0; i < n; ++i) ok = ok && out[i] == 2.0f * x[i] + y[i];
  }

  // Array kernels: the operation on one element; Skein writes and caches the kernel.
  const skein::ElementwiseKernel lerp("T a, T b, T t", "T out", "out = a + t * (b - a)",
                                      {.name = "lerp"});
  const skein::Array& a = xs[0];
  const auto outs = lerp(queue, {a, ys[0], 0.25f});  // the output is allocated and returned
  const double total = skein::reduction_value<float>(skein::sum(queue, outs[0]));
  double expected = 0;
  for (std::size_t i = 0; i < n; ++i) expected += x[i] + 0.25 * (2.0 * x[i] + y[i] - x[i]);
  ok = ok && std::abs(total - expected) <= 1e-5 * std::abs(expected);

  // Arrays as in pygpu and NumPy: views without copies, joins, gathers, per-axis reductions.
  std::vector<std::int32_t> m(6 * 4);
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = static_cast<std::int32_t>(i);
  const auto grid = skein::Array::from_host(queue, m, {6, 4});  // C order, on device 0
  const auto cols = grid.transpose();                           // a (4, 6) view, no copy
  const auto joined = skein::concatenate(queue, {grid, grid.slice(0, 2)});  // (8, 4)
  const auto rows = skein::Array::from_host(queue, std::vector<std::int64_t>{5, -6});
  const auto picked = skein::take(queue, grid, rows).get<std::int32_t>();          // rows 5 and 0
  const auto row_sums = skein::sum(queue, cols, {.axis = 0}).get<std::int64_t>();  // int64
  ok = ok && joined.shape() == skein::Shape{8, 4} && picked[0] == 20 && picked[4] == 0 &&
       skein::may_share_memory(grid, cols) && !skein::may_share_memory(grid, joined);
  for (std::size_t r = 0; r < 6; ++r)
    ok = ok && row_sums[r] == static_cast<std::int64_t>(16 * r + 6);

  std::cout << "axpy on " << ctx.num_devices()
            << " device(s), lerp, sum and array operations: " << (ok ? "ok" : "MISMATCH") << "\n";
  return ok ? 0 : 1;
} catch (const skein::Error& e) {
  std::cerr << e.what() << "\n";
  return 1;
}

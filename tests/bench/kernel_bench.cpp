// SPDX-License-Identifier: BSD-3-Clause
// skein-bench-kernels: on a CUDA device, measured side by side in one run:
//  (a) the host time of a PreparedKernel launch against a raw cuLaunchKernel of the same kernel
//      on the same stream, and against a raw cuGraphLaunch of a graph of that one launch (what
//      Skein's launches after a kernel's first on a stream use) (batches of launches timed on
//      the host clock, medians over rounds, the variants alternating);
//  (b) building a Program from the disk cache against its cold NVRTC compile (each from a fresh
//      Context, so that only the disk cache can help).
//
//   skein-bench-kernels [--rounds 40] [--batch 200] [--json FILE]
#include <dlfcn.h>
#include <fmt/format.h>
#include <stdlib.h>

#include <skein_cli/cli.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <skein/cuda.hpp>
#include <skein/skein.hpp>
#include <vector>

#include "raw_graph.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

const char* kNoop = R"(
KERNEL void noop(GLOBAL_MEM float* x, float a, int n)
{
    if (n < 0 && get_global_id(0) == 0) x[0] = a;
}
)";

// A program of realistic size for the compile-time comparison: several functions and kernels.
std::string medium_source(const std::string& tag) {
  std::string src = "// " + tag + "\n";
  for (int k = 0; k < 8; ++k) {
    src += fmt::format(R"(
WITHIN_KERNEL float f{0}(float x) {{ return x * x * {0}.5f + sinf(x) - cosf(x * {0}.25f); }}
KERNEL void k{0}(GLOBAL_MEM float* y, GLOBAL_MEM const float* x, int n)
{{
    const int i = get_global_id(0);
    if (i < n) {{
        float acc = 0.0f;
        for (int j = 0; j < 16; ++j) acc += f{0}(x[i] + j);
        y[i] = acc;
    }}
}}
)",
                       k);
  }
  return src;
}

}  // namespace

int main(int argc, char** argv) {
  skein::cli::Parser app{"Skein's kernel launch and program cache against raw CUDA"};
  int rounds = 40, batch = 200;
  std::string json_path;
  app.add_option("--rounds", rounds, "Timed rounds per variant");
  app.add_option("--batch", batch, "Launches per round");
  app.add_option("--json", json_path, "Write the results to this file");
  if (auto status = app.parse(argc, argv)) return *status;

  // A cache of our own, empty, so the first build is really cold.
  char dir[] = "/tmp/skein-bench-cache-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  setenv("SKEIN_CACHE_DIR", dir, 1);

  for (const auto& s : skein::Api::status()) {
    if (s.id == skein::ApiId::cuda && !s.available) {
      fmt::print("CUDA is unavailable: {}\nNothing to measure.\n", s.reason);
      return 0;
    }
  }
  auto api = skein::Api::from_id(skein::ApiId::cuda);
  auto device = skein::Platform::from_index(api, 0).devices().front();
  fmt::print("device: {}\n", device.description());

  // (a) launch overhead.
  auto ctx = skein::Context::from_devices(device);
  skein::Queue queue(ctx);
  skein::Program program(ctx, kNoop);
  auto kernel = program.kernel("noop");
  auto prepared = kernel.prepare(queue, 256, 256);
  auto x = skein::Array::zeros(queue, {256}, skein::Dtype::float32);

  void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                unsigned, unsigned, CUstream, void**, void**);
  auto raw_launch = reinterpret_cast<LaunchFn>(dlsym(libcuda, "cuLaunchKernel"));
  if (!raw_launch) {
    fmt::print(stderr, "cuLaunchKernel not found\n");
    return 1;
  }
  const auto function = reinterpret_cast<CUfunction>(kernel.native(0));
  const auto stream = skein::cuda::native_stream(queue, 0);
  CUdeviceptr ptr = skein::cuda::native_pointer(x.data());
  float a = 2.0f;
  int n = 256;
  void* params[] = {&ptr, &a, &n};

  auto time_batch = [&](auto&& launch_once) {
    const auto t0 = Clock::now();
    for (int i = 0; i < batch; ++i) launch_once();
    const auto t1 = Clock::now();
    queue.synchronize();
    return std::chrono::duration<double, std::micro>(t1 - t0).count() / batch;
  };
  // The same launch with its arguments packed in one buffer at the offsets the driver gives
  // (cuLaunchKernel's `extra`, CU_LAUNCH_PARAM_BUFFER_POINTER), instead of one pointer each.
  using ParamInfoFn = CUresult (*)(CUfunction, size_t, size_t*, size_t*);
  auto param_info = reinterpret_cast<ParamInfoFn>(dlsym(libcuda, "cuFuncGetParamInfo"));
  alignas(16) unsigned char packed[64] = {};
  std::size_t packed_size = 0;
  if (param_info) {
    const void* values[] = {&ptr, &a, &n};
    for (std::size_t i = 0; i < 3; ++i) {
      std::size_t offset = 0, size = 0;
      if (param_info(function, i, &offset, &size) != CUDA_SUCCESS) std::abort();
      std::memcpy(packed + offset, values[i], size);
      packed_size = std::max(packed_size, offset + size);
    }
  }
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed, CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &packed_size, CU_LAUNCH_PARAM_END};
  auto raw_packed = [&] {
    if (raw_launch(function, 1, 1, 1, 256, 1, 1, 0, stream, nullptr, extra) != CUDA_SUCCESS) {
      std::abort();
    }
  };
  // A one-kernel graph of the same launch, made once, launched as it is.
  std::optional<skein::bench::RawGraph> graph;
  try {
    graph.emplace(libcuda, skein::cuda::native_context(ctx, 0), function, 1, 256, params);
  } catch (const std::exception& e) {
    fmt::print(stderr, "skein-bench-kernels: {}\n", e.what());
    return 1;
  }
  auto raw_graph = [&] { graph->launch(stream); };
  auto skein_call = [&] { prepared(x, a, std::int32_t{n}); };
  auto skein_events = [&] { (void)prepared.enqueue(x, a, std::int32_t{n}); };
  auto raw_call = [&] {
    if (raw_launch(function, 1, 1, 1, 256, 1, 1, 0, stream, params, nullptr) != CUDA_SUCCESS) {
      std::abort();
    }
  };
  for (int w = 0; w < 3; ++w) {
    time_batch(skein_call);
    time_batch(raw_call);
    time_batch(skein_events);
    if (packed_size) time_batch(raw_packed);
    time_batch(raw_graph);
  }
  std::vector<double> t_skein, t_raw, t_events, t_packed, t_graph;
  for (int r = 0; r < rounds; ++r) {
    t_raw.push_back(time_batch(raw_call));
    t_skein.push_back(time_batch(skein_call));
    t_events.push_back(time_batch(skein_events));
    if (packed_size) t_packed.push_back(time_batch(raw_packed));
    t_graph.push_back(time_batch(raw_graph));
  }
  const double raw_us = median(t_raw), skein_us = median(t_skein), events_us = median(t_events);
  const double packed_us = packed_size ? median(t_packed) : 0;
  const double graph_us = median(t_graph);

  // (b) cold compile against the disk cache.
  const std::string src = medium_source(fmt::format("bench {}", getpid()));
  auto build = [&](bool expect_cache) {
    auto fresh = skein::Context::from_devices(device);  // its own in-memory program cache
    const auto t0 = Clock::now();
    skein::Program p(fresh, src);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (p.from_cache(0) != expect_cache) {
      fmt::print(stderr, "unexpected cache state (expected from_cache={})\n", expect_cache);
      std::exit(1);
    }
    return ms;
  };
  const double cold_ms = build(false);
  std::vector<double> cached;
  for (int i = 0; i < 10; ++i) cached.push_back(build(true));
  const double cached_ms = median(cached);

  fmt::print("\n(a) host time per launch, median of {} rounds of {} launches\n", rounds, batch);
  fmt::print("{:<34}{:>10}\n", "raw cuLaunchKernel", fmt::format("{:.3f} us", raw_us));
  fmt::print("{:<34}{:>10}   {:+.3f} us vs raw\n", "skein PreparedKernel()", fmt::format("{:.3f} us", skein_us),
             skein_us - raw_us);
  fmt::print("{:<34}{:>10}   {:+.3f} us vs raw\n", "skein PreparedKernel::enqueue()",
             fmt::format("{:.3f} us", events_us), events_us - raw_us);
  if (packed_size) {
    fmt::print("{:<34}{:>10}   {:+.3f} us vs raw\n", "raw, arguments in one buffer",
               fmt::format("{:.3f} us", packed_us), packed_us - raw_us);
  }
  fmt::print("{:<34}{:>10}   {:+.3f} us vs raw\n", "raw cuGraphLaunch, one-kernel graph",
             fmt::format("{:.3f} us", graph_us), graph_us - raw_us);
  fmt::print("{:<34}{:>10}   {:+.3f} us\n", "skein PreparedKernel() vs graph", "",
             skein_us - graph_us);
  fmt::print("{:<34}{:>10}   {:+.3f} us\n", "skein enqueue() vs graph", "", events_us - graph_us);
  fmt::print("\n(b) building the program ({} bytes of source)\n", src.size());
  fmt::print("{:<34}{:>10}\n", "cold NVRTC compile + load", fmt::format("{:.2f} ms", cold_ms));
  fmt::print("{:<34}{:>10}   ({:.0f}x faster)\n", "from the disk cache (median of 10)",
             fmt::format("{:.2f} ms", cached_ms), cold_ms / cached_ms);

  if (!json_path.empty()) {
    nlohmann::json j{{"device", device.name()},
                     {"launch_us", {{"raw", raw_us}, {"skein", skein_us}, {"skein_enqueue", events_us},
                                    {"raw_packed", packed_size ? nlohmann::json(packed_us) : nlohmann::json()},
                                    {"raw_graph", graph_us}}},
                     {"launch_overhead_us", skein_us - raw_us},
                     {"compile_ms", {{"cold", cold_ms}, {"cached_median", cached_ms}, {"cached_all", cached}}}};
    std::ofstream(json_path) << j.dump(2) << "\n";
  }
  std::filesystem::remove_all(dir);
  return 0;
}

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

// The command line.
struct BenchOptions {
  int rounds = 40, batch = 200;
  std::string json_path;
};

using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);

// (a)'s medians, microseconds per launch.
struct LaunchTimes {
  double raw = 0, skein = 0, events = 0, graph = 0;
  double packed = 0;  // 0 where the driver lacks cuFuncGetParamInfo
  bool has_packed = false;
};

// (a): the noop kernel launched by Skein (a PreparedKernel: called, and enqueue() with events) and
// by the driver's own calls on the same stream (cuLaunchKernel with a pointer per argument, with
// the arguments in one buffer, and cuGraphLaunch of a one-kernel graph of it). Kept for the whole
// run: its context holds the device's primary context, which (b)'s fresh contexts share.
class Launches {
 public:
  explicit Launches(const skein::Device& device)
      : ctx_(skein::Context::from_devices(device)),
        queue_(ctx_),
        program_(ctx_, kNoop),
        kernel_(program_.kernel("noop")),
        prepared_(kernel_.prepare(queue_, 256, 256)),
        x_(skein::Array::zeros(queue_, {256}, skein::Dtype::float32)) {}
  Launches(const Launches&) = delete;
  Launches& operator=(const Launches&) = delete;

  // Resolves the driver's calls and makes the graph; an error message where one is missing or
  // fails, else empty.
  std::string resolve_raw() {
    void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    raw_launch_ = reinterpret_cast<LaunchFn>(dlsym(libcuda, "cuLaunchKernel"));
    if (!raw_launch_) return "cuLaunchKernel not found";
    function_ = reinterpret_cast<CUfunction>(kernel_.native(0));
    stream_ = skein::cuda::native_stream(queue_, 0);
    ptr_ = skein::cuda::native_pointer(x_.data());
    pack_arguments(libcuda);
    // A one-kernel graph of the same launch, made once, launched as it is.
    try {
      graph_.emplace(libcuda, skein::cuda::native_context(ctx_, 0), function_, 1, 256, params_);
    } catch (const std::exception& e) {
      return fmt::format("skein-bench-kernels: {}", e.what());
    }
    return {};
  }

  // Three warm-up batches of every variant, then `rounds` rounds of `batch` launches each, the
  // variants alternating.
  LaunchTimes measure(int rounds, int batch) {
    const auto skein_call = [this] { prepared_(x_, a_, std::int32_t{n_}); };
    const auto skein_events = [this] { (void)prepared_.enqueue(x_, a_, std::int32_t{n_}); };
    const auto raw_call = [this] { raw(params_, nullptr); };
    const auto raw_packed = [this] { raw(nullptr, extra_); };
    const auto raw_graph = [this] { graph_->launch(stream_); };
    for (int w = 0; w < 3; ++w) {
      time_batch(skein_call, batch);
      time_batch(raw_call, batch);
      time_batch(skein_events, batch);
      if (packed_size_) time_batch(raw_packed, batch);
      time_batch(raw_graph, batch);
    }
    std::vector<double> t_skein, t_raw, t_events, t_packed, t_graph;
    for (int r = 0; r < rounds; ++r) {
      t_raw.push_back(time_batch(raw_call, batch));
      t_skein.push_back(time_batch(skein_call, batch));
      t_events.push_back(time_batch(skein_events, batch));
      if (packed_size_) t_packed.push_back(time_batch(raw_packed, batch));
      t_graph.push_back(time_batch(raw_graph, batch));
    }
    LaunchTimes t;
    t.raw = median(t_raw);
    t.skein = median(t_skein);
    t.events = median(t_events);
    t.has_packed = packed_size_ != 0;
    t.packed = t.has_packed ? median(t_packed) : 0;
    t.graph = median(t_graph);
    return t;
  }

 private:
  // The same launch with its arguments packed in one buffer at the offsets the driver gives
  // (cuLaunchKernel's `extra`, CU_LAUNCH_PARAM_BUFFER_POINTER), instead of one pointer each.
  void pack_arguments(void* libcuda) {
    using ParamInfoFn = CUresult (*)(CUfunction, size_t, size_t*, size_t*);
    auto param_info = reinterpret_cast<ParamInfoFn>(dlsym(libcuda, "cuFuncGetParamInfo"));
    if (!param_info) return;
    const void* values[] = {&ptr_, &a_, &n_};
    for (std::size_t i = 0; i < 3; ++i) {
      std::size_t offset = 0, size = 0;
      if (param_info(function_, i, &offset, &size) != CUDA_SUCCESS) std::abort();
      std::memcpy(packed_ + offset, values[i], size);
      packed_size_ = std::max(packed_size_, offset + size);
    }
  }
  void raw(void** params, void** extra) const {
    if (raw_launch_(function_, 1, 1, 1, 256, 1, 1, 0, stream_, params, extra) != CUDA_SUCCESS)
      std::abort();
  }
  // Host microseconds per launch of a batch (the launches alone: the wait after them is not timed).
  template <class F>
  double time_batch(F&& launch_once, int batch) const {
    const auto t0 = Clock::now();
    for (int i = 0; i < batch; ++i) launch_once();
    const auto t1 = Clock::now();
    queue_.synchronize();
    return std::chrono::duration<double, std::micro>(t1 - t0).count() / batch;
  }

  skein::Context ctx_;
  skein::Queue queue_;
  skein::Program program_;
  skein::Kernel kernel_;
  skein::PreparedKernel prepared_;
  skein::Array x_;
  LaunchFn raw_launch_ = nullptr;
  CUfunction function_ = nullptr;
  CUstream stream_ = nullptr;
  CUdeviceptr ptr_ = 0;
  float a_ = 2.0f;
  int n_ = 256;
  void* params_[3] = {&ptr_, &a_, &n_};
  alignas(16) unsigned char packed_[64] = {};
  std::size_t packed_size_ = 0;
  void* extra_[5] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed_, CU_LAUNCH_PARAM_BUFFER_SIZE,
                     &packed_size_, CU_LAUNCH_PARAM_END};
  std::optional<skein::bench::RawGraph> graph_;
};

// (b)'s times, milliseconds.
struct CompileTimes {
  std::size_t source_bytes = 0;
  double cold = 0, cached = 0;  // cached: the median
  std::vector<double> cached_all;
};

// (b): a program of medium size built from a fresh context (its own in-memory program cache) once
// cold, then 10 times from the disk cache; exits with 1 where the cache did not do what it should.
CompileTimes measure_compiles(const skein::Device& device) {
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
  CompileTimes t;
  t.source_bytes = src.size();
  t.cold = build(false);
  for (int i = 0; i < 10; ++i) t.cached_all.push_back(build(true));
  t.cached = median(t.cached_all);
  return t;
}

void print_results(const BenchOptions& o, const LaunchTimes& l, const CompileTimes& c) {
  fmt::print("\n(a) host time per launch, median of {} rounds of {} launches\n", o.rounds, o.batch);
  fmt::print("{:<34}{:>10}\n", "raw cuLaunchKernel", fmt::format("{:.3f} us", l.raw));
  fmt::print("{:<34}{:>10}   {:+.3f} us vs raw\n", "skein PreparedKernel()",
             fmt::format("{:.3f} us", l.skein), l.skein - l.raw);
  fmt::print("{:<34}{:>10}   {:+.3f} us vs raw\n", "skein PreparedKernel::enqueue()",
             fmt::format("{:.3f} us", l.events), l.events - l.raw);
  if (l.has_packed) {
    fmt::print("{:<34}{:>10}   {:+.3f} us vs raw\n", "raw, arguments in one buffer",
               fmt::format("{:.3f} us", l.packed), l.packed - l.raw);
  }
  fmt::print("{:<34}{:>10}   {:+.3f} us vs raw\n", "raw cuGraphLaunch, one-kernel graph",
             fmt::format("{:.3f} us", l.graph), l.graph - l.raw);
  fmt::print("{:<34}{:>10}   {:+.3f} us\n", "skein PreparedKernel() vs graph", "",
             l.skein - l.graph);
  fmt::print("{:<34}{:>10}   {:+.3f} us\n", "skein enqueue() vs graph", "", l.events - l.graph);
  fmt::print("\n(b) building the program ({} bytes of source)\n", c.source_bytes);
  fmt::print("{:<34}{:>10}\n", "cold NVRTC compile + load", fmt::format("{:.2f} ms", c.cold));
  fmt::print("{:<34}{:>10}   ({:.0f}x faster)\n", "from the disk cache (median of 10)",
             fmt::format("{:.2f} ms", c.cached), c.cold / c.cached);
}

void write_json(const std::string& path, const skein::Device& device, const LaunchTimes& l,
                const CompileTimes& c) {
  nlohmann::json j{{"device", device.name()},
                   {"launch_us",
                    {{"raw", l.raw},
                     {"skein", l.skein},
                     {"skein_enqueue", l.events},
                     {"raw_packed", l.has_packed ? nlohmann::json(l.packed) : nlohmann::json()},
                     {"raw_graph", l.graph}}},
                   {"launch_overhead_us", l.skein - l.raw},
                   {"compile_ms",
                    {{"cold", c.cold}, {"cached_median", c.cached}, {"cached_all", c.cached_all}}}};
  std::ofstream(path) << j.dump(2) << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  skein::cli::Parser app{"Skein's kernel launch and program cache against raw CUDA"};
  BenchOptions o;
  app.add_option("--rounds", o.rounds, "Timed rounds per variant");
  app.add_option("--batch", o.batch, "Launches per round");
  app.add_option("--json", o.json_path, "Write the results to this file");
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

  Launches launches(device);
  if (const std::string missing = launches.resolve_raw(); !missing.empty()) {
    fmt::print(stderr, "{}\n", missing);
    return 1;
  }
  const LaunchTimes launch_times = launches.measure(o.rounds, o.batch);
  const CompileTimes compile_times = measure_compiles(device);
  print_results(o, launch_times, compile_times);
  if (!o.json_path.empty()) write_json(o.json_path, device, launch_times, compile_times);
  std::filesystem::remove_all(dir);
  return 0;
}

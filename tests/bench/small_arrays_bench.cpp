// SPDX-License-Identifier: BSD-3-Clause
// skein-bench-small: the host time per call of Skein's array operations on small and medium
// arrays (float32, 1 KiB to 1 MiB), the cost a simulation code pays for many small calls:
//   axpy        skein::axpy(queue, a, x, y, out) into a given output (a built-in kernel)
//   elementwise a user ElementwiseKernel "z = a * x + y" into a given output
//   sum         skein::sum(queue, x, {.out = s}): the sum as a device scalar, nothing read back
// beside a raw cuLaunchKernel of an axpy kernel on the same stream (the floor of a plain launch)
// and a raw cuGraphLaunch of a one-kernel graph of it (the floor of the graph launches Skein makes
// for kernels called again on a stream, framework/cuda/program.cpp), all measured the same way:
// batches of --batch calls, the queue synchronised after each batch, time per call = batch time /
// batch, median over --rounds rounds, the variants alternating.
// Every variant's result is checked against the host once after its rounds.
//
//   skein-bench-small [--rounds 15] [--batch 1000] [--json FILE]
//   skein-bench-small --profile axpy|elementwise|sum|raw|graph [--seconds 3]
//   skein-bench-small --serve   (commands on stdin: size BYTES, batch VARIANT, check, quit)
//
// --profile calls one variant on 1 KiB for --seconds, nothing else (for a sampling profiler
// such as `perf record`), and prints its time per call.
//
// tools/peer-small-arrays.py measures CuPy the same way (ElementwiseKernel into a given output,
// x.sum()); with --skein it runs this program with --serve and alternates Skein's batches with
// its own in every round, so that each ratio compares batches of one moment (tools/gpu-check.sh's
// `small` step).
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <nlohmann/json.hpp>
#include <skein/cuda.hpp>
#include <skein/skein.hpp>
#include <skein_cli/cli.hpp>
#include <vector>

#include "raw_graph.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

const char* kAxpy = R"(
KERNEL void raw_axpy(GLOBAL_MEM float* z, GLOBAL_MEM const float* x, GLOBAL_MEM const float* y,
                     float a, unsigned int n)
{
    const unsigned int i = (unsigned int)get_global_id(0);
    if (i < n) z[i] = a * x[i] + y[i];
}
)";

bool close(float got, double want) {
  return std::abs(static_cast<double>(got) - want) <= 1e-5 * std::max(1.0, std::abs(want));
}

}  // namespace

int main(int argc, char** argv) {
  skein::cli::Parser app{"Host time per call of Skein's axpy, user elementwise kernel and sum on "
                         "small arrays, beside a raw cuLaunchKernel"};
  int rounds = 15;
  int batch = 1000;
  std::string json_path;
  app.add_option("--rounds", rounds, "Timed rounds per variant and size (the median is reported)")
      .range(1, 100000);
  app.add_option("--batch", batch, "Calls per round, the queue synchronised after each")
      .range(1, 1000000);
  app.add_option("--json", json_path, "Also write the results to this JSON file");
  std::string profile;
  double seconds = 3;
  app.add_option("--profile", profile, "Only call this variant on 1 KiB, for --seconds (for a profiler)")
      .one_of({"axpy", "elementwise", "sum", "raw", "graph"});
  app.add_option("--seconds", seconds, "How long --profile calls its variant").range(0.1, 600.0);
  bool make_current = false;
  app.add_flag("--make-current", make_current,
               "Make the device's context current on this thread first (cuCtxSetCurrent), as the "
               "CUDA runtime does");
  bool serve = false;
  app.add_flag("--serve", serve,
               "Take commands on stdin, one per line, and answer each on a line of stdout: `size "
               "BYTES` (set up that size), `batch raw|graph|axpy|elementwise|sum` (time one batch: us per "
               "call), `check` (the results against the host: ok, or what is wrong), `quit`. "
               "tools/peer-small-arrays.py --skein alternates its own batches with these");
  if (auto status = app.parse(argc, argv)) return *status;

  try {
    std::optional<skein::ApiStatus> cuda;
    for (const skein::ApiStatus& s : skein::Api::status()) {
      if (s.id == skein::ApiId::cuda) cuda = s;
    }
    if (!cuda || !cuda->available) {
      fmt::print("CUDA is unavailable: {}\nNothing to measure.\n", cuda ? cuda->reason : "unknown");
      return 0;
    }
    const skein::Api api = skein::Api::from_id(skein::ApiId::cuda);
    const skein::Device device = skein::select_devices(api, 1).front();
    const skein::Context context = skein::Context::from_devices(device);
    const skein::Queue queue(context);

    void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  unsigned, unsigned, CUstream, void**, void**);
    auto raw_launch =
        libcuda ? reinterpret_cast<LaunchFn>(dlsym(libcuda, "cuLaunchKernel")) : nullptr;
    if (!raw_launch) {
      fmt::print(stderr, "cuLaunchKernel not found\n");
      return 1;
    }
    const skein::Program program(context, kAxpy);
    const skein::Kernel raw_kernel = program.kernel("raw_axpy");
    const auto function = reinterpret_cast<CUfunction>(raw_kernel.native(0));
    const auto stream = skein::cuda::native_stream(queue, 0);
    if (make_current) {
      using SetCurrentFn = CUresult (*)(CUcontext);
      auto set_current = reinterpret_cast<SetCurrentFn>(dlsym(libcuda, "cuCtxSetCurrent"));
      if (!set_current || set_current(skein::cuda::native_context(context, 0)) != CUDA_SUCCESS) {
        fmt::print(stderr, "cuCtxSetCurrent failed\n");
        return 1;
      }
    }
    const skein::ElementwiseKernel user("float a, float x, float y", "float z", "z = a * x + y",
                                        {.name = "bench_user_axpy"});

    nlohmann::json rows = nlohmann::json::array();
    if (!serve) {
      fmt::print("skein-bench-small on {}: host time per call (us), batches of {} calls, median "
                 "of {} rounds\n",
                 device.name(), batch, rounds);
      fmt::print("{:>10} {:>10} {:>10} {:>10} {:>12} {:>10}\n", "bytes", "raw", "graph", "axpy",
                 "elementwise", "sum");
    }
    const std::vector<std::size_t> sizes =
        profile.empty() ? std::vector<std::size_t>{std::size_t{1} << 10, std::size_t{4} << 10,
                                                   std::size_t{16} << 10, std::size_t{64} << 10,
                                                   std::size_t{256} << 10, std::size_t{1} << 20}
                        : std::vector<std::size_t>{std::size_t{1} << 10};
    // One size's arrays, its four variants and the check of their results against the host.
    struct Setup {
      std::size_t n;
      std::vector<float> hx, hy;
      std::optional<skein::Array> x, y, z, s;
      CUdeviceptr px, py, pz;
      unsigned n32, groups;
      void* params[5];
      std::optional<skein::bench::RawGraph> graph;  // one node: raw_axpy with params
    };
    const float a = 2.0f;
    auto setup = [&](std::size_t bytes) {
      auto u = std::make_unique<Setup>();
      u->n = bytes / sizeof(float);
      u->hx.resize(u->n);
      u->hy.resize(u->n);
      for (std::size_t i = 0; i < u->n; ++i) {
        u->hx[i] = static_cast<float>(i % 13) * 0.25f;
        u->hy[i] = static_cast<float>(i % 7) - 3.0f;
      }
      u->x = skein::Array::from_host(queue, u->hx);
      u->y = skein::Array::from_host(queue, u->hy);
      u->z = skein::Array::empty(queue, {u->n}, skein::Dtype::float32);
      u->s = skein::Array::empty(queue, {1}, skein::Dtype::float32);
      u->px = skein::cuda::native_pointer(u->x->data());
      u->py = skein::cuda::native_pointer(u->y->data());
      u->pz = skein::cuda::native_pointer(u->z->data());
      u->n32 = static_cast<unsigned>(u->n);
      u->groups = static_cast<unsigned>((u->n + 255) / 256);
      void* params[] = {&u->pz, &u->px, &u->py, const_cast<float*>(&a), &u->n32};
      std::copy(std::begin(params), std::end(params), u->params);
      u->graph.emplace(libcuda, skein::cuda::native_context(context, 0), function, u->groups, 256,
                       u->params);
      return u;
    };
    std::unique_ptr<Setup> cur;
    auto raw = [&] {
      if (raw_launch(function, cur->groups, 1, 1, 256, 1, 1, 0, stream, cur->params, nullptr) !=
          CUDA_SUCCESS) {
        std::abort();
      }
    };
    auto graph = [&] { cur->graph->launch(stream); };
    auto builtin = [&] { (void)skein::axpy(queue, a, *cur->x, *cur->y, *cur->z); };
    auto elementwise = [&] { (void)user(queue, {a, *cur->x, *cur->y, *cur->z}); };
    auto sum = [&] { (void)skein::sum(queue, *cur->x, {.out = *cur->s}); };
    auto time_batch = [&](auto&& call) {
      const auto t0 = Clock::now();
      for (int i = 0; i < batch; ++i) call();
      queue.synchronize();
      return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / batch;
    };
    auto time_variant = [&](std::string_view v) {
      if (v == "raw") return time_batch(raw);
      if (v == "graph") return time_batch(graph);
      if (v == "axpy") return time_batch(builtin);
      if (v == "elementwise") return time_batch(elementwise);
      return time_batch(sum);
    };
    // The results, against the host: empty when right, else what is wrong.
    auto check = [&]() -> std::string {
      const std::size_t n = cur->n;
      std::vector<float> got(n);
      double want_sum = 0;
      for (std::size_t i = 0; i < n; ++i) want_sum += cur->hx[i];
      cur->z->fill_zero();
      builtin();
      cur->z->get(std::span<float>(got));
      for (std::size_t i = 0; i < n; ++i) {
        if (!close(got[i], 2.0 * cur->hx[i] + cur->hy[i])) return fmt::format("axpy: wrong z[{}]", i);
      }
      cur->z->fill_zero();
      elementwise();
      cur->z->get(std::span<float>(got));
      for (std::size_t i = 0; i < n; ++i) {
        if (!close(got[i], 2.0 * cur->hx[i] + cur->hy[i])) {
          return fmt::format("elementwise: wrong z[{}]", i);
        }
      }
      cur->z->fill_zero();
      raw();
      cur->z->get(std::span<float>(got));
      for (std::size_t i = 0; i < n; ++i) {
        if (!close(got[i], 2.0 * cur->hx[i] + cur->hy[i])) return fmt::format("raw: wrong z[{}]", i);
      }
      cur->z->fill_zero();
      graph();
      cur->z->get(std::span<float>(got));
      for (std::size_t i = 0; i < n; ++i) {
        if (!close(got[i], 2.0 * cur->hx[i] + cur->hy[i])) return fmt::format("graph: wrong z[{}]", i);
      }
      sum();
      float got_sum = 0;
      cur->s->get(std::span<float>(&got_sum, 1));
      if (!close(got_sum, want_sum)) return fmt::format("sum: {} against {}", got_sum, want_sum);
      return {};
    };

    if (serve) {
      // One command per line on stdin, one reply line on stdout.
      std::setvbuf(stdout, nullptr, _IOLBF, 0);
      fmt::print("ready {}\n", device.name());
      std::string line;
      while (std::getline(std::cin, line)) {
        std::istringstream words(line);
        std::string command, arg;
        words >> command >> arg;
        if (command == "size") {
          cur = setup(std::stoull(arg));
          for (int w = 0; w < 2; ++w) {
            for (const char* v : {"raw", "graph", "axpy", "elementwise", "sum"}) time_variant(v);
          }
          fmt::print("ok\n");
        } else if (command == "batch" && cur &&
                   (arg == "raw" || arg == "graph" || arg == "axpy" || arg == "elementwise" ||
                    arg == "sum")) {
          fmt::print("{:.4f}\n", time_variant(arg));
        } else if (command == "check" && cur) {
          const std::string wrong = check();
          fmt::print("{}\n", wrong.empty() ? "ok" : wrong);
        } else if (command == "quit") {
          return 0;
        } else {
          fmt::print("error: unknown command '{}' (size BYTES, batch raw|graph|axpy|elementwise|sum, "
                     "check, quit)\n", line);
        }
      }
      return 0;
    }

    for (std::size_t bytes : sizes) {
      cur = setup(bytes);
      if (!profile.empty()) {
        auto loop = [&](auto&& call) {
          time_batch(call);  // warm-up
          std::vector<double> t;
          const auto end = Clock::now() + std::chrono::duration<double>(seconds);
          while (Clock::now() < end) t.push_back(time_batch(call));
          fmt::print("--profile {}: {:.3f} us per call (median of {} batches of {})\n", profile,
                     median(t), t.size(), batch);
        };
        if (profile == "axpy") loop(builtin);
        if (profile == "elementwise") loop(elementwise);
        if (profile == "sum") loop(sum);
        if (profile == "raw") loop(raw);
        if (profile == "graph") loop(graph);
        return 0;
      }
      // Warm-up: first launches, compiles (cached) and pools.
      for (int w = 0; w < 2; ++w) {
        for (const char* v : {"raw", "graph", "axpy", "elementwise", "sum"}) time_variant(v);
      }
      std::vector<double> t_raw, t_graph, t_axpy, t_user, t_sum;
      for (int r = 0; r < rounds; ++r) {
        t_raw.push_back(time_batch(raw));
        t_graph.push_back(time_batch(graph));
        t_axpy.push_back(time_batch(builtin));
        t_user.push_back(time_batch(elementwise));
        t_sum.push_back(time_batch(sum));
      }
      if (const std::string wrong = check(); !wrong.empty()) throw std::runtime_error(wrong);

      const double m_raw = median(t_raw), m_graph = median(t_graph), m_axpy = median(t_axpy),
                   m_user = median(t_user), m_sum = median(t_sum);
      fmt::print("{:>10} {:>10.2f} {:>10.2f} {:>10.2f} {:>12.2f} {:>10.2f}\n", bytes, m_raw,
                 m_graph, m_axpy, m_user, m_sum);
      rows.push_back({{"bytes", bytes},
                      {"raw_us", m_raw},
                      {"graph_us", m_graph},
                      {"axpy_us", m_axpy},
                      {"elementwise_us", m_user},
                      {"sum_us", m_sum}});
    }
    if (!json_path.empty()) {
      std::ofstream(json_path) << nlohmann::json{{"device", device.name()}, {"batch", batch},
                                                 {"rounds", rounds}, {"rows", rows}}
                                      .dump(2)
                               << "\n";
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "skein-bench-small: {}\n", e.what());
    return 1;
  }
  return 0;
}

// SPDX-License-Identifier: BSD-3-Clause
// skein-bench-small: the host time per call of Skein's array operations on small and medium
// arrays (float32, 1 KiB to 16 MiB), the cost a simulation code pays for many small calls:
//   axpy        skein::axpy(queue, a, x, y, out) into a given output (a built-in kernel)
//   elementwise a user ElementwiseKernel "z = a * x + y" into a given output
//   sum         skein::sum(queue, x, {.out = s}): the sum as a device scalar, nothing read back
// and the loop users write, each call making its result (from the queue's pool, memory_pool.hpp):
//   sum_result  auto s = skein::sum(queue, x);                      (CuPy: x.sum())
//   astype      auto y = skein::astype(queue, x, Dtype::float64);   (CuPy: x.astype(cupy.float64))
//   empty       auto e = Array::empty(queue, {n}, Dtype::float32);  (CuPy: cupy.empty(n, float32))
// each also with the context's array pool off (Context::set_array_pool(false), as
// SKEIN_ARRAY_POOL=0: plain cuMemAlloc / cuMemFree per call, as before the pool):
// sum_result_nopool, astype_nopool, empty_nopool. On CUDA, beside them: a raw cuLaunchKernel of an
// axpy kernel on the same stream (the floor of a plain launch), a raw cuGraphLaunch of a one-kernel
// graph of it (the floor of the graph launches Skein makes for kernels called again on a stream,
// framework/cuda/program.cpp), and a raw cuMemAllocAsync + cuMemFreeAsync of the array's bytes on
// the stream (CUDA's stream-ordered allocator, its pool kept: the host cost Skein's pool is to be
// compared with). All measured the same way: batches of --batch calls, the queue synchronised
// after each batch, time per call = batch time / batch, median over --rounds rounds, the variants
// alternating. Every variant's result is checked against the host once after its rounds.
//
//   skein-bench-small [--api cuda|opencl] [--rounds 15] [--batch 1000] [--max-bytes 16777216]
//                     [--json FILE]
//   skein-bench-small --profile VARIANT [--seconds 3]
//   skein-bench-small --serve   (commands on stdin: size BYTES, batch VARIANT, variants, check,
//                                quit)
//
// --profile calls one variant on 1 KiB for --seconds, nothing else (for a sampling profiler
// such as `perf record`), and prints its time per call. --api opencl (e.g. PoCL's CPU devices)
// measures everything but the raw CUDA variants.
//
// tools/peer-small-arrays.py measures CuPy the same way (ElementwiseKernel into a given output,
// x.sum(), x.astype(cupy.float64)); with --skein it runs this program with --serve and alternates
// Skein's batches with its own in every round, so that each ratio compares batches of one moment
// (tools/gpu-check.sh's `small` step).
#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
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

bool close(double got, double want, double rel = 1e-5) {
  return std::abs(got - want) <= rel * std::max(1.0, std::abs(want));
}

// The variants, in the order a round times them (and the table prints them).
const std::vector<std::string> kCudaOnly = {"raw", "graph", "raw_alloc_async"};
const std::vector<std::string> kAll = {
    "raw",           "graph",       "axpy",  "elementwise",     "sum",
    "sum_result",    "astype",      "empty", "raw_alloc_async", "sum_result_nopool",
    "astype_nopool", "empty_nopool"};

// CUDA's stream-ordered allocator, called directly (resolved in libcuda with dlsym), with the
// device's default pool told to keep what it holds (its release threshold at the maximum, as CuPy
// and PyTorch set it for cudaMallocAsync; by default it gives its memory back at each
// synchronisation).
struct RawAsyncAlloc {
  decltype(&::cuMemAllocAsync) alloc = nullptr;
  decltype(&::cuMemFreeAsync) free = nullptr;
  decltype(&::cuCtxPushCurrent) push = nullptr;
  decltype(&::cuCtxPopCurrent) pop = nullptr;
  CUcontext context = nullptr;
  bool ok = false;

  RawAsyncAlloc(void* libcuda, CUcontext ctx, CUdevice device) : context(ctx) {
#define SKEIN_BENCH_STR2(x) #x
#define SKEIN_BENCH_STR(x) SKEIN_BENCH_STR2(x)
#define SKEIN_BENCH_RESOLVE(member, name) \
  member = reinterpret_cast<decltype(&::name)>(dlsym(libcuda, SKEIN_BENCH_STR(name)))
    SKEIN_BENCH_RESOLVE(alloc, cuMemAllocAsync);
    SKEIN_BENCH_RESOLVE(free, cuMemFreeAsync);
    SKEIN_BENCH_RESOLVE(push, cuCtxPushCurrent);
    SKEIN_BENCH_RESOLVE(pop, cuCtxPopCurrent);
    decltype(&::cuDeviceGetDefaultMemPool) default_pool = nullptr;
    decltype(&::cuMemPoolSetAttribute) set_attribute = nullptr;
    SKEIN_BENCH_RESOLVE(default_pool, cuDeviceGetDefaultMemPool);
    SKEIN_BENCH_RESOLVE(set_attribute, cuMemPoolSetAttribute);
#undef SKEIN_BENCH_RESOLVE
#undef SKEIN_BENCH_STR
#undef SKEIN_BENCH_STR2
    if (!alloc || !free || !push || !pop || !default_pool || !set_attribute) return;
    CUmemoryPool pool = nullptr;
    cuuint64_t keep = ~cuuint64_t{0};
    ok = default_pool(&pool, device) == CUDA_SUCCESS &&
         set_attribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep) == CUDA_SUCCESS;
  }
  // One allocation and its free on the stream (the context is current: made so for the batch).
  void operator()(std::size_t bytes, CUstream stream) const {
    CUdeviceptr p = 0;
    if (alloc(&p, bytes, stream) != CUDA_SUCCESS || free(p, stream) != CUDA_SUCCESS) std::abort();
  }
};

// The command line.
struct BenchOptions {
  std::string api_name = "cuda";
  int rounds = 15;
  int batch = 1000;
  std::size_t max_bytes = std::size_t{16} << 20;
  std::string json_path;
  std::string profile;  // the variant of --profile, or empty
  double seconds = 3;
  bool make_current = false;
  bool serve = false;
};

// Parses the command line into `o`; an exit status where the program ends here (--help, bad input).
std::optional<int> parse_options(int argc, char** argv, BenchOptions& o) {
  skein::cli::Parser app{
      "Host time per call of Skein's array operations on small arrays (axpy, a "
      "user elementwise kernel, sum; sum, astype and empty making their "
      "results, with the array pool and without), beside raw CUDA calls"};
  app.add_option("--api", o.api_name, "cuda (default) or opencl").one_of({"cuda", "opencl"});
  app.add_option("--rounds", o.rounds, "Timed rounds per variant and size (the median is reported)")
      .range(1, 100000);
  app.add_option("--batch", o.batch, "Calls per round, the queue synchronised after each")
      .range(1, 1000000);
  app.add_option("--max-bytes", o.max_bytes,
                 "The largest size of the table (1 KiB, 4 KiB, ... up to it)")
      .range(std::size_t{1024}, std::size_t{1} << 34);
  app.add_option("--json", o.json_path, "Also write the results to this JSON file");
  app.add_option("--profile", o.profile,
                 "Only call this variant on 1 KiB, for --seconds (for a profiler)")
      .one_of(kAll);
  app.add_option("--seconds", o.seconds, "How long --profile calls its variant").range(0.1, 600.0);
  app.add_flag("--make-current", o.make_current,
               "Make the device's context current on this thread first (cuCtxSetCurrent), as the "
               "CUDA runtime does");
  app.add_flag("--serve", o.serve,
               "Take commands on stdin, one per line, and answer each on a line of stdout: `size "
               "BYTES` (set up that size), `batch VARIANT` (time one batch: us per call; the "
               "variants of the table), `variants` (their names, on one line: the raw CUDA ones "
               "only where the driver has them), `check` (the results against the host: ok, or "
               "what is wrong), `quit`. tools/peer-small-arrays.py --skein alternates its own "
               "batches with these");
  return app.parse(argc, argv);
}

// The raw CUDA calls, resolved in the driver itself.
using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);
struct RawCuda {
  void* libcuda = nullptr;
  LaunchFn launch = nullptr;
  std::optional<skein::Program> program;  // raw_axpy's
  CUfunction function = nullptr;          // raw_axpy
  CUstream stream = nullptr;              // the queue's
  std::optional<RawAsyncAlloc> async_alloc;
};

// Resolves the raw calls on the context's device (with --make-current, makes its context current
// here); an error message when the driver lacks one that the table needs. Leaves raw_alloc_async
// out of `variants`, saying so, where the stream-ordered allocator is missing.
std::string resolve_raw_cuda(RawCuda& raw, const BenchOptions& o, const skein::Context& context,
                             const skein::Queue& queue, std::vector<std::string>& variants) {
  raw.libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  raw.launch =
      raw.libcuda ? reinterpret_cast<LaunchFn>(dlsym(raw.libcuda, "cuLaunchKernel")) : nullptr;
  if (!raw.launch) return "cuLaunchKernel not found";
  raw.program.emplace(context, kAxpy);
  raw.function = reinterpret_cast<CUfunction>(raw.program->kernel("raw_axpy").native(0));
  raw.stream = skein::cuda::native_stream(queue, 0);
  if (o.make_current) {
    using SetCurrentFn = CUresult (*)(CUcontext);
    auto set_current = reinterpret_cast<SetCurrentFn>(dlsym(raw.libcuda, "cuCtxSetCurrent"));
    if (!set_current || set_current(skein::cuda::native_context(context, 0)) != CUDA_SUCCESS) {
      return "cuCtxSetCurrent failed";
    }
  }
  raw.async_alloc.emplace(raw.libcuda, skein::cuda::native_context(context, 0),
                          skein::cuda::native_device(context.device(0)));
  if (!raw.async_alloc->ok) {
    fmt::print(stderr,
               "cuMemAllocAsync or its default pool is not available: raw_alloc_async "
               "is left out\n");
    variants.erase(std::find(variants.begin(), variants.end(), "raw_alloc_async"));
  }
  return {};
}

// One size's arrays, the raw launch's arguments, and the check of the results against the host.
struct Setup {
  std::size_t n;
  std::vector<float> hx, hy;
  std::optional<skein::Array> x, y, z, s;
  CUdeviceptr px = 0, py = 0, pz = 0;
  unsigned n32 = 0, groups = 0;
  void* params[5] = {};
  std::optional<skein::bench::RawGraph> graph;  // one node: raw_axpy with params
  // The last results of the variants that make theirs, for the check.
  std::optional<skein::Array> sum_result, astype_result, empty_result;
};

// The a of every variant's z = a * x + y.
constexpr float kA = 2.0f;

// The variants on one size at a time (set_size), timed a batch at a time, and checked.
class SmallArrays {
 public:
  SmallArrays(const BenchOptions& o, const skein::Context& context, const skein::Queue& queue,
              const RawCuda& raw, std::vector<std::string> variants)
      : o_(o),
        on_cuda_(o.api_name == "cuda"),
        context_(context),
        queue_(queue),
        raw_(raw),
        variants_(std::move(variants)) {}

  const std::vector<std::string>& variants() const { return variants_; }
  bool known(std::string_view v) const {
    return std::find(variants_.begin(), variants_.end(), v) != variants_.end();
  }
  bool has_size() const { return cur_ != nullptr; }

  // Makes the arrays of a size (and the raw launch's arguments and graph, on CUDA).
  void set_size(std::size_t bytes) {
    auto u = std::make_unique<Setup>();
    u->n = bytes / sizeof(float);
    u->hx.resize(u->n);
    u->hy.resize(u->n);
    for (std::size_t i = 0; i < u->n; ++i) {
      u->hx[i] = static_cast<float>(i % 13) * 0.25f;
      u->hy[i] = static_cast<float>(i % 7) - 3.0f;
    }
    // Made without the pool: the inputs, whose addresses the raw launch is given (a block whose
    // address went out is never reused), live for the whole size.
    const skein::Allocator plain = [&](std::size_t d, std::size_t nb) {
      return skein::Buffer::allocate(context_, d, nb);
    };
    u->x = skein::Array::empty(queue_, {u->n}, skein::Dtype::float32, std::nullopt, plain);
    u->y = skein::Array::empty(queue_, {u->n}, skein::Dtype::float32, std::nullopt, plain);
    u->z = skein::Array::empty(queue_, {u->n}, skein::Dtype::float32, std::nullopt, plain);
    u->s = skein::Array::empty(queue_, {1}, skein::Dtype::float32, std::nullopt, plain);
    u->x->set(std::span<const float>(u->hx));
    u->y->set(std::span<const float>(u->hy));
    if (on_cuda_) {
      u->px = skein::cuda::native_pointer(u->x->data());
      u->py = skein::cuda::native_pointer(u->y->data());
      u->pz = skein::cuda::native_pointer(u->z->data());
      u->n32 = static_cast<unsigned>(u->n);
      u->groups = static_cast<unsigned>((u->n + 255) / 256);
      void* params[] = {&u->pz, &u->px, &u->py, const_cast<float*>(&kA), &u->n32};
      std::copy(std::begin(params), std::end(params), u->params);
      u->graph.emplace(raw_.libcuda, skein::cuda::native_context(context_, 0), raw_.function,
                       u->groups, 256, u->params);
    }
    cur_ = std::move(u);
  }

  // Microseconds per call of one batch of variant v on the current size.
  double time_variant(std::string_view v) {
    if (v == "raw") return time_batch([this] { raw(); });
    if (v == "graph") return time_batch([this] { graph(); });
    if (v == "axpy") return time_batch([this] { builtin(); });
    if (v == "elementwise") return time_batch([this] { elementwise(); });
    if (v == "sum") return time_batch([this] { sum(); });
    if (v == "sum_result") return time_batch([this] { sum_result(); });
    if (v == "astype") return time_batch([this] { astype(); });
    if (v == "empty") return time_batch([this] { empty(); });
    if (v == "raw_alloc_async") {
      // The context current meanwhile (cuMemAllocAsync needs one; Skein's calls make it so
      // themselves).
      CUcontext popped = nullptr;
      raw_.async_alloc->push(raw_.async_alloc->context);
      const double t = time_batch([this] { alloc_async(); });
      raw_.async_alloc->pop(&popped);
      return t;
    }
    if (v == "sum_result_nopool")
      return without_pool([this] { return time_batch([this] { sum_result(); }); });
    if (v == "astype_nopool")
      return without_pool([this] { return time_batch([this] { astype(); }); });
    if (v == "empty_nopool")
      return without_pool([this] { return time_batch([this] { empty(); }); });
    throw std::logic_error(fmt::format("unknown variant {}", v));
  }

  // Two batches of every variant: first launches, compiles (cached) and pools.
  void warm_up() {
    for (int w = 0; w < 2; ++w) {
      for (const auto& v : variants_) time_variant(v);
    }
  }

  // The results of the current size, against the host: empty when right, else what is wrong.
  std::string check() {
    double want_sum = 0;
    for (std::size_t i = 0; i < cur_->n; ++i) want_sum += cur_->hx[i];
    std::string wrong = check_z("axpy", [this] { builtin(); });
    if (wrong.empty()) wrong = check_z("elementwise", [this] { elementwise(); });
    if (wrong.empty() && on_cuda_) wrong = check_z("raw", [this] { raw(); });
    if (wrong.empty() && on_cuda_) wrong = check_z("graph", [this] { graph(); });
    if (!wrong.empty()) return wrong;
    sum();
    float got_sum = 0;
    cur_->s->get(std::span<float>(&got_sum, 1));
    if (!close(got_sum, want_sum)) return fmt::format("sum: {} against {}", got_sum, want_sum);
    for (bool pool : {true, false}) {
      if (wrong = check_results(pool, want_sum); !wrong.empty()) return wrong;
    }
    return {};
  }

 private:
  // The calls of the variants.
  void raw() const {
    if (raw_.launch(raw_.function, cur_->groups, 1, 1, 256, 1, 1, 0, raw_.stream, cur_->params,
                    nullptr) != CUDA_SUCCESS) {
      std::abort();
    }
  }
  void graph() const { cur_->graph->launch(raw_.stream); }
  void builtin() const { (void)skein::axpy(queue_, kA, *cur_->x, *cur_->y, *cur_->z); }
  void elementwise() const { (void)user_(queue_, {kA, *cur_->x, *cur_->y, *cur_->z}); }
  void sum() const { (void)skein::sum(queue_, *cur_->x, {.out = *cur_->s}); }
  // The natural loop: each call's result is a new array, gone at the end of the call.
  void sum_result() const { auto s = skein::sum(queue_, *cur_->x); }
  void astype() const { auto y = skein::astype(queue_, *cur_->x, skein::Dtype::float64); }
  void empty() const { auto e = skein::Array::empty(queue_, {cur_->n}, skein::Dtype::float32); }
  void alloc_async() const { (*raw_.async_alloc)(cur_->n * sizeof(float), raw_.stream); }

  template <class F>
  double time_batch(F&& call) const {
    const auto t0 = Clock::now();
    for (int i = 0; i < o_.batch; ++i) call();
    queue_.synchronize();
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / o_.batch;
  }
  // Runs `body` with the array pool off, as SKEIN_ARRAY_POOL=0 would have it.
  template <class F>
  double without_pool(F&& body) const {
    context_.set_array_pool(false);
    const double t = body();
    context_.set_array_pool(true);
    return t;
  }

  // z = a x + y by `call`, into a zeroed z, against the host.
  template <class F>
  std::string check_z(const char* what, F&& call) const {
    std::vector<float> got(cur_->n);
    cur_->z->fill_zero();
    call();
    cur_->z->get(std::span<float>(got));
    for (std::size_t i = 0; i < cur_->n; ++i) {
      if (!close(got[i], 2.0 * cur_->hx[i] + cur_->hy[i]))
        return fmt::format("{}: wrong z[{}]", what, i);
    }
    return {};
  }

  // The variants that make their results (sum_result, astype, empty), with the pool or without.
  std::string check_results(bool pool, double want_sum) const {
    const std::size_t n = cur_->n;
    context_.set_array_pool(pool);
    const skein::Array s = skein::sum(queue_, *cur_->x);
    const skein::Array y = skein::astype(queue_, *cur_->x, skein::Dtype::float64);
    const skein::Array e = skein::Array::empty(queue_, {n}, skein::Dtype::float32);
    context_.set_array_pool(true);
    const float rs = s.get<float>()[0];
    if (!close(rs, want_sum)) {
      return fmt::format("sum_result{}: {} against {}", pool ? "" : "_nopool", rs, want_sum);
    }
    const auto yd = y.get<double>();
    for (std::size_t i = 0; i < n; ++i) {
      if (yd[i] != static_cast<double>(cur_->hx[i])) {
        return fmt::format("astype{}: wrong y[{}]", pool ? "" : "_nopool", i);
      }
    }
    if (e.size() != n || e.dtype() != skein::Dtype::float32) return "empty: wrong array";
    return {};
  }

  const BenchOptions& o_;
  bool on_cuda_;
  const skein::Context& context_;
  const skein::Queue& queue_;
  const RawCuda& raw_;
  std::vector<std::string> variants_;
  const skein::ElementwiseKernel user_{
      "float a, float x, float y", "float z", "z = a * x + y", {.name = "bench_user_axpy"}};
  std::unique_ptr<Setup> cur_;
};

// --serve: one command per line on stdin, one reply line on stdout.
int serve(SmallArrays& bench, const skein::Device& device) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  fmt::print("ready {}\n", device.name());
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string command, arg;
    words >> command >> arg;
    if (command == "size") {
      bench.set_size(std::stoull(arg));
      bench.warm_up();
      fmt::print("ok\n");
    } else if (command == "batch" && bench.has_size() && bench.known(arg)) {
      fmt::print("{:.4f}\n", bench.time_variant(arg));
    } else if (command == "variants") {
      fmt::print("{}\n", fmt::join(bench.variants(), " "));
    } else if (command == "check" && bench.has_size()) {
      const std::string wrong = bench.check();
      fmt::print("{}\n", wrong.empty() ? "ok" : wrong);
    } else if (command == "quit") {
      return 0;
    } else {
      fmt::print("error: unknown command '{}' (size BYTES, batch {}, variants, check, quit)\n",
                 line, fmt::join(bench.variants(), "|"));
    }
  }
  return 0;
}

// --profile: the variant on 1 KiB for --seconds, nothing else.
int profile(SmallArrays& bench, const BenchOptions& o) {
  bench.set_size(std::size_t{1} << 10);
  bench.time_variant(o.profile);  // warm-up
  std::vector<double> t;
  const auto end = Clock::now() + std::chrono::duration<double>(o.seconds);
  while (Clock::now() < end) t.push_back(bench.time_variant(o.profile));
  fmt::print("--profile {}: {:.3f} us per call (median of {} batches of {})\n", o.profile,
             median(t), t.size(), o.batch);
  return 0;
}

// The table: every variant on 1 KiB, 4 KiB, ... up to --max-bytes, the variants alternating in
// every round; checked after each size's rounds (std::runtime_error when a result is wrong).
void table(SmallArrays& bench, const BenchOptions& o, const skein::Device& device) {
  const auto& variants = bench.variants();
  fmt::print(
      "skein-bench-small on {}: host time per call (us), batches of {} calls, median "
      "of {} rounds\n",
      device.description(), o.batch, o.rounds);
  std::string head = fmt::format("{:>10}", "bytes");
  for (const auto& v : variants)
    head += fmt::format(" {:>{}}", v, std::max<std::size_t>(v.size(), 8));
  fmt::print("{}\n", head);
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t bytes = std::size_t{1} << 10; bytes <= o.max_bytes; bytes *= 4) {
    bench.set_size(bytes);
    bench.warm_up();
    std::map<std::string, std::vector<double>> t;
    for (int r = 0; r < o.rounds; ++r) {
      for (const auto& v : variants) t[v].push_back(bench.time_variant(v));
    }
    if (const std::string wrong = bench.check(); !wrong.empty()) throw std::runtime_error(wrong);

    std::string line = fmt::format("{:>10}", bytes);
    nlohmann::json row{{"bytes", bytes}};
    for (const auto& v : variants) {
      const double m = median(t[v]);
      line += fmt::format(" {:>{}.2f}", m, std::max<std::size_t>(v.size(), 8));
      row[v + "_us"] = m;
    }
    fmt::print("{}\n", line);
    rows.push_back(row);
  }
  if (!o.json_path.empty()) {
    std::ofstream(o.json_path) << nlohmann::json{{"device", device.name()}, {"api", o.api_name},
                                                 {"batch", o.batch},        {"rounds", o.rounds},
                                                 {"variants", variants},    {"rows", rows}}
                                      .dump(2)
                               << "\n";
  }
}

// The measurements of the options on the API's first device; the exit status.
int run(const BenchOptions& o) {
  const bool on_cuda = o.api_name == "cuda";
  const skein::ApiId api_id = on_cuda ? skein::ApiId::cuda : skein::ApiId::opencl;
  std::optional<skein::ApiStatus> status;
  for (const skein::ApiStatus& s : skein::Api::status()) {
    if (s.id == api_id) status = s;
  }
  if (!status || !status->available) {
    fmt::print("{} is unavailable: {}\nNothing to measure.\n", on_cuda ? "CUDA" : "OpenCL",
               status ? status->reason : "unknown");
    return 0;
  }
  const skein::Api api = skein::Api::from_id(api_id);
  const skein::Device device = skein::select_devices(api, 1).front();
  const skein::Context context = skein::Context::from_devices(device);
  const skein::Queue queue(context);
  std::vector<std::string> variants;
  for (const auto& v : kAll) {
    if (on_cuda || std::find(kCudaOnly.begin(), kCudaOnly.end(), v) == kCudaOnly.end()) {
      variants.push_back(v);
    }
  }
  if (!o.profile.empty() &&
      std::find(variants.begin(), variants.end(), o.profile) == variants.end()) {
    fmt::print(stderr, "--profile {} needs CUDA\n", o.profile);
    return 1;
  }
  RawCuda raw;
  if (on_cuda) {
    if (const std::string missing = resolve_raw_cuda(raw, o, context, queue, variants);
        !missing.empty()) {
      fmt::print(stderr, "{}\n", missing);
      return 1;
    }
  }
  SmallArrays bench(o, context, queue, raw, std::move(variants));
  if (o.serve) return serve(bench, device);
  if (!o.profile.empty()) return profile(bench, o);
  table(bench, o, device);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions o;
  if (auto status = parse_options(argc, argv, o)) return *status;
  try {
    return run(o);
  } catch (const std::exception& e) {
    fmt::print(stderr, "skein-bench-small: {}\n", e.what());
    return 1;
  }
}

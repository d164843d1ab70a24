// SPDX-License-Identifier: BSD-3-Clause
// skein-bench-blas: Skein's gemm (skein::blas::gemm over cuBLAS) against cuBLAS called directly,
// measured side by side in one run on CUDA device 0: the same arrays, the same stream, the same
// timing method (events around each call, the two interleaved, median over the iterations after a
// warm-up). Also the host time per call at a small size, where Skein's argument checks show.
//
//   skein-bench-blas [--sizes 1024,4096,8192x1024x512] [--dtypes float32,float64] [--tf32]
//                    [--iterations 20] [--warmup 3] [--overhead-size 64] [--json FILE]
//
// A size N means M = N = K; MxNxK gives them apart. Arrays are C-ordered: C (M x N) = A (M x K) @
// B (K x N). cuBLAS is called as Skein calls it for such arrays (C.T = B.T @ A.T, column-major),
// and the two results are compared at the end of each size. TFLOP/s = 2 M N K / time; ratio =
// cuBLAS's time / Skein's (1.0: as fast).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <skein_cli/cli.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <skein/cuda.hpp>
#include <skein/skein.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

#define BENCH_CUDART(call)                                                                         \
  do {                                                                                             \
    const cudaError_t bench_error_ = (call);                                                       \
    if (bench_error_ != cudaSuccess) {                                                             \
      throw std::runtime_error(fmt::format("{} failed: {} ({}) at {}:{}", #call,                   \
                                           cudaGetErrorName(bench_error_),                         \
                                           cudaGetErrorString(bench_error_), __FILE__, __LINE__)); \
    }                                                                                              \
  } while (false)

#define BENCH_CUBLAS(call)                                                               \
  do {                                                                                   \
    const cublasStatus_t bench_status_ = (call);                                         \
    if (bench_status_ != CUBLAS_STATUS_SUCCESS) {                                        \
      throw std::runtime_error(fmt::format("{} failed: {} at {}:{}", #call,              \
                                           cublasGetStatusName(bench_status_), __FILE__, \
                                           __LINE__));                                   \
    }                                                                                    \
  } while (false)

using Clock = std::chrono::steady_clock;

struct Size {
  std::size_t m, n, k;
  std::string text() const { return fmt::format("{}x{}x{}", m, n, k); }
};

Size parse_size(const std::string& s) {
  std::vector<std::size_t> parts;
  std::size_t begin = 0;
  while (begin <= s.size()) {
    const std::size_t end = std::min(s.find('x', begin), s.size());
    const std::string part = s.substr(begin, end - begin);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos) {
      throw std::invalid_argument("--sizes: '" + s + "' is not N or MxNxK");
    }
    parts.push_back(std::stoul(part));
    begin = end + 1;
  }
  if (parts.size() == 1) return {parts[0], parts[0], parts[0]};
  if (parts.size() == 3) return {parts[0], parts[1], parts[2]};
  throw std::invalid_argument("--sizes: '" + s + "' is not N or MxNxK");
}

struct Settings {
  std::vector<std::string> sizes{"1024", "4096", "8192"};
  std::vector<std::string> dtypes{"float32", "float64"};
  bool tf32 = false;
  int iterations = 20;
  int warmup = 3;
  std::size_t overhead_size = 64;
  int overhead_batch = 200;
  int overhead_rounds = 20;
  std::string json_path;
};

struct Result {
  std::string dtype;
  Size size;
  double skein_ms = 0, cublas_ms = 0;
  double max_rel_diff = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double tflops(const Size& s, double ms) {
  return ms > 0 ? 2.0 * s.m * s.n * s.k / (ms * 1e-3) / 1e12 : 0;
}

template <class T>
std::vector<T> random_matrix(std::size_t n, std::uint64_t seed) {
  std::vector<T> v(n);
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& e : v) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    e = static_cast<T>(static_cast<double>(x >> 11) / 9007199254740992.0 * 2 - 1);  // [-1, 1)
  }
  return v;
}

// The raw call: C.T = B.T @ A.T in cuBLAS's column-major terms, as Skein makes it.
template <class T>
void raw_gemm(cublasHandle_t h, const Size& s, const T* a, const T* b, T* c) {
  const T alpha = 1, beta = 0;
  const int m = static_cast<int>(s.m), n = static_cast<int>(s.n), k = static_cast<int>(s.k);
  if constexpr (std::is_same_v<T, float>) {
    BENCH_CUBLAS(
        cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, n, a, k, &beta, c, n));
  } else {
    BENCH_CUBLAS(
        cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, n, a, k, &beta, c, n));
  }
}

template <class T>
Result run_size(const Settings& s, const skein::Queue& queue, cublasHandle_t handle,
                const Size& size) {
  const skein::Dtype dtype = skein::dtype_of<T>;
  const auto a =
      skein::Array::from_host(queue, random_matrix<T>(size.m * size.k, 1), {size.m, size.k});
  const auto b =
      skein::Array::from_host(queue, random_matrix<T>(size.k * size.n, 2), {size.k, size.n});
  const auto c_skein = skein::Array::zeros(queue, {size.m, size.n}, dtype);
  const auto c_raw = skein::Array::zeros(queue, {size.m, size.n}, dtype);
  const auto ptr = [](const skein::Array& x) {
    return reinterpret_cast<T*>(skein::cuda::native_pointer(x.data()) + x.offset());
  };
  const cudaStream_t stream = skein::cuda::native_stream(queue, 0);
  BENCH_CUBLAS(cublasSetStream(handle, stream));

  const skein::blas::GemmOptions options{.allow_tf32 = s.tf32};
  auto skein_call = [&] { skein::blas::gemm(queue, 1.0, a, b, 0.0, c_skein, options); };
  auto raw_call = [&] { raw_gemm<T>(handle, size, ptr(a), ptr(b), ptr(c_raw)); };

  cudaEvent_t start = nullptr, end = nullptr;
  BENCH_CUDART(cudaEventCreate(&start));
  BENCH_CUDART(cudaEventCreate(&end));
  auto time_raw = [&] {
    BENCH_CUDART(cudaEventRecord(start, stream));
    raw_call();
    BENCH_CUDART(cudaEventRecord(end, stream));
    BENCH_CUDART(cudaEventSynchronize(end));
    float ms = 0;
    BENCH_CUDART(cudaEventElapsedTime(&ms, start, end));
    return double(ms);
  };
  auto time_skein = [&] {
    const skein::Event e0 = queue.record_event(0);
    skein_call();
    const skein::Event e1 = queue.record_event(0);
    e1.wait();
    return e1.time_since(e0);
  };
  for (int i = 0; i < s.warmup; ++i) {
    skein_call();
    raw_call();
  }
  queue.synchronize();
  std::vector<double> t_skein, t_raw;
  for (int i = 0; i < s.iterations; ++i) {
    t_skein.push_back(time_skein());
    t_raw.push_back(time_raw());
  }
  BENCH_CUDART(cudaEventDestroy(start));
  BENCH_CUDART(cudaEventDestroy(end));

  // The same call on the same data: the results must agree (bit for bit, normally).
  const auto r1 = c_skein.get<T>(), r2 = c_raw.get<T>();
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < r1.size(); ++i) {
    diff = std::max(diff, std::abs(double(r1[i]) - double(r2[i])));
    scale = std::max(scale, std::abs(double(r2[i])));
  }
  Result r{std::string(skein::name(dtype)), size, median(t_skein), median(t_raw),
           scale > 0 ? diff / scale : diff};
  if (r.max_rel_diff > 1e-5) {
    throw std::runtime_error(
        fmt::format("{} {}: Skein's and cuBLAS's results differ (max "
                    "relative difference {:.3g})",
                    r.dtype, size.text(), r.max_rel_diff));
  }
  return r;
}

// Host time of one call at a small size (the GPU work is negligible there): batches of calls on
// the host clock, the two alternating, median over rounds.
template <class T>
std::pair<double, double> host_overhead(const Settings& s, const skein::Queue& queue,
                                        cublasHandle_t handle) {
  const Size size{s.overhead_size, s.overhead_size, s.overhead_size};
  const std::size_t n = s.overhead_size;
  const auto a = skein::Array::from_host(queue, random_matrix<T>(n * n, 3), {n, n});
  const auto c = skein::Array::zeros(queue, {n, n}, skein::dtype_of<T>);
  const auto p = [](const skein::Array& x) {
    return reinterpret_cast<T*>(skein::cuda::native_pointer(x.data()) + x.offset());
  };
  BENCH_CUBLAS(cublasSetStream(handle, skein::cuda::native_stream(queue, 0)));
  auto batch = [&](auto&& call) {
    const auto t0 = Clock::now();
    for (int i = 0; i < s.overhead_batch; ++i) call();
    const auto t1 = Clock::now();
    queue.synchronize();
    return std::chrono::duration<double, std::micro>(t1 - t0).count() / s.overhead_batch;
  };
  auto skein_call = [&] { skein::blas::gemm(queue, 1.0, a, a, 0.0, c); };
  auto raw_call = [&] { raw_gemm<T>(handle, size, p(a), p(a), p(c)); };
  batch(skein_call);
  batch(raw_call);
  std::vector<double> t_skein, t_raw;
  for (int r = 0; r < s.overhead_rounds; ++r) {
    t_skein.push_back(batch(skein_call));
    t_raw.push_back(batch(raw_call));
  }
  return {median(t_skein), median(t_raw)};
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  skein::cli::Parser app{"Skein's gemm against cuBLAS called directly (same arrays, same stream)"};
  app.add_option("--sizes", s.sizes, "N (M = N = K) or MxNxK, comma-separated").delimiter(',');
  app.add_option("--dtypes", s.dtypes, "float32 and/or float64")
      .delimiter(',')
      .one_of({"float32", "float64"});
  app.add_flag("--tf32", s.tf32, "Allow TF32 tensor cores for float32 (both sides)");
  app.add_option("--iterations", s.iterations, "Timed calls per size").positive();
  app.add_option("--warmup", s.warmup, "Untimed calls before them").non_negative();
  app.add_option("--overhead-size", s.overhead_size, "N of the host-overhead measurement")
      .positive();
  app.add_option("--json", s.json_path, "Also write the results to this JSON file");
  if (auto status = app.parse(argc, argv)) return *status;

  try {
    std::vector<Size> sizes;
    for (const std::string& text : s.sizes) sizes.push_back(parse_size(text));

    std::optional<skein::ApiStatus> cuda;
    for (const skein::ApiStatus& status : skein::Api::status()) {
      if (status.id == skein::ApiId::cuda) cuda = status;
    }
    if (!cuda || !cuda->available) {
      fmt::print("CUDA is unavailable: {}\nNothing to measure.\n", cuda ? cuda->reason : "unknown");
      return 0;
    }
    const skein::Api api = skein::Api::from_id(skein::ApiId::cuda);
    const skein::Device device = skein::Platform::from_index(api, 0).devices().front();
    const skein::Context context = skein::Context::from_devices(device);
    const skein::Queue queue(context);

    // The application's own handle, on the device's primary context (the one Skein uses too).
    BENCH_CUDART(cudaSetDevice(skein::cuda::native_device(device)));
    cublasHandle_t handle = nullptr;
    BENCH_CUBLAS(cublasCreate(&handle));
    if (s.tf32) BENCH_CUBLAS(cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH));
    int version = 0;
    BENCH_CUBLAS(cublasGetVersion(handle, &version));

    fmt::print("device: {}; cuBLAS {}; {} iterations after {} warm-up, median{}\n\n",
               device.description(), version, s.iterations, s.warmup,
               s.tf32 ? "; TF32 allowed for float32" : "");
    fmt::print("{:<8} {:>16} {:>11} {:>11} {:>13} {:>13} {:>7} {:>10}\n", "dtype", "MxNxK",
               "skein ms", "cublas ms", "skein TFLOP/s", "cublas TFLOP/s", "ratio", "rel diff");
    std::vector<Result> results;
    std::vector<std::pair<std::string, std::pair<double, double>>> overheads;
    for (const std::string& dtype : s.dtypes) {
      for (const Size& size : sizes) {
        const Result r = dtype == "float32" ? run_size<float>(s, queue, handle, size)
                                            : run_size<double>(s, queue, handle, size);
        fmt::print("{:<8} {:>16} {:>11.3f} {:>11.3f} {:>13.2f} {:>13.2f} {:>7.3f} {:>10.2g}\n",
                   r.dtype, size.text(), r.skein_ms, r.cublas_ms, tflops(size, r.skein_ms),
                   tflops(size, r.cublas_ms), r.skein_ms > 0 ? r.cublas_ms / r.skein_ms : 0.0,
                   r.max_rel_diff);
        results.push_back(r);
      }
      overheads.emplace_back(dtype, dtype == "float32" ? host_overhead<float>(s, queue, handle)
                                                       : host_overhead<double>(s, queue, handle));
    }
    fmt::print("\nhost time per call at {0}x{0}x{0} (median of {1} batches of {2})\n",
               s.overhead_size, s.overhead_rounds, s.overhead_batch);
    for (const auto& [dtype, t] : overheads) {
      fmt::print("{:<8} skein {:.2f} us, cublas {:.2f} us ({:+.2f} us)\n", dtype, t.first, t.second,
                 t.first - t.second);
    }
    BENCH_CUBLAS(cublasDestroy(handle));

    if (!s.json_path.empty()) {
      nlohmann::json doc{{"device", device.name()}, {"cublas_version", version},
                         {"tf32", s.tf32},          {"iterations", s.iterations},
                         {"warmup", s.warmup},      {"results", nlohmann::json::array()}};
      for (const Result& r : results) {
        doc["results"].push_back({{"dtype", r.dtype},
                                  {"m", r.size.m},
                                  {"n", r.size.n},
                                  {"k", r.size.k},
                                  {"skein_ms", r.skein_ms},
                                  {"cublas_ms", r.cublas_ms},
                                  {"skein_tflops", tflops(r.size, r.skein_ms)},
                                  {"cublas_tflops", tflops(r.size, r.cublas_ms)},
                                  {"max_rel_diff", r.max_rel_diff}});
      }
      for (const auto& [dtype, t] : overheads) {
        doc["host_overhead_us"][dtype] = {{"skein", t.first}, {"cublas", t.second}};
      }
      std::ofstream out(s.json_path);
      out << doc.dump(2) << "\n";
      if (!out) throw std::runtime_error("cannot write " + s.json_path);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "skein-bench-blas: %s\n", e.what());
    return 1;
  }
  return 0;
}

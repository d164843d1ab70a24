// SPDX-License-Identifier: BSD-3-Clause
// skein-bench-array-kernels: elementwise and reduction kernels on large float32 arrays, each timed
// with device events (median over iterations) beside a device-to-device copy of the same size
// measured in the same run, as bytes moved per second (GB = 1e9 bytes; reads + writes):
//   copy      y = x                      2 N x 4 bytes   (the reference)
//   axpy      z = a x + y                3 N x 4 bytes   (target: >= 90 % of copy)
//   ...       scale, in-place axpy, astype to float64
//   sum       x.sum()                    N x 4 bytes     (CuPy: 4260 GB/s on an H200)
//   ...       deterministic sum, dot, nrm2, max, sums along both axes of an (N/1024, 1024) matrix
//   astype_f64_result, sum_result: astype and sum making their results (auto y = astype(queue,
//             x, float64), auto s = sum(queue, x)), from the queue's pool (SKEIN_ARRAY_POOL=0:
//             plain allocations, as before the pool)
//
//   skein-bench-array-kernels [--api cuda|opencl] [--mib 1024] [--iters 20] [--json FILE]
//                             [--peer-script FILE]
//
// --peer-script writes a Python script that measures CuPy's copy, ElementwiseKernel axpy and
// sum, dot, norm, max on arrays of the same size, printing the same table, for the comparison in
// one session (PEERS.md).
#include <fmt/format.h>

#include <skein_cli/cli.hpp>
#include <algorithm>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <skein/skein.hpp>
#include <vector>

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct Result {
  std::string op;
  double bytes = 0;
  double ms = 0;
  double gbps() const { return bytes / (ms * 1e-3) / 1e9; }
};

const char* kPeerScript =
    R"PY(# CuPy's figures for the operations of skein-bench-array-kernels (same sizes, same iterations).
import sys
import cupy as cp

mib = int(sys.argv[1]) if len(sys.argv) > 1 else {mib}
iters = int(sys.argv[2]) if len(sys.argv) > 2 else {iters}
n = mib * 2**20 // 4
x = cp.random.random(n, dtype=cp.float32)
y = cp.random.random(n, dtype=cp.float32)
z = cp.empty_like(x)
axpy = cp.ElementwiseKernel("T a, T x, T y", "T z", "z = a * x + y", "axpy")

def timed(f):
    for _ in range(2):
        f()
    times = []
    for _ in range(iters):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        f()
        e.record()
        e.synchronize()
        times.append(cp.cuda.get_elapsed_time(s, e))
    times.sort()
    return times[len(times) // 2]

rows = [
    ("copy", 2 * n * 4, lambda: cp.copyto(z, x)),
    ("axpy", 3 * n * 4, lambda: axpy(cp.float32(2.0), x, y, z)),
    ("sum", n * 4, lambda: x.sum()),
    ("dot", 2 * n * 4, lambda: cp.dot(x, y)),
    ("nrm2", n * 4, lambda: cp.linalg.norm(x)),
    ("max", n * 4, lambda: x.max()),
]
copy = None
print(f"{'op':<16}{'bytes':>14}{'ms':>10}{'GB/s':>10}{'% copy':>9}")
for name, nbytes, f in rows:
    ms = timed(f)
    gbps = nbytes / (ms * 1e-3) / 1e9
    copy = copy or gbps
    print(f"{name:<16}{nbytes:>14}{ms:>10.4f}{gbps:>10.1f}{100 * gbps / copy:>8.1f}%")
)PY";

}  // namespace

int main(int argc, char** argv) try {
  skein::cli::Parser app{
      "Skein's elementwise and reduction kernels against a device-to-device copy"};
  std::string api_name;
  std::size_t mib = 1024;
  int iters = 20;
  std::string json_path, peer_path;
  app.add_option("--api", api_name, "cuda or opencl (default: the first available)");
  app.add_option("--mib", mib, "Size of each float32 array in MiB");
  app.add_option("--iters", iters, "Timed iterations per operation (the median is reported)");
  app.add_option("--json", json_path, "Write the results to this file");
  app.add_option("--peer-script", peer_path, "Write the CuPy script for the same measurements");
  if (auto status = app.parse(argc, argv)) return *status;

  if (!peer_path.empty()) {
    std::string script = kPeerScript;
    for (auto [key, value] : {std::pair<std::string, std::string>{"{mib}", std::to_string(mib)},
                              {"{iters}", std::to_string(iters)}}) {
      script.replace(script.find(key), key.size(), value);
    }
    std::ofstream(peer_path) << script;
    fmt::print("wrote {} (run it with python3 on the same machine)\n", peer_path);
  }

  auto apis = skein::Api::all_available();
  if (apis.empty()) {
    fmt::print("No GPGPU API is available here; nothing to measure.\n");
    return 0;
  }
  skein::Api api = apis.front();
  if (!api_name.empty()) {
    api = skein::Api::from_id(api_name == "cuda" ? skein::ApiId::cuda : skein::ApiId::opencl);
  }
  auto ctx = skein::Context::from_criteria(api, 1);
  skein::Queue queue(ctx);
  const std::size_t n = mib * (std::size_t{1} << 20) / 4;
  const double nb = static_cast<double>(n) * 4;
  fmt::print("{}: {} float32 elements ({} MiB per array), median of {} iterations\n",
             ctx.device(0).description(), n, mib, iters);

  auto x = skein::Array::empty(queue, {n}, skein::Dtype::float32);
  auto y = skein::Array::empty(queue, {n}, skein::Dtype::float32);
  auto z = skein::Array::empty(queue, {n}, skein::Dtype::float32);
  auto z64 = skein::Array::empty(queue, {n}, skein::Dtype::float64);
  skein::fill(queue, x, 0.5f);
  skein::fill(queue, y, 0.25f);
  auto r1 = skein::Array::empty(queue, {1}, skein::Dtype::float32);
  const std::size_t cols = 1024, rows = n / cols;
  auto m = x.view(0, {rows, cols});
  auto by_row = skein::Array::empty(queue, {rows}, skein::Dtype::float32);
  auto by_col = skein::Array::empty(queue, {cols}, skein::Dtype::float32);

  auto timed = [&](const std::function<void()>& f) {
    for (int i = 0; i < 2; ++i) f();  // compile, warm up
    std::vector<double> ms;
    for (int i = 0; i < iters; ++i) {
      const auto start = queue.record_event(0);
      f();
      const auto end = queue.record_event(0);
      end.wait();
      ms.push_back(end.time_since(start));
    }
    return median(ms);
  };

  std::vector<Result> results;
  auto run = [&](const std::string& op, double bytes, const std::function<void()>& f) {
    results.push_back({op, bytes, timed(f)});
  };
  run("copy", 2 * nb, [&] { z.set(x); });
  run("axpy", 3 * nb, [&] { skein::axpy(queue, 2.0f, x, y, z); });
  run("axpy_in_place", 3 * nb, [&] { skein::axpy(queue, 1.0f, x, y, y); });
  run("scale", 2 * nb, [&] { skein::scale(queue, 2.0f, x, z); });
  run("astype_f64", 3 * nb, [&] { skein::copy(queue, x, z64); });
  run("sum", nb, [&] { skein::sum(queue, x, {.out = r1}); });
  run("sum_determ", nb, [&] { skein::sum(queue, x, {.out = r1, .deterministic = true}); });
  run("dot", 2 * nb, [&] { skein::dot(queue, x, y, {.out = r1}); });
  run("nrm2", nb, [&] { skein::nrm2(queue, x, {.out = r1}); });
  run("max", nb, [&] { skein::max(queue, x, {.out = r1}); });
  run("sum_axis1", nb, [&] { skein::sum(queue, m, {.axis = 1, .out = by_row}); });
  run("sum_axis0", nb, [&] { skein::sum(queue, m, {.axis = 0, .out = by_col}); });
  // The loop users write: each call makes its result (from the queue's pool; with
  // SKEIN_ARRAY_POOL=0 a plain allocation and free per call, as before the pool). The same bytes
  // as astype_f64 and sum above, whose outputs are given.
  run("astype_f64_result", 3 * nb,
      [&] { auto r = skein::astype(queue, x, skein::Dtype::float64); });
  run("sum_result", nb, [&] { auto r = skein::sum(queue, x); });

  const double copy = results.front().gbps();
  fmt::print("{:<18}{:>14}{:>10}{:>10}{:>9}\n", "op", "bytes", "ms", "GB/s", "% copy");
  nlohmann::json j{{"device", ctx.device(0).name()}, {"mib", mib}, {"iters", iters}};
  for (const auto& r : results) {
    fmt::print("{:<18}{:>14.0f}{:>10.4f}{:>10.1f}{:>8.1f}%\n", r.op, r.bytes, r.ms, r.gbps(),
               100 * r.gbps() / copy);
    j["results"].push_back({{"op", r.op},
                            {"bytes", r.bytes},
                            {"ms", r.ms},
                            {"gbps", r.gbps()},
                            {"fraction_of_copy", r.gbps() / copy}});
  }
  if (!json_path.empty()) std::ofstream(json_path) << j.dump(2) << "\n";
  return 0;
} catch (const skein::Error& e) {
  fmt::print(stderr, "{}\n", e.what());
  return 1;
}

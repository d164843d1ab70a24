// SPDX-License-Identifier: BSD-3-Clause
// skein-bench-interop: Skein on the application's own memory against Skein on its own, and a
// kernel with dynamic shared memory against the device copy, measured side by side in one run on
// one CUDA device (GPU time from events, medians over alternating rounds):
//  (a) axpy z = a x + y (float32, in place) on cudaMalloc'ed arrays wrapped with
//      skein::cuda::buffer_from_native, against the same on Skein-allocated arrays;
//  (b) an all_reduce (sum, float32, out of place) of the communicator's devices over the same
//      two kinds of memory;
//  (c) tiled transposes (32 x 32 and 64 x 64 tiles) whose tile is dynamic shared memory
//      (skein::LocalMem), against Skein's device-to-device copy of the same bytes (both move 2 x
//      the matrix).
// Prints one line per figure with the ratio; --json writes them.
//
//   mpirun -np 1 skein-bench-interop [--elements N] [--transpose-side S] [--rounds R] [--json FILE]
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <skein/cuda.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// GPU seconds per call of f on device 0 of `queue`: `calls` calls between two events.
double per_call(const skein::Queue& queue, int calls, const std::function<void()>& f) {
  const auto d = queue.device_idxs().front();
  const skein::Event start = queue.record_event(d);
  for (int i = 0; i < calls; ++i) f();
  const skein::Event end = queue.record_event(d);
  end.wait();
  return end.time_since(start) * 1e-3 / calls;  // time_since: milliseconds
}

// Alternating rounds of a and b; returns the medians {a, b}.
std::pair<double, double> compare(const skein::Queue& queue, int rounds, int calls,
                                  const std::function<void()>& a, const std::function<void()>& b) {
  per_call(queue, 2, a);  // warm-up: kernels compiled, memory touched
  per_call(queue, 2, b);
  std::vector<double> ta, tb;
  for (int r = 0; r < rounds; ++r) {
    ta.push_back(per_call(queue, calls, a));
    tb.push_back(per_call(queue, calls, b));
  }
  return {median(ta), median(tb)};
}

// TILE x TILE tiles, TILE x 8 work items: each reads TILE / 8 rows of the tile and writes as many
// columns. The tile is dynamic local memory, TILE x (TILE + 1) floats (a column of padding
// against bank conflicts).
std::string transpose_source(int tile) {
  return fmt::format(R"(
#define TILE {}
KERNEL void transpose(GLOBAL_MEM float* out, GLOBAL_MEM const float* in, int n
                      LOCAL_MEM_DYNAMIC_PARAM(float, tile))
{{
    LOCAL_MEM_DYNAMIC_DECL(float, tile);
    const int lx = get_local_id(0), ly = get_local_id(1);
    const size_t bx = (size_t)get_group_id(0) * TILE, by = (size_t)get_group_id(1) * TILE;
    GLOBAL_MEM const float* src = in + (by + ly) * n + bx + lx;
    #pragma unroll
    for (int j = 0; j < TILE; j += 8) tile[(ly + j) * (TILE + 1) + lx] = src[(size_t)j * n];
    LOCAL_BARRIER;
    GLOBAL_MEM float* dst = out + (bx + ly) * n + by + lx;
    #pragma unroll
    for (int j = 0; j < TILE; j += 8) dst[(size_t)j * n] = tile[lx * (TILE + 1) + ly + j];
}}
)",
                     tile);
}

// What the three measurements share: the devices, the sizes, and the lines and JSON they report.
struct Bench {
  skein::Communicator& comm;
  const skein::Context& ctx;
  const skein::Queue& queue;
  std::size_t d0;  // this rank's first device
  std::size_t n;   // elements of (a) and (b)
  int rounds;
  std::vector<std::string> lines;
  std::string json_text = "{";

  // The application's memory: cudaMalloc on a local device, handed over with a deleter.
  skein::Array foreign(std::size_t d, std::size_t bytes) const {
    cudaSetDevice(static_cast<int>(skein::cuda::native_device(ctx.device(d))));
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) throw std::runtime_error("cudaMalloc failed");
    return skein::Array(queue,
                        skein::cuda::buffer_from_native(ctx, d, reinterpret_cast<CUdeviceptr>(p),
                                                        bytes, [p] { cudaFree(p); }),
                        {bytes / 4}, skein::Dtype::float32);
  }

  // One line of the table and one JSON entry: Skein's and the reference's GB/s, and their ratio.
  void report(const std::string& key, const std::string& what, double skein_s, double peer_s,
              double bytes) {
    const double ratio = peer_s / skein_s;
    lines.push_back(fmt::format("{:<58} {:9.1f} GB/s  {:9.1f} GB/s  ratio {:.3f}", what,
                                bytes / skein_s / 1e9, bytes / peer_s / 1e9, ratio));
    json_text +=
        fmt::format("{}\"{}\": {{\"seconds\": {}, \"reference_seconds\": {}, \"ratio\": {}}}",
                    json_text.size() > 1 ? ", " : "", key, skein_s, peer_s, ratio);
  }
};

// (a) axpy on foreign memory against the same on Skein's.
void measure_axpy(Bench& b) {
  const skein::Queue& queue = b.queue;
  auto xo = skein::Array::empty(queue, {b.n}, skein::Dtype::float32, b.d0);
  auto yo = skein::Array::empty(queue, {b.n}, skein::Dtype::float32, b.d0);
  auto xf = b.foreign(b.d0, b.n * 4), yf = b.foreign(b.d0, b.n * 4);
  for (auto* a : {&xo, &yo, &xf, &yf}) skein::fill(queue, *a, 1.0f);
  const auto [own, theirs] = compare(
      queue, b.rounds, 20, [&] { skein::axpy(queue, 0.5f, xo, yo, yo); },
      [&] { skein::axpy(queue, 0.5f, xf, yf, yf); });
  b.report("axpy", fmt::format("axpy float32, {} elements: foreign / own memory", b.n), theirs, own,
           12.0 * b.n);
  // Correct on the foreign memory: 1 + 0.5 x (2 + 20 x rounds) calls... checked on a few values.
  const auto head = yf.slice(0, 4).get<float>();
  const float want = 1.0f + 0.5f * static_cast<float>(2 + 20 * b.rounds);
  if (head[0] != want)
    throw std::runtime_error(fmt::format("axpy on foreign memory: {} != {}", head[0], want));
}

// (b) an all_reduce over this rank's devices, on foreign memory against Skein's.
void measure_all_reduce(Bench& b) {
  const skein::Queue& queue = b.queue;
  // Out of place: on one member NCCL's all_reduce is then a device copy (in place, nothing).
  std::vector<skein::Array> own_in, own_out, their_in, their_out;
  for (std::size_t l = 0; l < b.comm.local_size(); ++l) {
    const std::size_t d = b.comm.device_idx(l);
    own_in.push_back(skein::Array::empty(queue, {b.n}, skein::Dtype::float32, d));
    own_out.push_back(skein::Array::empty(queue, {b.n}, skein::Dtype::float32, d));
    their_in.push_back(b.foreign(d, b.n * 4));
    their_out.push_back(b.foreign(d, b.n * 4));
    for (auto* a : {&own_in.back(), &their_in.back()}) skein::fill(queue, *a, 1.0f);
  }
  const auto [o, t] = compare(
      queue, b.rounds, 10, [&] { b.comm.all_reduce(queue, own_in, own_out, skein::ReduceOp::sum); },
      [&] { b.comm.all_reduce(queue, their_in, their_out, skein::ReduceOp::sum); });
  const float want = static_cast<float>(b.comm.size());
  if (their_out.front().slice(0, 1).get<float>().front() != want) {
    throw std::runtime_error("all_reduce on foreign memory gave a wrong sum");
  }
  b.report(
      "all_reduce",
      fmt::format("all_reduce sum float32 out of place, {} elements x {} member(s): foreign / own",
                  b.n, b.comm.size()),
      t, o, 8.0 * b.n);
}

// (c) transposes through dynamic shared memory against the device copy, on a side x side matrix
// (16384 x 16384, 1 GiB, by default: long enough that launch gaps do not count).
void measure_transposes(Bench& b, std::size_t side) {
  const std::size_t count = side * side;
  std::vector<float> host(count);
  for (std::size_t i = 0; i < count; ++i) host[i] = static_cast<float>(i % 65521);
  const skein::Queue one(b.ctx, {b.d0});
  auto in1 = skein::Array::from_host(one, host, {}, b.d0);
  auto out1 = skein::Array::empty(one, {count}, skein::Dtype::float32, b.d0);
  auto copy1 = skein::Array::empty(one, {count}, skein::Dtype::float32, b.d0);
  for (int tile : {32, 64}) {
    const skein::Program program(b.ctx, transpose_source(tile),
                                 {.device_idxs = std::vector<std::size_t>{b.d0}});
    const auto t_size = static_cast<std::size_t>(tile);
    const auto transpose = program.kernel("transpose")
                               .prepare(one, skein::LaunchSizes{side, side / t_size * 8},
                                        skein::LaunchSizes{t_size, 8},
                                        skein::LocalMem{t_size * (t_size + 1) * sizeof(float)});
    fill(one, out1, 0.0f);
    const auto [t, c] = compare(
        one, b.rounds, 10, [&] { transpose(out1, in1, static_cast<std::int32_t>(side)); },
        [&] { copy1.data().set(one, in1.data()); });
    const auto result = out1.get<float>();
    for (std::size_t r = 0; r < side; r += 97) {
      for (std::size_t col = 0; col < side; col += 89) {
        if (result[r * side + col] != host[col * side + r]) {
          throw std::runtime_error(
              fmt::format("transpose ({} tiles) wrong at ({}, {})", tile, r, col));
        }
      }
    }
    b.report(fmt::format("transpose{}", tile),
             fmt::format("transpose {0} x {0} float32, {1} x {1} dynamic shared tile / device copy",
                         side, tile),
             t, c, 8.0 * count);
  }
}

}  // namespace

int main(int argc, char** argv) try {
  skein::Runtime runtime(&argc, &argv);
  std::size_t n = std::size_t(1) << 26;  // 256 MiB of float32
  std::size_t transpose_side = 16384;
  int rounds = 9;
  std::string json;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--elements"))
      n = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--rounds"))
      rounds = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--transpose-side"))
      transpose_side = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--json"))
      json = argv[i + 1];
  }
  skein::Communicator comm(runtime);
  const skein::Context& ctx = comm.context();
  if (ctx.api().id() != skein::ApiId::cuda) {
    std::fprintf(stderr, "skein-bench-interop: needs CUDA devices (SKEIN_API=cuda)\n");
    return 2;
  }
  const skein::Queue queue(ctx);
  Bench bench{
      .comm = comm, .ctx = ctx, .queue = queue, .d0 = comm.device_idx(0), .n = n, .rounds = rounds};
  measure_axpy(bench);
  measure_all_reduce(bench);
  measure_transposes(bench, transpose_side);
  bench.json_text += "}";
  if (runtime.rank() == 0) {
    fmt::print("skein-bench-interop on {} ({}), GPU time per call, medians of {} rounds\n",
               ctx.device(bench.d0).description(), comm.backend_description(), rounds);
    fmt::print("{:<58} {:>14}  {:>14}\n", "", "Skein", "reference");
    for (const auto& l : bench.lines) fmt::print("{}\n", l);
    if (!json.empty()) std::ofstream(json) << bench.json_text << "\n";
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "skein-bench-interop: %s\n", e.what());
  return 1;
}

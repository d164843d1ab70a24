// SPDX-License-Identifier: BSD-3-Clause
// skein-bench-copy: Skein's CUDA transfers against the CUDA runtime's, measured side by side in
// one run (same sizes, same iteration counts, same timing method: events around each transfer,
// median over the iterations after a warm-up; Skein's and the runtime's transfers alternate).
//
//   skein-bench-copy [--sizes-mib 64,1024] [--iterations 50] [--warmup 5] [--json FILE]
//
// A second table compares Skein with Skein (issue 14's targets): a 2-D strided copy of a
// 4096 x 4096 float32 sub-block of an 8192 x 8192 array (skein::copy_rect / Array::set / get on
// the view: cuMemcpy2DAsync) against a contiguous copy of the same bytes, device -> device and
// host <-> device (pinned); and transfers from and to host memory the program allocated and
// registered with HostBuffer::register_memory against HostBuffer::allocate's page-locked memory,
// for each size. Ratio = the first's GB/s / the baseline's (targets: >= 0.90 and >= 0.95).
//
// GB/s is bytes transferred / time with GB = 1e9 bytes; for the copy on one device the memory
// traffic is twice that (every byte is read and written).

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <skein_cli/cli.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <skein/cuda.hpp>
#include <skein/skein.hpp>
#include <stdexcept>
#include <string>
#include <tuple>
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

struct Settings {
  std::vector<std::size_t> sizes_mib{64, 1024};
  int iterations = 50;
  int warmup = 5;
  std::string json_path;
};

struct Result {
  std::string op;
  std::size_t bytes = 0;
  double skein_ms = 0;
  double cudart_ms = 0;
};

// Skein against Skein: an operation and the baseline it must keep up with (same bytes).
struct Comparison {
  std::string op;
  std::string baseline;
  std::size_t bytes = 0;
  double ms = 0;
  double baseline_ms = 0;
};

double gb_per_s(std::size_t bytes, double ms) { return ms > 0 ? bytes / (ms * 1e-3) / 1e9 : 0; }

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Milliseconds of one `transfer` on `device_idx` of the queue, timed with Skein's events.
double time_skein(const Settings& s, const skein::Queue& queue, std::size_t device_idx,
                  const std::function<void()>& transfer) {
  for (int i = 0; i < s.warmup; ++i) transfer();
  queue.synchronize();
  std::vector<double> ms;
  for (int i = 0; i < s.iterations; ++i) {
    const skein::Event start = queue.record_event(device_idx);
    transfer();
    const skein::Event end = queue.record_event(device_idx);
    end.wait();
    ms.push_back(end.time_since(start));
  }
  return median(ms);
}

// Skein's transfer and the CUDA runtime's, one after the other in every iteration (after the
// warm-up of both), so that neither is measured in a moment the other is not (a link still
// waking up, another load on the machine): the medians of each.
std::pair<double, double> time_alternating(const Settings& s, const skein::Queue& queue,
                                           std::size_t device_idx,
                                           const std::function<void()>& skein_transfer, int device,
                                           cudaStream_t stream,
                                           const std::function<void()>& cudart_transfer) {
  for (int i = 0; i < s.warmup; ++i) skein_transfer();
  queue.synchronize();
  BENCH_CUDART(cudaSetDevice(device));
  for (int i = 0; i < s.warmup; ++i) cudart_transfer();
  BENCH_CUDART(cudaStreamSynchronize(stream));
  cudaEvent_t start = nullptr;
  cudaEvent_t end = nullptr;
  BENCH_CUDART(cudaEventCreate(&start));
  BENCH_CUDART(cudaEventCreate(&end));
  std::vector<double> skein_ms, cudart_ms;
  for (int i = 0; i < s.iterations; ++i) {
    const skein::Event a = queue.record_event(device_idx);
    skein_transfer();
    const skein::Event b = queue.record_event(device_idx);
    b.wait();
    skein_ms.push_back(b.time_since(a));
    BENCH_CUDART(cudaSetDevice(device));
    BENCH_CUDART(cudaEventRecord(start, stream));
    cudart_transfer();
    BENCH_CUDART(cudaEventRecord(end, stream));
    BENCH_CUDART(cudaEventSynchronize(end));
    float elapsed = 0;
    BENCH_CUDART(cudaEventElapsedTime(&elapsed, start, end));
    cudart_ms.push_back(elapsed);
  }
  BENCH_CUDART(cudaEventDestroy(start));
  BENCH_CUDART(cudaEventDestroy(end));
  return {median(skein_ms), median(cudart_ms)};
}

// The CUDA runtime's side: memory and streams that are freed at the end of a size.
struct CudartSide {
  int devices = 1;
  void* host = nullptr;
  void* src0 = nullptr;  // device 0
  void* dst0 = nullptr;  // device 0
  void* dst1 = nullptr;  // device 1, when there are two
  cudaStream_t stream0 = nullptr;
  cudaStream_t stream1 = nullptr;

  CudartSide(std::size_t bytes, int devices_) : devices(devices_) {
    BENCH_CUDART(cudaSetDevice(0));
    BENCH_CUDART(cudaMallocHost(&host, bytes));
    std::memset(host, 0x5a, bytes);
    BENCH_CUDART(cudaMalloc(&src0, bytes));
    BENCH_CUDART(cudaMalloc(&dst0, bytes));
    BENCH_CUDART(cudaStreamCreateWithFlags(&stream0, cudaStreamNonBlocking));
    if (devices > 1) {
      BENCH_CUDART(cudaSetDevice(1));
      BENCH_CUDART(cudaMalloc(&dst1, bytes));
      BENCH_CUDART(cudaStreamCreateWithFlags(&stream1, cudaStreamNonBlocking));
    }
  }
  ~CudartSide() {
    cudaSetDevice(0);
    cudaDeviceSynchronize();
    if (devices > 1) {
      cudaSetDevice(1);
      cudaDeviceSynchronize();
      cudaFree(dst1);
      cudaStreamDestroy(stream1);
      cudaSetDevice(0);
    }
    cudaFree(src0);
    cudaFree(dst0);
    cudaFreeHost(host);
    cudaStreamDestroy(stream0);
  }
  CudartSide(const CudartSide&) = delete;
  CudartSide& operator=(const CudartSide&) = delete;
};

// Peer access in both directions, as an application using the runtime would set it up. Skein's
// context has enabled it already (they share the primary contexts), which the runtime reports as
// cudaErrorPeerAccessAlreadyEnabled.
void enable_cudart_peer_access(int a, int b) {
  int possible = 0;
  BENCH_CUDART(cudaDeviceCanAccessPeer(&possible, a, b));
  if (!possible) return;
  BENCH_CUDART(cudaSetDevice(a));
  const cudaError_t error = cudaDeviceEnablePeerAccess(b, 0);
  if (error == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();  // the runtime keeps the error sticky until read
  } else {
    BENCH_CUDART(error);
  }
}

// Skein would not notice a transfer that moved the wrong bytes; a cheap look at the ends of the
// copied data does.
void check_bytes(const skein::Queue& queue, const skein::Buffer& buffer, unsigned char expected,
                 const std::string& what) {
  const std::size_t n = std::min<std::size_t>(buffer.size(), 4096);
  std::vector<std::byte> head(n);
  std::vector<std::byte> tail(n);
  buffer.get_sub_region(0, n).get(queue, std::span<std::byte>(head));
  buffer.get_sub_region(buffer.size() - n, n).get(queue, std::span<std::byte>(tail));
  for (std::size_t i = 0; i < n; ++i) {
    if (head[i] != std::byte{expected} || tail[i] != std::byte{expected}) {
      throw std::runtime_error(
          fmt::format("{}: wrong data after the transfer (byte {} of the head or tail)", what, i));
    }
  }
}

// Host memory of the program's own (page-aligned, as an application's large arrays are), freed
// at the end of a size.
struct AlignedFree {
  void operator()(std::byte* p) const { std::free(p); }
};
std::unique_ptr<std::byte[], AlignedFree> host_memory(std::size_t bytes) {
  const std::size_t rounded = (bytes + 4095) / 4096 * 4096;
  auto* p = static_cast<std::byte*>(std::aligned_alloc(4096, rounded));
  if (p == nullptr) throw std::runtime_error(fmt::format("cannot allocate {} bytes", bytes));
  return std::unique_ptr<std::byte[], AlignedFree>(p);
}

// Registered host memory (HostBuffer::register_memory) against Skein's page-locked allocation,
// both directions, `bytes` each; `host` and `device` are the allocation and buffer of the size.
void compare_registered(const Settings& s, const skein::Context& context, const skein::Queue& queue,
                        const skein::HostBuffer& host, const skein::Buffer& device,
                        std::vector<Comparison>& out) {
  const std::size_t bytes = device.size();
  auto memory = host_memory(bytes);
  std::memset(memory.get(), 0x3c, bytes);
  const skein::HostBuffer registered =
      skein::HostBuffer::register_memory(context, memory.get(), bytes);
  std::memset(host.data(), 0x5a, bytes);

  Comparison h2d{"host->device (registered)", "host->device (allocated)", bytes};
  h2d.ms = time_skein(s, queue, 0, [&] {
    device.set(queue, std::span<const std::byte>(registered.bytes()), skein::Sync::async);
  });
  check_bytes(queue, device, 0x3c, "host->device (registered)");
  h2d.baseline_ms = time_skein(s, queue, 0, [&] {
    device.set(queue, std::span<const std::byte>(host.bytes()), skein::Sync::async);
  });
  check_bytes(queue, device, 0x5a, "host->device (allocated)");
  out.push_back(h2d);

  Comparison d2h{"device->host (registered)", "device->host (allocated)", bytes};
  d2h.ms =
      time_skein(s, queue, 0, [&] { device.get(queue, registered.bytes(), skein::Sync::async); });
  queue.synchronize();
  if (registered.data()[0] != std::byte{0x5a} || registered.data()[bytes - 1] != std::byte{0x5a}) {
    throw std::runtime_error("device->host (registered): wrong data after the transfer");
  }
  d2h.baseline_ms =
      time_skein(s, queue, 0, [&] { device.get(queue, host.bytes(), skein::Sync::async); });
  out.push_back(d2h);
  queue.synchronize();
}

// A 4096 x 4096 float32 block at (512, 512) of 8192 x 8192 arrays: rows of 16 KiB, 32 KiB apart.
std::vector<Comparison> compare_strided(const Settings& s, const skein::Context& context,
                                        const skein::Queue& queue) {
  constexpr std::size_t n = 8192;
  constexpr std::size_t block = 4096;
  constexpr std::size_t corner = 512 * n + 512;  // element offset of the block
  const std::size_t bytes = block * block * sizeof(float);
  const skein::Shape block_shape{block, block};
  const skein::Strides block_strides{n * sizeof(float), sizeof(float)};

  // The source's element k (flat index) holds k % 1000003, exact in float32.
  auto big_src = skein::Array::empty(queue, {n, n}, skein::Dtype::float32);
  {
    std::vector<float> values(n * n);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 1000003);
    big_src.set(values);
  }
  auto big_dst = skein::Array::zeros(queue, {n, n}, skein::Dtype::float32);
  const skein::Array src_block = big_src.view(corner, block_shape, block_strides);
  const skein::Array dst_block = big_dst.view(corner, block_shape, block_strides);
  const skein::Buffer contiguous_src = skein::Buffer::allocate(context, 0, bytes);
  const skein::Buffer contiguous_dst = skein::Buffer::allocate(context, 0, bytes);
  const skein::HostBuffer pinned = skein::HostBuffer::allocate(context, bytes);
  std::memset(pinned.data(), 0, bytes);

  // The block's rows 0 and block - 1 as the host expects them.
  auto check_block = [&](const skein::Array& view, const char* what) {
    for (const std::size_t r : {std::size_t{0}, block - 1}) {
      const auto row = view.view(r * n, {1, block}, block_strides).get<float>();
      for (std::size_t j = 0; j < block; ++j) {
        const auto expected = static_cast<float>((corner + r * n + j) % 1000003);
        if (row[j] != expected) {
          throw std::runtime_error(
              fmt::format("{}: wrong value at ({}, {}) of the block: {} "
                          "instead of {}",
                          what, r, j, row[j], expected));
        }
      }
    }
  };

  std::vector<Comparison> out;
  Comparison d2d{"2-D block device->device", "contiguous device->device", bytes};
  d2d.ms = time_skein(s, queue, 0,
                      [&] { skein::copy_rect(queue, dst_block, src_block, skein::Sync::async); });
  check_block(dst_block, "2-D block device->device");
  d2d.baseline_ms = time_skein(
      s, queue, 0, [&] { contiguous_dst.set(queue, contiguous_src, skein::Sync::async); });
  out.push_back(d2d);

  Comparison d2h{"2-D block device->host", "contiguous device->host", bytes};
  d2h.ms = time_skein(s, queue, 0, [&] { src_block.get(pinned.bytes(), skein::Sync::async); });
  queue.synchronize();
  {
    const float* p = reinterpret_cast<const float*>(pinned.data());
    const auto expected = static_cast<float>((corner + (block - 1) * n + 7) % 1000003);
    if (p[(block - 1) * block + 7] != expected) {
      throw std::runtime_error("2-D block device->host: wrong data after the transfer");
    }
  }
  d2h.baseline_ms = time_skein(
      s, queue, 0, [&] { contiguous_src.get(queue, pinned.bytes(), skein::Sync::async); });
  out.push_back(d2h);

  // Pinned host data of the block's values, into a cleared destination block.
  src_block.get(pinned.bytes());
  big_dst.fill_zero();
  Comparison h2d{"2-D block host->device", "contiguous host->device", bytes};
  h2d.ms = time_skein(s, queue, 0, [&] {
    dst_block.set(std::span<const std::byte>(pinned.bytes()), skein::Sync::async);
  });
  check_block(dst_block, "2-D block host->device");
  h2d.baseline_ms = time_skein(s, queue, 0, [&] {
    contiguous_dst.set(queue, std::span<const std::byte>(pinned.bytes()), skein::Sync::async);
  });
  out.push_back(h2d);
  queue.synchronize();
  return out;
}

std::vector<Result> run(const Settings& s, const skein::Api& api, std::size_t devices_num,
                        std::vector<Comparison>& comparisons) {
  const std::vector<skein::Device> devices = skein::select_devices(api, devices_num);
  const skein::Context context = skein::Context::from_devices(std::span(devices));
  const skein::Queue queue(context);
  const bool two = devices_num > 1;
  if (two) {
    enable_cudart_peer_access(0, 1);
    enable_cudart_peer_access(1, 0);
  }

  std::vector<Result> results;
  for (const std::size_t mib : s.sizes_mib) {
    const std::size_t bytes = mib << 20;

    // Skein's side.
    const skein::HostBuffer host = skein::HostBuffer::allocate(context, bytes);
    std::memset(host.data(), 0x5a, bytes);
    const std::span<const std::byte> host_in(host.data(), bytes);
    const skein::Buffer src0 = skein::Buffer::allocate(context, 0, bytes);
    const skein::Buffer dst0 = skein::Buffer::allocate(context, 0, bytes);
    std::optional<skein::Buffer> dst1;
    if (two) dst1 = skein::Buffer::allocate(context, 1, bytes);

    CudartSide rt(bytes, two ? 2 : 1);

    Result h2d{"host->device (pinned)", bytes};
    std::tie(h2d.skein_ms, h2d.cudart_ms) = time_alternating(
        s, queue, 0, [&] { src0.set(queue, host_in, skein::Sync::async); }, 0, rt.stream0,
        [&] {
          BENCH_CUDART(
              cudaMemcpyAsync(rt.src0, rt.host, bytes, cudaMemcpyHostToDevice, rt.stream0));
        });
    check_bytes(queue, src0, 0x5a, "host->device");
    results.push_back(h2d);

    Result d2h{"device->host (pinned)", bytes};
    std::tie(d2h.skein_ms, d2h.cudart_ms) = time_alternating(
        s, queue, 0, [&] { src0.get(queue, host.bytes(), skein::Sync::async); }, 0, rt.stream0,
        [&] {
          BENCH_CUDART(
              cudaMemcpyAsync(rt.host, rt.src0, bytes, cudaMemcpyDeviceToHost, rt.stream0));
        });
    results.push_back(d2h);

    if (two) {
      Result peer{"device 0->device 1", bytes};
      std::tie(peer.skein_ms, peer.cudart_ms) = time_alternating(
          s, queue, 1, [&] { dst1->set(queue, src0, skein::Sync::async); }, 1, rt.stream1,
          [&] { BENCH_CUDART(cudaMemcpyPeerAsync(rt.dst1, 1, rt.src0, 0, bytes, rt.stream1)); });
      check_bytes(queue, *dst1, 0x5a, "device 0->device 1");
      results.push_back(peer);
    }

    Result d2d{"device 0->device 0", bytes};
    std::tie(d2d.skein_ms, d2d.cudart_ms) = time_alternating(
        s, queue, 0, [&] { dst0.set(queue, src0, skein::Sync::async); }, 0, rt.stream0,
        [&] {
          BENCH_CUDART(
              cudaMemcpyAsync(rt.dst0, rt.src0, bytes, cudaMemcpyDeviceToDevice, rt.stream0));
        });
    check_bytes(queue, dst0, 0x5a, "device 0->device 0");
    results.push_back(d2d);
    queue.synchronize();

    compare_registered(s, context, queue, host, src0, comparisons);
  }
  for (Comparison& c : compare_strided(s, context, queue)) comparisons.push_back(std::move(c));
  return results;
}

void print_table(const std::vector<Result>& results) {
  fmt::print("{:<24} {:>10} {:>12} {:>12} {:>8}\n", "op", "size", "skein GB/s", "cudart GB/s",
             "ratio");
  for (const Result& r : results) {
    const double skein = gb_per_s(r.bytes, r.skein_ms);
    const double cudart = gb_per_s(r.bytes, r.cudart_ms);
    const double ratio = cudart > 0 ? skein / cudart : 0;
    fmt::print("{:<24} {:>10} {:>12.1f} {:>12.1f} {:>8.3f}\n", r.op,
               fmt::format("{} MiB", r.bytes >> 20), skein, cudart, ratio);
  }
}

void print_comparisons(const std::vector<Comparison>& comparisons) {
  fmt::print("{:<27} {:>10} {:>10} {:>14} {:>8}  {}\n", "op", "size", "GB/s", "baseline GB/s",
             "ratio", "baseline");
  for (const Comparison& c : comparisons) {
    const double gbps = gb_per_s(c.bytes, c.ms);
    const double baseline = gb_per_s(c.bytes, c.baseline_ms);
    fmt::print("{:<27} {:>10} {:>10.1f} {:>14.1f} {:>8.3f}  {}\n", c.op,
               fmt::format("{} MiB", c.bytes >> 20), gbps, baseline,
               baseline > 0 ? gbps / baseline : 0, c.baseline);
  }
}

void write_json(const std::string& path, const nlohmann::json& doc) {
  std::ofstream out(path);
  out << doc.dump(2) << "\n";
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  skein::cli::Parser app{
      "Skein's CUDA transfers against the CUDA runtime's (GB/s, median of iterations)"};
  app.add_option("--sizes-mib", s.sizes_mib, "Transfer sizes in MiB").delimiter(',');
  app.add_option("--iterations", s.iterations, "Timed iterations per measurement").positive();
  app.add_option("--warmup", s.warmup, "Untimed iterations before them").non_negative();
  app.add_option("--json", s.json_path, "Also write the results to this JSON file");
  if (auto status = app.parse(argc, argv)) return *status;

  nlohmann::json doc;
  try {
    std::optional<skein::ApiStatus> cuda;
    for (const skein::ApiStatus& status : skein::Api::status()) {
      if (status.id == skein::ApiId::cuda) cuda = status;
    }
    if (!cuda || !cuda->available) {
      const std::string reason = cuda ? cuda->reason : "unknown";
      fmt::print("CUDA is unavailable: {}\nNothing to measure.\n", reason);
      if (!s.json_path.empty()) {
        write_json(s.json_path, {{"cuda_available", false}, {"reason", reason}});
      }
      return 0;
    }

    const skein::Api api = skein::Api::from_id(skein::ApiId::cuda);
    const std::vector<skein::Device> all = skein::Platform::from_index(api, 0).devices();
    const std::size_t devices_num = std::min<std::size_t>(all.size(), 2);
    fmt::print("{}; {} device(s) used of {}: {}{}\n", cuda->version, devices_num, all.size(),
               all[0].name(), devices_num > 1 ? ", " + all[1].name() : std::string());
    fmt::print("{} iterations after {} warm-up, median; GB = 1e9 bytes\n\n", s.iterations,
               s.warmup);

    std::vector<Comparison> comparisons;
    const std::vector<Result> results = run(s, api, devices_num, comparisons);
    print_table(results);
    if (devices_num < 2) fmt::print("\n(one device: no device->device between two GPUs)\n");
    fmt::print(
        "\nSkein against Skein: 2-D strided block copies (4096 x 4096 float32 of "
        "8192 x 8192) and registered host memory, each against its baseline\n\n");
    print_comparisons(comparisons);

    if (!s.json_path.empty()) {
      doc["cuda_available"] = true;
      doc["driver"] = cuda->version;
      doc["devices"] = nlohmann::json::array();
      for (std::size_t i = 0; i < devices_num; ++i) doc["devices"].push_back(all[i].name());
      doc["iterations"] = s.iterations;
      doc["warmup"] = s.warmup;
      doc["results"] = nlohmann::json::array();
      for (const Result& r : results) {
        doc["results"].push_back(
            {{"op", r.op},
             {"bytes", r.bytes},
             {"skein_ms", r.skein_ms},
             {"cudart_ms", r.cudart_ms},
             {"skein_gbps", gb_per_s(r.bytes, r.skein_ms)},
             {"cudart_gbps", gb_per_s(r.bytes, r.cudart_ms)},
             {"ratio", r.cudart_ms > 0 && r.skein_ms > 0 ? r.cudart_ms / r.skein_ms : 0.0}});
      }
      doc["comparisons"] = nlohmann::json::array();
      for (const Comparison& c : comparisons) {
        doc["comparisons"].push_back(
            {{"op", c.op},
             {"baseline", c.baseline},
             {"bytes", c.bytes},
             {"ms", c.ms},
             {"baseline_ms", c.baseline_ms},
             {"gbps", gb_per_s(c.bytes, c.ms)},
             {"baseline_gbps", gb_per_s(c.bytes, c.baseline_ms)},
             {"ratio", c.ms > 0 && c.baseline_ms > 0 ? c.baseline_ms / c.ms : 0.0}});
      }
      write_json(s.json_path, doc);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "skein-bench-copy: %s\n", e.what());
    return 1;
  }
  return 0;
}

// SPDX-License-Identifier: BSD-3-Clause
// The examples of the migration guide docs/seeds.md, one region per group of the seeds' APIs
// (between `// [name]` and `// [end name]`, quoted there). Built by the `docs-examples` target and
// run by docs/check-examples.sh: it prints "ok" when every region computed what it should.
#include <skein/framework.hpp>

#include <cmath>
#include <complex>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

namespace {

bool discovery_example(skein::Context& out) {
  // [discovery]
  // grunnur: api = API.from_api_id(...); Context.from_criteria(api, devices_num=1)
  const auto apis = skein::Api::all_available();  // CUDA first, then OpenCL
  if (apis.empty()) return false;
  for (const auto& platform : skein::Platform::all(apis.front())) {
    for (const auto& device : skein::Device::all(platform)) {
      std::cout << device.description() << ": " << device.params().compute_units
                << " compute units, warp size " << device.params().warp_size << "\n";
    }
  }
  const auto devices = skein::select_devices(apis.front(), 1, {.device_include_masks = {".*"}});
  const auto ctx = skein::Context::from_devices(devices.front());
  // [end discovery]
  out = ctx;
  return true;
}

bool arrays_example(const skein::Queue& queue) {
  // [arrays]
  // pygpu: a = pygpu.gpuarray.array(host, context=ctx); b = a.T.copy(order='C'); b.read(out)
  std::vector<float> host(6);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i);
  const auto a = skein::Array::from_host(queue, host, {2, 3});  // C order, on device 0
  const auto b = skein::copy(queue, a.transpose());             // (3, 2), C order
  const std::vector<float> out = b.get<float>();                // waits, then copies to the host
  const auto flat = b.reshape({6});                             // a view: b is contiguous
  // grunnur: Buffer.allocate(context, 24); buf.set(queue, host); buf.get(queue, dest)
  const auto buf = skein::Buffer::allocate(queue.context(), 0, host.size() * sizeof(float));
  buf.set(queue, std::span<const float>(host));
  std::vector<float> back(host.size());
  buf.get(queue, std::span<float>(back));
  // [end arrays]
  return out == std::vector<float>{0, 3, 1, 4, 2, 5} && flat.size() == 6 && back == host;
}

bool kernels_example(const skein::Queue& queue) {
  // [kernels]
  // PyCUDA: mod = SourceModule(src); f = mod.get_function("twice"); f.prepare("Pi");
  //         f.prepared_call(grid, block, x, n)
  const char* source = R"(
    KERNEL void twice(GLOBAL_MEM float* x, int n) {
      const int i = (int)get_global_id(0);
      if (i < n) x[i] = 2.0f * x[i];
    })";
  const skein::Program program(queue.context(), source);
  const auto x = skein::Array::from_host(queue, std::vector<float>(100, 1.5f));
  const auto twice = program.kernel("twice").prepare(queue, 128, 64);  // global, local sizes
  twice(x, std::int32_t{100});
  // grunnur: StaticKernel(queue, src, "twice", 100): a global size that is not a multiple of
  // the local size, on a virtual grid
  const skein::StaticKernel fixed(queue, R"(
    KERNEL void twice(GLOBAL_MEM float* x) {
      ${static_begin}
      x[${static_global_id}(0)] *= 2.0f;
    })",
                                  "twice", 100);
  fixed(x);
  // [end kernels]
  const auto out = x.get<float>();
  bool ok = true;
  for (float v : out) ok = ok && v == 6.0f;
  return ok;
}

bool templates_example(const skein::Queue& queue) {
  // [templates]
  // grunnur: Program(ctx, template, render_globals=dict(mul=functions.mul(c64, c64), n=4))
  const skein::Module mul =
      skein::functions::mul({skein::Dtype::complex64, skein::Dtype::complex64});
  const auto program = skein::Program::from_template(queue.context(), R"(
    KERNEL void square(GLOBAL_MEM skein_complex64* z) {
      const int i = (int)get_global_id(0);
    %for k in range(2):
      z[i] = ${mul}(z[i], z[i]);  // pass ${k}
    %endfor
    })",
                                                     {{"mul", mul}});
  const std::vector<std::complex<float>> host(4, {0.0f, 1.0f});  // i
  const auto z = skein::Array::from_host(queue, host);
  program.kernel("square").prepare(queue, 4, 4)(z);  // i^4 = 1
  // grunnur.dtypes: ctype(dtype), ctype_struct(dtype), result_type(*dtypes)
  const skein::StructType point{{"x", skein::Dtype::float32}, {"id", skein::Dtype::int64}};
  const std::string c = skein::ctype_struct(point, "point");
  const auto promoted = skein::result_type({skein::Dtype::int32, skein::Dtype::float32});
  // [end templates]
  const auto out = z.get<std::complex<float>>();
  return out[0] == std::complex<float>(1.0f, 0.0f) && point.itemsize() == 16 &&
         c.find("point") != std::string::npos && promoted == skein::Dtype::float64 &&
         skein::ctype(skein::Dtype::int64) == "int64_t";
}

bool elementwise_example(const skein::Queue& queue) {
  // [elementwise]
  // pygpu: elemwise2(a, '+', b); ReductionKernel(ctx, dtype_out, neutral='0', reduce_expr='a+b',
  //        redux=..., map_expr='x*x')
  const auto a = skein::Array::from_host(queue, std::vector<double>{1, 2, 3, 4});
  const auto b = skein::Array::from_host(queue, std::vector<double>{10, 20, 30, 40});
  const auto sum_ab = skein::binary(queue, skein::BinaryOp::add, a, b);
  const skein::ElementwiseKernel axpy("T s, T x, T y", "T z", "z = s * x + y", {.name = "axpy"});
  const auto z = axpy(queue, {2.0, a, b})[0];
  const skein::ReductionKernel sumsq("T x", "T y", "x * x", "a + b", "0", {.name = "sumsq"});
  const double norm2 = skein::reduction_value<double>(sumsq(queue, {a}));  // 30
  // [end elementwise]
  return sum_ab.get<double>() == std::vector<double>{11, 22, 33, 44} &&
         z.get<double>() == std::vector<double>{12, 24, 36, 48} && norm2 == 30.0;
}

bool memory_example(const skein::Queue& queue) {
  // [memory]
  // PyCUDA: mem_get_info(); pagelocked_empty(n, float32); DeviceMemoryPool().allocate(bytes)
  const skein::Context& ctx = queue.context();
  const skein::MemoryInfo info = skein::memory_info(ctx, 0);
  const auto pinned = skein::HostBuffer::allocate(ctx, 1024 * sizeof(float));
  const skein::DeviceMemoryPool pool(ctx);
  {
    const auto block = pool.allocate(0, 1000);  // rounded up to its bin
  }                                             // back to the pool, held for the next request
  const auto a = skein::Array::empty(queue, {256}, skein::Dtype::float32, 0, pool.allocator());
  // grunnur: ZeroOffsetManager(queue).allocator(dependencies): temporaries that share memory
  const skein::ZeroOffsetManager manager(queue);
  const auto t1 = skein::Array::empty(queue, {256}, skein::Dtype::float32, 0, manager.allocator());
  const auto t2 = skein::Array::empty(queue, {256}, skein::Dtype::float32, 0,
                                      manager.allocator({t1}));  // used with t1: apart
  // [end memory]
  return info.total > 0 && pinned.size() == 1024 * sizeof(float) && pool.active_blocks() == 1 &&
         a.size() == 256 && manager.statistics().real_num == 2 && t2.size() == 256;
}

bool events_example(const skein::Queue& queue) {
  // [events]
  // PyCUDA: start = Event(); start.record(stream); ...; end.record(stream); end.synchronize();
  //         end.time_since(start); stream2.wait_for_event(end)
  const auto x = skein::Array::zeros(queue, {1 << 16}, skein::Dtype::float32);
  const skein::Event start = queue.record_event(0);
  skein::fill(queue, x, 1.0f);
  const skein::Event end = queue.record_event(0);
  end.wait();
  const double ms = end.time_since(start);
  const skein::Queue other(queue.context(), skein::QueuePriority::high());
  other.wait_for(end);  // other's later work on every device waits for `end`
  // [end events]
  return ms >= 0.0 && end.query();
}

bool operations_example(const skein::Queue& queue) {
  // [operations]
  // pygpu.operations: concatenate, vstack, split; pygpu.blas: gemm(alpha, A, B, beta, C)
  const auto a = skein::Array::from_host(queue, std::vector<float>{1, 2, 3, 4}, {2, 2});
  const auto b = skein::Array::from_host(queue, std::vector<float>{5, 6, 7, 8}, {2, 2});
  const auto ab = skein::concatenate(queue, {a, b}, 1);             // (2, 4)
  const auto rows = skein::vstack(queue, {a, b});                   // (4, 2)
  const std::vector<skein::Array> halves = skein::split(ab, 2, 1);  // two (2, 2) views
  bool gemm_ok = true;
  if (skein::blas::status(queue.context().api().id()).available) {
    const auto c = skein::blas::gemm(queue, 1.0, a, b);  // a @ b, as NumPy
    gemm_ok = c.get<float>() == std::vector<float>{19, 22, 43, 50};
  }
  // [end operations]
  return ab.shape() == skein::Shape{2, 4} && rows.shape() == skein::Shape{4, 2} &&
         skein::copy(queue, halves[1]).get<float>() == b.get<float>() && gemm_ok;
}

bool errors_example(const skein::Queue& queue) {
  // [errors]
  // PyCUDA: except cuda.CompileError as e: print(e.stderr)
  try {
    const skein::Program broken(queue.context(), "KERNEL void k() { no_such_function(); }");
    return false;
  } catch (const skein::CompileError& e) {
    std::cout << "the compiler said:\n" << e.log() << "\n";  // also e.source(), e.options()
  }
  try {
    (void)skein::Buffer::allocate(queue.context(), 99, 16);  // no device 99
    return false;
  } catch (const skein::LogicError& e) {
    std::cout << e.what() << "\n";  // what was wrong, where, and what to do
  }
  // [end errors]
  return true;
}

bool driver_example(const skein::Queue& queue) {
  // [driver]
  // PyCUDA: dev.compute_capability(), Context.set_limit(limit.STACK_SIZE, n),
  //         Context.set_cache_config(func_cache.PREFER_L1), Device.can_access_peer(other)
  const skein::Context& ctx = queue.context();
  const skein::DeviceParameters& params = ctx.device(0).params();
  std::cout << params.name << ": " << params.global_mem_size << " bytes\n";
  if (ctx.api().id() == skein::ApiId::cuda) {  // CUDA only; OpenCL raises LogicError saying so
    skein::set_limit(ctx, 0, skein::ContextLimit::stack_size, 4096);
    skein::set_cache_config(ctx, 0, skein::CacheConfig::prefer_l1);
    std::cout << "compute capability " << params.compute_capability->first << "\n";
  }
  const bool peers = ctx.num_devices() < 2 || skein::can_access_peer(ctx, 0, 1);
  const skein::QueuePriorityRange range = skein::queue_priority_range(ctx, 0);
  {
    const skein::ProfileRange range_name("seeds example");  // an NVTX range under Nsight
    skein::start_profiler(ctx);
    skein::stop_profiler(ctx);
  }
  // [end driver]
  return peers && range.greatest <= range.least;
}

bool transfers_example(const skein::Queue& queue) {
  // [transfers]
  // PyCUDA: memset_d32(dest, value, count); memcpy_dtod(dest, src, size);
  //         Memcpy2D with pitches (a column block of a matrix into a dense array)
  const skein::Context& ctx = queue.context();
  const auto src = skein::Buffer::allocate(ctx, 0, 64 * sizeof(std::int32_t));
  const skein::Array ints(queue, src, {64}, skein::Dtype::int32);  // an array over the buffer
  skein::fill(queue, ints, 7);                                     // memset_d32
  const auto dst = skein::Buffer::allocate(ctx, ctx.num_devices() - 1, src.size());
  dst.set(queue, src);  // device to device (or peer: the context's last device)
  // An 8 x 8 matrix; copy its columns 2..5 of rows 1..6 (a 6 x 4 window) into a dense array.
  const auto matrix = skein::Array::from_host(queue, std::vector<double>(64, 1.5), {8, 8});
  const auto window = matrix.view(1 * 8 + 2, {6, 4}, {8 * sizeof(double), sizeof(double)});
  const auto dense = skein::Array::empty(queue, {6, 4}, skein::Dtype::float64);
  skein::copy_rect(queue, dense, window);  // one cuMemcpy2D / clEnqueueCopyBufferRect
  std::vector<std::int32_t> back(64);
  dst.get(queue, std::span<std::int32_t>(back));
  // [end transfers]
  bool ok = dense.get<double>() == std::vector<double>(24, 1.5);
  for (auto v : back) ok = ok && v == 7;
  return ok;
}

bool occupancy_example(const skein::Queue& queue) {
  // [occupancy]
  // pycuda.tools: OccupancyRecord(DeviceData(dev), threads=256, registers=32).occupancy
  const skein::Device& device = queue.context().device(0);
  if (device.platform().api().id() != skein::ApiId::cuda) {
    return true;  // DeviceData raises LogicError for a device that is not a CUDA device
  }
  const skein::DeviceData data(device);
  const skein::OccupancyRecord record(data, 256, 0, 32);
  std::cout << "occupancy " << record.occupancy << ", limited by " << skein::name(record.limited_by)
            << "\n";
  // [end occupancy]
  return record.occupancy > 0.0;
}

}  // namespace

int main() try {
  skein::Context ctx = [] {
    const auto apis = skein::Api::all_available();
    if (apis.empty()) throw skein::RuntimeError("no GPGPU API here; run skein-info to see why");
    return skein::Context::from_criteria(apis.front());
  }();
  if (!discovery_example(ctx)) return 1;
  const skein::Queue queue(ctx);
  const bool ok = arrays_example(queue) && kernels_example(queue) && templates_example(queue) &&
                  elementwise_example(queue) && memory_example(queue) && events_example(queue) &&
                  operations_example(queue) && errors_example(queue) && driver_example(queue) &&
                  transfers_example(queue) && occupancy_example(queue);
  std::cout << (ok ? "ok" : "FAILED") << "\n";
  return ok ? 0 : 1;
} catch (const skein::Error& e) {
  std::cerr << e.what() << "\n";
  return 1;
}

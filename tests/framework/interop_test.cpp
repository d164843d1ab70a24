// SPDX-License-Identifier: BSD-3-Clause
// Interop with the application's own backend objects: contexts made from them, with and without
// ownership, and the native objects behind Skein's.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>
#include <skein/skein.hpp>
#if SKEIN_HAS_DLPACK
#include <skein/dlpack.hpp>
#endif

#include "backends.hpp"
#include "checks.hpp"

#if SKEIN_HAS_OPENCL
#include <skein/opencl.hpp>
#endif
#if SKEIN_HAS_CUDA
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <skein/cuda.hpp>
#endif

namespace skein::test {
namespace {
namespace interop_test {

class Interop : public BackendTest {};

#if SKEIN_HAS_OPENCL
cl_device_id raw_device(const Device& device) { return opencl::native_device(device); }

cl_uint reference_count(cl_context ctx) {
  cl_uint count = 0;
  EXPECT_EQ(clGetContextInfo(ctx, CL_CONTEXT_REFERENCE_COUNT, sizeof(count), &count, nullptr),
            CL_SUCCESS);
  return count;
}

void opencl_interop(const std::vector<Device>& devices) {
  const cl_device_id dev = raw_device(devices.front());
  cl_int err = CL_SUCCESS;
  cl_context raw = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err);
  ASSERT_EQ(err, CL_SUCCESS);
  // Reference counts are checked while no queue or buffer exists: drivers may release those
  // (and their references to the context) later, asynchronously.
  {
    // Without ownership: Skein holds its own reference and gives it back.
    auto ctx = opencl::context_from_backend_context(raw, false);
    EXPECT_EQ(opencl::native_context(ctx), raw);
    EXPECT_EQ(reference_count(raw), 2u);
    ASSERT_EQ(ctx.num_devices(), 1u);
    EXPECT_EQ(ctx.devices().front(), devices.front());
  }
  EXPECT_EQ(reference_count(raw), 1u);
  {
    // With ownership: Skein releases the application's reference.
    ASSERT_EQ(clRetainContext(raw), CL_SUCCESS);
    auto ctx = opencl::context_from_backend_context(raw, true);
    EXPECT_EQ(reference_count(raw), 2u);
  }
  EXPECT_EQ(reference_count(raw), 1u);
  {
    auto ctx = opencl::context_from_backend_context(raw, false);
    Queue queue(ctx);
    const auto host = random_bytes(4099, 31);
    auto buf = Buffer::allocate(ctx, 0, host.size());
    buf.set(queue, std::span<const std::byte>(host));
    // Read it back with raw OpenCL through the native handles.
    std::vector<std::byte> back(host.size());
    ASSERT_EQ(clEnqueueReadBuffer(opencl::native_queue(queue, 0), opencl::native_mem(buf), CL_TRUE,
                                  0, back.size(), back.data(), 0, nullptr, nullptr),
              CL_SUCCESS);
    EXPECT_TRUE(back == host);
  }
  clReleaseContext(raw);

  std::vector<cl_device_id> ids;
  for (const auto& d : devices) ids.push_back(raw_device(d));
  auto ctx = opencl::context_from_backend_devices(ids);
  EXPECT_EQ(ctx.devices(), devices);
}
#endif

#if SKEIN_HAS_CUDA
void cuda_interop(const std::vector<Device>& devices) {
  std::vector<CUdevice> ids;
  for (const auto& d : devices) ids.push_back(cuda::native_device(d));
  auto ctx = cuda::context_from_backend_devices(ids);
  EXPECT_EQ(ctx.devices(), devices);
  Queue queue(ctx);
  const auto host = random_bytes(4099, 32);
  auto buf = Buffer::allocate(ctx, 0, host.size());
  buf.set(queue, std::span<const std::byte>(host));
  // The runtime API shares the primary context, so it reads Skein's memory directly.
  std::vector<std::byte> back(host.size());
  ASSERT_EQ(cudaSetDevice(static_cast<int>(ids.front())), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(back.data(), reinterpret_cast<void*>(cuda::native_pointer(buf)),
                            back.size(), cudaMemcpyDeviceToHost,
                            reinterpret_cast<cudaStream_t>(cuda::native_stream(queue, 0))),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(cuda::native_stream(queue, 0))),
            cudaSuccess);
  EXPECT_TRUE(back == host);
  auto sub = buf.get_sub_region(100, 10);
  EXPECT_EQ(cuda::native_pointer(sub), cuda::native_pointer(buf) + 100);
  EXPECT_NE(cuda::native_context(ctx, 0), nullptr);
}
#endif

#if SKEIN_HAS_CUDA
#define SKEIN_INTEROP_SYMBOL_(x) #x
// The driver's exported name: cuda.h maps most names to versioned ones (cuCtxDestroy_v2).
#define SKEIN_INTEROP_SYMBOL(x) SKEIN_INTEROP_SYMBOL_(x)

// The driver's context calls, looked up in libcuda directly: the tests link no driver (so that
// they start on machines without one), and the application's contexts must not come from Skein.
struct ContextCalls {
  // cuCtxCreate_v2 (flags, device): every driver keeps it, whatever cuda.h maps cuCtxCreate to.
  using CreateFn = CUresult (*)(CUcontext*, unsigned int, CUdevice);
  CreateFn create = nullptr;
  decltype(&::cuCtxDestroy) destroy = nullptr;
  decltype(&::cuCtxPushCurrent) push = nullptr;
  decltype(&::cuCtxPopCurrent) pop = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) retain_primary = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) release_primary = nullptr;
  decltype(&::cuMemAlloc) alloc = nullptr;
  decltype(&::cuMemFree) free = nullptr;
  decltype(&::cuMemcpyHtoD) to_device = nullptr;
  decltype(&::cuMemcpyDtoH) to_host = nullptr;

  bool found() const {
    return create && destroy && push && pop && retain_primary && release_primary && alloc && free &&
           to_device && to_host;
  }
};

ContextCalls load_context_calls() {
  ContextCalls f;
  // Already loaded by Skein; this takes another reference, kept for the process's life.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return f;
  f.create = reinterpret_cast<ContextCalls::CreateFn>(dlsym(lib, "cuCtxCreate_v2"));
#define SKEIN_INTEROP_RESOLVE(member, name) \
  f.member = reinterpret_cast<decltype(f.member)>(dlsym(lib, SKEIN_INTEROP_SYMBOL(name)))
  SKEIN_INTEROP_RESOLVE(destroy, cuCtxDestroy);
  SKEIN_INTEROP_RESOLVE(push, cuCtxPushCurrent);
  SKEIN_INTEROP_RESOLVE(pop, cuCtxPopCurrent);
  SKEIN_INTEROP_RESOLVE(retain_primary, cuDevicePrimaryCtxRetain);
  SKEIN_INTEROP_RESOLVE(release_primary, cuDevicePrimaryCtxRelease);
  SKEIN_INTEROP_RESOLVE(alloc, cuMemAlloc);
  SKEIN_INTEROP_RESOLVE(free, cuMemFree);
  SKEIN_INTEROP_RESOLVE(to_device, cuMemcpyHtoD);
  SKEIN_INTEROP_RESOLVE(to_host, cuMemcpyDtoH);
#undef SKEIN_INTEROP_RESOLVE
  return f;
}
#undef SKEIN_INTEROP_SYMBOL
#undef SKEIN_INTEROP_SYMBOL_

// A context of the application's own on each device (cuCtxCreate), none left current on this
// thread.
std::vector<CUcontext> create_contexts(const ContextCalls& f, const std::vector<Device>& devices) {
  std::vector<CUcontext> contexts;
  for (const Device& d : devices) {
    CUcontext created = nullptr, popped = nullptr;
    EXPECT_EQ(f.create(&created, 0, cuda::native_device(d)), CUDA_SUCCESS);
    EXPECT_EQ(f.pop(&popped), CUDA_SUCCESS);  // cuCtxCreate made it current
    EXPECT_EQ(popped, created);
    contexts.push_back(created);
  }
  return contexts;
}

// The application's own use of its context, by the driver alone: memory allocated, written, read
// back and freed.
void expect_usable(const ContextCalls& f, CUcontext context) {
  ASSERT_EQ(f.push(context), CUDA_SUCCESS);
  const std::vector<int> host = {1, 2, 3, 5, 8, 13};
  std::vector<int> back(host.size());
  CUdeviceptr p = 0;
  EXPECT_EQ(f.alloc(&p, host.size() * sizeof(int)), CUDA_SUCCESS);
  EXPECT_EQ(f.to_device(p, host.data(), host.size() * sizeof(int)), CUDA_SUCCESS);
  EXPECT_EQ(f.to_host(back.data(), p, host.size() * sizeof(int)), CUDA_SUCCESS);
  EXPECT_EQ(f.free(p), CUDA_SUCCESS);
  CUcontext popped = nullptr;
  EXPECT_EQ(f.pop(&popped), CUDA_SUCCESS);
  EXPECT_EQ(back, host);
}

// Skein's work on a context over the application's: on every device a kernel (y = 2 x + 1, exact
// in float) and a device copy of its result, against the host.
void expect_skein_works(const Context& ctx) {
  const Program program(ctx, R"(
KERNEL void affine(GLOBAL_MEM float* y, GLOBAL_MEM const float* x, int n)
{
    const int i = get_global_id(0);
    if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}
)");
  for (std::size_t d = 0; d < ctx.num_devices(); ++d) {
    SCOPED_TRACE(fmt::format("device {}", d));
    const Queue queue(ctx, {d});
    const std::size_t n = 4099;
    const auto x = random_reals<float>(n, 61 + static_cast<std::uint32_t>(d));
    const auto dx = Array::from_host(queue, x, {}, d);
    const auto dy = Array::empty(queue, {n}, Dtype::float32, d);
    program.kernel("affine")(queue, n, std::nullopt, dy, dx, static_cast<std::int32_t>(n));
    const auto copy = Array::empty(queue, {n}, Dtype::float32, d);
    copy.set(dy);
    const auto y = copy.get<float>();
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], 2.0f * x[i] + 1.0f) << i;
  }
}

// cuda::context_from_backend_contexts over the application's contexts (at most two devices): the
// Skein context has their devices in their order and their contexts; Skein's kernels and copies
// run on it. Without ownership the contexts stay the application's, usable after the Skein
// context is gone (created ones and the devices' primary contexts alike); with ownership Skein
// destroys them. Bad input raises LogicError: no contexts, a null one (and then, with ownership
// asked, the application keeps its contexts).
void cuda_application_contexts(const std::vector<Device>& all) {
  const ContextCalls f = load_context_calls();
  ASSERT_TRUE(f.found()) << "the driver lacks a context call";
  const std::vector<Device> devices(
      all.begin(), all.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(all.size(), 2)));
  for (const bool take_ownership : {false, true}) {
    SCOPED_TRACE(take_ownership ? "take_ownership" : "without ownership");
    const std::vector<CUcontext> raw = create_contexts(f, devices);
    {
      const Context ctx = cuda::context_from_backend_contexts(raw, take_ownership);
      EXPECT_EQ(ctx.devices(), devices);
      for (std::size_t d = 0; d < raw.size(); ++d) EXPECT_EQ(cuda::native_context(ctx, d), raw[d]);
      expect_skein_works(ctx);
    }
    if (!take_ownership) {
      for (CUcontext c : raw) {
        expect_usable(f, c);
        EXPECT_EQ(f.destroy(c), CUDA_SUCCESS);
      }
    }
  }
  // The devices' primary contexts (those of the CUDA runtime), retained by the application.
  std::vector<CUcontext> primary;
  for (const Device& d : devices) {
    CUcontext c = nullptr;
    ASSERT_EQ(f.retain_primary(&c, cuda::native_device(d)), CUDA_SUCCESS);
    primary.push_back(c);
  }
  expect_skein_works(cuda::context_from_backend_contexts(primary, false));
  for (std::size_t i = 0; i < primary.size(); ++i) {
    expect_usable(f, primary[i]);
    EXPECT_EQ(f.release_primary(cuda::native_device(devices[i])), CUDA_SUCCESS);
  }
  // Bad input, before anything is taken over.
  expect_logic_error([] { (void)cuda::context_from_backend_contexts({}); }, {"no contexts given"});
  const std::vector<CUcontext> null_only = {nullptr};
  expect_logic_error([&] { (void)cuda::context_from_backend_contexts(null_only); },
                     {"CUDA context 0 of 1 is null"});
  std::vector<CUcontext> with_null = create_contexts(f, {devices.front()});
  with_null.push_back(nullptr);
  expect_logic_error([&] { (void)cuda::context_from_backend_contexts(with_null, true); },
                     {"CUDA context 1 of 2 is null"});
  expect_usable(f, with_null.front());  // still the application's
  EXPECT_EQ(f.destroy(with_null.front()), CUDA_SUCCESS);
}
#endif

// The same work on the application's memory and queue, whatever the backend: the application
// writes x and y with its own API on its own queue, Skein runs an axpy, a sum and a kernel on them
// on that queue with nothing synchronised in between, and the application reads the result back
// on its queue. `write`/`read` enqueue on the native queue; `finish` waits for it.
void foreign_work(const Queue& queue, const Buffer& xb, const Buffer& yb, std::size_t n,
                  const std::function<void(const Buffer&, const std::vector<float>&)>& write,
                  const std::function<std::vector<float>(const Buffer&)>& read) {
  const auto x = random_reals<float>(n, 41), y = random_reals<float>(n, 42);
  write(xb, x);
  write(yb, y);
  Array xa(queue, xb, {n}, Dtype::float32), ya(queue, yb, {n}, Dtype::float32);
  axpy(queue, 2.0f, xa, ya, ya);  // y = 2 x + y, in place
  const float total = sum(queue, ya).get<float>().front();
  Program program(queue.context(), R"(
KERNEL void twice(GLOBAL_MEM float* y, int n)
{
    const int i = get_global_id(0);
    if (i < n) y[i] = 2.0f * y[i];
}
)");
  program.kernel("twice")(queue, n, std::nullopt, yb, static_cast<std::int32_t>(n));
  // BLAS (cuBLAS, CLBlast) where this machine has it: x . x, against the host's sum in double.
  if (blas::status(queue.context().api().id()).available) {
    const double xx = blas::dot(queue, xa, xa);
    double want_xx = 0;
    for (float v : x) want_xx += static_cast<double>(v) * v;
    EXPECT_NEAR(xx, want_xx, 1e-5 * want_xx) << "blas::dot on foreign memory";
  }
  const auto back = read(yb);
  double want_total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float z = 2.0f * x[i] + y[i];
    want_total += z;
    ASSERT_NEAR(back[i], 2.0f * z, 1e-6f * (2.0f * std::abs(2.0f * x[i]) + 2.0f * std::abs(y[i])))
        << i;
  }
  EXPECT_NEAR(total, want_total, 1e-5 * n);
}

#if SKEIN_HAS_OPENCL
void opencl_foreign(const Context& ctx) {
  const cl_context raw = opencl::native_context(ctx);
  const cl_device_id dev = opencl::native_device(ctx.device(0));
  cl_int err = CL_SUCCESS;
  cl_command_queue native = clCreateCommandQueue(raw, dev, 0, &err);
  ASSERT_EQ(err, CL_SUCCESS);
  const std::size_t n = 10007;
  cl_mem xm = clCreateBuffer(raw, CL_MEM_READ_WRITE, n * sizeof(float), nullptr, &err);
  ASSERT_EQ(err, CL_SUCCESS);
  cl_mem ym = clCreateBuffer(raw, CL_MEM_READ_WRITE, (n + 5) * sizeof(float), nullptr, &err);
  ASSERT_EQ(err, CL_SUCCESS);
  const auto refs = [](cl_mem m) {
    cl_uint c = 0;
    clGetMemObjectInfo(m, CL_MEM_REFERENCE_COUNT, sizeof(c), &c, nullptr);
    return c;
  };
  {
    Queue queue = opencl::queue_from_native(ctx, {0}, std::span(&native, 1));
    EXPECT_EQ(opencl::native_queue(queue, 0), native);
    Buffer xb = opencl::buffer_from_native(ctx, 0, xm, n * sizeof(float));
    Buffer yb = opencl::buffer_from_native(ctx, 0, ym, n * sizeof(float));  // less than it holds
    EXPECT_EQ(opencl::native_mem(xb), xm);
    EXPECT_EQ(refs(xm), 2u);  // Skein's reference beside the application's
    foreign_work(
        queue, xb, yb, n,
        [&](const Buffer& b, const std::vector<float>& v) {
          ASSERT_EQ(clEnqueueWriteBuffer(native, opencl::native_mem(b), CL_FALSE, 0,
                                         v.size() * sizeof(float), v.data(), 0, nullptr, nullptr),
                    CL_SUCCESS);
        },
        [&](const Buffer& b) {
          std::vector<float> v(n);
          EXPECT_EQ(clEnqueueReadBuffer(native, opencl::native_mem(b), CL_TRUE, 0,
                                        n * sizeof(float), v.data(), 0, nullptr, nullptr),
                    CL_SUCCESS);
          return v;
        });
    // Bad input: more than the cl_mem holds; another context's buffer and queue.
    expect_logic_error([&] { (void)opencl::buffer_from_native(ctx, 0, xm, n * sizeof(float) + 1); },
                       {"bytes asked, but the cl_mem holds"});
    cl_context other = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err);
    ASSERT_EQ(err, CL_SUCCESS);
    cl_mem foreign = clCreateBuffer(other, CL_MEM_READ_WRITE, 64, nullptr, &err);
    cl_command_queue foreign_queue = clCreateCommandQueue(other, dev, 0, &err);
    expect_logic_error([&] { (void)opencl::buffer_from_native(ctx, 0, foreign, 64); },
                       {"another OpenCL context"});
    expect_logic_error(
        [&] { (void)opencl::queue_from_native(ctx, {0}, std::span(&foreign_queue, 1)); },
        {"another OpenCL context"});
    expect_logic_error(
        [&] {
          (void)opencl::queue_from_native(ctx, {0, 0}, std::span(&native, 1));
        },
        {"2 device index(es) and 1 command queue(s)"});
    clReleaseCommandQueue(foreign_queue);
    clReleaseMemObject(foreign);
    clReleaseContext(other);
    queue.synchronize();
  }
  EXPECT_EQ(refs(xm), 1u);  // Skein's reference given back with the last Buffer
  clReleaseMemObject(xm);
  clReleaseMemObject(ym);
  clReleaseCommandQueue(native);
}
#endif

#if SKEIN_HAS_CUDA
void cuda_foreign(const Context& ctx) {
  const int device = static_cast<int>(cuda::native_device(ctx.device(0)));
  ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
  cudaStream_t native = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&native, cudaStreamNonBlocking), cudaSuccess);
  const std::size_t n = 10007;
  void* xp = nullptr;
  void* yp = nullptr;
  ASSERT_EQ(cudaMalloc(&xp, n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&yp, n * sizeof(float)), cudaSuccess);
  int deleted = 0;
  {
    const CUstream stream = reinterpret_cast<CUstream>(native);
    Queue queue = cuda::queue_from_native(ctx, {0}, std::span(&stream, 1));
    EXPECT_EQ(cuda::native_stream(queue, 0), stream);
    // x is shared: Skein frees it (through the deleter) when its last Buffer is gone.
    Buffer xb = cuda::buffer_from_native(ctx, 0, reinterpret_cast<CUdeviceptr>(xp),
                                         n * sizeof(float), [xp, &deleted] {
                                           ++deleted;
                                           cudaFree(xp);
                                         });
    Buffer yb =
        cuda::buffer_from_native(ctx, 0, reinterpret_cast<CUdeviceptr>(yp), n * sizeof(float));
    EXPECT_EQ(cuda::native_pointer(xb), reinterpret_cast<CUdeviceptr>(xp));
    foreign_work(
        queue, xb, yb, n,
        [&](const Buffer& b, const std::vector<float>& v) {
          ASSERT_EQ(cudaMemcpyAsync(reinterpret_cast<void*>(cuda::native_pointer(b)), v.data(),
                                    v.size() * sizeof(float), cudaMemcpyHostToDevice, native),
                    cudaSuccess);
        },
        [&](const Buffer& b) {
          std::vector<float> v(n);
          EXPECT_EQ(cudaMemcpyAsync(v.data(), reinterpret_cast<void*>(cuda::native_pointer(b)),
                                    n * sizeof(float), cudaMemcpyDeviceToHost, native),
                    cudaSuccess);
          EXPECT_EQ(cudaStreamSynchronize(native), cudaSuccess);
          return v;
        });
    // Bad input: past the allocation's end (also from an address inside it), host memory, null.
    const auto y = reinterpret_cast<CUdeviceptr>(yp);
    expect_logic_error([&] { (void)cuda::buffer_from_native(ctx, 0, y, 2 * n * sizeof(float)); },
                       {"its allocation ends", "80056 bytes asked"});
    expect_logic_error(
        [&] { (void)cuda::buffer_from_native(ctx, 0, y + 400, 2 * n * sizeof(float)); },
        {"its allocation ends"});
    std::vector<float> host(16);
    expect_logic_error(
        [&] {
          (void)cuda::buffer_from_native(ctx, 0, reinterpret_cast<CUdeviceptr>(host.data()), 64);
        },
        {"no device memory at this address"});
    expect_logic_error([&] { (void)cuda::buffer_from_native(ctx, 0, 0, 64); }, {"null pointer"});
    // Memory of another GPU, where there is one.
    if (int count = 0; cudaGetDeviceCount(&count) == cudaSuccess && count > 1) {
      const int other = device == 0 ? 1 : 0;
      void* op = nullptr;
      ASSERT_EQ(cudaSetDevice(other), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&op, 256), cudaSuccess);
      expect_logic_error(
          [&] { (void)cuda::buffer_from_native(ctx, 0, reinterpret_cast<CUdeviceptr>(op), 256); },
          {fmt::format("the memory is on CUDA device {}", other)});
      cudaFree(op);
      ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
    }
    EXPECT_EQ(deleted, 0);
  }
  EXPECT_EQ(deleted, 1);
  cudaFree(yp);
  cudaStreamDestroy(native);
}
// A stream of the application's that it captures into a CUDA graph: Skein's launches on it are
// captured as kernel nodes (not launched, and not through Skein's own graphs, whose launch would
// end the capture), and the captured graph gives the result of those launches.
void cuda_capture(const Context& ctx) {
  const int device = static_cast<int>(cuda::native_device(ctx.device(0)));
  ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
  cudaStream_t native = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&native, cudaStreamNonBlocking), cudaSuccess);
  {
    const CUstream stream = reinterpret_cast<CUstream>(native);
    Queue queue = cuda::queue_from_native(ctx, {0}, std::span(&stream, 1));
    Program program(ctx, R"(
KERNEL void add(GLOBAL_MEM int* y, int v, unsigned int n)
{
    const unsigned int i = (unsigned int)get_global_id(0);
    if (i < n) y[i] += v;
}
)");
    const std::size_t n = 1000;
    auto y = Array::zeros(queue, {n}, Dtype::int32);
    auto add = program.kernel("add").prepare(queue, 1024, LaunchSizes{64});
    // Two launches first, so that the stream's later ones would go through a graph.
    add(y, std::int32_t{1}, static_cast<std::uint32_t>(n));
    add(y, std::int32_t{2}, static_cast<std::uint32_t>(n));
    ASSERT_EQ(cudaStreamBeginCapture(native, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    add(y, std::int32_t{10}, static_cast<std::uint32_t>(n));
    add(y, std::int32_t{100}, static_cast<std::uint32_t>(n - 1));
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamEndCapture(native, &graph), cudaSuccess);
    std::size_t nodes = 0;
    ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
    EXPECT_EQ(nodes, 2u);
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    // Captured, not run: only the two launches before the capture have.
    EXPECT_EQ(y.get<std::int32_t>()[0], 3);
    ASSERT_EQ(cudaGraphLaunch(exec, native), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, native), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(native), cudaSuccess);
    const auto got = y.get<std::int32_t>();
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], i + 1 < n ? 223 : 23) << i;
    // And after the capture, launches on the stream run again.
    add(y, std::int32_t{-23}, static_cast<std::uint32_t>(n));
    add(y, std::int32_t{-200}, static_cast<std::uint32_t>(n - 1));
    const auto after = y.get<std::int32_t>();
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(after[i], 0) << i;
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
  cudaStreamDestroy(native);
}
#endif

// Launches scale_add (y = a x + y) of `program` on device 0 through a PreparedKernel and checks
// the result against the host.
void run_scale_add(const Queue& queue, const Program& program, const std::string& what) {
  SCOPED_TRACE(what);
  for (std::size_t n : {1u, 255u, 4099u}) {
    const auto x = random_reals<float>(n, 51), y0 = random_reals<float>(n, 52);
    auto dx = Array::from_host(queue, x), dy = Array::from_host(queue, y0);
    const std::size_t local = 64, global = (n + local - 1) / local * local;
    program.kernel("scale_add")
        .prepare(queue, global, LaunchSizes{local})(dy, dx, 3.0f, static_cast<std::int32_t>(n));
    const auto y = dy.get<float>();
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_NEAR(y[i], 3.0f * x[i] + y0[i], 1e-6f * (3.0f * std::abs(x[i]) + std::abs(y0[i])))
          << i;
    }
  }
}

#if SKEIN_HAS_OPENCL
// A device binary made with the OpenCL API directly (as an application's offline build would),
// loaded by Program::from_binary.
void opencl_aot(const Context& ctx) {
  const cl_context raw = opencl::native_context(ctx);
  const cl_device_id dev = opencl::native_device(ctx.device(0));
  const char* source = R"(
__kernel void scale_add(__global float* y, __global const float* x, float a, int n)
{
    const int i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}
)";
  cl_int err = CL_SUCCESS;
  cl_program built = clCreateProgramWithSource(raw, 1, &source, nullptr, &err);
  ASSERT_EQ(err, CL_SUCCESS);
  ASSERT_EQ(clBuildProgram(built, 1, &dev, "", nullptr, nullptr), CL_SUCCESS);
  std::size_t size = 0;
  ASSERT_EQ(clGetProgramInfo(built, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr),
            CL_SUCCESS);
  std::vector<unsigned char> binary(size);
  unsigned char* data = binary.data();
  ASSERT_EQ(clGetProgramInfo(built, CL_PROGRAM_BINARIES, sizeof(data), &data, nullptr), CL_SUCCESS);
  clReleaseProgram(built);
  Queue queue(ctx, {0});
  const auto program =
      Program::from_binary(ctx, std::as_bytes(std::span(binary)),
                           {.device_idxs = std::vector<std::size_t>{0}, .name = "offline"});
  EXPECT_TRUE(program.source(0).empty());
  run_scale_add(queue, program, "an OpenCL device binary");
  // Garbage, and nothing at all: refused naming the device.
  std::vector<std::byte> junk(64, std::byte{0x5a});
  expect_logic_error(
      [&] { (void)Program::from_binary(ctx, junk, {.device_idxs = std::vector<std::size_t>{0}}); },
      {"cannot run on", ctx.device(0).description()});
  expect_logic_error([&] { (void)Program::from_binary(ctx, {}); }, {"the binary is empty"});
}
#endif

#if SKEIN_HAS_CUDA && defined(SKEIN_TEST_AOT_DIR)
// nvcc's outputs from the build (tests/CMakeLists.txt): PTX, the device's CUBIN and a fatbin all
// run; a CUBIN of another architecture is refused.
void cuda_aot(const Context& ctx) {
  const std::filesystem::path dir = SKEIN_TEST_AOT_DIR;
  const auto cc = ctx.device(0).params().compute_capability.value();
  Queue queue(ctx, {0});
  const ProgramOptions on_0{.device_idxs = std::vector<std::size_t>{0}};
  run_scale_add(queue, Program::from_file(ctx, dir / "aot.ptx", on_0), "PTX (compute_80)");
  run_scale_add(queue, Program::from_file(ctx, dir / "aot.fatbin", on_0), "fatbin");
  const bool hopper = cc.first == 9;
  if (hopper || cc == std::pair{8, 0}) {
    run_scale_add(
        queue, Program::from_file(ctx, dir / (hopper ? "aot_sm90.cubin" : "aot_sm80.cubin"), on_0),
        "CUBIN of the device's architecture");
    expect_logic_error(
        [&] {
          (void)Program::from_file(ctx, dir / (hopper ? "aot_sm80.cubin" : "aot_sm90.cubin"), on_0);
        },
        {"cannot run on", ctx.device(0).description()});
  }
  // Dynamic shared memory in an nvcc-compiled kernel: LocalMem is the launch's sharedMemBytes.
  const auto program = Program::from_file(ctx, dir / "aot.fatbin", on_0);
  const std::size_t group = 128, n = 4 * group;
  const auto x = random_reals<float>(n, 53);
  auto dx = Array::from_host(queue, x);
  auto dy = Array::empty(queue, {n}, Dtype::float32);
  program.kernel("reverse_blocks")
      .prepare(queue, n, LaunchSizes{group}, LocalMem{group * sizeof(float)})(dy, dx);
  const auto y = dy.get<float>();
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(y[i], x[i / group * group + group - 1 - i % group]) << i;
}
#endif

TEST_P(Interop, KernelsCompiledAheadOfTime) {
  auto ctx = context();
#if SKEIN_HAS_OPENCL
  if (GetParam().api == ApiId::opencl) opencl_aot(ctx);
#endif
#if SKEIN_HAS_CUDA
  if (GetParam().api == ApiId::cuda) {
#if defined(SKEIN_TEST_AOT_DIR)
    cuda_aot(ctx);
#else
    GTEST_SKIP() << "built without nvcc: no ahead-of-time kernels to load";
#endif
  }
#endif
}

#if SKEIN_HAS_DLPACK
// DLPack: an array out and back in without a copy, on every backend; a tensor made by hand over
// Skein-allocated memory with a deleter of its own; tensors Skein must refuse (the caller keeps
// them: their deleters do not run).
TEST_P(Interop, DlpackRoundTripsWithoutACopy) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t d = queue.device_idxs().back();
  const auto host = random_reals<double>(6 * 7, 61);
  auto a = Array::from_host(queue, host, {6, 7}, d);
  {
    DLManagedTensor* t = to_dlpack(a);
    EXPECT_EQ(t->dl_tensor.ndim, 2);
    EXPECT_EQ(t->dl_tensor.shape[0], 6);
    EXPECT_EQ(t->dl_tensor.shape[1], 7);
    EXPECT_EQ(t->dl_tensor.strides[0], 7);
    EXPECT_EQ(t->dl_tensor.strides[1], 1);
    EXPECT_EQ(t->dl_tensor.dtype.code, kDLFloat);
    EXPECT_EQ(t->dl_tensor.dtype.bits, 64);
    EXPECT_EQ(t->dl_tensor.device.device_type, GetParam().api == ApiId::cuda ? kDLCUDA : kDLOpenCL);
    Array b = from_dlpack(queue, t);
    EXPECT_EQ(b.shape(), a.shape());
    EXPECT_EQ(b.dtype(), Dtype::float64);
    EXPECT_EQ(b.device_idx(), d);
    EXPECT_EQ(b.get<double>(), host);
    // No copy: a write through b shows in a.
    fill(queue, b, 2.5);
    EXPECT_EQ(a.get<double>(), std::vector<double>(host.size(), 2.5));
  }
  // A strided view at an offset (rows 1, 3 and 5), and each dtype's DLPack code and width.
  a.set(host);
  {
    Array odd_rows(queue, a.data(), {3, 7}, Dtype::float64, {2 * 7 * 8, 8}, 7 * 8);
    DLManagedTensor* t = to_dlpack(odd_rows);
    EXPECT_EQ(t->dl_tensor.strides[0], 14);
    EXPECT_EQ(t->dl_tensor.strides[1], 1);
    Array back = from_dlpack(queue, t);
    EXPECT_EQ(back.strides(), (Strides{112, 8}));
    auto dense = Array::empty(queue, {3, 7}, Dtype::float64, d);
    copy(queue, back, dense);
    std::vector<double> want;
    for (std::size_t r : {1u, 3u, 5u})
      want.insert(want.end(), host.begin() + 7 * r, host.begin() + 7 * r + 7);
    EXPECT_EQ(dense.get<double>(), want);
  }
  for (Dtype dt : all_dtypes) {
    const DLDataType code = dlpack_dtype(dt);
    EXPECT_EQ(code.bits, 8 * itemsize(dt));
    EXPECT_EQ(code.lanes, 1);
    EXPECT_EQ(dtype_from_dlpack(code), dt) << name(dt);
  }
  // A tensor made by hand, as another library would: it is deleted once the last Array is gone.
  struct Made {
    DLManagedTensor tensor{};
    std::int64_t shape[1] = {5};
    int* deleted = nullptr;
    std::optional<Array> keep;  // the memory it describes
  };
  int deleted = 0;
  const auto make = [&](DLDevice device, DLDataType type, const std::int64_t* strides) {
    auto* m = new Made;
    m->deleted = &deleted;
    m->keep = Array::from_host(queue, std::vector<float>{1, 2, 3, 4, 5}, {}, d);
    DLManagedTensor* t = to_dlpack(*m->keep);  // for the data pointer and device
    m->tensor.dl_tensor = t->dl_tensor;
    t->deleter(t);
    m->tensor.dl_tensor.device = device;
    m->tensor.dl_tensor.dtype = type;
    m->tensor.dl_tensor.shape = m->shape;
    m->tensor.dl_tensor.strides = const_cast<std::int64_t*>(strides);
    m->tensor.manager_ctx = m;
    m->tensor.deleter = [](DLManagedTensor* self) {
      auto* made = static_cast<Made*>(self->manager_ctx);
      ++*made->deleted;
      delete made;
    };
    return m;
  };
  DLManagedTensor* exported = to_dlpack(a);
  const DLDevice device = exported->dl_tensor.device;
  exported->deleter(exported);
  const DLDataType f32{kDLFloat, 32, 1};
  {
    Made* m = make(device, f32, nullptr);
    Array x = from_dlpack(queue, &m->tensor);
    EXPECT_EQ(x.get<float>(), (std::vector<float>{1, 2, 3, 4, 5}));
    EXPECT_EQ(deleted, 0);
  }
  EXPECT_EQ(deleted, 1);
  const std::int64_t negative[1] = {-1};
  const struct {
    DLDevice device;
    DLDataType type;
    const std::int64_t* strides;
    const char* words;
  } bad[] = {{DLDevice{kDLCPU, 0}, f32, nullptr, "DLPack device type 1"},
             {DLDevice{device.device_type, 12345}, f32, nullptr,
              "device 12345, which is not one of the queue's"},
             {device, DLDataType{kDLFloat, 8, 1}, nullptr,
              "(code 2, 8 bits, 1 lanes) is not one of Skein's dtypes"},
             {device, DLDataType{kDLFloat, 32, 4}, nullptr, "4 lanes"},
             {device, f32, negative, "stride -1"}};
  for (const auto& b : bad) {
    Made* m = make(b.device, b.type, b.strides);
    const int before = deleted;
    expect_logic_error([&] { (void)from_dlpack(queue, &m->tensor); }, {b.words});
    EXPECT_EQ(deleted, before) << b.words;  // refused: still the caller's
    m->tensor.deleter(&m->tensor);
  }
}
#endif

TEST_P(Interop, ForeignMemoryAndQueues) {
  auto ctx = context();
#if SKEIN_HAS_OPENCL
  if (GetParam().api == ApiId::opencl) opencl_foreign(ctx);
#endif
#if SKEIN_HAS_CUDA
  if (GetParam().api == ApiId::cuda) cuda_foreign(ctx);
  if (GetParam().api == ApiId::cuda) cuda_capture(ctx);
#endif
}

TEST_P(Interop, ContextsFromBackendObjects) {
  const auto devs = devices();
#if SKEIN_HAS_OPENCL
  if (GetParam().api == ApiId::opencl) opencl_interop(devs);
#endif
#if SKEIN_HAS_CUDA
  if (GetParam().api == ApiId::cuda) cuda_interop(devs);
#endif
}

TEST_P(Interop, ContextsOverTheApplicationsCudaContexts) {
  if (GetParam().api != ApiId::cuda)
    GTEST_SKIP() << "CUDA contexts (cuda::context_from_backend_contexts)";
#if SKEIN_HAS_CUDA
  cuda_application_contexts(devices());
#endif
}

SKEIN_INSTANTIATE_BACKENDS(Interop);

}  // namespace interop_test
}  // namespace
}  // namespace skein::test

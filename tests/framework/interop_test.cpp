// Interop with the application's own backend objects: contexts made from them, with and without
// ownership, and the native objects behind Skein's.
#include <gtest/gtest.h>

#include <skein/skein.hpp>

#include "backends.hpp"

#if SKEIN_HAS_OPENCL
#include <skein/opencl.hpp>
#endif
#if SKEIN_HAS_CUDA
#include <cuda_runtime_api.h>

#include <skein/cuda.hpp>
#endif

namespace skein::test {
namespace {

class Interop : public BackendTest {};

#if SKEIN_HAS_OPENCL
cl_device_id raw_device(const Device& device) {
  return opencl::native_device(device);
}

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

TEST_P(Interop, ContextsFromBackendObjects) {
  const auto devs = devices();
#if SKEIN_HAS_OPENCL
  if (GetParam().api == ApiId::opencl) opencl_interop(devs);
#endif
#if SKEIN_HAS_CUDA
  if (GetParam().api == ApiId::cuda) cuda_interop(devs);
#endif
}

SKEIN_INSTANTIATE_BACKENDS(Interop);

}  // namespace
}  // namespace skein::test

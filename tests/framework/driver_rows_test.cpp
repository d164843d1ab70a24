// SPDX-License-Identifier: BSD-3-Clause
// PyCUDA's driver rows (issue 40): context flags (scheduling), push / pop, Context::synchronize,
// blocking and non-blocking queues, event flags (BLOCKING_SYNC, DISABLE_TIMING), managed memory
// attached to a queue, pointer attributes, and devices by PCI bus id. Each against what the
// backend does: on CUDA the behaviour itself (a host thread that sleeps while it waits, work on
// the legacy default stream ordered after a blocking queue's, a kernel using memory attached to
// its queue alone, the driver's addresses); on OpenCL what it means there, or the typed refusal
// saying what to use instead.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <skein/memory.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "backends.hpp"
#include "checks.hpp"
#include "skein/config.hpp"
#if SKEIN_HAS_CUDA
#include <skein/cuda.hpp>
#endif

namespace skein::test {
namespace {
namespace driver_rows_test {

class DriverRows : public BackendTest {
 protected:
  bool cuda() const { return GetParam().api == ApiId::cuda; }
};

// spin: busy for about `cycles` clock cycles (CUDA) or `cycles` loop rounds (OpenCL), then
// out[i] = 3 i + 1. copy: dst = src.
const char* kKernels = R"(
KERNEL void spin(GLOBAL_MEM int* out, long cycles, int n)
{
    const int i = get_global_id(0);
#ifdef CUDA
    const long long start = clock64();
    while (clock64() - start < cycles) {}
#else
    float x = (float)i;
    for (long k = 0; k < cycles; ++k) x = x * 0.999f + 1.0f;
    if (x == -1.0f) out[0] = -1;
#endif
    if (i < n) out[i] = 3 * i + 1;
}
KERNEL void copy(GLOBAL_MEM int* dst, GLOBAL_MEM const int* src, int n)
{
    const int i = get_global_id(0);
    if (i < n) dst[i] = src[i];
}
)";

// At least about `ms` milliseconds of a GPU's time (CUDA: cycles at 2 GHz, above the clock of
// current NVIDIA GPUs); on OpenCL (PoCL on the CPU) some work, not timed.
long spin_cycles(bool cuda, double ms) {
  return cuda ? static_cast<long>(ms * 2e6) : static_cast<long>(ms * 20);
}

void expect_affine(const std::vector<std::int32_t>& y, std::size_t n) {
  ASSERT_EQ(y.size(), n);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], static_cast<std::int32_t>(3 * i + 1)) << i;
}

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// The calling thread's CPU time and the wall time that `wait` takes, in seconds.
template <class F>
std::pair<double, double> cpu_and_wall(F&& wait) {
  const double cpu0 = thread_cpu_seconds();
  const auto wall0 = std::chrono::steady_clock::now();
  wait();
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return {thread_cpu_seconds() - cpu0, wall};
}

// --- context flags, push / pop, synchronize ----------------------------------------------------

TEST_P(DriverRows, SchedulingIsTheDriversOnCudaAndAutomaticOnlyOnOpenCL) {
  const std::vector<Device> one{devices().front()};
  if (!cuda()) {
    expect_logic_error(
        [&] { (void)Context::from_devices(one, {ContextScheduling::blocking_sync}); },
        {"Context::from_devices", "OpenCL has no scheduling setting", "blocking_sync",
         "automatic"});
    const Context ctx = Context::from_devices(one, {ContextScheduling::automatic});
    EXPECT_EQ(ctx.scheduling(0), ContextScheduling::automatic);
    return;
  }
  const std::size_t n = 256;
  for (const auto s : {ContextScheduling::blocking_sync, ContextScheduling::spin,
                       ContextScheduling::yield, ContextScheduling::automatic}) {
    SCOPED_TRACE(name(s));
    const Context ctx = Context::from_devices(one, {s});
    EXPECT_EQ(ctx.scheduling(0), s);
    if (s != ContextScheduling::blocking_sync && s != ContextScheduling::spin) continue;
    // The host thread's CPU time while it waits for 300 ms of device work: asleep with
    // blocking_sync, busy with spin.
    Queue queue(ctx, {0});
    const Program program(ctx, kKernels);
    auto out = Array::zeros(queue, {n}, Dtype::int32);
    queue.synchronize();
    program.kernel("spin")(queue, n, LaunchSizes{64}, out, spin_cycles(true, 300),
                           static_cast<std::int32_t>(n));
    const auto [cpu, wall] = cpu_and_wall([&] { queue.synchronize(); });
    EXPECT_GT(wall, 0.2);
    if (s == ContextScheduling::blocking_sync) {
      EXPECT_LT(cpu, 0.3 * wall) << cpu << " of " << wall;
    } else {
      EXPECT_GT(cpu, 0.7 * wall) << cpu << " of " << wall;
    }
    expect_affine(out.get<std::int32_t>(), n);
  }
}

#if SKEIN_HAS_CUDA
// The calling thread's current CUDA context, from the driver (independent of Skein's loader).
CUcontext current_cuda_context() {
  using GetCurrent = CUresult (*)(CUcontext*);
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!library) library = dlopen("libcuda.so.1", RTLD_NOW);
  const auto get = reinterpret_cast<GetCurrent>(dlsym(library, "cuCtxGetCurrent"));
  CUcontext current = nullptr;
  EXPECT_EQ(get(&current), CUDA_SUCCESS);
  return current;
}
#endif

TEST_P(DriverRows, PushAndPopMakeTheContextCurrentOnCudaAndDoNothingOnOpenCL) {
  const Context ctx = context();
  EXPECT_NO_THROW(ctx.push(0));
  EXPECT_NO_THROW(ctx.pop());
  expect_logic_error([&] { ctx.push(ctx.num_devices()); }, {"Context::push", "out of range"});
  if (!cuda()) return;
#if SKEIN_HAS_CUDA
  ctx.deactivate();
  const CUcontext before = current_cuda_context();
  ctx.push(0);
  EXPECT_EQ(current_cuda_context(), cuda::native_context(ctx, 0));
  ctx.push(0);
  ctx.pop();
  EXPECT_EQ(current_cuda_context(), cuda::native_context(ctx, 0));
  ctx.pop();
  EXPECT_EQ(current_cuda_context(), before);
  if (before == nullptr) {
    // Nothing of this context is current: pop refuses, pops nothing.
    expect_logic_error([&] { ctx.pop(); }, {"Context::pop", "is not one of this context's"});
    EXPECT_EQ(current_cuda_context(), nullptr);
  }
  // Skein's calls work whichever is current.
  Queue queue(ctx, {0});
  const auto x = Array::from_host(queue, std::vector<std::int32_t>{1, 2, 3});
  EXPECT_EQ(x.get<std::int32_t>(), (std::vector<std::int32_t>{1, 2, 3}));
#endif
}

TEST_P(DriverRows, ContextSynchronizeWaitsForEveryQueueOfEveryDevice) {
  const Context ctx = context(std::min<std::size_t>(devices().size(), 2));
  const Program program(ctx, kKernels);
  const std::size_t n = 1000;
  std::vector<Queue> queues;
  std::vector<Array> outs;
  std::vector<Event> events;
  for (std::size_t d = 0; d < ctx.num_devices(); ++d) {
    for (int q = 0; q < 2; ++q) {
      queues.emplace_back(ctx, std::vector<std::size_t>{d});
      outs.push_back(Array::zeros(queues.back(), {n}, Dtype::int32));
      program.kernel("spin")
          .prepare(queues.back(), 1024, LaunchSizes{64})
          .on_devices(std::vector<std::size_t>{d}, outs.back(), spin_cycles(cuda(), 100),
                      static_cast<std::int32_t>(n));
      events.push_back(queues.back().record_marker(d));
    }
  }
  ctx.synchronize();
  for (std::size_t i = 0; i < events.size(); ++i) EXPECT_TRUE(events[i].query()) << i;
  for (auto& out : outs) expect_affine(out.get<std::int32_t>(), n);
}

// --- queue and event flags
// ------------------------------------------------------------------------

TEST_P(DriverRows, QueuesAreNonBlockingUnlessAsked) {
  const Context ctx = context();
  EXPECT_EQ(Queue(ctx).sync(0), QueueSync::non_blocking);
  const Queue blocking(ctx, {0}, QueuePriority::low(), QueueSync::blocking);
  EXPECT_EQ(blocking.sync(0), QueueSync::blocking);
  EXPECT_EQ(Queue(ctx, {0}, QueuePriority::high(), QueueSync::non_blocking).sync(0),
            QueueSync::non_blocking);
  // A blocking queue works as any other.
  const Program program(ctx, kKernels);
  auto out = Array::zeros(blocking, {65}, Dtype::int32);
  program.kernel("spin")(blocking, 128, LaunchSizes{64}, out, 0L, std::int32_t{65});
  expect_affine(out.get<std::int32_t>(), 65);
}

#if SKEIN_HAS_CUDA
TEST_P(DriverRows, WorkOnTheLegacyStreamWaitsForABlockingQueue) {
  if (!cuda()) GTEST_SKIP() << "the legacy default stream is CUDA's";
  const Context ctx = context();
  const Program program(ctx, kKernels);
  const Queue blocking(ctx, {0}, QueuePriority::low(), QueueSync::blocking);
  const CUstream legacy_stream = CU_STREAM_LEGACY;
  const Queue legacy = cuda::queue_from_native(ctx, {0}, std::span(&legacy_stream, 1));
  EXPECT_EQ(legacy.sync(0), QueueSync::blocking);
  const std::size_t n = 4099;
  auto out = Array::zeros(blocking, {n}, Dtype::int32);
  auto copied = Array::zeros(blocking, {n}, Dtype::int32);
  blocking.synchronize();
  // 200 ms of work on the blocking queue, then a copy on the legacy stream with no wait of ours:
  // the driver orders it after the spin, so it copies the spin's results.
  program.kernel("spin")(blocking, 4160, LaunchSizes{64}, out, spin_cycles(true, 200),
                         static_cast<std::int32_t>(n));
  program.kernel("copy")(legacy, 4160, LaunchSizes{64}, copied, out, static_cast<std::int32_t>(n));
  legacy.synchronize();
  std::vector<std::int32_t> host(n);
  copied.data().get(legacy, std::span(host));
  expect_affine(host, n);
}
#endif

TEST_P(DriverRows, EventFlagsTimingAndBlockingSync) {
  const Context ctx = context();
  const Queue queue(ctx, {0});
  const Program program(ctx, kKernels);
  const std::size_t n = 1000;
  auto out = Array::zeros(queue, {n}, Dtype::int32);
  const Event start = queue.record_event(0, EventFlags{});
  program.kernel("spin")(queue, 1024, LaunchSizes{64}, out, spin_cycles(cuda(), 300),
                         static_cast<std::int32_t>(n));
  const Event untimed = queue.record_event(0, {.disable_timing = true});
  const Event sleeping = queue.record_event(0, {.blocking_sync = true});
  const Event sleeping_untimed =
      queue.record_event(0, {.blocking_sync = true, .disable_timing = true});
  const auto [cpu, wall] = cpu_and_wall([&] { sleeping.wait(); });
  EXPECT_TRUE(untimed.query());  // recorded before `sleeping`, in order
  sleeping_untimed.wait();
  EXPECT_TRUE(sleeping_untimed.query());
  expect_affine(out.get<std::int32_t>(), n);
  EXPECT_GT(sleeping.time_since(start), 0.0);
  expect_logic_error([&] { (void)untimed.time_since(start); }, {"Event::time_since", "timing"});
  expect_logic_error([&] { (void)sleeping_untimed.time_since(start); }, {"timing"});
  if (cuda()) {
    // The host thread slept through the wait.
    EXPECT_GT(wall, 0.2);
    EXPECT_LT(cpu, 0.3 * wall) << cpu << " of " << wall;
  }
}

// --- managed memory attached to a queue ----------------------------------------------------------

TEST_P(DriverRows, ManagedMemoryAttachedToOneQueueServesItsKernels) {
  const Context ctx = context();
  const Queue queue(ctx, {0});
  const Buffer plain = Buffer::allocate(ctx, 0, 64);
  if (!cuda()) {
    expect_logic_error([&] { attach(queue, plain, ManagedAttach::single); },
                       {"attach", "managed memory is not supported on OpenCL"});
    return;
  }
  const Program program(ctx, kKernels);
  const std::size_t n = 4099;
  expect_logic_error([&] { (void)allocate_managed(ctx, 0, n * 4, ManagedAttach::single); },
                     {"allocate_managed", "attach(queue, buffer, ManagedAttach::single)"});
  expect_logic_error([&] { attach(queue, plain, ManagedAttach::single); },
                     {"attach", "not managed memory"});
  const Buffer managed = allocate_managed(ctx, 0, n * 4, ManagedAttach::host);
  // SINGLE on `queue`: its kernel writes, the host reads once the queue is done while another
  // queue works on its own memory.
  attach(queue, managed, ManagedAttach::single);
  const Array a(queue, managed, {n}, Dtype::int32);
  program.kernel("spin")(queue, 4160, LaunchSizes{64}, a, 0L, static_cast<std::int32_t>(n));
  queue.synchronize();
  const Queue other(ctx, {0});
  auto busy = Array::zeros(other, {64}, Dtype::int32);
  program.kernel("spin")(other, 64, LaunchSizes{64}, busy, spin_cycles(true, 100),
                         std::int32_t{64});
  const auto host = managed_span<std::int32_t>(managed);
  expect_affine(std::vector<std::int32_t>(host.begin(), host.end()), n);
  for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<std::int32_t>(i);
  other.synchronize();
  // GLOBAL again: a kernel on the other queue reads what the host wrote.
  attach(other, managed, ManagedAttach::global);
  auto copied = Array::zeros(other, {n}, Dtype::int32);
  program.kernel("copy")(other, 4160, LaunchSizes{64}, copied, a, static_cast<std::int32_t>(n));
  const auto y = copied.get<std::int32_t>();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], static_cast<std::int32_t>(i)) << i;
  // A view attaches its whole allocation; an empty managed buffer has nothing to attach.
  EXPECT_NO_THROW(attach(queue, managed.get_sub_region(64, 64), ManagedAttach::host));
  EXPECT_NO_THROW(attach(queue, allocate_managed(ctx, 0, 0), ManagedAttach::single));
  queue.synchronize();
}

// --- pointer attributes ------------------------------------------------------------------------

TEST_P(DriverRows, PointerAttributesOfBuffersAndViews) {
  const Context ctx = context();
  const Buffer whole = Buffer::allocate(ctx, 0, 4096);
  const Buffer view = whole.get_sub_region(256, 1024);
  const PointerAttributes a = pointer_attributes(view);
  EXPECT_EQ(a.device_idx, 0u);
  EXPECT_EQ(a.type, MemoryType::device);
  EXPECT_FALSE(a.managed);
  EXPECT_EQ(a.host_pointer, nullptr);
  EXPECT_GE(a.range_size, 4096u);
  EXPECT_EQ(a.range_offset, 256u);
  expect_logic_error([&] { (void)pointer_attributes(Buffer{}); }, {"pointer_attributes", "empty"});
  if (!cuda()) {
    EXPECT_EQ(a.device_pointer, 0u);
    return;
  }
#if SKEIN_HAS_CUDA
  const CUdeviceptr base = cuda::native_pointer(whole);
  EXPECT_EQ(a.device_pointer, base + 256);
  EXPECT_EQ(a.range_start, base);
  // The raw-pointer form agrees.
  const PointerAttributes raw = cuda::pointer_attributes(ctx, base + 256);
  EXPECT_EQ(raw.device_pointer, a.device_pointer);
  EXPECT_EQ(raw.range_size, a.range_size);
  EXPECT_EQ(raw.range_offset, 256u);
  // Managed memory: its host address too.
  const Buffer managed = allocate_managed(ctx, 0, 4096);
  const PointerAttributes m = pointer_attributes(managed.get_sub_region(512, 8));
  EXPECT_EQ(m.type, MemoryType::managed);
  EXPECT_TRUE(m.managed);
  EXPECT_EQ(m.host_pointer, managed_data(managed) + 512);
  EXPECT_EQ(m.range_offset, 512u);
  // Mapped host memory: host, with both addresses.
  const HostBuffer host = HostBuffer::allocate(ctx, 4096, {.device_mapped = true});
  const PointerAttributes h = pointer_attributes(host.device_buffer(ctx, 0));
  EXPECT_EQ(h.type, MemoryType::host);
  EXPECT_EQ(h.host_pointer, host.data());
  EXPECT_NE(h.device_pointer, 0u);
  // An address the driver does not know.
  expect_logic_error([&] { (void)cuda::pointer_attributes(ctx, CUdeviceptr{0x1000}); },
                     {"skein::cuda::pointer_attributes", "0x1000", "knows no memory"});
#endif
}

// --- devices by PCI bus id ---------------------------------------------------------------------

TEST_P(DriverRows, DevicesByPciBusId) {
  const Api api = this->api();
  bool any = false;
  for (const Device& device : devices()) {
    SCOPED_TRACE(device.description());
    if (!device.params().pci_bus_id) {
      expect_logic_error([&] { (void)device.pci_bus_id(); },
                         {"Device::pci_bus_id", "tells no PCI bus id", "cl_khr_pci_bus_info"});
      continue;
    }
    any = true;
    const std::string id = device.pci_bus_id();
    ASSERT_EQ(id.size(), 12u) << id;  // dddd:bb:dd.f
    EXPECT_EQ(Device::from_pci_bus_id(api, id), device);
    std::string upper = id;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(Device::from_pci_bus_id(api, upper), device);
    if (id.ends_with(".0")) {
      EXPECT_EQ(Device::from_pci_bus_id(api, id.substr(0, 10)), device);
    }
    if (id.starts_with("0000:")) {
      EXPECT_EQ(Device::from_pci_bus_id(api, id.substr(5)), device);
    }
  }
  if (!any) {
    expect_logic_error([&] { (void)Device::from_pci_bus_id(api, "0000:3b:00.0"); },
                       {"Device::from_pci_bus_id", "no ", "0000:3b:00.0", "tells none"});
  }
  expect_logic_error([&] { (void)Device::from_pci_bus_id(api, "ff:ff:ff:ff"); },
                     {"Device::from_pci_bus_id", "is no PCI bus id", "0000:65:00.0"});
  expect_logic_error([&] { (void)Device::from_pci_bus_id(api, "0000:zz:00.0"); },
                     {"is no PCI bus id"});
  expect_logic_error([&] { (void)Device::from_pci_bus_id(api, ""); }, {"is no PCI bus id"});
}

SKEIN_INSTANTIATE_BACKENDS(DriverRows);

}  // namespace driver_rows_test
}  // namespace
}  // namespace skein::test

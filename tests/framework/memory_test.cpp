// SPDX-License-Identifier: BSD-3-Clause
// Managed memory and IPC handles (skein/memory.hpp): on CUDA, managed buffers read and written by
// kernels, copies, arrays and the host against host references (views at offsets, one element,
// empty), prefetch and advice, the refusal of a request beyond free memory; IPC handles' checks
// within one process (the cross-process path is tests/collectives/ipc_test.cpp). On OpenCL, the
// typed refusals saying what to use instead.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <cstddef>
#include <cstring>
#include <skein/memory.hpp>
#include <utility>
#include <vector>
#include <skein/skein.hpp>

#include "backends.hpp"
#include "checks.hpp"
#include "skein/detail/host_values.hpp"
#include "skein/detail/ipc.hpp"

namespace skein::test {
namespace {
namespace memory_test {

class Memory : public BackendTest {
 protected:
  bool cuda() const { return GetParam().api == ApiId::cuda; }
};

template <class F>
std::string logic_message_of(F&& f) {
  try {
    f();
  } catch (const LogicError& e) {
    return e.what();
  } catch (const Error& e) {
    return std::string("(not a LogicError) ") + e.what();
  }
  return "(no error)";
}

// y[i] = 3 * x[i] + 1 over n ints.
const char* kKernels = R"(
KERNEL void affine(GLOBAL_MEM int* y, GLOBAL_MEM const int* x, int n)
{
    const int i = get_global_id(0);
    if (i < n) y[i] = 3 * x[i] + 1;
}
)";

// --- managed memory --------------------------------------------------------------------------

TEST_P(Memory, ManagedIsRefusedOnOpenCLWithWhatToUseInstead) {
  if (cuda()) GTEST_SKIP() << "CUDA has managed memory (the other tests)";
  auto ctx = context();
  Queue queue(ctx);
  std::string msg = logic_message_of([&] { allocate_managed(ctx, 0, 1024); });
  EXPECT_TRUE(contains(msg, "not supported on OpenCL")) << msg;
  EXPECT_TRUE(contains(msg, "Buffer::allocate")) << msg;
  msg = logic_message_of([&] { allocate_managed(ctx, 0, 0, ManagedAttach::host); });
  EXPECT_TRUE(contains(msg, "not supported on OpenCL")) << msg;
  // A plain buffer is not managed, and says so to every managed-only call.
  auto plain = Buffer::allocate(ctx, 0, 64);
  EXPECT_FALSE(is_managed(plain));
  EXPECT_FALSE(is_managed(Buffer{}));
  for (auto* call : {"managed_data", "prefetch", "advise"}) {
    msg = logic_message_of([&] {
      if (std::string(call) == "managed_data") managed_data(plain);
      if (std::string(call) == "prefetch") prefetch(queue, plain, MemoryLocation::on_host());
      if (std::string(call) == "advise") advise(plain, MemoryAdvice::set_read_mostly);
    });
    EXPECT_TRUE(contains(msg, "not managed memory")) << call << ": " << msg;
  }
}

TEST_P(Memory, ManagedBufferIsSharedByKernelsCopiesArraysAndTheHost) {
  if (!cuda()) GTEST_SKIP() << "managed memory is CUDA's (refusal checked above)";
  auto ctx = context();
  Queue queue(ctx);
  Program program(ctx, kKernels);
  const int n = 100003;
  const std::size_t bytes = n * sizeof(int);

  auto x = allocate_managed(ctx, 0, bytes);
  auto y = allocate_managed(ctx, 0, bytes, ManagedAttach::host);
  ASSERT_TRUE(is_managed(x));
  ASSERT_TRUE(is_managed(y));
  EXPECT_EQ(x.size(), bytes);
  const auto host_x = random_values<int>(n, 5);
  // The host writes the input in place, a kernel reads it and writes y, the host reads y.
  std::memcpy(managed_data(x), host_x.data(), bytes);
  prefetch(queue, x, MemoryLocation::on_device(0));
  program.kernel("affine")(queue, std::size_t(n), std::nullopt, y, x, n);
  queue.synchronize();
  auto seen = managed_span<int>(y);
  ASSERT_EQ(seen.size(), std::size_t(n));
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += seen[i] != 3 * host_x[i] + 1;
  EXPECT_EQ(wrong, 0);

  // A view at an offset: its host address, a kernel on it, copies to and from plain buffers.
  const std::size_t skip = 7;  // ints
  const int m = 1000;
  auto view = x.get_sub_region(skip * sizeof(int), m * sizeof(int));
  EXPECT_TRUE(is_managed(view));
  EXPECT_EQ(managed_data(view), managed_data(x) + skip * sizeof(int));
  auto out = Buffer::allocate(ctx, 0, m * sizeof(int));
  program.kernel("affine")(queue, std::size_t(m), std::nullopt, out, view, m);
  std::vector<int> got(m);
  out.get(queue, std::span<int>(got));
  wrong = 0;
  for (int i = 0; i < m; ++i) wrong += got[i] != 3 * host_x[skip + i] + 1;
  EXPECT_EQ(wrong, 0);
  // plain -> managed view (device copy), seen by the host through the pointer.
  view.set(queue, out, Sync::blocking);
  auto through = managed_span<int>(view);
  wrong = 0;
  for (int i = 0; i < m; ++i) wrong += through[i] != 3 * host_x[skip + i] + 1;
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(managed_span<int>(x)[skip - 1], host_x[skip - 1]);  // around the view: untouched
  EXPECT_EQ(managed_span<int>(x)[skip + m], host_x[skip + m]);

  // An Array over managed memory: get() and set() as for any other buffer.
  Array a(queue, y, Shape{std::size_t(n)}, dtype_of<int>);
  std::vector<int> all(n);
  a.get(std::span<int>(all));
  wrong = 0;
  for (int i = 0; i < n; ++i) wrong += all[i] != 3 * host_x[i] + 1;
  EXPECT_EQ(wrong, 0);
  a.set(host_x);
  queue.synchronize();
  EXPECT_EQ(std::memcmp(managed_data(y), host_x.data(), bytes), 0);

  // Advice and prefetching to the host change where the pages are, never the values. (x's view
  // was overwritten above: the host puts the input back first; the queue is idle.)
  std::memcpy(managed_data(x), host_x.data(), bytes);
  advise(x, MemoryAdvice::set_read_mostly);
  advise(x, MemoryAdvice::set_preferred_location, MemoryLocation::on_device(0));
  advise(x, MemoryAdvice::set_accessed_by, MemoryLocation::on_host());
  prefetch(queue, y, MemoryLocation::on_device(0));
  program.kernel("affine")(queue, std::size_t(n), std::nullopt, y, x, n);
  prefetch(queue, y, MemoryLocation::on_host());
  queue.synchronize();
  seen = managed_span<int>(y);
  wrong = 0;
  for (int i = 0; i < n; ++i) wrong += seen[i] != 3 * host_x[i] + 1;
  EXPECT_EQ(wrong, 0);
  advise(x, MemoryAdvice::unset_accessed_by, MemoryLocation::on_host());
  advise(x, MemoryAdvice::unset_preferred_location);
  advise(x, MemoryAdvice::unset_read_mostly);
}

TEST_P(Memory, ManagedEdgeCasesAndBadInput) {
  if (!cuda()) GTEST_SKIP() << "managed memory is CUDA's";
  auto ctx = context();
  Queue queue(ctx);
  Program program(ctx, kKernels);
  // Empty: no memory, no host address, prefetch and advice do nothing.
  auto empty = allocate_managed(ctx, 0, 0);
  EXPECT_TRUE(empty.empty());
  EXPECT_TRUE(is_managed(empty));
  EXPECT_EQ(managed_data(empty), nullptr);
  prefetch(queue, empty, MemoryLocation::on_device(0));
  advise(empty, MemoryAdvice::set_read_mostly);
  // One element.
  auto one = allocate_managed(ctx, 0, sizeof(int));
  *reinterpret_cast<int*>(managed_data(one)) = 41;
  program.kernel("affine")(queue, std::size_t(1), std::nullopt, one, one, 1);
  queue.synchronize();
  EXPECT_EQ(managed_span<int>(one)[0], 124);

  // Bad input: a device index outside the context, a plain buffer, a queue of another context.
  EXPECT_THROW(allocate_managed(ctx, 5, 16), LogicError);
  auto x = allocate_managed(ctx, 0, 256);
  EXPECT_THROW(prefetch(queue, x, MemoryLocation::on_device(5)), LogicError);
  EXPECT_THROW(advise(x, MemoryAdvice::set_accessed_by, MemoryLocation::on_device(5)), LogicError);
  auto plain = Buffer::allocate(ctx, 0, 256);
  EXPECT_FALSE(is_managed(plain));
  std::string msg = logic_message_of([&] { managed_data(plain); });
  EXPECT_TRUE(contains(msg, "not managed memory")) << msg;
  EXPECT_THROW(prefetch(queue, plain, MemoryLocation::on_host()), LogicError);
  EXPECT_THROW(advise(plain, MemoryAdvice::set_read_mostly), LogicError);
  auto other = Context::from_devices(ctx.device(0));
  EXPECT_THROW(prefetch(Queue(other), x, MemoryLocation::on_host()), LogicError);
}

TEST_P(Memory, ManagedBeyondFreeMemoryIsRefusedBeforeAllocating) {
  if (!cuda()) GTEST_SKIP() << "managed memory is CUDA's";
  auto ctx = context();
  const MemoryInfo before = memory_info(ctx, 0);
  const std::size_t size = before.free + (std::size_t{1} << 30);
  try {
    allocate_managed(ctx, 0, size);
    ADD_FAILURE() << "a request beyond free memory was accepted";
  } catch (const MemoryError& e) {
    EXPECT_EQ(e.requested(), size);
    EXPECT_GT(e.available(), 0u);
    EXPECT_LE(e.available(), before.total);
    EXPECT_TRUE(contains(e.what(), "not enough device memory")) << e.what();
    EXPECT_TRUE(contains(e.what(), "cuMemAllocManaged")) << e.what();
  }
  // Nothing was allocated: free memory is as it was, give or take other processes' use.
  const MemoryInfo after = memory_info(ctx, 0);
  EXPECT_GE(after.free + (std::size_t{64} << 20), before.free);
}

// --- IPC handles, within one process -----------------------------------------------------------

TEST_P(Memory, IpcIsRefusedOnOpenCLWithWhatToUseInstead) {
  if (cuda()) GTEST_SKIP() << "CUDA has IPC (the other tests, and the MPI suite)";
  auto ctx = context();
  auto buffer = Buffer::allocate(ctx, 0, 256);
  std::string msg = logic_message_of([&] { export_ipc_memory(buffer); });
  EXPECT_TRUE(contains(msg, "not supported on OpenCL")) << msg;
  EXPECT_TRUE(contains(msg, "MPI")) << msg;
  msg = logic_message_of([&] { open_ipc_memory(ctx, 0, IpcMemoryHandle{}); });
  EXPECT_TRUE(contains(msg, "not supported on OpenCL")) << msg;
  msg = logic_message_of([&] { IpcEvent::create(ctx, 0); });
  EXPECT_TRUE(contains(msg, "not supported on OpenCL")) << msg;
  msg = logic_message_of([&] { IpcEvent::open(ctx, 0, IpcEventHandle{}); });
  EXPECT_TRUE(contains(msg, "not supported on OpenCL")) << msg;
  // Argument errors come first, on every backend.
  EXPECT_THROW(export_ipc_memory(Buffer{}), LogicError);
  EXPECT_THROW(open_ipc_memory(ctx, 9, IpcMemoryHandle{}), LogicError);
  EXPECT_THROW(IpcEvent::create(ctx, 9), LogicError);
  Queue queue(ctx);
  EXPECT_THROW(IpcEvent{}.record(queue), LogicError);
}

// The handle re-sealed after a change, as a sender on another host or device would have made it.
template <class Handle>
void reseal(Handle& handle) {
  handle.checksum = detail::ipc_checksum(&handle, offsetof(Handle, checksum));
}

TEST_P(Memory, IpcHandlesCarryTheViewAndAreCheckedBeforeOpening) {
  if (!cuda()) GTEST_SKIP() << "IPC is CUDA's (refusal checked above)";
  auto ctx = context();
  auto buffer = Buffer::allocate(ctx, 0, 4096);
  auto view = buffer.get_sub_region(100, 900);
  const IpcMemoryHandle handle = export_ipc_memory(view);
  EXPECT_EQ(handle.offset, 100u);
  EXPECT_EQ(handle.size, 900u);
  EXPECT_EQ(handle.process, static_cast<std::uint64_t>(getpid()));
  EXPECT_NE(std::string(handle.device), "");
  // The same allocation's handle from the whole buffer: same native bytes, offset 0.
  const IpcMemoryHandle whole = export_ipc_memory(buffer);
  EXPECT_EQ(whole.offset, 0u);
  EXPECT_EQ(whole.size, 4096u);
  // Plain bytes: a copy through a byte array (what MPI does) is the same handle.
  std::array<std::byte, sizeof(IpcMemoryHandle)> wire{};
  std::memcpy(wire.data(), &handle, sizeof(handle));
  IpcMemoryHandle received;
  std::memcpy(&received, wire.data(), sizeof(received));
  EXPECT_EQ(std::memcmp(&received, &handle, sizeof(handle)), 0);

  // Opened in the exporting process: refused (CUDA maps only other processes' memory).
  std::string msg = logic_message_of([&] { open_ipc_memory(ctx, 0, received); });
  EXPECT_TRUE(contains(msg, "exported by this process")) << msg;
  // Malformed: an all-zero handle, a changed byte, a changed version.
  msg = logic_message_of([&] { open_ipc_memory(ctx, 0, IpcMemoryHandle{}); });
  EXPECT_TRUE(contains(msg, "malformed")) << msg;
  IpcMemoryHandle damaged = handle;
  damaged.native[3] ^= 0x40;
  msg = logic_message_of([&] { open_ipc_memory(ctx, 0, damaged); });
  EXPECT_TRUE(contains(msg, "malformed")) << msg;
  damaged = handle;
  damaged.version = 99;
  reseal(damaged);
  msg = logic_message_of([&] { open_ipc_memory(ctx, 0, damaged); });
  EXPECT_TRUE(contains(msg, "malformed")) << msg;
  // A device this process does not see, and another host (well-formed otherwise).
  IpcMemoryHandle elsewhere = handle;
  std::memset(elsewhere.device, 0, sizeof(elsewhere.device));
  std::strcpy(elsewhere.device, "0000:ff:1f.7");
  reseal(elsewhere);
  msg = logic_message_of([&] { open_ipc_memory(ctx, 0, elsewhere); });
  EXPECT_TRUE(contains(msg, "0000:ff:1f.7")) << msg;
  EXPECT_TRUE(contains(msg, "does not see")) << msg;
  elsewhere = handle;
  elsewhere.host ^= 1;
  reseal(elsewhere);
  msg = logic_message_of([&] { open_ipc_memory(ctx, 0, elsewhere); });
  EXPECT_TRUE(contains(msg, "another host")) << msg;

  // Nothing to export: an empty buffer, managed memory.
  msg = logic_message_of([&] { export_ipc_memory(Buffer::allocate(ctx, 0, 0)); });
  EXPECT_TRUE(contains(msg, "empty")) << msg;
  msg = logic_message_of([&] { export_ipc_memory(allocate_managed(ctx, 0, 64)); });
  EXPECT_TRUE(contains(msg, "managed memory cannot be exported")) << msg;
}

TEST_P(Memory, IpcEventOrdersWorkAndIsCheckedBeforeOpening) {
  if (!cuda()) GTEST_SKIP() << "IPC is CUDA's";
  auto ctx = context();
  Queue queue(ctx);
  Queue other(ctx);
  Program program(ctx, kKernels);
  auto event = IpcEvent::create(ctx, 0);
  ASSERT_TRUE(event.valid());
  EXPECT_EQ(event.handle().process, static_cast<std::uint64_t>(getpid()));
  // Recorded after a kernel on one queue, waited for by another queue: the second sees the result.
  const int n = 1 << 20;
  const auto xs = random_values<int>(n, 17);
  auto x = Buffer::allocate(ctx, 0, n * sizeof(int));
  auto y = Buffer::allocate(ctx, 0, n * sizeof(int));
  auto z = Buffer::allocate(ctx, 0, n * sizeof(int));
  x.set(queue, std::span<const int>(xs));
  program.kernel("affine")(queue, std::size_t(n), std::nullopt, y, x, n);
  event.record(queue);
  other.wait_for(event.event());
  program.kernel("affine")(other, std::size_t(n), std::nullopt, z, y, n);
  std::vector<int> got(n);
  z.get(other, std::span<int>(got));
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += got[i] != 3 * (3 * xs[i] + 1) + 1;
  EXPECT_EQ(wrong, 0);
  event.event().wait();
  EXPECT_TRUE(event.event().query());
  EXPECT_THROW((void)event.event().time_since(event.event()), LogicError);  // no timing

  std::string msg = logic_message_of([&] { IpcEvent::open(ctx, 0, event.handle()); });
  EXPECT_TRUE(contains(msg, "exported by this process")) << msg;
  msg = logic_message_of([&] { IpcEvent::open(ctx, 0, IpcEventHandle{}); });
  EXPECT_TRUE(contains(msg, "malformed")) << msg;
  // A memory handle's bytes are not an event handle.
  IpcEventHandle wrong_kind{};
  static_assert(sizeof(IpcEventHandle) <= sizeof(IpcMemoryHandle));
  const IpcMemoryHandle memory = export_ipc_memory(x);
  std::memcpy(static_cast<void*>(&wrong_kind), &memory, sizeof(wrong_kind));
  msg = logic_message_of([&] { IpcEvent::open(ctx, 0, wrong_kind); });
  EXPECT_TRUE(contains(msg, "malformed")) << msg;
  // Bad input: a queue of another context, an index outside the context.
  auto other_ctx = Context::from_devices(ctx.device(0));
  EXPECT_THROW(event.record(Queue(other_ctx)), LogicError);
  EXPECT_THROW(IpcEvent::create(ctx, 3), LogicError);
}

// --- textures: what Skein offers instead (docs/guide.md, "Textures") ---------------------------

// The guide's kernel, character for character: bilinear interpolation from a global-memory field.
const char* kBilinear = R"(
KERNEL void bilinear(GLOBAL_MEM float* out, GLOBAL_MEM const float* field, int w, int h,
                     GLOBAL_MEM const float* xs, GLOBAL_MEM const float* ys, int n)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    // Clamped to the edges (NaN goes to 0); cell centres are at integer coordinates.
    float x = xs[i], y = ys[i];
    x = x >= 0.0f ? (x <= w - 1 ? x : (float)(w - 1)) : 0.0f;
    y = y >= 0.0f ? (y <= h - 1 ? y : (float)(h - 1)) : 0.0f;
    const int x0 = (int)x, y0 = (int)y;  // x, y >= 0: truncation is floor
    const int x1 = x0 + 1 < w ? x0 + 1 : x0;
    const int y1 = y0 + 1 < h ? y0 + 1 : y0;
    const float fx = x - x0, fy = y - y0;
    GLOBAL_MEM const float* row0 = field + (long)y0 * w;
    GLOBAL_MEM const float* row1 = field + (long)y1 * w;
    out[i] = (1.0f - fy) * ((1.0f - fx) * row0[x0] + fx * row0[x1])
           + fy * ((1.0f - fx) * row1[x0] + fx * row1[x1]);
}
)";

// The same interpolation on the host, in double precision.
double bilinear_reference(const std::vector<float>& field, int w, int h, float xf, float yf) {
  double x = xf, y = yf;
  x = x >= 0 ? (x <= w - 1 ? x : w - 1) : 0;
  y = y >= 0 ? (y <= h - 1 ? y : h - 1) : 0;
  const int x0 = static_cast<int>(x), y0 = static_cast<int>(y);
  const int x1 = std::min(x0 + 1, w - 1), y1 = std::min(y0 + 1, h - 1);
  const double fx = x - x0, fy = y - y0;
  const auto at = [&](int r, int c) { return static_cast<double>(field[std::size_t(r) * w + c]); };
  return (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) +
         fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1));
}

TEST_P(Memory, BilinearInterpolationFromGlobalMemoryMatchesTheHost) {
  auto ctx = context();
  Queue queue(ctx);
  Program program(ctx, kBilinear);
  // Fields of several shapes, among them one row, one column and one cell.
  for (const auto& [w, h] : std::vector<std::pair<int, int>>{{37, 23}, {1, 9}, {8, 1}, {1, 1}}) {
    const auto field = random_reals<float>(std::size_t(w) * h, 3 + w);
    // Random points over and past the field, the grid points, the corners, NaN and infinities.
    std::vector<float> xs = random_reals<float>(500, 7), ys = random_reals<float>(500, 8);
    for (std::size_t i = 0; i < xs.size(); ++i) {
      xs[i] = xs[i] / 1000.0f * (w + 2);  // (-w - 2, w + 2)
      ys[i] = ys[i] / 1000.0f * (h + 2);
    }
    for (int r = 0; r < h; ++r) {
      for (int c = 0; c < w; ++c) {
        xs.push_back(float(c));
        ys.push_back(float(r));
      }
    }
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (float special : {inf, -inf, nan, float(w - 1), -0.0f}) {
      xs.push_back(special);
      ys.push_back(0.5f);
      xs.push_back(0.25f);
      ys.push_back(special);
    }
    const int n = static_cast<int>(xs.size());
    auto d_field = Array::from_host(queue, field, Shape{std::size_t(h), std::size_t(w)});
    auto d_xs = Array::from_host(queue, xs);
    auto d_ys = Array::from_host(queue, ys);
    auto d_out = Array::empty(queue, Shape{std::size_t(n)}, dtype_of<float>);
    program.kernel("bilinear")(queue, std::size_t(n), std::nullopt, d_out, d_field, w, h, d_xs,
                               d_ys, n);
    std::vector<float> got(n);
    d_out.get(std::span<float>(got));
    int wrong = 0;
    for (int i = 0; i < n; ++i) {
      const double expected = bilinear_reference(field, w, h, xs[i], ys[i]);
      if (!(std::abs(got[i] - expected) <= 1e-3)) {  // values are below 1000: ~1e-6 relative
        if (wrong++ < 5)
          ADD_FAILURE() << w << "x" << h << " at (" << xs[i] << ", " << ys[i] << "): " << got[i]
                        << ", expected " << expected;
      }
    }
    EXPECT_EQ(wrong, 0) << w << "x" << h;
  }
}

// --- values the host reads (detail::HostValues, behind dist::sum, min, max and dot) -------------

// Reductions on every device of the context write into HostValues' arrays; read() gives each
// device's value in the order asked for, against sums computed on the host: int64 (exact) and
// float64, inputs of 0, 1 and 100003 elements, two sets in use at once (their memory must not be
// shared), a set dropped without a read (its memory is handed out again only after the devices
// are done) and sets taken again from the queue's free list.
TEST_P(Memory, HostValuesReadWhatReductionsWroteOnEveryDevice) {
  const std::size_t ndev = std::min<std::size_t>(devices().size(), 4);
  const Context ctx = context(ndev);
  const Queue queue(ctx);  // every device of the context
  // Devices in reverse order: the values must come back in the order asked for.
  std::vector<std::size_t> order;
  for (std::size_t d = ndev; d-- > 0;) order.push_back(d);
  const std::size_t sizes[] = {0, 1, 100003};
  for (int round = 0; round < 3; ++round) {
    for (std::size_t n : sizes) {
      std::vector<Array> xs, ys;
      std::vector<std::int64_t> want_i;
      std::vector<double> want_f;
      for (std::size_t k = 0; k < order.size(); ++k) {
        std::vector<std::int64_t> hi(n);
        std::vector<double> hf(n);
        std::int64_t si = 0;
        double sf = 0;
        for (std::size_t i = 0; i < n; ++i) {
          hi[i] = static_cast<std::int64_t>((i * 7919 + k * 104729 + round) % 2003) - 1000;
          hf[i] = static_cast<double>(hi[i]) * 0.5;  // exact in float64: sums are exact too
          si += hi[i];
          sf += hf[i];
        }
        want_i.push_back(si);
        want_f.push_back(sf);
        xs.push_back(Array::from_host(queue, std::span<const std::int64_t>(hi), {n}, order[k]));
        ys.push_back(Array::from_host(queue, std::span<const double>(hf), {n}, order[k]));
      }
      detail::HostValues ints(queue, order, Dtype::int64);
      detail::HostValues reals(queue, order, Dtype::float64);
      EXPECT_EQ(ints.mapped(), GetParam().api == ApiId::cuda);
      ASSERT_EQ(ints.arrays().size(), order.size());
      {
        // Dropped without a read, with work writing it pending: must not disturb the others.
        detail::HostValues dropped(queue, order, Dtype::int64);
        for (std::size_t k = 0; k < order.size(); ++k) {
          EXPECT_EQ(dropped.arrays()[k].device_idx(), order[k]);
          skein::sum(queue, xs[k], {.out = dropped.arrays()[k]});
        }
      }
      for (std::size_t k = 0; k < order.size(); ++k) {
        skein::sum(queue, xs[k], {.out = ints.arrays()[k]});
        skein::sum(queue, ys[k], {.out = reals.arrays()[k]});
      }
      std::vector<std::int64_t> got_i(order.size());
      std::vector<double> got_f(order.size());
      ints.read(std::as_writable_bytes(std::span<std::int64_t>(got_i)));
      reals.read(std::as_writable_bytes(std::span<double>(got_f)));
      EXPECT_EQ(got_i, want_i) << "n = " << n << ", round " << round;
      EXPECT_EQ(got_f, want_f) << "n = " << n << ", round " << round;
    }
  }
  // A wrong size of the destination is refused, not written past; so is a device listed twice
  // (its two values would share one slot).
  detail::HostValues one(queue, order, Dtype::float32);
  std::vector<std::byte> small(order.size() * 4 - 1);
  EXPECT_THROW(one.read(small), LogicError);
  const std::size_t twice[] = {0, 0};
  EXPECT_THROW(detail::HostValues(queue, twice, Dtype::float32), LogicError);
}

SKEIN_INSTANTIATE_BACKENDS(Memory);

}  // namespace memory_test
}  // namespace
}  // namespace skein::test

// SPDX-License-Identifier: BSD-3-Clause
// Arrays given to kernels must be on the device the kernel runs on. A launch on several devices
// given one device's Array, or a per-device list holding another device's array, is a LogicError
// naming the argument, the array's device and the launch's device; nothing is launched. The right
// multi-device usage (MultiDevice<Array>, per_device()) computes what the host computes.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "backends.hpp"
#include "checks.hpp"

namespace skein::test {
namespace {
namespace device_arguments_test {

class DeviceArguments : public BackendTest {
 protected:
  std::size_t ndev() const { return std::min<std::size_t>(devices().size(), 4); }
};

// The message of the LogicError that f() must throw ("" and a failure otherwise).
template <class F>
std::string logic_error_of(F&& f) {
  try {
    f();
  } catch (const LogicError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a LogicError: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no exception";
  return "";
}

template <class T>
std::vector<T> values(std::size_t n, int seed) {
  std::vector<T> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = static_cast<T>(
        static_cast<int>((i * 37 + static_cast<std::size_t>(seed) * 101) % 1999) - 999);
  }
  return out;
}

const char* kScaleAdd = R"(
KERNEL void scale_add(GLOBAL_MEM int* y, GLOBAL_MEM const int* x, int a, int n)
{
    const int i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}
)";

TEST_P(DeviceArguments, RawLaunchTakesEachDevicesArraysAndRefusesAnotherDevicesArray) {
  SKEIN_NEED_DEVICES(2);
  const std::size_t nd = ndev();
  auto ctx = context(nd);
  Queue queue(ctx);
  Program program(ctx, kScaleAdd);
  const std::size_t n = 256;
  const auto n32 = static_cast<std::int32_t>(n);
  auto kernel = program.kernel("scale_add").prepare(queue, n);

  std::vector<std::vector<std::int32_t>> xs, ys;
  MultiDevice<Array> dx, dy;
  for (std::size_t d = 0; d < nd; ++d) {
    xs.push_back(values<std::int32_t>(n, 3 + static_cast<int>(d)));
    ys.push_back(values<std::int32_t>(n, 11 + static_cast<int>(d)));
    dx.set(d, Array::from_host(queue, xs[d], {}, d));
    dy.set(d, Array::from_host(queue, ys[d], {}, d));
  }
  // Right: every device its own arrays.
  kernel(dy, dx, std::int32_t{3}, n32);
  std::vector<std::vector<std::int32_t>> expected(nd);
  for (std::size_t d = 0; d < nd; ++d) {
    for (std::size_t i = 0; i < n; ++i) expected[d].push_back(3 * xs[d][i] + ys[d][i]);
    ASSERT_EQ(dy[d].get<std::int32_t>(), expected[d]) << "device " << d;
  }

  // Device 0's array given to every device: refused, and not launched on device 0 either.
  std::string what = logic_error_of([&] { kernel(dy[0], dx, std::int32_t{3}, n32); });
  EXPECT_TRUE(contains(what, "PreparedKernel")) << what;
  EXPECT_TRUE(contains(what, "kernel 'scale_add' on " + ctx.device(1).description())) << what;
  EXPECT_TRUE(contains(what, "argument 0: the array is on device 0, this launch is on device 1"))
      << what;
  EXPECT_TRUE(contains(what, "MultiDevice<Array>")) << what;  // the hint
  what = logic_error_of([&] { (void)kernel.enqueue(dy, dx[0], std::int32_t{3}, n32); });
  EXPECT_TRUE(contains(what, "argument 1: the array is on device 0, this launch is on device 1"))
      << what;
  // A per-device list whose last entry is device 0's array.
  MultiDevice<Array> mixed = dx;
  mixed.set(nd - 1, dx[0]);
  what = logic_error_of([&] { kernel(dy, mixed, std::int32_t{3}, n32); });
  EXPECT_TRUE(contains(
      what,
      fmt::format("argument 1: the array is on device 0, this launch is on device {}", nd - 1)))
      << what;
  // On some devices only.
  const std::size_t second[] = {1};
  what = logic_error_of(
      [&] { kernel.on_devices(std::span(second), dy[0], dx, std::int32_t{3}, n32); });
  EXPECT_TRUE(contains(what, "the array is on device 0, this launch is on device 1")) << what;
  // A kernel prepared for a queue of device 1 alone, given device 0's array.
  Queue queue1(ctx, {1});
  auto on1 = program.kernel("scale_add").prepare(queue1, n);
  what = logic_error_of([&] { on1(dy[1], dx[0], std::int32_t{3}, n32); });
  EXPECT_TRUE(contains(what, "argument 1: the array is on device 0, this launch is on device 1"))
      << what;
  queue.synchronize();
  for (std::size_t d = 0; d < nd; ++d) {
    EXPECT_EQ(dy[d].get<std::int32_t>(), expected[d]) << "a refused launch ran on device " << d;
  }

  // Device 0's array viewed from device 1 is device 1's argument, where the backend lets device 1
  // reach device 0's memory (OpenCL: always; CUDA: with peer access).
  std::optional<Array> seen;
  try {
    seen = dx[0].single_device_view(1);
  } catch (const LogicError&) {
  }
  if (seen) {
    on1(dy[1], *seen, std::int32_t{-2}, n32);
    queue1.synchronize();
    std::vector<std::int32_t> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = -2 * xs[0][i] + expected[1][i];
    EXPECT_EQ(dy[1].get<std::int32_t>(), want);
  }
}

TEST_P(DeviceArguments, ElementwiseTakesEachDevicesArraysAndRefusesAnotherDevicesArray) {
  SKEIN_NEED_DEVICES(2);
  const std::size_t nd = ndev();
  auto ctx = context(nd);
  Queue queue(ctx);
  ElementwiseKernel kernel("int32 s, int32 x, int32 y", "int32 z", "z = s * x + y",
                           {.name = "scale_add_ew"});
  MultiDevice<std::vector<Operand>> args;
  std::vector<std::vector<std::int32_t>> xs, ys;
  std::vector<Array> dx, dy;
  for (std::size_t d = 0; d < nd; ++d) {
    const std::size_t n = 300 + 41 * d;
    xs.push_back(values<std::int32_t>(n, 5 + static_cast<int>(d)));
    ys.push_back(values<std::int32_t>(n, 9 + static_cast<int>(d)));
    dx.push_back(Array::from_host(queue, xs[d], {}, d));
    dy.push_back(Array::from_host(queue, ys[d], {}, d));
    args.set(d, {std::int32_t{-7}, dx[d], dy[d]});
  }
  const auto outs = kernel.per_device(queue, args);
  for (std::size_t d = 0; d < nd; ++d) {
    ASSERT_EQ(outs[d].front().device_idx(), d);
    std::vector<std::int32_t> want(xs[d].size());
    for (std::size_t i = 0; i < want.size(); ++i) want[i] = -7 * xs[d][i] + ys[d][i];
    EXPECT_EQ(outs[d].front().get<std::int32_t>(), want) << "device " << d;
  }

  // Device 1's list holding an x on device 0.
  auto wrong = args;
  wrong.set(1, {std::int32_t{-7}, Array::from_host(queue, xs[1], {}, 0), dy[1]});
  std::string what = logic_error_of([&] { (void)kernel.per_device(queue, wrong); });
  EXPECT_TRUE(contains(what, "ElementwiseKernel")) << what;
  EXPECT_TRUE(
      contains(what,
               "kernel 'scale_add_ew': argument 1 ('x') is on device 0, but it was given for "
               "the launch on device 1"))
      << what;
  EXPECT_TRUE(contains(what, "one array per device")) << what;  // the hint
  // One launch over arrays of two devices.
  what = logic_error_of([&] {
    (void)kernel(queue, {std::int32_t{1}, dx[0], dy[1].view(0, dx[0].shape())});
  });
  EXPECT_TRUE(contains(what, "argument 1 ('x') is on device 0, argument 2 ('y') on device 1"))
      << what;
  // An output on another device than the inputs.
  what = logic_error_of([&] {
    (void)kernel(queue, {std::int32_t{1}, dx[1], dy[1],
                         Array::empty(queue, dx[1].shape(), Dtype::int32, 0)});
  });
  EXPECT_TRUE(contains(what, "argument 1 ('x') is on device 1, argument 3 ('z') on device 0"))
      << what;
  // A built-in operation.
  what = logic_error_of(
      [&] { (void)binary(queue, BinaryOp::add, dx[0], dy[1].view(0, dx[0].shape())); });
  EXPECT_TRUE(contains(what, "('a') is on device 0, argument 1 ('b') on device 1")) << what;
}

TEST_P(DeviceArguments, ReductionTakesEachDevicesArraysAndRefusesAnotherDevicesArray) {
  SKEIN_NEED_DEVICES(2);
  const std::size_t nd = ndev();
  auto ctx = context(nd);
  Queue queue(ctx);
  ReductionKernel dot("int64 x, int64 y", "int64 r", "x * y", "a + b", "0", {.name = "dot_i64"});
  MultiDevice<std::vector<Operand>> inputs;
  std::vector<std::vector<std::int64_t>> xs, ys;
  std::vector<Array> dx, dy;
  std::int64_t want = 0;
  for (std::size_t d = 0; d < nd; ++d) {
    const std::size_t n = 1000 + 333 * d;
    xs.push_back(values<std::int64_t>(n, 2 + static_cast<int>(d)));
    ys.push_back(values<std::int64_t>(n, 7 + static_cast<int>(d)));
    for (std::size_t i = 0; i < n; ++i) want += xs[d][i] * ys[d][i];
    dx.push_back(Array::from_host(queue, xs[d], {}, d));
    dy.push_back(Array::from_host(queue, ys[d], {}, d));
    inputs.set(d, {dx[d], dy[d]});
  }
  EXPECT_EQ(dot.per_device(queue, inputs).get<std::int64_t>(), std::vector<std::int64_t>{want});
  EXPECT_EQ(dot.per_device(queue, inputs, {.deterministic = true}).get<std::int64_t>(),
            std::vector<std::int64_t>{want});

  // Device 1's inputs holding a y on device 0.
  auto wrong = inputs;
  wrong.set(1, {dx[1], Array::from_host(queue, ys[1], {}, 0)});
  std::string what = logic_error_of([&] { (void)dot.per_device(queue, wrong); });
  EXPECT_TRUE(contains(what, "ReductionKernel::per_device")) << what;
  EXPECT_TRUE(
      contains(what,
               "kernel 'dot_i64': argument 1 ('y') is on device 0, but it was given for the "
               "launch on device 1"))
      << what;
  // One reduction over arrays of two devices, and the built-in dot.
  what = logic_error_of([&] { (void)dot(queue, {dx[0], dy[1].view(0, dx[0].shape())}); });
  EXPECT_TRUE(contains(what, "argument 0 ('x') is on device 0, argument 1 ('y') on device 1"))
      << what;
  what = logic_error_of([&] { (void)skein::dot(queue, dx[1].view(0, dy[0].shape()), dy[0]); });
  EXPECT_TRUE(contains(what, "is on device 1, argument 1 ('y') on device 0")) << what;
}

SKEIN_INSTANTIATE_BACKENDS(DeviceArguments);

}  // namespace device_arguments_test
}  // namespace
}  // namespace skein::test

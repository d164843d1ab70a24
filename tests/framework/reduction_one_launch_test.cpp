// SPDX-License-Identifier: BSD-3-Clause
// Whole-array reductions of several groups in one launch (skein/detail/reduction_paths.hpp): where
// the devices allow it, sizes and kernels against the two-launch form and the host, the group
// counter reset by every call, two queues of one device, every device of a queue, and the
// source through NVRTC.
#include <gtest/gtest.h>

#include <algorithm>
#include <complex>
#include <cstring>
#include <numeric>
#include <random>
#include <skein/config.hpp>
#include <skein/skein.hpp>

#include "backends.hpp"
#include "reduction_checks.hpp"
#include "skein/detail/cuda/prelude.hpp"
#include "skein/detail/reduction_paths.hpp"

#if SKEIN_HAS_CUDA
#include <nvrtc.h>
#endif

namespace skein::test {
namespace {
namespace reduction_one_launch_test {

class ReductionOneLaunch : public BackendTest {};

//
// Where the devices guarantee device-scope fences (every CUDA device; OpenCL C 2.0, or OpenCL C
// 3.0 with __opencl_c_atomic_order_acq_rel and __opencl_c_atomic_scope_device), the last group of
// K_p1 to finish reduces the partial values; elsewhere K_p2 does, in a second launch. The tests
// check which way each call went, compare the results with host references and, bit for bit,
// with the two-launch path (forced through the internal switch).

using detail::red::Finish;

// How later calls finish, for the object's lifetime; back to automatic afterwards.
class FinishSetting {
 public:
  explicit FinishSetting(Finish finish) { detail::red::set_finish_for_tests(finish); }
  ~FinishSetting() { detail::red::set_finish_for_tests(Finish::automatic); }
  FinishSetting(const FinishSetting&) = delete;
  FinishSetting& operator=(const FinishSetting&) = delete;
};

// What the device parameters promise, decided here from the OpenCL C versions and features alone.
bool devices_have_device_fences(const Context& ctx) {
  if (ctx.api().id() == ApiId::cuda) return true;
  std::string common;
  for (const auto& device : ctx.devices()) {
    const auto& p = device.params();
    const auto has_version = [&](int major, int minor) {
      return std::count(p.opencl_c_versions.begin(), p.opencl_c_versions.end(),
                        std::pair{major, minor}) > 0;
    };
    const auto has_feature = [&](const char* f) {
      return std::count(p.opencl_c_features.begin(), p.opencl_c_features.end(), std::string(f)) > 0;
    };
    std::string std_option;
    if (has_version(2, 0)) {
      std_option = "CL2.0";
    } else if (has_version(3, 0) && has_feature("__opencl_c_atomic_order_acq_rel") &&
               has_feature("__opencl_c_atomic_scope_device")) {
      std_option = "CL3.0";
    }
    if (std_option.empty() || (!common.empty() && common != std_option)) return false;
    common = std_option;
  }
  return true;
}

// How one call finished.
struct Went {
  std::uint64_t one_group = 0, one_launch = 0, two_launches = 0;
  std::size_t groups = 0;
};

template <class F>
Went went(F&& call) {
  const auto before = detail::red::finish_counts();
  call();
  const auto after = detail::red::finish_counts();
  return {after.one_group - before.one_group, after.one_launch - before.one_launch,
          after.two_launches - before.two_launches, after.last_groups};
}

// The result's bytes (to compare the paths bit for bit).
std::vector<std::byte> result_bytes(const Array& y) {
  std::vector<std::byte> out(y.nbytes());
  y.data().get_sub_region(y.offset(), y.nbytes()).get(y.queue(), out);
  return out;
}

// A result array of `dtype` holding `fill` bytes (0xff: a NaN for floats), so that a result that
// is never written shows.
Array poisoned(const Queue& queue, Dtype dtype, std::size_t device = 0) {
  std::vector<std::uint8_t> bytes(itemsize(dtype), 0xff);
  Array a = Array::empty(queue, {1}, dtype, device);
  a.data().get_sub_region(a.offset(), a.nbytes()).set(queue, std::as_bytes(std::span(bytes)));
  return a;
}

TEST_P(ReductionOneLaunch, OneLaunchWhereTheDevicesHaveDeviceScopeFences) {
  auto ctx = context();
  Queue queue(ctx);
  const bool expected = devices_have_device_fences(ctx);
  EXPECT_EQ(detail::red::one_launch_supported(queue), expected);
  if (GetParam().api == ApiId::cuda) {
    EXPECT_TRUE(detail::red::one_launch_supported(queue));
  }
  // For the log: which path this backend's reductions of several groups take.
  std::cout << "[ note     ] " << ctx.device(0).description() << ": "
            << (expected
                    ? "one launch"
                    : "two launches (no device-scope acquire/release in its OpenCL C; the "
                      "one-launch code is checked by OneLaunchSourceCompilesWithNvrtc and on CUDA)")
            << "\n";
}

// Sums, minima, maxima and user kernels (a post-map, a struct reduce type) at sizes of one group,
// exactly two, around group multiples and of many groups: each call's path and group count, its
// result against the host, and its bits against the two-launch path's; the first call of a
// kernel object goes the full way, the next ones through its kept plan.
TEST_P(ReductionOneLaunch, OneLaunchSizesAndKernelsMatchTwoLaunches) {
  auto ctx = context();
  Queue queue(ctx);
  const bool one = detail::red::one_launch_supported(queue);
  FinishSetting automatic(Finish::automatic);
  // The smallest float32 sum of two groups: group counts grow by one at a time with n.
  const auto groups_of = [&](std::size_t n) {
    const auto x = Array::zeros(queue, {n}, Dtype::float32);
    return went([&] { sum(queue, x); }).groups;
  };
  std::size_t hi = 1;
  while (groups_of(hi) < 2) hi *= 2;
  std::size_t lo = hi / 2;
  while (hi - lo > 1) {
    const std::size_t mid = (lo + hi) / 2;
    if (groups_of(mid) >= 2) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  const std::size_t b = hi;
  ASSERT_EQ(groups_of(b - 1), 1u);
  ASSERT_EQ(groups_of(b), 2u);

  ReductionKernel norm1("float32 x", "float64 y", "(double)x * (double)x", "a + b", "0",
                        {.post_map = "y = sqrt(a) + 1.0", .name = "onelaunch_norm1"});
  StructType vi{{"v", Dtype::float32}, {"i", Dtype::int64}};
  ReductionKernel argmin("float32 x", "int64 y", "pair(x, (int64_t)i)", "better(a, b)",
                         "pair(1e30f, -1)",
                         {.post_map = "y = a.i * 2 + 1",
                          .reduce_struct = vi,
                          .preamble = R"(
WITHIN_KERNEL INLINE reduce_t pair(float v, int64_t i) { reduce_t r; r.v = v; r.i = i; return r; }
WITHIN_KERNEL INLINE reduce_t better(reduce_t a, reduce_t b)
{
    if (a.v < b.v || (a.v == b.v && a.i < b.i)) return a;
    return b;
}
)",
                          .name = "onelaunch_argmin"});

  std::size_t most_groups = 0;
  const std::size_t sizes[] = {
      1,         2,         3,         1000,      b - 1,     b,     b + 1,
      2 * b - 3, 2 * b - 2, 2 * b - 1, 2 * b + 1, 3 * b + 7, 65537, (std::size_t{1} << 20) + 3};
  for (std::size_t n : sizes) {
    SCOPED_TRACE(fmt::format("n = {} (b = {})", n, b));
    const auto x = random_reals<float>(n, static_cast<std::uint32_t>(700 + n % 1000));
    const Array dx = Array::from_host(queue, x);
    std::vector<std::int8_t> x8(n);
    std::vector<std::int16_t> x16(n);
    std::vector<std::complex<float>> xc(n);
    for (std::size_t i = 0; i < n; ++i) {
      x8[i] = static_cast<std::int8_t>((i * 37 + n) % 251);
      x16[i] = static_cast<std::int16_t>((i * 7919 + n) % 60000 - 30000);
      xc[i] = {x[i], x[n - 1 - i] * 0.5f};
    }
    const Array d8 = Array::from_host(queue, x8), d16 = Array::from_host(queue, x16);
    const Array dc = Array::from_host(queue, xc);
    std::vector<double> xd(x.begin(), x.end());
    const Array dd = Array::from_host(queue, xd);

    double exact = 0, mag = 0, ssq = 0;
    std::complex<double> csum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      exact += x[i];
      mag += std::fabs(x[i]);
      ssq += static_cast<double>(x[i]) * x[i];
      csum += std::complex<double>(xc[i]);
    }
    const auto imin = std::min_element(x.begin(), x.end()) - x.begin();

    struct Case {
      const char*
          what;  // starting with "sum float32", "min float32", ..., "user" for float32 inputs
      std::function<Array()> call;
      std::function<void(const Array&)> check;
    };
    const std::vector<Case> cases{
        {"sum float32", [&] { return sum(queue, dx); },
         [&](const Array& y) {
           EXPECT_LE(std::fabs(reduction_value<float>(y) - exact), 2e-5 * mag + 1e-30);
         }},
        {"min float32", [&] { return min(queue, dx); },
         [&](const Array& y) {
           EXPECT_EQ(reduction_value<float>(y), *std::min_element(x.begin(), x.end()));
         }},
        {"max float32", [&] { return max(queue, dx); },
         [&](const Array& y) {
           EXPECT_EQ(reduction_value<float>(y), *std::max_element(x.begin(), x.end()));
         }},
        {"min int8", [&] { return min(queue, d8); },
         [&](const Array& y) {
           EXPECT_EQ(reduction_value<std::int8_t>(y), *std::min_element(x8.begin(), x8.end()));
         }},
        {"max int16", [&] { return max(queue, d16); },
         [&](const Array& y) {
           EXPECT_EQ(reduction_value<std::int16_t>(y), *std::max_element(x16.begin(), x16.end()));
         }},
        {"sum complex64", [&] { return sum(queue, dc); },
         [&](const Array& y) {
           const auto v = reduction_value<std::complex<float>>(y);
           EXPECT_LE(std::abs(std::complex<double>(v) - csum), 4e-5 * 2 * mag + 1e-30);
         }},
        {"nrm2 float64 (struct)", [&] { return nrm2(queue, dd); },
         [&](const Array& y) {
           EXPECT_LE(std::fabs(reduction_value<double>(y) - std::sqrt(ssq)),
                     1e-12 * std::sqrt(ssq));
         }},
        {"user post-map, float64", [&] { return norm1(queue, {dx}); },
         [&](const Array& y) {
           const double e = std::sqrt(ssq) + 1.0;
           EXPECT_LE(std::fabs(reduction_value<double>(y) - e), 1e-12 * e);
         }},
        {"user struct", [&] { return argmin(queue, {dx}); },
         [&](const Array& y) { EXPECT_EQ(reduction_value<std::int64_t>(y), imin * 2 + 1); }},
    };
    const bool fp64 = ctx.device(0).params().supports_float64;
    for (const auto& c : cases) {
      SCOPED_TRACE(c.what);
      if (!fp64 && std::string(c.what).find("float64") != std::string::npos) continue;
      std::optional<Array> first, kept, two;
      const Went w1 = went([&] { first = c.call(); });
      const Went w2 = went([&] { kept = c.call(); });
      Went w3;
      {
        FinishSetting forced(Finish::two_launches);
        w3 = went([&] { two = c.call(); });
      }
      c.check(*first);
      c.check(*kept);
      c.check(*two);
      EXPECT_EQ(result_bytes(*first), result_bytes(*two)) << "one launch and two launches differ";
      EXPECT_EQ(result_bytes(*kept), result_bytes(*two)) << "the kept plan and two launches differ";
      for (const Went& w : {w1, w2, w3}) {
        EXPECT_EQ(w.one_group + w.one_launch + w.two_launches, 1u);
        EXPECT_EQ(w.groups, w1.groups);
      }
      const std::string what = c.what;
      if (n < b && (what.find("float32") != std::string::npos || what.rfind("user", 0) == 0)) {
        EXPECT_EQ(w1.groups, 1u);  // b is the float32 sum's; 16-byte elements group otherwise
      }
      if (w1.groups == 1) {
        EXPECT_EQ(w1.one_group + w2.one_group + w3.one_group, 3u);
      } else {
        EXPECT_EQ(w1.one_launch, one ? 1u : 0u);
        EXPECT_EQ(w2.one_launch, one ? 1u : 0u);
        EXPECT_EQ(w3.two_launches, 1u);
      }
      if (std::string(c.what) == "sum float32") {
        if (n == b || n == b + 1) {
          EXPECT_EQ(w1.groups, 2u);
        }
        most_groups = std::max(most_groups, w1.groups);
      }
    }
  }
  EXPECT_GT(most_groups, 2u) << "no size ran many groups";
}

// The same call 50 times in a row without waiting, then alternating group counts and kernels on
// one queue (they share its counter): every result must be there, so each call reset the counter.
TEST_P(ReductionOneLaunch, OneLaunchCounterIsResetByEveryCall) {
  auto ctx = context();
  Queue queue(ctx);
  const bool one = detail::red::one_launch_supported(queue);
  FinishSetting automatic(Finish::automatic);
  const std::size_t n_many = (std::size_t{1} << 20) + 3, n_few = 5000;
  const auto xm = random_reals<float>(n_many, 81), xf = random_reals<float>(n_few, 82);
  const Array dm = Array::from_host(queue, xm), df = Array::from_host(queue, xf);
  ReductionKernel shifted("float32 x", "float32 y", "x", "a + b", "0",
                          {.post_map = "y = a * 0.5f + 3.0f", .name = "onelaunch_shifted"});
  // References through two launches.
  std::vector<std::byte> ref_m, ref_f, ref_s;
  std::size_t groups_m = 0, groups_f = 0;
  {
    FinishSetting forced(Finish::two_launches);
    groups_m = went([&] { ref_m = result_bytes(sum(queue, dm)); }).groups;
    groups_f = went([&] { ref_f = result_bytes(sum(queue, df)); }).groups;
    ref_s = result_bytes(shifted(queue, {df}));
  }
  ASSERT_GT(groups_m, 2u);
  ASSERT_GE(groups_f, 2u);
  ASSERT_NE(groups_m, groups_f);
  expect_close_sum(reduction_value<float>(sum(queue, dm)), xm);

  constexpr int kCalls = 50;
  std::vector<Array> outs;
  for (int i = 0; i < kCalls; ++i) outs.push_back(poisoned(queue, Dtype::float32));
  const auto before = detail::red::finish_counts();
  for (int i = 0; i < kCalls; ++i) sum(queue, dm, {.out = outs[i]});
  for (int i = 0; i < kCalls; ++i) {
    EXPECT_EQ(result_bytes(outs[i]), ref_m) << "call " << i;
    outs[i] = poisoned(queue, Dtype::float32);
  }
  for (int i = 0; i < kCalls; ++i) {
    if (i % 3 == 0) sum(queue, dm, {.out = outs[i]});
    if (i % 3 == 1) sum(queue, df, {.out = outs[i]});
    if (i % 3 == 2) shifted(queue, {df}, {.out = outs[i]});
  }
  for (int i = 0; i < kCalls; ++i) {
    EXPECT_EQ(result_bytes(outs[i]), i % 3 == 0   ? ref_m
                                     : i % 3 == 1 ? ref_f
                                                  : ref_s)
        << "call " << i;
  }
  const auto after = detail::red::finish_counts();
  EXPECT_EQ(after.one_launch - before.one_launch, one ? 2u * kCalls : 0u);
  EXPECT_EQ(after.two_launches - before.two_launches, one ? 0u : 2u * kCalls);
}

// Two queues of one device, calls interleaved without waiting: each queue counts in its own word
// (copies of a queue share it), and both queues' results are right.
TEST_P(ReductionOneLaunch, OneLaunchOnTwoQueuesOfOneDevice) {
  auto ctx = context();
  Queue q1(ctx), q2(ctx);
  const Queue q1_copy = q1;
  EXPECT_NE(detail::red::group_counter_id(q1, 0), detail::red::group_counter_id(q2, 0));
  EXPECT_EQ(detail::red::group_counter_id(q1, 0), detail::red::group_counter_id(q1_copy, 0));
  FinishSetting automatic(Finish::automatic);
  const std::size_t n1 = (std::size_t{1} << 20) + 3, n2 = 300007;
  const auto x1 = random_reals<float>(n1, 91), x2 = random_reals<float>(n2, 92);
  const Array d1 = Array::from_host(q1, x1), d2 = Array::from_host(q1, x2);
  std::vector<std::byte> ref1, ref2;
  {
    FinishSetting forced(Finish::two_launches);
    ref1 = result_bytes(sum(q1, d1));
    ref2 = result_bytes(max(q1, d2));
  }
  expect_close_sum(reduction_value<float>(sum(q1, d1)), x1);
  EXPECT_EQ(reduction_value<float>(max(q1, d2)), *std::max_element(x2.begin(), x2.end()));
  constexpr int kCalls = 50;
  std::vector<Array> out1, out2;
  for (int i = 0; i < kCalls; ++i) {
    out1.push_back(poisoned(q1, Dtype::float32));
    out2.push_back(poisoned(q1, Dtype::float32));
  }
  q1.synchronize();
  for (int i = 0; i < kCalls; ++i) {
    sum(q1, d1, {.out = out1[i]});
    max(q2, d2, {.out = out2[i]});
  }
  q1.synchronize();
  q2.synchronize();
  for (int i = 0; i < kCalls; ++i) {
    EXPECT_EQ(result_bytes(out1[i]), ref1) << "queue 1, call " << i;
    EXPECT_EQ(result_bytes(out2[i]), ref2) << "queue 2, call " << i;
  }
}

// Every device of a context has its own word: calls on all devices of one queue at once.
TEST_P(ReductionOneLaunch, OneLaunchOnEveryDeviceOfAQueue) {
  const std::size_t ndev = std::min<std::size_t>(devices().size(), 4);
  auto ctx = context(ndev);
  Queue queue(ctx);
  FinishSetting automatic(Finish::automatic);
  std::vector<Array> xs;
  std::vector<std::vector<float>> hosts;
  std::vector<std::vector<std::byte>> refs;
  for (std::size_t d = 0; d < ndev; ++d) {
    hosts.push_back(random_reals<float>(200003 + 1000 * d, static_cast<std::uint32_t>(95 + d)));
    xs.push_back(Array::from_host(queue, hosts.back(), {}, d));
    FinishSetting forced(Finish::two_launches);
    refs.push_back(result_bytes(sum(queue, xs.back())));
  }
  for (std::size_t d = 1; d < ndev; ++d) {
    EXPECT_NE(detail::red::group_counter_id(queue, d), detail::red::group_counter_id(queue, 0));
  }
  std::vector<Array> outs;
  for (int i = 0; i < 20; ++i) {
    for (std::size_t d = 0; d < ndev; ++d) outs.push_back(poisoned(queue, Dtype::float32, d));
  }
  for (int i = 0; i < 20; ++i) {
    for (std::size_t d = 0; d < ndev; ++d) sum(queue, xs[d], {.out = outs[i * ndev + d]});
  }
  for (int i = 0; i < 20; ++i) {
    for (std::size_t d = 0; d < ndev; ++d) {
      EXPECT_EQ(result_bytes(outs[i * ndev + d]), refs[d]) << "device " << d << ", call " << i;
    }
  }
  for (std::size_t d = 0; d < ndev; ++d)
    expect_close_sum(reduction_value<float>(outs[d]), hosts[d]);
}

#if SKEIN_HAS_CUDA
// The one-launch code for CUDA compiles with NVRTC (on any machine, GPU or not) and has what the
// pattern needs: a device-scope fence, the atomic add and volatile loads of the partial values.
TEST_P(ReductionOneLaunch, OneLaunchSourceCompilesWithNvrtc) {
  auto ctx = context();
  Queue queue(ctx);
  const auto x = Array::zeros(queue, {10}, Dtype::float32);
  const auto x8 = Array::zeros(queue, {10}, Dtype::int8);
  const auto x16 = Array::zeros(queue, {10}, Dtype::int16);
  const auto xd = Array::zeros(queue, {10}, Dtype::float64);
  const auto xc = Array::zeros(queue, {10}, Dtype::complex64);
  const std::vector<std::pair<const ReductionKernel*, Array>> kernels{
      {&sum_kernel(Dtype::float32), x},
      {&min_kernel(Dtype::int8), x8},
      {&max_kernel(Dtype::int16), x16},
      {&nrm2_kernel(Dtype::float64), xd},
      {&sum_kernel(Dtype::complex64), xc}};
  for (const auto& [kernel, input] : kernels) {
    SCOPED_TRACE(kernel->name());
    const std::vector<Operand> in{input};
    const std::string source = std::string(detail::cuda::prelude) +
                               detail::red::fast_source_for_tests(*kernel, queue, in, true);
    nvrtcProgram program;
    ASSERT_EQ(nvrtcCreateProgram(&program, source.c_str(), "onelaunch.cu", 0, nullptr, nullptr),
              NVRTC_SUCCESS);
    const char* options[] = {"--gpu-architecture=compute_80", "--std=c++17"};
    const nvrtcResult result = nvrtcCompileProgram(program, 2, options);
    std::size_t size = 0;
    nvrtcGetProgramLogSize(program, &size);
    std::string log(size, '\0');
    nvrtcGetProgramLog(program, log.data());
    if (result != NVRTC_SUCCESS) nvrtcDestroyProgram(&program);
    ASSERT_EQ(result, NVRTC_SUCCESS) << log << "\n" << source;
    nvrtcGetPTXSize(program, &size);
    std::string ptx(size, '\0');
    nvrtcGetPTX(program, ptx.data());
    nvrtcDestroyProgram(&program);
    EXPECT_TRUE(ptx.find("membar.gl") != std::string::npos ||
                ptx.find("fence.sc.gpu") != std::string::npos ||
                ptx.find("fence.acq_rel.gpu") != std::string::npos)
        << "no device-scope fence";
    EXPECT_NE(ptx.find("atom.global.add"), std::string::npos);
    EXPECT_NE(ptx.find("ld.volatile.global"), std::string::npos);
    // Without the one-launch code none of them.
    const std::string plain = detail::red::fast_source_for_tests(*kernel, queue, in, false);
    EXPECT_EQ(plain.find("_ticket"), std::string::npos);
  }
}
#endif

SKEIN_INSTANTIATE_BACKENDS(ReductionOneLaunch);

}  // namespace reduction_one_launch_test
}  // namespace
}  // namespace skein::test

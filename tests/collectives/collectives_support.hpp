// SPDX-License-Identifier: BSD-3-Clause
// What the Communicator's tests under mpirun share (collectives_test.cpp: the operations;
// collectives_errors_test.cpp: bad calls and the agreement check; collectives_environment_test.cpp:
// the environment variables): the host values and references the operations are checked against,
// and the two layouts of the Collectives fixture.
//
// Two layouts: the Runtime's own placement (its devices per rank: 4, 2, 1, 1 PoCL devices for
// 1, 2, 3, 4 ranks), and exactly two devices per rank from Communicator(MPI_COMM_WORLD, ctx,
// {0, 1}) (ranks share PoCL devices there: they are CPU threads). The fixture is instantiated once,
// in collectives_test.cpp; its tests in the other files run in both layouts too.
#pragma once

#include <gtest/gtest.h>

#include "mpi_support.hpp"
#include <mpi.h>

#include <fmt/format.h>

#include <algorithm>
#include <complex>
#include <cstring>
#include <memory>
#include <optional>
#include <skein/communicator.hpp>
#include <skein/runtime.hpp>
#include <skein/skein.hpp>
#include <string>
#include <type_traits>
#include <vector>

// A named namespace (not an anonymous one): the fixture must be one class in every file.
namespace skein::test::collectives_test {

using namespace skein;

using ::skein::test::on_every_rank;
using ::skein::test::world_rank;
using ::skein::test::world_size;

// ---- host values and references ----------------------------------------------------------------

template <class T>
constexpr bool kHalf = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;
template <class T>
constexpr bool kComplex =
    std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

template <class T>
T make_value(double re, double im) {
  if constexpr (kComplex<T>) {
    return T(static_cast<typename T::value_type>(re), static_cast<typename T::value_type>(im));
  } else if constexpr (kHalf<T>) {
    return T(static_cast<float>(re));
  } else {
    return static_cast<T>(re);
  }
}

// Inputs whose reductions are exact in every dtype: small integers for sum/min/max/avg (sums of
// up to 8 members stay below 256: exact in bfloat16), 1s and 2s for prod (a power of two at most
// 2^8). Integers wrap around in the references where they overflow (int8), as the backends do.
inline double reduction_input(ReduceOp op, std::size_t member, std::size_t i) {
  if (op == ReduceOp::prod) return 1.0 + static_cast<double>((member + i) % 2);
  return static_cast<double>((member + 1) * (i % 7 + 1));
}
inline double reduction_imag(ReduceOp op, std::size_t i) {
  return op == ReduceOp::prod ? 0.0 : double(i % 3);
}

// Data-moving operations: values that differ between members and positions (1..101: exact in
// every dtype).
inline double movement_input(std::size_t member, std::size_t i) {
  return static_cast<double>((member * 13 + i * 7) % 101 + 1);
}

template <class T>
T ref_combine(T a, T b, ReduceOp op) {
  if constexpr (kHalf<T>) {
    const float x = static_cast<float>(a), y = static_cast<float>(b);
    switch (op) {
      case ReduceOp::prod: return T(x * y);
      case ReduceOp::min: return T(x < y ? x : y);
      case ReduceOp::max: return T(x > y ? x : y);
      default: return T(x + y);
    }
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case ReduceOp::prod: return static_cast<T>(static_cast<U>(U(a) * U(b)));
      case ReduceOp::min: return a < b ? a : b;
      case ReduceOp::max: return a > b ? a : b;
      default: return static_cast<T>(static_cast<U>(U(a) + U(b)));
    }
  } else if constexpr (kComplex<T>) {
    return op == ReduceOp::prod ? a * b : a + b;
  } else {
    switch (op) {
      case ReduceOp::prod: return a * b;
      case ReduceOp::min: return a < b ? a : b;
      case ReduceOp::max: return a > b ? a : b;
      default: return a + b;
    }
  }
}

template <class T>
T ref_divide(T sum, std::size_t members) {
  if constexpr (kHalf<T>)
    return T(static_cast<float>(sum) / static_cast<float>(members));
  else if constexpr (kComplex<T>)
    return sum / static_cast<typename T::value_type>(members);
  else
    return static_cast<T>(sum / static_cast<T>(members));  // integers: truncating division
}

using Bytes = std::vector<std::byte>;

// The inputs below depend on the element index only through i % 7, i % 3 and i % 2 (reduction)
// or i % 101 (movement): one period is computed element by element and the rest copied from it,
// which gives the same bytes as computing every element (the suite's large buffers made that
// generation most of its time, several times more under the sanitizers).
constexpr std::size_t kReductionPeriod = 42, kMovementPeriod = 101;

// Fills `out` (n elements of `es` bytes) from its first min(n, period) elements, already written.
inline void tile(Bytes& out, std::size_t es, std::size_t period) {
  const std::size_t block = period * es;
  for (std::size_t done = block; done < out.size(); done *= 2) {
    std::memcpy(out.data() + done, out.data(), std::min(done, out.size() - done));
  }
}

// n elements of member `member`'s reduction input, starting at formula index `first`.
inline Bytes reduction_bytes(Dtype dtype, ReduceOp op, std::size_t member, std::size_t first,
                             std::size_t n) {
  Bytes out(n * itemsize(dtype));
  visit_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    for (std::size_t i = 0; i < std::min(n, kReductionPeriod); ++i) {
      const T v =
          make_value<T>(reduction_input(op, member, first + i), reduction_imag(op, first + i));
      std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
    }
  });
  tile(out, itemsize(dtype), kReductionPeriod);
  return out;
}

// The reduction over all members of elements [first, first + n).
inline Bytes reduction_reference(Dtype dtype, ReduceOp op, std::size_t members, std::size_t first,
                                 std::size_t n) {
  Bytes out(n * itemsize(dtype));
  visit_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    for (std::size_t i = 0; i < std::min(n, kReductionPeriod); ++i) {
      const std::size_t k = first + i;
      T acc = make_value<T>(reduction_input(op, 0, k), reduction_imag(op, k));
      for (std::size_t m = 1; m < members; ++m) {
        acc = ref_combine(acc, make_value<T>(reduction_input(op, m, k), reduction_imag(op, k)), op);
      }
      if (op == ReduceOp::avg) acc = ref_divide(acc, members);
      std::memcpy(out.data() + i * sizeof(T), &acc, sizeof(T));
    }
  });
  tile(out, itemsize(dtype), kReductionPeriod);
  return out;
}

inline Bytes movement_bytes(Dtype dtype, std::size_t member, std::size_t first, std::size_t n) {
  Bytes out(n * itemsize(dtype));
  visit_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    for (std::size_t i = 0; i < std::min(n, kMovementPeriod); ++i) {
      const T v = make_value<T>(movement_input(member, first + i), 0.0);
      std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
    }
  });
  tile(out, itemsize(dtype), kMovementPeriod);
  return out;
}

inline Bytes concat(const std::vector<Bytes>& parts) {
  Bytes out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// ---- set-ups ----------------------------------------------------------------------------------

struct Rig {
  std::unique_ptr<Runtime> runtime;  // the Runtime set-up only
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<Queue> queue;

  std::size_t M() const { return comm->size(); }
  std::size_t L() const { return comm->local_size(); }
  std::size_t member(std::size_t l) const { return static_cast<std::size_t>(comm->rank_of(l)); }
  std::size_t dev(std::size_t l) const { return comm->device_idx(l); }

  Array upload(std::size_t l, Dtype dtype, const Bytes& bytes) const {
    Array a = Array::empty(*queue, {bytes.size() / itemsize(dtype)}, dtype, dev(l));
    if (!bytes.empty()) a.set(std::span<const std::byte>(bytes));
    return a;
  }
  Array make(std::size_t l, Dtype dtype, std::size_t n) const {
    return Array::empty(*queue, {n}, dtype, dev(l));
  }
  static Bytes download(const Array& a) {
    Bytes out(a.nbytes());
    if (!out.empty()) a.get(std::span<std::byte>(out));
    return out;
  }
};

inline std::vector<Device> pocl_devices() {
  const auto found = platforms_and_devices_by_mask(Api::from_id(ApiId::opencl), 2);
  if (found.empty()) return {};
  return found.front().second;
}

enum class Layout { runtime, two_per_rank };

inline Rig make_rig(Layout layout) {
  Rig s;
  if (layout == Layout::runtime) {
    s.runtime = std::make_unique<Runtime>(MPI_COMM_WORLD);
    s.comm = std::make_unique<Communicator>(*s.runtime);
  } else {
    // Two devices per rank, spread over the platform's devices; ranks may share them.
    const auto devices = pocl_devices();
    const std::size_t r = static_cast<std::size_t>(world_rank());
    const std::vector<Device> mine = {devices[(2 * r) % devices.size()],
                                      devices[(2 * r + 1) % devices.size()]};
    const Context context = Context::from_devices(std::span<const Device>(mine));
    s.comm =
        std::make_unique<Communicator>(MPI_COMM_WORLD, context, std::vector<std::size_t>{0, 1});
  }
  s.queue = std::make_unique<Queue>(s.comm->context());
  return s;
}

class Collectives : public testing::TestWithParam<Layout> {
 protected:
  void SetUp() override {
    if (pocl_devices().size() < 2) GTEST_SKIP() << "needs an OpenCL platform with 2 devices";
    s_ = make_rig(GetParam());
  }
  Rig s_;
};

inline std::string layout_name(const testing::TestParamInfo<Layout>& info) {
  return info.param == Layout::runtime ? "RuntimePlacement" : "TwoDevicesPerRank";
}

constexpr ReduceOp kReductions[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max,
                                    ReduceOp::avg};

// Sizes 0, 1, 7 and one whose total buffer is about 2 MiB (`per` elements form one unit of it).
// Element counts per member: empty, one, odd, and one large size plus 3 (no multiple of any
// vector width or chunk). NCCL chooses its protocol and algorithm by size, up to its large-message
// path at about 2 MiB, so the large size is ~2 MiB there. The MPI backend's own code has no size
// threshold between the 96-byte carried exchange and MPI's int counts, and Open MPI's large-message
// paths start at tens of KiB, so ~256 KiB covers it: at 2 MiB the suite spent a quarter of its
// time on PoCL (and a third under the sanitizers) moving and checking the same paths' data.
inline std::vector<std::size_t> sizes(Dtype dtype, std::size_t units_per_buffer,
                                      CollectiveBackend backend) {
  const std::size_t large_bytes =
      backend == CollectiveBackend::nccl ? std::size_t(2) << 20 : std::size_t(256) << 10;
  const std::size_t big = large_bytes / itemsize(dtype) / units_per_buffer + 3;
  return {0, 1, 7, big};
}

inline std::string case_name(const char* op, Dtype dtype, std::optional<ReduceOp> red,
                             bool in_place, std::size_t n) {
  return fmt::format("{} {} {} {} n={}", op, name(dtype), red ? std::string(name(*red)) : "-",
                     in_place ? "in-place" : "out-of-place", n);
}

// Reports the first differing element only: a wrong layout would otherwise print thousands.
inline void expect_bytes(const Bytes& got, const Bytes& want, Dtype dtype,
                         const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  // One comparison of the whole buffer first: an element-by-element memcmp costs a sanitizer
  // interceptor call per element (most of collectives.np1's time under ASan).
  if (got.empty() || std::memcmp(got.data(), want.data(), got.size()) == 0) return;
  const std::size_t es = itemsize(dtype);
  for (std::size_t i = 0; i < got.size(); i += es) {
    if (std::memcmp(got.data() + i, want.data() + i, es) != 0) {
      ADD_FAILURE() << what << ": first difference at element " << i / es << " of "
                    << got.size() / es;
      return;
    }
  }
}

inline bool supported(Dtype dtype, ReduceOp op) {
  return !is_complex(dtype) || (op != ReduceOp::min && op != ReduceOp::max);
}

inline void check_events(const Rig& s, const std::vector<Event>& events, std::size_t expected) {
  ASSERT_EQ(events.size(), expected);
  for (const auto& e : events) {
    ASSERT_TRUE(e.valid());
    e.wait();
  }
  (void)s;
}

}  // namespace skein::test::collectives_test

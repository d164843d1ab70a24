// SPDX-License-Identifier: BSD-3-Clause
// The Communicator under mpirun (1..4 ranks) on PoCL devices, with the MPI backend: every
// operation x every dtype x every reduction x in and out of place x sizes 0, 1, 7 and ~256 KiB
// (~2 MiB with NCCL), against host references computed from the input formulas; argument errors
// raised before anything is sent (every rank makes the same bad call, and a good call works
// afterwards); the agreement check and the environment variables.
//
// Two layouts: the Runtime's own placement (its devices per rank: 4, 2, 1, 1 PoCL devices for
// 1, 2, 3, 4 ranks), and exactly two devices per rank from Communicator(MPI_COMM_WORLD, ctx,
// {0, 1}) (ranks share PoCL devices there: they are CPU threads).
#include <gtest/gtest.h>

#include "mpi_support.hpp"
#include "scoped_env.hpp"
#include "skein/detail/backend.hpp"
#include "skein/detail/watch_order.hpp"
#include <mpi.h>

#include <fmt/format.h>

#include <algorithm>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <skein/communicator.hpp>
#include <skein/runtime.hpp>
#include <skein/skein.hpp>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace {
namespace collectives_test {

using namespace skein;

using ::skein::test::on_every_rank;
using ::skein::test::world_rank;
using ::skein::test::world_size;

using ScopedEnv = ::skein::test::ScopedEnv;

// ---- host values and references ----------------------------------------------------------------

template <class T>
constexpr bool kHalf = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;
template <class T>
constexpr bool kComplex = std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

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
double reduction_input(ReduceOp op, std::size_t member, std::size_t i) {
  if (op == ReduceOp::prod) return 1.0 + static_cast<double>((member + i) % 2);
  return static_cast<double>((member + 1) * (i % 7 + 1));
}
double reduction_imag(ReduceOp op, std::size_t i) { return op == ReduceOp::prod ? 0.0 : double(i % 3); }

// Data-moving operations: values that differ between members and positions (1..101: exact in
// every dtype).
double movement_input(std::size_t member, std::size_t i) {
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
  if constexpr (kHalf<T>) return T(static_cast<float>(sum) / static_cast<float>(members));
  else if constexpr (kComplex<T>) return sum / static_cast<typename T::value_type>(members);
  else return static_cast<T>(sum / static_cast<T>(members));  // integers: truncating division
}

using Bytes = std::vector<std::byte>;

// The inputs below depend on the element index only through i % 7, i % 3 and i % 2 (reduction)
// or i % 101 (movement): one period is computed element by element and the rest copied from it,
// which gives the same bytes as computing every element (the suite's large buffers made that
// generation most of its time, several times more under the sanitizers).
constexpr std::size_t kReductionPeriod = 42, kMovementPeriod = 101;

// Fills `out` (n elements of `es` bytes) from its first min(n, period) elements, already written.
void tile(Bytes& out, std::size_t es, std::size_t period) {
  const std::size_t block = period * es;
  for (std::size_t done = block; done < out.size(); done *= 2) {
    std::memcpy(out.data() + done, out.data(), std::min(done, out.size() - done));
  }
}

// n elements of member `member`'s reduction input, starting at formula index `first`.
Bytes reduction_bytes(Dtype dtype, ReduceOp op, std::size_t member, std::size_t first, std::size_t n) {
  Bytes out(n * itemsize(dtype));
  visit_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    for (std::size_t i = 0; i < std::min(n, kReductionPeriod); ++i) {
      const T v = make_value<T>(reduction_input(op, member, first + i), reduction_imag(op, first + i));
      std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
    }
  });
  tile(out, itemsize(dtype), kReductionPeriod);
  return out;
}

// The reduction over all members of elements [first, first + n).
Bytes reduction_reference(Dtype dtype, ReduceOp op, std::size_t members, std::size_t first, std::size_t n) {
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

Bytes movement_bytes(Dtype dtype, std::size_t member, std::size_t first, std::size_t n) {
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

Bytes concat(const std::vector<Bytes>& parts) {
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

std::vector<Device> pocl_devices() {
  const auto found = platforms_and_devices_by_mask(Api::from_id(ApiId::opencl), 2);
  if (found.empty()) return {};
  return found.front().second;
}

enum class Layout { runtime, two_per_rank };

Rig make_rig(Layout layout) {
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
    s.comm = std::make_unique<Communicator>(MPI_COMM_WORLD, context, std::vector<std::size_t>{0, 1});
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

std::string layout_name(const testing::TestParamInfo<Layout>& info) {
  return info.param == Layout::runtime ? "RuntimePlacement" : "TwoDevicesPerRank";
}

INSTANTIATE_TEST_SUITE_P(Layouts, Collectives, testing::Values(Layout::runtime, Layout::two_per_rank),
                         layout_name);

constexpr ReduceOp kReductions[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max,
                                    ReduceOp::avg};

// Sizes 0, 1, 7 and one whose total buffer is about 2 MiB (`per` elements form one unit of it).
// Element counts per member: empty, one, odd, and one large size plus 3 (no multiple of any
// vector width or chunk). NCCL chooses its protocol and algorithm by size, up to its large-message
// path at about 2 MiB, so the large size is ~2 MiB there. The MPI backend's own code has no size
// threshold between the 96-byte carried exchange and MPI's int counts, and Open MPI's large-message
// paths start at tens of KiB, so ~256 KiB covers it: at 2 MiB the suite spent a quarter of its
// time on PoCL (and a third under the sanitizers) moving and checking the same paths' data.
std::vector<std::size_t> sizes(Dtype dtype, std::size_t units_per_buffer, CollectiveBackend backend) {
  const std::size_t large_bytes =
      backend == CollectiveBackend::nccl ? std::size_t(2) << 20 : std::size_t(256) << 10;
  const std::size_t big = large_bytes / itemsize(dtype) / units_per_buffer + 3;
  return {0, 1, 7, big};
}

std::string case_name(const char* op, Dtype dtype, std::optional<ReduceOp> red, bool in_place,
                      std::size_t n) {
  return fmt::format("{} {} {} {} n={}", op, name(dtype), red ? std::string(name(*red)) : "-",
                     in_place ? "in-place" : "out-of-place", n);
}

// Reports the first differing element only: a wrong layout would otherwise print thousands.
void expect_bytes(const Bytes& got, const Bytes& want, Dtype dtype, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  // One comparison of the whole buffer first: an element-by-element memcmp costs a sanitizer
  // interceptor call per element (most of collectives.np1's time under ASan).
  if (got.empty() || std::memcmp(got.data(), want.data(), got.size()) == 0) return;
  const std::size_t es = itemsize(dtype);
  for (std::size_t i = 0; i < got.size(); i += es) {
    if (std::memcmp(got.data() + i, want.data() + i, es) != 0) {
      ADD_FAILURE() << what << ": first difference at element " << i / es << " of " << got.size() / es;
      return;
    }
  }
}

bool supported(Dtype dtype, ReduceOp op) {
  return !is_complex(dtype) || (op != ReduceOp::min && op != ReduceOp::max);
}

void check_events(const Rig& s, const std::vector<Event>& events, std::size_t expected) {
  ASSERT_EQ(events.size(), expected);
  for (const auto& e : events) {
    ASSERT_TRUE(e.valid());
    e.wait();
  }
  (void)s;
}

// ---- the operations -----------------------------------------------------------------------------

TEST_P(Collectives, DescribesItsMembersAndBackend) {
  auto& c = *s_.comm;
  std::size_t total = 0;
  const unsigned long long local = c.local_size();
  unsigned long long sum = 0;
  MPI_Allreduce(&local, &sum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  total = static_cast<std::size_t>(sum);
  EXPECT_EQ(c.size(), total);
  unsigned long long before = 0;
  MPI_Exscan(&local, &before, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (world_rank() == 0) before = 0;
  for (std::size_t l = 0; l < c.local_size(); ++l) EXPECT_EQ(c.rank_of(l), static_cast<int>(before + l));
  EXPECT_EQ(c.backend(), CollectiveBackend::mpi);  // PoCL devices: automatic chooses MPI
  EXPECT_NE(c.backend_description().find("MPI (staged through host memory"), std::string::npos)
      << c.backend_description();
  EXPECT_THROW(c.rank_of(c.local_size()), LogicError);
}

// The watchdog's reading of its oldest calls (detail::completed_front), on the host only: for
// every list of up to 40 calls, every length of the run of calls on the same streams as the first
// and every point where that run's calls stop being complete (they complete in order; calls
// after the run complete or not in any way), the calls reported finished are exactly the run's
// completed ones, no call outside the run is asked, and at most 1 + ceil(log2(run)) are.
TEST(CollectivesWatchdog, CompletedFrontFindsTheFinishedCallsWithFewQueries) {
  for (std::size_t n = 1; n <= 40; ++n) {
    for (std::size_t run = 1; run <= n; ++run) {
      for (std::size_t complete = 0; complete <= run; ++complete) {
        for (int after : {0, 1}) {
          std::size_t asked = 0;
          bool outside = false;
          const auto [finished, reported_run] = detail::completed_front(
              n, [&](std::size_t i) { return i < run; },
              [&](std::size_t i) {
                ++asked;
                if (i >= run) outside = true;
                return i < run ? i < complete : after == 1;
              });
          std::size_t bound = 1;
          while ((std::size_t{1} << (bound - 1)) < run) ++bound;
          ASSERT_EQ(finished, complete) << n << " " << run << " " << complete;
          ASSERT_EQ(reported_run, run) << n << " " << run << " " << complete;
          ASSERT_FALSE(outside) << n << " " << run << " " << complete;
          ASSERT_LE(asked, bound) << n << " " << run << " " << complete;
        }
      }
    }
  }
}

// The tiled inputs and references are the element-by-element formulas at every index (a check of
// the test's own generator, on the host only).
TEST(CollectivesReferenceData, TilingMatchesTheFormulaAtEveryElement) {
  const std::size_t n = 1000, first = 13;
  for (Dtype dtype : all_dtypes) {
    visit_dtype(dtype, [&](auto t) {
      using T = decltype(t);
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod}) {
        const Bytes input = reduction_bytes(dtype, op, 2, first, n);
        const Bytes reference = reduction_reference(dtype, op, 3, first, n);
        const Bytes moved = movement_bytes(dtype, 2, first, n);
        for (std::size_t i = 0; i < n; ++i) {
          const std::size_t k = first + i;
          const T v = make_value<T>(reduction_input(op, 2, k), reduction_imag(op, k));
          T acc = make_value<T>(reduction_input(op, 0, k), reduction_imag(op, k));
          for (std::size_t m = 1; m < 3; ++m) {
            acc = ref_combine(acc, make_value<T>(reduction_input(op, m, k), reduction_imag(op, k)), op);
          }
          const T w = make_value<T>(movement_input(2, k), 0.0);
          ASSERT_EQ(std::memcmp(input.data() + i * sizeof(T), &v, sizeof(T)), 0) << name(dtype) << " " << i;
          ASSERT_EQ(std::memcmp(reference.data() + i * sizeof(T), &acc, sizeof(T)), 0) << name(dtype) << " " << i;
          ASSERT_EQ(std::memcmp(moved.data() + i * sizeof(T), &w, sizeof(T)), 0) << name(dtype) << " " << i;
        }
      }
    });
  }
}

TEST_P(Collectives, AllReduce) {
  const std::size_t M = s_.M(), L = s_.L();
  for (Dtype dtype : all_dtypes) {
    for (ReduceOp op : kReductions) {
      if (!supported(dtype, op)) continue;
      for (bool in_place : {false, true}) {
        // Also either side of 96 bytes: up to that size the data travels in the agreement
        // check's exchange (the MPI backend, more than one rank).
        auto ns = sizes(dtype, 1, s_.comm->backend());
        ns.push_back(96 / itemsize(dtype));
        ns.push_back(96 / itemsize(dtype) + 1);
        for (std::size_t n : ns) {
          const std::string what = case_name("all_reduce", dtype, op, in_place, n);
          std::vector<Array> send, recv;
          for (std::size_t l = 0; l < L; ++l) {
            send.push_back(s_.upload(l, dtype, reduction_bytes(dtype, op, s_.member(l), 0, n)));
            recv.push_back(in_place ? send.back() : s_.make(l, dtype, n));
          }
          check_events(s_, s_.comm->all_reduce(*s_.queue, send, recv, op), L);
          const Bytes want = reduction_reference(dtype, op, M, 0, n);
          for (std::size_t l = 0; l < L; ++l) expect_bytes(Rig::download(recv[l]), want, dtype, what);
        }
      }
    }
  }
}

TEST_P(Collectives, Reduce) {
  const std::size_t M = s_.M(), L = s_.L();
  for (Dtype dtype : all_dtypes) {
    for (ReduceOp op : kReductions) {
      if (!supported(dtype, op)) continue;
      for (bool in_place : {false, true}) {
        for (std::size_t n : sizes(dtype, 1, s_.comm->backend())) {
          const int root = static_cast<int>((n + static_cast<std::size_t>(op)) % M);
          const std::string what = case_name("reduce", dtype, op, in_place, n) + fmt::format(" root {}", root);
          std::vector<Array> send, recv;
          std::vector<Bytes> inputs;
          for (std::size_t l = 0; l < L; ++l) {
            inputs.push_back(reduction_bytes(dtype, op, s_.member(l), 0, n));
            send.push_back(s_.upload(l, dtype, inputs.back()));
            // Out of place, non-roots pass empty arrays (they are not written).
            const bool is_root = s_.member(l) == static_cast<std::size_t>(root);
            recv.push_back(in_place ? send.back() : s_.make(l, dtype, is_root ? n : 0));
          }
          check_events(s_, s_.comm->reduce(*s_.queue, send, recv, op, root), L);
          const Bytes want = reduction_reference(dtype, op, M, 0, n);
          for (std::size_t l = 0; l < L; ++l) {
            if (s_.member(l) == static_cast<std::size_t>(root)) {
              expect_bytes(Rig::download(recv[l]), want, dtype, what);
            } else {
              // Never written: in place, a non-root's data is still its input.
              expect_bytes(Rig::download(send[l]), inputs[l], dtype, what + " (non-root untouched)");
            }
          }
        }
      }
    }
  }
}

TEST_P(Collectives, ReduceScatter) {
  const std::size_t M = s_.M(), L = s_.L();
  for (Dtype dtype : all_dtypes) {
    for (ReduceOp op : kReductions) {
      if (!supported(dtype, op)) continue;
      for (bool in_place : {false, true}) {
        for (std::size_t n : sizes(dtype, M, s_.comm->backend())) {
          const std::string what = case_name("reduce_scatter", dtype, op, in_place, n);
          std::vector<Array> send, recv;
          for (std::size_t l = 0; l < L; ++l) {
            send.push_back(s_.upload(l, dtype, reduction_bytes(dtype, op, s_.member(l), 0, M * n)));
            // In place (NCCL's definition): recv is the member's own block of send.
            const std::size_t m = s_.member(l);
            recv.push_back(in_place ? send.back().slice(m * n, (m + 1) * n) : s_.make(l, dtype, n));
          }
          check_events(s_, s_.comm->reduce_scatter(*s_.queue, send, recv, op), L);
          for (std::size_t l = 0; l < L; ++l) {
            const Bytes want = reduction_reference(dtype, op, M, s_.member(l) * n, n);
            expect_bytes(Rig::download(recv[l]), want, dtype, what);
          }
        }
      }
    }
  }
}

TEST_P(Collectives, AllGather) {
  const std::size_t M = s_.M(), L = s_.L();
  for (Dtype dtype : all_dtypes) {
    for (bool in_place : {false, true}) {
      for (std::size_t n : sizes(dtype, M, s_.comm->backend())) {
        const std::string what = case_name("all_gather", dtype, std::nullopt, in_place, n);
        std::vector<Array> send, recv;
        std::vector<Bytes> blocks;
        for (std::size_t m = 0; m < M; ++m) blocks.push_back(movement_bytes(dtype, m, 0, n));
        for (std::size_t l = 0; l < L; ++l) {
          const std::size_t m = s_.member(l);
          if (in_place) {
            // send is the member's own block of recv, already holding its data.
            Bytes start(M * n * itemsize(dtype), std::byte{0});
            std::copy(blocks[m].begin(), blocks[m].end(), start.begin() + m * n * itemsize(dtype));
            recv.push_back(s_.upload(l, dtype, start));
            send.push_back(recv.back().slice(m * n, (m + 1) * n));
          } else {
            send.push_back(s_.upload(l, dtype, blocks[m]));
            recv.push_back(s_.make(l, dtype, M * n));
          }
        }
        check_events(s_, s_.comm->all_gather(*s_.queue, send, recv), L);
        const Bytes want = concat(blocks);
        for (std::size_t l = 0; l < L; ++l) expect_bytes(Rig::download(recv[l]), want, dtype, what);
      }
    }
  }
}

TEST_P(Collectives, Broadcast) {
  const std::size_t M = s_.M(), L = s_.L();
  for (Dtype dtype : all_dtypes) {
    for (std::size_t n : sizes(dtype, 1, s_.comm->backend())) {
      const int root = static_cast<int>((n + static_cast<std::size_t>(dtype)) % M);
      const std::string what = case_name("broadcast", dtype, std::nullopt, true, n) + fmt::format(" root {}", root);
      std::vector<Array> data;
      for (std::size_t l = 0; l < L; ++l) data.push_back(s_.upload(l, dtype, movement_bytes(dtype, s_.member(l), 0, n)));
      check_events(s_, s_.comm->broadcast(*s_.queue, data, root), L);
      const Bytes want = movement_bytes(dtype, static_cast<std::size_t>(root), 0, n);
      for (std::size_t l = 0; l < L; ++l) expect_bytes(Rig::download(data[l]), want, dtype, what);
    }
  }
}

TEST_P(Collectives, AllToAll) {
  const std::size_t M = s_.M(), L = s_.L();
  for (Dtype dtype : all_dtypes) {
    for (bool in_place : {false, true}) {
      for (std::size_t n : sizes(dtype, M, s_.comm->backend())) {
        const std::string what = case_name("all_to_all", dtype, std::nullopt, in_place, n);
        std::vector<Array> send, recv;
        for (std::size_t l = 0; l < L; ++l) {
          send.push_back(s_.upload(l, dtype, movement_bytes(dtype, s_.member(l), 0, M * n)));
          recv.push_back(in_place ? send.back() : s_.make(l, dtype, M * n));
        }
        check_events(s_, s_.comm->all_to_all(*s_.queue, send, recv), L);
        for (std::size_t l = 0; l < L; ++l) {
          // Block i of member j's result is block j of member i's input.
          const std::size_t j = s_.member(l);
          std::vector<Bytes> blocks;
          for (std::size_t i = 0; i < M; ++i) blocks.push_back(movement_bytes(dtype, i, j * n, n));
          expect_bytes(Rig::download(recv[l]), concat(blocks), dtype, what);
        }
      }
    }
  }
}

TEST_P(Collectives, SendRecvRingInAGroup) {
  const std::size_t M = s_.M(), L = s_.L();
  if (M < 2) GTEST_SKIP() << "needs two members";
  for (Dtype dtype : {Dtype::int8, Dtype::float16, Dtype::float64, Dtype::complex64}) {
    for (std::size_t n : sizes(dtype, 1, s_.comm->backend())) {
      std::vector<Array> out, in;
      s_.comm->group_start();
      for (std::size_t l = 0; l < L; ++l) {
        const std::size_t m = s_.member(l);
        out.push_back(s_.upload(l, dtype, movement_bytes(dtype, m, 0, n)));
        in.push_back(s_.make(l, dtype, n));
        auto e1 = s_.comm->send(*s_.queue, l, out.back(), static_cast<int>((m + 1) % M));
        auto e2 = s_.comm->recv(*s_.queue, l, in.back(), static_cast<int>((m + M - 1) % M));
        EXPECT_EQ(e1.size(), 1u);
        EXPECT_EQ(e2.size(), 1u);
      }
      s_.comm->group_end();
      s_.queue->synchronize();
      for (std::size_t l = 0; l < L; ++l) {
        const std::size_t from = (s_.member(l) + M - 1) % M;
        expect_bytes(Rig::download(in[l]), movement_bytes(dtype, from, 0, n), dtype,
                     fmt::format("ring {} n={}", name(dtype), n));
      }
    }
  }
}

// Exchanges back to back with nothing waited for on the host between them, as a time loop does:
// each step passes on what the step before received (so a step's sends read what its receives'
// copies wrote), then steps of growing sizes (the backend's staging memory grows while earlier
// copies may still be in flight). Every result is checked once at the end.
TEST_P(Collectives, SendRecvRingPipelined) {
  const std::size_t M = s_.M(), L = s_.L();
  if (M < 2) GTEST_SKIP() << "needs two members";
  const Dtype dtype = Dtype::int32;
  const std::size_t n = 1000, steps = 7;
  std::vector<Array> a, b;
  for (std::size_t l = 0; l < L; ++l) {
    a.push_back(s_.upload(l, dtype, movement_bytes(dtype, s_.member(l), 0, n)));
    b.push_back(s_.make(l, dtype, n));
  }
  for (std::size_t k = 0; k < steps; ++k) {
    s_.comm->group_start();
    for (std::size_t l = 0; l < L; ++l) {
      const std::size_t m = s_.member(l);
      s_.comm->send(*s_.queue, l, a[l], static_cast<int>((m + 1) % M));
      s_.comm->recv(*s_.queue, l, b[l], static_cast<int>((m + M - 1) % M));
    }
    s_.comm->group_end();
    std::swap(a, b);
  }
  // Growing messages: every send array is made first, then the exchanges run back to back.
  std::vector<std::vector<Array>> out(steps), in(steps);
  for (std::size_t k = 0; k < steps; ++k) {
    for (std::size_t l = 0; l < L; ++l) {
      out[k].push_back(s_.upload(l, dtype, movement_bytes(dtype, s_.member(l), k, (n << k) + k)));
      in[k].push_back(s_.make(l, dtype, (n << k) + k));
    }
  }
  for (std::size_t k = 0; k < steps; ++k) {
    s_.comm->group_start();
    for (std::size_t l = 0; l < L; ++l) {
      const std::size_t m = s_.member(l);
      s_.comm->send(*s_.queue, l, out[k][l], static_cast<int>((m + 1) % M));
      s_.comm->recv(*s_.queue, l, in[k][l], static_cast<int>((m + M - 1) % M));
    }
    s_.comm->group_end();
  }
  s_.queue->synchronize();
  for (std::size_t l = 0; l < L; ++l) {
    const std::size_t m = s_.member(l);
    expect_bytes(Rig::download(a[l]), movement_bytes(dtype, (m + M * steps - steps) % M, 0, n), dtype,
                 fmt::format("after {} passes", steps));
    for (std::size_t k = 0; k < steps; ++k) {
      expect_bytes(Rig::download(in[k][l]), movement_bytes(dtype, (m + M - 1) % M, k, (n << k) + k), dtype,
                   fmt::format("growing step {}", k));
    }
  }
}

// CommunicatorGroup: a ring exchange in a guarded scope ended by end(); a scope left by an
// exception after its operations were issued (the destructor ends the group: the data still
// moves, and the communicator is usable for the next group); end() twice refused.
TEST_P(Collectives, GroupGuardEndsTheGroupOnEveryExit) {
  const std::size_t M = s_.M(), L = s_.L();
  if (M < 2) GTEST_SKIP() << "needs two members";
  const Dtype dtype = Dtype::int32;
  const std::size_t n = 777;
  auto ring = [&](std::size_t k, std::vector<Array>& in) {
    std::vector<Array> out;
    for (std::size_t l = 0; l < L; ++l) {
      out.push_back(s_.upload(l, dtype, movement_bytes(dtype, s_.member(l), k, n)));
      in.push_back(s_.make(l, dtype, n));
    }
    for (std::size_t l = 0; l < L; ++l) {
      const std::size_t m = s_.member(l);
      s_.comm->send(*s_.queue, l, out[l], static_cast<int>((m + 1) % M));
      s_.comm->recv(*s_.queue, l, in[l], static_cast<int>((m + M - 1) % M));
    }
    return out;
  };
  std::vector<Array> first, second, third;
  {
    CommunicatorGroup group(*s_.comm);
    auto kept = ring(0, first);
    group.end();
    EXPECT_TRUE(group.ended());
    try {
      group.end();
      ADD_FAILURE() << "end() twice: no LogicError";
    } catch (const LogicError& e) {
      EXPECT_NE(std::string(e.what()).find("already ended"), std::string::npos) << e.what();
    }
    s_.queue->synchronize();
  }
  std::vector<Array> kept;
  try {
    CommunicatorGroup group(*s_.comm);
    kept = ring(1, second);
    throw std::runtime_error("the user's code failed inside the group");
  } catch (const std::runtime_error&) {
    // What a code does next: another group on the same communicator.
  }
  {
    CommunicatorGroup group(*s_.comm);
    auto kept3 = ring(2, third);
    group.end();
    s_.queue->synchronize();
  }
  for (std::size_t l = 0; l < L; ++l) {
    const std::size_t from = (s_.member(l) + M - 1) % M;
    expect_bytes(Rig::download(first[l]), movement_bytes(dtype, from, 0, n), dtype, "guarded, ended");
    expect_bytes(Rig::download(second[l]), movement_bytes(dtype, from, 1, n), dtype, "left by an exception");
    expect_bytes(Rig::download(third[l]), movement_bytes(dtype, from, 2, n), dtype, "the next group");
  }
}

TEST_P(Collectives, SendRecvBetweenRanksWithoutAGroup) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  // Rank 0's first member sends to rank 1's first member: blocking calls on different ranks.
  const int rank = world_rank();
  const std::size_t n = 1000;
  // Every rank's first member; ranks 0 and 1 pair up, the others look on.
  int mine = s_.comm->rank_of(0);
  std::vector<int> first(static_cast<std::size_t>(world_size()));
  MPI_Allgather(&mine, 1, MPI_INT, first.data(), 1, MPI_INT, MPI_COMM_WORLD);
  const int peer_member = rank < 2 ? first[static_cast<std::size_t>(rank ^ 1)] : -1;
  if (rank == 0) {
    Array a = s_.upload(0, Dtype::int32, movement_bytes(Dtype::int32, 42, 0, n));
    check_events(s_, s_.comm->send(*s_.queue, 0, a, peer_member), 1);
  } else if (rank == 1) {
    Array a = s_.make(0, Dtype::int32, n);
    check_events(s_, s_.comm->recv(*s_.queue, 0, a, peer_member), 1);
    expect_bytes(Rig::download(a), movement_bytes(Dtype::int32, 42, 0, n), Dtype::int32, "recv");
  }
}

TEST_P(Collectives, GroupOfCollectivesAndBarrier) {
  const std::size_t M = s_.M(), L = s_.L();
  std::vector<Array> a, b;
  for (std::size_t l = 0; l < L; ++l) {
    a.push_back(s_.upload(l, Dtype::float32, reduction_bytes(Dtype::float32, ReduceOp::sum, s_.member(l), 0, 100)));
    b.push_back(s_.upload(l, Dtype::int64, reduction_bytes(Dtype::int64, ReduceOp::max, s_.member(l), 0, 50)));
  }
  s_.comm->group_start();
  auto e = s_.comm->all_reduce(*s_.queue, a, a, ReduceOp::sum);
  EXPECT_EQ(e.size(), L);
  s_.comm->all_reduce(*s_.queue, b, b, ReduceOp::max);
  s_.comm->group_end();
  s_.comm->barrier(*s_.queue);
  for (std::size_t l = 0; l < L; ++l) {
    expect_bytes(Rig::download(a[l]), reduction_reference(Dtype::float32, ReduceOp::sum, M, 0, 100),
                 Dtype::float32, "grouped sum");
    expect_bytes(Rig::download(b[l]), reduction_reference(Dtype::int64, ReduceOp::max, M, 0, 50),
                 Dtype::int64, "grouped max");
  }
  EXPECT_THROW(s_.comm->group_end(), LogicError);
}

TEST_P(Collectives, SplitByRankParity) {
  const int rank = world_rank();
  Communicator half = s_.comm->split(rank % 2, rank);
  unsigned long long local = s_.L(), in_color = 0;
  MPI_Comm parity;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &parity);
  MPI_Allreduce(&local, &in_color, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, parity);
  MPI_Comm_free(&parity);
  EXPECT_EQ(half.size(), in_color);
  std::vector<Array> a;
  for (std::size_t l = 0; l < s_.L(); ++l) {
    a.push_back(s_.upload(l, Dtype::int32, reduction_bytes(Dtype::int32, ReduceOp::sum, half.rank_of(l), 0, 7)));
  }
  half.all_reduce(*s_.queue, a, a, ReduceOp::sum);
  for (auto& x : a) {
    expect_bytes(Rig::download(x), reduction_reference(Dtype::int32, ReduceOp::sum, half.size(), 0, 7),
                 Dtype::int32, "split sum");
  }
}

// ---- errors -------------------------------------------------------------------------------------

// Every rank makes the same bad call: each must raise LogicError before anything is sent, and
// the communicator must still work (no rank left inside a collective).
template <class F>
void expect_logic_error(const Rig& s, F&& bad, const std::vector<std::string>& words) {
  try {
    bad();
    ADD_FAILURE() << "no LogicError";
  } catch (const LogicError& e) {
    const std::string what = e.what();
    for (const auto& w : words) EXPECT_NE(what.find(w), std::string::npos) << "'" << w << "' not in: " << what;
  }
  std::vector<Array> ok;
  for (std::size_t l = 0; l < s.L(); ++l) ok.push_back(s.upload(l, Dtype::int32, reduction_bytes(Dtype::int32, ReduceOp::sum, s.member(l), 0, 3)));
  s.comm->all_reduce(*s.queue, ok, ok, ReduceOp::sum);
  for (auto& a : ok) {
    expect_bytes(Rig::download(a), reduction_reference(Dtype::int32, ReduceOp::sum, s.M(), 0, 3),
                 Dtype::int32, "after the error");
  }
}

TEST_P(Collectives, BadCallsRaiseBeforeAnythingIsSent) {
  const std::size_t M = s_.M(), L = s_.L();
  auto arrays = [&](Dtype dtype, std::size_t n) {
    std::vector<Array> v;
    for (std::size_t l = 0; l < L; ++l) v.push_back(s_.make(l, dtype, n));
    return v;
  };
  const std::string rank_word = fmt::format("rank {}", world_rank());
  // Wrong span size.
  auto send = arrays(Dtype::float32, 10);
  std::vector<Array> too_many = send;
  too_many.push_back(send[0]);
  expect_logic_error(s_, [&] { s_.comm->all_reduce(*s_.queue, too_many, too_many, ReduceOp::sum); },
                     {rank_word, "all_reduce", "member"});
  // Different dtypes.
  auto recv_int = arrays(Dtype::int32, 10);
  expect_logic_error(s_, [&] { s_.comm->all_reduce(*s_.queue, send, recv_int, ReduceOp::sum); },
                     {rank_word, "all_reduce", "dtype", "int32", "float32"});
  // Different sizes.
  auto recv_small = arrays(Dtype::float32, 9);
  expect_logic_error(s_, [&] { s_.comm->all_reduce(*s_.queue, send, recv_small, ReduceOp::sum); },
                     {rank_word, "all_reduce", "9 elements"});
  // Bad root.
  expect_logic_error(s_, [&] { s_.comm->broadcast(*s_.queue, send, static_cast<int>(M)); },
                     {rank_word, "broadcast", "root"});
  expect_logic_error(s_, [&] { s_.comm->reduce(*s_.queue, send, send, ReduceOp::sum, -1); },
                     {rank_word, "reduce", "root"});
  // Too small recv for all_gather.
  auto gather_small = arrays(Dtype::float32, M * 10 - 1);
  expect_logic_error(s_, [&] { s_.comm->all_gather(*s_.queue, send, gather_small); },
                     {rank_word, "all_gather", "recv"});
  // reduce_scatter's send must be size() * recv.
  auto rs_send = arrays(Dtype::float32, M * 10 + 1);
  expect_logic_error(s_, [&] { s_.comm->reduce_scatter(*s_.queue, rs_send, send, ReduceOp::sum); },
                     {rank_word, "reduce_scatter", "send"});
  // Unsupported reduction for the dtype.
  auto cplx = arrays(Dtype::complex64, 4);
  expect_logic_error(s_, [&] { s_.comm->all_reduce(*s_.queue, cplx, cplx, ReduceOp::max); },
                     {"Backend MPI does not support max with complex64"});
  // A peer that is the member itself, or no member.
  expect_logic_error(s_, [&] { s_.comm->send(*s_.queue, 0, send[0], s_.comm->rank_of(0)); },
                     {rank_word, "send", "itself"});
  expect_logic_error(s_, [&] { s_.comm->recv(*s_.queue, 0, send[0], static_cast<int>(M)); },
                     {rank_word, "recv", "peer"});
  // An array on the wrong device (two members on one rank: swap them).
  if (on_every_rank(L >= 2)) {
    std::vector<Array> swapped = send;
    std::swap(swapped[0], swapped[1]);
    expect_logic_error(s_, [&] { s_.comm->all_reduce(*s_.queue, swapped, swapped, ReduceOp::sum); },
                       {rank_word, "all_reduce", "device"});
  }
  // A queue without the members' devices.
  if (on_every_rank(s_.comm->context().num_devices() >= 2)) {
    const std::size_t other = s_.dev(0) == 0 ? 1 : 0;
    Queue partial(s_.comm->context(), {other});
    expect_logic_error(s_, [&] { s_.comm->all_reduce(partial, send, send, ReduceOp::sum); },
                       {rank_word, "all_reduce", "queue"});
  }
  // A non-contiguous array.
  if (on_every_rank(L == 1)) {
    Array strided = s_.make(0, Dtype::float32, 20).view(0, {10}, {8});
    std::vector<Array> v{strided};
    expect_logic_error(s_, [&] { s_.comm->all_reduce(*s_.queue, v, v, ReduceOp::sum); },
                       {rank_word, "contiguous"});
  }
}

TEST_P(Collectives, MismatchedCountsAreCaughtByTheAgreementCheck) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  // The check is on by default, in every build.
  ScopedEnv check("SKEIN_CHECK_COLLECTIVES", std::nullopt);
  Rig s = make_rig(GetParam());
  const std::size_t n = world_rank() == 1 ? 999 : 1000;
  std::vector<Array> a;
  for (std::size_t l = 0; l < s.L(); ++l) a.push_back(s.make(l, Dtype::float32, n));
  try {
    s.comm->all_reduce(*s.queue, a, a, ReduceOp::sum);
    ADD_FAILURE() << "no LogicError";
  } catch (const LogicError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("all_reduce #1"), std::string::npos) << what;
    EXPECT_NE(what.find("count differs"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 1 has 999"), std::string::npos) << what;
  }
  // Nothing was sent: the communicator still works.
  for (std::size_t l = 0; l < s.L(); ++l) {
    a[l] = s.upload(l, Dtype::float32, reduction_bytes(Dtype::float32, ReduceOp::sum, s.member(l), 0, 5));
  }
  s.comm->all_reduce(*s.queue, a, a, ReduceOp::sum);
  for (auto& x : a) {
    expect_bytes(Rig::download(x), reduction_reference(Dtype::float32, ReduceOp::sum, s.M(), 0, 5),
                 Dtype::float32, "after the mismatch");
  }
}

// A small all_reduce's data travels in the agreement check's exchange (the MPI backend): ranks
// that differ still raise, whether both sides carry their data or one does not, and a rank that
// cannot carry its data (the call inside a group) makes the others send theirs as usual.
TEST_P(Collectives, SmallAllReduceCarriedByTheCheck) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  ScopedEnv check("SKEIN_CHECK_COLLECTIVES", std::nullopt);
  Rig s = make_rig(GetParam());
  const bool odd = world_rank() == 1;
  auto run = [&](Dtype dtype, std::size_t n, ReduceOp op, bool grouped) {
    std::vector<Array> a;
    for (std::size_t l = 0; l < s.L(); ++l) {
      a.push_back(s.upload(l, dtype, reduction_bytes(dtype, op, s.member(l), 0, n)));
    }
    if (grouped) s.comm->group_start();
    s.comm->all_reduce(*s.queue, a, a, op);
    if (grouped) s.comm->group_end();
    return a;
  };
  auto expect_mismatch = [&](const char* field, auto&& call) {
    try {
      call();
      ADD_FAILURE() << "no LogicError";
    } catch (const LogicError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  // Both carry: 2 elements against 3; float32 against int32.
  expect_mismatch("count differs", [&] { run(Dtype::float32, odd ? 3 : 2, ReduceOp::sum, false); });
  expect_mismatch("dtype differs", [&] {
    run(odd ? Dtype::int32 : Dtype::float32, 2, ReduceOp::sum, false);
  });
  // One carries (2 elements), the other does not (4000).
  expect_mismatch("count differs", [&] { run(Dtype::float32, odd ? 4000 : 2, ReduceOp::sum, false); });
  // The same call, rank 1 inside a group: every rank gets the reduction.
  for (const ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max}) {
    auto a = run(Dtype::float64, 5, op, odd);
    for (auto& x : a) {
      expect_bytes(Rig::download(x), reduction_reference(Dtype::float64, op, s.M(), 0, 5),
                   Dtype::float64, fmt::format("{} with rank 1 in a group", name(op)));
    }
  }
  // Nothing was lost: the communicator still works, carried or not.
  for (const std::size_t n : {std::size_t(1), std::size_t(4000)}) {
    auto a = run(Dtype::int64, n, ReduceOp::sum, false);
    for (auto& x : a) {
      expect_bytes(Rig::download(x), reduction_reference(Dtype::int64, ReduceOp::sum, s.M(), 0, n),
                   Dtype::int64, fmt::format("after the mismatches, n={}", n));
    }
  }
}

// The path NCCL's calls take (they return once enqueued; the watchdog compares the fingerprints
// alongside), run over the MPI backend: many calls compared in flight, then a barrier.
// Both ways: the watchdog compares (MPI_THREAD_MULTIPLE, what the suite runs with), and the
// calling thread does at the next call (as below MULTIPLE).
TEST_P(Collectives, CallsComparedAlongsideAgree) {
  for (const bool by_watchdog : {true, false}) {
  SCOPED_TRACE(by_watchdog ? "compared by the watchdog" : "compared by the calling thread");
  ScopedEnv check("SKEIN_CHECK_COLLECTIVES", std::nullopt);
  Rig s = make_rig(GetParam());
  detail::compare_alongside_for_testing(*s.comm, by_watchdog);
  for (int round = 0; round < 40; ++round) {
    std::vector<Array> a;
    for (std::size_t l = 0; l < s.L(); ++l) {
      a.push_back(s.upload(l, Dtype::float32, reduction_bytes(Dtype::float32, ReduceOp::sum, s.member(l), 0, 9)));
    }
    s.comm->all_reduce(*s.queue, a, a, ReduceOp::sum);
    for (auto& x : a) {
      expect_bytes(Rig::download(x), reduction_reference(Dtype::float32, ReduceOp::sum, s.M(), 0, 9),
                   Dtype::float32, fmt::format("round {}", round));
    }
  }
  EXPECT_NO_THROW(s.comm->barrier(*s.queue));
  }
}

// A mismatch on that path: the call itself returns, and the next call (here the barrier) raises
// the LogicError on every rank; the communicator is aborted afterwards.
TEST_P(Collectives, MismatchComparedAlongsideRaisesOnEveryRank) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  for (const bool by_watchdog : {true, false}) {
  SCOPED_TRACE(by_watchdog ? "compared by the watchdog" : "compared by the calling thread");
  ScopedEnv check("SKEIN_CHECK_COLLECTIVES", std::nullopt);
  Rig s = make_rig(GetParam());
  detail::compare_alongside_for_testing(*s.comm, by_watchdog);
  // Sum on every rank but rank 1, which asks for max: the same sizes, so the data's exchange
  // itself is harmless; only the check can tell.
  const ReduceOp op = world_rank() == 1 ? ReduceOp::max : ReduceOp::sum;
  std::vector<Array> a;
  for (std::size_t l = 0; l < s.L(); ++l) a.push_back(s.make(l, Dtype::float32, 64));
  for (auto& x : a) x.fill_zero();
  s.comm->all_reduce(*s.queue, a, a, ReduceOp::sum);  // agreeing: #1
  s.comm->all_reduce(*s.queue, a, a, op);              // #2 differs
  try {
    s.comm->barrier(*s.queue);
    ADD_FAILURE() << "no LogicError";
  } catch (const LogicError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("all_reduce #2"), std::string::npos) << what;
    EXPECT_NE(what.find("reduction differs"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 1 has max"), std::string::npos) << what;
  }
  try {
    s.comm->all_reduce(*s.queue, a, a, ReduceOp::sum);
    ADD_FAILURE() << "the aborted communicator took another call";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("aborted"), std::string::npos) << e.what();
  }
  }
}

TEST(CollectivesEnvironment, BackendVariableChoosesForAutomatic) {
  const auto devices = pocl_devices();
  if (devices.empty()) GTEST_SKIP() << "needs an OpenCL platform";
  const Context context = Context::from_devices(devices[0]);
  {
    ScopedEnv backend("SKEIN_BACKEND", "mpi");
    Communicator c(MPI_COMM_WORLD, context);
    EXPECT_EQ(c.backend(), CollectiveBackend::mpi);
  }
  {
    ScopedEnv backend("SKEIN_BACKEND", "");  // empty: unset
    Communicator c(MPI_COMM_WORLD, context);
    EXPECT_EQ(c.backend(), CollectiveBackend::mpi);  // OpenCL devices
  }
  {
    ScopedEnv backend("SKEIN_BACKEND", "nccl");
    try {
      Communicator c(MPI_COMM_WORLD, context);
      ADD_FAILURE() << "no LogicError";
    } catch (const LogicError& e) {
      EXPECT_NE(std::string(e.what()).find("SKEIN_BACKEND"), std::string::npos) << e.what();
    }
    // An explicit choice in the code wins over the variable.
    Communicator c(MPI_COMM_WORLD, context, {}, CollectiveBackend::mpi);
    EXPECT_EQ(c.backend(), CollectiveBackend::mpi);
  }
  {
    ScopedEnv backend("SKEIN_BACKEND", "NCCL2");
    try {
      Communicator c(MPI_COMM_WORLD, context);
      ADD_FAILURE() << "no LogicError";
    } catch (const LogicError& e) {
      EXPECT_NE(std::string(e.what()).find("SKEIN_BACKEND='NCCL2'"), std::string::npos) << e.what();
    }
  }
}

TEST(CollectivesEnvironment, InvalidVariablesRaiseNamingThem) {
  const auto devices = pocl_devices();
  if (devices.empty()) GTEST_SKIP() << "needs an OpenCL platform with 2 devices";
  const Context context = Context::from_devices(devices[0]);
  {
    // Empty is unset, for every variable: the defaults.
    ScopedEnv timeout("SKEIN_COLLECTIVE_TIMEOUT", "");
    ScopedEnv check("SKEIN_CHECK_COLLECTIVES", "");
    EXPECT_NO_THROW(Communicator(MPI_COMM_WORLD, context));
  }
  {
    ScopedEnv bad("SKEIN_COLLECTIVE_TIMEOUT", "abc");
    try {
      Communicator c(MPI_COMM_WORLD, context);
      ADD_FAILURE() << "no LogicError";
    } catch (const LogicError& e) {
      EXPECT_NE(std::string(e.what()).find("SKEIN_COLLECTIVE_TIMEOUT"), std::string::npos) << e.what();
    }
  }
  {
    ScopedEnv bad("SKEIN_CHECK_COLLECTIVES", "maybe");
    try {
      Communicator c(MPI_COMM_WORLD, context);
      ADD_FAILURE() << "no LogicError";
    } catch (const LogicError& e) {
      EXPECT_NE(std::string(e.what()).find("SKEIN_CHECK_COLLECTIVES"), std::string::npos) << e.what();
    }
  }
}

TEST(CollectivesEnvironment, ForcedNcclOnNonCudaDevicesNamesThem) {
  const auto devices = pocl_devices();
  if (devices.empty()) GTEST_SKIP() << "needs an OpenCL platform with 2 devices";
  const Context context = Context::from_devices(devices[0]);
  try {
    Communicator c(MPI_COMM_WORLD, context, {}, CollectiveBackend::nccl);
    ADD_FAILURE() << "no LogicError";
  } catch (const LogicError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("NCCL"), std::string::npos) << what;
#if SKEIN_HAS_NCCL
    EXPECT_NE(what.find(devices[0].description()), std::string::npos) << what;
#endif
  }
  // MPI forced works on any device.
  Communicator c(MPI_COMM_WORLD, context, {}, CollectiveBackend::mpi);
  EXPECT_EQ(c.backend(), CollectiveBackend::mpi);
}

}  // namespace collectives_test
}  // namespace

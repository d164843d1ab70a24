// SPDX-License-Identifier: BSD-3-Clause
// Operations on distributed arrays (skein/dist_ops.hpp) under mpirun (1..4 ranks) on PoCL devices
// with the MPI backend. Every rank makes the whole global data from a hash of the global element
// index, so each rank computes every reference on its own host, independently of the devices and
// of the layout: elementwise results element by element, reductions in double (or the canonical
// pairwise tree of reduction.hpp written out on the host, bit for bit), row and column sums,
// dot products and matrix products with exact values. Sizes 0, 1, odd, fewer rows than members, a
// few MiB; even, weighted and counted splits with empty members; 2-D shapes with odd column
// counts; float32, float64 and int32. Bad calls raise LogicError on every rank, and a good call
// works afterwards (no rank left waiting).
//
// Two device set-ups, as in dist_array_test.cpp: the Runtime's own placement (4, 2, 1, 1 PoCL
// devices per rank for 1, 2, 3, 4 ranks) and exactly two devices per rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <skein/dist_ops.hpp>
#include <skein/skein.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "canonical_tree.hpp"
#include "dist_data.hpp"
#include "dist_support.hpp"
#include "mpi_support.hpp"
#include "scoped_env.hpp"
#include "skein/detail/backend.hpp"

namespace {
namespace dist_ops_test {

using namespace skein;
using ::skein::test::canonical_tree;
using ::skein::test::expect_logic_error;
using ::skein::test::make_dist;
using ::skein::test::mix;
using ::skein::test::Placement;
using ::skein::test::placement_name;
using ::skein::test::placement_rig;
using ::skein::test::placement_skip_reason;
using ::skein::test::Rig;
using ::skein::test::world_rank;
using ::skein::test::world_size;

// The same double, bit for bit, on every rank (results returned to the host are global).
void expect_same_on_every_rank(double value, const std::string& what) {
  const auto bits = std::bit_cast<std::uint64_t>(value);
  std::vector<std::uint64_t> all(static_cast<std::size_t>(world_size()));
  MPI_Allgather(&bits, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  for (std::size_t r = 0; r < all.size(); ++r) {
    EXPECT_EQ(all[r], bits) << what << ": rank " << r << " got " << std::bit_cast<double>(all[r])
                            << ", rank " << world_rank() << " got " << value;
  }
}

template <class T>
void expect_same(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(got[i] == want[i])) {
      ADD_FAILURE() << what << ": first difference at element " << i << " of " << got.size() << ": "
                    << +got[i] << " vs " << +want[i];
      return;
    }
  }
}

// |got[i] - want[i]| <= tol[i] for every element.
template <class T>
void expect_close(const std::vector<T>& got, const std::vector<double>& want,
                  const std::vector<double>& tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= tol[i])) {
      ADD_FAILURE() << what << ": first difference at element " << i << " of " << got.size() << ": "
                    << static_cast<double>(got[i]) << " vs " << want[i] << " (tolerance " << tol[i]
                    << ")";
      return;
    }
  }
}

// ---- host data ----------------------------------------------------------------------------------

// random: floats in [-1000, 1000) with full mantissas (sums round); exact: multiples of 1/4 in
// [-4, 4], whose products and short sums are exact in float32. Integers are small either way
// (in [-7, 7]), so that sums and dots never wrap.
enum class Fill { random, exact };

template <class T>
T value_at(std::uint64_t k, std::uint64_t salt, Fill fill) {
  const std::uint64_t h = mix(k * 0x632BE59BD9B4E019ull + salt * 0x8CB92BA72F3D8DD7ull);
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<int>(h % 15) - 7);
  } else if (fill == Fill::exact) {
    return static_cast<T>(static_cast<double>(static_cast<int>(h % 33) - 16) / 4.0);
  } else {
    return static_cast<T>(static_cast<double>(h >> 11) * 0x1p-53 * 2000.0 - 1000.0);
  }
}

// The whole global array, flat (row-major: a block of rows is a flat range).
template <class T>
std::vector<T> global_data(std::size_t n, std::uint64_t salt, Fill fill = Fill::random) {
  std::vector<T> out(n);
  for (std::size_t k = 0; k < n; ++k) out[k] = value_at<T>(k, salt, fill);
  return out;
}

// ---- set-ups (Rig and the placements: tests/support/dist_support.hpp) ---------------------------

// OpenCL's devices whatever SKEIN_API says: on a GPU machine the two-per-rank set-up runs on
// NVIDIA's OpenCL over the MPI backend (the Runtime's placement follows SKEIN_API).
class DistOps : public testing::TestWithParam<Placement> {
 protected:
  void SetUp() override {
    if (const auto why = placement_skip_reason(GetParam(), ApiId::opencl)) GTEST_SKIP() << *why;
    s_ = placement_rig(GetParam(), ApiId::opencl);
  }
  Rig s_;
};

INSTANTIATE_TEST_SUITE_P(Placements, DistOps,
                         testing::Values(Placement::runtime, Placement::two_per_rank),
                         placement_name);

// ---- shapes and splits --------------------------------------------------------------------------

std::size_t rows_of(const Shape& s) { return s[0]; }
std::size_t cols_of(const Shape& s) { return s.size() > 1 ? s[1] : 1; }

// Rows shared by the odd-numbered members only (even-numbered ones own none; one member: all).
RowSplit gaps_split(std::size_t rows, std::size_t M) {
  if (M == 1) return RowSplit::counts({rows});
  std::vector<std::size_t> counts(M, 0);
  const std::size_t odd = M / 2;
  for (std::size_t r = 0; r < rows; ++r) counts[2 * (r % odd) + 1] += 1;
  return RowSplit::counts(counts);
}

// Every row on the last member.
RowSplit last_split(std::size_t rows, std::size_t M) {
  std::vector<std::size_t> counts(M, 0);
  counts.back() = rows;
  return RowSplit::counts(counts);
}

// Weights 1, 2, ..., M (or M, ..., 1 reversed).
RowSplit weights_split(std::size_t M, bool reversed = false) {
  std::vector<double> w;
  for (std::size_t m = 0; m < M; ++m) w.push_back(static_cast<double>(reversed ? M - m : m + 1));
  return RowSplit::weights(w);
}

struct Case {
  Shape shape;
  RowSplit split;
  std::string name;
};

// Sizes 0, 1, odd, fewer rows than members, 2-D with odd columns, uneven splits with empty
// members; with `big`, a few MiB of `itemsize`-byte elements too.
std::vector<Case> cases(std::size_t M, std::size_t itemsize, bool big = true) {
  std::vector<Case> out = {
      {{0}, {}, "0 rows"},
      {{1}, {}, "1 row"},
      {{1001}, {}, "1001 even"},
      {{1001}, weights_split(M), "1001 weights 1..M"},
      {{37, 5}, {}, "37 x 5 even"},
      {{0, 3}, {}, "0 x 3"},
      {{2 * M + 1, 7}, gaps_split(2 * M + 1, M), "2M+1 x 7, odd members only"},
      {{9, 3}, last_split(9, M), "9 x 3 on the last member"},
  };
  if (M > 1) out.push_back({{M - 1}, {}, "fewer rows than members"});
  if (M > 1) out.push_back({{M - 1, 3}, {}, "fewer rows than members x 3"});
  if (big) {
    const std::size_t n = (std::size_t{3} << 20) / itemsize + 3;
    out.push_back({{n}, {}, "3 MiB even"});
    out.push_back({{n / 9, 9}, weights_split(M, true), "3 MiB x 9 weights M..1"});
  }
  return out;
}

template <class T>
constexpr double eps() {
  return std::is_integral_v<T> ? 0.0 : static_cast<double>(std::numeric_limits<T>::epsilon());
}

// A bound for a sum of n terms of total magnitude `mag` in any order that a reduction takes
// (chains of at most ~sqrt(n) sequential additions, then trees): a few hundred times below the
// effect of a missing block.
template <class T>
double sum_tolerance(std::size_t n, double mag) {
  return eps<T>() * (16.0 + std::sqrt(static_cast<double>(n))) * mag;
}

// ---- elementwise --------------------------------------------------------------------------------

// z = a * x + y with a user kernel (scalar first), in a new array and in place; a two-output
// kernel with the scalar between the arrays. Exact values, so the host's results are the device's.
template <class T>
void check_user_kernels(Rig& s, const Case& c, T a, const std::string& what) {
  const std::size_t n = shape_size(c.shape);
  const auto x = global_data<T>(n, 1, Fill::exact), y = global_data<T>(n, 2, Fill::exact);
  DistArray dx = make_dist(s, c.shape, c.split, x), dy = make_dist(s, c.shape, c.split, y);
  DistArray dz(*s.comm, c.shape, dtype_of<T>, c.split);

  const ElementwiseKernel axpb("T a, T x, T y", "T z", "z = a * x + y", {.name = "dist_axpb"});
  dist::elementwise(axpb, {a, dx, dy, dz});
  std::vector<T> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = static_cast<T>(a * x[i] + y[i]);
  expect_same(dz.all_gather<T>(), want, what + ": z = a * x + y");
  // The inputs are left as they were.
  expect_same(dx.all_gather<T>(), x, what + ": x after the kernel");

  // In place: y is the output too.
  dist::elementwise(axpb, {a, dx, dy, dy});
  expect_same(dy.all_gather<T>(), want, what + ": y = a * x + y in place");

  const ElementwiseKernel two("T x, T c, T y", "T s, T d", "s = x * c + y; d = x - y",
                              {.name = "dist_two"});
  DistArray ds(*s.comm, c.shape, dtype_of<T>, c.split), dd(*s.comm, c.shape, dtype_of<T>, c.split);
  const T k = static_cast<T>(3);
  dist::elementwise(two, {dx, k, dy, ds, dd});  // dy now holds a * x + y
  std::vector<T> want_s(n), want_d(n);
  for (std::size_t i = 0; i < n; ++i) {
    want_s[i] = static_cast<T>(x[i] * k + want[i]);
    want_d[i] = static_cast<T>(x[i] - want[i]);
  }
  expect_same(ds.all_gather<T>(), want_s, what + ": two outputs, s");
  expect_same(dd.all_gather<T>(), want_d, what + ": two outputs, d");
}

TEST_P(DistOps, ElementwiseUserKernels) {
  for (const auto& c : cases(s_.M(), 4)) {
    check_user_kernels<float>(s_, c, 2.5f, c.name + " float32");
    check_user_kernels<std::int32_t>(s_, c, -3, c.name + " int32");
  }
  for (const auto& c : cases(s_.M(), 8, false))
    check_user_kernels<double>(s_, c, -0.75, c.name + " float64");
}

// axpy, scale, fill and copy; the outputs have a halo row, which the operations must not touch.
template <class T>
void check_builtins(Rig& s, const Case& c, T a, T value, const std::string& what) {
  const std::size_t n = shape_size(c.shape), C = cols_of(c.shape);
  const auto x = global_data<T>(n, 3, Fill::exact), y = global_data<T>(n, 4, Fill::exact);
  DistArray dx = make_dist(s, c.shape, c.split, x), dy = make_dist(s, c.shape, c.split, y);
  DistArray out(*s.comm, c.shape, dtype_of<T>, c.split, {1});
  // Halo rows start as zeros; they must stay so.
  auto expect_halo_untouched = [&](const std::string& op) {
    for (std::size_t l = 0; l < out.local_size(); ++l) {
      if (out.local_rows(l).empty()) continue;
      const auto all = out.local_with_halo(l).get<T>();
      if (all.size() != (out.local_rows(l).size() + 2) * C) {
        ADD_FAILURE() << what << ": " << op << ": local device " << l << " holds " << all.size()
                      << " elements";
        continue;
      }
      for (std::size_t j = 0; j < C; ++j) {
        EXPECT_EQ(all[j], T{}) << what << ": " << op << " wrote the top halo of local device " << l;
        EXPECT_EQ(all[all.size() - C + j], T{})
            << what << ": " << op << " wrote the bottom halo of local device " << l;
      }
    }
  };

  std::vector<T> want(n);
  dist::axpy(a, dx, dy, out);
  for (std::size_t i = 0; i < n; ++i) want[i] = static_cast<T>(a * x[i] + y[i]);
  expect_same(out.all_gather<T>(), want, what + ": axpy");
  expect_halo_untouched("axpy");

  dist::scale(a, dx, out);
  for (std::size_t i = 0; i < n; ++i) want[i] = static_cast<T>(a * x[i]);
  expect_same(out.all_gather<T>(), want, what + ": scale");

  dist::fill(out, value);
  expect_same(out.all_gather<T>(), std::vector<T>(n, value), what + ": fill");
  expect_halo_untouched("fill");

  dist::copy(dy, out);
  expect_same(out.all_gather<T>(), y, what + ": copy");
  expect_halo_untouched("copy");

  // In place: y = a * x + y.
  dist::axpy(a, dx, dy, dy);
  for (std::size_t i = 0; i < n; ++i) want[i] = static_cast<T>(a * x[i] + y[i]);
  expect_same(dy.all_gather<T>(), want, what + ": axpy in place");

  // copy converts to the destination's dtype.
  DistArray wide(*s.comm, c.shape, Dtype::float64, c.split);
  dist::copy(dx, wide);
  std::vector<double> want_wide(x.begin(), x.end());
  expect_same(wide.all_gather<double>(), want_wide, what + ": copy to float64");
}

TEST_P(DistOps, AxpyScaleFillCopy) {
  for (const auto& c : cases(s_.M(), 4)) {
    check_builtins<float>(s_, c, 1.5f, 0.75f, c.name + " float32");
    check_builtins<std::int32_t>(s_, c, 3, -7, c.name + " int32");
  }
  for (const auto& c : cases(s_.M(), 8, false))
    check_builtins<double>(s_, c, -2.25, 9.5, c.name + " float64");
}

// Each DistArray has its own queue unless it is given one, and an operation runs on one operand's
// queue: a chain of operations without host reads between them must still see each other's
// results (each waits for the work its operands' queues hold, and their later work waits for
// it). Some arrays share one queue, the others have their own. A few MiB, so that the kernels
// take long enough for a missing wait to show, and several rounds.
TEST_P(DistOps, ChainedCallsStayOrderedAcrossQueues) {
  const std::size_t M = s_.M();
  const Shape shape{(std::size_t{2} << 20) / (4 * 7) + 1, 7};
  const std::size_t n = shape_size(shape);
  const RowSplit split = weights_split(M);
  const auto x = global_data<float>(n, 30, Fill::exact);
  const Queue shared(s_.comm->context());
  const BlockLayout layout = BlockLayout::over(*s_.comm, shape, split);
  DistArray dx = make_dist(s_, shape, split, x);
  DistArray y(*s_.comm, shared, layout, Dtype::float32), out(*s_.comm, layout, Dtype::float32);
  DistArray z(*s_.comm, shared, layout, Dtype::float32), w(*s_.comm, layout, Dtype::float32);
  DistArray rows(*s_.comm, {shape[0]}, Dtype::float32, split);
  ReplicatedArray cols(*s_.comm, {shape[1]}, Dtype::float32);
  const ElementwiseKernel add("T a, T b", "T c", "c = a + b", {.name = "dist_chain_add"});
  for (int round = 1; round <= 3; ++round) {
    const float v = static_cast<float>(round);
    dist::fill(y, v);                    // on y's (the shared) queue
    dist::axpy(3.0f, dx, y, out);        // on x's queue: out = 3 x + v
    dist::scale(-1.0f, out, y);          // on out's queue: y = -(3 x + v)
    dist::copy(y, z);                    // on the shared queue
    dist::elementwise(add, {z, dx, w});  // w = -(2 x + v)
    dist::sum_rows(w, rows);
    dist::sum_columns(w, cols);
    std::vector<float> want(n);
    std::vector<double> want_rows(shape[0], 0.0), want_cols(shape[1], 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      want[i] = -(2.0f * x[i] + v);
      want_rows[i / shape[1]] += want[i];
      want_cols[i % shape[1]] += want[i];
    }
    const std::string what = fmt::format("round {}", round);
    expect_same(w.all_gather<float>(), want, what + ": w");
    // Sums of multiples of 1/4 of at most a few thousand in magnitude: exact in float32.
    expect_close(rows.all_gather<float>(), want_rows, std::vector<double>(shape[0], 0.0),
                 what + ": row sums");
    for (std::size_t l = 0; l < cols.local_size(); ++l) {
      const auto got = cols.get<float>(l);
      for (std::size_t c = 0; c < shape[1]; ++c) {
        EXPECT_NEAR(got[c], want_cols[c],
                    1e-6 * std::fabs(want_cols[c]) * std::sqrt(double(shape[0])) + 1e-3)
            << what << ": column sum " << c << " on local device " << l;
      }
    }
  }
}

// ---- reductions: fast mode ----------------------------------------------------------------------

template <class T>
void check_fast_reductions(Rig& s, const Case& c, const std::string& what) {
  const std::size_t n = shape_size(c.shape);
  const auto x = global_data<T>(n, 5), y = global_data<T>(n, 6);
  DistArray dx = make_dist(s, c.shape, c.split, x), dy = make_dist(s, c.shape, c.split, y);
  double sum = 0, mag = 0, dot = 0, dot_mag = 0, sq = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double xi = static_cast<double>(x[i]), yi = static_cast<double>(y[i]);
    sum += xi;
    mag += std::fabs(xi);
    dot += xi * yi;
    dot_mag += std::fabs(xi * yi);
    sq += xi * xi;
  }
  const double got_sum = dist::sum(dx);
  EXPECT_LE(std::fabs(got_sum - sum), sum_tolerance<T>(n, mag))
      << what << ": sum " << got_sum << " vs " << sum;
  expect_same_on_every_rank(got_sum, what + ": sum");
  const double got_dot = dist::dot(dx, dy);
  EXPECT_LE(std::fabs(got_dot - dot), sum_tolerance<T>(n, dot_mag))
      << what << ": dot " << got_dot << " vs " << dot;
  expect_same_on_every_rank(got_dot, what + ": dot");
  const double got_nrm2 = dist::nrm2(dx);
  // sqrt halves the relative error of the sum of squares.
  EXPECT_LE(std::fabs(got_nrm2 - std::sqrt(sq)), sum_tolerance<T>(n, std::sqrt(sq)) + 1e-300)
      << what << ": nrm2 " << got_nrm2 << " vs " << std::sqrt(sq);
  expect_same_on_every_rank(got_nrm2, what + ": nrm2");
  if (n == 0) {
    // No identity for min and max (as NumPy and skein::min): an error on every rank.
    expect_logic_error([&] { (void)dist::min(dx); }, {"dist::min", "empty"}, what);
    expect_logic_error([&] { (void)dist::max(dx); }, {"dist::max", "empty"}, what);
    return;
  }
  // min and max are exact in any order.
  const double lo = static_cast<double>(*std::min_element(x.begin(), x.end()));
  const double hi = static_cast<double>(*std::max_element(x.begin(), x.end()));
  const double got_min = dist::min(dx), got_max = dist::max(dx);
  EXPECT_EQ(got_min, lo) << what << ": min";
  EXPECT_EQ(got_max, hi) << what << ": max";
  expect_same_on_every_rank(got_min, what + ": min");
  expect_same_on_every_rank(got_max, what + ": max");
}

TEST_P(DistOps, FastReductionsMatchTheHost) {
  for (const auto& c : cases(s_.M(), 4)) {
    check_fast_reductions<float>(s_, c, c.name + " float32");
    check_fast_reductions<std::int32_t>(s_, c, c.name + " int32");
  }
  for (const auto& c : cases(s_.M(), 8)) check_fast_reductions<double>(s_, c, c.name + " float64");
}

// dist::sum, min, max and dot finish on the host: each device's value is read, and the ranks'
// values are combined in one MPI exchange, a collective call like the Communicator's own. Ranks
// that make different calls there raise a LogicError on every rank: with the MPI backend's own
// check (which carries the values; found before they move, so the communicator goes on), and with
// the calls compared alongside as NCCL's are (by the watchdog, or by the calling thread), where
// the values' exchange carries each rank's call (the communicator is aborted, as for NCCL's
// calls). A call inside a group is refused. The check is on by default.
TEST_P(DistOps, ReductionsToOneValueThatDifferRaiseOnEveryRank) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  ::skein::test::ScopedEnv check("SKEIN_CHECK_COLLECTIVES", std::nullopt);
  for (const int mode : {0, 1, 2}) {
    SCOPED_TRACE(mode == 0   ? "the MPI backend's check"
                 : mode == 1 ? "compared alongside by the watchdog"
                             : "compared alongside by the calling thread");
    Rig r = placement_rig(GetParam(), ApiId::opencl);
    if (mode > 0) skein::detail::compare_alongside_for_testing(*r.comm, mode == 1);
    const std::size_t n = 1000;
    const auto x = global_data<float>(n, 21, Fill::exact);
    DistArray d = make_dist(r, {n}, {}, x);
    double want = 0;
    for (float v : x) want += v;
    EXPECT_EQ(dist::sum(d), want) << "an agreeing call first";
    r.comm->group_start();
    expect_logic_error([&] { (void)dist::sum(d); }, {"dist::sum", "group"});
    expect_logic_error([&] { (void)dist::dot(d, d, {.deterministic = true}); },
                       {"dist::dot", "group"});
    r.comm->group_end();
    // Rank 1 asks for the maximum where the others sum: the same exchange, another reduction.
    expect_logic_error([&] { (void)(world_rank() == 1 ? dist::max(d) : dist::sum(d)); },
                       {"all_reduce of host values", "reduction differs", "rank 1 has max"});
    if (mode == 0) {
      // Found before any value moved: the communicator goes on.
      EXPECT_EQ(dist::sum(d), want) << "an agreeing call after the mismatch";
      continue;
    }
    // Compared alongside, the calls' own exchanges differ too: the communicator is aborted.
    try {
      (void)dist::sum(d);
      ADD_FAILURE() << "the aborted communicator took another call";
    } catch (const RuntimeError& e) {
      EXPECT_NE(std::string(e.what()).find("aborted"), std::string::npos) << e.what();
    }
  }
  // A device all_reduce on rank 1 where the others reduce to one value: the check tells them
  // apart (the MPI backend's check pairs the two; compared alongside, the data's exchanges
  // would not, and the ranks would wait for SKEIN_COLLECTIVE_TIMEOUT instead).
  Rig r = placement_rig(GetParam(), ApiId::opencl);
  DistArray d = make_dist(r, {10}, {}, global_data<float>(10, 22, Fill::exact));
  expect_logic_error(
      [&] {
        if (world_rank() == 1) {
          std::vector<Array> one;
          for (std::size_t l = 0; l < r.L(); ++l) {
            one.push_back(Array::zeros(d.queue(), {1}, Dtype::float32, r.comm->device_idx(l)));
          }
          r.comm->all_reduce(d.queue(), one, one, ReduceOp::sum);
        } else {
          (void)dist::sum(d);
        }
      },
      {"operation differs"});
}

// A user kernel through reduce(): one result per local device, all equal, the cross-member
// operation as given.
TEST_P(DistOps, ReduceWithAUserKernel) {
  const std::size_t M = s_.M();
  const ReductionKernel abs_max("T x", "T y", "x < 0 ? -x : x", "a > b ? a : b", "0",
                                {.name = "dist_abs_max"});
  const ReductionKernel sum_sq("T x", "T y", "x * x", "a + b", "0", {.name = "dist_sum_sq"});
  for (const auto& c : cases(M, 4)) {
    const std::size_t n = shape_size(c.shape);
    const auto x = global_data<float>(n, 7);
    DistArray dx = make_dist(s_, c.shape, c.split, x);
    float want_max = 0;
    double want_sq = 0;
    for (float v : x) {
      want_max = std::max(want_max, std::fabs(v));
      want_sq += static_cast<double>(v) * v;
    }
    for (bool deterministic : {false, true}) {
      const std::string what = c.name + (deterministic ? " deterministic" : " fast");
      const auto maxes = dist::reduce(abs_max, dx, ReduceOp::max, {.deterministic = deterministic});
      const auto sums = dist::reduce(sum_sq, dx, ReduceOp::sum, {.deterministic = deterministic});
      ASSERT_EQ(maxes.size(), s_.L()) << what;
      ASSERT_EQ(sums.size(), s_.L()) << what;
      for (std::size_t l = 0; l < s_.L(); ++l) {
        EXPECT_EQ(maxes[l].device_idx(), s_.comm->device_idx(l)) << what;
        EXPECT_EQ(maxes[l].dtype(), Dtype::float32) << what;
        EXPECT_EQ(reduction_value<float>(maxes[l]), want_max)
            << what << ": |x| max on local device " << l;
        const float got = reduction_value<float>(sums[l]);
        EXPECT_LE(std::fabs(got - want_sq), sum_tolerance<float>(n, want_sq))
            << what << ": sum of squares " << got << " vs " << want_sq << " on local device " << l;
        EXPECT_EQ(std::bit_cast<std::uint32_t>(got),
                  std::bit_cast<std::uint32_t>(reduction_value<float>(sums[0])))
            << what << ": local devices disagree";
      }
      expect_same_on_every_rank(reduction_value<float>(sums[0]), what + ": sum of squares");
    }
  }
}

// ---- reductions: deterministic mode -------------------------------------------------------------

// Shapes of the same n elements: 1-D, and 2-D with each odd column count that divides n.
std::vector<Shape> shapes_of(std::size_t n) {
  std::vector<Shape> out = {{n}};
  for (std::size_t cols : {3u, 5u, 7u, 13u}) {
    if (n > 0 && n % cols == 0) out.push_back({n / cols, cols});
  }
  return out;
}

// Every split to try for `rows` rows: even, weights both ways, odd members only, all on the
// last member.
std::vector<std::pair<RowSplit, std::string>> splits_of(std::size_t rows, std::size_t M) {
  return {{RowSplit::even(), "even"},
          {weights_split(M), "weights 1..M"},
          {weights_split(M, true), "weights M..1"},
          {gaps_split(rows, M), "odd members only"},
          {last_split(rows, M), "all on the last member"}};
}

// float32 sum, dot and nrm2 in deterministic mode equal the host's canonical tree bit for bit,
// for every shape and split of the same global data (and so for any rank and device count: the
// reference does not depend on them). min and max are exact.
TEST_P(DistOps, DeterministicFloat32IsTheCanonicalTree) {
  const std::size_t M = s_.M();
  std::vector<std::size_t> sizes = {0, 1, 13, 1001, 12285, (std::size_t{3} << 20) / 4 + 3};
  if (M > 1) sizes.push_back(M - 1);
  for (std::size_t n : sizes) {
    const auto x = global_data<float>(n, 8), y = global_data<float>(n, 9);
    std::vector<float> xy(n), xx(n);
    for (std::size_t i = 0; i < n; ++i) {
      xy[i] = x[i] * y[i];
      xx[i] = x[i] * x[i];
    }
    const auto add = [](float a, float b) { return a + b; };
    const float want_sum = canonical_tree<float>(x, 0.0f, add);
    const float want_dot = canonical_tree<float>(xy, 0.0f, add);
    const double want_nrm2 = std::sqrt(static_cast<double>(canonical_tree<float>(xx, 0.0f, add)));
    const bool big = n > 100000;
    for (const Shape& shape : shapes_of(n)) {
      auto splits = splits_of(rows_of(shape), M);
      if (big) splits.resize(3);  // the few-MiB array: even and both weights only
      for (const auto& [split, split_name] : splits) {
        const std::string what = fmt::format("{} {}", to_string(shape), split_name);
        DistArray dx = make_dist(s_, shape, split, x), dy = make_dist(s_, shape, split, y);
        const dist::DistReductionOptions det{.deterministic = true};
        const double got_sum = dist::sum(dx, det);
        EXPECT_EQ(std::bit_cast<std::uint32_t>(static_cast<float>(got_sum)),
                  std::bit_cast<std::uint32_t>(want_sum))
            << what << ": sum " << got_sum << " vs " << want_sum;
        EXPECT_EQ(got_sum, static_cast<double>(static_cast<float>(got_sum)))
            << what << ": a float32 result";
        const double got_dot = dist::dot(dx, dy, det);
        EXPECT_EQ(std::bit_cast<std::uint32_t>(static_cast<float>(got_dot)),
                  std::bit_cast<std::uint32_t>(want_dot))
            << what << ": dot " << got_dot << " vs " << want_dot;
        const double got_nrm2 = dist::nrm2(dx, det);
        EXPECT_EQ(got_nrm2, want_nrm2) << what << ": nrm2";
        expect_same_on_every_rank(got_sum, what + ": sum");
        expect_same_on_every_rank(got_dot, what + ": dot");
        if (n > 0) {
          EXPECT_EQ(dist::min(dx, det), static_cast<double>(*std::min_element(x.begin(), x.end())))
              << what;
          EXPECT_EQ(dist::max(dx, det), static_cast<double>(*std::max_element(x.begin(), x.end())))
              << what;
        }
      }
    }
  }
}

// float64 sums follow the canonical tree too; int32 sums (int64) are exact.
TEST_P(DistOps, DeterministicFloat64AndInt32) {
  const std::size_t M = s_.M();
  for (std::size_t n :
       {std::size_t{0}, std::size_t{1}, std::size_t{1001}, (std::size_t{3} << 20) / 8 + 3}) {
    const auto x = global_data<double>(n, 10), y = global_data<double>(n, 11);
    std::vector<double> xy(n);
    for (std::size_t i = 0; i < n; ++i) xy[i] = x[i] * y[i];
    const auto add = [](double a, double b) { return a + b; };
    const double want_sum = canonical_tree<double>(x, 0.0, add),
                 want_dot = canonical_tree<double>(xy, 0.0, add);
    const auto ints = global_data<std::int32_t>(n, 12);
    std::int64_t want_int = 0;
    for (auto v : ints) want_int += v;
    for (const Shape& shape : shapes_of(n)) {
      for (const auto& [split, split_name] : splits_of(rows_of(shape), M)) {
        const std::string what = fmt::format("{} {}", to_string(shape), split_name);
        const dist::DistReductionOptions det{.deterministic = true};
        DistArray dx = make_dist(s_, shape, split, x), dy = make_dist(s_, shape, split, y);
        EXPECT_EQ(dist::sum(dx, det), want_sum) << what << ": float64 sum";
        EXPECT_EQ(dist::dot(dx, dy, det), want_dot) << what << ": float64 dot";
        DistArray di = make_dist(s_, shape, split, ints);
        EXPECT_EQ(dist::sum(di, det), static_cast<double>(want_int)) << what << ": int32 sum";
        EXPECT_EQ(dist::sum(di), static_cast<double>(want_int)) << what << ": int32 sum, fast";
      }
    }
  }
}

// ---- per-axis sums ------------------------------------------------------------------------------

template <class T>
void check_axis_sums(Rig& s, const Shape& shape, const RowSplit& split, const std::string& what) {
  using S = std::conditional_t<std::is_integral_v<T>, std::int64_t, T>;  // sum_dtype
  const std::size_t R = shape[0], C = shape[1];
  const auto x = global_data<T>(R * C, 13);
  DistArray dx = make_dist(s, shape, split, x);
  std::vector<double> rows(R, 0.0), rows_tol(R, 0.0), cols(C, 0.0), cols_tol(C, 0.0);
  for (std::size_t r = 0; r < R; ++r) {
    for (std::size_t c = 0; c < C; ++c) {
      const double v = static_cast<double>(x[r * C + c]);
      rows[r] += v;
      cols[c] += v;
      rows_tol[r] += std::fabs(v);
      cols_tol[c] += std::fabs(v);
    }
  }
  for (auto& t : rows_tol) t = sum_tolerance<T>(C, t);
  for (auto& t : cols_tol) t = sum_tolerance<T>(R, t);

  DistArray out(*s.comm, {R}, dtype_of<S>, split);
  dist::sum_rows(dx, out);
  expect_close(out.all_gather<S>(), rows, rows_tol, what + ": sum_rows");
  ReplicatedArray col_out(*s.comm, {C}, dtype_of<S>);
  dist::sum_columns(dx, col_out);
  for (std::size_t l = 0; l < col_out.local_size(); ++l) {
    expect_close(col_out.get<S>(l), cols, cols_tol,
                 what + fmt::format(": sum_columns on local device {}", l));
  }
}

TEST_P(DistOps, SumRowsAndColumns) {
  const std::size_t M = s_.M();
  std::vector<std::pair<Shape, RowSplit>> shapes = {
      {{0, 3}, {}},
      {{1, 1}, {}},
      {{1, 7}, {}},
      {{37, 5}, {}},
      {{1001, 3}, weights_split(M)},
      {{2 * M + 1, 7}, gaps_split(2 * M + 1, M)},
      {{9, 13}, last_split(9, M)},
      {{(std::size_t{3} << 20) / (4 * 257) + 1, 257}, weights_split(M, true)},
  };
  if (M > 1) shapes.push_back({{M - 1, 5}, {}});
  for (const auto& [shape, split] : shapes) {
    const std::string what = to_string(shape);
    check_axis_sums<float>(s_, shape, split, what + " float32");
    check_axis_sums<double>(s_, shape, split, what + " float64");
    check_axis_sums<std::int32_t>(s_, shape, split, what + " int32");
  }
}

// ---- BLAS ---------------------------------------------------------------------------------------

template <class T>
void check_blas_dot(Rig& s, const Case& c, const std::string& what) {
  const std::size_t n = shape_size(c.shape);
  const auto x = global_data<T>(n, 14), y = global_data<T>(n, 15);
  DistArray dx = make_dist(s, c.shape, c.split, x), dy = make_dist(s, c.shape, c.split, y);
  double dot = 0, mag = 0, sq = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double p = static_cast<double>(x[i]) * static_cast<double>(y[i]);
    dot += p;
    mag += std::fabs(p);
    sq += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  }
  const double got = dist::blas_dot(dx, dy);
  EXPECT_LE(std::fabs(got - dot), sum_tolerance<T>(n, mag))
      << what << ": blas_dot " << got << " vs " << dot;
  expect_same_on_every_rank(got, what + ": blas_dot");
  const double got_nrm2 = dist::blas_nrm2(dx);
  EXPECT_LE(std::fabs(got_nrm2 - std::sqrt(sq)), sum_tolerance<T>(n, std::sqrt(sq)))
      << what << ": blas_nrm2 " << got_nrm2 << " vs " << std::sqrt(sq);
  expect_same_on_every_rank(got_nrm2, what + ": blas_nrm2");
}

TEST_P(DistOps, BlasDotAndNrm2) {
  if (!blas::status(ApiId::opencl).available) GTEST_SKIP() << blas::status(ApiId::opencl).reason;
  for (const auto& c : cases(s_.M(), 4)) check_blas_dot<float>(s_, c, c.name + " float32");
  for (const auto& c : cases(s_.M(), 8)) check_blas_dot<double>(s_, c, c.name + " float64");
}

// Host matrix products in double of exact values (every partial sum is exact in float32 for the
// sizes used, so the device's result must equal the host's whatever its order).
std::vector<double> host_gemm(double alpha, const std::vector<double>& a,
                              const std::vector<double>& b, double beta,
                              const std::vector<double>& c, std::size_t m, std::size_t k,
                              std::size_t n) {
  std::vector<double> out(m * n);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::size_t p = 0; p < k; ++p) acc += a[i * k + p] * b[p * n + j];
      out[i * n + j] = alpha * acc + beta * c[i * n + j];
    }
  }
  return out;
}

template <class T>
std::vector<double> as_double(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

struct GemvCase {
  std::size_t m, n;
  RowSplit a_split;  // A and y
  RowSplit x_split;  // the distributed x
  std::string name;
};

template <class T>
void check_gemv(Rig& s, const GemvCase& g, const std::string& what) {
  const std::size_t m = g.m, n = g.n;
  const auto a = global_data<T>(m * n, 16, Fill::exact), x = global_data<T>(n, 17, Fill::exact),
             y0 = global_data<T>(m, 18, Fill::exact);
  const double alpha = 1.5, beta = -0.5;
  const auto want = host_gemm(alpha, as_double(a), as_double(x), beta, as_double(y0), m, n, 1);
  const std::vector<double> exact(m, 0.0);
  DistArray da = make_dist(s, {m, n}, g.a_split, a);
  {
    DistArray dy = make_dist(s, {m}, g.a_split, y0);
    const auto rx = ReplicatedArray::from_host(*s.comm, std::span<const T>(x));
    dist::gemv(alpha, da, rx, beta, dy);
    expect_close(dy.all_gather<T>(), want, exact, what + ": gemv, x replicated");
  }
  {
    DistArray dy = make_dist(s, {m}, g.a_split, y0);
    DistArray dxd = make_dist(s, {n}, g.x_split, x);
    dist::gemv(alpha, da, dxd, beta, dy);
    expect_close(dy.all_gather<T>(), want, exact, what + ": gemv, x distributed");
  }
}

TEST_P(DistOps, Gemv) {
  if (!blas::status(ApiId::opencl).available) GTEST_SKIP() << blas::status(ApiId::opencl).reason;
  const std::size_t M = s_.M();
  std::vector<GemvCase> gs = {
      {0, 5, {}, {}, "0 x 5"},
      {1, 1, {}, last_split(1, M), "1 x 1"},
      {1, 7, last_split(1, M), {}, "1 x 7 on the last member"},
      {37, 9, {}, weights_split(M), "37 x 9, x weighted"},
      {101, 13, weights_split(M), gaps_split(13, M), "101 x 13 weighted, x on odd members"},
      {2 * M + 1, 33, gaps_split(2 * M + 1, M), last_split(33, M),
       "2M+1 x 33 on odd members, x on the last"},
      {(std::size_t{3} << 20) / (4 * 257), 257, weights_split(M, true), weights_split(M),
       "3 MiB, weighted"},
  };
  if (M > 1) gs.push_back({M - 1, 3, {}, {}, "fewer rows than members"});
  for (const auto& g : gs) {
    check_gemv<float>(s_, g, g.name + " float32");
    check_gemv<double>(s_, g, g.name + " float64");
  }
}

struct GemmCase {
  std::size_t m, k, n;
  RowSplit a_split;  // A and C
  RowSplit b_split;  // the distributed B
  std::string name;
};

template <class T>
void check_gemm(Rig& s, const GemmCase& g, const std::string& what) {
  const std::size_t m = g.m, k = g.k, n = g.n;
  const auto a = global_data<T>(m * k, 19, Fill::exact), b = global_data<T>(k * n, 20, Fill::exact),
             c0 = global_data<T>(m * n, 21, Fill::exact);
  const double alpha = -1.5, beta = 0.25;
  const auto want = host_gemm(alpha, as_double(a), as_double(b), beta, as_double(c0), m, k, n);
  const std::vector<double> exact(m * n, 0.0);
  DistArray da = make_dist(s, {m, k}, g.a_split, a);
  {
    DistArray dc = make_dist(s, {m, n}, g.a_split, c0);
    const auto rb = ReplicatedArray::from_host(*s.comm, std::span<const T>(b), {k, n});
    dist::gemm(alpha, da, rb, beta, dc);
    expect_close(dc.all_gather<T>(), want, exact, what + ": gemm, B replicated");
  }
  {
    // B given transposed (n x k), with trans_b.
    std::vector<T> bt(n * k);
    for (std::size_t p = 0; p < k; ++p) {
      for (std::size_t j = 0; j < n; ++j) bt[j * k + p] = b[p * n + j];
    }
    DistArray dc = make_dist(s, {m, n}, g.a_split, c0);
    const auto rbt = ReplicatedArray::from_host(*s.comm, std::span<const T>(bt), {n, k});
    dist::gemm(alpha, da, rbt, beta, dc, {.trans_b = true});
    expect_close(dc.all_gather<T>(), want, exact, what + ": gemm, B replicated, trans_b");
  }
  {
    DistArray dc = make_dist(s, {m, n}, g.a_split, c0);
    DistArray db = make_dist(s, {k, n}, g.b_split, b);
    dist::gemm(alpha, da, db, beta, dc);
    expect_close(dc.all_gather<T>(), want, exact, what + ": gemm, B distributed");
  }
}

TEST_P(DistOps, Gemm) {
  if (!blas::status(ApiId::opencl).available) GTEST_SKIP() << blas::status(ApiId::opencl).reason;
  const std::size_t M = s_.M();
  std::vector<GemmCase> gs = {
      {0, 3, 5, {}, {}, "0 x 3 x 5"},
      {1, 1, 1, {}, {}, "1 x 1 x 1"},
      {3, 1, 7, last_split(3, M), weights_split(M), "3 x 1 x 7 on the last member"},
      {37, 9, 5, {}, gaps_split(9, M), "37 x 9 x 5, B on odd members"},
      {101, 13, 7, weights_split(M), last_split(13, M),
       "101 x 13 x 7 weighted, B on the last member"},
      {2 * M + 1, 33, 3, gaps_split(2 * M + 1, M), weights_split(M, true),
       "2M+1 x 33 x 3 on odd members"},
      {(std::size_t{3} << 20) / (4 * 129),
       65,
       129,
       weights_split(M, true),
       {},
       "3 MiB C, weighted"},
  };
  if (M > 1) gs.push_back({M - 1, 4, 3, {}, {}, "fewer rows than members"});
  for (const auto& g : gs) {
    check_gemm<float>(s_, g, g.name + " float32");
    check_gemm<double>(s_, g, g.name + " float64");
  }
}

// replicate(): the whole array on every local device, whatever the split.
template <class T>
void check_replicate(Rig& s, const Case& c, const std::string& what) {
  const auto x = global_data<T>(shape_size(c.shape), 22);
  DistArray dx = make_dist(s, c.shape, c.split, x);
  const ReplicatedArray r = dist::replicate(dx);
  EXPECT_EQ(r.shape(), c.shape) << what;
  EXPECT_EQ(r.dtype(), dtype_of<T>) << what;
  ASSERT_EQ(r.local_size(), s.L()) << what;
  for (std::size_t l = 0; l < r.local_size(); ++l) {
    EXPECT_EQ(r.local(l).device_idx(), s.comm->device_idx(l)) << what;
    expect_same(r.get<T>(l), x, what + fmt::format(": local device {}", l));
  }
}

TEST_P(DistOps, ReplicateGathersTheWholeArrayOnEveryDevice) {
  const std::size_t M = s_.M();
  auto all = cases(M, 4);
  all.push_back({{4 * M, 3}, {}, "4M x 3 (every block alike)"});
  all.push_back({{3 * M + 2, 5}, gaps_split(3 * M + 2, M), "3M+2 x 5 on odd members"});
  for (const auto& c : all) {
    check_replicate<float>(s_, c, c.name + " float32");
    check_replicate<std::int32_t>(s_, c, c.name + " int32");
  }
  for (const auto& c : cases(M, 8)) check_replicate<double>(s_, c, c.name + " float64");
}

// ---- bad calls ----------------------------------------------------------------------------------

// After a bad call on every rank, a good collective operation must still work.
void expect_still_working(Rig& s) {
  const Shape shape{s.M() + 3, 2};
  const auto x = global_data<float>(shape_size(shape), 99, Fill::exact);
  DistArray d = make_dist(s, shape, {}, x);
  double want = 0;
  for (float v : x) want += v;
  EXPECT_EQ(dist::sum(d), want) << "a good call after the error";
}

TEST_P(DistOps, MismatchedLayoutsRaiseOnEveryRank) {
  const std::size_t M = s_.M();
  DistArray x(*s_.comm, {10}, Dtype::float32), y(*s_.comm, {10}, Dtype::float32);
  DistArray longer(*s_.comm, {11}, Dtype::float32);
  // The same rows, split another way (with one member, another row count does it).
  DistArray other_split = M > 1 ? DistArray(*s_.comm, {10}, Dtype::float32, last_split(10, M))
                                : DistArray(*s_.comm, {9}, Dtype::float32);
  const std::string split_words = M > 1 ? "split their rows differently" : "different layouts";

  expect_logic_error([&] { dist::axpy(2.0f, x, longer, y); },
                     {"dist::axpy", "x and y", "different layouts", "(10", "(11"});
  expect_logic_error([&] { dist::axpy(2.0f, x, y, other_split); },
                     {"dist::axpy", "x and out", split_words});
  expect_logic_error([&] { dist::scale(2.0f, x, longer); }, {"dist::scale", "different layouts"});
  expect_logic_error([&] { dist::copy(other_split, y); },
                     {"dist::copy", "src and dst", split_words});
  const ElementwiseKernel add("T x, T y", "T z", "z = x + y", {.name = "dist_add"});
  expect_logic_error(
      [&] {
        dist::elementwise(add, {x, other_split, y});
      },
      {"dist::elementwise", split_words});
  expect_logic_error(
      [&] {
        dist::elementwise(add, {x, 1.0f, longer});
      },
      {"dist::elementwise", "different layouts"});
  expect_logic_error([&] { (void)dist::dot(x, longer); }, {"dist::dot", "different layouts"});
  expect_logic_error([&] { (void)dist::dot(x, other_split, {.deterministic = true}); },
                     {"dist::dot", split_words});
  expect_logic_error([&] { (void)dist::blas_dot(other_split, x); },
                     {"dist::blas_dot", split_words});
  expect_still_working(s_);

  // Elementwise arguments that are not distributed.
  const Array single = Array::zeros(x.queue(), {10}, Dtype::float32, s_.comm->device_idx(0));
  expect_logic_error([&] { dist::DistOperand{Operand(single)}; },
                     {"dist::DistOperand", "single-device"});
  expect_logic_error(
      [&] {
        dist::elementwise(add, {1.0f, 2.0f, 3.0f});
      },
      {"dist::elementwise", "no distributed operand"});

  // Arrays of another communicator (a second one over the same ranks and devices).
  std::unique_ptr<Communicator> second =
      s_.runtime ? std::make_unique<Communicator>(*s_.runtime)
                 : std::make_unique<Communicator>(MPI_COMM_WORLD, s_.comm->context(),
                                                  std::vector<std::size_t>{0, 1});
  {
    DistArray foreign(*second, {10}, Dtype::float32);
    expect_logic_error([&] { dist::copy(x, foreign); }, {"dist::copy", "different communicators"});
  }
  expect_still_working(s_);

  // Per-axis sums: shapes that do not go together.
  DistArray m2(*s_.comm, {10, 3}, Dtype::float32);
  expect_logic_error([&] { dist::sum_rows(m2, longer); }, {"dist::sum_rows", "(10, 3)", "(11"});
  expect_logic_error([&] { dist::sum_rows(x, y); }, {"dist::sum_rows", "2-D"});
  if (M > 1) {
    DistArray split_out(*s_.comm, {10}, Dtype::float32, last_split(10, M));
    expect_logic_error([&] { dist::sum_rows(m2, split_out); },
                       {"dist::sum_rows", "split their rows differently"});
  }
  ReplicatedArray four(*s_.comm, {4}, Dtype::float32);
  expect_logic_error([&] { dist::sum_columns(m2, four); }, {"dist::sum_columns", "(10, 3)", "(4"});

  // gemv / gemm: shapes, layouts, trans_a.
  ReplicatedArray x3(*s_.comm, {3}, Dtype::float32), x4(*s_.comm, {4}, Dtype::float32);
  expect_logic_error([&] { dist::gemv(1.0, m2, x4, 0.0, x); }, {"dist::gemv", "(10, 3)", "(4"});
  expect_logic_error([&] { dist::gemv(1.0, m2, x3, 0.0, longer); }, {"dist::gemv", "(11"});
  if (M > 1)
    expect_logic_error([&] { dist::gemv(1.0, m2, x3, 0.0, other_split); },
                       {"dist::gemv", "A and y", split_words});
  ReplicatedArray b34(*s_.comm, {3, 4}, Dtype::float32);
  DistArray c104(*s_.comm, {10, 4}, Dtype::float32), c114(*s_.comm, {11, 4}, Dtype::float32);
  expect_logic_error([&] { dist::gemm(1.0, m2, b34, 0.0, c114); }, {"dist::gemm", "(11, 4)"});
  expect_logic_error([&] { dist::gemm(1.0, m2, b34, 0.0, c104, {.trans_a = true}); },
                     {"dist::gemm", "trans_a"});
  if (M > 1) {
    DistArray c_split(*s_.comm, {10, 4}, Dtype::float32, last_split(10, M));
    expect_logic_error([&] { dist::gemm(1.0, m2, b34, 0.0, c_split); },
                       {"dist::gemm", "A and C", "split"});
  }
  expect_still_working(s_);
}

}  // namespace dist_ops_test
}  // namespace

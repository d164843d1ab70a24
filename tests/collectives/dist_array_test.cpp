// SPDX-License-Identifier: BSD-3-Clause
// BlockLayout, DistArray and ReplicatedArray under mpirun (1..4 ranks) on PoCL devices with the
// MPI backend. Layout queries are checked against host computations written out independently
// (scans over the blocks, hand-computed weight splits); every device result against host data
// made from a formula of the global row and column, so each rank knows what every block, halo
// row and gathered array must hold without asking another rank. Sizes 0, 1, odd, fewer rows than
// members, uneven and empty blocks, 2-D with odd column counts, and a few MiB. Bad calls must
// raise LogicError on every rank, and a good call must work afterwards (no rank left waiting).
// The halo exchange's values are checked in dist_array_halo_test.cpp (its bad calls here).
//
// Two device set-ups, as in collectives_test.cpp: the Runtime's own placement (4, 2, 1, 1 PoCL
// devices per rank for 1, 2, 3, 4 ranks) and exactly two devices per rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <skein/dist_array.hpp>
#include <optional>
#include <skein/skein.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "dist_support.hpp"
#if SKEIN_HAS_HDF5
#include <skein/checkpoint.hpp>
#include <skein/hdf5.hpp>
#endif
#if SKEIN_HAS_CUDA
#include <skein/cuda.hpp>
#endif
#if SKEIN_HAS_OPENCL
#include <skein/opencl.hpp>
#endif
#include "mpi_support.hpp"

namespace {
namespace dist_array_test {

using namespace skein;
using ::skein::test::expect_logic_error;
using ::skein::test::on_every_rank;
using ::skein::test::Placement;
using ::skein::test::placement_name;
using ::skein::test::Rig;
using ::skein::test::TempDir;
using ::skein::test::world_rank;
using ::skein::test::world_size;

template <class T>
void expect_same(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(got[i] == want[i])) {
      ADD_FAILURE() << what << ": first difference at element " << i << " of " << got.size();
      return;
    }
  }
}

// ---- host data ----------------------------------------------------------------------------------

// Exact in every dtype used here (int16, float32, float64, complex64).
template <class T>
T value_of(std::uint64_t k) {
  if constexpr (std::is_same_v<T, std::complex<float>>) {
    return T(static_cast<float>(k % 4093), -static_cast<float>(k % 1021));
  } else {
    return static_cast<T>(k % 32749);
  }
}

std::size_t rows_of(const Shape& s) { return s[0]; }
std::size_t cols_of(const Shape& s) { return s.size() > 1 ? s[1] : 1; }

template <class T>
T element(std::size_t row, std::size_t col, std::uint64_t salt) {
  return value_of<T>(row * 1000003u + col * 7u + salt * 101u);
}

// Rows [begin, end) of the global array, row-major.
template <class T>
std::vector<T> host_rows(const Shape& shape, std::size_t begin, std::size_t end,
                         std::uint64_t salt) {
  std::vector<T> out;
  out.reserve((end - begin) * cols_of(shape));
  for (std::size_t r = begin; r < end; ++r) {
    for (std::size_t c = 0; c < cols_of(shape); ++c) out.push_back(element<T>(r, c, salt));
  }
  return out;
}

template <class T>
std::vector<T> host_array(const Shape& shape, std::uint64_t salt) {
  return host_rows<T>(shape, 0, rows_of(shape), salt);
}

// ---- set-ups (Rig and the placements: tests/support/dist_support.hpp) ---------------------------

class DistArrays : public ::skein::test::PlacementTest {};

INSTANTIATE_TEST_SUITE_P(Layouts, DistArrays,
                         testing::Values(Placement::runtime, Placement::two_per_rank),
                         placement_name);

// ---- BlockLayout on the host --------------------------------------------------------------------

// The blocks as [begin, end) pairs from plain row counts, and the checks every layout must pass
// against them: rows and ranks, owners by scanning, locations, shapes.
void check_layout(const BlockLayout& layout, const Shape& shape,
                  const std::vector<std::size_t>& per_rank, const std::vector<std::size_t>& counts,
                  std::size_t halo, const std::string& what) {
  const std::size_t M = counts.size();
  ASSERT_EQ(layout.members(), M) << what;
  ASSERT_EQ(layout.ranks(), static_cast<int>(per_rank.size())) << what;
  EXPECT_EQ(layout.shape(), shape) << what;
  EXPECT_EQ(layout.rows(), rows_of(shape)) << what;
  EXPECT_EQ(layout.row_size(), cols_of(shape)) << what;
  std::vector<std::size_t> begin(M + 1, 0);
  for (std::size_t m = 0; m < M; ++m) begin[m + 1] = begin[m] + counts[m];
  ASSERT_EQ(begin[M], rows_of(shape)) << what;
  // Member -> (rank, local device), by walking the ranks.
  std::vector<MemberLocation> where;
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    for (std::size_t l = 0; l < per_rank[r]; ++l)
      where.push_back({where.size(), static_cast<int>(r), l});
  }
  ASSERT_EQ(where.size(), M) << what;
  for (std::size_t m = 0; m < M; ++m) {
    EXPECT_EQ(layout.member_rows(m), (RowRange{begin[m], begin[m + 1]})) << what << " member " << m;
    EXPECT_EQ(layout.location(m), where[m]) << what << " member " << m;
    EXPECT_EQ(layout.member_of(where[m].rank, where[m].local_device), m) << what;
    Shape block = shape;
    block[0] = counts[m];
    EXPECT_EQ(layout.block_shape(m), block) << what << " member " << m;
    block[0] = counts[m] == 0 ? 0 : counts[m] + 2 * halo;
    EXPECT_EQ(layout.block_shape(m, true), block) << what << " member " << m;
  }
  std::size_t first = 0;
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    const int rank = static_cast<int>(r);
    EXPECT_EQ(layout.members_of_rank(rank), per_rank[r]) << what;
    EXPECT_EQ(layout.first_member_of_rank(rank), first) << what;
    EXPECT_EQ(layout.rank_rows(rank), (RowRange{begin[first], begin[first + per_rank[r]]})) << what;
    first += per_rank[r];
  }
  for (std::size_t row = 0; row < rows_of(shape); ++row) {
    std::size_t owner = M;
    for (std::size_t m = 0; m < M; ++m) {
      if (begin[m] <= row && row < begin[m + 1]) owner = m;
    }
    ASSERT_LT(owner, M) << what;
    EXPECT_EQ(layout.owner(row), where[owner]) << what << " row " << row;
  }
}

TEST(DistLayout, EvenSplitMatchesAHostComputation) {
  const std::vector<std::vector<std::size_t>> rank_sets = {{1}, {2}, {1, 1, 1}, {2, 1, 3}, {4, 4}};
  for (const auto& per_rank : rank_sets) {
    std::size_t M = 0;
    for (auto n : per_rank) M += n;
    for (std::size_t rows : {0u, 1u, 2u, 3u, 7u, 8u, 100u, 1001u}) {
      for (const Shape& shape : {Shape{rows}, Shape{rows, 5}}) {
        // Even: the first rows % M members one more; counted out row by row.
        std::vector<std::size_t> counts(M, 0);
        for (std::size_t r = 0; r < rows; ++r) counts[r % M] += 1;
        const std::string what =
            fmt::format("shape {} over [{}]", to_string(shape), fmt::join(per_rank, ","));
        check_layout(BlockLayout(shape, per_rank), shape, per_rank, counts, 0, what);
        if (rows >= 2 * M)
          check_layout(BlockLayout(shape, per_rank, {}, {2}), shape, per_rank, counts, 2,
                       what + " halo 2");
      }
    }
  }
}

TEST(DistLayout, ExplicitCountsAndWeights) {
  const std::vector<std::size_t> per_rank = {1, 2, 1};
  check_layout(BlockLayout({10, 3}, per_rank, RowSplit::counts({3, 0, 2, 5})), {10, 3}, per_rank,
               {3, 0, 2, 5}, 0, "counts 3 0 2 5");
  check_layout(BlockLayout({4}, per_rank, RowSplit::counts({0, 0, 0, 4})), {4}, per_rank,
               {0, 0, 0, 4}, 0, "all rows on the last member");
  check_layout(BlockLayout({0}, per_rank, RowSplit::counts({0, 0, 0, 0})), {0}, per_rank,
               {0, 0, 0, 0}, 0, "no rows");
  // Weights, ends at round(rows * prefix / total), worked out by hand.
  const std::vector<std::size_t> three = {3};
  check_layout(BlockLayout({8}, three, RowSplit::weights({1, 1, 2})), {8}, three, {2, 2, 4}, 0,
               "weights 1 1 2");
  check_layout(BlockLayout({5, 2}, three, RowSplit::weights({1, 0, 1})), {5, 2}, three, {3, 0, 2},
               0, "weights 1 0 1 (2.5 rounds up)");
  check_layout(BlockLayout({7}, three, RowSplit::weights({0, 0, 3.5})), {7}, three, {0, 0, 7}, 0,
               "weights 0 0 3.5");
  check_layout(BlockLayout({10}, three, RowSplit::weights({0.1, 0.2, 0.7})), {10}, three, {1, 2, 7},
               0, "weights 0.1 0.2 0.7");
  check_layout(BlockLayout({1000}, {2, 2}, RowSplit::weights({1, 2, 3, 4})), {1000}, {2, 2},
               {100, 200, 300, 400}, 0, "weights 1 2 3 4");
  EXPECT_EQ(RowSplit::weights({1, 2}).weights_per_member(), (std::vector<double>{1, 2}));
  EXPECT_EQ(RowSplit::counts({1, 2}).kind(), RowSplit::Kind::counts);
}

TEST(DistLayout, NeighboursSkipEmptyBlocks) {
  const BlockLayout open({10, 2}, {4}, RowSplit::counts({2, 0, 3, 5}), {1});
  EXPECT_EQ(open.prev_neighbour(0), -1);
  EXPECT_EQ(open.next_neighbour(0), 2);
  EXPECT_EQ(open.prev_neighbour(1), -1);  // an empty block takes no part
  EXPECT_EQ(open.next_neighbour(1), -1);
  EXPECT_EQ(open.prev_neighbour(2), 0);
  EXPECT_EQ(open.next_neighbour(2), 3);
  EXPECT_EQ(open.next_neighbour(3), -1);
  const BlockLayout periodic({5}, {2, 2}, RowSplit::counts({2, 0, 3, 0}), {2, true});
  EXPECT_EQ(periodic.prev_neighbour(0), 2);
  EXPECT_EQ(periodic.next_neighbour(0), 2);
  EXPECT_EQ(periodic.prev_neighbour(2), 0);
  EXPECT_EQ(periodic.next_neighbour(2), 0);
  EXPECT_EQ(periodic.next_neighbour(3), -1);
  const BlockLayout alone({4}, {3}, RowSplit::counts({0, 4, 0}), {3, true});
  EXPECT_EQ(alone.prev_neighbour(1), 1);
  EXPECT_EQ(alone.next_neighbour(1), 1);
  // A halo wider than the only block is fine with open boundaries: nobody reads it.
  const BlockLayout lone({2}, {3}, RowSplit::counts({0, 2, 0}), {5});
  EXPECT_EQ(lone.prev_neighbour(1), -1);
  EXPECT_EQ(lone.next_neighbour(1), -1);
  EXPECT_EQ(lone.halo(), (Halo{5, false}));
  EXPECT_NE(lone.describe().find("[0, 0) [0, 2) [2, 2)"), std::string::npos) << lone.describe();
}

TEST(DistLayout, BadArgumentsRaiseLogicErrorsNamingThem) {
  expect_logic_error(
      [] {
        BlockLayout({2, 3, 4}, {1});
      },
      {"BlockLayout", "(2, 3, 4)", "3 dimensions"});
  expect_logic_error([] { BlockLayout(Shape{}, {1}); }, {"BlockLayout", "0 dimensions"});
  expect_logic_error([] { BlockLayout({4}, {}); }, {"BlockLayout", "members_per_rank is empty"});
  expect_logic_error([] { BlockLayout({4}, {2, 0, 1}); }, {"rank 1 has no members"});
  expect_logic_error(
      [] {
        BlockLayout({4}, {3}, RowSplit::counts({1, 3}));
      },
      {"2 row counts", "3 members"});
  expect_logic_error(
      [] {
        BlockLayout({9, 2}, {3}, RowSplit::counts({1, 3, 4}));
      },
      {"add up to 8", "9 rows"});
  expect_logic_error(
      [] {
        BlockLayout({4}, {2}, RowSplit::weights({1, -1}));
      },
      {"weight -1 of member 1"});
  expect_logic_error(
      [] {
        BlockLayout({4}, {2}, RowSplit::weights({1, std::nan("")}));
      },
      {"member 1", "finite"});
  expect_logic_error(
      [] {
        BlockLayout({4}, {2}, RowSplit::weights({0, 0}));
      },
      {"weights are zero"});
  expect_logic_error([] { BlockLayout({4}, {2}, RowSplit::weights({1})); },
                     {"1 weights", "2 members"});
  // Halo wider than a neighbour's block: member 1 has 2 rows, its neighbours read 3.
  expect_logic_error(
      [] {
        BlockLayout({10}, {3}, RowSplit::counts({4, 2, 4}), {3});
      },
      {"halo width 3", "member 1", "[4, 6)"});
  // Periodic: the first block is also the last's neighbour.
  expect_logic_error(
      [] {
        BlockLayout({7}, {2}, RowSplit::counts({1, 6}), {2, true});
      },
      {"halo width 2", "member 0"});
  expect_logic_error(
      [] {
        BlockLayout({7}, {2}, RowSplit::counts({0, 1}), {2, true});
      },
      {"add up to 1"});
  // Even split of 5 rows over 4 members gives blocks of 1 or 2: a halo of 2 is too wide.
  expect_logic_error([] { BlockLayout({5}, {4}, {}, {2}); }, {"halo width 2", "member 1"});
  const BlockLayout ok({6, 2}, {1, 2});
  expect_logic_error([&] { (void)ok.owner(6); }, {"BlockLayout::owner", "row 6"});
  expect_logic_error([&] { (void)ok.member_rows(3); }, {"member 3 does not exist"});
  expect_logic_error([&] { (void)ok.member_of(1, 2); },
                     {"rank 1 has 2 member(s)", "local device 2"});
  expect_logic_error([&] { (void)ok.rank_rows(2); }, {"rank 2 does not exist"});
  expect_logic_error([&] { (void)ok.location(-1); }, {"does not exist"});
}

// ---- ranks and members --------------------------------------------------------------------------

TEST_P(DistArrays, CommunicatorRanksMatchMpi) {
  const unsigned long long mine = s_.L();
  std::vector<unsigned long long> all(static_cast<std::size_t>(world_size()));
  MPI_Allgather(&mine, 1, MPI_UNSIGNED_LONG_LONG, all.data(), 1, MPI_UNSIGNED_LONG_LONG,
                MPI_COMM_WORLD);
  const std::vector<std::size_t> want(all.begin(), all.end());
  const auto ranks = communicator_ranks(*s_.comm);
  EXPECT_EQ(ranks.members_per_rank, want);
  EXPECT_EQ(ranks.rank, world_rank());
  const BlockLayout over = BlockLayout::over(*s_.comm, {37, 3}, RowSplit::even(), {1});
  EXPECT_TRUE(over == BlockLayout({37, 3}, want, {}, {1}));
  EXPECT_FALSE(over == BlockLayout({37, 3}, want, {}, {2}));
  EXPECT_FALSE(over == BlockLayout({37, 4}, want, {}, {1}));
}

TEST_P(DistArrays, BlocksAreOnTheMembersDevices) {
  const std::size_t M = s_.M();
  DistArray d(*s_.comm, {3 * M + 2, 3}, Dtype::float32, RowSplit::even(), {1});
  ASSERT_EQ(d.local_size(), s_.L());
  EXPECT_EQ(d.rank(), world_rank());
  EXPECT_TRUE(d.communicator() == *s_.comm);
  std::size_t visited = 0;
  d.for_each_local([&](const LocalBlock& b) {
    EXPECT_EQ(b.local_device, visited);
    EXPECT_EQ(b.member, static_cast<std::size_t>(s_.comm->rank_of(visited)));
    EXPECT_EQ(b.device_idx, s_.comm->device_idx(visited));
    EXPECT_EQ(b.rows, d.layout().member_rows(b.member));
    EXPECT_EQ(b.interior.shape(), (Shape{b.rows.size(), 3}));
    EXPECT_EQ(b.with_halo.shape(), (Shape{b.rows.size() + 2, 3}));
    EXPECT_EQ(b.interior.device_idx(), b.device_idx);
    EXPECT_TRUE(b.interior.is_contiguous());
    // The interior is the with-halo storage minus one row at each end.
    EXPECT_EQ(b.interior.offset(), b.with_halo.offset() + 3 * sizeof(float));
    EXPECT_EQ(d.local_arrays()[b.device_idx].offset(), b.interior.offset());
    EXPECT_EQ(d.local_arrays(true)[b.device_idx].shape(), b.with_halo.shape());
    ++visited;
  });
  EXPECT_EQ(visited, s_.L());
  // The blocks are plain allocations, not the queue's pool's (other queues use them:
  // exchange_halos(queue)); the set-up's temporaries went back to the pool.
  EXPECT_EQ(temporaries_pool(d.queue()).active_blocks(), 0u);
  const RowRange mine = d.rank_rows();
  EXPECT_EQ(mine.begin, d.local_rows(0).begin);
  EXPECT_EQ(mine.end, d.local_rows(d.local_size() - 1).end);
  EXPECT_THROW(d.block(d.local_size()), LogicError);
}

// ---- scatter and gather -------------------------------------------------------------------------

// Scatter from `root`, then check every local block (its rows, zero halo rows), the gather to the
// root, all_gather on every rank, and the rank's own rows.
template <class T>
void round_trip(Rig& s, const Shape& shape, const RowSplit& split, std::size_t halo, int root,
                std::uint64_t salt, const std::string& what) {
  const Dtype dtype = dtype_of<T>;
  DistArray d(*s.comm, shape, dtype, split, {halo});
  const std::vector<T> global = host_array<T>(shape, salt);
  if (world_rank() == root) {
    d.scatter(global, root);
  } else {
    d.scatter(std::span<const T>(), root);
  }
  const std::size_t cols = cols_of(shape);
  for (std::size_t l = 0; l < d.local_size(); ++l) {
    const RowRange rows = d.local_rows(l);
    EXPECT_EQ(rows, d.layout().member_rows(static_cast<std::size_t>(s.comm->rank_of(l)))) << what;
    expect_same(
        d.local(l).get<T>(), host_rows<T>(shape, rows.begin, rows.end, salt),
        fmt::format("{}: block of local device {} (rows [{}, {}))", what, l, rows.begin, rows.end));
    const auto all = d.local_with_halo(l).get<T>();
    // No ASSERTs: every rank must go on to the gathers below.
    EXPECT_EQ(all.size(), (rows.size() + (rows.empty() ? 0 : 2 * halo)) * cols) << what;
    if (halo > 0 && !rows.empty() && all.size() == (rows.size() + 2 * halo) * cols) {
      const std::vector<T> top(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(halo * cols));
      const std::vector<T> bottom(all.end() - static_cast<std::ptrdiff_t>(halo * cols), all.end());
      expect_same(top, std::vector<T>(halo * cols, T{}), what + ": top halo untouched by scatter");
      expect_same(bottom, std::vector<T>(halo * cols, T{}),
                  what + ": bottom halo untouched by scatter");
    }
  }
  const auto gathered = d.template gather<T>(root);
  if (world_rank() == root) {
    expect_same(gathered, global, what + ": gather to the root");
  } else {
    EXPECT_TRUE(gathered.empty()) << what;
  }
  expect_same(d.template all_gather<T>(), global, what + ": all_gather");
  const RowRange mine = d.rank_rows();
  expect_same(d.template gather_local<T>(), host_rows<T>(shape, mine.begin, mine.end, salt),
              what + ": gather_local");
  // The byte versions hold the same bytes.
  const auto bytes = d.all_gather_bytes();
  const auto* want = reinterpret_cast<const std::byte*>(global.data());
  EXPECT_TRUE(bytes.size() == global.size() * sizeof(T) &&
              std::equal(bytes.begin(), bytes.end(), want))
      << what;
}

struct Case {
  Shape shape;
  RowSplit split;
  std::string name;
};

std::vector<Case> round_trip_cases(std::size_t M) {
  std::vector<Case> cases = {
      {{0}, {}, "0 rows"},     {{1}, {}, "1 row"},
      {{7}, {}, "7 rows"},     {{M + 1}, {}, "members + 1 rows"},
      {{13, 5}, {}, "13 x 5"}, {{3, 7}, {}, "3 x 7"},
      {{0, 3}, {}, "0 x 3"},   {{2 * M + 1, 3}, {}, "2M+1 x 3"},
  };
  if (M > 1) cases.push_back({{M - 1, 3}, {}, "fewer rows than members"});
  // Uneven: everything on the last member; weights 1, 2, 3, ...; counts with empty blocks.
  std::vector<std::size_t> last(M, 0);
  last.back() = 9;
  cases.push_back({{9, 3}, RowSplit::counts(last), "all rows on the last member"});
  std::vector<double> weights;
  for (std::size_t m = 0; m < M; ++m) weights.push_back(static_cast<double>(m + 1));
  cases.push_back({{101, 3}, RowSplit::weights(weights), "weights 1, 2, ..."});
  std::vector<std::size_t> gaps;
  std::size_t total = 0;
  for (std::size_t m = 0; m < M; ++m) {
    gaps.push_back(m % 2 == 0 ? 2 * m + 3 : 0);
    total += gaps.back();
  }
  cases.push_back({{total, 11}, RowSplit::counts(gaps), "every other member empty"});
  return cases;
}

TEST_P(DistArrays, ScatterGatherRoundTrips) {
  const std::size_t M = s_.M();
  const int R = s_.R();
  std::uint64_t salt = 1;
  for (const auto& c : round_trip_cases(M)) {
    for (int root : {0, R - 1}) {
      // A halo of 1 fits any layout: every block with rows has at least one.
      for (std::size_t halo : {0u, 1u}) {
        const std::string what =
            fmt::format("{} ({}) root {} halo {}", c.name, to_string(c.shape), root, halo);
        round_trip<float>(s_, c.shape, c.split, halo, root, salt++, what + " float32");
        round_trip<std::int16_t>(s_, c.shape, c.split, halo, root, salt++, what + " int16");
      }
    }
  }
  // Other dtypes on two shapes.
  round_trip<double>(s_, {2 * M + 3, 5}, RowSplit::even(), 1, R - 1, salt++, "float64 2M+3 x 5");
  round_trip<std::complex<float>>(s_, {M + 2}, RowSplit::even(), 0, 0, salt++, "complex64 M+2");
}

// The device address or cl_mem of `b` made into a Buffer through the backend's interop call, as
// an application's own allocation would be: Skein sees only the native handle (and keeps `b`
// alive through the deleter, on CUDA; through its own cl_mem reference, on OpenCL).
Buffer as_foreign(const Buffer& b) {
#if SKEIN_HAS_CUDA
  if (b.context().api().id() == ApiId::cuda) {
    return cuda::buffer_from_native(b.context(), b.device_idx(), cuda::native_pointer(b), b.size(),
                                    [keep = b] {});
  }
#endif
#if SKEIN_HAS_OPENCL
  if (b.context().api().id() == ApiId::opencl) {
    return opencl::buffer_from_native(b.context(), b.device_idx(), opencl::native_mem(b), b.size());
  }
#endif
  ADD_FAILURE() << "no interop for this backend";
  return b;
}

// A DistArray over blocks the application allocated itself, one per local member with its halo
// rows (odd shapes, a halo of 1): scatter, halo exchange, a distributed axpy, an all_reduce over
// the blocks' memory and a gather give the host's results; blocks of the wrong size or device are
// refused on every rank.
TEST_P(DistArrays, OverTheApplicationsOwnBlocks) {
  const std::size_t M = s_.M();
  const int R = s_.R();
  const Shape shape{2 * M + 3, 5};
  const BlockLayout layout = BlockLayout::over(*s_.comm, shape, RowSplit::even(), Halo{1, true});
  Queue queue(s_.comm->context());
  const auto blocks_for = [&](std::size_t extra_rows, bool wrong_device) {
    std::vector<Buffer> blocks;
    for (std::size_t l = 0; l < s_.comm->local_size(); ++l) {
      const auto member = static_cast<std::size_t>(s_.comm->rank_of(l));
      const Shape bs = layout.block_shape(member, true);
      std::size_t device = s_.comm->device_idx(l);
      if (wrong_device) device = (device + 1) % s_.comm->context().num_devices();
      blocks.push_back(as_foreign(Buffer::allocate(s_.comm->context(), device,
                                                   (bs[0] + extra_rows) * bs[1] * sizeof(double))));
    }
    return blocks;
  };
  const std::vector<double> gx = host_array<double>(shape, 21), gy = host_array<double>(shape, 22);
  DistArray x(*s_.comm, queue, layout, Dtype::float64, blocks_for(0, false));
  DistArray y(*s_.comm, queue, layout, Dtype::float64, blocks_for(1, false));  // room to spare
  x.scatter(world_rank() == 0 ? std::span<const double>(gx) : std::span<const double>(), 0);
  y.scatter(world_rank() == R - 1 ? std::span<const double>(gy) : std::span<const double>(), R - 1);
  x.exchange_halos();
  dist::axpy(2.0, x, y, y);  // y = 2 x + y
  std::vector<double> want(gx.size());
  for (std::size_t i = 0; i < gx.size(); ++i) want[i] = 2.0 * gx[i] + gy[i];
  expect_same(y.all_gather<double>(), want, "axpy over the application's blocks");
#if SKEIN_HAS_HDF5
  {
    // Written from the application's blocks and read back into Skein's own (another layout).
    TempDir dir("skein-foreign-blocks");
    {
      auto f = hdf5::File::create(*s_.comm, dir.file("y.h5"));
      f.write("y", y);
    }
    DistArray back(*s_.comm, shape, Dtype::float64, RowSplit::even());
    hdf5::File::open(*s_.comm, dir.file("y.h5"), hdf5::Access::read_only).read("y", back);
    expect_same(back.all_gather<double>(), want,
                "HDF5 write from the application's blocks, read back");
    // And the other way: read into the application's blocks.
    DistArray z(*s_.comm, queue, layout, Dtype::float64, blocks_for(0, false));
    hdf5::File::open(*s_.comm, dir.file("y.h5"), hdf5::Access::read_only).read("y", z);
    expect_same(z.all_gather<double>(), want, "HDF5 read into the application's blocks");
    // A checkpoint of the application's blocks, restored into other blocks of the application.
    CheckpointManager checkpoints(*s_.comm, dir.sub("checkpoints"));
    checkpoints.write(7, 0.5, {{"y", y}});
    DistArray r(*s_.comm, queue, layout, Dtype::float64, blocks_for(0, false));
    const auto restored = checkpoints.restore_latest({{"y", r}});
    EXPECT_TRUE(restored && restored->step == 7);
    expect_same(r.all_gather<double>(), want, "checkpoint of the application's blocks, restored");
  }
#endif
  // The halo rows of x hold the periodic neighbours' rows.
  for (std::size_t l = 0; l < x.local_size(); ++l) {
    const RowRange rows = x.local_rows(l);
    if (rows.empty()) continue;
    const auto all = x.local_with_halo(l).get<double>();
    const std::size_t above = (rows.begin + shape[0] - 1) % shape[0];
    expect_same(std::vector<double>(all.begin(), all.begin() + 5),
                host_rows<double>(shape, above, above + 1, 21),
                fmt::format("local device {}: the halo row above", l));
  }
  // An all_reduce over the blocks' memory itself: each member's halo row above (every block has
  // rows: 2M + 3 rows over M members), summed over the members; integers, so exact.
  std::vector<Array> sends, recvs;
  for (std::size_t l = 0; l < x.local_size(); ++l) {
    sends.push_back(x.local_with_halo(l).reshape({x.local_with_halo(l).size()}).slice(0, 5));
    recvs.push_back(y.local_with_halo(l).reshape({y.local_with_halo(l).size()}).slice(0, 5));
  }
  s_.comm->all_reduce(queue, sends, recvs, ReduceOp::sum);
  std::vector<double> total(5, 0.0);
  for (std::size_t m = 0; m < M; ++m) {
    const std::size_t above = (layout.member_rows(m).begin + shape[0] - 1) % shape[0];
    const auto row = host_rows<double>(shape, above, above + 1, 21);
    for (std::size_t c = 0; c < 5; ++c) total[c] += row[c];
  }
  for (std::size_t l = 0; l < y.local_size(); ++l) {
    expect_same(recvs[l].get<double>(), total, fmt::format("all_reduce, local device {}", l));
  }
  // Bad blocks, on every rank: one row short; (with several devices) on the wrong device.
  auto short_blocks = blocks_for(0, false);
  short_blocks.front() = short_blocks.front().get_sub_region(0, short_blocks.front().size() - 8);
  expect_logic_error([&] { DistArray bad(*s_.comm, queue, layout, Dtype::float64, short_blocks); },
                     {"block buffer 0 has", "needs"}, "a short block");
  // Collective: every rank makes the call once any rank's context has a second device (a rank
  // with one device passes its right block, and raises with the others).
  if (!on_every_rank(s_.comm->context().num_devices() <= 1)) {
    const bool moved = s_.comm->context().num_devices() > 1;
    expect_logic_error(
        [&] { DistArray bad(*s_.comm, queue, layout, Dtype::float64, blocks_for(0, moved)); },
        {moved ? "block buffer 0 is on device" : "DistArray"}, "a block on another device");
  }
}

// The arrays share the communicator: moving the Communicator object they were made over, then
// destroying both it and the object it moved to, leaves them working (a scatter, a halo exchange,
// a gather and a broadcast, checked against host data).
TEST_P(DistArrays, ArraysOutliveTheCommunicatorObject) {
  const int R = s_.R();
  const Shape shape{2 * s_.M() + 3, 4};
  const std::uint64_t salt = 77;
  const std::vector<float> global = host_array<float>(shape, salt);
  std::optional<DistArray> d;
  std::optional<ReplicatedArray> rep;
  {
    // A second communicator over the same ranks and devices, made and then given up here.
    Communicator own = s_.comm->split(0, world_rank());
    d.emplace(own, shape, Dtype::float32, RowSplit::even(), Halo{1, true});
    rep.emplace(own, Shape{5}, Dtype::float64);
    Communicator moved = std::move(own);
  }
  EXPECT_EQ(d->communicator().size(), s_.M());
  EXPECT_TRUE(d->communicator() == rep->communicator());
  EXPECT_FALSE(d->communicator() == *s_.comm);  // split() made another communicator
  d->scatter(world_rank() == 0 ? std::span<const float>(global) : std::span<const float>(), 0);
  d->exchange_halos();
  for (std::size_t l = 0; l < d->local_size(); ++l) {
    const RowRange rows = d->local_rows(l);
    if (rows.empty()) continue;
    const auto all = d->local_with_halo(l).get<float>();
    // Periodic halo of one row: the rows above and below, wrapping around.
    const std::size_t above = (rows.begin + shape[0] - 1) % shape[0];
    const std::size_t below = rows.end % shape[0];
    std::vector<float> want = host_rows<float>(shape, above, above + 1, salt);
    const auto mid = host_rows<float>(shape, rows.begin, rows.end, salt);
    want.insert(want.end(), mid.begin(), mid.end());
    const auto last = host_rows<float>(shape, below, below + 1, salt);
    want.insert(want.end(), last.begin(), last.end());
    // No ASSERTs: every rank must go on to the gather below.
    expect_same(all, want, fmt::format("local device {} with its halo", l));
  }
  const auto gathered = d->gather<float>(R - 1);
  if (world_rank() == R - 1) {
    expect_same(gathered, global, "gather after the Communicator object is gone");
  } else {
    EXPECT_TRUE(gathered.empty());
  }
  const std::vector<double> values = {1.5, -2, 3.25, 0, 1e300};
  rep->broadcast_from_host(
      world_rank() == 0 ? std::span<const double>(values) : std::span<const double>(), 0);
  for (std::size_t l = 0; l < rep->local_size(); ++l) {
    expect_same(rep->get<double>(l), values, fmt::format("replicated array on local device {}", l));
  }
}

TEST_P(DistArrays, ScatterGatherAFewMiB) {
  const std::size_t M = s_.M();
  const int R = s_.R();
  // 1-D float32, ~3 MiB; 2-D float64 with an odd column count, ~3 MiB, split unevenly.
  round_trip<float>(s_, {(std::size_t(3) << 20) / 4 + 3}, RowSplit::even(), 0, R - 1, 77,
                    "3 MiB float32");
  std::vector<double> weights;
  for (std::size_t m = 0; m < M; ++m) weights.push_back(static_cast<double>(M - m) + 0.5);
  round_trip<double>(s_, {(std::size_t(3) << 20) / (8 * 33) + 1, 33}, RowSplit::weights(weights), 2,
                     0, 78, "3 MiB float64 x 33 weighted");
}

TEST_P(DistArrays, ScatterLocalGatherLocalAndViews) {
  const std::size_t M = s_.M();
  const Shape shape{4 * M + 3, 3};
  DistArray d(*s_.comm, shape, Dtype::float64);
  // Each rank writes its own rows.
  const RowRange mine = d.rank_rows();
  d.scatter_local(host_rows<double>(shape, mine.begin, mine.end, 5));
  expect_same(d.all_gather<double>(), host_array<double>(shape, 5),
              "scatter_local then all_gather");
  // A write through a local view is a write to the distributed array.
  for (std::size_t l = 0; l < d.local_size(); ++l) {
    const RowRange rows = d.local_rows(l);
    d.local(l).set(host_rows<double>(shape, rows.begin, rows.end, 6));
  }
  expect_same(d.gather<double>(0),
              world_rank() == 0 ? host_array<double>(shape, 6) : std::vector<double>{},
              "writes through local() then gather");
  expect_same(d.gather_local<double>(), host_rows<double>(shape, mine.begin, mine.end, 6),
              "gather_local");
  const auto bytes = d.gather_local_bytes();
  EXPECT_EQ(bytes.size(), mine.size() * 3 * sizeof(double));
  // A copy with the same layout.
  DistArray e(*s_.comm, d.layout(), Dtype::float64);
  expect_same(e.all_gather<double>(), std::vector<double>(shape_size(shape), 0.0),
              "a new array is zero");
  e.set(d);
  expect_same(e.all_gather<double>(), host_array<double>(shape, 6), "DistArray::set");
  e.fill_zero();
  expect_same(e.all_gather<double>(), std::vector<double>(shape_size(shape), 0.0), "fill_zero");
}

// DistArray::set with a source on another queue (each DistArray made without a queue has its
// own): the copies start after the work queued on the source's queue before the call, and the
// source's later work does not overtake them. Nothing on the host waits in between. The writes on
// the source's queue are slow on purpose (each element spins first; `mask` is 0 but the compiler
// cannot know it), so that a copy that did not wait for them would read the old values.
TEST_P(DistArrays, SetJoinsASourceOnAnotherQueue) {
  const Shape shape{(std::size_t(1) << 18) + 5};  // 1 MiB of uint32, odd
  const std::size_t n = shape_size(shape);
  const ElementwiseKernel slow_fill(
      "uint32 v, uint32 spins, uint32 mask", "uint32 y",
      "unsigned int s = (unsigned int)i; "
      "for (unsigned int k = 0; k < spins; ++k) s = s * 1664525u + 1013904223u; "
      "y = v + (s & mask)",
      {.name = "dist_set_slow_fill"});
  DistArray src(*s_.comm, shape, Dtype::uint32);
  DistArray dst(*s_.comm, src.layout(), Dtype::uint32);
  ASSERT_FALSE(src.queue() == dst.queue());
  const auto fill = [&](std::uint32_t v) {
    dist::elementwise(slow_fill,
                      {Operand(v), Operand(std::uint32_t{250}), Operand(std::uint32_t{0}), src});
  };
  for (std::uint32_t round = 1; round <= 2; ++round) {
    const std::uint32_t before = round, after = 10 + round;
    fill(before);  // enqueued on src's queue
    dst.set(src);  // on dst's queue: must see `before`
    fill(after);   // on src's queue: must not overtake the copy
    expect_same(dst.all_gather<std::uint32_t>(), std::vector<std::uint32_t>(n, before),
                fmt::format("round {}: set after a slow write on the source's queue", round));
    expect_same(src.all_gather<std::uint32_t>(), std::vector<std::uint32_t>(n, after),
                fmt::format("round {}: the source's later write", round));
  }
}

TEST_P(DistArrays, EmptyBlocksHaveNoRowsAndNoHalo) {
  const std::size_t M = s_.M();
  if (M < 2) GTEST_SKIP() << "needs two members";
  // M - 1 rows over M members: the last member's block is empty; a halo of 1 fits the others.
  DistArray d(*s_.comm, {M - 1, 2}, Dtype::int32, RowSplit::even(), {1});
  for (std::size_t l = 0; l < d.local_size(); ++l) {
    const std::size_t m = static_cast<std::size_t>(s_.comm->rank_of(l));
    if (m == M - 1) {
      EXPECT_TRUE(d.local_rows(l).empty());
      EXPECT_EQ(d.local(l).shape(), (Shape{0, 2}));
      EXPECT_EQ(d.local_with_halo(l).shape(), (Shape{0, 2}));
      EXPECT_EQ(d.local_rows(l), (RowRange{M - 1, M - 1}));
    } else {
      EXPECT_EQ(d.local_rows(l), (RowRange{m, m + 1}));
      EXPECT_EQ(d.local_with_halo(l).shape(), (Shape{3, 2}));
    }
  }
}

// ---- replicated arrays --------------------------------------------------------------------------

TEST_P(DistArrays, ReplicatedFromHostBroadcastAndMembers) {
  const std::size_t M = s_.M(), L = s_.L();
  const int R = s_.R();
  for (const Shape& shape :
       {Shape{0}, Shape{1}, Shape{7}, Shape{5, 3}, Shape{(std::size_t(2) << 20) / 4 + 5}}) {
    const std::string what = to_string(shape);
    // Every rank's own copy of the same host data.
    const auto data = host_array<float>(shape, 11);
    auto a = ReplicatedArray::from_host(*s_.comm, std::span<const float>(data), shape);
    EXPECT_EQ(a.local_size(), L);
    EXPECT_EQ(a.shape(), shape);
    for (std::size_t l = 0; l < L; ++l) {
      expect_same(a.get<float>(l), data, what + ": from_host");
      EXPECT_EQ(a.local(l).device_idx(), s_.comm->device_idx(l));
      EXPECT_EQ(a.local_arrays()[s_.comm->device_idx(l)].shape(), shape);
    }
    // The root rank's data to every device (the others start from zeros).
    for (int root : {0, R - 1}) {
      ReplicatedArray b(*s_.comm, shape, Dtype::float32);
      const auto fresh = host_array<float>(shape, 12 + static_cast<std::uint64_t>(root));
      if (world_rank() == root) {
        b.broadcast_from_host(std::span<const float>(fresh), root);
      } else {
        b.broadcast_from_host(std::span<const float>(), root);
      }
      for (std::size_t l = 0; l < L; ++l)
        expect_same(b.get<float>(l), fresh, what + fmt::format(": from rank {}", root));
    }
    // One member's device copy to all: each member first holds its own data.
    const int root_member = static_cast<int>(M - 1);
    for (std::size_t l = 0; l < L; ++l) {
      a.local(l).set(
          host_array<float>(shape, 100 + static_cast<std::uint64_t>(s_.comm->rank_of(l))));
    }
    a.broadcast(root_member);
    const auto want = host_array<float>(shape, 100 + static_cast<std::uint64_t>(root_member));
    for (std::size_t l = 0; l < L; ++l) {
      expect_same(a.get<float>(l), want, what + ": broadcast from the last member");
      const auto bytes = a.get_bytes(l);
      EXPECT_TRUE(
          std::equal(bytes.begin(), bytes.end(), reinterpret_cast<const std::byte*>(want.data())));
    }
  }
}

// ---- bad calls ----------------------------------------------------------------------------------

// After a bad call on every rank, a good collective call must still work.
void expect_still_working(Rig& s) {
  const Shape shape{s.M() + 3, 2};
  DistArray d(*s.comm, shape, Dtype::float32);
  const auto data = host_array<float>(shape, 99);
  d.scatter(world_rank() == 0 ? std::span<const float>(data) : std::span<const float>(), 0);
  expect_same(d.all_gather<float>(), data, "a good call after the error");
}

// exchange_halos(queue) refuses a queue of another context, or one without a device of the
// array, on the calling rank before anything moves (every rank here makes the same mistake).
TEST_P(DistArrays, HaloExchangeOnAnotherQueueIsChecked) {
  DistArray d(*s_.comm, Shape{2 * s_.M() + 1, 3}, Dtype::float32, RowSplit::even(), Halo{1, false});
  const Context& context = d.queue().context();
  const Context own = Context::from_devices(context.device(d.block(0).device_idx));
  expect_logic_error(
      [&] { d.exchange_halos(Queue(own)); },
      {"DistArray::exchange_halos", "another context", fmt::format("rank {}", world_rank())});
  if (d.local_size() > 1) {
    expect_logic_error(
        [&] { d.exchange_halos(Queue(context, std::vector<std::size_t>{d.block(0).device_idx})); },
        {"DistArray::exchange_halos", fmt::format("has no device {}", d.block(1).device_idx)});
  }
  expect_still_working(s_);
}

TEST_P(DistArrays, BadCallsRaiseOnEveryRank) {
  const std::size_t M = s_.M();
  const int R = s_.R();
  const int rank = world_rank();
  const Shape shape{2 * M + 1, 3};
  DistArray d(*s_.comm, shape, Dtype::float32);
  const auto data = host_array<float>(shape, 3);

  // The root's host array has the wrong size: every rank raises, naming the root.
  const std::vector<float> short_data(data.begin(), data.end() - 1);
  expect_logic_error(
      [&] { d.scatter(rank == 0 ? short_data : std::vector<float>{}, 0); },
      rank == 0 ? std::vector<std::string>{"DistArray::scatter", "rank 0 (the root)", "bytes"}
                : std::vector<std::string>{"DistArray::scatter", "root rank 0", "wrong size"},
      "short host array at the root");
  expect_still_working(s_);

  // Root rank out of range, host type of another dtype, own rows of the wrong size.
  expect_logic_error([&] { d.scatter(data, R); },
                     {"DistArray::scatter", fmt::format("root rank {}", R), "does not exist"});
  expect_logic_error([&] { (void)d.gather<float>(-1); }, {"DistArray::gather", "root rank -1"});
  expect_logic_error([&] { (void)d.gather_bytes(R); }, {"DistArray::gather", "does not exist"});
  expect_logic_error([&] { (void)d.gather<double>(0); }, {"float64", "float32"});
  expect_logic_error([&] { d.scatter(std::vector<int>(data.size()), 0); }, {"int32", "float32"});
  expect_logic_error([&] { d.scatter_local(std::vector<float>(d.rank_rows().size() * 3 + 3)); },
                     {"DistArray::scatter_local", fmt::format("rank {}", rank), "rows"});
  expect_still_working(s_);

  // Layouts that do not describe the communicator.
  expect_logic_error(
      [&] { DistArray(*s_.comm, BlockLayout({8}, {M + 1}), Dtype::float32); },
      {"DistArray", fmt::format("{} members", M + 1), fmt::format("communicator has {}", M)});
  if (R > 1) {
    // The right number of members, but all on one rank.
    expect_logic_error([&] { DistArray(*s_.comm, BlockLayout({8}, {M}), Dtype::float32); },
                       {"DistArray", "members per rank"});
  }
  // Ranks that pass different shapes or dtypes.
  if (R > 1) {
    expect_logic_error([&] { DistArray(*s_.comm, {rank == 0 ? 10u : 11u}, Dtype::float32); },
                       {"DistArray", "different arguments", "rank 0 / rank"});
    expect_logic_error(
        [&] { DistArray(*s_.comm, {10}, rank == R - 1 ? Dtype::float64 : Dtype::float32); },
        {"DistArray", "different arguments", fmt::format("/ rank {}", R - 1)});
    expect_logic_error([&] { ReplicatedArray(*s_.comm, {rank == 0 ? 3u : 4u}, Dtype::float32); },
                       {"ReplicatedArray", "different arguments"});
  }
  // A halo too wide for the blocks: raised while the layout is made, on every rank alike.
  // (Periodic, so that a lone member is its own neighbour.)
  expect_logic_error(
      [&] {
        DistArray(*s_.comm, {M}, Dtype::float32, RowSplit::even(), {2, true});
      },
      {"BlockLayout", "halo width 2"});
  // Only rank 0 passes a queue without its devices (when it has a second device to leave out):
  // it raises its reason, the others that rank 0 failed.
  int rank0_has_two = s_.L() >= 2 ? 1 : 0;
  MPI_Bcast(&rank0_has_two, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank0_has_two) {
    const Queue partial =
        rank == 0 ? Queue(s_.comm->context(), {s_.comm->device_idx(0)}) : Queue(s_.comm->context());
    expect_logic_error(
        [&] { DistArray(*s_.comm, partial, BlockLayout::over(*s_.comm, {8}), Dtype::float32); },
        rank == 0 ? std::vector<std::string>{"DistArray", "rank 0", "no queue on context device"}
                  : std::vector<std::string>{"DistArray", "rank 0 could not make its part"});
  }
  expect_still_working(s_);

  // Copies between arrays of different layouts or dtypes.
  DistArray other(*s_.comm, {2 * M + 2, 3}, Dtype::float32);
  expect_logic_error([&] { d.set(other); }, {"DistArray::set", "layout"});
  DistArray ints(*s_.comm, shape, Dtype::int32);
  expect_logic_error([&] { d.set(ints); }, {"DistArray::set", "int32"});

  // Replicated arrays: the root's host data of the wrong size; roots out of range.
  ReplicatedArray rep(*s_.comm, {5}, Dtype::float32);
  expect_logic_error(
      [&] {
        rep.broadcast_from_host(std::span<const float>(data.data(), rank == R - 1 ? 4 : 0), R - 1);
      },
      rank == R - 1
          ? std::vector<std::string>{"broadcast_from_host", "(the root)", "16 bytes"}
          : std::vector<std::string>{"broadcast_from_host", fmt::format("root rank {}", R - 1)});
  expect_logic_error([&] { rep.broadcast(static_cast<int>(M)); },
                     {"ReplicatedArray::broadcast", "root member"});
  expect_logic_error([&] { rep.broadcast_from_host(std::span<const float>(data.data(), 5), R); },
                     {"root rank"});
  expect_logic_error([&] { rep.set(std::vector<float>(6)); }, {"ReplicatedArray::set", "24 bytes"});
  expect_logic_error([&] { rep.set(std::vector<double>(5)); }, {"float64"});
  expect_logic_error([&] { (void)rep.local(s_.L()); }, {"local device"});
  expect_still_working(s_);
}

}  // namespace dist_array_test
}  // namespace

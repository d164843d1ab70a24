// SPDX-License-Identifier: BSD-3-Clause
// DistArray::exchange_halos under mpirun (1..4 ranks) on PoCL devices with the MPI backend (and
// on CUDA over NCCL on a GPU machine): every halo row against the global array, written from a
// formula of the global row and column, for halos of 1-3 rows, open and periodic, even splits,
// empty blocks between blocks with rows, one block (its own neighbour), fewer rows than members,
// a few MiB, and halo rows on both sides of the size below which NCCL moves them by send/recv
// inside a rank. The exchange's bad calls are in dist_array_test.cpp.
//
// Two device set-ups, as in dist_array_test.cpp: the Runtime's own placement and exactly two
// devices per rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <fmt/format.h>

#include <skein/dist_array.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "dist_support.hpp"
#include "mpi_support.hpp"

namespace {
namespace dist_array_halo_test {

using namespace skein;
using ::skein::test::Placement;
using ::skein::test::placement_name;
using ::skein::test::Rig;

class DistArrayHalos : public ::skein::test::PlacementTest {};

INSTANTIATE_TEST_SUITE_P(Layouts, DistArrayHalos,
                         testing::Values(Placement::runtime, Placement::two_per_rank),
                         placement_name);

// ---- halo exchange ------------------------------------------------------------------------------

// Global element (row, col) of the halo tests: distinct and exact in float64.
double cell(std::size_t row, std::size_t col, std::size_t cols, double round) {
  return round * 1e6 + static_cast<double>(row * cols + col + 1);
}
constexpr double kSentinel = -7.0;

// Fills the blocks with cell(), the halo rows with kSentinel, exchanges, and checks each halo row
// against the global array: the rows just above and below the block (wrapping around when
// periodic), or kSentinel at an open boundary. Three times, so that a later exchange is seen to
// refresh; the third on a queue of its own (exchange_halos(queue), as a code that overlaps it with
// other work does), waited for before the check.
void check_halo_exchange(Rig& s, const Shape& shape, const RowSplit& split, Halo halo,
                         const std::string& what) {
  DistArray d(*s.comm, shape, Dtype::float64, split, halo);
  const Queue other(d.queue().context(), d.queue().device_idxs());
  const std::size_t R = shape[0], C = shape.size() > 1 ? shape[1] : 1, h = halo.width;
  for (double round : {1.0, 2.0, 3.0}) {
    for (std::size_t l = 0; l < d.local_size(); ++l) {
      const RowRange rows = d.local_rows(l);
      std::vector<double> start(d.local_with_halo(l).size(), kSentinel);
      for (std::size_t r = rows.begin; r < rows.end; ++r) {
        for (std::size_t c = 0; c < C; ++c)
          start[(h + r - rows.begin) * C + c] = cell(r, c, C, round);
      }
      d.local_with_halo(l).set(start);
    }
    if (round < 3.0) {
      d.exchange_halos();
    } else {
      d.exchange_halos(other);
      other.synchronize();
    }
    for (std::size_t l = 0; l < d.local_size(); ++l) {
      const RowRange rows = d.local_rows(l);
      const auto got = d.local_with_halo(l).get<double>();
      if (rows.empty()) {
        EXPECT_TRUE(got.empty()) << what;
        continue;
      }
      // No ASSERTs or early returns here: every rank must go on to the next exchange.
      if (got.size() != (rows.size() + 2 * h) * C) {
        ADD_FAILURE() << what << ": local device " << l << " holds " << got.size() << " elements";
        continue;
      }
      // Which global row each stored row must hold; -1: the sentinel.
      auto expected_row = [&](long long g) -> long long {
        const long long n = static_cast<long long>(R);
        if (g >= 0 && g < n) return g;
        return halo.periodic ? ((g % n) + n) % n : -1;
      };
      bool reported = false;  // the first wrong element of a block only
      for (std::size_t i = 0; i < rows.size() + 2 * h && !reported; ++i) {
        const long long g =
            expected_row(static_cast<long long>(rows.begin + i) - static_cast<long long>(h));
        for (std::size_t c = 0; c < C && !reported; ++c) {
          const double want = g < 0 ? kSentinel : cell(static_cast<std::size_t>(g), c, C, round);
          if (got[i * C + c] != want) {
            ADD_FAILURE() << what << " round " << round << ": local device " << l << " (rows ["
                          << rows.begin << ", " << rows.end << ")), stored row " << i << " col "
                          << c << " holds " << got[i * C + c] << ", expected " << want;
            reported = true;
          }
        }
      }
    }
  }
}

TEST_P(DistArrayHalos, HaloExchange) {
  const std::size_t M = s_.M();
  for (std::size_t w : {1u, 2u, 3u}) {
    for (bool periodic : {false, true}) {
      const Halo halo{w, periodic};
      const std::string tag = fmt::format("halo {}{}", w, periodic ? " periodic" : "");
      // Even splits, every block at least w rows; 1-D and 2-D with an odd column count.
      check_halo_exchange(s_, {w * M + 1}, {}, halo, tag + " 1-D even");
      check_halo_exchange(s_, {w * M + M / 2 + 3, 5}, {}, halo, tag + " 2-D even");
      // Empty blocks between blocks with rows (every other member).
      std::vector<std::size_t> gaps;
      std::size_t total = 0;
      for (std::size_t m = 0; m < M; ++m) {
        gaps.push_back(m % 2 == 1 || m + 1 == M ? w + m : 0);
        total += gaps.back();
      }
      check_halo_exchange(s_, {total, 3}, RowSplit::counts(gaps), halo, tag + " empty blocks");
      // All rows on one member (its own neighbour when periodic).
      std::vector<std::size_t> one(M, 0);
      one[M / 2] = w + 2;
      check_halo_exchange(s_, {w + 2, 3}, RowSplit::counts(one), halo, tag + " one block");
    }
  }
  // Fewer rows than members, halo 1.
  if (M > 1)
    check_halo_exchange(s_, {M - 1, 2}, {}, {1, true}, "fewer rows than members, periodic");
  // No halo: nothing to do.
  DistArray none(*s_.comm, {5}, Dtype::float64);
  none.exchange_halos();
}

TEST_P(DistArrayHalos, HaloExchangeAFewMiB) {
  const std::size_t M = s_.M();
  // ~2 MiB of float64 rows of 4099 columns; halo rows of 32 KiB each.
  check_halo_exchange(s_, {64 + M, 4099}, {}, {2, true}, "2 MiB periodic");
}

// Halo rows on both sides of the size below which, under NCCL, exchange_halos moves them between
// two devices of one rank by send/recv rather than a device copy (kSendRecvInsideRankBelow,
// 256 KiB, in collectives/dist/src/dist_transport.hpp; the MPI backend copies them all): one row of
// 33000 float64 (264000 bytes), two of 16400 (262400 bytes) just above, two of 16380 (262080
// bytes) just below. On CUDA with one rank driving two GPUs or more the last goes by NCCL.
TEST_P(DistArrayHalos, HaloExchangeAboveAndBelowTheSendRecvSizeInsideARank) {
  const std::size_t M = s_.M();
  check_halo_exchange(s_, {2 * M + 1, 33000}, {}, {1, true}, "one row of 264000 bytes, periodic");
  check_halo_exchange(s_, {3 * M, 16400}, {}, {2, false}, "two rows of 262400 bytes, open");
  check_halo_exchange(s_, {3 * M, 16380}, {}, {2, true}, "two rows of 262080 bytes, periodic");
}

}  // namespace dist_array_halo_test
}  // namespace
